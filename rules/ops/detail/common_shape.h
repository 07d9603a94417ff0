// Shape-rule helpers that several operator families share, written once over a dimension policy
// (rules/dims.h): the fused activation attribute (conv2d, matmul), one spatial axis of a sliding window
// (conv2d, maxpool, avgpool), and a shape spelled by attributes (broadcast, reshape, opaque).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rules/dims.h"
#include "rules/ops/common.h"

namespace teq::ops {

/// Operator K's shape rule, `template <DimPolicy P> static ShapeOf<P> infer(P&, const OpInfo&, AttrSpan,
/// ShapesOf<P>)` (arity already checked), specialized in rules/ops/detail/<family>_shape.h beside its family.
/// infer_shape_with (rules/shape_rules.h) dispatches to it from op_list.inc, so an operator on the list
/// without one does not compile.
template <OpKind K>
struct ShapeRule;

/// The rule of the operators whose output has their first operand's shape, as the arity checks leave it.
struct FirstOperandShape {
  template <DimPolicy P>
  static ShapeOf<P> infer(P&, const OpInfo&, AttrSpan, ShapesOf<P> in) {
    return in[0];
  }
};

/// Validates a fused activation attribute (TASO/Tensat numbering).
template <DimPolicy P>
std::optional<Activation> activation_attr(P& p, int64_t code, std::string_view op) {
  TEQ_REQUIRE(p, code >= 0 && code <= 3, op,
              "activation must be 0 (none), 1 (sigmoid), 2 (relu) or 3 (tanh), got " + std::to_string(code));
  return static_cast<Activation>(code);
}

/// One spatial axis of a sliding window (WindowOf, rules/ops/common.h) over `in` elements. The kernel's
/// extent is a dimension (a convolution's comes from its weight's shape); stride and pad are attributes.
template <DimPolicy P>
std::optional<WindowOf<DimOf<P>>> window_1d(P& p, const DimOf<P>& in, const DimOf<P>& kernel, int64_t stride,
                                             int64_t pad, std::string_view op) {
  using Dim = DimOf<P>;
  TEQ_REQUIRE(p, stride >= 1, op, "stride must be >= 1, got " + std::to_string(stride));
  TEQ_REQUIRE(p, kernel >= p.k(1), op, "kernel size must be >= 1, got " + p.text(kernel));
  TEQ_REQUIRE(p, pad >= -1, op, "padding must be -1 (same) or >= 0, got " + std::to_string(pad));
  constexpr int64_t kLimit = int64_t{1} << 30;  // keeps the window arithmetic far from overflow
  // One message, two checks: the attributes' (concrete in every policy) apart from the dimensions'.
  TEQ_REQUIRE(p, stride <= kLimit && pad <= kLimit, op, "kernel, stride or padding too large");
  TEQ_REQUIRE(p, kernel <= p.k(kLimit) && in <= p.k(kMaxElements), op, "kernel, stride or padding too large");
  if (pad == -1) {
    const Dim out = (in + p.k(stride - 1)) / p.k(stride);
    const Dim total = (out - p.k(1)) * p.k(stride) + kernel - in;
    return WindowOf<Dim>{out, p.select(total < p.k(0), p.k(0), total) / p.k(2)};  // std::max(total, 0) / 2
  }
  const Dim padded = in + p.k(2 * pad);
  TEQ_REQUIRE(p, padded >= kernel, op,
              "kernel " + p.text(kernel) + " larger than padded extent " + p.text(padded));
  return WindowOf<Dim>{(padded - kernel) / p.k(stride) + p.k(1), p.k(pad)};
}

/// The shape that attributes spell (already checked), as dimensions.
template <DimPolicy P>
ShapeOf<P> attr_shape(const P& p, AttrSpan dims) {
  ShapeOf<P> out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.push_back(p.k(d));
  return out;
}

}  // namespace teq::ops
