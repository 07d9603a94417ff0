// opaque's shape rule (rules/ops/opaque.h), written once over a dimension policy (rules/dims.h).
#pragma once

#include "rules/ops/detail/common_shape.h"
#include "rules/ops/opaque.h"

namespace teq::ops {

/// The output shape its attributes carry.
template <DimPolicy P>
ShapeOf<P> shape_opaque(P& p, AttrSpan attrs, ShapesOf<P>) {
  TEQ_REQUIRE(p, attrs.size() >= 2 && attrs[0] >= 0 && attrs[1] >= 0, "opaque",
              "needs attributes: id, output index, then the output shape");
  for (size_t i = 2; i < attrs.size(); ++i) TEQ_REQUIRE(p, attrs[i] >= 1, "opaque", "output dims must be >= 1");
  return attr_shape(p, attrs.subspan(2));
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

template <>
struct ShapeRule<OpKind::Opaque> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_opaque(p, attrs, in);
  }
};

}  // namespace teq::ops
