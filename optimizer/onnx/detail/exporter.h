// The ONNX exporter's machinery (onnx_export.cpp): names, initializers, constants and the walk over the term,
// and what an operator family's export forms (detail/onnx_forms.h) write nodes with. Not an API: onnx_export.h is.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/model.h"
#include "optimizer/onnx/onnx_export.h"
#include "rules/expr.h"
#include "rules/tensor.h"

namespace teq::onnx_io::detail {

/// One export: the imported model and an optimized term in, an onnx::ModelProto out (run).
class Exporter {
 public:
  Exporter(const OnnxModel& model, const Expr& graph, const ExportOptions& options)
      : m_(model), g_(graph), options_(options) {}

  onnx::ModelProto run();

  // ---- what the export forms read ----------------------------------------------------------------------

  const Expr& graph() const { return g_; }
  const Shape& shape(ExprId id) const { return shapes_[id.value]; }
  int64_t opset() const { return m_.opset; }
  const ExportOptions& options() const { return options_; }
  /// How many term nodes (and roots) read `id`.
  size_t users(ExprId id) const { return users_[id.value]; }
  /// The term nodes that read `id` (each once, in term order).
  const std::vector<ExprId>& readers(ExprId id) const { return readers_[id.value]; }
  /// Whether `id`'s value already has a name in the file.
  bool is_written(ExprId id) const { return names_.count(id.value) != 0; }
  /// Whether `id` is written as an initializer (its value known at export: folded constants and constant
  /// generators) rather than computed by nodes.
  bool materialized(ExprId id) const;
  /// The model's weight called `name`, or nullptr.
  const Tensor<float>* find_weight(const std::string& name) const;
  /// Constant `c` cut to the axes along which it varies (repeated_axes_removed), computed once; nullopt
  /// when no axis repeats.
  const std::optional<Tensor<float>>& compacted(ExprId c);

  // ---- what the export forms write ---------------------------------------------------------------------

  /// Name of the tensor holding node `id`'s value, emitting what computes it on first use.
  std::string emit(ExprId id);
  /// emit of operand k of node `id`.
  std::string operand(ExprId id, size_t k) { return emit(g_[id].children[k]); }
  /// A node of ONNX type `op` whose output is `id`'s value, followed by the fused activation `act` when
  /// there is one; `node` (when given) receives the node of type `op`, for its attributes.
  std::string finish(const std::string& op, const std::vector<std::string>& inputs, ExprId id,
                     Activation act = Activation::None, onnx::NodeProto** node = nullptr);
  /// One node of ONNX type `op` computing the values of several term nodes at once (a Split's outputs):
  /// output k is `ids[k]`'s value, and each of them is written from then on. Returns the output names.
  std::vector<std::string> finish_outputs(const std::string& op, const std::vector<std::string>& inputs,
                                          const std::vector<ExprId>& ids, onnx::NodeProto** node = nullptr);
  /// One node with a fresh output name; returns that name.
  std::string add_simple(const std::string& op, const std::vector<std::string>& inputs,
                         onnx::NodeProto** node = nullptr);
  /// The element type of node `id`'s value (issue 45): a leaf's own (graph input, weight, opaque output), an
  /// operator's its first operand's (the vocabulary's operators keep their operands' float type).
  int32_t elem_type(ExprId id) const { return types_[id.value]; }
  /// A new initializer holding `v`, named after `hint`, in the type of the node being written (elem_type of
  /// the operator whose form is running: FLOAT, FLOAT16 or BFLOAT16); returns its name.
  std::string add_initializer(const std::string& hint, const Tensor<float>& v);
  /// A 1-d INT64 initializer / a 0-d initializer of the type of the node being written holding these values
  /// (one per distinct value and type).
  std::string int_constant(const std::vector<int64_t>& values);
  std::string float_scalar(float v);
  /// compacted(c) as an initializer (emit(c) when no axis repeats).
  std::string compact_constant(ExprId c);
  /// Graph input `at.input`'s extent at `at.axis` as a 1-d INT64 tensor of one element, written once: a Shape
  /// with start and end from opset 15, a Shape and a Gather before.
  std::string input_extent(const InputAxis& at);
  /// The name a form wrote for `key` before, to write a value once however many nodes read it; empty the first
  /// time, when the form assigns it.
  std::string& written_once(const std::string& key) { return written_once_[key]; }
  /// [begin, end) of `axis` of x as a Slice computing `id` (starts/ends/axes inputs from opset 10, attributes before).
  std::string slice(const std::string& x, int64_t axis, int64_t begin, int64_t end, ExprId id);
  /// A zero Pad (ONNX order: begins, then ends) computing `id`: pads as an input from opset 11, an attribute before.
  std::string zero_pad(const std::string& x, const std::vector<int64_t>& pads, ExprId id);

 private:
  void analyze();
  void reserve_names();
  std::string fresh(const std::string& hint = "teq");
  std::string out_name(ExprId id);
  onnx::NodeProto& add_node(const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs);
  void need_initializer(const std::string& name);
  const Tensor<float>& const_value(ExprId id);
  std::string emit_opaque(ExprId id);
  /// The vocabulary operator `id` through its family's fusions and form (detail/onnx_forms.h).
  std::string emit_operator(ExprId id);

  const OnnxModel& m_;
  const Expr& g_;
  const ExportOptions& options_;
  onnx::ModelProto proto_;
  onnx::GraphProto* graph_ = nullptr;
  std::vector<Shape> shapes_;
  std::vector<int32_t> types_;  // elem_type
  int32_t writing_type_ = onnx::TensorProto::FLOAT;  // the type of the operator whose form is running
  std::vector<size_t> users_;
  std::vector<std::vector<ExprId>> readers_;
  std::vector<bool> is_const_;
  std::map<std::pair<int64_t, std::vector<ExprId>>, std::vector<ExprId>> opaque_group_;
  std::set<int64_t> emitted_opaque_;
  std::unordered_map<uint32_t, std::string> names_, preferred_, compact_names_;
  std::unordered_map<uint32_t, std::optional<Tensor<float>>> compacted_;
  std::unordered_map<uint32_t, Tensor<float>> const_values_;
  /// Weights whose values the export read (folding, a fusion's scalar): held while it runs.
  mutable std::map<std::string, std::shared_ptr<const Tensor<float>>> read_weights_;
  std::set<std::string> taken_, claimed_, node_names_, initializers_;
  std::map<std::vector<int64_t>, std::string> int_constants_;
  std::map<std::string, std::string> written_once_;
  std::map<std::pair<int32_t, float>, std::string> float_scalars_;
  size_t counter_ = 0, node_counter_ = 0;
};

}  // namespace teq::onnx_io::detail
