// matmul: (matmul act a b) with a [..., m, k], b [..., k, n] -> [..., m, n]; batch dimensions
// broadcast numpy-style (so [B,S,H] x [H,K] works); act is a fused activation.
#pragma once

#include "rules/ops/common.h"

namespace teq::ops {

/// matmul's fused activation.
inline Activation matmul_activation(AttrSpan a) { return static_cast<Activation>(a[0]); }

// The shape rule: rules/ops/detail/matmul_shape.h.

template <class S>
Tensor<S> eval_matmul(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& a = *in[0];
  const Tensor<S>& b = *in[1];
  Activation act = matmul_activation(attrs);
  const int64_t m = a.shape[a.rank() - 2], k = a.shape[a.rank() - 1], n = b.shape[b.rank() - 1];
  const size_t out_rank = out_shape.size(), batch_rank = out_rank - 2;
  const Shape batch_shape(out_shape.begin(), out_shape.begin() + batch_rank);
  // Offset of the matrix for a given batch index in an operand whose batch dims may be broadcast.
  auto matrix_offset = [&](const Tensor<S>& t, const std::vector<int64_t>& bidx) {
    size_t t_batch = t.rank() - 2, lead = batch_rank - t_batch;
    int64_t off = 0, stride = t.shape[t.rank() - 2] * t.shape[t.rank() - 1];
    for (size_t d = t_batch; d-- > 0;) {
      off += (t.shape[d] == 1 ? 0 : bidx[d + lead]) * stride;
      stride *= t.shape[d];
    }
    return off;
  };
  std::vector<S> out;
  out.reserve(num_elements(out_shape));
  std::vector<int64_t> bidx;
  for (int64_t batch = 0; batch < num_elements(batch_shape); ++batch) {
    unravel(batch, batch_shape, bidx);
    int64_t ao = matrix_offset(a, bidx), bo = matrix_offset(b, bidx);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        S acc = a.data[ao + i * k] * b.data[bo + j];
        for (int64_t p = 1; p < k; ++p) acc = acc + a.data[ao + i * k + p] * b.data[bo + p * n + j];
        out.push_back(activate(ar, act, acc));
      }
  }
  return Tensor<S>(out_shape, std::move(out));
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

template <>
struct Semantics<OpKind::Matmul> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_matmul(ar, attrs, in, out_shape);
  }
  /// A multiply-add per output element and step of the reduced axis: a [.., m, k] x [.., k, n].
  static double flops(AttrSpan, Shapes in, const Shape& out_shape) {
    return static_cast<double>(num_elements(out_shape)) * static_cast<double>(in[0].back());
  }
};

}  // namespace teq::ops
