// The element-wise operators' shape rules (rules/ops/elementwise.h), written once over a dimension policy
// (rules/dims.h).
#pragma once

#include <string>
#include <string_view>

#include "rules/ops/detail/common_shape.h"
#include "rules/ops/elementwise.h"

namespace teq::ops {

/// Equal shapes.
template <DimPolicy P>
ShapeOf<P> shape_binary(P& p, std::string_view op, ShapesOf<P> in) {
  TEQ_REQUIRE(p, same_shape(p, in[0], in[1]), op, "operands must have equal shapes");
  return in[0];
}

/// (x, s): s must be 0-d.
template <DimPolicy P>
ShapeOf<P> shape_smul(P& p, ShapesOf<P> in) {
  TEQ_REQUIRE(p, in[1].empty(), "smul", "second operand must be a 0-d scalar");
  return in[0];
}

/// Validates the bounds (attributes only); the result has x's shape.
template <DimPolicy P>
ShapeOf<P> shape_clip(P& p, AttrSpan attrs, ShapesOf<P> in) {
  bool present[2] = {false, false};
  for (int b = 0; b < 2; ++b) {
    const int64_t num = attrs[2 * b], exp = attrs[2 * b + 1];
    const char* which = b == 0 ? "lower" : "upper";
    TEQ_REQUIRE(p, exp >= kNoBound && exp <= 62, "clip",
                which + std::string(" bound exponent must be -1 (no bound) or 0..62, got ") + std::to_string(exp));
    TEQ_REQUIRE(p, exp != kNoBound || num == 0, "clip",
                which + std::string(" bound is absent (exponent -1) but its numerator is not 0"));
    TEQ_REQUIRE(p, exp <= 0 || num % 2 != 0, "clip",
                which + std::string(" bound ") + std::to_string(num) + "/2^" + std::to_string(exp) +
                    " is not in lowest terms (an even numerator needs a smaller exponent)");
    present[b] = exp != kNoBound;
  }
  TEQ_REQUIRE(p, present[0] || present[1], "clip", "needs at least one bound");
  if (present[0] && present[1]) {
    // lo_num / 2^lo_exp <= hi_num / 2^hi_exp, cross-multiplied exactly (|num| < 2^63, exp <= 62).
    const __int128 lo = static_cast<__int128>(attrs[0]) << attrs[3], hi = static_cast<__int128>(attrs[2]) << attrs[1];
    TEQ_REQUIRE(p, lo <= hi, "clip", "lower bound above the upper bound");
  }
  return in[0];
}

/// in[0] broadcast numpy-style to the shape the attributes spell.
template <DimPolicy P>
ShapeOf<P> shape_broadcast(P& p, AttrSpan target, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  TEQ_REQUIRE(p, x.size() <= target.size(), "broadcast", "target " + to_string(target) + " has lower rank");
  const size_t lead = target.size() - x.size();
  for (size_t d = 0; d < x.size(); ++d)
    TEQ_REQUIRE(p, x[d] == p.k(1) || x[d] == p.k(target[d + lead]), "broadcast",
                "cannot broadcast to " + to_string(target));
  for (int64_t d : target) TEQ_REQUIRE(p, d >= 1, "broadcast", "target dims must be >= 1");
  return attr_shape(p, target);
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

struct BinaryShape {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo& info, AttrSpan, ShapesOf<P> in) {
    return shape_binary(p, info.name, in);
  }
};

template <> struct ShapeRule<OpKind::EwAdd> : BinaryShape {};
template <> struct ShapeRule<OpKind::EwSub> : BinaryShape {};
template <> struct ShapeRule<OpKind::EwMul> : BinaryShape {};
template <> struct ShapeRule<OpKind::EwDiv> : BinaryShape {};
template <> struct ShapeRule<OpKind::Relu> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Tanh> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Sigmoid> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Gelu> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Sqrt> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Erf> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::GeluTanh> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Neg> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Reciprocal> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::NanToZero> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Cos> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Sin> : FirstOperandShape {};
template <> struct ShapeRule<OpKind::Noop> : FirstOperandShape {};
template <>
struct ShapeRule<OpKind::Smul> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan, ShapesOf<P> in) {
    return shape_smul(p, in);
  }
};
template <>
struct ShapeRule<OpKind::Clip> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_clip(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Cast> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    TEQ_REQUIRE(p, is_float_term_type(cast_target(attrs)), "cast",
                "target type must be 1 (float32), 10 (float16) or 16 (bfloat16), got " +
                    std::to_string(cast_target(attrs)));
    return in[0];
  }
};
template <>
struct ShapeRule<OpKind::Broadcast> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_broadcast(p, attrs, in);
  }
};

}  // namespace teq::ops
