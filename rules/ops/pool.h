// Pooling, NCHW:
//   (maxpool kh kw sh sw ph pw x)              padding (-1 = SAME) never wins the max
//   (avgpool kh kw sh sw ph pw include_pad x)  include_pad 1 divides by kh*kw (TASO, cuDNN default),
//                                              0 by the number of real elements (ONNX default)
//   (global_avgpool x)                         [N,C,H,W] -> [N,C,1,1]
#pragma once

#include "rules/ops/common.h"

namespace teq::ops {

/// maxpool's and avgpool's attributes by name; include_pad is avgpool's (false for maxpool).
struct PoolAttrs {
  int64_t kh, kw, sh, sw, ph, pw;
  bool include_pad;
};
inline PoolAttrs pool_attrs(AttrSpan a) { return {a[0], a[1], a[2], a[3], a[4], a[5], a.size() > 6 && a[6] != 0}; }

// The shape rules: rules/ops/detail/pool_shape.h.

template <class S>
Tensor<S> eval_pool(const Arith<S>& ar, bool is_max, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  const int64_t KH = attrs[0], KW = attrs[1], sh = attrs[2], sw = attrs[3];
  const bool include_pad = !is_max && attrs[6] != 0;
  const Window wy = window_1d(x.dim(2), KH, sh, attrs[4], "pool", {});
  const Window wx = window_1d(x.dim(3), KW, sw, attrs[5], "pool", {});
  Tensor<S> out(out_shape, ar.constant(0));
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t c = 0; c < x.dim(1); ++c)
      for (int64_t oy = 0; oy < wy.out; ++oy)
        for (int64_t ox = 0; ox < wx.out; ++ox) {
          std::optional<S> acc;
          int64_t count = 0;
          for (int64_t ky = 0; ky < KH; ++ky) {
            int64_t iy = oy * sh - wy.pad_before + ky;
            if (iy < 0 || iy >= x.dim(2)) continue;
            for (int64_t kx = 0; kx < KW; ++kx) {
              int64_t ix = ox * sw - wx.pad_before + kx;
              if (ix < 0 || ix >= x.dim(3)) continue;
              const S& v = x.at4(n, c, iy, ix);
              acc = !acc ? v : is_max ? ar.max(*acc, v) : *acc + v;
              ++count;
            }
          }
          // shape_pool guarantees every window holds at least one real element.
          out.at4(n, c, oy, ox) = is_max ? *acc : *acc / ar.constant(include_pad ? KH * KW : count);
        }
  return out;
}

template <class S>
Tensor<S> eval_global_avgpool(const Arith<S>& ar, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  const int64_t H = x.dim(2), W = x.dim(3);
  std::vector<S> out;
  out.reserve(num_elements(out_shape));
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t c = 0; c < x.dim(1); ++c) {
      S acc = x.at4(n, c, 0, 0);
      for (int64_t i = 1; i < H * W; ++i) acc = acc + x.at4(n, c, i / W, i % W);
      out.push_back(acc / ar.constant(H * W));
    }
  return Tensor<S>(out_shape, std::move(out));
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

/// maxpool's and avgpool's work: one operation per output element and window element.
struct WindowPoolWork {
  static double flops(AttrSpan attrs, Shapes, const Shape& out_shape) {
    const PoolAttrs p = pool_attrs(attrs);
    return static_cast<double>(num_elements(out_shape)) * static_cast<double>(p.kh * p.kw);
  }
};

template <>
struct Semantics<OpKind::MaxPool> : WindowPoolWork {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_pool(ar, /*is_max=*/true, attrs, in, out_shape);
  }
};
template <>
struct Semantics<OpKind::AvgPool> : WindowPoolWork {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_pool(ar, /*is_max=*/false, attrs, in, out_shape);
  }
};
template <>
struct Semantics<OpKind::GlobalAvgPool> : OnePerOperandElement {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan, Args<S> in, const Shape& out_shape) {
    return eval_global_avgpool(ar, in, out_shape);
  }
};

}  // namespace teq::ops
