// Index arithmetic shared by the GPU kernels (kernels.cu) and the host code that plans them
// (gpu_plan.h): plain structs and __host__ __device__ functions in C++17, so nvcc compiles them into the
// kernels and the CPU tests run the very same functions against evaluate<float> without a GPU.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define TEQ_HD __host__ __device__
#else
#define TEQ_HD
#endif

namespace teq::gpu {

/// Highest tensor rank the gather kernels handle (the vocabulary's models stay far below it).
inline constexpr int kMaxRank = 8;

/// out[flat] = in[offset + sum_d idx_d * src_stride[d]], where idx is the row-major multi-index of
/// `flat` over `dims` (the output's shape). One plan covers broadcast (stride 0 on broadcast axes),
/// transpose (permuted strides) and slices (offset + input strides).
struct GatherPlan {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t src_stride[kMaxRank] = {};
  int64_t offset = 0;
  int64_t count = 0;  // output elements
};

TEQ_HD inline int64_t gather_source(const GatherPlan& p, int64_t flat) {
  int64_t src = p.offset;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t i = flat % p.dims[d];
    flat /= p.dims[d];
    src += i * p.src_stride[d];
  }
  return src;
}

/// A 2-d padded window copy over [planes, out_h, out_w] planes (NCHW with N*C planes):
/// out[p, y, x] = in[p, y - top, x - left] inside the input, `fill` outside. Used for explicit
/// (asymmetric SAME) padding before cuDNN, and for enlarge (centred zero padding of a kernel).
struct Pad2dPlan {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0, top = 0, left = 0;
  float fill = 0;
};

/// Source index of output element `flat`, or -1 where the output is padding.
TEQ_HD inline int64_t pad2d_source(const Pad2dPlan& p, int64_t flat) {
  const int64_t x = flat % p.out_w - p.left;
  const int64_t y = (flat / p.out_w) % p.out_h - p.top;
  const int64_t plane = flat / (p.out_w * p.out_h);
  if (y < 0 || y >= p.in_h || x < 0 || x >= p.in_w) return -1;
  return (plane * p.in_h + y) * p.in_w + x;
}

/// A pooling window evaluated directly (cuDNN handles only symmetric padding; SAME padding with an
/// odd total puts the extra element at the end). Mirrors ops::eval_pool.
struct PoolPlan {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, pad_top = 0, pad_left = 0;
  int mode = 0;  // 0 max, 1 average over kh*kw (include_pad), 2 average over the real elements
};

template <class Load>
TEQ_HD inline float pool_value(const PoolPlan& p, int64_t flat, Load load) {
  const int64_t ox = flat % p.out_w, oy = (flat / p.out_w) % p.out_h, plane = flat / (p.out_w * p.out_h);
  float acc = 0;
  int64_t count = 0;
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = oy * p.sh - p.pad_top + ky;
    if (iy < 0 || iy >= p.in_h) continue;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t ix = ox * p.sw - p.pad_left + kx;
      if (ix < 0 || ix >= p.in_w) continue;
      const float v = load((plane * p.in_h + iy) * p.in_w + ix);
      acc = count == 0 ? v : p.mode == 0 ? (v > acc ? v : acc) : acc + v;
      ++count;
    }
  }
  if (p.mode == 0) return acc;
  return acc / static_cast<float>(p.mode == 1 ? p.kh * p.kw : count);
}

}  // namespace teq::gpu
