#include "rules/ops/pool.h"

#include <string>

namespace teq::ops {

Shape shape_pool(std::string_view op, AttrSpan attrs, Shapes in) {
  const Shape& x = in[0];
  shape_check(x.size() == 4, op, "input must be 4-d (NCHW)", in);
  if (op == "avgpool")
    shape_check(attrs[6] == 0 || attrs[6] == 1, op, "include_pad must be 0 or 1", in);
  Window wy = window_1d(x[2], attrs[0], attrs[2], attrs[4], op, in);
  Window wx = window_1d(x[3], attrs[1], attrs[3], attrs[5], op, in);
  // A window made only of padding has no value (max of nothing); forbid it.
  shape_check(wy.pad_before < attrs[0] && wx.pad_before < attrs[1], op, "padding must be smaller than the kernel",
              in);
  shape_check(wy.out >= 1 && wx.out >= 1, op, "empty output", in);
  return {x[0], x[1], wy.out, wx.out};
}

Shape shape_global_avgpool(Shapes in) {
  shape_check(in[0].size() == 4, "global_avgpool", "input must be 4-d (NCHW)", in);
  return {in[0][0], in[0][1], 1, 1};
}

}  // namespace teq::ops
