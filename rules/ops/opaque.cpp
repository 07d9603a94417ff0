#include "rules/ops/opaque.h"

#include <string>

namespace teq::ops {

Shape shape_opaque(AttrSpan attrs, Shapes in) {
  shape_check(attrs.size() >= 2 && attrs[0] >= 0 && attrs[1] >= 0, "opaque",
              "needs attributes: id, output index, then the output shape", in);
  for (size_t i = 2; i < attrs.size(); ++i) shape_check(attrs[i] >= 1, "opaque", "output dims must be >= 1", in);
  return Shape(attrs.begin() + 2, attrs.end());
}

void throw_opaque_not_evaluable(AttrSpan attrs) {
  throw ShapeError("opaque operator #" + std::to_string(attrs.empty() ? -1 : attrs[0]) +
                   " is outside the vocabulary and cannot be evaluated");
}

}  // namespace teq::ops
