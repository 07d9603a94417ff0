#include "rules/shape.h"

#include "rules/dims.h"

#include <limits>

namespace teq {

std::string to_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

int64_t num_elements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();  // saturate
  return n;
}

void shape_check(bool ok, std::string_view op, std::string_view what, std::span<const Shape> inputs) {
  if (ok) return;
  std::string msg = std::string(op) + ": " + std::string(what) + " (input shapes ";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) msg += ", ";
    msg += to_string(inputs[i]);
  }
  throw ShapeError(msg + ")");
}

int64_t normalize_axis(int64_t axis, size_t rank, std::string_view op, std::span<const Shape> inputs) {
  ThrowingDims p(inputs);
  return normalize_axis(p, axis, rank, op);  // the rule of rules/dims.h, with shape_check's message
}

AxisSplit split_at_axis(std::span<const int64_t> shape, int64_t axis) {
  AxisSplit s{1, shape[axis], 1};
  for (int64_t i = 0; i < axis; ++i) s.outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}

}  // namespace teq
