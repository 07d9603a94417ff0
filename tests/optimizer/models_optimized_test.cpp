// The built-in models through both optimizers with the project's rule corpus and the default cost
// model: results are well-shaped, keep their outputs, never cost more, and (for NasRNN, small enough for
// the CPU reference evaluator) compute the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "optimizer/cost/cost_models.h"
#include "optimizer/engine/extract.h"
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
  RuleCorpus rules = load_corpus(std::filesystem::path(TEQ_SOURCE_DIR) / "tests" / "data" / "seed.json");
  auto cost = make_cost_model(kDefaultCostSpec, kCorpus);
  Expr g = build_builtin_model(GetParam());
  OptimizeReport sat = optimize_graph(g, rules, *cost,
                                      {.saturation = {.node_limit = 5'000, .iter_limit = 5, .time_limit_s = 5},
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

/// Seeded random values for every input and weight of `g`.
std::map<std::string, Tensor<double>> random_leaves(const Expr& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-0.1, 0.1);
  std::map<std::string, Tensor<double>> leaves;
  for (const ExprNode& n : g.nodes())
    if (is_leaf(n.op)) {
      Tensor<double> t(n.attrs, 0.0);
      for (double& v : t.data) v = dist(rng);
      leaves.emplace(n.name, std::move(t));
    }
  return leaves;
}

void expect_same_values(const Expr& optimized, const std::map<std::string, Tensor<double>>& leaves,
                        const std::vector<Tensor<double>>& expected) {
  std::vector<Tensor<double>> got = evaluate<double>(optimized, Arith<double>{}, leaves);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape, expected[k].shape);
    for (size_t i = 0; i < got[k].data.size(); ++i) EXPECT_NEAR(got[k].data[i], expected[k].data[i], 1e-9);
  }
}

TEST(OptimizedModels, NasRnnKeepsItsValues) {
  RuleCorpus rules = load_corpus(std::filesystem::path(TEQ_SOURCE_DIR) / "tests" / "data" / "seed.json");
  auto cost = make_cost_model(kDefaultCostSpec, kCorpus);
  Expr g = build_builtin_model("nasrnn");
  const auto leaves = random_leaves(g, 3);
  const std::vector<Tensor<double>> expected = evaluate<double>(g, Arith<double>{}, leaves);
  OptimizeReport sat = optimize_graph(g, rules, *cost, {.saturation = {.iter_limit = 5, .time_limit_s = 5}, .extract = ExtractMethod::Greedy});
  OptimizeReport seq = optimize_sequential(g, rules, *cost, {.budget = 2, .time_limit_s = 2});
  for (const OptimizeReport* r : {&sat, &seq}) expect_same_values(r->optimized, leaves, expected);
}

// NasRNN's cells batch their matmuls in stages: a pair of matmuls becomes batchable only after an earlier
// batching, which a multi-pattern rule (applied in the first iteration only) sees in the next round.
/// TASO's convention, for testing the rounds mechanism only: a split is a free view (an offset into its
/// input). The product's cost models price it as the copy ONNX Slice is, and then merging NasRNN's matmuls
/// does not pay at all, so there would be nothing for further rounds to find.
class FreeSplitCost final : public CostModel {
 public:
  std::string name() const override { return "test:free-split"; }
  double node_cost(const NodeContext& node) const override {
    return node.op == OpKind::Split ? 0 : base_->node_cost(node);
  }

 private:
  CostModelHandle base_ = make_cost_model(kDefaultCostSpec, kCorpus);
};

TEST(OptimizedModels, NasRnnFurtherRoundsLowerTheCostAndKeepValues) {
  RuleCorpus rules = load_corpus(std::filesystem::path(TEQ_SOURCE_DIR) / "tests" / "data" / "seed.json");
  auto cost = std::make_unique<FreeSplitCost>();
  Expr g = build_builtin_model("nasrnn");
  const OptimizeConfig one{.saturation = {.node_limit = 10'000, .time_limit_s = 20}, .rounds = 1,
                           .ilp_time_limit_s = 20};
  OptimizeConfig several = one;
  several.rounds = 4;
  OptimizeReport r1 = optimize_graph(g, rules, *cost, one);
  OptimizeReport r4 = optimize_graph(g, rules, *cost, several);
  EXPECT_EQ(r1.rounds, 1u);
  EXPECT_GT(r4.rounds, 1u);
  EXPECT_LE(r4.rounds, 4u);
  EXPECT_LT(r4.optimized_cost, r1.optimized_cost);
  EXPECT_DOUBLE_EQ(r4.optimized_cost, graph_cost(r4.optimized, *cost));
  const auto leaves = random_leaves(g, 5);
  expect_same_values(r4.optimized, leaves, evaluate<double>(g, Arith<double>{}, leaves));
}

}  // namespace
}  // namespace teq
