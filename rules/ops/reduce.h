// Reductions:
//   (reduce_mean keepdims a0 .. ak x)  the mean over axes a0 < a1 < .. < ak (non-negative, strictly
//                                       increasing, at least one); keepdims 1 keeps each reduced axis with
//                                       extent 1, 0 drops it (ONNX ReduceMean's keepdims).
#pragma once

#include <optional>

#include "rules/ops/common.h"

namespace teq::ops {

// The shape rule: rules/ops/detail/reduce_shape.h.

/// reduce_mean's attributes by name.
struct ReduceMeanAttrs {
  bool keepdims;
  std::vector<int64_t> axes;
};
inline ReduceMeanAttrs reduce_mean_attrs(AttrSpan a) { return {a[0] != 0, {a.begin() + 1, a.end()}}; }

template <class S>
Tensor<S> eval_reduce_mean(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  const size_t rank = x.rank();
  std::vector<bool> reduced(rank, false);
  for (size_t k = 1; k < attrs.size(); ++k) reduced[static_cast<size_t>(attrs[k])] = true;
  // Stride in the output of each input axis: 0 on a reduced axis. With keepdims the reduced axes have
  // extent 1, so the output's row-major order is the same either way.
  std::vector<int64_t> out_stride(rank, 0);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;)
    if (!reduced[d]) out_stride[d] = stride, stride *= x.shape[d];
  const int64_t out_count = num_elements(out_shape);
  std::vector<std::optional<S>> acc(static_cast<size_t>(out_count));
  std::vector<int64_t> idx;
  for (int64_t flat = 0; flat < x.size(); ++flat) {
    unravel(flat, x.shape, idx);
    int64_t dst = 0;
    for (size_t d = 0; d < rank; ++d) dst += idx[d] * out_stride[d];
    auto& a = acc[static_cast<size_t>(dst)];
    a = a ? *a + x.data[flat] : x.data[flat];
  }
  const S count = ar.constant(x.size() / out_count);
  std::vector<S> out;
  out.reserve(acc.size());
  for (auto& a : acc) out.push_back(*a / count);
  return Tensor<S>(out_shape, std::move(out));
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

template <>
struct Semantics<OpKind::ReduceMean> : OnePerOperandElement {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_reduce_mean(ar, attrs, in, out_shape);
  }
};

}  // namespace teq::ops
