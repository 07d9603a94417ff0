// make_cost_model: the one place that turns a --cost spec into a CostModel.
//   "auto" (eqsat-run's default)   the analytical model of where it runs: onnxruntime on this CPU
//                                  (analytical:cpu-ort) without a GPU, the GPU's profile with one
//   "flops"                        FlopCostModel (deterministic, for tests)
//   "analytical" | "analytical:h200" (default) | "analytical:a100" | ... [":tf32" | ":fp16"]
//                                  AnalyticalCostModel with corpus_dir/devices/<device>.json
//   "measured" | "measured:CACHE"  times nodes on the local GPU (measured_cost.h), cached in CACHE;
//                                  throws GpuUnavailableError without a GPU
//   "db:FILE"                      costs from a measured cost DB, on any machine (CostDbError if bad)
//   Measured and DB models fall back to the default analytical model for nodes they do not know.
// The analytical and DB models come wrapped in their runtime's policy (RuntimeCost, runtime_cost.h), and with
// what the driver may ask of them beside prices (CostModelHandle).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimizer/cost/measured_cost.h"  // CostKey, FusedUnit
#include "optimizer/cost/runtime_cost.h"

namespace teq {

/// The spec eqsat-run uses when none is given: resolved by resolve_cost_spec for the machine it runs on.
inline constexpr std::string_view kAutoCostSpec = "auto";
/// The GPU model that measured and DB cost models fall back to for the nodes they lack, and "auto" on a GPU
/// without a profile of its own.
inline constexpr std::string_view kDefaultCostSpec = "analytical:h200";
/// Where "auto" leads without a GPU: the roofline fitted to onnxruntime's CPU execution provider.
inline constexpr std::string_view kCpuCostSpec = "analytical:cpu-ort";

/// A cost spec with "auto" replaced by a concrete one, and why that one (empty for a spec given as is).
struct ResolvedCostSpec {
  std::string spec;
  std::string why;
};
/// "auto": onnxruntime on this CPU when no CUDA device answers (a build without CUDA included); with one,
/// the device profile whose name its name contains (an "NVIDIA A100-SXM4-80GB" is analytical:a100), else
/// kDefaultCostSpec. Any other spec comes back unchanged.
ResolvedCostSpec resolve_cost_spec(std::string_view spec, const std::filesystem::path& corpus_dir);

/// The nodes and fused units a DB model had no entry for: what bench/ort_cost_db.py measures next
/// (eqsat-run --cost-misses DIR writes each node as a one-node ONNX model).
struct CostMisses {
  std::vector<CostKey> nodes;
  std::vector<FusedUnit> fused;
};

/// A cost model as make_cost_model makes it, and what eqsat-run's driver may ask of it beside prices: each
/// answer comes from the factory, which knows what it made.
struct CostModelHandle {
  std::unique_ptr<const CostModel> model;
  /// Weights are priced as read from memory: the model priced outgrows the cache the cost model knows of.
  bool streams_weights = false;
  /// Node times are measured on this machine's GPU (--cost measured): the two graphs' end-to-end times decide.
  bool measured_here = false;
  /// The runtime wants a rank-3 linear layer with its bias written as Reshape, Gemm, Reshape where the model
  /// has symbolic dimensions (RuntimePolicy::batched_linear_as_gemm): ExportOptions::batched_linear_as_gemm.
  bool batched_linear_as_gemm = false;
  /// Set for the measured and DB models (else empty): their lookup statistics (the report's cost_stats);
  /// writing what they measured to their cache file; the nodes and fused units a DB lacked.
  std::function<nlohmann::json()> stats;
  std::function<void()> save;
  std::function<CostMisses()> misses;

  const CostModel& operator*() const { return *model; }
  const CostModel* operator->() const { return model.get(); }
};

/// Builds the cost model for `spec` ("auto" through resolve_cost_spec). `corpus_dir` is the corpus folder (holding devices/*.json); `footprint`
/// describes the model it will price (whose weights may outgrow the cache the model knows of).
/// Throws std::invalid_argument with a message that lists the valid specs for an unknown one;
/// DeviceProfileError for a broken profile file; GpuUnavailableError / CostDbError as above.
CostModelHandle make_cost_model(std::string_view spec, const std::filesystem::path& corpus_dir,
                                const ModelFootprint& footprint = {});

/// The cost spec for `--target`, the machine the model will run on: "auto" (the machine eqsat-run runs on),
/// "cpu" (onnxruntime on this CPU: kCpuCostSpec), "cuda" (onnxruntime's CUDA provider on the GPU found here:
/// its profile; throws when there is none), or a GPU profile's name ("h200", "a100", ...: analytical:NAME).
/// Throws std::invalid_argument listing the targets for another name.
std::string cost_spec_for_target(std::string_view target, const std::filesystem::path& corpus_dir);

/// The GPU device profiles of corpus_dir/devices (every profile but the CPU's), sorted.
std::vector<std::string> gpu_profile_names(const std::filesystem::path& corpus_dir);

/// The specs make_cost_model accepts with this corpus folder, for help texts and error messages.
std::vector<std::string> cost_model_specs(const std::filesystem::path& corpus_dir);

}  // namespace teq
