// Tensor<S>: a dense row-major tensor over any scalar type S (ModInt, float, double, z3::expr).
// Only storage and indexing live here; what operators compute is in ops/.
#pragma once

#include <cassert>
#include <vector>

#include "rules/shape.h"

namespace teq {

template <class S>
struct Tensor {
  Shape shape;
  std::vector<S> data;  // row-major; size == num_elements(shape)

  Tensor(Shape s, const S& fill) : shape(std::move(s)), data(num_elements(shape), fill) {}
  Tensor(Shape s, std::vector<S> values) : shape(std::move(s)), data(std::move(values)) {
    assert(static_cast<int64_t>(data.size()) == num_elements(shape) && "tensor data/shape mismatch");
  }

  size_t rank() const { return shape.size(); }
  int64_t dim(size_t i) const { return shape[i]; }
  int64_t size() const { return static_cast<int64_t>(data.size()); }

  /// Element at a 4-d index (NCHW and OIHW tensors).
  const S& at4(int64_t a, int64_t b, int64_t c, int64_t d) const {
    return data[((a * shape[1] + b) * shape[2] + c) * shape[3] + d];
  }
  S& at4(int64_t a, int64_t b, int64_t c, int64_t d) {
    return data[((a * shape[1] + b) * shape[2] + c) * shape[3] + d];
  }
};

/// Row-major strides of a shape.
inline std::vector<int64_t> strides_of(std::span<const int64_t> shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

/// Multi-index of a flat row-major offset.
inline void unravel(int64_t flat, std::span<const int64_t> shape, std::vector<int64_t>& index) {
  index.resize(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
}

}  // namespace teq
