#include "rules/ops/norm.h"

namespace teq::ops {

Shape shape_batchnorm(Shapes in) {
  const Shape& x = in[0];
  shape_check(x.size() >= 2, "batchnorm", "input must have rank >= 2 (N, C, ...)", in);
  for (size_t k = 1; k < 5; ++k)
    shape_check(in[k] == Shape{x[1]}, "batchnorm", "scale, bias, mean and var must be [C]", in);
  return x;
}

Shape shape_softmax(AttrSpan attrs, Shapes in) {
  normalize_axis(attrs[0], in[0].size(), "softmax", in);
  return in[0];
}

}  // namespace teq::ops
