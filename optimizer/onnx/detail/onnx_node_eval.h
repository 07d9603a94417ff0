// Evaluation of single ONNX nodes on double tensors, for the numerical --check (check.h) through operators
// the import keeps opaque (outside the rule vocabulary): shape computations (Shape, Gather, Concat, Range,
// ConstantOfShape, ...), masks (Where, Equal, And, IsNaN, ...), Cast, Expand, 1-D convolutions and the
// like. Values of every element type are held as doubles (integers exactly up to 2^53, booleans as 0/1);
// each value carries its ONNX element type, which decides integer division, casts and comparisons' results.
// The semantics are ONNX's (opsets 1-21: attribute and input forms both read); operators_evaluated() lists
// what is covered. A node outside it throws NotEvaluable naming the operator.
// Usage:
//   OnnxValue x{Tensor<double>({2, 3}, 0.0), onnx::TensorProto::FLOAT};
//   std::vector<OnnxValue> outs = evaluate_onnx_node(node, {&x, nullptr}, /*opset=*/17);
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "rules/tensor.h"

namespace teq::onnx_io::detail {

/// A tensor of any ONNX element type, its elements as doubles.
struct OnnxValue {
  Tensor<double> t{Shape{}, 0.0};
  int32_t type = onnx::TensorProto::FLOAT;  // onnx::TensorProto::DataType; 0 (unknown) reads as FLOAT
};

/// An operator (or an attribute value of one) this evaluator does not implement.
class NotEvaluable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The outputs of `node` (one per declared output; an unnamed output gets an empty value) from its inputs
/// (`inputs[k]` nullptr for an optional input left out). `opset`: the default domain's version, for the
/// operators whose meaning changed (Softmax's axis before 13). Throws NotEvaluable for an operator or form
/// not covered, std::runtime_error (ShapeError) for inputs ONNX would reject.
/// `outer`: the values of the enclosing graph that an If's branches read by name (OpaqueNode::implicit_inputs).
using OuterValues = std::map<std::string, const OnnxValue*>;
std::vector<OnnxValue> evaluate_onnx_node(const onnx::NodeProto& node, const std::vector<const OnnxValue*>& inputs,
                                          int64_t opset, const OuterValues& outer = {});

/// Whether evaluate_onnx_node covers the operator (default domain only; If when every node of both branches is
/// covered; Loop and Scan (opset 9 on) when every node of the body is).
bool onnx_node_evaluable(const onnx::NodeProto& node);

/// The operators covered, sorted (for docs and messages).
const std::vector<std::string>& operators_evaluated();

/// The value of an initializer or Constant tensor: FLOAT, DOUBLE, FLOAT16, BFLOAT16, the signed and unsigned
/// integers and BOOL (raw_data or the typed fields). Throws NotEvaluable for strings and other types,
/// OnnxError for external data not loaded.
OnnxValue decode_tensor(const onnx::TensorProto& t);

/// Element type helpers.
bool is_integer_type(int32_t type);  // signed and unsigned integers (not BOOL)
bool is_float_type(int32_t type);    // FLOAT, DOUBLE, FLOAT16, BFLOAT16 (and 0, unknown)

}  // namespace teq::onnx_io::detail
