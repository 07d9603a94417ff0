// CostModel: the interface every cost model implements (the simple FLOP+bytes model here, the
// analytical GPU roofline model and the measured cuDNN/cuBLAS model elsewhere). Costs are estimated
// seconds (or any additive unit) of one operator node; extraction sums them.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rules/op.h"
#include "rules/shape.h"

namespace teq {

class Expr;

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
  /// Short name for reports, e.g. "flops", "analytical:h200".
  virtual std::string name() const = 0;
  /// Cost of one operator node with these attributes, input shapes and output shape. Leaves (var,
  /// input, weight) are never asked. Work that depends only on weights is made free by the optimizer
  /// (precomputed at load time), not by the cost model; so are epilogues (below) under a model that says
  /// its runtime fuses them.
  virtual double node_cost(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output) const = 0;
  /// Whether the runtime this model prices runs a convolution's or 2-d matrix product's bias add and relu
  /// inside that operator's kernel, as onnxruntime (Conv+Add+Relu, Gemm+Relu), cuDNN and TensorRT do at
  /// load time. Then those epilogue nodes cost nothing, in the original as in the optimized graph, and a
  /// rewrite that moves a bias add or relu away from its convolution pays for the kernel it makes.
  virtual bool fuses_epilogues() const { return false; }
  /// The fused units of `graph` this model has a price for (disjoint; `shapes` and `precomputable` are
  /// indexed like graph.nodes()). graph_cost charges each unit's cost instead of its nodes'. Extraction prices
  /// e-nodes one by one and never asks: a whole-graph pattern is judged on the graphs eqsat-run compares
  /// (the original and the export read back). Default: none, every node is priced alone.
  virtual std::vector<PricedUnit> fused_units(const Expr& /*graph*/, std::span<const Shape> /*shapes*/,
                                              const std::vector<bool>& /*precomputable*/) const {
    return {};
  }
};

/// An operand of a node, as a fusing runtime sees it.
struct OperandFacts {
  bool precomputable = false;  // weight-only: computed once at load time
  bool fusion_anchor = false;  // a convolution's or 2-d matmul's output, a bias or residual at most added (no activation)
};

/// Whether a node is an epilogue a fusing runtime runs inside the kernel of its anchor operand: ewadd of an
/// anchor and a bias or any other tensor (a residual: onnxruntime's FusedConv "sum" input, cuDNN's z), smul
/// of an anchor by a constant scalar (Gemm's alpha), or relu of an anchor.
bool is_fused_epilogue(OpKind op, std::span<const OperandFacts> operands);
/// Whether the operator's output is one a fusing runtime adds a bias and a relu to in its kernel: a
/// convolution or a 2-d matrix product (whatever its fused activation).
bool is_anchor_operator(OpKind op, std::span<const Shape> inputs);
/// Whether a node's output is a fusion anchor: a convolution or 2-d matmul without a fused activation, or a
/// bias-add or scale epilogue of one.
bool is_fusion_anchor(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, std::span<const OperandFacts> operands);
/// The cost of a node in its context: 0 for an epilogue under a model that fuses them, else node_cost.
/// Every extraction and graph costing goes through this, so the original and the optimized graph are
/// priced alike.
double node_cost_in_context(const CostModel& cost, OpKind op, AttrSpan attrs, std::span<const Shape> inputs,
                            const Shape& output, std::span<const OperandFacts> operands);

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
  std::string name() const override { return "flops"; }
  double node_cost(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output) const override;

 private:
  Config config_;
};

/// Multiply-adds of one operator (0 for pure data movement); shared by the cost models.
double count_flops(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output);

}  // namespace teq
