#include "rules/ops/common.h"

#include "rules/ops/detail/common_shape.h"

namespace teq::ops {

Window window_1d(int64_t in, int64_t kernel, int64_t stride, int64_t pad, std::string_view op, Shapes shapes) {
  ThrowingDims p(shapes);
  return *window_1d(p, in, kernel, stride, pad, op);
}

std::vector<int64_t> with_normalized_axis(OpKind op, std::vector<int64_t> attrs, size_t rank) {
  const bool has_axis = op == OpKind::Concat || op == OpKind::Slice || op == OpKind::Softmax;
  if (has_axis && !attrs.empty() && attrs.front() < 0) attrs.front() += static_cast<int64_t>(rank);
  return attrs;
}

}  // namespace teq::ops
