#include "rules/ops/opaque.h"

#include <string>

namespace teq::ops {

void throw_opaque_not_evaluable(AttrSpan attrs) {
  throw ShapeError("opaque operator #" + std::to_string(attrs.empty() ? -1 : attrs[0]) +
                   " is outside the vocabulary and cannot be evaluated");
}

}  // namespace teq::ops
