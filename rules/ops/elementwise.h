// Element-wise operators: ewadd/ewsub/ewmul/ewdiv (equal shapes), smul (tensor times 0-d scalar),
// relu/tanh/sigmoid/gelu/gelu_tanh/sqrt/erf, neg/reciprocal, nan_to_zero, cos/sin, clip (constant bounds), cast (to another float
// type), broadcast (numpy rules, to an explicit shape) and noop.
//   (cast to x)  x stored in the float type `to` (rules/float_types.h: 1 float32, 10 float16, 16 bfloat16):
//                its value rounded to that type. The one operator whose result's element type is not its
//                operand's (result_elem_type); the e-graph never merges classes of different types.
//   (clip lo_num lo_exp hi_num hi_exp x)  min(max(x, lo), hi) with lo = lo_num / 2^lo_exp and
//                                          hi = hi_num / 2^hi_exp (every float32 bound is such a dyadic
//                                          rational); exp in 0..62, written canonically (an odd num when
//                                          exp > 0); exp = -1 with num = 0 means "no bound"; at least one
//                                          bound, lo <= hi.
#pragma once

#include <algorithm>
#include <optional>

#include "rules/float_types.h"
#include "rules/ops/common.h"

namespace teq::ops {

enum class BinaryOp { Add, Sub, Mul, Div };

// The shape rules: rules/ops/detail/elementwise_shape.h.

/// The exponent attribute of a clip bound that is absent.
inline constexpr int64_t kNoBound = -1;

/// One clip bound, num / 2^exp, or none (exp == kNoBound).
struct ClipBound {
  int64_t num = 0, exp = kNoBound;
  bool present() const { return exp != kNoBound; }
};
/// clip's attributes by name, and back.
struct ClipAttrs {
  ClipBound lo, hi;
};
/// cast's attribute: the element type it rounds to (rules/float_types.h's numbering).
inline int32_t cast_target(AttrSpan a) { return static_cast<int32_t>(a[0]); }

/// The element type of an operator's result given its first operand's (0: unknown): a cast's target, any
/// other operator's operand type (the vocabulary is type-generic and rules never change a type).
inline int32_t result_elem_type(OpKind op, AttrSpan attrs, int32_t operand_type) {
  return op == OpKind::Cast && !attrs.empty() ? cast_target(attrs) : operand_type;
}

/// The rounding function of a cast to `to`.
inline UnaryFn cast_function(int32_t to) {
  return to == kFloat16Type ? UnaryFn::ToFloat16 : to == kBFloat16Type ? UnaryFn::ToBFloat16 : UnaryFn::ToFloat32;
}

inline ClipAttrs clip_attrs(AttrSpan a) { return {{a[0], a[1]}, {a[2], a[3]}}; }
inline std::vector<int64_t> clip_attr_list(const ClipAttrs& c) { return {c.lo.num, c.lo.exp, c.hi.num, c.hi.exp}; }

template <class S>
Tensor<S> eval_binary(BinaryOp kind, Args<S> in) {
  const Tensor<S>& a = *in[0];
  const Tensor<S>& b = *in[1];
  std::vector<S> out;
  out.reserve(a.data.size());
  for (size_t i = 0; i < a.data.size(); ++i) {
    switch (kind) {
      case BinaryOp::Add: out.push_back(a.data[i] + b.data[i]); break;
      case BinaryOp::Sub: out.push_back(a.data[i] - b.data[i]); break;
      case BinaryOp::Mul: out.push_back(a.data[i] * b.data[i]); break;
      case BinaryOp::Div: out.push_back(a.data[i] / b.data[i]); break;
    }
  }
  return Tensor<S>(a.shape, std::move(out));
}

template <class S>
Tensor<S> eval_smul(Args<S> in) {
  const S& s = in[1]->data[0];
  std::vector<S> out;
  out.reserve(in[0]->data.size());
  for (const S& x : in[0]->data) out.push_back(x * s);
  return Tensor<S>(in[0]->shape, std::move(out));
}

/// relu/tanh/sigmoid/gelu, expressed as "apply this activation or function to every element".
template <class S, class F>
Tensor<S> eval_pointwise(Args<S> in, F&& f) {
  std::vector<S> out;
  out.reserve(in[0]->data.size());
  for (const S& x : in[0]->data) out.push_back(f(x));
  return Tensor<S>(in[0]->shape, std::move(out));
}

/// clip: max with the lower bound, then min(y, hi) = -max(-y, -hi) with the upper one.
template <class S>
Tensor<S> eval_clip(const Arith<S>& ar, AttrSpan attrs, Args<S> in) {
  auto bound = [&](int64_t num, int64_t exp) -> std::optional<S> {
    if (exp == kNoBound) return std::nullopt;
    return ar.constant(num, int64_t{1} << exp);
  };
  const std::optional<S> lo = bound(attrs[0], attrs[1]), hi = bound(attrs[2], attrs[3]);
  return eval_pointwise(in, [&](const S& x) {
    S y = lo ? ar.max(x, *lo) : x;
    return hi ? -ar.max(-y, -*hi) : y;
  });
}

template <class S>
Tensor<S> eval_broadcast(Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  size_t lead = out_shape.size() - x.rank();
  std::vector<int64_t> in_strides = strides_of(x.shape), idx;
  std::vector<S> out;
  out.reserve(num_elements(out_shape));
  for (int64_t flat = 0; flat < num_elements(out_shape); ++flat) {
    unravel(flat, out_shape, idx);
    int64_t src = 0;
    for (size_t d = 0; d < x.rank(); ++d) src += (x.shape[d] == 1 ? 0 : idx[d + lead]) * in_strides[d];
    out.push_back(x.data[src]);
  }
  return Tensor<S>(out_shape, std::move(out));
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

/// The meaning of an element-wise operator derives from this: each output element is a function of the
/// elements at its index in the operands, which all have the output's shape, except smul's 0-d scalar
/// (is_elementwise, rules/semantics.h, is read off it). One operation per element.
struct ElementWise : OnePerElement {};

template <BinaryOp B>
struct BinarySemantics : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S> in, const Shape&) {
    return eval_binary(B, in);
  }
};
template <UnaryFn F>
struct UnarySemantics : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S> in, const Shape&) {
    return eval_pointwise(in, [&](const S& x) { return ar.unary(F, x); });
  }
};

template <> struct Semantics<OpKind::EwAdd> : BinarySemantics<BinaryOp::Add> {};
template <> struct Semantics<OpKind::EwSub> : BinarySemantics<BinaryOp::Sub> {};
template <> struct Semantics<OpKind::EwMul> : BinarySemantics<BinaryOp::Mul> {};
template <> struct Semantics<OpKind::EwDiv> : BinarySemantics<BinaryOp::Div> {};
template <> struct Semantics<OpKind::Tanh> : UnarySemantics<UnaryFn::Tanh> {};
template <> struct Semantics<OpKind::Sigmoid> : UnarySemantics<UnaryFn::Sigmoid> {};
template <> struct Semantics<OpKind::Gelu> : UnarySemantics<UnaryFn::Gelu> {};
template <> struct Semantics<OpKind::Sqrt> : UnarySemantics<UnaryFn::Sqrt> {};
template <> struct Semantics<OpKind::Erf> : UnarySemantics<UnaryFn::Erf> {};
template <> struct Semantics<OpKind::GeluTanh> : UnarySemantics<UnaryFn::GeluTanh> {};
/// x with 0 where x is NaN: ONNX Where(IsNaN(x), 0, x), what PyTorch's exporters write after the softmax of
/// a masked attention (a row masked whole is NaN there).
template <> struct Semantics<OpKind::NanToZero> : UnarySemantics<UnaryFn::NanToZero> {};
/// cos x and sin x: the rotary position embeddings of LLaMA-family decoders (their angles, position times
/// inverse frequency, go through both). Uninterpreted in Z3.
template <> struct Semantics<OpKind::Cos> : UnarySemantics<UnaryFn::Cos> {};
template <> struct Semantics<OpKind::Sin> : UnarySemantics<UnaryFn::Sin> {};
/// -x and 1 / x: real arithmetic in every instantiation (Z3 reasons with them; they are not uninterpreted).
template <> struct Semantics<OpKind::Neg> : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S> in, const Shape&) {
    return eval_pointwise(in, [](const S& x) { return -x; });
  }
};
template <> struct Semantics<OpKind::Reciprocal> : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S> in, const Shape&) {
    const S one = ar.constant(1);
    return eval_pointwise(in, [&](const S& x) { return one / x; });
  }
};
template <>
struct Semantics<OpKind::Cast> : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape&) {
    const UnaryFn fn = cast_function(cast_target(attrs));
    return eval_pointwise(in, [&](const S& x) { return ar.unary(fn, x); });
  }
};
template <>
struct Semantics<OpKind::Smul> : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S> in, const Shape&) {
    return eval_smul(in);
  }
};
template <>
struct Semantics<OpKind::Relu> : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S> in, const Shape&) {
    return eval_pointwise(in, [&](const S& x) { return relu(ar, x); });
  }
};
template <>
struct Semantics<OpKind::Clip> : ElementWise {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape&) {
    return eval_clip(ar, attrs, in);
  }
};
template <>
struct Semantics<OpKind::Broadcast> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S> in, const Shape& out_shape) {
    return eval_broadcast(in, out_shape);
  }
};
/// noop joins several outputs; its value is its first operand's.
template <>
struct Semantics<OpKind::Noop> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S> in, const Shape&) {
    return *in[0];
  }
  /// Only the first operand is its value.
  static WorkKey work_key(AttrSpan attrs, Shapes in) {
    return {OpKind::Noop, {attrs.begin(), attrs.end()}, {in.begin(), in.begin() + std::min<size_t>(in.size(), 1)}};
  }
};

}  // namespace teq::ops
