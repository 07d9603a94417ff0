#include "optimizer/cuda/gpu_plan.h"

#include <stdexcept>
#include <string>

#include "rules/ops/common.h"
#include "rules/ops/conv.h"
#include "rules/ops/pool.h"
#include "rules/tensor.h"

namespace teq::gpu {
namespace {

void check_rank(size_t rank, const char* op) {
  if (rank > static_cast<size_t>(kMaxRank))
    throw std::runtime_error(std::string("gpu: ") + op + " of rank " + std::to_string(rank) + " exceeds " +
                             std::to_string(kMaxRank));
}

GatherPlan gather_over(const Shape& out) {
  GatherPlan p;
  p.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) p.dims[d] = out[d];
  p.count = num_elements(out);
  return p;
}

}  // namespace

GatherPlan plan_broadcast(const Shape& in, const Shape& out) {
  check_rank(out.size(), "broadcast");
  GatherPlan p = gather_over(out);
  const std::vector<int64_t> st = strides_of(in);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) p.src_stride[d + lead] = in[d] == 1 ? 0 : st[d];
  return p;
}

GatherPlan plan_transpose(const Shape& in, AttrSpan perm) {
  check_rank(in.size(), "transpose");
  Shape out;
  for (int64_t q : perm) out.push_back(in[q]);
  GatherPlan p = gather_over(out);
  const std::vector<int64_t> st = strides_of(in);
  for (size_t d = 0; d < perm.size(); ++d) p.src_stride[d] = st[perm[d]];
  return p;
}

std::vector<float> run_gather_host(const GatherPlan& plan, std::span<const float> in) {
  std::vector<float> out(plan.count);
  for (int64_t i = 0; i < plan.count; ++i) out[i] = in[gather_source(plan, i)];
  return out;
}

Copy2d plan_slice_copy(const Shape& in, int64_t axis, int64_t begin, int64_t end) {
  const AxisSplit s = split_at_axis(in, axis);
  return Copy2d{.rows = s.outer,
                .width = (end - begin) * s.inner,
                .src_pitch = s.extent * s.inner,
                .dst_pitch = (end - begin) * s.inner,
                .src_offset = begin * s.inner,
                .dst_offset = 0};
}

std::vector<Copy2d> plan_concat_copies(std::span<const Shape> ins, int64_t axis) {
  int64_t total = 0;
  for (const Shape& s : ins) total += s[axis];
  std::vector<Copy2d> copies;
  int64_t at = 0;
  for (const Shape& s : ins) {
    const AxisSplit a = split_at_axis(s, axis);
    copies.push_back(Copy2d{.rows = a.outer,
                            .width = a.extent * a.inner,
                            .src_pitch = a.extent * a.inner,
                            .dst_pitch = total * a.inner,
                            .src_offset = 0,
                            .dst_offset = at * a.inner});
    at += a.extent;
  }
  return copies;
}

std::vector<Copy2d> plan_merge_copies(const Shape& w, int64_t count) {
  const int64_t per_block = w[0] / count, kernel = w[1] * w[2] * w[3];  // one output channel's weights
  std::vector<Copy2d> copies;
  for (int64_t b = 0; b < count; ++b)
    copies.push_back(Copy2d{.rows = per_block,
                            .width = kernel,
                            .src_pitch = kernel,
                            .dst_pitch = kernel * count,
                            .src_offset = b * per_block * kernel,
                            .dst_offset = b * per_block * kernel * count + b * kernel});
  return copies;
}

void run_copy2d_host(const Copy2d& c, const float* src, float* dst) {
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t i = 0; i < c.width; ++i)
      dst[c.dst_offset + r * c.dst_pitch + i] = src[c.src_offset + r * c.src_pitch + i];
}

MatmulPlan plan_matmul(const Shape& a, const Shape& b, const Shape& out) {
  MatmulPlan p;
  p.m = a[a.size() - 2];
  p.k = a[a.size() - 1];
  p.n = b[b.size() - 1];
  const size_t batch_rank = out.size() - 2;
  const Shape batch_shape(out.begin(), out.begin() + batch_rank);
  p.batch = num_elements(batch_shape);
  // Same rule as ops::eval_matmul: batch dims align from the right, size 1 broadcasts.
  auto matrix_offset = [&](const Shape& t, const std::vector<int64_t>& bidx) {
    const size_t t_batch = t.size() - 2, lead = batch_rank - t_batch;
    int64_t off = 0, stride = t[t.size() - 2] * t[t.size() - 1];
    for (size_t d = t_batch; d-- > 0;) {
      off += (t[d] == 1 ? 0 : bidx[d + lead]) * stride;
      stride *= t[d];
    }
    return off;
  };
  std::vector<int64_t> bidx;
  for (int64_t i = 0; i < p.batch; ++i) {
    unravel(i, batch_shape, bidx);
    p.offset_a.push_back(matrix_offset(a, bidx));
    p.offset_b.push_back(matrix_offset(b, bidx));
  }
  auto affine = [&](const std::vector<int64_t>& off, int64_t& stride) {
    stride = off.size() > 1 ? off[1] - off[0] : 0;
    for (size_t i = 0; i < off.size(); ++i)
      if (off[i] != off[0] + static_cast<int64_t>(i) * stride) return false;
    return off.empty() || off[0] == 0;
  };
  p.strided = affine(p.offset_a, p.stride_a) && affine(p.offset_b, p.stride_b);
  return p;
}

std::vector<float> run_matmul_host(const MatmulPlan& p, std::span<const float> a, std::span<const float> b) {
  std::vector<float> c(p.batch * p.m * p.n);
  for (int64_t t = 0; t < p.batch; ++t) {
    const int64_t ao = p.strided ? t * p.stride_a : p.offset_a[t];
    const int64_t bo = p.strided ? t * p.stride_b : p.offset_b[t];
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        float acc = 0;
        for (int64_t q = 0; q < p.k; ++q) acc += a[ao + i * p.k + q] * b[bo + q * p.n + j];
        c[(t * p.m + i) * p.n + j] = acc;
      }
  }
  return c;
}

WindowPlan plan_window(const Shape& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                       int64_t out_h, int64_t out_w) {
  const ops::Window wy = ops::window_1d(x[2], kh, sh, ph, "gpu window", {});
  const ops::Window wx = ops::window_1d(x[3], kw, sw, pw, "gpu window", {});
  WindowPlan p;
  p.pad_top = wy.pad_before;
  p.pad_left = wx.pad_before;
  // cuDNN pads both sides equally; that reproduces the vocabulary exactly when it gives the same
  // output extent (the extra trailing SAME element is then never inside a window).
  auto symmetric_fits = [](int64_t in, int64_t k, int64_t s, int64_t pad, int64_t out) {
    return in + 2 * pad >= k && (in + 2 * pad - k) / s + 1 == out;
  };
  if (symmetric_fits(x[2], kh, sh, p.pad_top, out_h) && symmetric_fits(x[3], kw, sw, p.pad_left, out_w)) {
    p.pad_h = p.pad_top;
    p.pad_w = p.pad_left;
    return p;
  }
  p.explicit_pad = true;
  p.padded_h = (out_h - 1) * sh + kh;
  p.padded_w = (out_w - 1) * sw + kw;
  return p;
}

ConvPlan plan_conv2d(AttrSpan attrs, const Shape& x, const Shape& w, const Shape& out) {
  ConvPlan p;
  p.groups = x[1] / w[1];
  const ops::ConvAttrs a = ops::conv_attrs(attrs);
  p.window = plan_window(x, ops::dilated_extent(w[2], a.dh), ops::dilated_extent(w[3], a.dw), a.sh, a.sw, a.ph, a.pw,
                         out[2], out[3]);
  if (p.window.explicit_pad)
    p.pad = Pad2dPlan{.planes = x[0] * x[1],
                      .in_h = x[2],
                      .in_w = x[3],
                      .out_h = p.window.padded_h,
                      .out_w = p.window.padded_w,
                      .top = p.window.pad_top,
                      .left = p.window.pad_left,
                      .fill = 0.0f};
  return p;
}

PoolPlan plan_pool_direct(bool is_max, AttrSpan attrs, const Shape& x, const Shape& out) {
  const ops::PoolAttrs a = ops::pool_attrs(attrs);
  const WindowPlan w = plan_window(x, a.kh, a.kw, a.sh, a.sw, a.ph, a.pw, out[2], out[3]);
  return PoolPlan{.planes = x[0] * x[1],
                  .in_h = x[2],
                  .in_w = x[3],
                  .out_h = out[2],
                  .out_w = out[3],
                  .kh = a.kh,
                  .kw = a.kw,
                  .sh = a.sh,
                  .sw = a.sw,
                  .pad_top = w.pad_top,
                  .pad_left = w.pad_left,
                  .mode = is_max ? 0 : (a.include_pad ? 1 : 2)};
}

std::vector<float> run_pool_host(const PoolPlan& p, std::span<const float> in) {
  std::vector<float> out(p.planes * p.out_h * p.out_w);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = pool_value(p, static_cast<int64_t>(i), [&](int64_t j) { return in[j]; });
  return out;
}

Pad2dPlan plan_enlarge(AttrSpan attrs, const Shape& w) {
  const ops::EnlargeAttrs e = ops::enlarge_attrs(attrs);
  return Pad2dPlan{.planes = w[0] * w[1],
                   .in_h = w[2],
                   .in_w = w[3],
                   .out_h = e.kh,
                   .out_w = e.kw,
                   .top = (e.kh - w[2]) / 2,
                   .left = (e.kw - w[3]) / 2,
                   .fill = 0.0f};
}

std::vector<float> run_pad2d_host(const Pad2dPlan& p, std::span<const float> in) {
  std::vector<float> out(p.planes * p.out_h * p.out_w);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t src = pad2d_source(p, static_cast<int64_t>(i));
    out[i] = src < 0 ? p.fill : in[src];
  }
  return out;
}

}  // namespace teq::gpu
