// The convolution family's shape rules (rules/ops/conv.h), written once over a dimension policy (rules/dims.h).
#pragma once

#include <string>

#include "rules/ops/conv.h"
#include "rules/ops/detail/common_shape.h"

namespace teq::ops {

template <DimPolicy P>
ShapeOf<P> shape_conv2d(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  const ShapeOf<P>& w = in[1];
  TEQ_REQUIRE(p, x.size() == 4 && w.size() == 4, "conv2d", "input and weight must be 4-d (NCHW, OIHW)");
  activation_attr(p, attrs[4], "conv2d");
  TEQ_PROPAGATE(p);
  TEQ_REQUIRE(p, w[1] >= p.k(1) && x[1] % w[1] == p.k(0), "conv2d",
              "input channels " + p.text(x[1]) + " not divisible by weight in-channels " + p.text(w[1]));
  const DimOf<P> groups = x[1] / w[1];
  TEQ_REQUIRE(p, w[0] % groups == p.k(0), "conv2d",
              "output channels " + p.text(w[0]) + " not divisible by groups " + p.text(groups));
  const ConvAttrs a = conv_attrs(attrs);
  if (attrs.size() > 5) {
    TEQ_REQUIRE(p, a.dh >= 1 && a.dw >= 1 && a.dh <= (int64_t{1} << 20) && a.dw <= (int64_t{1} << 20), "conv2d",
                "dilations must be 1 .. 2^20, got " + std::to_string(a.dh) + " " + std::to_string(a.dw));
    TEQ_REQUIRE(p, a.dh != 1 || a.dw != 1, "conv2d", "dilations 1 1 are written without them (the 5-attribute form)");
  }
  const auto wy = window_1d(p, x[2], dilated_extent(p, w[2], a.dh), a.sh, a.ph, "conv2d");
  TEQ_PROPAGATE(p);
  const auto wx = window_1d(p, x[3], dilated_extent(p, w[3], a.dw), a.sw, a.pw, "conv2d");
  TEQ_PROPAGATE(p);
  TEQ_REQUIRE(p, wy->out >= p.k(1) && wx->out >= p.k(1), "conv2d", "empty output");
  return {x[0], w[0], wy->out, wx->out};
}

template <DimPolicy P>
ShapeOf<P> shape_enlarge(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& w = in[0];
  const EnlargeAttrs target = enlarge_attrs(attrs);
  TEQ_REQUIRE(p, w.size() == 4, "enlarge", "kernel must be 4-d (OIHW)");
  const DimOf<P> kh = p.k(target.kh), kw = p.k(target.kw);
  TEQ_REQUIRE(p, kh >= w[2] && kw >= w[3], "enlarge",
              "target " + std::to_string(target.kh) + "x" + std::to_string(target.kw) + " smaller than kernel");
  TEQ_REQUIRE(p, (kh - w[2]) % p.k(2) == p.k(0) && (kw - w[3]) % p.k(2) == p.k(0), "enlarge",
              "kernel and target sizes must differ by an even amount (centred padding)");
  return {w[0], w[1], kh, kw};
}

template <DimPolicy P>
ShapeOf<P> shape_merge(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& w = in[0];
  const int64_t count = merge_count(attrs);
  TEQ_REQUIRE(p, w.size() == 4, "merge", "kernel must be 4-d (OIHW)");
  TEQ_REQUIRE(p, count >= 1 && count <= (int64_t{1} << 20), "merge",
              "count must be >= 1, got " + std::to_string(count));
  TEQ_REQUIRE(p, w[0] % p.k(count) == p.k(0), "merge",
              "output channels " + p.text(w[0]) + " not divisible by count " + std::to_string(count));
  TEQ_REQUIRE(p, w[1] <= p.k(kMaxElements / count), "merge", "merged kernel too large");
  return {w[0], w[1] * p.k(count), w[2], w[3]};
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

template <>
struct ShapeRule<OpKind::Conv2d> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_conv2d(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Enlarge> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_enlarge(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Merge> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_merge(p, attrs, in);
  }
};

}  // namespace teq::ops
