#include "rules/ops/elementwise.h"

#include <string>

namespace teq::ops {

Shape shape_binary(std::string_view op, Shapes in) {
  shape_check(in[0] == in[1], op, "operands must have equal shapes", in);
  return in[0];
}

Shape shape_elementwise(const OpInfo& info, AttrSpan attrs, Shapes in) {
  switch (info.kind) {
    case OpKind::Smul: return shape_smul(in);
    case OpKind::Clip: return shape_clip(attrs, in);
    default: return in.size() == 1 ? in[0] : shape_binary(info.name, in);  // relu ..., ewadd ...
  }
}

Shape shape_smul(Shapes in) {
  shape_check(in[1].empty(), "smul", "second operand must be a 0-d scalar", in);
  return in[0];
}

Shape shape_clip(AttrSpan attrs, Shapes in) {
  bool present[2] = {false, false};
  for (int b = 0; b < 2; ++b) {
    const int64_t num = attrs[2 * b], exp = attrs[2 * b + 1];
    const std::string which = b == 0 ? "lower" : "upper";
    shape_check(exp >= kNoBound && exp <= 62, "clip",
                which + " bound exponent must be -1 (no bound) or 0..62, got " + std::to_string(exp), in);
    shape_check(exp != kNoBound || num == 0, "clip", which + " bound is absent (exponent -1) but its numerator is not 0",
                in);
    shape_check(exp <= 0 || num % 2 != 0, "clip",
                which + " bound " + std::to_string(num) + "/2^" + std::to_string(exp) +
                    " is not in lowest terms (an even numerator needs a smaller exponent)",
                in);
    present[b] = exp != kNoBound;
  }
  shape_check(present[0] || present[1], "clip", "needs at least one bound", in);
  if (present[0] && present[1]) {
    // lo_num / 2^lo_exp <= hi_num / 2^hi_exp, cross-multiplied exactly (|num| < 2^63, exp <= 62).
    const __int128 lo = static_cast<__int128>(attrs[0]) << attrs[3], hi = static_cast<__int128>(attrs[2]) << attrs[1];
    shape_check(lo <= hi, "clip", "lower bound above the upper bound", in);
  }
  return in[0];
}

Shape shape_broadcast(AttrSpan target, Shapes in) {
  const Shape& x = in[0];
  shape_check(x.size() <= target.size(), "broadcast", "target " + to_string(target) + " has lower rank", in);
  size_t lead = target.size() - x.size();
  for (size_t d = 0; d < x.size(); ++d)
    shape_check(x[d] == 1 || x[d] == target[d + lead], "broadcast",
                "cannot broadcast to " + to_string(target), in);
  for (int64_t d : target) shape_check(d >= 1, "broadcast", "target dims must be >= 1", in);
  return Shape(target.begin(), target.end());
}

}  // namespace teq::ops
