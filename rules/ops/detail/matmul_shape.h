// matmul's shape rule (rules/ops/matmul.h), written once over a dimension policy (rules/dims.h).
#pragma once

#include <algorithm>

#include "rules/ops/detail/common_shape.h"
#include "rules/ops/matmul.h"

namespace teq::ops {

template <DimPolicy P>
ShapeOf<P> shape_matmul(P& p, AttrSpan attrs, ShapesOf<P> in) {
  activation_attr(p, attrs[0], "matmul");
  TEQ_PROPAGATE(p);
  const ShapeOf<P>& a = in[0];
  const ShapeOf<P>& b = in[1];
  TEQ_REQUIRE(p, a.size() >= 2 && b.size() >= 2, "matmul", "operands must have rank >= 2");
  TEQ_REQUIRE(p, a[a.size() - 1] == b[b.size() - 2], "matmul", "inner dimensions differ");
  const size_t batch_rank = std::max(a.size(), b.size()) - 2;
  ShapeOf<P> out(batch_rank + 2, p.k(1));
  for (size_t d = 0; d < batch_rank; ++d) {
    // Align batch dimensions from the right.
    auto dim = [&](const ShapeOf<P>& s) -> DimOf<P> {
      const size_t sb = s.size() - 2;
      return d + sb >= batch_rank ? s[d + sb - batch_rank] : p.k(1);
    };
    const DimOf<P> da = dim(a), db = dim(b);
    TEQ_REQUIRE(p, da == db || da == p.k(1) || db == p.k(1), "matmul", "batch dimensions do not broadcast");
    out[d] = p.select(da < db, db, da);  // std::max(da, db)
  }
  out[batch_rank] = a[a.size() - 2];
  out[batch_rank + 1] = b[b.size() - 1];
  return out;
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

template <>
struct ShapeRule<OpKind::Matmul> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_matmul(p, attrs, in);
  }
};

}  // namespace teq::ops
