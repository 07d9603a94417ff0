// The reductions' shape rule (rules/ops/reduce.h), written once over a dimension policy (rules/dims.h).
#pragma once

#include <string>

#include "rules/dims.h"
#include "rules/ops/detail/common_shape.h"
#include "rules/ops/reduce.h"

namespace teq::ops {

template <DimPolicy P>
ShapeOf<P> shape_reduce_mean(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  TEQ_REQUIRE(p, attrs.size() >= 2, "reduce_mean", "needs keepdims and at least one axis");
  TEQ_REQUIRE(p, attrs[0] == 0 || attrs[0] == 1, "reduce_mean",
              "keepdims must be 0 or 1, got " + std::to_string(attrs[0]));
  ShapeOf<P> out;
  size_t next = 1;  // the next axis attribute
  for (size_t d = 0; d < x.size(); ++d) {
    if (next < attrs.size() && attrs[next] == static_cast<int64_t>(d)) {
      ++next;
      if (attrs[0]) out.push_back(p.k(1));
      continue;
    }
    out.push_back(x[d]);
  }
  TEQ_REQUIRE(p, next == attrs.size(), "reduce_mean",
              "axes " + to_string(attrs.subspan(1)) + " must be strictly increasing and in 0.." +
                  std::to_string(static_cast<int64_t>(x.size()) - 1));
  return out;
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

template <>
struct ShapeRule<OpKind::ReduceMean> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_reduce_mean(p, attrs, in);
  }
};

}  // namespace teq::ops
