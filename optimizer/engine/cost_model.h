// CostModel: the interface every cost model implements (the simple FLOP+bytes model here, the
// analytical GPU roofline model and the measured cuDNN/cuBLAS model elsewhere). Costs are estimated
// seconds (or any additive unit) of one operator node; extraction sums them.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rules/op.h"
#include "rules/shape.h"

namespace teq {

class Expr;
struct OperandFacts;  // below: what a fusing runtime knows of a node's operand

/// Nodes of a graph (indices into Expr::nodes()) that a runtime runs as one kernel after its own load-time
/// fusions, and what the model charges for that kernel: onnxruntime at ORT_ENABLE_ALL runs a residual Add
/// and the layer norm after it as one SkipLayerNormalization, for instance.
struct PricedUnit {
  std::vector<size_t> nodes;
  double cost = 0;  // seconds, charged instead of the nodes' own costs
};

/// What a cost model may need to know of the whole model it prices, beyond one node's shapes. A runtime
/// keeps a model's weights in its last-level cache between runs only when they fit there; a model whose
/// weights outgrow it reads every weight from memory on every run, and a node whose cost is reading its
/// weight (a matrix-vector product of an RNN cell) then costs several times what it costs timed alone,
/// with its weight cache-hot. Models that know their cache size price weights accordingly (streams_weights).
struct ModelFootprint {
  double weight_bytes = 0;  // the weights a run reads (weight_bytes in extract.h); 0 = priced cache-resident
};

/// The operand of a node that real models hold as a weight, read from memory by the node on every run: a
/// convolution's kernel, a 2-d matrix product's right operand. nullopt for every other node. (A cost DB's
/// one-node timing models make this operand an initializer, as real models have it.)
std::optional<size_t> weight_operand(OpKind op, std::span<const Shape> inputs);
/// Weights smaller than this are priced cache-resident even in a model whose weights outgrow the cache: the
/// hardware prefetcher hides the reading of a few pages, and timing them cold would need hundreds of copies.
inline constexpr double kStreamedWeightMinBytes = 64 * 1024;

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
  /// Whether that runtime also runs a tanh or sigmoid in the kernel, after a bias (or other) add of a
  /// convolution or 2-d matmul: onnxruntime's CPU FusedConv and FusedGemm do (a MatMul followed by an Add is a
  /// Gemm there, a bare MatMul is not, so the add is required); cuDNN's fused convolution takes only relu.
  virtual bool fuses_tanh_sigmoid() const { return false; }
  /// Whether this model prices weight operands (weight_operand) as read from memory, because the model it
  /// was made for (ModelFootprint) has more weights than the device's last-level cache holds.
  virtual bool streams_weights() const { return false; }
  /// What a node pays beyond node_cost, under streams_weights, to read its weight-only operands (operands[k].
  /// precomputable, at least kStreamedWeightMinBytes) from memory rather than from cache. node_cost_in_context
  /// adds it, so a weight is charged whichever operand it is (a rewrite that moves a weight from a matmul's
  /// right operand to its left must not make its reading free).
  virtual double weight_stream_penalty(OpKind /*op*/, AttrSpan /*attrs*/, std::span<const Shape> /*inputs*/,
                                       const Shape& /*output*/, std::span<const OperandFacts> /*operands*/) const {
    return 0;
  }
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
  bool added_anchor = false;   // a fusion anchor through an add epilogue: onnxruntime's Gemm, a biased conv
};

/// Whether a node is an epilogue a fusing runtime runs inside the kernel of its anchor operand: ewadd of an
/// anchor and a bias or any other tensor (a residual: onnxruntime's FusedConv "sum" input, cuDNN's z), smul
/// of an anchor by a constant scalar (Gemm's alpha), relu of an anchor, and with `tanh_sigmoid`
/// (CostModel::fuses_tanh_sigmoid) tanh or sigmoid of an added anchor.
bool is_fused_epilogue(OpKind op, std::span<const OperandFacts> operands, bool tanh_sigmoid = false);
/// Whether a node's output is an added anchor: an add epilogue of a fusion anchor.
bool is_added_anchor(OpKind op, std::span<const OperandFacts> operands);
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

}  // namespace teq
