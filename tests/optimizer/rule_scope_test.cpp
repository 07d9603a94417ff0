// Rewriters stay inside what verification covered (rules/rule_scope.h): the corpus's conv-share-input
// rule is false for grouped convolutions, so it must merge two ungrouped convolutions and leave two
// grouped ones alone, in the e-graph and in the sequential search.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "optimizer/optimize.h"
#include "optimizer/sequential.h"
#include "rules/evaluator.h"
#include "rules/rule_scope.h"
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
                   {"(conv2d 1 1 0 0 0 (concat 1 ?x1 ?x2) (concat 0 ?w1 ?w2))"}, {{"?x1", "?x2"}, {"?w1", "?w2"}},
                   {"uu|g"});
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
  // Without its scope the rule is applied where every convolution is ungrouped only, and its merged one is not.
  rules.rules.back().conv_groupings.clear();
  EXPECT_EQ(count(with_egraph(two_convs_concatenated(4), rules).optimized, OpKind::Conv2d), 2u);
  EXPECT_EQ(count(with_sequential_search(two_convs_concatenated(4), rules).optimized, OpKind::Conv2d), 2u);
}

// The left side's grouping counts as much as the right side's. Folding a copied input into a merged kernel
// (rulegen's rg-0264) is right only where the right side's convolution is ungrouped, its scope "g|u": two
// depthwise convolutions of one input merged through the reversed grouped merge give a match whose right side
// would be grouped ("g|g"), which wrote wrong models before the scope covered both sides.
Rule fold_copied_input() {
  return make_rule("fold-copy", {"(conv2d 1 1 -1 -1 0 (concat 1 ?i1 ?i1) (concat 0 ?a1 ?a2))"},
                   {"(conv2d 1 1 -1 -1 0 ?i1 (concat 0 ?a1 ?a2))"}, {{"?a1", "?a2"}}, {"g|u"});
}

Expr conv_of_copied_input(int64_t kernel_in_channels) {
  const std::string c = std::to_string(kernel_in_channels);
  return parse_expr("(let x (input x 1 4 6 6))\n(conv2d 1 1 -1 -1 0 (concat 1 x x) (concat 0 (weight a 4 " + c +
                    " 3 3) (weight b 4 " + c + " 3 3)))");
}

TEST(RuleScope, LeftSideGroupingIsCheckedToo) {
  RuleCorpus rules;
  rules.rules.push_back(fold_copied_input());
  for (const Optimizer& optimize : {Optimizer(with_egraph), Optimizer(with_sequential_search)}) {
    // Kernels of 4 input channels: 2 groups on the left, ungrouped on the right ("g|u"), folded.
    const OptimizeReport folded = optimize(conv_of_copied_input(4), rules);
    EXPECT_EQ(count(folded.optimized, OpKind::Concat), 1u) << print_graph(folded.optimized);
    expect_same_values(conv_of_copied_input(4), folded.optimized);
    // Kernels of 2: 4 groups on the left, 2 on the right ("g|g"), outside the scope: left alone.
    const OptimizeReport kept = optimize(conv_of_copied_input(2), rules);
    EXPECT_EQ(count(kept.optimized, OpKind::Concat), 2u) << print_graph(kept.optimized);
  }
  // The scope names both sides, so the rule used right to left is checked by the same grouping, swapped.
  const std::optional<Rule> rev = reversed_rule(fold_copied_input());
  ASSERT_TRUE(rev.has_value());
  EXPECT_TRUE(scope_admits(*rev, "u|g"));
  EXPECT_FALSE(scope_admits(*rev, "g|g"));
  EXPECT_FALSE(scope_admits(*rev, "u|u"));
}

TEST(RuleScope, GroupingsAreReadOffBothSides) {
  const Rule rule = fold_copied_input();
  EXPECT_EQ(ungrouped_grouping(rule), "u|u");
  EXPECT_EQ(instance_grouping(rule, {{"i1", {1, 4, 6, 6}}, {"a1", {4, 4, 3, 3}}, {"a2", {4, 4, 3, 3}}}), "g|u");
  EXPECT_EQ(instance_grouping(rule, {{"i1", {1, 4, 6, 6}}, {"a1", {4, 2, 3, 3}}, {"a2", {4, 2, 3, 3}}}), "g|g");
  EXPECT_EQ(instance_grouping(rule, {{"i1", {1, 4, 6, 6}}, {"a1", {3, 3, 3, 3}}, {"a2", {3, 3, 3, 3}}}), std::nullopt);
  EXPECT_EQ(all_groupings(rule), (std::vector<std::string>{"u|u", "g|u", "u|g", "g|g"}));
  EXPECT_EQ(split_grouping("g,u|uu"), (SidedGrouping{{"g", "u"}, {"uu"}}));
  // A pool kernel's shape is no free shape: its convolution is outside the scope's letters.
  EXPECT_EQ(scoped_convs(parse_pattern("(conv2d 1 1 -1 -1 0 ?x (pool_kernel 3 3 ?x))")).size(), 0u);
}

}  // namespace
}  // namespace teq
