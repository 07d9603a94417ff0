// RuntimeCost: how a runtime runs a graph beyond one node timed or estimated alone, as a decorator of any cost
// model. The engine asks one node's cost in its context (engine/cost_model.h) and knows nothing of runtimes;
// this is where the runtime's policy lives:
//   - epilogue fusion: onnxruntime (Conv+Add+Relu, Gemm+Relu, BatchNorm into Conv), cuDNN and TensorRT run a
//     convolution's or 2-d matmul's bias add, constant scale and relu inside its kernel, so those nodes cost
//     nothing, in the original as in the optimized graph; onnxruntime's CPU FusedConv and FusedGemm also take
//     a tanh or sigmoid after an add;
//   - weight streaming: in a model whose weights outgrow the cache, a node reads its weight operands from
//     memory on every run, and pays for it (the penalty comes from the model that knows the memory's rate).
// make_cost_model (cost_models.h) wraps the analytical and the DB models in it; the flops model stays bare.
// Usage:
//   RuntimeCost cost(std::make_unique<AnalyticalCostModel>(profile), {.fuses_epilogues = true});
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "optimizer/engine/cost_model.h"

namespace teq {

/// What a cost model may need to know of the whole model it prices, beyond one node's shapes. A runtime
/// keeps a model's weights in its last-level cache between runs only when they fit there; a model whose
/// weights outgrow it reads every weight from memory on every run, and a node whose cost is reading its
/// weight (a matrix-vector product of an RNN cell) then costs several times what it costs timed alone,
/// with its weight cache-hot. Models that know their cache size price weights accordingly.
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

/// The marks RuntimeCost gives a node's output (OperandFacts::marks).
enum RuntimeMark : NodeMarks {
  kFusionAnchor = 1,  // a conv's or 2-d matmul's output, a bias, residual or scale at most added (no activation)
  kAddedAnchor = 2,   // a fusion anchor through an add epilogue: onnxruntime's Gemm, a biased conv
};

/// Whether the operator's output is one a fusing runtime adds a bias and a relu to in its kernel: a
/// convolution or a 2-d matrix product (whatever its fused activation).
bool is_anchor_operator(OpKind op, std::span<const Shape> inputs);
/// Whether a node is an epilogue a fusing runtime runs inside the kernel of its anchor operand: ewadd of an
/// anchor and a bias or any other tensor (a residual: onnxruntime's FusedConv "sum" input, cuDNN's z), smul
/// of an anchor by a constant scalar (Gemm's alpha), relu of an anchor, and with `tanh_sigmoid` tanh or
/// sigmoid of an added anchor.
bool is_fused_epilogue(OpKind op, std::span<const OperandFacts> operands, bool tanh_sigmoid = false);

/// How the runtime a cost model describes runs a graph.
struct RuntimePolicy {
  /// Runs a convolution's or 2-d matmul's bias add, constant scale and relu inside its kernel.
  bool fuses_epilogues = false;
  /// Also a tanh or sigmoid after an add of one (onnxruntime's CPU FusedConv and FusedGemm: a MatMul followed
  /// by an Add is a Gemm there, a bare MatMul is not); cuDNN's fused convolution takes only relu.
  bool fuses_tanh_sigmoid = false;
  /// Not a cost: how the export should write a matmul of a rank-3 (or higher) activation by a 2-d operand
  /// with its bias add in a model with symbolic dimensions, as Reshape, Gemm, Reshape, which the runtime runs
  /// as one Gemm (its own fusion needs a concrete shape: a MatMul and an Add apart, priced so here, since only
  /// a 2-d matmul is an anchor). The read-back export is priced as the Gemm it is (output_choice.cpp).
  bool batched_linear_as_gemm = false;
  /// Set when the model's weights outgrow the cache: what a node pays beyond its cost to read its weight-only
  /// operands (OperandFacts::precomputable, at least kStreamedWeightMinBytes) from memory rather than from
  /// cache, whichever operand they are (a rewrite that moves a weight from a matmul's right operand to its
  /// left must not make its reading free). Empty: weights are priced cache-resident.
  std::function<double(const NodeContext&)> weight_stream_penalty;
};

class RuntimeCost final : public CostModel {
 public:
  RuntimeCost(std::unique_ptr<const CostModel> inner, RuntimePolicy policy);
  using CostModel::node_cost;
  std::string name() const override { return inner_->name(); }
  /// 0 for an epilogue the runtime fuses, else the inner model's cost (at least 0) plus the weight-streaming
  /// penalty.
  double node_cost(const NodeContext& node) const override;
  /// kFusionAnchor and kAddedAnchor, under a policy that fuses epilogues.
  NodeMarks marks(const NodeContext& node) const override;
  std::vector<PricedUnit> fused_units(const Expr& graph, std::span<const Shape> shapes,
                                      const std::vector<bool>& precomputable) const override {
    return inner_->fused_units(graph, shapes, precomputable);
  }
  bool streams_weights() const { return static_cast<bool>(policy_.weight_stream_penalty); }

 private:
  std::unique_ptr<const CostModel> inner_;
  RuntimePolicy policy_;
};

}  // namespace teq
