#include "optimizer/cost/analytical_cost.h"

#include <algorithm>
#include <array>
#include <fstream>

#include <nlohmann/json.hpp>

#include "optimizer/cost/ort_fusions.h"
#include "rules/work.h"

namespace teq {
namespace {

double elements(const Shape& s) { return static_cast<double>(num_elements(s)); }

double field(const nlohmann::json& j, const std::string& origin, const char* key, bool allow_zero) {
  auto it = j.find(key);
  if (it == j.end()) throw DeviceProfileError(origin + ": " + key + ": missing");
  if (!it->is_number()) throw DeviceProfileError(origin + ": " + key + ": not a number");
  double v = it->get<double>();
  if (v < 0 || (!allow_zero && v == 0)) throw DeviceProfileError(origin + ": " + key + ": must be positive");
  return v;
}

}  // namespace

DeviceProfile load_device_profile(const std::filesystem::path& file) {
  const std::string origin = file.string();
  std::ifstream in(file);
  if (!in) throw DeviceProfileError(origin + ": cannot open device profile");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DeviceProfileError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || j.value("format", "") != "tensor-eqsat-device")
    throw DeviceProfileError(origin + ": format: expected \"tensor-eqsat-device\"");
  DeviceProfile p;
  p.name = file.stem().string();
  p.device = j.value("device", p.name);
  p.fp32_tflops = field(j, origin, "fp32_tflops", false);
  p.tf32_tensor_tflops = field(j, origin, "tf32_tensor_tflops", true);
  p.fp16_tensor_tflops = field(j, origin, "fp16_tensor_tflops", true);
  p.memory_bandwidth_gbs = field(j, origin, "memory_bandwidth_gbs", false);
  p.launch_overhead_us = field(j, origin, "launch_overhead_us", true);
  if (j.contains("cache_bytes") || j.contains("weight_stream_gbs")) {
    p.cache_bytes = field(j, origin, "cache_bytes", false);
    p.weight_stream_gbs = field(j, origin, "weight_stream_gbs", false);
  }
  if (auto f = j.find("fuses_tanh_sigmoid"); f != j.end()) {
    if (!f->is_boolean()) throw DeviceProfileError(origin + ": fuses_tanh_sigmoid: not true or false");
    p.fuses_tanh_sigmoid = f->get<bool>();
  }
  if (auto f = j.find("batched_linear_as_gemm"); f != j.end()) {
    if (!f->is_boolean()) throw DeviceProfileError(origin + ": batched_linear_as_gemm: not true or false");
    p.batched_linear_as_gemm = f->get<bool>();
  }
  if (auto f = j.find("norm_kernel_passes"); f != j.end()) {
    if (!f->is_object()) throw DeviceProfileError(origin + ": norm_kernel_passes: not an object");
    for (const auto& [kernel, passes] : f->items()) {
      if (kernel != ort_fusion_name(OrtFusion::SimplifiedLayerNormalization) &&
          kernel != ort_fusion_name(OrtFusion::LayerNormalization) &&
          kernel != ort_fusion_name(OrtFusion::SkipLayerNormalization))
        throw DeviceProfileError(origin + ": norm_kernel_passes: " + kernel +
                                 ": not SimplifiedLayerNormalization, LayerNormalization or SkipLayerNormalization");
      if (!passes.is_number() || !(passes.get<double>() > 0))
        throw DeviceProfileError(origin + ": norm_kernel_passes: " + kernel + ": not a positive number");
      p.norm_kernel_passes[kernel] = passes.get<double>();
    }
  }
  if (auto s = j.find("sources"); s != j.end() && s->is_array())
    for (const auto& src : *s)
      if (src.is_string()) p.sources.push_back(src.get<std::string>());
  if (p.sources.empty()) throw DeviceProfileError(origin + ": sources: name the data sheet the figures come from");
  return p;
}

std::vector<std::string> device_profile_names(const std::filesystem::path& devices_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(devices_dir, ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

OpWork op_work(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output,
               double bytes_per_element, double operand_bytes_per_element) {
  OpWork w;
  const double out = elements(output);
  double read = 0;
  for (const Shape& s : inputs) read += elements(s);
  if (operand_bytes_per_element <= 0) operand_bytes_per_element = bytes_per_element;
  w.bytes = out * bytes_per_element + read * operand_bytes_per_element;
  // op_flops (rules/work.h) counts multiply-adds for matmul and conv2d and one operation per
  // element elsewhere; a multiply-add is two FLOPs against the data sheets' peaks.
  const double ops = op_flops(op, attrs, inputs, output);
  w.tensor_core = op == OpKind::Matmul || op == OpKind::Conv2d;
  w.flops = w.tensor_core ? 2 * ops : ops;
  switch (op_work_kind(op)) {
    case OpWorkKind::Leaf:
    case OpWorkKind::View:  // aliases its input (reshape, noop): no kernel, no traffic
      w.launches_kernel = false;
      w.bytes = 0;
      break;
    case OpWorkKind::Constant: w.bytes = out * bytes_per_element; break;  // nothing is read from `like`
    case OpWorkKind::Copy:
      // Slice reads only the part it selects, and so does split (exported as ONNX Slice; its second
      // operand only supplies the cut's extent).
      if (op == OpKind::Split || op == OpKind::Slice) w.bytes = 2 * out * bytes_per_element;
      break;
    case OpWorkKind::Opaque:
    case OpWorkKind::Compute: break;  // every operand read once, the output written once
  }
  return w;
}

AnalyticalCostModel::AnalyticalCostModel(DeviceProfile profile, Precision precision, ModelFootprint footprint)
    : profile_(std::move(profile)), precision_(precision) {
  streams_weights_ = profile_.cache_bytes > 0 && profile_.weight_stream_gbs > 0 &&
                     footprint.weight_bytes > profile_.cache_bytes;
  scalar_peak_ = profile_.fp32_tflops * 1e12;
  tensor_peak_ = scalar_peak_;
  if (precision_ == Precision::Tf32) {
    if (profile_.tf32_tensor_tflops <= 0)
      throw std::invalid_argument("device '" + profile_.name + "' has no TF32 tensor cores (tf32_tensor_tflops is 0)");
    tensor_peak_ = profile_.tf32_tensor_tflops * 1e12;
  } else if (precision_ == Precision::Fp16) {
    if (profile_.fp16_tensor_tflops <= 0)
      throw std::invalid_argument("device '" + profile_.name + "' has no FP16 tensor-core figure");
    tensor_peak_ = profile_.fp16_tensor_tflops * 1e12;
    scalar_peak_ *= 2;  // packed half2 arithmetic on the CUDA cores
    bytes_per_element_ = 2;
  }
}

std::string AnalyticalCostModel::name() const {
  std::string n = "analytical:" + profile_.name;
  if (precision_ == Precision::Tf32) n += ":tf32";
  if (precision_ == Precision::Fp16) n += ":fp16";
  return n;
}

double AnalyticalCostModel::node_cost(const NodeContext& node) const {
  const OpKind op = node.op;
  const AttrSpan attrs = node.attrs;
  const std::span<const Shape> inputs = node.inputs;
  const Shape& output = node.output;
  OpWork w = op_work(op, attrs, inputs, output, element_bytes(node.elem_type, bytes_per_element_),
                     element_bytes(node.operand_type(), bytes_per_element_));
  if (!w.launches_kernel) return 0;
  const auto [tensor_peak, scalar_peak] = peaks(node.elem_type);
  const double peak = w.tensor_core ? tensor_peak : scalar_peak;
  const double compute = w.flops / peak;
  const double memory = w.bytes / (profile_.memory_bandwidth_gbs * 1e9);
  double t = std::max(compute, memory) + profile_.launch_overhead_us * 1e-6;
  // A fused activation costs what the separate activation node costs, since the exporter writes it as its
  // own ONNX node: nothing for a relu after a convolution or 2-d matmul (an epilogue the runtime fuses back,
  // runtime_policy), the activation's own kernel otherwise. Fusing in the e-graph earns nothing either way.
  const Activation act = fused_activation(op, attrs);
  if (act != Activation::None && !(act == Activation::Relu && is_anchor_operator(op, inputs))) {
    const Shape* out = &output;
    t += node_cost(NodeContext{*activation_op(act), {}, std::span<const Shape>(out, 1), output, {}, node.elem_type});
  }
  return t;
}

std::pair<double, double> AnalyticalCostModel::peaks(int32_t elem_type) const {
  if (element_bytes(elem_type) == 2 && precision_ != Precision::Fp16 && profile_.fp16_tensor_tflops > 0)
    return {profile_.fp16_tensor_tflops * 1e12, profile_.fp32_tflops * 1e12 * 2};
  return {tensor_peak_, scalar_peak_};
}

RuntimePolicy AnalyticalCostModel::runtime_policy() const {
  RuntimePolicy policy{.fuses_epilogues = true,
                       .fuses_tanh_sigmoid = profile_.fuses_tanh_sigmoid,
                       .batched_linear_as_gemm = profile_.batched_linear_as_gemm,
                       .weight_stream_penalty = {}};
  if (streams_weights_) policy.weight_stream_penalty = [this](const NodeContext& node) { return weight_stream_penalty(node); };
  return policy;
}

std::vector<PricedUnit> AnalyticalCostModel::fused_units(const Expr& graph, std::span<const Shape> shapes,
                                                         const std::vector<bool>& precomputable) const {
  std::vector<PricedUnit> priced;
  if (profile_.norm_kernel_passes.empty()) return priced;
  const double launch = profile_.launch_overhead_us * 1e-6;
  for (FusedUnit& unit : find_ort_fusions(graph, shapes, precomputable)) {
    const auto passes = profile_.norm_kernel_passes.find(ort_fusion_name(unit.kind));
    if (passes == profile_.norm_kernel_passes.end()) continue;
    const Shape& normalized = unit.shapes.front();
    const std::array<Shape, 2> operands{normalized, normalized};
    const double pass = node_cost(NodeContext{OpKind::EwMul, {}, operands, normalized}) - launch;
    priced.push_back({std::move(unit.nodes), launch + passes->second * pass});
  }
  return priced;
}

double AnalyticalCostModel::weight_stream_penalty(const NodeContext& node) const {
  if (!streams_weights_) return 0;
  const OpKind op = node.op;
  const std::span<const Shape> inputs = node.inputs;
  const std::span<const OperandFacts> operands = node.operands;
  double streamed = 0;
  for (size_t k = 0; k < inputs.size() && k < operands.size(); ++k) {
    const double bytes = elements(inputs[k]) * element_bytes(node.operand_type(), bytes_per_element_);
    if (operands[k].precomputable && bytes >= kStreamedWeightMinBytes) streamed += bytes;
  }
  if (streamed == 0) return 0;
  const OpWork w = op_work(op, node.attrs, inputs, node.output, element_bytes(node.elem_type, bytes_per_element_),
                           element_bytes(node.operand_type(), bytes_per_element_));
  if (!w.launches_kernel) return 0;
  const auto [tensor_peak, scalar_peak] = peaks(node.elem_type);
  const double compute = w.flops / (w.tensor_core ? tensor_peak : scalar_peak);
  const double memory = w.bytes / (profile_.memory_bandwidth_gbs * 1e9);
  const double extra = streamed / (profile_.weight_stream_gbs * 1e9) - streamed / (profile_.memory_bandwidth_gbs * 1e9);
  return std::max(compute, memory + extra) - std::max(compute, memory);
}

}  // namespace teq
