#include "rules/ops/reduce.h"

#include <string>

namespace teq::ops {

Shape shape_reduce_mean(AttrSpan attrs, Shapes in) {
  const Shape& x = in[0];
  shape_check(attrs.size() >= 2, "reduce_mean", "needs keepdims and at least one axis", in);
  shape_check(attrs[0] == 0 || attrs[0] == 1, "reduce_mean", "keepdims must be 0 or 1, got " + std::to_string(attrs[0]),
              in);
  Shape out;
  size_t next = 1;  // the next axis attribute
  for (size_t d = 0; d < x.size(); ++d) {
    if (next < attrs.size() && attrs[next] == static_cast<int64_t>(d)) {
      ++next;
      if (attrs[0]) out.push_back(1);
      continue;
    }
    out.push_back(x[d]);
  }
  shape_check(next == attrs.size(), "reduce_mean",
              "axes " + to_string(attrs.subspan(1)) + " must be strictly increasing and in 0.." +
                  std::to_string(static_cast<int64_t>(x.size()) - 1),
              in);
  return out;
}

}  // namespace teq::ops
