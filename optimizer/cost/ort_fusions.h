// The load-time fusions of onnxruntime's CPU execution provider at ORT_ENABLE_ALL that change what a graph
// costs there, recognized in our graphs: a layer norm written as its decomposition (reduce_mean, sub, x*x,
// reduce_mean, + eps, sqrt, div, * gamma, + beta, the form PyTorch exports and eqsat-run's exporter writes) runs
// as one LayerNormalization kernel; with the residual Add before it as one SkipLayerNormalization; without
// its `+ beta` as ReduceMean, Sub and a SimplifiedLayerNormalization (onnxruntime's RMS-norm fusion takes what
// its layer-norm fusion leaves); the exact GELU (one gelu node here, five ONNX nodes in the file) as one Gelu.
// A cost DB prices each such unit from a timing of the fused kernel (bench/ort_cost_db.py), because a table of
// single nodes timed at ORT_DISABLE_ALL cannot see them: on this CPU a SkipLayerNormalization costs more
// than the eleven nodes it replaces (docs/cost-model.md).
// Usage:
//   for (const FusedUnit& u : find_ort_fusions(graph, shapes, precomputable)) db.lookup(u.key);
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expr.h"
#include "rules/shape.h"

namespace teq {

enum class OrtFusion { SkipLayerNormalization, LayerNormalization, SimplifiedLayerNormalization, Gelu };

/// onnxruntime's name of the fused operator, e.g. "SkipLayerNormalization".
std::string_view ort_fusion_name(OrtFusion kind);

/// One fused kernel: which nodes of the graph it replaces.
struct FusedUnit {
  OrtFusion kind = OrtFusion::LayerNormalization;
  Shape shape;                // the normalized (or activated) tensor's shape
  std::vector<size_t> nodes;  // indices into Expr::nodes(), the operator nodes the kernel runs
  std::string key;            // the cost DB's key: fused_unit_key(kind, shape)
};

/// "ort:SkipLayerNormalization|[2,16,64]": the kernel and the shape of the tensor it normalizes.
std::string fused_unit_key(OrtFusion kind, const Shape& shape);
/// The kernel and shape a key names; nullopt when it names none (a malformed DB entry).
std::optional<std::pair<OrtFusion, Shape>> parse_fused_unit_key(std::string_view key);
/// The valid key forms, for error messages.
std::string fused_unit_key_forms();

/// Every unit onnxruntime fuses in `graph` (disjoint), from the nodes the roots reach. `shapes` and
/// `precomputable` (weight-only nodes, computed at load time) are indexed like graph.nodes().
std::vector<FusedUnit> find_ort_fusions(const Expr& graph, std::span<const Shape> shapes,
                                        const std::vector<bool>& precomputable);

}  // namespace teq
