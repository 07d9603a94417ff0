// The load-time fusions of onnxruntime's CPU execution provider at ORT_ENABLE_ALL that change what a graph
// costs there, recognized in our graphs: a layer norm written as its decomposition (reduce_mean, sub, x*x,
// reduce_mean, + eps, sqrt, div, * gamma, + beta, the form PyTorch exports and eqsat-run's exporter writes) runs
// as one LayerNormalization kernel; with the residual Add before it as one SkipLayerNormalization; without
// its `+ beta` as a LayerNormalization without bias (onnxruntime's profile of such a file: LayerNormalization
// kernels, no SkipLayerNormalization, bench/ort_profile.py); an RMS norm, x / sqrt(mean(x * x) + eps) * w, as
// one SimplifiedLayerNormalization; the exact GELU (one gelu node here, five ONNX nodes in the file) as one Gelu;
// a matmul of a rank-3 tensor by a weight matrix and its bias add as Reshape, Gemm, Reshape (MatMulAddFusion);
// a 2-d matmul and the Add of a bias or any tensor of its output's shape as one Gemm (MatMulAddFusion), with a
// Relu, Tanh or Sigmoid after it as one FusedGemm (GemmActivationFusion);
// a batched matmul with the transposes and the constant scale of its operands as one FusedMatMul
// (TransposeMatMulFusion, MatMulScaleFusion).
// A cost DB prices each such unit from a timing of the fused kernel (bench/ort_cost_db.py), because a table of
// single nodes timed at ORT_DISABLE_ALL cannot see them: on this CPU a SkipLayerNormalization costs more
// than the eleven nodes it replaces (docs/cost-model.md).
// Usage:
//   for (const FusedUnit& u : find_ort_fusions(graph, shapes, precomputable)) db.lookup(u.key);
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expr.h"
#include "rules/shape.h"

namespace teq {

enum class OrtFusion {
  SkipLayerNormalization, LayerNormalization, SimplifiedLayerNormalization, Gelu, Gemm, FusedMatMul,
  Gemm2d, FusedGemmRelu, FusedGemmTanh, FusedGemmSigmoid,  // a 2-d matmul + add, and an activation after it
  FastGelu,
};

/// onnxruntime's name of the fused operator, e.g. "SkipLayerNormalization".
std::string_view ort_fusion_name(OrtFusion kind);

/// One fused kernel: which nodes of the graph it replaces.
struct FusedUnit {
  OrtFusion kind = OrtFusion::LayerNormalization;
  /// The normalized (or activated) tensor's shape; a Gemm's [M, K] and [K, N]; a FusedMatMul's two operands
  /// as the matmul reads them; a Gemm2d's or FusedGemm's [M, K], [K, N] and its added operand's shape.
  std::vector<Shape> shapes;
  std::vector<size_t> nodes;  // indices into Expr::nodes(), the operator nodes the kernel runs
  std::string key;            // the cost DB's key: fused_unit_key(kind, shapes)
  double weight_bytes = 0;    // the Gemm kinds: their [K, N] operand, read from memory in a large model
  bool streamed = false;      // priced with that weight read from memory (the key then starts "streamed:")
};

/// "ort:SkipLayerNormalization|[2,16,64]", "ort:Gemm|[32,64],[64,192]": the kernel and its shapes.
std::string fused_unit_key(OrtFusion kind, const std::vector<Shape>& shapes);
/// The kernel and shapes a key names; nullopt when it names none (a malformed DB entry).
std::optional<std::pair<OrtFusion, std::vector<Shape>>> parse_fused_unit_key(std::string_view key);
/// The valid key forms, for error messages.
std::string fused_unit_key_forms();

/// Every unit onnxruntime fuses in `graph` (disjoint), from the nodes the roots reach. `shapes` and
/// `precomputable` (weight-only nodes, computed at load time) are indexed like graph.nodes().
std::vector<FusedUnit> find_ort_fusions(const Expr& graph, std::span<const Shape> shapes,
                                        const std::vector<bool>& precomputable);
/// How many units of each kind (by ort_fusion_name) onnxruntime fuses in `graph`: the report's ort_fusions.
std::map<std::string, int> count_ort_fusions(const Expr& graph);

}  // namespace teq
