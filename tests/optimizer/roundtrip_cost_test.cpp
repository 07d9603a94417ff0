// The cost the optimizer claims is the cost of the file it writes: every built-in model and every bundled
// model (corpus/models, corpus/models/torch) optimized with the default corpus (both ways) and cost model, exported to
// ONNX, read back, and costed again. A difference means the e-graph priced a form the exporter does not
// write (a split as a free view that is written as a Slice copy, say).
#include <gtest/gtest.h>

#include <filesystem>

#include "optimizer/cost/cost_models.h"
#include "optimizer/engine/extract.h"
#include "optimizer/models/builtin.h"
#include "optimizer/onnx/from_expr.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "optimizer/optimize.h"

namespace teq {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TEQ_SOURCE_DIR) / "corpus";

struct Case {
  std::string name;  // built-in model name, or a path under corpus/models
  bool builtin;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const std::string& n : builtin_model_names()) cases.push_back({n, true});
  for (const fs::path& dir : {kCorpus / "models", kCorpus / "models" / "torch"}) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".onnx") files.push_back(fs::relative(e.path(), kCorpus / "models").string());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) cases.push_back({f, false});
  }
  return cases;
}

onnx_io::OnnxModel load(const Case& c) {
  if (c.builtin) return onnx_io::model_from_expr(build_builtin_model(c.name), c.name);
  return onnx_io::import_onnx(kCorpus / "models" / c.name);
}

double read_back_cost(const onnx_io::OnnxModel& model, const Expr& graph, const CostModel& cost) {
  const onnx_io::OnnxModel back = onnx_io::import_onnx_bytes(onnx_io::export_onnx_bytes(model, graph), "round trip");
  return graph_cost(back.graph, cost);
}

class RoundTripCost : public ::testing::TestWithParam<Case> {};

TEST_P(RoundTripCost, ExportedFileCostsWhatTheOptimizerClaims) {
  // eqsat-run's default rules: rulegen's corpus, both ways.
  static const RuleCorpus rules = [] {
    RuleCorpus corpus = load_corpus(kCorpus / "rules.json");
    add_reversed_rules(corpus);
    return corpus;
  }();
  const auto cost = make_cost_model(kDefaultCostSpec, kCorpus);
  const onnx_io::OnnxModel model = load(GetParam());
  // eqsat-run's iterations per round and extraction, in one round and with a small e-node limit to keep the
  // suite fast; the property holds for any extracted graph.
  const OptimizeConfig config{.saturation = {.node_limit = 2'000, .iter_limit = kDefaultIterationsPerRound},
                              .rounds = 1, .extract = ExtractMethod::Ilp};
  const OptimizeReport r = optimize_graph(model.graph, rules, *cost, config);
  EXPECT_NEAR(read_back_cost(model, model.graph, *cost), r.original_cost, 0.005 * r.original_cost)
      << "the original, read back";
  EXPECT_NEAR(read_back_cost(model, r.optimized, *cost), r.optimized_cost, 0.005 * r.optimized_cost)
      << "the optimized graph, read back (" << r.rules_used.size() << " rules used)";
}

INSTANTIATE_TEST_SUITE_P(AllModels, RoundTripCost, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace teq
