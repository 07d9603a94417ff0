// The GPU runtime's own CUDA kernels (kernels.cu): element-wise math, gathers for broadcast and
// transpose, padded window copies, direct pooling, constants and reductions. cuDNN and cuBLAS do the
// rest (gpu_runtime.cpp). Every launcher is asynchronous on `stream` and throws std::runtime_error
// when the launch fails. Indices come from the plans in gpu_index.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "optimizer/cuda/gpu_index.h"

namespace teq::gpu::kernels {

enum class Binary : int { Add, Sub, Mul, Div };
enum class Unary : int { Relu, Tanh, Sigmoid, Gelu, Sqrt, Erf, GeluTanh, Neg, Reciprocal, NanToZero, Cos, Sin };

void binary(Binary op, const float* a, const float* b, float* out, int64_t n, cudaStream_t stream);
/// out = x * s[0] (s is a device scalar).
void smul(const float* x, const float* s, float* out, int64_t n, cudaStream_t stream);
void unary(Unary fn, const float* x, float* out, int64_t n, cudaStream_t stream);
/// Fused activation in place, codes as teq::Activation (0 none, 1 sigmoid, 2 relu, 3 tanh).
void activate_inplace(int64_t act, float* x, int64_t n, cudaStream_t stream);

void gather(const GatherPlan& plan, const float* in, float* out, cudaStream_t stream);
void pad2d(const Pad2dPlan& plan, const float* in, float* out, cudaStream_t stream);
void pool_direct(const PoolPlan& plan, const float* in, float* out, cudaStream_t stream);
/// out[p] = mean of in[p*hw .. (p+1)*hw).
void global_avgpool(const float* in, float* out, int64_t planes, int64_t hw, cudaStream_t stream);

/// y = (x - mean[c]) * scale[c] * rsqrt(var[c]) + bias[c] over x [outer, channels, inner].
void batchnorm(const float* x, const float* scale, const float* bias, const float* mean, const float* var, float* y,
               int64_t outer, int64_t channels, int64_t inner, cudaStream_t stream);

void fill(float* out, int64_t n, float value, cudaStream_t stream);
/// Uniform values in [lo, hi) from a counter-based hash of (seed, index): reproducible, no cuRAND.
void fill_random(float* out, int64_t n, uint64_t seed, float lo, float hi, cudaStream_t stream);
/// n x n identity.
void eye(float* out, int64_t n, cudaStream_t stream);
/// [C,C,kh,kw] identity convolution kernel: 1 at (c, c, kh/2, kw/2), 0 elsewhere.
void iconv(float* out, int64_t channels, int64_t kh, int64_t kw, cudaStream_t stream);

}  // namespace teq::gpu::kernels
