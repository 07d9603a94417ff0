#include "optimizer/cuda/gpu_runtime.h"

#include <algorithm>
#include <dlfcn.h>

#include <climits>
#include <cstdio>
#include <mutex>

#include "optimizer/cuda/detail/gpu_context.h"
#include "optimizer/cuda/kernels.h"
#include "rules/evaluator.h"

namespace teq::gpu {
namespace detail {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw GpuError(std::string(call) + ": " + cudaGetErrorString(status));
}
void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) throw GpuError(std::string(call) + ": " + cudnnGetErrorString(status));
}
void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw GpuError(std::string(call) + ": " + cublas_api().status_string(status));
}

const CublasApi& cublas_api() {
  static CublasApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::vector<std::string> tried;
#ifdef TEQ_CUBLAS_DIR
    tried.push_back(std::string(TEQ_CUBLAS_DIR) + "/" + soname);
#endif
    tried.push_back(soname);
    tried.push_back("libcublas.so");
    void* lib = nullptr;
    std::string reasons;
    for (const std::string& name : tried) {
      if ((lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
      const char* why = dlerror();
      reasons += "\n  " + name + ": " + (why ? why : "not found");
    }
    if (!lib) {
      error = "gpu: cannot load cuBLAS:" + reasons;
      return;
    }
    auto load = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!fn && error.empty()) error = std::string("gpu: cuBLAS has no symbol ") + symbol;
    };
    load(api.create, "cublasCreate_v2");
    load(api.destroy, "cublasDestroy_v2");
    load(api.set_stream, "cublasSetStream_v2");
    load(api.set_math_mode, "cublasSetMathMode");
    load(api.sgemm_strided_batched, "cublasSgemmStridedBatched");
    load(api.sgemm_batched, "cublasSgemmBatched");
    load(api.status_string, "cublasGetStatusString");
  });
  if (!error.empty()) throw GpuError(error);
  return api;
}

int to_int(int64_t v, const char* what) {
  if (v < INT_MIN || v > INT_MAX) throw GpuError(std::string("gpu: ") + what + " = " + std::to_string(v) + " exceeds int");
  return static_cast<int>(v);
}

DeviceMemory device_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(bytes, 4)), "cudaMalloc");
  return DeviceMemory(p);
}

TensorDesc::TensorDesc() { TEQ_GPU_CHECK(cudnnCreateTensorDescriptor(&d)); }
TensorDesc::~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
void TensorDesc::set(int64_t n, int64_t c, int64_t h, int64_t w) {
  TEQ_GPU_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(n, "N"), to_int(c, "C"),
                                           to_int(h, "H"), to_int(w, "W")));
}
FilterDesc::FilterDesc() { TEQ_GPU_CHECK(cudnnCreateFilterDescriptor(&d)); }
FilterDesc::~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
ConvDesc::ConvDesc() { TEQ_GPU_CHECK(cudnnCreateConvolutionDescriptor(&d)); }
ConvDesc::~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
PoolDesc::PoolDesc() { TEQ_GPU_CHECK(cudnnCreatePoolingDescriptor(&d)); }
PoolDesc::~PoolDesc() { cudnnDestroyPoolingDescriptor(d); }
ActivationDesc::ActivationDesc(cudnnActivationMode_t mode) {
  TEQ_GPU_CHECK(cudnnCreateActivationDescriptor(&d));
  TEQ_GPU_CHECK(cudnnSetActivationDescriptor(d, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
}
ActivationDesc::~ActivationDesc() { cudnnDestroyActivationDescriptor(d); }

float* Plan::alloc(int64_t elements) {
  owned.push_back(device_alloc(static_cast<size_t>(std::max<int64_t>(elements, 1)) * sizeof(float)));
  return static_cast<float*>(owned.back().get());
}

}  // namespace detail

using namespace detail;

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

struct GpuRuntime::Impl : Context {
  /// Shapes, buffers and steps for the nodes the roots reach. `fold` puts weight-only work into the
  /// prologue (run once); otherwise everything is a per-run step.
  std::unique_ptr<Plan> compile(const Expr& graph, const VarShapes& vars, bool fold) {
    auto plan = std::make_unique<Plan>();
    plan->shapes = infer_shapes(graph, vars);
    const size_t n = graph.size();
    plan->value.assign(n, nullptr);
    plan->needed.assign(n, false);
    plan->is_static.assign(n, false);
    for (ExprId r : graph.roots()) plan->needed[r.value] = true;
    for (size_t i = n; i-- > 0;)
      if (plan->needed[i])
        for (ExprId c : graph.nodes()[i].children) plan->needed[c.value] = true;
    for (size_t i = 0; i < n; ++i) {
      const ExprNode& node = graph.nodes()[i];
      bool all_static = !node.children.empty();
      for (ExprId c : node.children) all_static = all_static && plan->is_static[c.value];
      plan->is_static[i] = node.op == OpKind::Weight || is_constant_op(node.op) ||
                           (!is_leaf(node.op) && node.op != OpKind::Opaque && all_static);
    }
    for (size_t i = 0; i < n; ++i) {
      if (!plan->needed[i]) continue;
      const ExprNode& node = graph.nodes()[i];
      if (is_view(node.op))
        plan->value[i] = plan->value[node.children[0].value];  // same bytes, no device work
      else
        plan->value[i] = plan->alloc(num_elements(plan->shapes[i]));
    }
    for (size_t i = 0; i < n; ++i) {
      if (!plan->needed[i] || is_leaf(graph.nodes()[i].op)) continue;
      build_node(*plan, graph, i, fold && plan->is_static[i] ? plan->prologue : plan->steps);
    }
    if (plan->workspace_bytes > 0) plan->workspace = device_alloc(plan->workspace_bytes);
    return plan;
  }

  void run(const std::vector<Step>& steps) {
    for (const Step& s : steps) s();
  }

  void sync() { TEQ_GPU_CHECK(cudaStreamSynchronize(stream)); }

  /// Fills every needed leaf with reproducible values in [0.25, 1): positive, so that division,
  /// rsqrt and logarithm-free softmax stay finite whatever the graph does with them.
  void fill_leaves(const Expr& graph, Plan& plan) {
    uint64_t seed = options.seed;
    for (size_t i = 0; i < graph.size(); ++i)
      if (plan.needed[i] && is_leaf(graph.nodes()[i].op))
        kernels::fill_random(plan.value[i], num_elements(plan.shapes[i]), seed++, 0.25f, 1.0f, stream);
  }

  Timing time_steps(const std::vector<Step>& steps) {
    Timing t;
    t.repeats = options.repeats;
    if (steps.empty()) return t;
    for (int i = 0; i < options.warmup; ++i) run(steps);
    sync();
    cudaEvent_t start = nullptr, stop = nullptr;
    TEQ_GPU_CHECK(cudaEventCreate(&start));
    TEQ_GPU_CHECK(cudaEventCreate(&stop));
    std::vector<double> ms;
    try {
      for (int r = 0; r < std::max(options.repeats, 1); ++r) {
        TEQ_GPU_CHECK(cudaEventRecord(start, stream));
        run(steps);
        TEQ_GPU_CHECK(cudaEventRecord(stop, stream));
        TEQ_GPU_CHECK(cudaEventSynchronize(stop));
        float elapsed = 0;
        TEQ_GPU_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
        ms.push_back(elapsed);
      }
    } catch (...) {
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      throw;
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    t.repeats = static_cast<int>(ms.size());
    t.median_ms = median_of(ms);
    t.min_ms = *std::min_element(ms.begin(), ms.end());
    t.max_ms = *std::max_element(ms.begin(), ms.end());
    return t;
  }
};

Availability GpuRuntime::available(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return {false, std::string("no usable CUDA device or driver (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")", ""};
  if (count == 0) return {false, "no CUDA device found", ""};
  if (device < 0 || device >= count)
    return {false, "CUDA device " + std::to_string(device) + " requested but only " + std::to_string(count) + " found",
            ""};
  cudaDeviceProp prop{};
  const cudaError_t pe = cudaGetDeviceProperties(&prop, device);
  if (pe != cudaSuccess) return {false, std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(pe), ""};
  char desc[320];
  std::snprintf(desc, sizeof desc, "%s (sm_%d%d, %.0f GiB)", prop.name, prop.major, prop.minor,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return {true, "", desc};
}

GpuRuntime::GpuRuntime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  const Availability a = available(options.device);
  if (!a.ok) throw GpuError(a.reason);
  impl_->options = options;
  impl_->device_name = a.device;
  TEQ_GPU_CHECK(cudaSetDevice(options.device));
  TEQ_GPU_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
  TEQ_GPU_CHECK(cudnnCreate(&impl_->cudnn));
  TEQ_GPU_CHECK(cudnnSetStream(impl_->cudnn, impl_->stream));
  TEQ_GPU_CHECK(cublas_api().create(&impl_->cublas));
  TEQ_GPU_CHECK(cublas_api().set_stream(impl_->cublas, impl_->stream));
  TEQ_GPU_CHECK(cublas_api().set_math_mode(impl_->cublas, options.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

GpuRuntime::~GpuRuntime() {
  if (!impl_) return;
  if (impl_->stream) cudaStreamSynchronize(impl_->stream);
  impl_->search_workspace.reset();
  if (impl_->cublas) cublas_api().destroy(impl_->cublas);
  if (impl_->cudnn) cudnnDestroy(impl_->cudnn);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

const RuntimeOptions& GpuRuntime::options() const { return impl_->options; }
std::string GpuRuntime::device_name() const { return impl_->device_name; }

std::vector<Tensor<float>> GpuRuntime::run_graph(const Expr& graph, const std::map<std::string, Tensor<float>>& leaves) {
  VarShapes vars;
  for (const auto& [name, t] : leaves) vars.emplace(name, t.shape);
  Impl& m = *impl_;
  std::unique_ptr<Plan> plan = m.compile(graph, vars, /*fold=*/false);
  for (size_t i = 0; i < graph.size(); ++i) {
    const ExprNode& node = graph.nodes()[i];
    if (!plan->needed[i] || !is_leaf(node.op)) continue;
    auto it = leaves.find(node.name);
    if (it == leaves.end()) throw ShapeError("gpu run_graph: no value for leaf '" + node.name + "'");
    if (it->second.shape != plan->shapes[i])
      throw ShapeError("gpu run_graph: value for '" + node.name + "' has shape " + to_string(it->second.shape) +
                       ", expected " + to_string(plan->shapes[i]));
    TEQ_GPU_CHECK(cudaMemcpyAsync(plan->value[i], it->second.data.data(), it->second.data.size() * sizeof(float),
                                  cudaMemcpyHostToDevice, m.stream));
  }
  m.run(plan->prologue);
  m.run(plan->steps);
  std::vector<Tensor<float>> out;
  for (ExprId r : graph.roots()) {
    Tensor<float> t(plan->shapes[r.value], 0.0f);
    TEQ_GPU_CHECK(cudaMemcpyAsync(t.data.data(), plan->value[r.value], t.data.size() * sizeof(float),
                                  cudaMemcpyDeviceToHost, m.stream));
    out.push_back(std::move(t));
  }
  m.sync();
  return out;
}

Timing GpuRuntime::time_node(OpKind op, AttrSpan attrs, std::span<const Shape> inputs) {
  Expr g;
  std::vector<ExprId> children;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ExprNode leaf{.op = OpKind::Input, .attrs = inputs[i], .children = {}, .name = "in" + std::to_string(i)};
    children.push_back(g.add(std::move(leaf)));
  }
  g.add_root(g.add(op, std::vector<int64_t>(attrs.begin(), attrs.end()), children));
  Impl& m = *impl_;
  std::unique_ptr<Plan> plan = m.compile(g, {}, /*fold=*/false);
  m.fill_leaves(g, *plan);
  return m.time_steps(plan->steps);
}

Timing GpuRuntime::time_graph(const Expr& graph) {
  Impl& m = *impl_;
  std::unique_ptr<Plan> plan = m.compile(graph, {}, m.options.fold_weights);
  m.fill_leaves(graph, *plan);
  m.run(plan->prologue);
  return m.time_steps(plan->steps);
}

}  // namespace teq::gpu
