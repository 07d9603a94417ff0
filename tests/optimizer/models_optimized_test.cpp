// The built-in models through both optimizers with the project's rule corpus and the default cost
// model: results are well-shaped, keep their outputs, never cost more, and (for NasRNN, small enough for
// the CPU reference evaluator) compute the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "optimizer/cost_models.h"
#include "optimizer/extract.h"
#include "optimizer/models/builtin.h"
#include "optimizer/sequential.h"
#include "rules/evaluator.h"

namespace teq {
namespace {

const std::filesystem::path kCorpus = std::filesystem::path(TEQ_SOURCE_DIR) / "corpus";

std::vector<Shape> root_shapes(const Expr& g) {
  std::vector<Shape> shapes = infer_shapes(g, {}), out;
  for (ExprId r : g.roots()) out.push_back(shapes[r.value]);
  return out;
}

class OptimizedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizedModel, WellShapedSameOutputsNoCostlier) {
  RuleCorpus rules = load_corpus(kCorpus / "rules.json");
  auto cost = make_cost_model(kDefaultCostSpec, kCorpus);
  Expr g = build_builtin_model(GetParam());
  OptimizeReport sat = optimize_graph(g, rules, *cost,
                                      {.node_limit = 5'000, .iter_limit = 5, .time_limit_s = 5,
                                       .extract = ExtractMethod::Greedy});
  OptimizeReport seq = optimize_sequential(g, rules, *cost, {.budget = 3, .time_limit_s = 2});
  for (const OptimizeReport* r : {&sat, &seq}) {
    EXPECT_EQ(root_shapes(r->optimized), root_shapes(g));
    EXPECT_LE(r->optimized_cost, r->original_cost * (1 + 1e-12));
    EXPECT_DOUBLE_EQ(r->optimized_cost, graph_cost(r->optimized, *cost));
  }
}

INSTANTIATE_TEST_SUITE_P(All, OptimizedModel, ::testing::ValuesIn(builtin_model_names()),
                         [](const auto& info) { return info.param; });

TEST(OptimizedModels, NasRnnKeepsItsValues) {
  RuleCorpus rules = load_corpus(kCorpus / "rules.json");
  auto cost = make_cost_model(kDefaultCostSpec, kCorpus);
  Expr g = build_builtin_model("nasrnn");
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-0.1, 0.1);
  std::map<std::string, Tensor<double>> leaves;
  for (const ExprNode& n : g.nodes())
    if (is_leaf(n.op)) {
      Tensor<double> t(n.attrs, 0.0);
      for (double& v : t.data) v = dist(rng);
      leaves.emplace(n.name, std::move(t));
    }
  const std::vector<Tensor<double>> expected = evaluate<double>(g, Arith<double>{}, leaves);
  OptimizeReport sat = optimize_graph(g, rules, *cost, {.iter_limit = 5, .time_limit_s = 5, .extract = ExtractMethod::Greedy});
  OptimizeReport seq = optimize_sequential(g, rules, *cost, {.budget = 2, .time_limit_s = 2});
  for (const OptimizeReport* r : {&sat, &seq}) {
    std::vector<Tensor<double>> got = evaluate<double>(r->optimized, Arith<double>{}, leaves);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].shape, expected[0].shape);
    for (size_t i = 0; i < got[0].data.size(); ++i) EXPECT_NEAR(got[0].data[i], expected[0].data[i], 1e-9);
  }
}

}  // namespace
}  // namespace teq
