// eqsat-run's report (the JSON --report writes, and the Python package returns) and its summary on the log,
// from the run's result: the search's own report, the output decision (optimizer/output_choice.h) and the
// check. Reading only: nothing here changes what is written.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "optimizer/cost/cost_models.h"  // CostModelHandle
#include "optimizer/cost/measured_cost.h"  // LatencyComparison
#include "optimizer/eqsat_app.h"

namespace teq {

/// What the report and the summary say beside EqsatResult.
struct RunFacts {
  std::string model_name, rules_text;
  std::string cost_choice;  // why this cost model, when "auto" chose it
  const CostModelHandle& cost;
  std::filesystem::path output_data;  // the external data file written beside -o (empty: none)
  std::optional<LatencyComparison> latency;
  /// Wall time by phase beside the search's own (saturate, extract): reading the model and the rules, deciding
  /// what is written (the export, read back and priced, the size guard), the check, writing the file.
  double import_seconds = 0, decide_seconds = 0, check_seconds = 0, write_seconds = 0;
  double total_seconds = 0;
};

nlohmann::json report_json(const EqsatConfig& config, const EqsatResult& result, const RunFacts& facts);
void print_summary(std::ostream& log, const EqsatConfig& config, const EqsatResult& result, const RunFacts& facts);

}  // namespace teq
