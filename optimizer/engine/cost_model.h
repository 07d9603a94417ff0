// CostModel: the interface every cost model implements (the simple FLOP+bytes model here, the analytical
// roofline, the measured and DB models and the runtime policy that wraps them in optimizer/cost), in egg's
// shape: one required method, the cost of one operator node in its context. Costs are estimated seconds (or
// any additive unit); extraction sums them. The engine knows nothing of devices or runtimes: what a runtime
// fuses, or how it reads weights, is the cost library's (optimizer/cost/runtime_cost.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rules/op.h"
#include "rules/shape.h"

namespace teq {

class Expr;

/// What a cost model says of a node's output for the nodes that read it (CostModel::marks): bits the engine
/// carries from a node to its users without reading them; 0 says nothing.
using NodeMarks = uint8_t;

/// What the engine knows of one operand of the node it prices.
struct OperandFacts {
  bool precomputable = false;  // weight-only: computed once at load time (the engine's weight analysis)
  /// CostModel::marks of the operand's producer; in an e-graph, of the first e-node of its e-class that has any.
  NodeMarks marks = 0;
  bool operator==(const OperandFacts&) const = default;
};

/// One operator node as a cost model sees it: operator, attributes, input shapes, output shape, and what the
/// engine knows of each operand (indexed like `inputs`; empty when the caller knows nothing of them).
struct NodeContext {
  OpKind op;
  AttrSpan attrs;
  std::span<const Shape> inputs;
  const Shape& output;
  std::span<const OperandFacts> operands = {};
  /// The element type of the node's operands and result (LeafElemType's numbering, egraph.h: 1 float32, 10
  /// float16, 16 bfloat16; 0 unknown, priced as float32): what models that count bytes moved multiply by.
  int32_t elem_type = 0;
  /// The element type of its operands when it differs from the result's (a cast's; 0: the same).
  int32_t operand_elem_type = 0;
  int32_t operand_type() const { return operand_elem_type != 0 ? operand_elem_type : elem_type; }
};

/// Bytes of one element of type `elem_type` (NodeContext::elem_type): 2 for float16 and bfloat16, else
/// `otherwise` (float32's 4, or what a model assumes of every tensor).
inline double element_bytes(int32_t elem_type, double otherwise = 4) {
  return elem_type == 10 || elem_type == 16 ? 2 : otherwise;
}

/// Nodes of a graph (indices into Expr::nodes()) that a runtime runs as one kernel after its own load-time
/// fusions, and what the model charges for that kernel: onnxruntime at ORT_ENABLE_ALL runs a residual Add
/// and the layer norm after it as one SkipLayerNormalization, for instance.
struct PricedUnit {
  std::vector<size_t> nodes;
  double cost = 0;  // seconds, charged instead of the nodes' own costs
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// The one required method: the cost of one operator node in its context. Leaves (var, input, weight) are
  /// never asked, nor is weight-only work (precomputed at load time: the engine makes it free).
  virtual double node_cost(const NodeContext& node) const = 0;
  /// Short name for reports, e.g. "flops", "analytical:h200".
  virtual std::string name() const { return "custom"; }
  /// What this model wants to know, when it prices a node, of each operand's producer (OperandFacts::marks).
  /// Default: nothing.
  virtual NodeMarks marks(const NodeContext& /*node*/) const { return 0; }
  /// The fused units of `graph` this model has a price for (disjoint; `shapes` and `precomputable` are
  /// indexed like graph.nodes()). graph_cost charges each unit's cost instead of its nodes'. Extraction prices
  /// e-nodes one by one and never asks: a whole-graph pattern is judged on the graphs eqsat-run compares
  /// (the original and the export read back). Default: none, every node is priced alone.
  virtual std::vector<PricedUnit> fused_units(const Expr& /*graph*/, std::span<const Shape> /*shapes*/,
                                              const std::vector<bool>& /*precomputable*/) const {
    return {};
  }

  /// node_cost of a node whose operands' facts do not matter (nothing known of them): tests, one-node timing.
  double node_cost(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output) const {
    return node_cost(NodeContext{op, attrs, inputs, output});
  }
};

/// What extraction, graph_cost and the sequential search charge for a node: node_cost, never below 0.
double node_cost_in_context(const CostModel& cost, const NodeContext& node);

/// A simple, deterministic model for tests of the search machinery: multiply-adds plus elements read and
/// written, plus a fixed per-node overhead, so that fewer, larger operators win. It keeps TASO's conventions
/// (split and slice launch nothing, a fused activation is free), under which merging and fusing rewrites
/// pay, so tests can see them fire; the product's models (analytical, measured) price what the exported file
/// runs instead (docs/cost-model.md).
class FlopCostModel final : public CostModel {
 public:
  struct Config {
    double per_flop = 1e-12;      // seconds per multiply-add
    double per_element = 4e-12;   // seconds per element moved (4 bytes at ~1 TB/s)
    double per_node = 5e-6;       // launch overhead
    // split, slice and reshape: runtimes make them views or fuse them into their consumer, so no launch
    // (their element traffic is still charged); noop (joins outputs) costs nothing at all.
    double per_view_node = 0;
  };
  FlopCostModel() = default;
  explicit FlopCostModel(Config c) : config_(c) {}
  using CostModel::node_cost;
  std::string name() const override { return "flops"; }
  double node_cost(const NodeContext& node) const override;

 private:
  Config config_;
};

}  // namespace teq
