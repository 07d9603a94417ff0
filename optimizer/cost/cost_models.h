// make_cost_model: the one place that turns a --cost spec into a CostModel.
//   "flops"                        FlopCostModel (deterministic, for tests)
//   "analytical" | "analytical:h200" (default) | "analytical:a100" | ... [":tf32" | ":fp16"]
//                                  AnalyticalCostModel with corpus_dir/devices/<device>.json
//   "measured" | "measured:CACHE"  times nodes on the local GPU (measured_cost.h), cached in CACHE;
//                                  throws GpuUnavailableError without a GPU
//   "db:FILE"                      costs from a measured cost DB, on any machine (CostDbError if bad)
//   Measured and DB models fall back to the default analytical model for nodes they do not know.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "optimizer/engine/cost_model.h"

namespace teq {

/// The spec eqsat-run and the report use when none is given.
inline constexpr std::string_view kDefaultCostSpec = "analytical:h200";

/// Builds the cost model for `spec`. `corpus_dir` is the corpus folder (holding devices/*.json); `footprint`
/// describes the model it will price (whose weights may outgrow the cache the model knows of).
/// Throws std::invalid_argument with a message that lists the valid specs for an unknown one;
/// DeviceProfileError for a broken profile file; GpuUnavailableError / CostDbError as above.
std::unique_ptr<CostModel> make_cost_model(std::string_view spec, const std::filesystem::path& corpus_dir,
                                           const ModelFootprint& footprint = {});

/// The specs make_cost_model accepts with this corpus folder, for help texts and error messages.
std::vector<std::string> cost_model_specs(const std::filesystem::path& corpus_dir);

}  // namespace teq
