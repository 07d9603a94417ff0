#include "optimizer/cost/runtime_cost.h"

#include <algorithm>

namespace teq {
namespace {

bool anchor(const OperandFacts& f) { return (f.marks & kFusionAnchor) != 0; }
bool added_anchor(const OperandFacts& f) { return (f.marks & kAddedAnchor) != 0; }

}  // namespace

bool is_fused_epilogue(OpKind op, std::span<const OperandFacts> operands, bool tanh_sigmoid) {
  if (op == OpKind::Relu) return operands.size() == 1 && anchor(operands[0]);
  if (op == OpKind::Tanh || op == OpKind::Sigmoid) return tanh_sigmoid && operands.size() == 1 && added_anchor(operands[0]);
  // A constant scalar scale: ONNX Gemm's alpha (imported as smul), onnxruntime's MatMulScaleFusion and
  // ConvMulFusion, cuBLAS's and cuDNN's alpha.
  if (op == OpKind::Smul) return operands.size() == 2 && anchor(operands[0]) && operands[1].precomputable;
  // A bias, or any tensor of the output's shape: onnxruntime's FusedConv adds a "sum" input (a residual)
  // in the convolution's output stage, as cuDNN's conv-bias-activation does with its z operand.
  return op == OpKind::EwAdd && operands.size() == 2 && (anchor(operands[0]) || anchor(operands[1]));
}

bool is_anchor_operator(OpKind op, std::span<const Shape> inputs) {
  return op == OpKind::Conv2d || (op == OpKind::Matmul && inputs.size() == 2 && inputs[0].size() == 2 && inputs[1].size() == 2);
}

std::optional<size_t> weight_operand(OpKind op, std::span<const Shape> inputs) {
  if (inputs.size() < 2) return std::nullopt;
  if (op == OpKind::Conv2d || (op == OpKind::Matmul && inputs[1].size() == 2)) return 1;
  return std::nullopt;
}

RuntimeCost::RuntimeCost(std::unique_ptr<const CostModel> inner, RuntimePolicy policy)
    : inner_(std::move(inner)), policy_(std::move(policy)) {}

double RuntimeCost::node_cost(const NodeContext& node) const {
  if (policy_.fuses_epilogues && is_fused_epilogue(node.op, node.operands, policy_.fuses_tanh_sigmoid)) return 0;
  double c = std::max(0.0, inner_->node_cost(node));
  if (policy_.weight_stream_penalty) c += policy_.weight_stream_penalty(node);
  return c;
}

NodeMarks RuntimeCost::marks(const NodeContext& node) const {
  if (!policy_.fuses_epilogues || is_leaf(node.op)) return 0;
  // An anchor: a convolution or 2-d matmul without a fused activation, or a bias-add or scale epilogue of one;
  // an added anchor: an add epilogue.
  if (node.op == OpKind::EwAdd || node.op == OpKind::Smul) {
    if (!is_fused_epilogue(node.op, node.operands)) return 0;
    return node.op == OpKind::EwAdd ? kFusionAnchor | kAddedAnchor : kFusionAnchor;
  }
  const bool bare = fused_activation(node.op, node.attrs) == Activation::None && is_anchor_operator(node.op, node.inputs);
  return bare ? kFusionAnchor : 0;
}

}  // namespace teq
