#include "optimizer/cost/ort_fusions.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "optimizer/engine/extract.h"  // precomputable_nodes
#include "rules/evaluator.h"           // infer_shapes
#include "rules/ops/matmul.h"
#include "rules/ops/reduce.h"

namespace teq {
namespace {

constexpr std::string_view kPrefix = "ort:";
constexpr std::array kKinds = {OrtFusion::SkipLayerNormalization, OrtFusion::LayerNormalization,
                               OrtFusion::SimplifiedLayerNormalization, OrtFusion::Gelu,
                               OrtFusion::Gemm, OrtFusion::FusedMatMul, OrtFusion::Gemm2d,
                               OrtFusion::FusedGemmRelu, OrtFusion::FusedGemmTanh, OrtFusion::FusedGemmSigmoid,
                               OrtFusion::FastGelu};

bool is_2d_gemm(OrtFusion kind) {
  return kind == OrtFusion::Gemm2d || kind == OrtFusion::FusedGemmRelu || kind == OrtFusion::FusedGemmTanh ||
         kind == OrtFusion::FusedGemmSigmoid;
}

/// How many shapes a kind's key holds.
size_t key_shapes(OrtFusion kind) {
  if (is_2d_gemm(kind)) return 3;
  return kind == OrtFusion::Gemm || kind == OrtFusion::FusedMatMul ? 2 : 1;
}

/// "[2,16,64],[64]": the shapes of a key, each non-empty.
std::optional<std::vector<Shape>> parse_shapes(std::string_view s) {
  std::vector<Shape> shapes;
  while (!s.empty()) {
    if (s.front() != '[') return std::nullopt;
    s.remove_prefix(1);
    Shape shape;
    while (true) {
      int64_t d = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (ec != std::errc() || d < 0) return std::nullopt;
      shape.push_back(d);
      s.remove_prefix(static_cast<size_t>(end - s.data()));
      if (s.empty()) return std::nullopt;
      const char sep = s.front();
      s.remove_prefix(1);
      if (sep == ']') break;
      if (sep != ',') return std::nullopt;
    }
    shapes.push_back(std::move(shape));
    if (!s.empty() && (s.front() != ',' || s.size() == 1)) return std::nullopt;
    if (!s.empty()) s.remove_prefix(1);
  }
  return shapes;
}

/// Matches onnxruntime's layer-norm family on our graphs. Its fusions require every inner node to feed only
/// the next one of the pattern, so a node used outside the unit stops a match, as it stops onnxruntime's.
class Matcher {
 public:
  Matcher(const Expr& g, std::span<const Shape> shapes, const std::vector<bool>& pre)
      : g_(g), shapes_(shapes), pre_(pre), users_(g.size()) {
    for (size_t i = 0; i < g.size(); ++i)
      for (ExprId c : g.nodes()[i].children)
        if (std::ranges::find(users_[c.value], i) == users_[c.value].end()) users_[c.value].push_back(i);
  }

  /// The unit rooted at a layer norm's division, if `div` is one.
  std::optional<FusedUnit> layer_norm_at(size_t div) const;
  /// A gelu (exported as the five nodes GeluFusion matches) or gelu_tanh (the nine FastGeluFusion matches).
  std::optional<FusedUnit> gelu_at(size_t i) const {
    if ((op(i) != OpKind::Gelu && op(i) != OpKind::GeluTanh) || pre_[i]) return std::nullopt;
    return unit(op(i) == OpKind::Gelu ? OrtFusion::Gelu : OrtFusion::FastGelu, {shapes_[i]}, {i});
  }
  /// A bias add of a matmul of a rank-3 (or more) tensor by a weight matrix: Reshape, Gemm, Reshape.
  std::optional<FusedUnit> gemm_at(size_t add) const;
  /// A 2-d matmul and the add of a bias or any tensor of the output's shape (or its rows or columns) as one
  /// Gemm, the activation that is the add's one user fused in; `add` is the add.
  std::optional<FusedUnit> gemm_2d_at(size_t add) const;
  /// A matmul of two per-run rank-3 tensors with the transposes and constant scales onnxruntime folds into
  /// it (at least one).
  std::optional<FusedUnit> fused_matmul_at(size_t mm) const;

 private:
  static FusedUnit unit(OrtFusion kind, std::vector<Shape> shapes, std::vector<size_t> nodes) {
    std::string key = fused_unit_key(kind, shapes);
    const bool gemm = kind == OrtFusion::Gemm || is_2d_gemm(kind);
    const double weight = gemm ? 4.0 * static_cast<double>(num_elements(shapes[1])) : 0.0;
    return FusedUnit{kind, std::move(shapes), std::move(nodes), std::move(key), weight, false};
  }
  OpKind op(size_t i) const { return g_.nodes()[i].op; }
  bool plain_matmul(size_t i) const {
    return binary(i, OpKind::Matmul) && ops::matmul_activation(g_.nodes()[i].attrs) == Activation::None;
  }
  /// An operand of a matmul that onnxruntime takes into a FusedMatMul: a rank-3 transpose or a scale by a
  /// constant, used by nothing else; pushes what it absorbs and returns the tensor the kernel then reads.
  size_t absorb_operand(size_t i, size_t user, std::vector<size_t>& members) const;
  size_t child(size_t i, size_t k) const { return g_.nodes()[i].children.at(k).value; }
  bool unary(size_t i, OpKind kind) const { return op(i) == kind && g_.nodes()[i].children.size() == 1; }
  bool binary(size_t i, OpKind kind) const { return op(i) == kind && g_.nodes()[i].children.size() == 2; }
  /// A broadcast's operand (the broadcast a member of the unit when it runs), else the node itself.
  size_t through_broadcast(size_t i, std::vector<size_t>& members) const {
    if (!unary(i, OpKind::Broadcast)) return i;
    if (!pre_[i]) members.push_back(i);
    return child(i, 0);
  }
  /// reduce_mean over the last axis, kept, of `of` (any operand when `of` is empty).
  bool last_axis_mean(size_t i, std::optional<size_t> of) const {
    if (!unary(i, OpKind::ReduceMean)) return false;
    const ops::ReduceMeanAttrs r = ops::reduce_mean_attrs(g_.nodes()[i].attrs);
    const int64_t rank = static_cast<int64_t>(shapes_[child(i, 0)].size());
    return r.keepdims && r.axes.size() == 1 && (r.axes[0] == rank - 1 || r.axes[0] == -1) &&
           (!of || child(i, 0) == *of);
  }
  /// The operand of a commutative `i` that is not weight-only, when the other one is.
  std::optional<size_t> runtime_operand(size_t i, OpKind kind) const {
    if (!binary(i, kind)) return std::nullopt;
    const size_t a = child(i, 0), b = child(i, 1);
    if (pre_[b] && !pre_[a]) return a;
    if (pre_[a] && !pre_[b]) return b;
    return std::nullopt;
  }
  /// A weight-only scalar, or one broadcast to a tensor.
  bool constant_scalar(size_t i) const {
    if (!pre_[i]) return false;
    return num_elements(shapes_[i]) <= 1 || (unary(i, OpKind::Broadcast) && num_elements(shapes_[child(i, 0)]) <= 1);
  }
  /// Whether `i` is a graph output: onnxruntime fuses no node whose output leaves the graph.
  bool is_root(size_t i) const {
    return std::ranges::any_of(g_.roots(), [&](ExprId r) { return r.value == i; });
  }
  /// The one user of `i`, when it has exactly one.
  std::optional<size_t> sole_user(size_t i) const {
    return users_[i].size() == 1 ? std::optional(users_[i][0]) : std::nullopt;
  }
  bool used_only_by(size_t i, const std::vector<size_t>& members) const {
    return std::ranges::all_of(users_[i], [&](size_t u) { return std::ranges::find(members, u) != members.end(); });
  }
  /// Whether only `out` of the unit's nodes is used outside it: the kernel computes no other output.
  bool closed(const std::vector<size_t>& members, size_t out) const {
    return std::ranges::all_of(members, [&](size_t i) { return i == out || used_only_by(i, members); });
  }
  /// sqrt(var + eps) with var = mean(d * d): the variance part, whose nodes go to `members`.
  bool is_std_dev(size_t s, size_t d, std::vector<size_t>& members) const;
  /// The residual Add before a layer norm of `x`: both operands per-run tensors of x's rank-3 shape.
  bool is_skip_add(size_t x, const std::vector<size_t>& members) const {
    if (!binary(x, OpKind::EwAdd) || pre_[x] || shapes_[x].size() != 3) return false;
    const size_t a = child(x, 0), b = child(x, 1);
    return !pre_[a] && !pre_[b] && shapes_[a] == shapes_[x] && shapes_[b] == shapes_[x] && used_only_by(x, members);
  }

  const Expr& g_;
  std::span<const Shape> shapes_;
  const std::vector<bool>& pre_;
  std::vector<std::vector<size_t>> users_;
};

bool Matcher::is_std_dev(size_t s, size_t d, std::vector<size_t>& members) const {
  if (!unary(s, OpKind::Sqrt)) return false;
  const std::optional<size_t> var = runtime_operand(child(s, 0), OpKind::EwAdd);  // + eps
  if (!var || !last_axis_mean(*var, std::nullopt)) return false;
  const size_t sq = child(*var, 0);
  if (!binary(sq, OpKind::EwMul) || child(sq, 0) != d || child(sq, 1) != d) return false;
  members.insert(members.end(), {sq, *var, child(s, 0), s});
  return true;
}

std::optional<FusedUnit> Matcher::layer_norm_at(size_t div) const {
  if (!binary(div, OpKind::EwDiv) || pre_[div]) return std::nullopt;
  std::vector<size_t> members;
  const size_t d = child(div, 0);
  if (!is_std_dev(through_broadcast(child(div, 1), members), d, members)) return std::nullopt;
  members.push_back(div);
  const std::optional<size_t> scaled = sole_user(div);  // * gamma
  if (!scaled || runtime_operand(*scaled, OpKind::EwMul) != div) return std::nullopt;
  members.push_back(*scaled);
  const std::optional<size_t> shifted = sole_user(*scaled);  // + beta
  const Shape& shape = shapes_[div];
  const bool has_beta = shifted && runtime_operand(*shifted, OpKind::EwAdd) == *scaled;
  if (has_beta) members.push_back(*shifted);
  const size_t out = has_beta ? *shifted : *scaled;
  // d = x - mean(x): a layer norm; otherwise an RMS norm of d.
  std::vector<size_t> mean_part;  // the mean's broadcast, a member once d is known to be centered
  const bool sub = binary(d, OpKind::EwSub);
  const size_t mean = sub ? through_broadcast(child(d, 1), mean_part) : d;
  if (!sub || !last_axis_mean(mean, child(d, 0))) {
    if (has_beta) return std::nullopt;
    if (!closed(members, out)) return std::nullopt;
    return unit(OrtFusion::SimplifiedLayerNormalization, {shape}, members);
  }
  const size_t x = child(d, 0);
  members.insert(members.end(), mean_part.begin(), mean_part.end());
  members.insert(members.end(), {mean, d});
  if (!closed(members, out)) return std::nullopt;
  OrtFusion kind = OrtFusion::LayerNormalization;
  // A layer norm without beta and the Add before it: no SkipLayerNormalization in onnxruntime's profile of
  // eqsat-run's BERT file (LayerNormalization x25, the Adds apart), so none is predicted.
  if (has_beta && is_skip_add(x, members)) {
    kind = OrtFusion::SkipLayerNormalization;
    members.push_back(x);
  }
  return unit(kind, {shape}, members);
}

size_t Matcher::absorb_operand(size_t i, size_t user, std::vector<size_t>& members) const {
  if (pre_[i] || sole_user(i) != user) return i;
  const bool transpose = unary(i, OpKind::Transpose) && shapes_[i].size() == 3;
  const bool scale = (binary(i, OpKind::EwDiv) || binary(i, OpKind::EwMul) || binary(i, OpKind::Smul)) &&
                     constant_scalar(child(i, 1));
  if (!transpose && !scale) return i;
  members.push_back(i);
  return absorb_operand(child(i, 0), i, members);
}

std::optional<FusedUnit> Matcher::fused_matmul_at(size_t mm) const {
  if (!plain_matmul(mm) || pre_[mm] || shapes_[child(mm, 0)].size() != 3 || shapes_[child(mm, 1)].size() != 3)
    return std::nullopt;
  std::vector<size_t> members{mm};
  absorb_operand(child(mm, 0), mm, members);
  absorb_operand(child(mm, 1), mm, members);
  if (members.size() == 1) return std::nullopt;
  return unit(OrtFusion::FusedMatMul, {shapes_[child(mm, 0)], shapes_[child(mm, 1)]}, members);
}

std::optional<FusedUnit> Matcher::gemm_at(size_t add) const {
  const std::optional<size_t> mm = runtime_operand(add, OpKind::EwAdd);
  if (!mm || !plain_matmul(*mm) || sole_user(*mm) != add) return std::nullopt;
  const Shape& a = shapes_[child(*mm, 0)];
  const Shape& b = shapes_[child(*mm, 1)];
  if (a.size() < 3 || b.size() != 2 || !pre_[child(*mm, 1)] || pre_[child(*mm, 0)]) return std::nullopt;
  const int64_t rows = num_elements(a) / a.back();
  return unit(OrtFusion::Gemm, {Shape{rows, a.back()}, b}, {*mm, add});
}

std::optional<FusedUnit> Matcher::gemm_2d_at(size_t add) const {
  if (!binary(add, OpKind::EwAdd) || pre_[add]) return std::nullopt;
  // onnxruntime fuses the MatMul that feeds only this Add (the first in its topological order when both do).
  for (size_t side = 0; side < 2; ++side) {
    const size_t mm = child(add, side), other = child(add, 1 - side);
    if (!plain_matmul(mm) || pre_[mm] || sole_user(mm) != add || is_root(mm)) continue;
    const Shape& a = shapes_[child(mm, 0)];
    const Shape& b = shapes_[child(mm, 1)];
    if (a.size() != 2 || b.size() != 2) continue;
    // The exporter leaves a broadcast of the added operand to the Add's numpy broadcasting: C is its operand.
    std::vector<size_t> members{mm, add};
    const Shape& c = shapes_[through_broadcast(other, members)];
    // Gemm broadcasts its C one way only: (N), (1, N), (M, 1) or (M, N).
    const bool bias_ok = (c.size() == 1 && c[0] == b[1]) ||
                         (c.size() == 2 && (c[0] == 1 || c[0] == a[0]) && c[1] == b[1]) ||
                         (c.size() == 2 && c[0] == a[0] && c[1] == 1);
    if (!bias_ok) continue;
    OrtFusion kind = OrtFusion::Gemm2d;
    if (const std::optional<size_t> act = sole_user(add)) {
      const OpKind a_op = op(*act);
      const OrtFusion fused = a_op == OpKind::Relu      ? OrtFusion::FusedGemmRelu
                              : a_op == OpKind::Tanh    ? OrtFusion::FusedGemmTanh
                              : a_op == OpKind::Sigmoid ? OrtFusion::FusedGemmSigmoid
                                                        : OrtFusion::Gemm2d;
      if (fused != OrtFusion::Gemm2d && unary(*act, a_op) && !is_root(add)) {
        kind = fused;
        members.push_back(*act);
      }
    }
    return unit(kind, {a, b, c}, members);
  }
  return std::nullopt;
}

}  // namespace

std::string_view ort_fusion_name(OrtFusion kind) {
  switch (kind) {
    case OrtFusion::SkipLayerNormalization: return "SkipLayerNormalization";
    case OrtFusion::LayerNormalization: return "LayerNormalization";
    case OrtFusion::SimplifiedLayerNormalization: return "SimplifiedLayerNormalization";
    case OrtFusion::Gelu: return "Gelu";
    case OrtFusion::Gemm: return "Gemm";
    case OrtFusion::FusedMatMul: return "FusedMatMul";
    case OrtFusion::Gemm2d: return "Gemm2d";
    case OrtFusion::FusedGemmRelu: return "FusedGemmRelu";
    case OrtFusion::FusedGemmTanh: return "FusedGemmTanh";
    case OrtFusion::FusedGemmSigmoid: return "FusedGemmSigmoid";
    case OrtFusion::FastGelu: return "FastGelu";
  }
  return "?";
}

std::string fused_unit_key(OrtFusion kind, const std::vector<Shape>& shapes) {
  std::string key = std::string(kPrefix) + std::string(ort_fusion_name(kind)) + "|";
  for (size_t i = 0; i < shapes.size(); ++i) key += (i ? "," : "") + to_string(shapes[i]);
  return key;
}

std::optional<std::pair<OrtFusion, std::vector<Shape>>> parse_fused_unit_key(std::string_view key) {
  if (!key.starts_with(kPrefix)) return std::nullopt;
  key.remove_prefix(kPrefix.size());
  const size_t bar = key.find('|');
  if (bar == std::string_view::npos) return std::nullopt;
  const auto kind = std::ranges::find(kKinds, key.substr(0, bar), ort_fusion_name);
  if (kind == kKinds.end()) return std::nullopt;
  std::optional<std::vector<Shape>> shapes = parse_shapes(key.substr(bar + 1));
  if (!shapes || shapes->size() != key_shapes(*kind)) return std::nullopt;
  return std::pair{*kind, std::move(*shapes)};
}

std::string fused_unit_key_forms() {
  std::string s = "ort:KIND|[d0,d1,...] with KIND one of";
  for (OrtFusion k : kKinds) s += " " + std::string(ort_fusion_name(k));
  return s + "; Gemm and FusedMatMul take two shapes, [M,K],[K,N] and the operands'; Gemm2d and FusedGemm* three, "
             "[M,K],[K,N] and the added operand's";
}

std::vector<FusedUnit> find_ort_fusions(const Expr& graph, std::span<const Shape> shapes,
                                        const std::vector<bool>& precomputable) {
  const Matcher m(graph, shapes, precomputable);
  std::vector<FusedUnit> units;
  std::vector<bool> taken(graph.size(), false);
  for (size_t i = 0; i < graph.size(); ++i) {
    std::optional<FusedUnit> u = m.layer_norm_at(i);
    if (!u) u = m.gelu_at(i);
    if (!u) u = m.gemm_at(i);
    if (!u) u = m.gemm_2d_at(i);
    if (!u) u = m.fused_matmul_at(i);
    if (!u || std::ranges::any_of(u->nodes, [&](size_t n) { return taken[n]; })) continue;
    for (size_t n : u->nodes) taken[n] = true;
    units.push_back(std::move(*u));
  }
  return units;
}

std::map<std::string, int> count_ort_fusions(const Expr& graph) {
  std::map<std::string, int> counts;
  for (const FusedUnit& u : find_ort_fusions(graph, infer_shapes(graph, {}), precomputable_nodes(graph)))
    ++counts[std::string(ort_fusion_name(u.kind))];
  return counts;
}

}  // namespace teq
