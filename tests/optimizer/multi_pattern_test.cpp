// Multi-pattern rules (Tensat): two matmuls sharing an input become one matmul on concatenated weights
// plus splits exactly when the cost model favours it; unordered pairs; k_multi; the cycle pre-filter.
#include <gtest/gtest.h>

#include <random>

#include "optimizer/engine/cycles.h"
#include "optimizer/engine/extract.h"
#include "optimizer/optimize.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

RuleCorpus share_input_rule() {
  RuleCorpus c;
  c.rules.push_back(make_rule("matmul-share-input", {"(matmul 0 ?x ?w1)", "(matmul 0 ?x ?w2)"},
                              {"(split -1 0 -1 (matmul 0 ?x (concat -1 ?w1 ?w2)) ?w1)",
                               "(split -1 1 -1 (matmul 0 ?x (concat -1 ?w1 ?w2)) ?w1)"}));
  return c;
}

size_t count_ops(const Expr& g, OpKind op) {
  size_t n = 0;
  for (const ExprNode& node : g.nodes()) n += node.op == op;
  return n;
}

void expect_same_values(const Expr& a, const Expr& b) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> value(-1, 1);
  std::map<std::string, Tensor<double>> leaves;
  for (const ExprNode& n : a.nodes())
    if (n.op == OpKind::Input || n.op == OpKind::Weight) {
      Tensor<double> t(n.attrs, 0.0);
      for (double& v : t.data) v = value(rng);
      leaves.emplace(n.name, std::move(t));
    }
  auto va = evaluate<double>(a, Arith<double>{}, leaves), vb = evaluate<double>(b, Arith<double>{}, leaves);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_EQ(va[i].shape, vb[i].shape);
    for (size_t j = 0; j < va[i].data.size(); ++j) EXPECT_NEAR(va[i].data[j], vb[i].data[j], 1e-12);
  }
}

const char* kTwoMatmuls = "(let x (input x 4 8)) (matmul 0 x (weight w1 8 6)) (matmul 0 x (weight w2 8 6))";

TEST(MultiPattern, MergesSharedInputMatmulsWhenLaunchesDominate) {
  const Expr graph = parse_expr(kTwoMatmuls);
  FlopCostModel launch_bound(FlopCostModel::Config{.per_flop = 1e-12, .per_element = 4e-12, .per_node = 5e-6});
  OptimizeReport r = optimize_graph(graph, share_input_rule(), launch_bound, {.extract = ExtractMethod::Ilp});
  EXPECT_EQ(count_ops(r.optimized, OpKind::Matmul), 1u) << print_graph(r.optimized);
  EXPECT_EQ(count_ops(r.optimized, OpKind::Split), 2u);
  EXPECT_EQ(count_ops(r.optimized, OpKind::Concat), 1u);  // on weights: precomputed, free
  EXPECT_LT(r.optimized_cost, r.original_cost);
  EXPECT_EQ(r.rules_used["matmul-share-input"], 4u);  // 2 splits, the merged matmul, the concat
  EXPECT_EQ(r.extraction.method, "ilp");
  EXPECT_DOUBLE_EQ(r.extraction.gap, 0);
  expect_same_values(graph, r.optimized);
  // Expected costs, computed by hand: one launch instead of two, the splits copy 2 x (24 + 48 + 24).
  const double separate = 2 * (5e-6 + 1e-12 * 4 * 6 * 8 + 4e-12 * (32 + 48 + 24));
  EXPECT_NEAR(r.original_cost, separate, 1e-15);
  const double merged = 5e-6 + 1e-12 * 4 * 12 * 8 + 4e-12 * (32 + 96 + 48) + 2 * 4e-12 * (48 + 24);
  EXPECT_NEAR(r.optimized_cost, merged, 1e-15);
}

TEST(MultiPattern, KeepsSeparateMatmulsWhenTrafficDominates) {
  const Expr graph = parse_expr(kTwoMatmuls);
  // No launch cost: the merged form saves reading x once (32) but its splits copy 144 elements.
  FlopCostModel traffic_bound(FlopCostModel::Config{.per_flop = 0, .per_element = 1, .per_node = 0});
  OptimizeReport r = optimize_graph(graph, share_input_rule(), traffic_bound, {.extract = ExtractMethod::Ilp});
  EXPECT_EQ(count_ops(r.optimized, OpKind::Matmul), 2u) << print_graph(r.optimized);
  EXPECT_EQ(count_ops(r.optimized, OpKind::Split), 0u);
  EXPECT_DOUBLE_EQ(r.original_cost, 208);
  EXPECT_DOUBLE_EQ(r.optimized_cost, 208);
  EXPECT_TRUE(r.rules_used.empty());
  EXPECT_GT(r.enodes, graph.size());  // the rule did fire; extraction declined it
}

TEST(MultiPattern, ConsidersUnorderedPairsOnceAndOnlyInFirstIterations) {
  const Expr three = parse_expr(
      "(let x (input x 4 8)) (matmul 0 x (weight a 8 2)) (matmul 0 x (weight b 8 3)) (matmul 0 x (weight c 8 5))");
  const RuleCorpus rules = share_input_rule();
  {
    EGraph g;
    g.add_expr(three);
    RunReport r = Runner(rules.rules, RunnerConfig{.iter_limit = 1}).run(g);
    EXPECT_EQ(r.per_iteration[0].matches, 3u);  // {a,b}, {a,c}, {b,c}
    EXPECT_EQ(r.applied, 6u);                   // two right sides each
  }
  {
    EGraph g;
    g.add_expr(three);
    const size_t before = g.num_nodes();
    RunReport r = Runner(rules.rules, RunnerConfig{.iter_limit = 5, .k_multi = 0}).run(g);
    EXPECT_EQ(r.applied, 0u);
    EXPECT_EQ(g.num_nodes(), before);
    EXPECT_EQ(r.stop, StopReason::Saturated);
  }
}

TEST(MultiPattern, CrossProductRulesOnlyWhenAskedAndInBothOrders) {
  // relu-batch: the two patterns share no variable, each right side uses both.
  const std::vector<Rule> rules = {make_rule(
      "relu-batch", {"(relu ?a)", "(relu ?b)"},
      {"(split 0 0 0 (relu (concat 0 ?a ?b)) ?a)", "(split 0 1 0 (relu (concat 0 ?a ?b)) ?a)"})};
  const Expr two = parse_expr("(relu (input x 2 3)) (relu (input y 4 3))");
  {
    EGraph g;
    g.add_expr(two);
    const size_t before = g.num_nodes();
    RunReport r = Runner(rules, RunnerConfig{.iter_limit = 1}).run(g);
    EXPECT_EQ(r.applied, 0u);
    EXPECT_EQ(g.num_nodes(), before);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("share no variable"), std::string::npos) << r.notes[0];
  }
  {
    EGraph g;
    g.add_expr(two);
    RunReport r = Runner(rules, RunnerConfig{.iter_limit = 1, .cross_product_multi = true}).run(g);
    EXPECT_TRUE(r.notes.empty());
    EXPECT_EQ(r.per_iteration[0].matches, 2u);  // (x, y) and (y, x)
    EXPECT_EQ(r.applied, 4u);
    // Both concatenation orders are in the e-graph: adding either again adds no e-node.
    g.rebuild();
    for (const char* concat : {"(concat 0 (input x 2 3) (input y 4 3))", "(concat 0 (input y 4 3) (input x 2 3))"}) {
      const size_t before = g.num_nodes();
      g.add_expr(parse_expr(concat));
      EXPECT_EQ(g.num_nodes(), before) << concat;
    }
  }
}

TEST(MultiPattern, PreFilterRefusesApplicationsThatCloseACycle) {
  // b = x * a where a = x * w: merging a with split(x * concat(w, a)) would make a its own descendant.
  const Expr graph = parse_expr("(let x (input x 4 4)) (let a (matmul 0 x (weight w 4 4))) (matmul 0 x a)");
  EGraph g;
  std::vector<ClassId> ids = g.add_expr(graph);
  RunReport r = Runner(share_input_rule().rules, RunnerConfig{.iter_limit = 1}).run(g);
  EXPECT_EQ(r.rejected_cycle, 1u);
  EXPECT_EQ(r.applied, 0u);
  std::vector<bool> blacklist;
  EXPECT_EQ(blacklist_cycles(g, blacklist).blacklisted, 0u);
  // End to end the result is still the (acyclic) original.
  FlopCostModel cost;
  OptimizeReport rep = optimize_graph(graph, share_input_rule(), cost, {.extract = ExtractMethod::Ilp});
  expect_same_values(graph, rep.optimized);
}

}  // namespace
}  // namespace teq
