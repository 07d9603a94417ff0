#include "optimizer/engine/cost_model.h"

#include <algorithm>

#include "rules/work.h"

namespace teq {

bool is_fused_epilogue(OpKind op, std::span<const OperandFacts> operands, bool tanh_sigmoid) {
  if (op == OpKind::Relu) return operands.size() == 1 && operands[0].fusion_anchor;
  if (op == OpKind::Tanh || op == OpKind::Sigmoid) return tanh_sigmoid && operands.size() == 1 && operands[0].added_anchor;
  // A constant scalar scale: ONNX Gemm's alpha (imported as smul), onnxruntime's MatMulScaleFusion and
  // ConvMulFusion, cuBLAS's and cuDNN's alpha.
  if (op == OpKind::Smul) return operands.size() == 2 && operands[0].fusion_anchor && operands[1].precomputable;
  // A bias, or any tensor of the output's shape: onnxruntime's FusedConv adds a "sum" input (a residual)
  // in the convolution's output stage, as cuDNN's conv-bias-activation does with its z operand.
  return op == OpKind::EwAdd && operands.size() == 2 && (operands[0].fusion_anchor || operands[1].fusion_anchor);
}

bool is_added_anchor(OpKind op, std::span<const OperandFacts> operands) {
  return op == OpKind::EwAdd && is_fused_epilogue(op, operands);
}

bool is_anchor_operator(OpKind op, std::span<const Shape> inputs) {
  return op == OpKind::Conv2d || (op == OpKind::Matmul && inputs.size() == 2 && inputs[0].size() == 2 && inputs[1].size() == 2);
}

std::optional<size_t> weight_operand(OpKind op, std::span<const Shape> inputs) {
  if (inputs.size() < 2) return std::nullopt;
  if (op == OpKind::Conv2d || (op == OpKind::Matmul && inputs[1].size() == 2)) return 1;
  return std::nullopt;
}

bool is_fusion_anchor(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, std::span<const OperandFacts> operands) {
  if (op == OpKind::EwAdd || op == OpKind::Smul) return is_fused_epilogue(op, operands);
  return fused_activation(op, attrs) == Activation::None && is_anchor_operator(op, inputs);
}

double node_cost_in_context(const CostModel& cost, OpKind op, AttrSpan attrs, std::span<const Shape> inputs,
                            const Shape& output, std::span<const OperandFacts> operands) {
  if (cost.fuses_epilogues() && is_fused_epilogue(op, operands, cost.fuses_tanh_sigmoid())) return 0;
  double c = std::max(0.0, cost.node_cost(op, attrs, inputs, output));
  if (cost.streams_weights()) c += cost.weight_stream_penalty(op, attrs, inputs, output, operands);
  return c;
}

double FlopCostModel::node_cost(OpKind op, AttrSpan attrs, std::span<const Shape> inputs,
                                const Shape& output) const {
  if (op == OpKind::Noop) return 0;
  double elements = static_cast<double>(num_elements(output));
  // A split's second operand only supplies the cut position (its shape); nothing of it is read.
  const size_t read = op == OpKind::Split ? 1 : inputs.size();
  for (size_t i = 0; i < read; ++i) elements += static_cast<double>(num_elements(inputs[i]));
  const bool view = op == OpKind::Split || op == OpKind::Slice || op == OpKind::Reshape;
  return config_.per_flop * op_flops(op, attrs, inputs, output) + config_.per_element * elements +
         (view ? config_.per_view_node : config_.per_node);
}

}  // namespace teq
