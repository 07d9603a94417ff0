// Constant tensors that TASO's rules need. Each takes a reference tensor `like` that fixes its size, so
// that the constant's shape is explicit in a pattern; its values never depend on like's values.
//   (ones like)              shape of like, all ones                       (TASO constant_one)
//   (eye like)               n x n identity, n = last dim of like          (TASO constant_imm)
//   (iconv kh kw like)       [C,C,kh,kw], C = like.dim(1): identity conv    (TASO constant_iconv)
//   (pool_kernel kh kw like) [C,1,kh,kw], C = like.dim(1): depthwise kernel of 1/(kh*kw), so that
//                            conv2d with it is avgpool with include_pad=1   (TASO constant_pool)
#pragma once

#include "rules/ops/common.h"

namespace teq::ops {

// The shape rules: rules/ops/detail/constants_shape.h.
/// iconv's and pool_kernel's kernel size.
struct KernelSize {
  int64_t kh, kw;
};
inline KernelSize kernel_constant_size(AttrSpan a) { return {a[0], a[1]}; }

template <class S>
Tensor<S> eval_ones(const Arith<S>& ar, const Shape& out_shape) {
  return Tensor<S>(out_shape, ar.constant(1));
}

template <class S>
Tensor<S> eval_eye(const Arith<S>& ar, const Shape& out_shape) {
  Tensor<S> out(out_shape, ar.constant(0));
  for (int64_t i = 0; i < out_shape[0]; ++i) out.data[i * out_shape[0] + i] = ar.constant(1);
  return out;
}

template <class S>
Tensor<S> eval_iconv(const Arith<S>& ar, const Shape& out_shape) {
  Tensor<S> out(out_shape, ar.constant(0));
  for (int64_t c = 0; c < out_shape[0]; ++c) out.at4(c, c, out_shape[2] / 2, out_shape[3] / 2) = ar.constant(1);
  return out;
}

template <class S>
Tensor<S> eval_pool_kernel(const Arith<S>& ar, const Shape& out_shape) {
  return Tensor<S>(out_shape, ar.constant(1, out_shape[2] * out_shape[3]));
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

/// iconv's and pool_kernel's work depends only on the channel count, dimension 1 of `like`.
template <OpKind K>
struct ChannelsWorkKey {
  static WorkKey work_key(AttrSpan attrs, Shapes in) {
    WorkKey k{K, {attrs.begin(), attrs.end()}, {in.begin(), in.end()}};
    if (!k.inputs.empty() && k.inputs[0].size() >= 2) k.inputs = {Shape{1, k.inputs[0][1]}};
    return k;
  }
};

template <>
struct Semantics<OpKind::Ones> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S>, const Shape& out_shape) {
    return eval_ones(ar, out_shape);
  }
};
template <>
struct Semantics<OpKind::Eye> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S>, const Shape& out_shape) {
    return eval_eye(ar, out_shape);
  }
  /// n x n from the last dimension of `like`: that dimension is all it depends on.
  static WorkKey work_key(AttrSpan attrs, Shapes in) {
    WorkKey k{OpKind::Eye, {attrs.begin(), attrs.end()}, {in.begin(), in.end()}};
    if (!k.inputs.empty() && !k.inputs[0].empty()) k.inputs = {Shape{k.inputs[0].back()}};
    return k;
  }
};
template <>
struct Semantics<OpKind::IConv> : ChannelsWorkKey<OpKind::IConv> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S>, const Shape& out_shape) {
    return eval_iconv(ar, out_shape);
  }
};
template <>
struct Semantics<OpKind::PoolKernel> : ChannelsWorkKey<OpKind::PoolKernel> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S>, const Shape& out_shape) {
    return eval_pool_kernel(ar, out_shape);
  }
};

}  // namespace teq::ops
