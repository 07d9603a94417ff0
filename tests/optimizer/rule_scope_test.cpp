// Rewriters stay inside what verification covered (rules/rule_scope.h): the corpus's conv-share-input
// rule is false for grouped convolutions, so it must merge two ungrouped convolutions and leave two
// grouped ones alone, in the e-graph and in the sequential search.
#include <gtest/gtest.h>

#include <functional>
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

using Optimizer = std::function<OptimizeReport(const Expr&, const RuleCorpus&)>;

OptimizeReport with_egraph(const Expr& g, const RuleCorpus& rules) {
  OptimizeConfig config;
  config.extract = ExtractMethod::Ilp;
  return optimize_graph(g, rules, kOverheadCost, config);
}

OptimizeReport with_sequential_search(const Expr& g, const RuleCorpus& rules) {
  return optimize_sequential(g, rules, kOverheadCost, SequentialConfig{});
}

/// `optimize` merges the two convolutions of `merged` into one and leaves `kept`'s two alone, without changing a
/// value of either.
void expect_merges_only(const Optimizer& optimize, const RuleCorpus& rules, const Expr& merged, const Expr& kept) {
  for (const auto& [g, convs] : {std::pair{&merged, 1u}, std::pair{&kept, 2u}}) {
    const OptimizeReport r = optimize(*g, rules);
    EXPECT_EQ(count(r.optimized, OpKind::Conv2d), convs) << print_graph(r.optimized);
    expect_same_values(*g, r.optimized);
  }
}

TEST(RuleScope, EGraphMergesUngroupedConvsOnly) {
  expect_merges_only(with_egraph, share_input_rule(), two_convs(4), two_convs(2));
}

TEST(RuleScope, SequentialSearchMergesUngroupedConvsOnly) {
  expect_merges_only(with_sequential_search, share_input_rule(), two_convs(4), two_convs(2));
}

// Tensat's grouped merge (its rule 92) as its correct instance: two convolutions of different inputs become
// one grouped convolution, right only where the inputs and the kernels have equal shapes (Rule::same_shape).
// Rewriters apply its grouped convolution where the conditions hold and nowhere else: kernels of 4 and 6
// outputs would give each group 5.
Rule grouped_merge() {
  return make_rule("grouped-merge", {"(concat 1 (conv2d 1 1 0 0 0 ?x1 ?w1) (conv2d 1 1 0 0 0 ?x2 ?w2))"},
                   {"(conv2d 1 1 0 0 0 (concat 1 ?x1 ?x2) (concat 0 ?w1 ?w2))"}, {{"?x1", "?x2"}, {"?w1", "?w2"}});
}

Expr two_convs_concatenated(int64_t second_outputs) {
  return parse_expr("(concat 1 (conv2d 1 1 0 0 0 (input x 1 3 6 6) (weight a 4 3 3 3)) (conv2d 1 1 0 0 0 "
                    "(input y 1 3 6 6) (weight b " + std::to_string(second_outputs) + " 3 3 3)))");
}

TEST(RuleScope, GroupedMergeAppliesWhereItsShapeConditionsHold) {
  RuleCorpus rules;
  rules.rules.push_back(grouped_merge());
  expect_merges_only(with_egraph, rules, two_convs_concatenated(4), two_convs_concatenated(6));
  expect_merges_only(with_sequential_search, rules, two_convs_concatenated(4), two_convs_concatenated(6));
  // Without its conditions the rule is out of scope (a grouped convolution on kernels of free shape).
  rules.rules.back().same_shape.clear();
  EXPECT_EQ(count(with_egraph(two_convs_concatenated(4), rules).optimized, OpKind::Conv2d), 2u);
}

}  // namespace
}  // namespace teq
