// Steps per operator: the GPU implementation of each vocabulary operator (meaning: rules/ops/*.h).
#include <cstring>
#include <string>

#include "optimizer/cuda/detail/gpu_context.h"
#include "optimizer/cuda/gpu_plan.h"
#include "rules/ops/conv.h"
#include "optimizer/cuda/kernels.h"
#include "rules/ops/layout.h"
#include "rules/ops/matmul.h"
#include "rules/ops/norm.h"
#include "rules/ops/opaque.h"
#include "rules/ops/pool.h"
#include "rules/semantics.h"

namespace teq::gpu::detail {
namespace {

const float kOne = 1.0f;
const float kZero = 0.0f;

/// A tensor of any rank as cuDNN's [n, c, h, w] with the channel axis `axis` (the rest folded).
void set_around_axis(TensorDesc& desc, const Shape& s, int64_t axis) {
  const AxisSplit a = split_at_axis(s, axis);
  desc.set(a.outer, a.extent, a.inner, 1);
}

/// Flat view [1, 1, 1, n] for element-wise cuDNN calls.
void set_flat(TensorDesc& desc, const Shape& s) { desc.set(1, 1, 1, num_elements(s)); }

std::string conv_key(const Shape& x, const Shape& w, const Shape& y, const ConvPlan& p, AttrSpan attrs, bool tf32) {
  return to_string(x) + to_string(w) + to_string(y) + "/" + std::to_string(p.window.pad_h) + "," +
         std::to_string(p.window.pad_w) + "," + std::to_string(ops::conv_attrs(attrs).sh) + "," +
         std::to_string(ops::conv_attrs(attrs).sw) + "," +
         std::to_string(p.groups) + (tf32 ? "/tf32" : "/fp32");
}

cudnnActivationMode_t activation_mode(int64_t act) {
  switch (act) {
    case 1: return CUDNN_ACTIVATION_SIGMOID;
    case 2: return CUDNN_ACTIVATION_RELU;
    case 3: return CUDNN_ACTIVATION_TANH;
  }
  throw GpuError("gpu: no cuDNN activation for code " + std::to_string(act));
}

void copy2d(const Copy2d& c, const float* src, float* dst, cudaStream_t stream) {
  if (c.rows == 0 || c.width == 0) return;
  if (c.rows == 1 || (c.width == c.src_pitch && c.width == c.dst_pitch)) {  // contiguous: one plain copy
    TEQ_GPU_CHECK(cudaMemcpyAsync(dst + c.dst_offset, src + c.src_offset, c.rows * c.width * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream));
    return;
  }
  TEQ_GPU_CHECK(cudaMemcpy2DAsync(dst + c.dst_offset, c.dst_pitch * sizeof(float), src + c.src_offset,
                                  c.src_pitch * sizeof(float), c.width * sizeof(float), c.rows,
                                  cudaMemcpyDeviceToDevice, stream));
}

// ---- cuDNN convolution ----------------------------------------------------------------------------

struct ConvState {
  ConvPlan plan;
  TensorDesc x, y, bias;
  FilterDesc w;
  ConvDesc conv;
  std::unique_ptr<ActivationDesc> act;
  ConvAlgo algo;
  int64_t activation = 0;
  bool fused = false;  // cudnnConvolutionBiasActivationForward with a zero bias (relu only)
  float* padded = nullptr;
  float* zero_bias = nullptr;
};

ConvAlgo choose_conv_algo(Context& ctx, ConvState& s, const float* x, const float* w, float* y) {
  int max_count = 0;
  TEQ_GPU_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.cudnn, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(max_count, 1));
  int returned = 0;
  const size_t limit = static_cast<size_t>(ctx.options.workspace_limit_bytes);
  if (ctx.options.conv_algo_search) {
    if (!ctx.search_workspace) ctx.search_workspace = device_alloc(limit);
    TEQ_GPU_CHECK(cudnnFindConvolutionForwardAlgorithmEx(ctx.cudnn, s.x.d, x, s.w.d, w, s.conv.d, s.y.d, y,
                                                         static_cast<int>(perf.size()), &returned, perf.data(),
                                                         ctx.search_workspace.get(), limit));
  } else {
    TEQ_GPU_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, s.x.d, s.w.d, s.conv.d, s.y.d,
                                                         static_cast<int>(perf.size()), &returned, perf.data()));
  }
  for (int i = 0; i < returned; ++i) {  // both calls sort fastest first
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit) continue;
    ConvAlgo a{.algo = perf[i].algo, .workspace_bytes = 0};
    TEQ_GPU_CHECK(
        cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, s.x.d, s.w.d, s.conv.d, s.y.d, a.algo, &a.workspace_bytes));
    return a;
  }
  throw GpuError("gpu: cuDNN found no convolution algorithm within the workspace limit");
}

void build_conv2d(Context& ctx, Plan& plan, AttrSpan attrs, const std::vector<Shape>& in, const Shape& out,
                  const float* x, const float* w, float* y, std::vector<Step>& steps) {
  auto s = std::make_shared<ConvState>();
  s->plan = plan_conv2d(attrs, in[0], in[1], out);
  const ops::ConvAttrs a = ops::conv_attrs(attrs);
  s->activation = static_cast<int64_t>(a.act);
  const Shape& xs = in[0];
  const Shape& ws = in[1];
  const float* conv_in = x;
  if (s->plan.window.explicit_pad) {
    s->padded = plan.alloc(s->plan.pad.planes * s->plan.pad.out_h * s->plan.pad.out_w);
    s->x.set(xs[0], xs[1], s->plan.pad.out_h, s->plan.pad.out_w);
    conv_in = s->padded;
  } else {
    s->x.set(xs[0], xs[1], xs[2], xs[3]);
  }
  TEQ_GPU_CHECK(cudnnSetFilter4dDescriptor(s->w.d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_int(ws[0], "O"),
                                           to_int(ws[1], "C/g"), to_int(ws[2], "KH"), to_int(ws[3], "KW")));
  TEQ_GPU_CHECK(cudnnSetConvolution2dDescriptor(s->conv.d, to_int(s->plan.window.pad_h, "pad"),
                                                to_int(s->plan.window.pad_w, "pad"), to_int(a.sh, "stride"),
                                                to_int(a.sw, "stride"), to_int(a.dh, "dilation"),
                                                to_int(a.dw, "dilation"), CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
  TEQ_GPU_CHECK(cudnnSetConvolutionGroupCount(s->conv.d, to_int(s->plan.groups, "groups")));
  TEQ_GPU_CHECK(cudnnSetConvolutionMathType(s->conv.d, ctx.options.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int n = 0, c = 0, h = 0, wd = 0;
  TEQ_GPU_CHECK(cudnnGetConvolution2dForwardOutputDim(s->conv.d, s->x.d, s->w.d, &n, &c, &h, &wd));
  if (Shape{n, c, h, wd} != out)
    throw GpuError("gpu: cuDNN convolution output " + to_string(Shape{n, c, h, wd}) + " differs from " +
                   to_string(out));
  s->y.set(out[0], out[1], out[2], out[3]);
  // The padded copy must exist before the algorithm search runs the convolution on it.
  const std::string key = conv_key(xs, ws, out, s->plan, attrs, ctx.options.tf32);
  auto cached = ctx.conv_algos.find(key);
  s->algo = cached != ctx.conv_algos.end() ? cached->second
                                           : ctx.conv_algos.emplace(key, choose_conv_algo(ctx, *s, conv_in, w, y))
                                                 .first->second;
  plan.workspace_bytes = std::max(plan.workspace_bytes, s->algo.workspace_bytes);
  if (s->activation != 0) s->act = std::make_unique<ActivationDesc>(activation_mode(s->activation));
  if (s->activation == 2) {  // relu fuses into the convolution (a zero bias, alpha2 = 0)
    s->fused = true;
    s->zero_bias = plan.alloc(out[1]);
    TEQ_GPU_CHECK(cudaMemsetAsync(s->zero_bias, 0, out[1] * sizeof(float), ctx.stream));
    s->bias.set(1, out[1], 1, 1);
  }
  Context* cx = &ctx;
  Plan* pl = &plan;
  steps.push_back([cx, pl, s, x, w, y, conv_in] {
    if (s->plan.window.explicit_pad) kernels::pad2d(s->plan.pad, x, s->padded, cx->stream);
    if (s->fused) {
      cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
          cx->cudnn, &kOne, s->x.d, conv_in, s->w.d, w, s->conv.d, s->algo.algo, pl->workspace_ptr(),
          s->algo.workspace_bytes, &kZero, s->y.d, y, s->bias.d, s->zero_bias, s->act->d, s->y.d, y);
      if (st == CUDNN_STATUS_SUCCESS) return;
      // No fused form for this problem or algorithm: convolution, then activation, from now on. A real
      // failure shows up again, with its own message, in the unfused calls.
      s->fused = false;
    }
    TEQ_GPU_CHECK(cudnnConvolutionForward(cx->cudnn, &kOne, s->x.d, conv_in, s->w.d, w, s->conv.d, s->algo.algo,
                                          pl->workspace_ptr(), s->algo.workspace_bytes, &kZero, s->y.d, y));
    if (s->act) TEQ_GPU_CHECK(cudnnActivationForward(cx->cudnn, s->act->d, &kOne, s->y.d, y, &kZero, s->y.d, y));
  });
}

// ---- cuBLAS matmul ---------------------------------------------------------------------------------

struct MatmulState {
  MatmulPlan plan;
  int64_t activation = 0;
  DeviceMemory pointers;  // A, B, C pointer arrays for the general broadcast case
};

void build_matmul(Context& ctx, Plan& plan, AttrSpan attrs, const std::vector<Shape>& in, const Shape& out,
                  const float* a, const float* b, float* c, std::vector<Step>& steps) {
  auto s = std::make_shared<MatmulState>();
  s->plan = plan_matmul(in[0], in[1], out);
  s->activation = static_cast<int64_t>(ops::matmul_activation(attrs));
  const MatmulPlan& p = s->plan;
  if (!p.strided) {
    std::vector<const float*> host(3 * p.batch);
    for (int64_t i = 0; i < p.batch; ++i) {
      host[i] = a + p.offset_a[i];
      host[p.batch + i] = b + p.offset_b[i];
      host[2 * p.batch + i] = c + i * p.m * p.n;
    }
    s->pointers = device_alloc(host.size() * sizeof(float*));
    TEQ_GPU_CHECK(cudaMemcpy(s->pointers.get(), host.data(), host.size() * sizeof(float*), cudaMemcpyHostToDevice));
  }
  const int m = to_int(p.m, "m"), n = to_int(p.n, "n"), k = to_int(p.k, "k"), batch = to_int(p.batch, "batch");
  const int64_t out_elems = num_elements(out);
  Context* cx = &ctx;
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, keep both untransposed.
  steps.push_back([cx, s, a, b, c, m, n, k, batch, out_elems] {
    const MatmulPlan& p = s->plan;
    if (p.strided) {
      TEQ_GPU_CHECK(cublas_api().sgemm_strided_batched(cx->cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &kOne, b, n,
                                              p.stride_b, a, k, p.stride_a, &kZero, c, n, p.m * p.n, batch));
    } else {
      auto** ptrs = static_cast<const float**>(s->pointers.get());
      TEQ_GPU_CHECK(cublas_api().sgemm_batched(cx->cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &kOne, ptrs + p.batch, n,
                                       ptrs, k, &kZero, const_cast<float**>(ptrs + 2 * p.batch), n, batch));
    }
    kernels::activate_inplace(s->activation, c, out_elems, cx->stream);
  });
}

// ---- cuDNN pooling ----------------------------------------------------------------------------------

struct PoolState {
  TensorDesc x, y;
  PoolDesc pool;
};

void build_pool(Context& ctx, bool is_max, AttrSpan attrs, const Shape& xs, const Shape& out, const float* x,
                float* y, std::vector<Step>& steps) {
  const ops::PoolAttrs a = ops::pool_attrs(attrs);
  const WindowPlan w = plan_window(xs, a.kh, a.kw, a.sh, a.sw, a.ph, a.pw, out[2], out[3]);
  Context* cx = &ctx;
  if (w.explicit_pad) {  // asymmetric SAME padding: cuDNN cannot express it
    PoolPlan direct = plan_pool_direct(is_max, attrs, xs, out);
    steps.push_back([cx, direct, x, y] { kernels::pool_direct(direct, x, y, cx->stream); });
    return;
  }
  auto s = std::make_shared<PoolState>();
  s->x.set(xs[0], xs[1], xs[2], xs[3]);
  s->y.set(out[0], out[1], out[2], out[3]);
  const cudnnPoolingMode_t mode = is_max          ? CUDNN_POOLING_MAX
                                  : a.include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  TEQ_GPU_CHECK(cudnnSetPooling2dDescriptor(s->pool.d, mode, CUDNN_NOT_PROPAGATE_NAN, to_int(a.kh, "kh"),
                                            to_int(a.kw, "kw"), to_int(w.pad_h, "pad"), to_int(w.pad_w, "pad"),
                                            to_int(a.sh, "stride"), to_int(a.sw, "stride")));
  int n = 0, c = 0, h = 0, wd = 0;
  TEQ_GPU_CHECK(cudnnGetPooling2dForwardOutputDim(s->pool.d, s->x.d, &n, &c, &h, &wd));
  if (Shape{n, c, h, wd} != out) {
    PoolPlan direct = plan_pool_direct(is_max, attrs, xs, out);
    steps.push_back([cx, direct, x, y] { kernels::pool_direct(direct, x, y, cx->stream); });
    return;
  }
  steps.push_back([cx, s, x, y] {
    TEQ_GPU_CHECK(cudnnPoolingForward(cx->cudnn, s->pool.d, &kOne, s->x.d, x, &kZero, s->y.d, y));
  });
}

}  // namespace

// ---- batch normalization ---------------------------------------------------------------------------

void build_batchnorm(Context& ctx, const Shape& shape, const std::vector<const float*>& arg, float* y,
                     std::vector<Step>& out) {
  Context* cx = &ctx;
  auto xd = std::make_shared<TensorDesc>();
  auto bn = std::make_shared<TensorDesc>();
  set_around_axis(*xd, shape, 1);
  TEQ_GPU_CHECK(cudnnDeriveBNTensorDescriptor(bn->d, xd->d, CUDNN_BATCHNORM_SPATIAL));
  const std::vector<const float*> a = arg;
  const AxisSplit split = split_at_axis(shape, 1);
  auto use_kernel = std::make_shared<bool>(false);
  // The vocabulary folds epsilon into `var`, so cuDNN gets epsilon 0 (CUDNN_BN_MIN_EPSILON is 0 in
  // cuDNN 9). Should a cuDNN build refuse that, the runtime's own kernel takes over.
  out.push_back([cx, xd, bn, a, y, split, use_kernel] {
    if (!*use_kernel) {
      const cudnnStatus_t status = cudnnBatchNormalizationForwardInference(
          cx->cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, xd->d, a[0], xd->d, y, bn->d, a[1], a[2], a[3], a[4],
          CUDNN_BN_MIN_EPSILON);
      if (status == CUDNN_STATUS_SUCCESS) return;
      if (status != CUDNN_STATUS_BAD_PARAM && status != CUDNN_STATUS_NOT_SUPPORTED)
        check(status, "cudnnBatchNormalizationForwardInference");
      *use_kernel = true;
    }
    kernels::batchnorm(a[0], a[1], a[2], a[3], a[4], y, split.outer, split.extent, split.inner, cx->stream);
  });
}

// ---- one node's steps, per operator ---------------------------------------------------------------

namespace {

/// What building one node's steps reads and writes. Steps capture values, never this.
struct NodeBuild {
  Context& cx;
  Plan& plan;
  OpKind op;
  AttrSpan attrs;
  std::vector<Shape> in;
  std::vector<const float*> arg;
  const Shape& shape;
  int64_t count;
  float* y;
  cudaStream_t st;
  std::vector<Step>& out;
};

/// The steps of each operator with a GPU implementation, one specialization each (`build`); an operator
/// without one has none, and build_node says so.
template <OpKind K>
struct GpuOp {};

template <kernels::Binary F>
struct BinaryOp {
  static void build(NodeBuild& b) {
    const float *a = b.arg[0], *c = b.arg[1];
    float* y = b.y;
    const int64_t count = b.count;
    cudaStream_t st = b.st;
    b.out.push_back([=] { kernels::binary(F, a, c, y, count, st); });
  }
};
template <kernels::Unary F>
struct UnaryOp {
  static void build(NodeBuild& b) {
    const float* x = b.arg[0];
    float* y = b.y;
    const int64_t count = b.count;
    cudaStream_t st = b.st;
    b.out.push_back([=] { kernels::unary(F, x, y, count, st); });
  }
};
template <cudnnActivationMode_t Mode>
struct CudnnActivationOp {
  static void build(NodeBuild& b) {
    auto desc = std::make_shared<ActivationDesc>(Mode);
    auto t = std::make_shared<TensorDesc>();
    set_flat(*t, b.shape);
    Context* cx = &b.cx;
    const float* x = b.arg[0];
    float* y = b.y;
    b.out.push_back([cx, desc, t, x, y] {
      TEQ_GPU_CHECK(cudnnActivationForward(cx->cudnn, desc->d, &kOne, t->d, x, &kZero, t->d, y));
    });
  }
};
/// A constant shaped after its reference with one value in every element.
struct FillOp {
  static void fill(NodeBuild& b, float v) {
    float* y = b.y;
    const int64_t count = b.count;
    cudaStream_t st = b.st;
    b.out.push_back([=] { kernels::fill(y, count, v, st); });
  }
};
/// No step: a leaf's buffer is filled by the caller; a view's output aliases its first input (Plan compile).
struct NoStep {
  static void build(NodeBuild&) {}
};
/// One planned copy of the first operand into the output: `Make` plans it, `Run` runs the plan (a gather for
/// broadcast and transpose, a strided copy for split and slice, a padding for enlarge).
template <auto Make, auto Run>
struct PlannedCopyOp {
  static void build(NodeBuild& b) {
    const auto plan = Make(b);
    const float* x = b.arg[0];
    float* y = b.y;
    cudaStream_t st = b.st;
    b.out.push_back([=] { Run(plan, x, y, st); });
  }
};
void run_gather(const GatherPlan& g, const float* x, float* y, cudaStream_t st) { kernels::gather(g, x, y, st); }
void run_copy(const Copy2d& c, const float* x, float* y, cudaStream_t st) { copy2d(c, x, y, st); }
void run_pad(const Pad2dPlan& p, const float* x, float* y, cudaStream_t st) { kernels::pad2d(p, x, y, st); }
GatherPlan broadcast_plan(const NodeBuild& b) { return plan_broadcast(b.in[0], b.shape); }
GatherPlan transpose_plan(const NodeBuild& b) { return plan_transpose(b.in[0], b.attrs); }
Pad2dPlan enlarge_plan(const NodeBuild& b) { return plan_enlarge(b.attrs, b.in[0]); }
Copy2d split_copy(const NodeBuild& b) {
  const ops::SplitRange r = ops::split_range(b.attrs, b.in[0], b.in[1]);
  return plan_slice_copy(b.in[0], r.axis, r.begin, r.end);
}
Copy2d slice_copy(const NodeBuild& b) {
  const ops::SliceAttrs sl = ops::slice_attrs(b.attrs);
  return plan_slice_copy(b.in[0], normalize_axis(sl.axis, b.in[0].size(), "slice", b.in), sl.begin, sl.end);
}

template <> struct GpuOp<OpKind::Var> : NoStep {};
template <> struct GpuOp<OpKind::Input> : NoStep {};
template <> struct GpuOp<OpKind::Weight> : NoStep {};
template <> struct GpuOp<OpKind::Noop> : NoStep {};
template <> struct GpuOp<OpKind::Reshape> : NoStep {};
template <> struct GpuOp<OpKind::EwAdd> : BinaryOp<kernels::Binary::Add> {};
template <> struct GpuOp<OpKind::EwSub> : BinaryOp<kernels::Binary::Sub> {};
template <> struct GpuOp<OpKind::EwMul> : BinaryOp<kernels::Binary::Mul> {};
template <> struct GpuOp<OpKind::EwDiv> : BinaryOp<kernels::Binary::Div> {};
template <> struct GpuOp<OpKind::Relu> : CudnnActivationOp<CUDNN_ACTIVATION_RELU> {};
template <> struct GpuOp<OpKind::Tanh> : CudnnActivationOp<CUDNN_ACTIVATION_TANH> {};
template <> struct GpuOp<OpKind::Sigmoid> : CudnnActivationOp<CUDNN_ACTIVATION_SIGMOID> {};
template <> struct GpuOp<OpKind::Gelu> : UnaryOp<kernels::Unary::Gelu> {};
template <> struct GpuOp<OpKind::Sqrt> : UnaryOp<kernels::Unary::Sqrt> {};
template <> struct GpuOp<OpKind::Erf> : UnaryOp<kernels::Unary::Erf> {};
template <> struct GpuOp<OpKind::GeluTanh> : UnaryOp<kernels::Unary::GeluTanh> {};
template <> struct GpuOp<OpKind::Neg> : UnaryOp<kernels::Unary::Neg> {};
template <> struct GpuOp<OpKind::Reciprocal> : UnaryOp<kernels::Unary::Reciprocal> {};
template <> struct GpuOp<OpKind::NanToZero> : UnaryOp<kernels::Unary::NanToZero> {};
template <> struct GpuOp<OpKind::Cos> : UnaryOp<kernels::Unary::Cos> {};
template <> struct GpuOp<OpKind::Sin> : UnaryOp<kernels::Unary::Sin> {};
template <> struct GpuOp<OpKind::Broadcast> : PlannedCopyOp<broadcast_plan, run_gather> {};
template <> struct GpuOp<OpKind::Transpose> : PlannedCopyOp<transpose_plan, run_gather> {};
template <> struct GpuOp<OpKind::Split> : PlannedCopyOp<split_copy, run_copy> {};
template <> struct GpuOp<OpKind::Slice> : PlannedCopyOp<slice_copy, run_copy> {};
template <> struct GpuOp<OpKind::Enlarge> : PlannedCopyOp<enlarge_plan, run_pad> {};
template <>
struct GpuOp<OpKind::Smul> {
  static void build(NodeBuild& b) {
    const float *x = b.arg[0], *s = b.arg[1];
    float* y = b.y;
    const int64_t count = b.count;
    cudaStream_t st = b.st;
    b.out.push_back([=] { kernels::smul(x, s, y, count, st); });
  }
};
template <>
struct GpuOp<OpKind::Matmul> {
  static void build(NodeBuild& b) {
    build_matmul(b.cx, b.plan, b.attrs, b.in, b.shape, b.arg[0], b.arg[1], b.y, b.out);
  }
};
template <>
struct GpuOp<OpKind::Conv2d> {
  static void build(NodeBuild& b) {
    build_conv2d(b.cx, b.plan, b.attrs, b.in, b.shape, b.arg[0], b.arg[1], b.y, b.out);
  }
};
template <>
struct GpuOp<OpKind::Merge> {
  static void build(NodeBuild& b) {
    const std::vector<Copy2d> copies = plan_merge_copies(b.in[0], ops::merge_count(b.attrs));
    const float* x = b.arg[0];
    float* y = b.y;
    const int64_t count = b.count;
    cudaStream_t st = b.st;
    b.out.push_back([=] {
      kernels::fill(y, count, 0.0f, st);
      for (const Copy2d& c : copies) copy2d(c, x, y, st);
    });
  }
};
template <>
struct GpuOp<OpKind::MaxPool> {
  static void build(NodeBuild& b) { build_pool(b.cx, true, b.attrs, b.in[0], b.shape, b.arg[0], b.y, b.out); }
};
template <>
struct GpuOp<OpKind::AvgPool> {
  static void build(NodeBuild& b) { build_pool(b.cx, false, b.attrs, b.in[0], b.shape, b.arg[0], b.y, b.out); }
};
template <>
struct GpuOp<OpKind::GlobalAvgPool> {
  static void build(NodeBuild& b) {
    const float* x = b.arg[0];
    float* y = b.y;
    cudaStream_t st = b.st;
    const int64_t planes = b.in[0][0] * b.in[0][1], hw = b.in[0][2] * b.in[0][3];
    b.out.push_back([=] { kernels::global_avgpool(x, y, planes, hw, st); });
  }
};
template <>
struct GpuOp<OpKind::Concat> {
  static void build(NodeBuild& b) {
    const int64_t axis = normalize_axis(ops::concat_axis(b.attrs), b.shape.size(), "concat", b.in);
    const std::vector<Copy2d> copies = plan_concat_copies(b.in, axis);
    const std::vector<const float*> arg = b.arg;
    float* y = b.y;
    cudaStream_t st = b.st;
    b.out.push_back([=] {
      for (size_t i = 0; i < copies.size(); ++i) copy2d(copies[i], arg[i], y, st);
    });
  }
};
template <>
struct GpuOp<OpKind::BatchNorm> {
  static void build(NodeBuild& b) { build_batchnorm(b.cx, b.shape, b.arg, b.y, b.out); }
};
template <>
struct GpuOp<OpKind::Softmax> {
  static void build(NodeBuild& b) {
    auto t = std::make_shared<TensorDesc>();
    set_around_axis(*t, b.shape, normalize_axis(ops::softmax_axis(b.attrs), b.shape.size(), "softmax", b.in));
    Context* cx = &b.cx;
    const float* x = b.arg[0];
    float* y = b.y;
    b.out.push_back([cx, t, x, y] {
      TEQ_GPU_CHECK(cudnnSoftmaxForward(cx->cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne, t->d,
                                        x, &kZero, t->d, y));
    });
  }
};
// Constants shaped after a reference.
template <>
struct GpuOp<OpKind::Ones> {
  static void build(NodeBuild& b) { FillOp::fill(b, 1.0f); }
};
template <>
struct GpuOp<OpKind::PoolKernel> {
  static void build(NodeBuild& b) { FillOp::fill(b, 1.0f / static_cast<float>(b.shape[2] * b.shape[3])); }
};
template <>
struct GpuOp<OpKind::Eye> {
  static void build(NodeBuild& b) {
    float* y = b.y;
    cudaStream_t st = b.st;
    const int64_t n = b.shape[0];
    b.out.push_back([=] { kernels::eye(y, n, st); });
  }
};
template <>
struct GpuOp<OpKind::IConv> {
  static void build(NodeBuild& b) {
    float* y = b.y;
    cudaStream_t st = b.st;
    const int64_t c = b.shape[0], kh = b.shape[2], kw = b.shape[3];
    b.out.push_back([=] { kernels::iconv(y, c, kh, kw, st); });
  }
};
template <>
struct GpuOp<OpKind::Opaque> {
  static void build(NodeBuild& b) {
    throw GpuError("gpu: opaque operator #" + std::to_string(b.attrs.empty() ? -1 : ops::opaque_attrs(b.attrs).id) +
                   " is outside the vocabulary and has no GPU implementation");
  }
};
// Clip, Pad and ReduceMean have no GPU kernels yet: build_node's error.

template <OpKind K>
void build_steps(NodeBuild& b) {
  if constexpr (requires(NodeBuild& x) { GpuOp<K>::build(x); })
    GpuOp<K>::build(b);
  else
    throw GpuError("gpu: operator " + std::string(op_name(K)) + " has no GPU implementation");
}

}  // namespace

void Context::build_node(Plan& plan, const Expr& graph, size_t id, std::vector<Step>& out) {
  const ExprNode& node = graph.nodes()[id];
  NodeBuild b{.cx = *this, .plan = plan, .op = node.op, .attrs = node.attrs, .in = {}, .arg = {},
              .shape = plan.shapes[id], .count = num_elements(plan.shapes[id]), .y = plan.value[id],
              .st = stream, .out = out};
  for (ExprId c : node.children) {
    b.in.push_back(plan.shapes[c.value]);
    b.arg.push_back(plan.value[c.value]);
  }
  // One entry per line of op_list.inc.
  using Build = void (*)(NodeBuild&);
  static constexpr Build kByOperator[] = {
#define TEQ_OP(kind, ...) &build_steps<OpKind::kind>,
#include "rules/op_list.inc"
#undef TEQ_OP
  };
  kByOperator[static_cast<size_t>(node.op)](b);
}

}  // namespace teq::gpu::detail
