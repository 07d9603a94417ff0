#include "rules/ops/matmul.h"

namespace teq::ops {

Shape shape_matmul(AttrSpan attrs, Shapes in) {
  activation_attr(attrs[0], "matmul", in);
  const Shape &a = in[0], &b = in[1];
  shape_check(a.size() >= 2 && b.size() >= 2, "matmul", "operands must have rank >= 2", in);
  shape_check(a[a.size() - 1] == b[b.size() - 2], "matmul", "inner dimensions differ", in);
  size_t batch_rank = std::max(a.size(), b.size()) - 2;
  Shape out(batch_rank + 2, 1);
  for (size_t d = 0; d < batch_rank; ++d) {
    // Align batch dimensions from the right.
    auto dim = [&](const Shape& s) -> int64_t {
      size_t sb = s.size() - 2;
      return d + sb >= batch_rank ? s[d + sb - batch_rank] : 1;
    };
    int64_t da = dim(a), db = dim(b);
    shape_check(da == db || da == 1 || db == 1, "matmul", "batch dimensions do not broadcast", in);
    out[d] = std::max(da, db);
  }
  out[batch_rank] = a[a.size() - 2];
  out[batch_rank + 1] = b[b.size() - 1];
  return out;
}

}  // namespace teq::ops
