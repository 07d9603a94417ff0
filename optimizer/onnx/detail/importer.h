// The ONNX importer's machinery, shared by optimizer/onnx/onnx_import.cpp (the model: header checks, symbolic
// dimensions, shape inference, inputs, outputs, compaction) and optimizer/onnx/detail/import_operators.cpp
// (each node mapped onto the vocabulary through its family's import form, detail/onnx_forms.h, or kept
// opaque). The forms (optimizer/onnx/forms/) build terms through the public members below. Not an API:
// onnx_import.h is.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/detail/fold_shapes.h"
#include "optimizer/onnx/detail/opset_adapt.h"
#include "optimizer/onnx/model.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/expr.h"
#include "rules/tensor.h"

namespace teq::onnx_io::detail {

/// Thrown inside a node mapper when the node does not fit the vocabulary; the node becomes opaque.
struct NotInVocabulary {
  std::string reason;
};

struct ValueType {
  int32_t elem_type = 0;
  std::optional<Shape> shape;  // nullopt when some dimension is unknown
};

ValueType value_type(const onnx::TypeProto& t);
/// "node 'NAME' (OP)", for messages.
std::string describe(const onnx::NodeProto& n);
inline bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

/// One import: the model proto in, the OnnxModel out (run).
class Importer {
 public:
  Importer(onnx::ModelProto& proto, std::string origin, const ImportOptions& options, std::filesystem::path dir)
      : proto_(proto), options_(options), dir_(std::move(dir)) {
    m_.source = std::move(origin);
  }

  OnnxModel run();

  // ---- what the import forms (detail/onnx_forms.h) map nodes with ----------------------------------

  /// The Expr value of input k, which the mapping needs as a float tensor of the node's type (node_type()).
  ExprId in(const onnx::NodeProto& n, int k);
  /// The same for an input of any of the three float types (a Cast's).
  ExprId in_any_float(const onnx::NodeProto& n, int k);
  /// The floating-point element type of the node being mapped (FLOAT, FLOAT16 or BFLOAT16: its outputs' type,
  /// which its float inputs share): the type of every weight the mapping makes (issue 45).
  int32_t node_type() const { return node_type_; }
  bool has_input(const onnx::NodeProto& n, int k) const { return k < n.input_size() && !n.input(k).empty(); }
  /// Values of a constant input (initializer or Constant), or nullopt.
  std::optional<std::vector<double>> const_input(const onnx::NodeProto& n, int k);
  /// Whether input k is a constant whose every element is `v`.
  bool constant_all(const onnx::NodeProto& n, int k, double v);
  const Shape& out_shape(const onnx::NodeProto& n, int k = 0) { return shape_of(n.output(k), &n); }
  /// Output k of `n` is `id` (checked against ONNX's shape; NotInVocabulary when they differ).
  void set_output(const onnx::NodeProto& n, ExprId id, int k = 0);
  /// Output 0 of `n` is `x` itself (no node: Identity, x * 1).
  void alias(const onnx::NodeProto& n, ExprId x) { pending_.emplace_back(n.output(0), x); }
  /// Only output 0 may be used (optional extra outputs such as MaxPool's indices make it opaque).
  void require_single_output(const onnx::NodeProto& n);

  /// Adds an operator node; ShapeError (the mapping does not fit) propagates to the caller.
  ExprId add(OpKind op, std::vector<int64_t> attrs, std::vector<ExprId> kids);
  ExprId broadcast_to(ExprId x, const Shape& target);
  /// A weight leaf of the node's type (node_type()), or of `type`.
  ExprId weight(const std::string& name, Tensor<float> value);
  ExprId weight(const std::string& name, Tensor<float> value, int32_t type);
  /// A new 0-d weight holding `v`, named uniquely after `hint`.
  ExprId scalar_weight(const std::string& hint, float v);
  std::string unique_name(const std::string& hint);
  /// The weight made once per `key` by `make` (a variance with a batch norm's epsilon added, say).
  ExprId derived_weight(const std::string& key, const std::function<ExprId()>& make);

  /// The term built so far; the shape of one of its nodes (a reference that add() invalidates); the opset.
  const Expr& graph() const { return m_.graph; }
  const Shape& shape(ExprId id) const { return shapes_[id.value]; }
  int64_t opset() const { return m_.opset; }
  /// The value of a weight leaf, or nullptr; the model's weight called `name`.
  const Tensor<float>* weight_value(ExprId id) const;
  /// A copy of the weight's values (read from its file when it stayed there).
  Tensor<float> weight_tensor(const std::string& name) const { return *m_.weights.at(name).values(); }
  /// The term of ONNX tensor `name` mapped so far, or nullopt.
  std::optional<ExprId> value(const std::string& name) const;
  int32_t elem_type(const std::string& name) const;
  /// How many node inputs and graph outputs name tensor `name`.
  size_t readers(const std::string& name) const;
  /// The node computing `name` when it has that type and this is its only reader (so that folding it away
  /// removes it), else nullptr.
  const onnx::NodeProto* sole_producer(const std::string& name, const std::string& op_type) const;
  /// Whether `name` is a constant scalar within 1e-6 of `v`.
  bool is_constant(const std::string& name, double v);

  /// For the report: a node folded away (`what` says how), a reshape as the file has it.
  void note_folded(std::string what) { m_.folded.push_back(std::move(what)); }
  void note_reshape(ReshapeSite site) { m_.reshapes.push_back(std::move(site)); }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw OnnxError(m_.source + ": " + what); }

  void check_header();

  void make_shell();

  /// Gives every symbolic dimension of the graph inputs of `proto` its value (--dim, else the default of
  /// symbolic_dim_value); `probe`: the probe value of each instead (probe_dim_value). Returns how many
  /// dimensions were symbolic.
  int bind_symbolic_dims(onnx::ModelProto& proto, bool probe);

  /// `unbound` (the model before binding, float data stripped) bound at the probe values and folded, into
  /// probe_folded_: the sizes the bound fold compares its Shape/Size elements with.
  void fold_at_probe_sizes(onnx::ModelProto unbound);
  /// The shapes at the probe sizes of the tensors Expand nodes expand (probe_shapes_): whether an extent of the
  /// target that follows the sizes is the input's own extent at both sizes (expand_follows_sizes).
  void record_probe_expand_inputs(onnx::ModelProto& probe);
  /// The folded values that change with the symbolic dimensions: those with an element traced from a varying
  /// Shape/Size element (FoldedValue::varies), and those the probe computes otherwise or not at all. Such a
  /// value stays the computation the file has (opaque nodes), and so does each node that reads it, but a
  /// Reshape whose target can be written with 0 and -1.
  void find_size_dependent();
  /// Gives each ceil_mode pooling whose last window ONNX 1.12 counts but onnxruntime drops the end padding of
  /// its true extent, for inference only (adapted_, stand-in: it stays opaque as the file has it). Returns
  /// the nodes replaced, by index, as they were (the caller infers again, and puts them back if that fails).
  std::vector<std::pair<int, onnx::NodeProto>> adapt_ceil_mode_pools();
  /// Declares the shapes of Loop outputs whose loop-carried value keeps its initial shape through the body
  /// (ONNX 1.12 leaves them unknown); returns whether any was found (the caller infers again).
  bool infer_loop_carried_shapes();

  /// Whether `n` reads a size-dependent value (and which), and whether it still maps onto the vocabulary.
  std::optional<std::string> size_dependent_input(const onnx::NodeProto& n) const;
  bool reshape_follows_sizes(const onnx::NodeProto& n) const;
  bool expand_follows_sizes(const onnx::NodeProto& n) const;

  /// Before shape inference: nodes in topological order (which also rules out cycles), and every node of the
  /// default domain an operator of the model's opset with inputs, outputs and attributes its schema allows.
  void check_nodes();

  void infer_shapes();

  void collect_used(const onnx::GraphProto& g);

  /// Shape of a tensor the import needs; error when inference could not determine it.
  const Shape& shape_of(const std::string& name, const onnx::NodeProto* producer);

  // ---- Expr building -------------------------------------------------------------------------------

  ExprId add_leaf(OpKind op, const std::string& name, const Shape& dims);
  void record_shape(ExprId id, const Shape& s);

  // ---- initializers, inputs, outputs ---------------------------------------------------------------

  void add_initializer(const onnx::TensorProto& t);

  void add_graph_input(const onnx::ValueInfoProto& in);

  void add_graph_output(const onnx::ValueInfoProto& out);

  // ---- nodes ---------------------------------------------------------------------------------------

  void import_node(const onnx::NodeProto& n);

  /// A note on why `n`, about to be imported as an opaque node, stays so; dropped again by compact() when a
  /// later node's form absorbs that opaque node (a Pow 3 inside GELU's tanh approximation).
  void note_opaque(const onnx::NodeProto& n, const std::string& reason);

  /// Maps a default-domain node onto the vocabulary through its family's import form; false when the
  /// vocabulary has no form for it.
  bool import_vocabulary(const onnx::NodeProto& n);

  bool import_constant(const onnx::NodeProto& n);

  const AdaptedNode* adapted_node(const onnx::NodeProto& n) const;

  /// Gelu (opset 20) -> the vocabulary's `gelu` (the exact erf form) or `gelu_tanh` (approximate='tanh').
  bool import_gelu(const onnx::NodeProto& n, OpKind gelu);

  void import_opaque(const onnx::NodeProto& working);

  /// The Expr node computing `name` for an opaque reader: a value, or an output of dynamic shape.
  std::optional<ExprId> opaque_operand(const std::string& name) const;

  /// The stand-in shape of a tensor whose shape the import does not know: the dimensions inference found,
  /// 1 for the others (rank 1 when even the rank is unknown), zero-size dimensions as 1.
  Shape stand_in_shape(const std::string& name) const;

  /// Keeps only what the outputs reach, in depth-first post-order from the roots, and renumbers opaque
  /// ids in first-use order, so that import(export(import(f))) == import(f).
  void compact();

  onnx::ModelProto& proto_;
  const ImportOptions& options_;
  std::filesystem::path dir_;  // where external tensor data is looked up; empty: bytes without a file
  std::unordered_map<std::string, AdaptedNode> adapted_;  // nodes of opsets 18..21 rewritten to opset 17
  OnnxModel m_;
  std::unordered_map<std::string, ValueType> types_;
  std::unordered_set<std::string> counted_extent_;  // ceil_mode poolings' outputs whose inferred extent onnxruntime drops
  std::unordered_map<std::string, Shape> partial_shapes_;  // tensors of known rank but some unknown dimension (as 1)
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;
  std::vector<std::pair<size_t, int64_t>> opaque_notes_;  // (index into m_.notes, the opaque id it is about)
  std::vector<std::unique_ptr<onnx::TensorProto>> constant_storage_;
  std::unordered_map<std::string, ExprId> values_;
  /// Outputs of opaque nodes whose shape depends on tensor values (OpaqueNode::dynamic_outputs): operands of
  /// other opaque nodes only, never of the vocabulary (in() and value() do not see them).
  std::unordered_map<std::string, ExprId> dynamic_;
  std::unordered_set<std::string> used_, new_names_;
  std::unordered_map<std::string, const onnx::NodeProto*> producer_;  // the node computing each tensor
  std::unordered_map<std::string, size_t> readers_;  // node inputs and graph outputs naming each tensor
  std::map<std::string, ExprId> derived_weights_;  // derived_weight's, by key
  mutable std::map<std::string, std::shared_ptr<const Tensor<float>>> read_weights_;  // weight_value's reads
  std::vector<Shape> shapes_;
  std::vector<std::pair<std::string, ExprId>> pending_;  // outputs of the node being mapped
  int32_t node_type_ = onnx::TensorProto::FLOAT;         // node_type()
  /// Nodes with subgraphs (If, Loop, Scan) as the file has them, by first output: shape inference writes the
  /// bound sizes into their subgraphs' value_info, which export must not carry.
  std::unordered_map<std::string, std::string> control_flow_;
  std::map<std::string, Shape> probe_shapes_;  // record_probe_expand_inputs
  /// Each symbolic dimension's value at the bound sizes and at the probe sizes (bind_symbolic_dims): an
  /// extent a Reshape target takes from one of them can be read from the graph input that has it.
  std::set<std::pair<int64_t, int64_t>> symbol_values_;
  FoldRecord folded_, probe_folded_;  // shape arithmetic folded at the bound sizes and at the probe sizes
  std::set<std::string> size_dependent_;  // folded outputs whose value changes with a symbolic dimension
};

}  // namespace teq::onnx_io::detail
