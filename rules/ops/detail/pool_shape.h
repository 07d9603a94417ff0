// The pooling family's shape rules (rules/ops/pool.h), written once over a dimension policy (rules/dims.h).
#pragma once

#include <string_view>

#include "rules/ops/detail/common_shape.h"
#include "rules/ops/pool.h"

namespace teq::ops {

/// maxpool's and avgpool's (`op` names which).
template <DimPolicy P>
ShapeOf<P> shape_pool(P& p, std::string_view op, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  TEQ_REQUIRE(p, x.size() == 4, op, "input must be 4-d (NCHW)");
  if (op == "avgpool") {
    TEQ_REQUIRE(p, attrs[6] == 0 || attrs[6] == 1, op, "include_pad must be 0 or 1");
  }
  const PoolAttrs a = pool_attrs(attrs);
  const auto wy = window_1d(p, x[2], p.k(a.kh), a.sh, a.ph, op);
  TEQ_PROPAGATE(p);
  const auto wx = window_1d(p, x[3], p.k(a.kw), a.sw, a.pw, op);
  TEQ_PROPAGATE(p);
  // A window made only of padding has no value (max of nothing); forbid it.
  TEQ_REQUIRE(p, wy->pad_before < p.k(a.kh) && wx->pad_before < p.k(a.kw), op,
              "padding must be smaller than the kernel");
  TEQ_REQUIRE(p, wy->out >= p.k(1) && wx->out >= p.k(1), op, "empty output");
  return {x[0], x[1], wy->out, wx->out};
}

template <DimPolicy P>
ShapeOf<P> shape_global_avgpool(P& p, ShapesOf<P> in) {
  TEQ_REQUIRE(p, in[0].size() == 4, "global_avgpool", "input must be 4-d (NCHW)");
  return {in[0][0], in[0][1], p.k(1), p.k(1)};
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

/// maxpool's and avgpool's rule.
struct WindowPoolShape {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo& info, AttrSpan attrs, ShapesOf<P> in) {
    return shape_pool(p, info.name, attrs, in);
  }
};
template <> struct ShapeRule<OpKind::MaxPool> : WindowPoolShape {};
template <> struct ShapeRule<OpKind::AvgPool> : WindowPoolShape {};
template <>
struct ShapeRule<OpKind::GlobalAvgPool> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan, ShapesOf<P> in) {
    return shape_global_avgpool(p, in);
  }
};

}  // namespace teq::ops
