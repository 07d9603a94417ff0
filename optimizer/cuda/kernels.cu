#include "optimizer/cuda/kernels.h"

#include <stdexcept>
#include <string>

namespace teq::gpu::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 4 ? 65535 * 4 : b));  // grid-stride loops do the rest
}

void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("gpu kernel ") + what + ": " + cudaGetErrorString(e));
}

#define TEQ_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

__device__ inline float apply_unary(Unary fn, float x) {
  switch (fn) {
    case Unary::Relu: return x > 0.0f ? x : 0.0f;
    case Unary::Tanh: return tanhf(x);
    case Unary::Sigmoid: return 1.0f / (1.0f + expf(-x));
    case Unary::Gelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case Unary::Sqrt: return sqrtf(x);
    case Unary::Erf: return erff(x);
    case Unary::GeluTanh: return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case Unary::Neg: return -x;
    case Unary::Reciprocal: return 1.0f / x;
    case Unary::NanToZero: return isnan(x) ? 0.0f : x;
    case Unary::Cos: return cosf(x);
    case Unary::Sin: return sinf(x);
  }
  return x;
}

__global__ void binary_kernel(Binary op, const float* a, const float* b, float* out, int64_t n) {
  TEQ_GRID_LOOP(i, n) {
    const float x = a[i], y = b[i];
    switch (op) {
      case Binary::Add: out[i] = x + y; break;
      case Binary::Sub: out[i] = x - y; break;
      case Binary::Mul: out[i] = x * y; break;
      case Binary::Div: out[i] = x / y; break;
    }
  }
}

__global__ void smul_kernel(const float* x, const float* s, float* out, int64_t n) {
  const float scale = *s;
  TEQ_GRID_LOOP(i, n) out[i] = x[i] * scale;
}

__global__ void unary_kernel(Unary fn, const float* x, float* out, int64_t n) {
  TEQ_GRID_LOOP(i, n) out[i] = apply_unary(fn, x[i]);
}

__global__ void gather_kernel(GatherPlan plan, const float* in, float* out) {
  TEQ_GRID_LOOP(i, plan.count) out[i] = in[gather_source(plan, i)];
}

__global__ void pad2d_kernel(Pad2dPlan plan, const float* in, float* out, int64_t n) {
  TEQ_GRID_LOOP(i, n) {
    const int64_t src = pad2d_source(plan, i);
    out[i] = src < 0 ? plan.fill : in[src];
  }
}

__global__ void pool_kernel(PoolPlan plan, const float* in, float* out, int64_t n) {
  TEQ_GRID_LOOP(i, n) out[i] = pool_value(plan, i, [in](int64_t j) { return in[j]; });
}

// One block per plane; a shared-memory tree reduction.
__global__ void global_avgpool_kernel(const float* in, float* out, int64_t planes, int64_t hw) {
  __shared__ float partial[kThreads];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    float acc = 0;
    for (int64_t j = threadIdx.x; j < hw; j += blockDim.x) acc += in[p * hw + j];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[p] = partial[0] / static_cast<float>(hw);
    __syncthreads();
  }
}

__global__ void batchnorm_kernel(const float* x, const float* scale, const float* bias, const float* mean,
                                 const float* var, float* y, int64_t n, int64_t channels, int64_t inner) {
  TEQ_GRID_LOOP(i, n) {
    const int64_t c = (i / inner) % channels;
    y[i] = (x[i] - mean[c]) * scale[c] * rsqrtf(var[c]) + bias[c];
  }
}

__global__ void fill_kernel(float* out, int64_t n, float value) {
  TEQ_GRID_LOOP(i, n) out[i] = value;
}

__device__ inline uint64_t mix64(uint64_t z) {  // splitmix64 finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void fill_random_kernel(float* out, int64_t n, uint64_t seed, float lo, float hi) {
  TEQ_GRID_LOOP(i, n) {
    const uint64_t r = mix64(seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(i));
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // 24 bits -> [0, 1)
    out[i] = lo + (hi - lo) * u;
  }
}

__global__ void eye_kernel(float* out, int64_t n) {
  TEQ_GRID_LOOP(i, n * n) out[i] = (i / n == i % n) ? 1.0f : 0.0f;
}

__global__ void iconv_kernel(float* out, int64_t channels, int64_t kh, int64_t kw) {
  const int64_t total = channels * channels * kh * kw;
  TEQ_GRID_LOOP(i, total) {
    const int64_t x = i % kw, y = (i / kw) % kh, ci = (i / (kw * kh)) % channels, co = i / (kw * kh * channels);
    out[i] = (co == ci && y == kh / 2 && x == kw / 2) ? 1.0f : 0.0f;
  }
}

}  // namespace

void binary(Binary op, const float* a, const float* b, float* out, int64_t n, cudaStream_t stream) {
  binary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, a, b, out, n);
  check_launch("binary");
}

void smul(const float* x, const float* s, float* out, int64_t n, cudaStream_t stream) {
  smul_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, s, out, n);
  check_launch("smul");
}

void unary(Unary fn, const float* x, float* out, int64_t n, cudaStream_t stream) {
  unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(fn, x, out, n);
  check_launch("unary");
}

void activate_inplace(int64_t act, float* x, int64_t n, cudaStream_t stream) {
  switch (act) {
    case 0: return;
    case 1: unary(Unary::Sigmoid, x, x, n, stream); return;
    case 2: unary(Unary::Relu, x, x, n, stream); return;
    case 3: unary(Unary::Tanh, x, x, n, stream); return;
  }
  throw std::runtime_error("gpu: unknown fused activation " + std::to_string(act));
}

void gather(const GatherPlan& plan, const float* in, float* out, cudaStream_t stream) {
  gather_kernel<<<blocks_for(plan.count), kThreads, 0, stream>>>(plan, in, out);
  check_launch("gather");
}

void pad2d(const Pad2dPlan& plan, const float* in, float* out, cudaStream_t stream) {
  const int64_t n = plan.planes * plan.out_h * plan.out_w;
  pad2d_kernel<<<blocks_for(n), kThreads, 0, stream>>>(plan, in, out, n);
  check_launch("pad2d");
}

void pool_direct(const PoolPlan& plan, const float* in, float* out, cudaStream_t stream) {
  const int64_t n = plan.planes * plan.out_h * plan.out_w;
  pool_kernel<<<blocks_for(n), kThreads, 0, stream>>>(plan, in, out, n);
  check_launch("pool");
}

void global_avgpool(const float* in, float* out, int64_t planes, int64_t hw, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(planes < 65535 ? (planes < 1 ? 1 : planes) : 65535);
  global_avgpool_kernel<<<grid, kThreads, 0, stream>>>(in, out, planes, hw);
  check_launch("global_avgpool");
}

void batchnorm(const float* x, const float* scale, const float* bias, const float* mean, const float* var, float* y,
               int64_t outer, int64_t channels, int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * channels * inner;
  batchnorm_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, scale, bias, mean, var, y, n, channels, inner);
  check_launch("batchnorm");
}

void fill(float* out, int64_t n, float value, cudaStream_t stream) {
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, value);
  check_launch("fill");
}

void fill_random(float* out, int64_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  fill_random_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, seed, lo, hi);
  check_launch("fill_random");
}

void eye(float* out, int64_t n, cudaStream_t stream) {
  eye_kernel<<<blocks_for(n * n), kThreads, 0, stream>>>(out, n);
  check_launch("eye");
}

void iconv(float* out, int64_t channels, int64_t kh, int64_t kw, cudaStream_t stream) {
  iconv_kernel<<<blocks_for(channels * channels * kh * kw), kThreads, 0, stream>>>(out, channels, kh, kw);
  check_launch("iconv");
}

}  // namespace teq::gpu::kernels
