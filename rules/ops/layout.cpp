#include "rules/ops/layout.h"

#include "rules/ops/detail/layout_shape.h"

namespace teq::ops {

SplitRange split_range(AttrSpan attrs, const Shape& x, const Shape& ref) {
  return split_range(ConcreteDims{}, attrs, x, ref);
}

}  // namespace teq::ops
