#include "rules/ops/conv.h"

#include <string>

namespace teq::ops {

Shape shape_conv2d(AttrSpan attrs, Shapes in) {
  const Shape &x = in[0], &w = in[1];
  shape_check(x.size() == 4 && w.size() == 4, "conv2d", "input and weight must be 4-d (NCHW, OIHW)", in);
  activation_attr(attrs[4], "conv2d", in);
  shape_check(w[1] >= 1 && x[1] % w[1] == 0, "conv2d",
              "input channels " + std::to_string(x[1]) + " not divisible by weight in-channels " +
                  std::to_string(w[1]),
              in);
  int64_t groups = x[1] / w[1];
  shape_check(w[0] % groups == 0, "conv2d",
              "output channels " + std::to_string(w[0]) + " not divisible by groups " + std::to_string(groups), in);
  const ConvAttrs a = conv_attrs(attrs);
  if (attrs.size() > 5) {
    shape_check(a.dh >= 1 && a.dw >= 1 && a.dh <= (int64_t{1} << 20) && a.dw <= (int64_t{1} << 20), "conv2d",
                "dilations must be 1 .. 2^20, got " + std::to_string(a.dh) + " " + std::to_string(a.dw), in);
    shape_check(a.dh != 1 || a.dw != 1, "conv2d",
                "dilations 1 1 are written without them (the 5-attribute form)", in);
  }
  Window wy = window_1d(x[2], dilated_extent(w[2], a.dh), a.sh, a.ph, "conv2d", in);
  Window wx = window_1d(x[3], dilated_extent(w[3], a.dw), a.sw, a.pw, "conv2d", in);
  shape_check(wy.out >= 1 && wx.out >= 1, "conv2d", "empty output", in);
  return {x[0], w[0], wy.out, wx.out};
}

Shape shape_enlarge(AttrSpan attrs, Shapes in) {
  const Shape& w = in[0];
  shape_check(w.size() == 4, "enlarge", "kernel must be 4-d (OIHW)", in);
  shape_check(attrs[0] >= w[2] && attrs[1] >= w[3], "enlarge",
              "target " + std::to_string(attrs[0]) + "x" + std::to_string(attrs[1]) + " smaller than kernel", in);
  shape_check((attrs[0] - w[2]) % 2 == 0 && (attrs[1] - w[3]) % 2 == 0, "enlarge",
              "kernel and target sizes must differ by an even amount (centred padding)", in);
  return {w[0], w[1], attrs[0], attrs[1]};
}

Shape shape_merge(AttrSpan attrs, Shapes in) {
  const Shape& w = in[0];
  const int64_t count = attrs[0];
  shape_check(w.size() == 4, "merge", "kernel must be 4-d (OIHW)", in);
  shape_check(count >= 1 && count <= (int64_t{1} << 20), "merge", "count must be >= 1, got " + std::to_string(count), in);
  shape_check(w[0] % count == 0, "merge",
              "output channels " + std::to_string(w[0]) + " not divisible by count " + std::to_string(count), in);
  shape_check(w[1] <= kMaxElements / count, "merge", "merged kernel too large", in);
  return {w[0], w[1] * count, w[2], w[3]};
}

}  // namespace teq::ops
