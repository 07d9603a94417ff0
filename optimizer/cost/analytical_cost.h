// AnalyticalCostModel: a roofline estimate of each operator's GPU time from a device profile
// (corpus/devices/<name>.json: peak FLOP/s, memory bandwidth, launch overhead):
//   time = max(FLOPs / peak, bytes moved / bandwidth) + launch overhead,   0 for views (reshape, split, noop),
// where a weight operand of a model whose weights outgrow the cache moves at the profile's weight_stream_gbs
// (weight_stream_penalty).
// Operator work (FLOPs and bytes) is counted here, from shapes only. Making weight-only work free is the
// optimizer's job (it is precomputed at load time), not this model's. The factory is in cost_models.h.
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "optimizer/cost/runtime_cost.h"

namespace teq {

/// One GPU's figures, loaded from JSON. Peaks in TFLOP/s (dense), bandwidth in GB/s, overhead in µs.
struct DeviceProfile {
  std::string name;         // "h200", the file's stem
  std::string device;       // "NVIDIA H200 SXM (141 GB HBM3e)"
  double fp32_tflops = 0;
  double tf32_tensor_tflops = 0;  // 0 when the device has no TF32 tensor cores
  double fp16_tensor_tflops = 0;
  double memory_bandwidth_gbs = 0;
  double launch_overhead_us = 0;
  /// Optional, 0 when the profile lacks them: the last-level cache, and the rate at which a node reads a
  /// weight from memory in a model whose weights outgrow that cache (ModelFootprint, streams_weights).
  double cache_bytes = 0;
  double weight_stream_gbs = 0;
  /// The runtime also fuses a tanh or sigmoid after a biased conv or Gemm (RuntimePolicy::fuses_tanh_sigmoid).
  bool fuses_tanh_sigmoid = false;
  /// The export writes a matmul of a rank-3 (or higher) activation by a 2-d operand, with its bias add, as
  /// Reshape, Gemm, Reshape in a model with symbolic dimensions (RuntimePolicy::batched_linear_as_gemm): the
  /// runtime runs that as one Gemm with the bias inside, and the MatMul and Add as written by the exporter
  /// apart (onnxruntime's MatMulAddFusion rewrites a rank-3 MatMul only at a concrete shape).
  bool batched_linear_as_gemm = false;
  /// What the runtime's normalization kernels cost, in element-wise passes over the normalized tensor (a pass:
  /// x * y of that shape, two operands read and one written), by onnxruntime's kernel name:
  /// "SimplifiedLayerNormalization", "LayerNormalization", "SkipLayerNormalization". The runtime makes them
  /// of the decomposed norms (find_ort_fusions); AnalyticalCostModel::fused_units prices each unit so, instead
  /// of its nodes. Measured, not derived: onnxruntime 1.32's SkipLayerNormalization runs at about 34 passes on
  /// one CPU thread, more than the Add and the layer norm it replaces (bench/fit_cpu_profile.py --norms-only).
  std::map<std::string, double, std::less<>> norm_kernel_passes;
  std::vector<std::string> sources;  // the data sheets the figures come from
};

class DeviceProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Loads one profile file; throws DeviceProfileError("<file>: <field>: <problem>") when a field is
/// missing, not a number, or out of range, or the file is unreadable or not JSON.
DeviceProfile load_device_profile(const std::filesystem::path& file);
/// Names of the profiles in `devices_dir` (stems of its *.json files), sorted.
std::vector<std::string> device_profile_names(const std::filesystem::path& devices_dir);

/// The arithmetic the model runs at: plain FP32 on CUDA cores, or matmul/conv on tensor cores.
enum class Precision { Fp32, Tf32, Fp16 };

/// Work of one operator node. Element-wise operators count one FLOP per output element; matmul and
/// conv2d count 2 per multiply-add. Bytes: every input read once and the output written once.
struct OpWork {
  double flops = 0;
  double bytes = 0;
  bool launches_kernel = true;  // false for views: reshape, split, noop
  bool tensor_core = false;     // matmul and conv2d, the operators tensor cores accelerate
};

/// The work of one node whose result has elements of `bytes_per_element` bytes and whose operands have
/// `operand_bytes_per_element` (0: the same; they differ only for a cast, which reads one float type and
/// writes another).
OpWork op_work(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output,
               double bytes_per_element = 4, double operand_bytes_per_element = 0);

class AnalyticalCostModel final : public CostModel {
 public:
  /// `footprint`: the model priced; its weights are read at weight_stream_gbs when they outgrow the profile's
  /// cache_bytes (a profile without those fields prices every weight cache-resident).
  explicit AnalyticalCostModel(DeviceProfile profile, Precision precision = Precision::Fp32,
                               ModelFootprint footprint = {});
  /// "analytical:h200", with ":tf32" or ":fp16" appended for those precisions.
  std::string name() const override;
  using CostModel::node_cost;
  /// Seconds, the node alone (its operands' facts are the runtime policy's business: runtime_policy()).
  double node_cost(const NodeContext& node) const override;
  /// How the runtime this profile describes runs a graph: onnxruntime, cuDNN and TensorRT all run a
  /// convolution's bias add and relu in its kernel; the profile says whether tanh and sigmoid too; weights are
  /// streamed (weight_stream_penalty) when the model outgrows the profile's cache.
  RuntimePolicy runtime_policy() const;
  /// Each normalization unit onnxruntime makes of `graph` (find_ort_fusions) whose kernel the profile prices
  /// (norm_kernel_passes): one launch and that many element-wise passes over the normalized tensor, instead of
  /// its nodes. The other fusions (Gemm, Gelu, FusedMatMul) are not priced: they change less (docs/cost-model.md).
  std::vector<PricedUnit> fused_units(const Expr& graph, std::span<const Shape> shapes,
                                      const std::vector<bool>& precomputable) const override;
  /// Whether the model this was made for (ModelFootprint) has more weights than the profile's cache holds.
  bool streams_weights() const { return streams_weights_; }
  /// The roofline again with the weight operands' bytes read at weight_stream_gbs, less node_cost's; 0 unless
  /// streams_weights().
  double weight_stream_penalty(const NodeContext& node) const;
  const DeviceProfile& profile() const { return profile_; }

 private:
  /// The tensor-core and scalar peaks for a node of element type `elem_type` (NodeContext::elem_type): a
  /// float16 or bfloat16 node runs at the profile's fp16 rates (tensor cores, packed half2 on the CUDA cores)
  /// when it has them, whatever the precision suffix; others at this model's precision's.
  std::pair<double, double> peaks(int32_t elem_type) const;
  DeviceProfile profile_;
  Precision precision_;
  double tensor_peak_ = 0;  // FLOP/s for tensor-core operators at this precision
  double scalar_peak_ = 0;  // FLOP/s for everything else
  double bytes_per_element_ = 4;
  bool streams_weights_ = false;
};

}  // namespace teq
