#include "rules/ops/common.h"

#include <string>

namespace teq::ops {

Activation activation_attr(int64_t code, std::string_view op, Shapes in) {
  shape_check(code >= 0 && code <= 3, op,
              "activation must be 0 (none), 1 (sigmoid), 2 (relu) or 3 (tanh), got " + std::to_string(code),
              in);
  return static_cast<Activation>(code);
}

Window window_1d(int64_t in, int64_t kernel, int64_t stride, int64_t pad, std::string_view op, Shapes shapes) {
  shape_check(stride >= 1, op, "stride must be >= 1, got " + std::to_string(stride), shapes);
  shape_check(kernel >= 1, op, "kernel size must be >= 1, got " + std::to_string(kernel), shapes);
  shape_check(pad >= -1, op, "padding must be -1 (same) or >= 0, got " + std::to_string(pad), shapes);
  constexpr int64_t kLimit = int64_t{1} << 30;  // keeps the window arithmetic far from overflow
  shape_check(kernel <= kLimit && stride <= kLimit && pad <= kLimit && in <= kMaxElements, op,
              "kernel, stride or padding too large", shapes);
  if (pad == -1) {
    int64_t out = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>((out - 1) * stride + kernel - in, 0);
    return {out, total / 2};
  }
  shape_check(in + 2 * pad >= kernel, op,
              "kernel " + std::to_string(kernel) + " larger than padded extent " + std::to_string(in + 2 * pad),
              shapes);
  return {(in + 2 * pad - kernel) / stride + 1, pad};
}

std::vector<int64_t> with_normalized_axis(OpKind op, std::vector<int64_t> attrs, size_t rank) {
  const bool has_axis = op == OpKind::Concat || op == OpKind::Slice || op == OpKind::Softmax;
  if (has_axis && !attrs.empty() && attrs.front() < 0) attrs.front() += static_cast<int64_t>(rank);
  return attrs;
}

}  // namespace teq::ops
