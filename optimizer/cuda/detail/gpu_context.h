// Private to the GPU runtime: error checks for CUDA/cuDNN/cuBLAS, RAII device memory and descriptors,
// and the compiled form of a graph (Plan: one device buffer per node, a list of asynchronous steps).
// gpu_runtime.cpp compiles and runs plans; gpu_ops.cpp builds the steps of each operator.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "optimizer/cuda/gpu_runtime.h"

namespace teq::gpu::detail {

void check(cudaError_t status, const char* call);
void check(cudnnStatus_t status, const char* call);
void check(cublasStatus_t status, const char* call);
#define TEQ_GPU_CHECK(call) ::teq::gpu::detail::check((call), #call)

/// cuBLAS entry points, loaded with dlopen when the first GpuRuntime is created. Linking libcublas would
/// make every program that links teq_optimizer pay for mapping and relocating cuBLAS at start-up
/// (~0.15 s of CPU per process, paid by each of CI's test processes) although most never touch a GPU.
struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&::cublasSgemmBatched) sgemm_batched = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
};
/// Loads libcublas on first use; throws GpuError naming the files tried when it cannot.
const CublasApi& cublas_api();

/// Narrows a dimension for the int-typed cuDNN/cuBLAS interfaces; throws GpuError when it does not fit.
int to_int(int64_t v, const char* what);

struct CudaFree {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
using DeviceMemory = std::unique_ptr<void, CudaFree>;
DeviceMemory device_alloc(size_t bytes);

/// Owning cuDNN descriptors; each created on construction.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  void set(int64_t n, int64_t c, int64_t h, int64_t w);  // NCHW float
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc();
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc();
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};
struct PoolDesc {
  cudnnPoolingDescriptor_t d = nullptr;
  PoolDesc();
  ~PoolDesc();
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
};
struct ActivationDesc {
  cudnnActivationDescriptor_t d = nullptr;
  explicit ActivationDesc(cudnnActivationMode_t mode);
  ~ActivationDesc();
  ActivationDesc(const ActivationDesc&) = delete;
  ActivationDesc& operator=(const ActivationDesc&) = delete;
};

/// One asynchronous piece of work on the runtime's stream.
using Step = std::function<void()>;

/// A graph compiled for the device: buffers are allocated once, so timing repeats only the steps.
struct Plan {
  std::vector<Shape> shapes;          // per Expr node
  std::vector<float*> value;          // device pointer per node (nullptr where not needed)
  std::vector<bool> needed;           // reached from a root
  std::vector<bool> is_static;        // depends only on weights and constants
  std::vector<DeviceMemory> owned;
  std::vector<Step> prologue;         // weight-only work, run once before timing
  std::vector<Step> steps;            // the per-inference work
  DeviceMemory workspace;             // shared cuDNN workspace, sized after all steps are built
  size_t workspace_bytes = 0;

  float* alloc(int64_t elements);     // owned device buffer (at least one element)
  void* workspace_ptr() const { return workspace.get(); }
};

/// Chosen cuDNN convolution algorithm for one problem.
struct ConvAlgo {
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace_bytes = 0;
};

/// The runtime's handles and caches (GpuRuntime's pimpl).
struct Context {
  RuntimeOptions options;
  std::string device_name;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  std::map<std::string, ConvAlgo> conv_algos;  // by problem key
  DeviceMemory search_workspace;               // for cudnnFindConvolutionForwardAlgorithmEx

  /// Appends the steps computing node `id` of `graph` (whose children are planned) to `out`.
  void build_node(Plan& plan, const Expr& graph, size_t id, std::vector<Step>& out);
};

}  // namespace teq::gpu::detail
