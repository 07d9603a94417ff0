// The normalization family's ONNX forms (rules/ops/norm.h): BatchNormalization (folded into the convolution
// before it where it can be, its epsilon into the variance), Softmax and LayerNormalization (as its
// decomposition over reduce_mean) in; BatchNormalization, Softmax and, where the decomposition is still whole,
// LayerNormalization out.
#include <cmath>

#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/norm.h"
#include "rules/ops/reduce.h"

namespace teq::onnx_io::detail {

namespace {

// ---- import ------------------------------------------------------------------------------------------

/// LayerNormalization (opset 17) as its decomposition: mean and variance over axes axis..rank-1,
/// (x - mean) / sqrt(var + epsilon) * scale + bias.
void import_layernorm(Importer& im, const onnx::NodeProto& n) {
  im.require_single_output(n);
  ExprId x = im.in(n, 0);
  const Shape xs = im.shape(x);
  if (xs.empty()) throw NotInVocabulary{"0-d input"};
  if (attr_int(n, "stash_type", 1) != 1) throw NotInVocabulary{"stash_type other than float"};
  const int64_t axis = normalize_axis(attr_int(n, "axis", -1), xs.size(), "LayerNormalization", {});
  std::vector<int64_t> attrs{1};
  for (int64_t d = axis; d < static_cast<int64_t>(xs.size()); ++d) attrs.push_back(d);
  const float eps = attr_float(n, "epsilon", 1e-5f);
  ExprId mean = im.add(OpKind::ReduceMean, attrs, {x});
  ExprId d = im.add(OpKind::EwSub, {}, {x, im.broadcast_to(mean, xs)});
  ExprId var = im.add(OpKind::ReduceMean, attrs, {im.add(OpKind::EwMul, {}, {d, d})});
  const Shape vs = im.shape(var);
  ExprId sd = im.add(OpKind::Sqrt, {},
                     {im.add(OpKind::EwAdd, {}, {var, im.broadcast_to(im.scalar_weight(n.output(0) + ".epsilon", eps), vs)})});
  ExprId y = im.add(OpKind::EwDiv, {}, {d, im.broadcast_to(sd, xs)});
  y = im.add(OpKind::EwMul, {}, {y, im.broadcast_to(im.in(n, 1), xs)});
  if (im.has_input(n, 2)) y = im.add(OpKind::EwAdd, {}, {y, im.broadcast_to(im.in(n, 2), xs)});
  im.set_output(n, y);
}

/// Canonical form of Conv -> BatchNormalization (inference) with constant weights, as runtimes run it:
/// one convolution with w' = w * k and bias' = (bias - mean) * k + beta per output channel, where
/// k = scale / sqrt(var + epsilon). nullopt when the pattern or its constants are not there.
std::optional<ExprId> fold_batchnorm_into_conv(Importer& im, const onnx::NodeProto& n, ExprId x, float eps) {
  if (im.readers(n.input(0)) != 1) return std::nullopt;  // the convolution's output is read elsewhere too
  const Expr& g = im.graph();
  const Tensor<float>* bn[4];
  for (int k = 1; k <= 4; ++k) {
    auto v = im.value(n.input(k));
    if (!v || !(bn[k - 1] = im.weight_value(*v))) return std::nullopt;
  }
  // x is conv2d(input, w) or ewadd(conv2d(input, w), broadcast(reshape(b))), as the Conv import builds it.
  ExprId conv = x;
  const Tensor<float>* conv_bias = nullptr;
  if (g[x].op == OpKind::EwAdd) {
    conv = g[x].children[0];
    ExprId bc = g[x].children[1];
    if (g[bc].op != OpKind::Broadcast || g[g[bc].children[0]].op != OpKind::Reshape) return std::nullopt;
    conv_bias = im.weight_value(g[g[bc].children[0]].children[0]);
    if (!conv_bias) return std::nullopt;
  }
  const ExprNode conv_node = g[conv];  // a copy: add() below grows the graph
  if (conv_node.op != OpKind::Conv2d || fused_activation(conv_node.op, conv_node.attrs) != Activation::None)
    return std::nullopt;
  const Tensor<float>* w = im.weight_value(conv_node.children[1]);
  if (!w) return std::nullopt;
  const int64_t out_channels = w->shape[0];
  for (const Tensor<float>* t : bn)
    if (t->shape != Shape{out_channels}) return std::nullopt;
  if (conv_bias && conv_bias->shape != Shape{out_channels}) return std::nullopt;
  const auto& [scale, beta, mean, var] = bn;
  Tensor<float> folded_w = *w;
  std::vector<float> folded_b(static_cast<size_t>(out_channels));
  const size_t per_channel = folded_w.data.size() / static_cast<size_t>(out_channels);
  for (size_t o = 0; o < static_cast<size_t>(out_channels); ++o) {
    const double k = scale->data[o] / std::sqrt(static_cast<double>(var->data[o]) + eps);
    for (size_t i = 0; i < per_channel; ++i)
      folded_w.data[o * per_channel + i] = static_cast<float>(folded_w.data[o * per_channel + i] * k);
    folded_b[o] = static_cast<float>(((conv_bias ? conv_bias->data[o] : 0.0f) - mean->data[o]) * k + beta->data[o]);
  }
  const std::string w_name = g[conv_node.children[1]].name;
  ExprId new_w = im.weight(im.unique_name(w_name + ".bn"), std::move(folded_w));
  ExprId y = im.add(OpKind::Conv2d, conv_node.attrs, {conv_node.children[0], new_w});
  ExprId b = im.weight(im.unique_name(w_name + ".bn_bias"), Tensor<float>(Shape{out_channels}, std::move(folded_b)));
  ExprId bias = im.add(OpKind::Reshape, {out_channels, 1, 1}, {b});
  im.note_folded(describe(n) + ": folded into the convolution before it");
  return im.add(OpKind::EwAdd, {}, {y, im.broadcast_to(bias, im.shape(y))});
}

void import_batchnorm(Importer& im, const onnx::NodeProto& n) {
  im.require_single_output(n);
  if (attr_int(n, "training_mode", 0) != 0) throw NotInVocabulary{"training mode"};
  if (im.opset() < 9 && attr_int(n, "spatial", 1) != 1) throw NotInVocabulary{"spatial = 0"};
  float eps = attr_float(n, "epsilon", 1e-5f);
  if (auto folded = fold_batchnorm_into_conv(im, n, im.in(n, 0), eps)) return im.set_output(n, *folded);
  ExprId x = im.in(n, 0), scale = im.in(n, 1), bias = im.in(n, 2), mean = im.in(n, 3), var = im.in(n, 4);
  if (eps != 0) {
    // Our batchnorm has no epsilon: fold it into the variance (a new weight when var is one).
    const ExprNode& v = im.graph()[var];
    if (v.op == OpKind::Weight) {
      const std::string name = v.name;
      var = im.derived_weight(name + "\x1f" + std::to_string(eps), [&] {
        Tensor<float> t = im.weight_tensor(name);
        for (float& e : t.data) e += eps;
        return im.weight(im.unique_name(name + "+eps"), std::move(t));
      });
    } else {
      ExprId e = im.scalar_weight(n.output(0) + ".epsilon", eps);
      var = im.add(OpKind::EwAdd, {}, {var, im.broadcast_to(e, im.shape(var))});
    }
  }
  im.set_output(n, im.add(OpKind::BatchNorm, {}, {x, scale, bias, mean, var}));
}

void import_softmax(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  size_t rank = im.shape(x).size();
  int64_t axis = normalize_axis(attr_int(n, "axis", im.opset() >= 13 ? -1 : 1), rank, "Softmax", {});
  // Before opset 13 Softmax flattens to 2-d at `axis`: the same as ours only on the last axis.
  if (im.opset() < 13 && axis != static_cast<int64_t>(rank) - 1)
    throw NotInVocabulary{"opset < 13 softmax over more than the last axis"};
  im.set_output(n, im.add(OpKind::Softmax, {axis}, {x}));
}

constexpr ImportForm kImports[] = {
    {"LayerNormalization", 1, kLatestOpset, import_layernorm},
    {"BatchNormalization", 1, kLatestOpset, import_batchnorm},
    {"Softmax", 1, kLatestOpset, import_softmax},
};

// ---- export ------------------------------------------------------------------------------------------

std::string write_batchnorm(Exporter& ex, ExprId id) {
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish(
      "BatchNormalization",
      {ex.operand(id, 0), ex.operand(id, 1), ex.operand(id, 2), ex.operand(id, 3), ex.operand(id, 4)}, id,
      Activation::None, &n);
  add_attr(*n, "epsilon", 0.0f);  // the importer folded epsilon into the variance
  return y;
}

std::string write_softmax(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  onnx::NodeProto* n = nullptr;
  const int64_t rank = static_cast<int64_t>(ex.shape(node.children[0]).size());
  const int64_t given = ops::softmax_axis(node.attrs), axis = given < 0 ? given + rank : given;
  if (ex.opset() >= 13 || axis == rank - 1) {
    std::string y = ex.finish("Softmax", {ex.operand(id, 0)}, id, Activation::None, &n);
    add_attr(*n, "axis", ex.opset() >= 13 ? axis : rank - 1);
    return y;
  }
  // Before opset 13 Softmax works on the last axis only (flattened): swap the axis there and back.
  std::vector<int64_t> perm(rank);
  for (int64_t d = 0; d < rank; ++d) perm[d] = d;
  std::swap(perm[axis], perm[rank - 1]);
  onnx::NodeProto* t = nullptr;
  std::string moved = ex.add_simple("Transpose", {ex.operand(id, 0)}, &t);
  add_attr(*t, "perm", perm);
  std::string soft = ex.add_simple("Softmax", {moved}, &t);
  add_attr(*t, "axis", rank - 1);
  std::string y = ex.finish("Transpose", {soft}, id, Activation::None, &n);
  add_attr(*n, "perm", perm);
  return y;
}

/// `id` under its broadcasts: what a broadcast operand is before numpy broadcasting.
ExprId unbroadcast(const Expr& g, ExprId id) {
  while (g[id].op == OpKind::Broadcast) id = g[id].children[0];
  return id;
}

/// The import's decomposition of LayerNormalization, still whole in the optimized term, written back as
/// the operator (opset 17 on), as the input had it: (x - mean) / sqrt(var + eps) * scale [+ bias], the means
/// over the trailing axes, eps a scalar weight, scale and bias of the normalized axes' shape. Any other form
/// (a rule rewrote part of it) is written node by node.
std::optional<std::string> layer_norm(Exporter& ex, ExprId id) {
  if (ex.opset() < 17) return std::nullopt;
  const Expr& g = ex.graph();
  auto is = [&](ExprId e, OpKind op) { return g[e].op == op; };
  // Of a binary node: its operand that is `op` and the other (either order), or nothing.
  auto split = [&](ExprId e, OpKind op) -> std::optional<std::pair<ExprId, ExprId>> {
    const auto& k = g[e].children;
    if (k.size() != 2) return std::nullopt;
    if (is(k[0], op)) return std::pair{k[0], k[1]};
    if (is(k[1], op)) return std::pair{k[1], k[0]};
    return std::nullopt;
  };
  ExprId scaled = id;
  std::optional<ExprId> bias;
  if (is(id, OpKind::EwAdd)) {
    auto p = split(id, OpKind::EwMul);
    if (!p) return std::nullopt;
    scaled = p->first;
    bias = unbroadcast(g, p->second);
  } else if (!is(id, OpKind::EwMul)) {
    return std::nullopt;
  }
  auto q = split(scaled, OpKind::EwDiv);
  if (!q) return std::nullopt;
  const ExprId normed = q->first, scale = unbroadcast(g, q->second);
  const auto& div = g[normed].children;
  const ExprId d = div[0], sd = unbroadcast(g, div[1]);
  if (!is(d, OpKind::EwSub) || !is(sd, OpKind::Sqrt)) return std::nullopt;
  const ExprId x = g[d].children[0], mean = unbroadcast(g, g[d].children[1]);
  const ExprId var_eps = g[sd].children[0];
  if (!is(var_eps, OpKind::EwAdd) || !is(mean, OpKind::ReduceMean) || g[mean].children[0] != x) return std::nullopt;
  auto r = split(var_eps, OpKind::ReduceMean);
  if (!r) return std::nullopt;
  const ExprId var = r->first, eps = unbroadcast(g, r->second);
  const ExprId sq = g[var].children[0];
  if (!is(sq, OpKind::EwMul) || g[sq].children[0] != d || g[sq].children[1] != d) return std::nullopt;
  if (g[var].attrs != g[mean].attrs || !is(eps, OpKind::Weight)) return std::nullopt;
  const ops::ReduceMeanAttrs rm = ops::reduce_mean_attrs(g[mean].attrs);
  const Shape& xs = ex.shape(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (!rm.keepdims || rm.axes.empty()) return std::nullopt;
  const int64_t axis = rm.axes.front();
  for (size_t k = 0; k < rm.axes.size(); ++k)
    if (rm.axes[k] != axis + static_cast<int64_t>(k) || (k + 1 == rm.axes.size() && rm.axes[k] != rank - 1))
      return std::nullopt;
  const Shape normalized(xs.begin() + axis, xs.end());
  if (ex.shape(scale) != normalized || (bias && ex.shape(*bias) != normalized)) return std::nullopt;
  const Tensor<float>* e = ex.find_weight(g[eps].name);
  if (!e || e->data.size() != 1) return std::nullopt;
  std::vector<std::string> inputs{ex.emit(x), ex.emit(scale)};
  if (bias) inputs.push_back(ex.emit(*bias));
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish("LayerNormalization", inputs, id, Activation::None, &n);
  add_attr(*n, "axis", axis);
  add_attr(*n, "epsilon", e->data[0]);
  return y;
}

constexpr ExportForm kExports[] = {
    {OpKind::BatchNorm, write_batchnorm},
    {OpKind::Softmax, write_softmax},
};

constexpr ExportFusion kFusions[] = {
    {OpKind::EwAdd, layer_norm},
    {OpKind::EwMul, layer_norm},
};

}  // namespace

FamilyForms norm_forms() { return {kImports, kExports, kFusions}; }

}  // namespace teq::onnx_io::detail
