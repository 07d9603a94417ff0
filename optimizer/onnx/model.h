// OnnxModel: an imported ONNX model as the optimizer sees it. The computation is an Expr whose leaves are
// (input NAME dims) and (weight NAME dims) and whose roots are the graph outputs in order; everything the
// Expr cannot hold (opaque operators' protos, non-float initializers, metadata) waits in side tables so
// that export can write it back unchanged. Import is onnx_import.h, export onnx_export.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "rules/expr.h"
#include "rules/tensor.h"

namespace teq::onnx_io {

/// One dimension of one graph input, by position: how a dimension without a name is given a value.
struct InputAxis {
  std::string input;
  int64_t axis = 0;  // negative: counted from the last dimension
  auto operator<=>(const InputAxis&) const = default;
};

/// A declared graph input or output.
struct TensorInfo {
  std::string name;
  int32_t elem_type = 1;  // onnx::TensorProto::DataType (1 = FLOAT)
  Shape shape;            // concrete dims (symbolic dims bound at import)
  bool is_weight = false; // inputs only: also an initializer, imported as (weight NAME ...)
};

/// An operator outside the vocabulary: the Expr holds (opaque id output dims args...) for each of its
/// outputs that is used; this entry keeps the node itself.
struct OpaqueNode {
  std::string op_type, domain, name;  // for messages
  std::string proto;                  // serialized onnx::NodeProto, original input and output names
  /// Per ONNX input: index into the Expr node's children, or -1 when the input is passed through by
  /// name (empty optional inputs, and initializers the Expr cannot hold: non-float or zero-size).
  std::vector<int> input_child;
  std::vector<int32_t> output_types;  // elem type of each ONNX output (0 when unknown)
  /// Control flow (If, Loop, Scan): the outer tensors its subgraphs read by name, each with its index into the
  /// Expr node's children, or -1 for a passed-through initializer. Export renames them inside the subgraphs
  /// to the tensors the optimized graph computes them in.
  std::vector<std::pair<std::string, int>> implicit_inputs;
  /// Per ONNX output: true when its shape depends on tensor values (NonZero, Unique, a Loop whose carried
  /// value grows, a Reshape to a computed target, ...) or has a zero-size dimension, so the import knows no
  /// shape for it. Its Expr node carries a stand-in shape (unknown dimensions as 1) and only opaque nodes read
  /// it: the region computing and consuming it is written back as the file has it, and --check takes the
  /// shape its evaluation computes.
  std::vector<bool> dynamic_outputs;
};

/// A reshape the import made (from Reshape, Flatten, Squeeze or Unsqueeze), by the ONNX tensor it computes. The
/// same site imported at another value of a symbolic dimension shows which dimensions follow it
/// (symbolic_reshape_targets in check.h).
struct ReshapeSite {
  std::string output;   // the ONNX output name
  Shape input, target;  // at the sizes bound at import
};

/// How an exported Reshape's target follows the symbolic dimensions (symbolic_reshape_targets in check.h):
/// `values` as Reshape reads them (an extent; 0, the input's extent at the same axis; -1, inferred, once),
/// except where `from_input[d]` names a graph input: output dimension d is that input's extent at that axis,
/// a symbolic dimension, read with a Shape of the graph input (PyTorch's [b, h, s, d] -> [b * h, s, d] around
/// a batched MatMul: the seq moved from axis 2 to axis 1, which 0 cannot say).
struct ReshapeTarget {
  std::vector<int64_t> values;
  std::vector<InputAxis> from_input;  // one per output dimension; an empty input name where `values` says it
  bool operator==(const ReshapeTarget&) const = default;
};
/// By (input shape, output shape) at the sizes bound at import.
using ReshapeTargets = std::map<std::pair<Shape, Shape>, ReshapeTarget>;

/// Where a tensor's bytes lie in an external data file.
struct ExternalBytes {
  std::filesystem::path file;
  uint64_t offset = 0, length = 0;
};

/// A float weight's value: held in memory (inline in the file, or made by the import or the optimizer), or
/// left in the model's external data file and read on each request, so that a large model's weights are never
/// all in memory at once (issue 45): the caller holds what values() returns as long as it needs it. Its element
/// type (FLOAT, FLOAT16 or BFLOAT16) is how the file stores it and how export writes it: values() are float
/// whatever the type, read exactly (every FLOAT16 and BFLOAT16 value is a float).
class WeightValue {
 public:
  WeightValue(Tensor<float> held, int32_t elem_type = 1);  // NOLINT(google-explicit-constructor): a held tensor is a weight value
  WeightValue(Shape shape, ExternalBytes where, int32_t elem_type = 1);
  const Shape& shape() const { return shape_; }
  /// onnx::TensorProto::DataType: 1 FLOAT, 10 FLOAT16, 16 BFLOAT16.
  int32_t elem_type() const { return elem_type_; }
  /// The values: the held tensor, or read from the file now. Throws OnnxError when the file cannot be read.
  std::shared_ptr<const Tensor<float>> values() const;
  /// The values as doubles (the check's precision): from the held tensor, or read from the file a chunk at a
  /// time, so that the float values are never in memory beside the doubles.
  Tensor<double> doubles() const;
  /// Where the values lie when they are not held: export refers to them there, and a written file gets them
  /// by a streamed copy.
  const std::optional<ExternalBytes>& external() const { return external_; }

 private:
  Shape shape_;
  std::shared_ptr<const Tensor<float>> held_;
  std::optional<ExternalBytes> external_;
  int32_t elem_type_ = 1;
};

struct OnnxModel {
  Expr graph;
  std::map<std::string, WeightValue> weights;  // every (weight NAME ...) leaf's value
  std::vector<OpaqueNode> opaque;                 // indexed by the opaque node's id attribute
  std::vector<TensorInfo> inputs, outputs;        // declared, in order
  std::map<std::string, std::string> passthrough; // name -> serialized onnx::TensorProto
  int64_t opset = 0;                              // version of the default ("ai.onnx") domain
  std::string shell;   // serialized onnx::ModelProto with an empty graph body: metadata, opset imports,
                       // functions, declared inputs and outputs
  std::string source;  // file name, for messages
  bool external_data = false;  // the file kept tensor data in external files (export writes it so too)
  /// The folder external data locations are relative to: large float tensors stay there, not in memory
  /// (weights as WeightValue::external, other types as passed-through protos that still refer to the file).
  std::filesystem::path external_data_dir;
  std::vector<std::string> notes;  // import remarks, e.g. why a node stayed opaque
  /// Nodes the import folded away (a BatchNormalization into the convolution before it, a multiplication by
  /// ones, ...), described. Not empty: the graph, exported as it is, is already smaller than the file.
  std::vector<std::string> folded;
  std::vector<ReshapeSite> reshapes;  // in import order
  /// Integer shape-arithmetic nodes of the file (Shape, Gather, Mul, ... on shapes) the import folded into
  /// constants. They cost nothing once a runtime folds them (onnxruntime at ORT_ENABLE_ALL) but run on every
  /// inference at ORT_DISABLE_ALL: the report counts them (folded_shape_nodes) for that level's prediction.
  int shape_nodes_folded = 0;
  int file_nodes = 0;  // nodes in the file's main graph as it was read
  /// Symbolic dimensions the import bound to a default value (ImportOptions::default_dims), by name, and
  /// unnamed ones by input and axis: the caller's options plus these give the sizes the model was imported at.
  std::map<std::string, int64_t> defaulted_dims;
  std::map<InputAxis, int64_t> defaulted_axes;

  /// Number of opaque operator nodes.
  size_t num_opaque() const { return opaque.size(); }
};

/// The ONNX element type of each node of `graph` (a term of `model`), indexed by ExprId (issue 45): a graph
/// input's declared type, a weight's (WeightValue::elem_type), an opaque output's (OpaqueNode::output_types),
/// and an operator's its first operand's: the vocabulary's operators are type-generic over FLOAT, FLOAT16 and
/// BFLOAT16 and keep their operands' type (a constant generator such as (ones like) its reference's). 0 where
/// unknown. Throws OnnxError when an operator's operands have different float types (the import never makes
/// such a term, and no rule can: each rule's sides are built from the same variables).
std::vector<int32_t> expr_elem_types(const OnnxModel& model, const Expr& graph);

/// Bad input to import/export/check (missing or malformed file, unsupported opset, shapes that cannot
/// be inferred). The message names the file and, where there is one, the node.
class OnnxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace teq::onnx_io
