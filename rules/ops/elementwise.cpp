#include "rules/ops/elementwise.h"

namespace teq::ops {

Shape shape_binary(std::string_view op, Shapes in) {
  shape_check(in[0] == in[1], op, "operands must have equal shapes", in);
  return in[0];
}

Shape shape_smul(Shapes in) {
  shape_check(in[1].empty(), "smul", "second operand must be a 0-d scalar", in);
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
