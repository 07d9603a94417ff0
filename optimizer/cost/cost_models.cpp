#include "optimizer/cost/cost_models.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "optimizer/cost/analytical_cost.h"
#include "optimizer/cost/measured_cost.h"

namespace teq {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

[[noreturn]] void unknown(std::string_view spec, const std::filesystem::path& corpus_dir, const std::string& why) {
  throw std::invalid_argument("unknown cost model '" + std::string(spec) + "'" + (why.empty() ? "" : " (" + why + ")") +
                              "; valid: " + join(cost_model_specs(corpus_dir)) +
                              " (append :tf32 or :fp16 to an analytical spec for tensor cores)");
}

}  // namespace

ResolvedCostSpec resolve_cost_spec(std::string_view spec, const std::filesystem::path& corpus_dir) {
  if (spec != kAutoCostSpec) return {std::string(spec), ""};
  const GpuStatus gpu = gpu_status();
  if (!gpu.available) return {std::string(kCpuCostSpec), "auto: no GPU found, so onnxruntime on this CPU"};
  std::string device = gpu.device;
  std::transform(device.begin(), device.end(), device.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const std::string& profile : device_profile_names(corpus_dir / "devices"))
    if (profile != "cpu-ort" && device.find(profile) != std::string::npos)
      return {"analytical:" + profile, "auto: the GPU found, " + gpu.device};
  return {std::string(kDefaultCostSpec), "auto: the GPU found, " + gpu.device + ", has no profile of its own; the nearest"};
}

std::vector<std::string> gpu_profile_names(const std::filesystem::path& corpus_dir) {
  std::vector<std::string> names;
  for (const std::string& profile : device_profile_names(corpus_dir / "devices"))
    if (profile != "cpu-ort") names.push_back(profile);
  return names;
}

std::string cost_spec_for_target(std::string_view target, const std::filesystem::path& corpus_dir) {
  if (target == kAutoCostSpec) return std::string(kAutoCostSpec);
  if (target == "cpu") return std::string(kCpuCostSpec);
  // onnxruntime's CUDA provider runs cuDNN and cuBLAS kernels: the profile of the GPU it will use, which is
  // the one found here; without one, the user names it.
  if (target == "cuda") {
    if (!gpu_status().available)
      throw std::invalid_argument("cuda: no GPU found on this machine; name the GPU the model will run on (" +
                                  join(gpu_profile_names(corpus_dir)) + ")");
    return resolve_cost_spec(kAutoCostSpec, corpus_dir).spec;
  }
  std::vector<std::string> targets = {"auto", "cpu", "cuda"};
  for (const std::string& profile : gpu_profile_names(corpus_dir)) {
    if (target == profile) return "analytical:" + profile;
    targets.push_back(profile);
  }
  throw std::invalid_argument("unknown target '" + std::string(target) + "'; valid: " + join(targets) +
                              " (--cost names a cost model directly)");
}

std::vector<std::string> cost_model_specs(const std::filesystem::path& corpus_dir) {
  std::vector<std::string> specs = {"auto", "flops", "analytical"};
  for (const std::string& d : device_profile_names(corpus_dir / "devices")) specs.push_back("analytical:" + d);
  specs.insert(specs.end(), {"measured", "measured:CACHE.json", "db:FILE.json"});
  return specs;
}

namespace {

/// A cost model alone, and how its runtime runs a graph (RuntimeCost wraps the two).
struct Parts {
  std::unique_ptr<CostModel> model;
  RuntimePolicy policy;
};

Parts analytical_parts(std::string_view spec, const std::filesystem::path& corpus_dir, const ModelFootprint& footprint) {
  std::string_view rest = spec;
  if (rest == "analytical") rest = kDefaultCostSpec;
  if (!rest.starts_with("analytical:")) unknown(spec, corpus_dir, "");
  rest.remove_prefix(std::string_view("analytical:").size());
  std::string device(rest.substr(0, rest.find(':')));
  Precision precision = Precision::Fp32;
  if (size_t colon = rest.find(':'); colon != std::string_view::npos) {
    std::string_view p = rest.substr(colon + 1);
    if (p == "tf32") precision = Precision::Tf32;
    else if (p == "fp16") precision = Precision::Fp16;
    else if (p != "fp32") unknown(spec, corpus_dir, "precision '" + std::string(p) + "' is not fp32, tf32 or fp16");
  }
  const std::filesystem::path file = corpus_dir / "devices" / (device + ".json");
  if (device.empty() || !std::filesystem::exists(file))
    unknown(spec, corpus_dir, "no device profile " + file.string());
  auto model = std::make_unique<AnalyticalCostModel>(load_device_profile(file), precision, footprint);
  RuntimePolicy policy = model->runtime_policy();
  return {std::move(model), std::move(policy)};
}

/// What the driver asks of a measured or DB model: statistics, saving, misses.
void expose(CostModelHandle& handle, const MeasuredCostModel* model) {
  handle.stats = [model] { return model->stats().to_json(); };
  handle.save = [model] { model->save(); };
  handle.misses = [model] { return CostMisses{model->missed(), model->missed_fused()}; };
}

Parts make_parts(std::string_view spec, const std::filesystem::path& corpus_dir, const ModelFootprint& footprint,
                 CostModelHandle& handle) {
  if (spec == kAutoCostSpec) return make_parts(resolve_cost_spec(spec, corpus_dir).spec, corpus_dir, footprint, handle);
  if (spec == "flops") return {std::make_unique<FlopCostModel>(), {}};
  // The measured model times nodes on the GPU (or reads a cost DB); misses fall back to the default
  // analytical model of this corpus, so a DB from one machine works on any other.
  if (spec == "measured" || spec.starts_with("measured:")) {
    CostModelHandle unused;
    Parts fallback = make_parts(kDefaultCostSpec, corpus_dir, {}, unused);
    std::unique_ptr<MeasuredCostModel> model = make_measured_cost_model(
        GpuMeasureOptions{}, std::move(fallback.model),
        spec == "measured" ? std::filesystem::path{} : std::filesystem::path(spec.substr(9)));
    expose(handle, model.get());
    handle.measured_here = true;
    RuntimePolicy policy = model->runtime_policy(std::move(fallback.policy));
    return {std::move(model), std::move(policy)};
  }
  if (spec.starts_with("db:")) {
    if (spec.size() == 3) unknown(spec, corpus_dir, "db: needs a file name");
    // The DB names the model for the nodes it lacks (a CPU DB falls back to the CPU profile, say).
    const std::filesystem::path file(spec.substr(3));
    const std::string fallback_spec = CostDb::load(file).fallback;
    CostModelHandle unused;
    Parts fallback = make_parts(fallback_spec.empty() ? kDefaultCostSpec : fallback_spec, corpus_dir, footprint, unused);
    std::unique_ptr<MeasuredCostModel> model = make_db_cost_model(file, std::move(fallback.model), footprint);
    expose(handle, model.get());
    RuntimePolicy policy = model->runtime_policy(std::move(fallback.policy));
    return {std::move(model), std::move(policy)};
  }
  return analytical_parts(spec, corpus_dir, footprint);
}

}  // namespace

CostModelHandle make_cost_model(std::string_view spec, const std::filesystem::path& corpus_dir,
                                const ModelFootprint& footprint) {
  CostModelHandle handle;
  Parts parts = make_parts(spec, corpus_dir, footprint, handle);
  handle.streams_weights = static_cast<bool>(parts.policy.weight_stream_penalty);
  handle.batched_linear_as_gemm = parts.policy.batched_linear_as_gemm;
  if (!parts.policy.fuses_epilogues && !parts.policy.weight_stream_penalty)
    handle.model = std::move(parts.model);  // nothing the runtime adds: the model alone (flops)
  else
    handle.model = std::make_unique<RuntimeCost>(std::move(parts.model), std::move(parts.policy));
  return handle;
}

}  // namespace teq
