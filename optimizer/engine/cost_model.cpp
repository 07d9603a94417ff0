#include "optimizer/engine/cost_model.h"

#include <algorithm>

#include "rules/work.h"

namespace teq {

double node_cost_in_context(const CostModel& cost, const NodeContext& node) {
  return std::max(0.0, cost.node_cost(node));
}

double FlopCostModel::node_cost(const NodeContext& node) const {
  const OpKind op = node.op;
  if (op == OpKind::Noop) return 0;
  // per_element is priced at 4 bytes an element: a 16-bit type moves half as many bytes (a cast's operand is
  // of its own type).
  double elements = static_cast<double>(num_elements(node.output)) * element_bytes(node.elem_type) / 4;
  // A split's second operand only supplies the cut position (its shape); nothing of it is read.
  const size_t read = op == OpKind::Split ? 1 : node.inputs.size();
  for (size_t i = 0; i < read; ++i)
    elements += static_cast<double>(num_elements(node.inputs[i])) * element_bytes(node.operand_type()) / 4;
  const bool view = op == OpKind::Split || op == OpKind::Slice || op == OpKind::Reshape;
  return config_.per_flop * op_flops(op, node.attrs, node.inputs, node.output) + config_.per_element * elements +
         (view ? config_.per_view_node : config_.per_node);
}

}  // namespace teq
