// Shape (a list of dimensions), ShapeError, and small shape helpers shared by the operator families.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace teq {

using Shape = std::vector<int64_t>;

/// "[2,3,4]"; "[]" for a scalar.
std::string to_string(std::span<const int64_t> shape);
/// Number of elements (1 for a scalar); saturates at INT64_MAX instead of overflowing.
int64_t num_elements(std::span<const int64_t> shape);

/// Largest tensor any graph may hold (2^40 elements): beyond it shape inference reports an error
/// instead of letting element counts overflow.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

/// Thrown when an operator's inputs or attributes do not fit; the message names the operator and shapes.
class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws ShapeError("<op>: <what> (input shapes [..], [..])") unless `ok`.
void shape_check(bool ok, std::string_view op, std::string_view what, std::span<const Shape> inputs);

/// Normalizes a possibly negative axis against `rank`; throws ShapeError when out of range.
int64_t normalize_axis(int64_t axis, size_t rank, std::string_view op, std::span<const Shape> inputs);

/// Splits a shape around `axis`: elements before it, its extent, elements after it.
struct AxisSplit {
  int64_t outer, extent, inner;
};
AxisSplit split_at_axis(std::span<const int64_t> shape, int64_t axis);

}  // namespace teq
