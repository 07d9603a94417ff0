// Rewriters stay inside what verification covered (rules/rule_scope.h): the corpus's conv-share-input
// rule is false for grouped convolutions, so it must merge two ungrouped convolutions and leave two
// grouped ones alone, in the e-graph and in the sequential search.
#include <gtest/gtest.h>

#include <random>

#include "optimizer/optimize.h"
#include "optimizer/sequential.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

RuleCorpus share_input_rule() {
  RuleCorpus corpus = load_corpus(std::string(TEQ_SOURCE_DIR) + "/tests/data/seed.json");
  const Rule* rule = corpus.find("conv-share-input");
  EXPECT_NE(rule, nullptr);
  RuleCorpus one;
  one.rules.push_back(*rule);
  return one;
}

Expr two_convs(int64_t weight_in_channels) {
  const std::string w = std::to_string(weight_in_channels);
  return parse_expr("(let x (input x 1 4 6 6))\n(conv2d 1 1 -1 -1 0 x (weight a 4 " + w +
                    " 3 3))\n(conv2d 1 1 -1 -1 0 x (weight b 4 " + w + " 3 3))");
}

std::map<std::string, Tensor<double>> random_leaves(const Expr& g) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::map<std::string, Tensor<double>> leaves;
  for (const ExprNode& n : g.nodes())
    if (n.op == OpKind::Input || n.op == OpKind::Weight) {
      std::vector<double> v(num_elements(n.attrs));
      for (double& x : v) x = u(rng);
      leaves.emplace(n.name, Tensor<double>(n.attrs, std::move(v)));
    }
  return leaves;
}

void expect_same_values(const Expr& a, const Expr& b) {
  auto leaves = random_leaves(a);
  auto va = evaluate<double>(a, Arith<double>{}, leaves), vb = evaluate<double>(b, Arith<double>{}, leaves);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t k = 0; k < va.size(); ++k)
    for (size_t i = 0; i < va[k].data.size(); ++i) ASSERT_NEAR(va[k].data[i], vb[k].data[i], 1e-9);
}

size_t count(const Expr& g, OpKind op) {
  size_t n = 0;
  std::vector<bool> live(g.size(), false);
  for (ExprId r : g.roots()) live[r.value] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (live[i]) {
      n += g.nodes()[i].op == op;
      for (ExprId c : g.nodes()[i].children) live[c.value] = true;
    }
  return n;
}

// Launch overhead dominates, so merging two convolutions into one pays whenever it is allowed.
const FlopCostModel kOverheadCost(FlopCostModel::Config{.per_flop = 1e-15, .per_element = 1e-15, .per_node = 1e-3});

TEST(RuleScope, EGraphMergesUngroupedConvsOnly) {
  const RuleCorpus rules = share_input_rule();
  OptimizeConfig config;
  config.extract = ExtractMethod::Ilp;
  const Expr dense = two_convs(4), grouped = two_convs(2);
  OptimizeReport d = optimize_graph(dense, rules, kOverheadCost, config);
  EXPECT_EQ(count(d.optimized, OpKind::Conv2d), 1u) << print_graph(d.optimized);
  expect_same_values(dense, d.optimized);
  OptimizeReport g = optimize_graph(grouped, rules, kOverheadCost, config);
  EXPECT_EQ(count(g.optimized, OpKind::Conv2d), 2u) << print_graph(g.optimized);
  expect_same_values(grouped, g.optimized);
}

TEST(RuleScope, SequentialSearchMergesUngroupedConvsOnly) {
  const RuleCorpus rules = share_input_rule();
  const Expr dense = two_convs(4), grouped = two_convs(2);
  OptimizeReport d = optimize_sequential(dense, rules, kOverheadCost, SequentialConfig{});
  EXPECT_EQ(count(d.optimized, OpKind::Conv2d), 1u) << print_graph(d.optimized);
  expect_same_values(dense, d.optimized);
  OptimizeReport g = optimize_sequential(grouped, rules, kOverheadCost, SequentialConfig{});
  EXPECT_EQ(count(g.optimized, OpKind::Conv2d), 2u) << print_graph(g.optimized);
  expect_same_values(grouped, g.optimized);
}

}  // namespace
}  // namespace teq
