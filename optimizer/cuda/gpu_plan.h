// Host-side planning for the GPU runtime: how each operator maps onto a gather, a 2-d copy, a padded
// window copy, a (batched) GEMM or a cuDNN call with symmetric padding. Pure C++ and CUDA-free, so the
// CPU tests check every plan against evaluate<float> (tests/optimizer/gpu_plan_test.cpp); the runtime
// (gpu_runtime.cpp) only turns plans into library calls and kernel launches.
#pragma once

#include <span>
#include <vector>

#include "optimizer/cuda/gpu_index.h"
#include "rules/op.h"
#include "rules/shape.h"

namespace teq::gpu {

/// broadcast: numpy rules from `in` to `out` (leading dims added, size-1 dims repeated).
GatherPlan plan_broadcast(const Shape& in, const Shape& out);
/// transpose: out.dim(i) = in.dim(perm[i]).
GatherPlan plan_transpose(const Shape& in, AttrSpan perm);
/// Host emulation of the gather kernel (tests).
std::vector<float> run_gather_host(const GatherPlan& plan, std::span<const float> in);

/// A strided 2-d copy, in elements: `rows` rows of `width` elements from src + src_offset (row pitch
/// src_pitch) to dst + dst_offset (row pitch dst_pitch); cudaMemcpy2DAsync does it on the device.
struct Copy2d {
  int64_t rows = 0, width = 0, src_pitch = 0, dst_pitch = 0, src_offset = 0, dst_offset = 0;
};
/// [begin, end) along `axis` of a tensor of shape `in` (slice and split); axis already normalized.
Copy2d plan_slice_copy(const Shape& in, int64_t axis, int64_t begin, int64_t end);
/// One copy per operand of a concat along `axis` (normalized) into the output.
std::vector<Copy2d> plan_concat_copies(std::span<const Shape> ins, int64_t axis);
void run_copy2d_host(const Copy2d& c, const float* src, float* dst);
/// (merge count w) for w [O,I,kh,kw] into a zero-filled output: one copy per block of O/count output
/// channels, each into its own input block (the layout of rules/ops/conv.h eval_merge).
std::vector<Copy2d> plan_merge_copies(const Shape& w, int64_t count);

/// Batched GEMM over row-major operands with numpy batch broadcasting. When the batch offsets are
/// affine in the batch index (equal batch dims, or one side not batched) a strided batched GEMM
/// suffices; otherwise the runtime passes per-batch pointer arrays built from `offset_a/offset_b`.
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool strided = true;
  int64_t stride_a = 0, stride_b = 0;        // valid when strided
  std::vector<int64_t> offset_a, offset_b;   // per batch, always filled
};
MatmulPlan plan_matmul(const Shape& a, const Shape& b, const Shape& out);
/// Host emulation (tests): C = A * B per batch using the plan's offsets; no activation.
std::vector<float> run_matmul_host(const MatmulPlan& p, std::span<const float> a, std::span<const float> b);

/// Padding of one sliding-window operator as cuDNN needs it: symmetric padding when that yields the
/// vocabulary's output extent, otherwise an explicit padded copy of the input (Pad2dPlan) and padding 0.
struct WindowPlan {
  int64_t pad_h = 0, pad_w = 0;  // symmetric padding passed to cuDNN
  bool explicit_pad = false;      // pad the input first; then pad_h = pad_w = 0
  int64_t pad_top = 0, pad_left = 0;  // padding before the first element (vocabulary semantics)
  int64_t padded_h = 0, padded_w = 0; // extent of the explicitly padded input
};
/// x: [N,C,H,W]; kernel kh x kw, strides, padding attributes as in ops (-1 = SAME); out_h/out_w from
/// the vocabulary's shape function.
WindowPlan plan_window(const Shape& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                       int64_t out_h, int64_t out_w);

/// Conv2d as cuDNN sees it: groups from the shapes, padding from plan_window over the dilated kernel's extent
/// (the dilations themselves go to cuDNN's convolution descriptor).
struct ConvPlan {
  int64_t groups = 1;
  WindowPlan window;
  Pad2dPlan pad;  // valid when window.explicit_pad
};
ConvPlan plan_conv2d(AttrSpan attrs, const Shape& x, const Shape& w, const Shape& out);

/// Pooling directly from the vocabulary's attributes (used when cuDNN's symmetric padding does not fit).
PoolPlan plan_pool_direct(bool is_max, AttrSpan attrs, const Shape& x, const Shape& out);
std::vector<float> run_pool_host(const PoolPlan& p, std::span<const float> in);

/// enlarge as a centred zero-padded copy of the kernel.
Pad2dPlan plan_enlarge(AttrSpan attrs, const Shape& w);
std::vector<float> run_pad2d_host(const Pad2dPlan& p, std::span<const float> in);

}  // namespace teq::gpu
