// Convolution family, NCHW / OIHW:
//   (conv2d sh sw ph pw act x w): x [N,C,H,W], w [O,C/g,KH,KW]; the group count g = C / w.dim(1) comes
//     from the shapes (as in TASO), so grouped and depthwise convolutions need no attribute;
//     ph/pw = -1 means SAME padding, >= 0 explicit symmetric padding; act is a fused activation.
//   (conv2d sh sw ph pw act dh dw x w): the same with dilations dh, dw (tap ky reads row y*sh - pad + ky*dh;
//     the kernel covers (KH-1)*dh + 1 rows, which is what the window and SAME padding see). The dilations
//     are written only when one is not 1, so a 5-attribute pattern matches undilated convolutions only.
//   (enlarge kh kw w): zero-pads a kernel [O,I,h,w] to [O,I,kh,kw], centred.
//   (merge count w): TASO's merge_gconv, exactly upstream TASO's layout (src/cudnn/merge_gconv_kernel.cu,
//     src/dnnl/merge_gconv_dnnl.cc): w [O,I,kh,kw] -> [O,I*count,kh,kw], output channel o's weights go to
//     input block o / (O/count), zeros elsewhere. A conv of x [N,C,..] with w has g = C/I groups; with the
//     merged weight g/count. The two are equal when g == count (for g = k*count, k >= 2, they are not).
#pragma once

#include <optional>
#include <vector>

#include "rules/dims.h"
#include "rules/ops/common.h"

namespace teq::ops {

/// conv2d's attributes by name; dh = dw = 1 in the 5-attribute form.
struct ConvAttrs {
  int64_t sh, sw, ph, pw;
  Activation act;
  int64_t dh = 1, dw = 1;
};
inline ConvAttrs conv_attrs(AttrSpan a) {
  return {a[0], a[1], a[2], a[3], static_cast<Activation>(a[4]), a.size() > 6 ? a[5] : 1, a.size() > 6 ? a[6] : 1};
}
/// The attribute list of a conv2d in its canonical form (the dilations only when one is not 1).
inline std::vector<int64_t> conv2d_attr_list(const ConvAttrs& c) {
  std::vector<int64_t> a{c.sh, c.sw, c.ph, c.pw, static_cast<int64_t>(c.act)};
  if (c.dh != 1 || c.dw != 1) a.insert(a.end(), {c.dh, c.dw});
  return a;
}
/// enlarge's target kernel size.
struct EnlargeAttrs {
  int64_t kh, kw;
};
inline EnlargeAttrs enlarge_attrs(AttrSpan a) { return {a[0], a[1]}; }
/// merge's group count.
inline int64_t merge_count(AttrSpan a) { return a[0]; }
/// Rows (or columns) a kernel of k taps dilated by d spans, over a dimension policy (rules/dims.h).
template <class P>
typename P::Dim dilated_extent(const P& p, const typename P::Dim& k, int64_t d) {
  return (k - p.k(1)) * p.k(d) + p.k(1);
}
inline int64_t dilated_extent(int64_t k, int64_t d) { return dilated_extent(ConcreteDims{}, k, d); }

// The shape rules: rules/ops/detail/conv_shape.h.

template <class S>
Tensor<S> eval_conv2d(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  const Tensor<S>& w = *in[1];
  const ConvAttrs a = conv_attrs(attrs);
  const int64_t sh = a.sh, sw = a.sw, dh = a.dh, dw = a.dw;
  const int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t O = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3);
  const int64_t groups = C / Cg, Og = O / groups;
  const Window wy = window_1d(H, dilated_extent(KH, dh), sh, a.ph, "conv2d", {});
  const Window wx = window_1d(W, dilated_extent(KW, dw), sw, a.pw, "conv2d", {});
  Tensor<S> out(out_shape, ar.constant(0));
  for (int64_t n = 0; n < out_shape[0]; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t c0 = (o / Og) * Cg;  // first input channel of this output channel's group
      for (int64_t oy = 0; oy < wy.out; ++oy)
        for (int64_t ox = 0; ox < wx.out; ++ox) {
          std::optional<S> acc;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ky = 0; ky < KH; ++ky) {
              int64_t iy = oy * sh - wy.pad_before + ky * dh;
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < KW; ++kx) {
                int64_t ix = ox * sw - wx.pad_before + kx * dw;
                if (ix < 0 || ix >= W) continue;
                S term = x.at4(n, c0 + c, iy, ix) * w.at4(o, c, ky, kx);
                acc = acc ? *acc + term : term;
              }
            }
          out.at4(n, o, oy, ox) = activate(ar, a.act, acc ? *acc : ar.constant(0));
        }
    }
  return out;
}

template <class S>
Tensor<S> eval_enlarge(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& w = *in[0];
  const int64_t dy = (attrs[0] - w.dim(2)) / 2, dx = (attrs[1] - w.dim(3)) / 2;
  Tensor<S> out(out_shape, ar.constant(0));
  for (int64_t o = 0; o < w.dim(0); ++o)
    for (int64_t i = 0; i < w.dim(1); ++i)
      for (int64_t y = 0; y < w.dim(2); ++y)
        for (int64_t x = 0; x < w.dim(3); ++x) out.at4(o, i, y + dy, x + dx) = w.at4(o, i, y, x);
  return out;
}

template <class S>
Tensor<S> eval_merge(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& w = *in[0];
  const int64_t O = w.dim(0), I = w.dim(1), per_block = O / attrs[0];
  Tensor<S> out(out_shape, ar.constant(0));
  for (int64_t o = 0; o < O; ++o) {
    const int64_t i0 = (o / per_block) * I;  // first input channel of output channel o's block
    for (int64_t i = 0; i < I; ++i)
      for (int64_t y = 0; y < w.dim(2); ++y)
        for (int64_t x = 0; x < w.dim(3); ++x) out.at4(o, i0 + i, y, x) = w.at4(o, i, y, x);
  }
  return out;
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

template <>
struct Semantics<OpKind::Conv2d> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_conv2d(ar, attrs, in, out_shape);
  }
  /// A multiply-add per output element and kernel tap: w is [O, C/g, KH, KW].
  static double flops(AttrSpan, Shapes in, const Shape& out_shape) {
    const Shape& w = in[1];
    return static_cast<double>(num_elements(out_shape)) * static_cast<double>(w[1] * w[2] * w[3]);
  }
};
template <>
struct Semantics<OpKind::Enlarge> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_enlarge(ar, attrs, in, out_shape);
  }
};
template <>
struct Semantics<OpKind::Merge> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_merge(ar, attrs, in, out_shape);
  }
};

}  // namespace teq::ops
