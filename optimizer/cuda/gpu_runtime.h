// GpuRuntime: runs vocabulary graphs on an NVIDIA GPU in FP32 (TF32 optional) with cuDNN (convolution,
// pooling, activations, batchnorm, softmax), cuBLAS (batched matmul) and the kernels in kernels.h.
// It is an implementation of the operators' meaning (rules/ops), tested against evaluate<float> by
// tests/optimizer/gpu_runtime_test.cpp, never a definition of it. Compiled only when CUDA is found;
// CUDA-free code uses the facade in optimizer/cost/measured_cost.h instead of this header.
// Usage:
//   if (GpuRuntime::available().ok) {
//     GpuRuntime gpu;                                  // throws GpuError without a device
//     auto out = gpu.run_graph(graph, leaves);         // same values as evaluate<float>, within tolerance
//     double ms = gpu.time_node(OpKind::Relu, {}, {{64, 1024}});
//   }
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "rules/expr.h"
#include "rules/tensor.h"

namespace teq::gpu {

/// Any failure of the device, the driver or a library call; the message names the call.
class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Availability {
  bool ok = false;
  std::string reason;  // why not, when !ok ("no CUDA device: ...")
  std::string device;  // e.g. "NVIDIA H200 (sm_90, 139 GiB)" when ok
};

struct RuntimeOptions {
  bool tf32 = false;             // allow TF32 tensor cores in cuBLAS and cuDNN (FP32 storage either way)
  bool conv_algo_search = true;  // benchmark cuDNN's convolution algorithms once per shape (else heuristic)
  int64_t workspace_limit_bytes = int64_t{1} << 30;
  int warmup = 3;                // untimed runs before timing
  int repeats = 20;              // timed runs; the median is reported
  bool fold_weights = true;      // time_graph: work that depends only on weights runs once, untimed
  uint64_t seed = 1;             // random inputs for timing
  int device = 0;
};

/// Timing of one node or one graph, in milliseconds over `repeats` runs.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int repeats = 0;
};

class GpuRuntime {
 public:
  /// Whether a usable CUDA device is present (false without a driver or a device, with the reason).
  static Availability available(int device = 0);

  /// Creates the CUDA stream and the cuDNN and cuBLAS handles; throws GpuError when unavailable.
  explicit GpuRuntime(RuntimeOptions options = {});
  ~GpuRuntime();
  GpuRuntime(const GpuRuntime&) = delete;
  GpuRuntime& operator=(const GpuRuntime&) = delete;

  const RuntimeOptions& options() const;
  std::string device_name() const;

  /// Values of the graph's roots for these leaf values (every input and weight by name). Throws
  /// ShapeError for ill-shaped graphs or missing leaves and GpuError for opaque operators and
  /// device failures.
  std::vector<Tensor<float>> run_graph(const Expr& graph, const std::map<std::string, Tensor<float>>& leaves);

  /// Median time of one node on random inputs of these shapes (warm-up, then `repeats` runs each
  /// timed with CUDA events). Operators that cost no device work (reshape, noop) give 0.
  Timing time_node(OpKind op, AttrSpan attrs, std::span<const Shape> inputs);

  /// End-to-end time of the whole graph on random inputs and weights (weight-only work folded once,
  /// untimed, when options().fold_weights).
  Timing time_graph(const Expr& graph);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace teq::gpu
