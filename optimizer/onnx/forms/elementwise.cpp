// The element-wise family's ONNX forms (rules/ops/elementwise.h): Add/Sub/Mul/Div, the unary functions, Clip,
// Neg, Reciprocal, Pow, PyTorch's exact GELU and its tanh approximation, Cast between float types,
// Cos, Sin, Where(IsNaN(x), 0, x), Expand and Identity/Dropout in; their ONNX operators, Expand and Identity out.
#include <cfloat>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>

#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/elementwise.h"

namespace teq::onnx_io::detail {

namespace {

// ---- import ------------------------------------------------------------------------------------------

void import_identity(Importer& im, const onnx::NodeProto& n) {
  im.require_single_output(n);
  im.alias(n, im.in(n, 0));
}

void import_dropout(Importer& im, const onnx::NodeProto& n) {
  im.require_single_output(n);
  if (im.has_input(n, 2)) {
    auto training = im.const_input(n, 2);
    if (!training || (!training->empty() && (*training)[0] != 0)) throw NotInVocabulary{"training mode"};
  }
  im.alias(n, im.in(n, 0));
}

template <OpKind Op>
void import_unary(Importer& im, const onnx::NodeProto& n) {
  im.set_output(n, im.add(Op, {}, {im.in(n, 0)}));
}

/// Add, Sub, Mul and Div, numpy-broadcast to the output's shape.
void import_binary(Importer& im, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  ExprId a = im.in(n, 0), b = im.in(n, 1);
  const Shape& out = im.out_shape(n);
  // Canonical form: x*1, 1*x, x/1, x+0, 0+x and x-0 are x (when x already has the output's shape).
  const bool mul_or_div = op == "Mul" || op == "Div", add_or_sub = op == "Add" || op == "Sub";
  for (int k : {1, 0}) {
    if (k == 0 && (op == "Div" || op == "Sub")) continue;
    ExprId keep = k == 1 ? a : b;
    if (im.shape(keep) == out &&
        ((mul_or_div && im.constant_all(n, k, 1)) || (add_or_sub && im.constant_all(n, k, 0)))) {
      im.note_folded(describe(n) + ": " + (mul_or_div ? "a factor of one" : "a term of zero") + " removed");
      return im.alias(n, keep);
    }
  }
  if (op == "Mul" && im.shape(b).empty() && im.shape(a) == out) return im.set_output(n, im.add(OpKind::Smul, {}, {a, b}));
  if (op == "Mul" && im.shape(a).empty() && im.shape(b) == out) return im.set_output(n, im.add(OpKind::Smul, {}, {b, a}));
  OpKind k = op == "Add" ? OpKind::EwAdd : op == "Sub" ? OpKind::EwSub : op == "Mul" ? OpKind::EwMul : OpKind::EwDiv;
  im.set_output(n, im.add(k, {}, {im.broadcast_to(a, out), im.broadcast_to(b, out)}));
}

/// x when `name` is 1 + erf(x / sqrt 2) computed by nodes that nothing else reads.
std::optional<std::string> erf_gelu_input(Importer& im, const std::string& name) {
  const onnx::NodeProto* add1 = im.sole_producer(name, "Add");
  if (!add1 || add1->input_size() != 2) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    if (!im.is_constant(add1->input(1 - k), 1.0)) continue;
    const onnx::NodeProto* erf = im.sole_producer(add1->input(k), "Erf");
    if (!erf) continue;
    if (const onnx::NodeProto* div = im.sole_producer(erf->input(0), "Div");
        div && div->input_size() == 2 && im.is_constant(div->input(1), std::sqrt(2.0)))
      return div->input(0);
    if (const onnx::NodeProto* mul = im.sole_producer(erf->input(0), "Mul"); mul && mul->input_size() == 2)
      for (int j = 0; j < 2; ++j)
        if (im.is_constant(mul->input(1 - j), std::sqrt(0.5))) return mul->input(j);
  }
  return std::nullopt;
}

/// x when `name` is x^3 computed by nodes that nothing else reads: Pow(x, 3), x * (x * x) or (x * x) * x.
bool is_cube_of(Importer& im, const std::string& name, const std::string& x) {
  if (const onnx::NodeProto* pow = im.sole_producer(name, "Pow"); pow && pow->input_size() == 2)
    return pow->input(0) == x && im.is_constant(pow->input(1), 3.0);
  const onnx::NodeProto* mul = im.sole_producer(name, "Mul");
  if (!mul || mul->input_size() != 2) return false;
  for (int k = 0; k < 2; ++k) {
    if (mul->input(k) != x) continue;
    const onnx::NodeProto* square = im.sole_producer(mul->input(1 - k), "Mul");
    if (square && square->input_size() == 2 && square->input(0) == x && square->input(1) == x) return true;
  }
  return false;
}

/// x when `name` is 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) computed by nodes that nothing else reads,
/// the operands of each Add and Mul in any order (the form of PyTorch's gelu(approximate='tanh') in both
/// exporters and of GPT-2's gelu_new).
std::optional<std::string> tanh_gelu_input(Importer& im, const std::string& name) {
  const onnx::NodeProto* add1 = im.sole_producer(name, "Add");
  if (!add1 || add1->input_size() != 2) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    if (!im.is_constant(add1->input(1 - k), 1.0)) continue;
    const onnx::NodeProto* tanh = im.sole_producer(add1->input(k), "Tanh");
    if (!tanh) continue;
    const onnx::NodeProto* scaled = im.sole_producer(tanh->input(0), "Mul");
    if (!scaled || scaled->input_size() != 2) continue;
    for (int j = 0; j < 2; ++j) {
      if (!im.is_constant(scaled->input(1 - j), std::sqrt(2.0 / std::numbers::pi))) continue;
      const onnx::NodeProto* sum = im.sole_producer(scaled->input(j), "Add");
      if (!sum || sum->input_size() != 2) continue;
      for (int i = 0; i < 2; ++i) {
        const std::string& x = sum->input(i);
        const onnx::NodeProto* term = im.sole_producer(sum->input(1 - i), "Mul");
        if (!term || term->input_size() != 2) continue;
        for (int m = 0; m < 2; ++m)
          if (im.is_constant(term->input(1 - m), 0.044715) && is_cube_of(im, term->input(m), x)) return x;
      }
    }
  }
  return std::nullopt;
}

/// A Mul that ends a GELU, x * 0.5 * one_plus with the products grouped either way and the operands of each
/// Mul in any order, where `input_of(one_plus)` finds x (1 + erf(x / sqrt 2) for the exact GELU, 1 + tanh(...)
/// for the tanh approximation) and no intermediate value has another reader: its output becomes (`gelu` x),
/// the vocabulary's operator of that function. False when the node is not such a Mul.
bool import_gelu_product(Importer& im, const onnx::NodeProto& n, OpKind gelu,
                         std::optional<std::string> (*input_of)(Importer&, const std::string&)) {
  if (n.input_size() != 2) return false;
  // The three factors of the two nested products.
  for (int k = 0; k < 2; ++k) {
    const onnx::NodeProto* inner = im.sole_producer(n.input(k), "Mul");
    if (!inner || inner->input_size() != 2) continue;
    const std::string factors[3] = {n.input(1 - k), inner->input(0), inner->input(1)};
    for (int half = 0; half < 3; ++half) {
      if (!im.is_constant(factors[half], 0.5)) continue;
      for (int x = 0; x < 3; ++x) {
        if (x == half) continue;
        const std::string& one_plus = factors[3 - half - x];
        auto y = input_of(im, one_plus);
        if (!y || *y != factors[x]) continue;
        auto v = im.value(*y);
        if (!v || im.elem_type(*y) != im.node_type()) return false;
        im.set_output(n, im.add(gelu, {}, {*v}));
        return true;
      }
    }
  }
  return false;
}

void import_mul(Importer& im, const onnx::NodeProto& n) {
  // PyTorch's exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), is the vocabulary's gelu; its tanh approximation
  // x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) the vocabulary's gelu_tanh.
  if (import_gelu_product(im, n, OpKind::Gelu, erf_gelu_input)) return;
  if (import_gelu_product(im, n, OpKind::GeluTanh, tanh_gelu_input)) return;
  import_binary(im, n);
}

/// A float32 value as num / 2^exp with the smallest exp in 0..62 (clip's bound attributes); nullopt when
/// it is not finite, not a float32 value, or needs a larger numerator or exponent.
std::optional<std::array<int64_t, 2>> dyadic(double v) {
  if (!std::isfinite(v) || static_cast<double>(static_cast<float>(v)) != v) return std::nullopt;
  int64_t exp = 0;
  for (; v != std::floor(v); v *= 2)  // exact: doubling a double only changes its exponent
    if (++exp > 62) return std::nullopt;
  if (std::fabs(v) >= 0x1p62) return std::nullopt;
  return std::array<int64_t, 2>{static_cast<int64_t>(v), exp};
}

/// Clip with constant bounds (infinite or +-FLT_MAX: no bound): relu for [0, none) (the canonical form),
/// the node's input for no bounds at all, else the vocabulary's clip.
void import_clip(Importer& im, const onnx::NodeProto& n, double lo, double hi) {
  ExprId x = im.in(n, 0);
  if (std::isnan(lo) || std::isnan(hi)) throw NotInVocabulary{"NaN clip bound"};
  const bool has_lo = lo > -FLT_MAX, has_hi = hi < FLT_MAX;
  if (lo == 0 && !has_hi) return im.set_output(n, im.add(OpKind::Relu, {}, {x}));
  if (!has_lo && !has_hi) return im.set_output(n, x);
  auto bound = [](double v) {
    auto d = dyadic(v);
    if (!d) throw NotInVocabulary{"clip bound " + std::to_string(v) + " is not num / 2^k with k <= 62"};
    return ops::ClipBound{(*d)[0], (*d)[1]};
  };
  ops::ClipAttrs c;
  if (has_lo) c.lo = bound(lo);
  if (has_hi) c.hi = bound(hi);
  if (has_lo && has_hi && lo > hi) throw NotInVocabulary{"clip with min above max"};
  im.set_output(n, im.add(OpKind::Clip, ops::clip_attr_list(c), {x}));
}

/// Before opset 11 Clip's bounds are attributes.
void import_clip_attributes(Importer& im, const onnx::NodeProto& n) {
  import_clip(im, n, attr_float(n, "min", -FLT_MAX), attr_float(n, "max", FLT_MAX));
}

/// From opset 11 on they are optional inputs, which must be constant.
void import_clip_inputs(Importer& im, const onnx::NodeProto& n) {
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  for (int k : {1, 2}) {
    if (!im.has_input(n, k)) continue;
    auto v = im.const_input(n, k);
    if (!v || v->size() != 1) throw NotInVocabulary{"non-constant clip bounds"};
    (k == 1 ? lo : hi) = (*v)[0];
  }
  import_clip(im, n, lo, hi);
}

/// Pow with a constant scalar exponent: 2 is x*x (the canonical form), 0.5 sqrt, 1 the base itself.
void import_pow(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  auto e = im.const_input(n, 1);
  if (!e || e->size() != 1) throw NotInVocabulary{"exponent is not a constant scalar"};
  const double p = (*e)[0];
  if (p == 2) return im.set_output(n, im.add(OpKind::EwMul, {}, {x, x}));
  if (p == 0.5) return im.set_output(n, im.add(OpKind::Sqrt, {}, {x}));
  if (p == 1) return im.set_output(n, x);
  std::ostringstream what;
  what << "exponent " << p << " (the vocabulary has 2 as ewmul x x, 0.5 as sqrt and 1)";
  throw NotInVocabulary{what.str()};
}

/// Cast (from opset 6, where `to` became an integer) and CastLike (15) from one float type to another: the
/// vocabulary's cast, or the input itself when the types are equal. A cast to or from an integer or boolean
/// type stays opaque (import_vocabulary refuses an output that is not a float tensor, in_any_float an input).
void import_cast(Importer& im, const onnx::NodeProto& n) {
  const ExprId x = im.in_any_float(n, 0);
  const int32_t to = im.node_type();
  if (im.elem_type(n.input(0)) == to) return im.set_output(n, x);
  im.set_output(n, im.add(OpKind::Cast, {to}, {x}));
}

/// Where(IsNaN(x), 0, x), whose IsNaN has no other reader, is the vocabulary's nan_to_zero: what PyTorch's
/// exporters write after the softmax of scaled_dot_product_attention with a mask. The IsNaN, an opaque node
/// of a boolean result, is left without a reader and dropped. Any other Where stays opaque.
void import_where(Importer& im, const onnx::NodeProto& n) {
  const onnx::NodeProto* isnan = n.input_size() == 3 ? im.sole_producer(n.input(0), "IsNaN") : nullptr;
  if (!isnan || isnan->input_size() != 1 || isnan->input(0) != n.input(2) || !im.constant_all(n, 1, 0.0))
    throw NotInVocabulary{"only Where(IsNaN(x), 0, x) is in the vocabulary (nan_to_zero)"};
  im.set_output(n, im.add(OpKind::NanToZero, {}, {im.in(n, 2)}));
}

/// Expand of a float tensor (opset 8 on) is the vocabulary's broadcast to the shape ONNX infers for it: a
/// constant target, or one that follows the sizes where it equals the input's extent
/// (Importer::expand_follows_sizes); the input itself when nothing is expanded.
void import_expand(Importer& im, const onnx::NodeProto& n) {
  const ExprId x = im.in(n, 0);
  im.set_output(n, im.broadcast_to(x, im.out_shape(n)));
}

constexpr ImportForm kImports[] = {
    {"Identity", 1, kLatestOpset, import_identity},
    {"Dropout", 1, kLatestOpset, import_dropout},
    {"Relu", 1, kLatestOpset, import_unary<OpKind::Relu>},
    {"Sigmoid", 1, kLatestOpset, import_unary<OpKind::Sigmoid>},
    {"Tanh", 1, kLatestOpset, import_unary<OpKind::Tanh>},
    {"Sqrt", 1, kLatestOpset, import_unary<OpKind::Sqrt>},
    {"Neg", 1, kLatestOpset, import_unary<OpKind::Neg>},
    {"Reciprocal", 1, kLatestOpset, import_unary<OpKind::Reciprocal>},
    {"Erf", 1, kLatestOpset, import_unary<OpKind::Erf>},
    {"Cos", 7, kLatestOpset, import_unary<OpKind::Cos>},
    {"Sin", 7, kLatestOpset, import_unary<OpKind::Sin>},
    {"Clip", 1, 10, import_clip_attributes},
    {"Clip", 11, kLatestOpset, import_clip_inputs},
    {"Add", 1, kLatestOpset, import_binary},
    {"Sub", 1, kLatestOpset, import_binary},
    {"Mul", 1, kLatestOpset, import_mul},
    {"Div", 1, kLatestOpset, import_binary},
    {"Pow", 1, kLatestOpset, import_pow},
    {"Cast", 6, kLatestOpset, import_cast},
    {"CastLike", 15, kLatestOpset, import_cast},
    {"Where", 9, kLatestOpset, import_where},
    {"Expand", 8, kLatestOpset, import_expand},
};

// ---- export ------------------------------------------------------------------------------------------

/// How an operand of a binary element-wise node is written: at its term's shape, as the operand of its
/// broadcast (ONNX broadcasts it again), or as a constant cut to the axes along which it varies.
enum class Lean { Full, Unbroadcast, Compact };
struct OperandForm {
  Lean lean = Lean::Full;
  Shape shape;  // the shape it has in the file
};

/// numpy's broadcast of two shapes (both are forms of one shape here, so their extents agree or are 1).
Shape broadcast_of(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t k = 1; k <= out.size(); ++k) {
    const int64_t da = k <= a.size() ? a[a.size() - k] : 1, db = k <= b.size() ? b[b.size() - k] : 1;
    out[out.size() - k] = da == 1 ? db : da;
  }
  return out;
}

/// Operand `c` of a binary element-wise node whose other operand is `other`: a broadcast is left to
/// ONNX's own numpy broadcasting (when both operands are broadcasts, binary_operands checks that the two
/// together still give the full shape). An Expand written instead holds the shape of one size: a
/// `positions[1, seq, 1] * inverse_frequencies[6]` in a rotary embedding would be fixed to one sequence length.
/// So is a folded constant that repeats along some axes (a bias the optimizer moved through a matmul,
/// `broadcast(beta) @ W + broadcast(b)`): it is written at the smallest shape that broadcasts back to it.
/// Written at full shape it stops onnxruntime's MatMul+Add fusion (which wants a bias of the last axis) and
/// fixes the batch dimension into the file. Whether two lean forms together still give the full shape is
/// binary_operands' business.
OperandForm operand_form(Exporter& ex, ExprId c, ExprId other) {
  const Expr& g = ex.graph();
  if (g[c].op == OpKind::Broadcast) return {Lean::Unbroadcast, ex.shape(g[c].children[0])};
  if (ex.materialized(c) && !ex.materialized(other) && ex.shape(other) == ex.shape(c))
    if (const std::optional<Tensor<float>>& small = ex.compacted(c)) return {Lean::Compact, small->shape};
  return {Lean::Full, ex.shape(c)};
}

std::string write_operand(Exporter& ex, ExprId c, Lean lean) {
  switch (lean) {
    case Lean::Unbroadcast: return ex.emit(ex.graph()[c].children[0]);
    case Lean::Compact: return ex.compact_constant(c);
    case Lean::Full: break;
  }
  return ex.emit(c);
}

/// The operands of the binary element-wise node `id`, each in its lean form (operand_form) as long as
/// ONNX's broadcasting still gives the node the shape of its term; else the first is written at its full
/// shape. Each lean form is chosen against the other operand's term, not against what is written for it, so
/// two lean operands can shrink the result: a constant compacted to 0-d divided by a broadcast 0-d input is
/// a 0-d Div where the term has rank 3, and every node downstream has the wrong rank (a Concat axis out of
/// range, issue 42). Checking the pair keeps the invariant the exporter relies on: each node's output has
/// exactly its term's shape.
std::pair<std::string, std::string> binary_operands(Exporter& ex, ExprId id) {
  const std::vector<ExprId>& kids = ex.graph()[id].children;
  OperandForm x = operand_form(ex, kids[0], kids[1]);
  const OperandForm y = operand_form(ex, kids[1], kids[0]);
  if (broadcast_of(x.shape, y.shape) != ex.shape(id)) x = {Lean::Full, ex.shape(kids[0])};
  std::string xn = write_operand(ex, kids[0], x.lean);  // in this order: the node numbering stays as it was
  return {xn, write_operand(ex, kids[1], y.lean)};
}

std::string write_binary(Exporter& ex, ExprId id) {
  static const std::map<OpKind, std::string> kOps{
      {OpKind::EwAdd, "Add"}, {OpKind::EwSub, "Sub"}, {OpKind::EwMul, "Mul"}, {OpKind::EwDiv, "Div"}};
  const ExprNode& node = ex.graph()[id];
  const auto [x, y] = binary_operands(ex, id);
  // x * x as Pow(x, 2), the form onnxruntime's LayerNormalization fusion matches (the import reads it back
  // as x * x): written as Mul, an exported layer norm stays nine kernels at ORT_ENABLE_ALL.
  if (node.op == OpKind::EwMul && node.children[0] == node.children[1])
    return ex.finish("Pow", {x, ex.float_scalar(2.0f)}, id);
  return ex.finish(kOps.at(node.op), {x, y}, id);
}

/// x * reciprocal(y) as Div(x, y): one kernel instead of two, and the form onnxruntime's
/// SimplifiedLayerNormFusion matches in an RMS norm. PyTorch writes rsqrt as Sqrt then Reciprocal, and
/// x * rsqrt(mean(x^2) + eps) * w stays seven kernels at ORT_ENABLE_ALL; written with Div it is one
/// SimplifiedLayerNormalization (LLaMA's and T5's norms). x / y rounds once where x * (1 / y) rounds twice: the
/// two differ by at most about an ulp of the result. A reciprocal known at export (of a weight) is folded and
/// stays a Mul by the constant.
std::optional<std::string> divide_by_the_reciprocal(Exporter& ex, ExprId id) {
  const Expr& g = ex.graph();
  const std::vector<ExprId>& kids = g[id].children;
  for (const size_t side : {size_t{1}, size_t{0}}) {
    const ExprId c = kids[side], other = kids[1 - side];
    const ExprId r = g[c].op == OpKind::Broadcast ? g[c].children[0] : c;
    if (g[r].op != OpKind::Reciprocal || ex.materialized(r)) continue;
    const ExprId divisor = g[r].children[0];
    OperandForm x = operand_form(ex, other, c);
    if (broadcast_of(x.shape, ex.shape(divisor)) != ex.shape(id)) x = {Lean::Full, ex.shape(other)};
    if (broadcast_of(x.shape, ex.shape(divisor)) != ex.shape(id)) continue;
    std::string xn = write_operand(ex, other, x.lean);
    return ex.finish("Div", {xn, ex.emit(divisor)}, id);
  }
  return std::nullopt;
}

std::string write_gelu(Exporter& ex, ExprId id) {
  // Gelu itself (its default, approximate='none', is the exact erf form) from opset 20; before it
  // 0.5 * x * (1 + erf(x / sqrt 2)).
  if (ex.opset() >= 20) return ex.finish("Gelu", {ex.operand(id, 0)}, id);
  if (ex.opset() < 9) throw OnnxError("export: gelu needs Erf, which opset " + std::to_string(ex.opset()) + " lacks");
  std::string x = ex.operand(id, 0);
  // x / sqrt 2 (not x * 0.7071): the form onnxruntime's Gelu fusion matches, as PyTorch writes it.
  std::string e = ex.add_simple("Erf", {ex.add_simple("Div", {x, ex.float_scalar(1.41421356237309505f)})});
  std::string h = ex.add_simple("Mul", {x, ex.add_simple("Add", {e, ex.float_scalar(1.0f)})});
  return ex.finish("Mul", {h, ex.float_scalar(0.5f)}, id);
}

std::string write_gelu_tanh(Exporter& ex, ExprId id) {
  // At every opset the decomposition as PyTorch's dynamo exporter writes it, x * 0.5 * (1 + tanh(sqrt(2/pi) *
  // (x + 0.044715 * Pow(x, 3)))): the form onnxruntime's FastGeluFusion matches (one FastGelu kernel), with
  // its float32 constants.
  std::string x = ex.operand(id, 0);
  std::string cube = ex.add_simple("Pow", {x, ex.float_scalar(3.0f)});
  std::string sum = ex.add_simple("Add", {x, ex.add_simple("Mul", {cube, ex.float_scalar(0.044715f)})});
  std::string t = ex.add_simple("Tanh", {ex.add_simple("Mul", {sum, ex.float_scalar(0.7978845608028654f)})});
  std::string half_x = ex.add_simple("Mul", {x, ex.float_scalar(0.5f)});
  return ex.finish("Mul", {half_x, ex.add_simple("Add", {t, ex.float_scalar(1.0f)})}, id);
}

std::string write_cast(Exporter& ex, ExprId id) {
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish("Cast", {ex.operand(id, 0)}, id, Activation::None, &n);
  add_attr(*n, "to", static_cast<int64_t>(ops::cast_target(ex.graph()[id].attrs)));
  return y;
}

/// Cos and Sin exist from opset 7 on.
std::string write_cos_or_sin(Exporter& ex, ExprId id) {
  const char* op = ex.graph()[id].op == OpKind::Cos ? "Cos" : "Sin";
  if (ex.opset() < 7) throw OnnxError(std::string("export: ") + op + " needs opset 7, not " + std::to_string(ex.opset()));
  return ex.finish(op, {ex.operand(id, 0)}, id);
}

std::string write_nan_to_zero(Exporter& ex, ExprId id) {
  if (ex.opset() < 9)
    throw OnnxError("export: nan_to_zero needs IsNaN and Where, which opset " + std::to_string(ex.opset()) + " lacks");
  const std::string x = ex.operand(id, 0);
  return ex.finish("Where", {ex.add_simple("IsNaN", {x}), ex.float_scalar(0.0f), x}, id);
}

std::string write_erf(Exporter& ex, ExprId id) {
  if (ex.opset() < 9) throw OnnxError("export: erf needs Erf, which opset " + std::to_string(ex.opset()) + " lacks");
  return ex.finish("Erf", {ex.operand(id, 0)}, id);
}

std::string write_clip(Exporter& ex, ExprId id) {
  // Bounds num / 2^exp (exp -1: none) as float32, exact for every bound the importer writes.
  const ops::ClipAttrs c = ops::clip_attrs(ex.graph()[id].attrs);
  auto value = [](const ops::ClipBound& b) {
    return static_cast<float>(std::ldexp(static_cast<double>(b.num), -static_cast<int>(b.exp)));
  };
  const bool has_lo = c.lo.present(), has_hi = c.hi.present();
  if (ex.opset() >= 11) {
    std::vector<std::string> inputs{ex.operand(id, 0), has_lo ? ex.float_scalar(value(c.lo)) : std::string()};
    if (has_hi) inputs.push_back(ex.float_scalar(value(c.hi)));
    return ex.finish("Clip", inputs, id);
  }
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish("Clip", {ex.operand(id, 0)}, id, Activation::None, &n);
  if (has_lo) add_attr(*n, "min", value(c.lo));
  if (has_hi) add_attr(*n, "max", value(c.hi));
  return y;
}

/// Expand to the broadcast's shape with 1 wherever the operand already has the output's extent: the same
/// result at the bound sizes, and at any other size an operand extent that follows a symbolic dimension (a
/// batch, a sequence) is kept rather than fixed to the bound value.
std::string write_broadcast(Exporter& ex, ExprId id) {
  if (ex.opset() < 8) throw OnnxError("export: broadcast needs Expand, which opset " + std::to_string(ex.opset()) + " lacks");
  const ExprId x = ex.graph()[id].children[0];
  const Shape& in = ex.shape(x);
  std::vector<int64_t> target = ex.graph()[id].attrs;
  for (size_t k = 0; k < in.size() && k < target.size(); ++k) {
    int64_t& t = target[target.size() - in.size() + k];
    if (t == in[k]) t = 1;
  }
  return ex.finish("Expand", {ex.operand(id, 0), ex.int_constant(target)}, id);
}

constexpr ExportForm kExports[] = {
    {OpKind::EwAdd, write_binary},
    {OpKind::EwSub, write_binary},
    {OpKind::EwMul, write_binary},
    {OpKind::EwDiv, write_binary},
    {OpKind::Smul, [](Exporter& ex, ExprId id) { return ex.finish("Mul", {ex.operand(id, 0), ex.operand(id, 1)}, id); }},
    {OpKind::Relu, [](Exporter& ex, ExprId id) { return ex.finish("Relu", {ex.operand(id, 0)}, id); }},
    {OpKind::Tanh, [](Exporter& ex, ExprId id) { return ex.finish("Tanh", {ex.operand(id, 0)}, id); }},
    {OpKind::Sigmoid, [](Exporter& ex, ExprId id) { return ex.finish("Sigmoid", {ex.operand(id, 0)}, id); }},
    {OpKind::Sqrt, [](Exporter& ex, ExprId id) { return ex.finish("Sqrt", {ex.operand(id, 0)}, id); }},
    {OpKind::Neg, [](Exporter& ex, ExprId id) { return ex.finish("Neg", {ex.operand(id, 0)}, id); }},
    {OpKind::Reciprocal, [](Exporter& ex, ExprId id) { return ex.finish("Reciprocal", {ex.operand(id, 0)}, id); }},
    {OpKind::Cos, write_cos_or_sin},
    {OpKind::Sin, write_cos_or_sin},
    {OpKind::Gelu, write_gelu},
    {OpKind::GeluTanh, write_gelu_tanh},
    {OpKind::NanToZero, write_nan_to_zero},
    {OpKind::Cast, write_cast},
    {OpKind::Erf, write_erf},
    {OpKind::Clip, write_clip},
    {OpKind::Broadcast, write_broadcast},
    {OpKind::Noop, [](Exporter& ex, ExprId id) { return ex.finish("Identity", {ex.operand(id, 0)}, id); }},
};

constexpr ExportFusion kFusions[] = {
    {OpKind::EwMul, divide_by_the_reciprocal},
};

}  // namespace

FamilyForms elementwise_forms() { return {kImports, kExports, kFusions}; }

}  // namespace teq::onnx_io::detail
