// The normalization family's shape rules (rules/ops/norm.h), written once over a dimension policy
// (rules/dims.h).
#pragma once

#include "rules/dims.h"
#include "rules/ops/detail/common_shape.h"
#include "rules/ops/norm.h"

namespace teq::ops {

template <DimPolicy P>
ShapeOf<P> shape_batchnorm(P& p, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  TEQ_REQUIRE(p, x.size() >= 2, "batchnorm", "input must have rank >= 2 (N, C, ...)");
  constexpr const char* kPerChannel = "scale, bias, mean and var must be [C]";
  for (size_t k = 1; k < 5; ++k) {
    // One message, two checks: the rank before the dimension it makes readable.
    TEQ_REQUIRE(p, in[k].size() == 1, "batchnorm", kPerChannel);
    TEQ_REQUIRE(p, in[k][0] == x[1], "batchnorm", kPerChannel);
  }
  return x;
}

template <DimPolicy P>
ShapeOf<P> shape_softmax(P& p, AttrSpan attrs, ShapesOf<P> in) {
  normalize_axis(p, softmax_axis(attrs), in[0].size(), "softmax");
  TEQ_PROPAGATE(p);
  return in[0];
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

template <>
struct ShapeRule<OpKind::BatchNorm> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan, ShapesOf<P> in) {
    return shape_batchnorm(p, in);
  }
};
template <>
struct ShapeRule<OpKind::Softmax> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_softmax(p, attrs, in);
  }
};

}  // namespace teq::ops
