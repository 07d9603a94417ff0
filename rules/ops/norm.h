// Normalization:
//   (batchnorm x scale bias mean var): x [N,C,...], the others [C];
//     y = (x - mean) * scale * rsqrt(var) + bias. The epsilon is folded into `var` by whoever builds the
//     node (the ONNX importer adds it to the variance initializer), so the operator has no float attribute.
//   (softmax axis x): exp(x) / sum(exp(x)) along axis.
#pragma once

#include "rules/ops/common.h"

namespace teq::ops {

// The shape rules: rules/ops/detail/norm_shape.h.
inline int64_t softmax_axis(AttrSpan a) { return a[0]; }

template <class S>
Tensor<S> eval_batchnorm(const Arith<S>& ar, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  const int64_t C = x.dim(1), inner = x.size() / (x.dim(0) * C);
  std::vector<S> out;
  out.reserve(x.data.size());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = (i / inner) % C;
    out.push_back((x.data[i] - in[3]->data[c]) * in[1]->data[c] * ar.unary(UnaryFn::Rsqrt, in[4]->data[c]) +
                  in[2]->data[c]);
  }
  return Tensor<S>(out_shape, std::move(out));
}

template <class S>
Tensor<S> eval_softmax(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  int64_t axis = attrs[0] < 0 ? attrs[0] + static_cast<int64_t>(x.rank()) : attrs[0];
  AxisSplit s = split_at_axis(x.shape, axis);
  Tensor<S> out(out_shape, ar.constant(0));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t a) { return (o * s.extent + a) * s.inner + i; };
      std::vector<S> e;
      for (int64_t a = 0; a < s.extent; ++a) e.push_back(ar.unary(UnaryFn::Exp, x.data[at(a)]));
      S total = e[0];
      for (int64_t a = 1; a < s.extent; ++a) total = total + e[a];
      for (int64_t a = 0; a < s.extent; ++a) out.data[at(a)] = e[a] / total;
    }
  return out;
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

template <>
struct Semantics<OpKind::BatchNorm> : OnePerElement {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S> in, const Shape& out_shape) {
    return eval_batchnorm(ar, in, out_shape);
  }
};
template <>
struct Semantics<OpKind::Softmax> : OnePerElement, AxisWorkKey<OpKind::Softmax> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_softmax(ar, attrs, in, out_shape);
  }
};

}  // namespace teq::ops
