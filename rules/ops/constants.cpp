#include "rules/ops/constants.h"

#include <string>

namespace teq::ops {

Shape shape_ones(Shapes in) { return in[0]; }

Shape shape_eye(Shapes in) {
  shape_check(!in[0].empty(), "eye", "reference must have rank >= 1", in);
  return {in[0].back(), in[0].back()};
}

Shape shape_kernel_constant(std::string_view op, AttrSpan attrs, Shapes in) {
  shape_check(in[0].size() >= 2, op, "reference must have rank >= 2 (channels at dim 1)", in);
  shape_check(attrs[0] >= 1 && attrs[1] >= 1 && attrs[0] % 2 == 1 && attrs[1] % 2 == 1, op,
              "kernel size must be odd and positive, got " + std::to_string(attrs[0]) + "x" +
                  std::to_string(attrs[1]),
              in);
  int64_t C = in[0][1];
  return {C, op == "iconv" ? C : 1, attrs[0], attrs[1]};
}

}  // namespace teq::ops
