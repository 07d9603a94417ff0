// The TASO-style sequential baseline (optimizer/sequential.h): it lowers cost with the same rules as
// saturation, keeps values (checked on the reference evaluator), never returns a cyclic or costlier
// graph, and respects its budget.
#include <gtest/gtest.h>

#include <random>

#include "optimizer/engine/cost_model.h"
#include "optimizer/engine/extract.h"
#include "optimizer/sequential.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

RuleCorpus rules_for_test() {
  RuleCorpus c;
  c.rules.push_back(make_rule("matmul-share-input", {"(matmul 0 ?x ?w1)", "(matmul 0 ?x ?w2)"},
                              {"(split 1 0 1 (matmul 0 ?x (concat 1 ?w1 ?w2)) ?w1)",
                               "(split 1 1 1 (matmul 0 ?x (concat 1 ?w1 ?w2)) ?w1)"}));
  c.rules.push_back(make_rule("conv-relu-fuse", {"(relu (conv2d 1 1 -1 -1 0 ?x ?w))"}, {"(conv2d 1 1 -1 -1 2 ?x ?w)"}));
  c.rules.push_back(make_rule("ewadd-comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"}));
  c.rules.push_back(make_rule("relu-relu", {"(relu (relu ?x))"}, {"(relu ?x)"}));
  return c;
}

std::map<std::string, Tensor<double>> random_leaves(const Expr& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::map<std::string, Tensor<double>> leaves;
  for (const ExprNode& n : g.nodes())
    if (n.op == OpKind::Input || n.op == OpKind::Weight) {
      Tensor<double> t(n.attrs, 0.0);
      for (double& v : t.data) v = dist(rng);
      leaves.emplace(n.name, std::move(t));
    }
  return leaves;
}

void expect_same_values(const Expr& a, const Expr& b) {
  auto leaves = random_leaves(a, 11);
  auto va = evaluate<double>(a, Arith<double>{}, leaves);
  auto vb = evaluate<double>(b, Arith<double>{}, leaves);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t r = 0; r < va.size(); ++r) {
    ASSERT_EQ(va[r].shape, vb[r].shape);
    for (size_t i = 0; i < va[r].data.size(); ++i) EXPECT_NEAR(va[r].data[i], vb[r].data[i], 1e-9);
  }
}

size_t count_op(const Expr& g, OpKind op) {
  size_t n = 0;
  for (const ExprNode& node : g.nodes()) n += node.op == op;
  return n;
}

TEST(Sequential, MergesMatmulsSharingAnInput) {
  Expr g = parse_expr(
      "(let x (input x 4 8)) (relu (matmul 0 x (weight a 8 6))) (tanh (matmul 0 x (weight b 8 5)))");
  FlopCostModel cost;
  OptimizeReport r = optimize_sequential(g, rules_for_test(), cost, {});
  EXPECT_LT(r.optimized_cost, r.original_cost);
  EXPECT_EQ(count_op(r.optimized, OpKind::Matmul), 1u);
  EXPECT_EQ(r.rules_used["matmul-share-input"], 1u);
  EXPECT_DOUBLE_EQ(r.original_cost, graph_cost(g, cost));
  EXPECT_DOUBLE_EQ(r.optimized_cost, graph_cost(r.optimized, cost));
  EXPECT_EQ(r.stop.reason, SearchStop::Reason::QueueEmpty);
  EXPECT_EQ(to_string(r.stop), "queue-empty");
  expect_same_values(g, r.optimized);
}

TEST(Sequential, FusesReluIntoConvolution) {
  Expr g = parse_expr("(relu (relu (conv2d 1 1 -1 -1 0 (input x 1 3 6 6) (weight w 4 3 3 3))))");
  FlopCostModel cost;
  OptimizeReport r = optimize_sequential(g, rules_for_test(), cost, {});
  EXPECT_EQ(r.optimized.num_ops(), 1u) << print_graph(r.optimized);
  EXPECT_EQ(r.optimized[r.optimized.root()].attrs.back(), 2);  // fused relu
  expect_same_values(g, r.optimized);
}

TEST(Sequential, RejectsRewritesThatWouldBeCyclic) {
  // b = x * a where a = x * w: merging the two matmuls would need a before a exists.
  Expr g = parse_expr("(let x (input x 4 4)) (let a (matmul 0 x (weight w 4 4))) (matmul 0 x a)");
  FlopCostModel cost;
  OptimizeReport r = optimize_sequential(g, rules_for_test(), cost, {});
  EXPECT_NO_THROW(infer_shapes(r.optimized, {}));
  EXPECT_EQ(r.optimized_cost, r.original_cost);
  expect_same_values(g, r.optimized);
}

// A count, not seconds, stops a search that would run long: the same graphs are generated on any machine.
TEST(Sequential, GraphLimitStopsAfterThatManyDistinctGraphs) {
  Expr g = parse_expr("(ewadd (ewadd (input a 2 3) (input b 2 3)) (ewadd (input c 2 3) (input d 2 3)))");
  FlopCostModel cost;
  OptimizeReport all = optimize_sequential(g, rules_for_test(), cost, {});
  ASSERT_GT(all.enodes, 3u) << "the test needs a search that generates more than 3 graphs";
  OptimizeReport r = optimize_sequential(g, rules_for_test(), cost, {.max_graphs = 3});
  EXPECT_EQ(r.stop.reason, SearchStop::Reason::GraphLimit);
  EXPECT_EQ(to_string(r.stop), "graph-limit");
  EXPECT_EQ(r.enodes, 3u);
  EXPECT_LE(r.optimized_cost, r.original_cost);
  expect_same_values(g, r.optimized);
}

TEST(Sequential, BudgetZeroReturnsTheInput) {
  Expr g = parse_expr("(relu (relu (input x 2 3)))");
  FlopCostModel cost;
  OptimizeReport r = optimize_sequential(g, rules_for_test(), cost, {.budget = 0});
  EXPECT_EQ(r.stop.reason, SearchStop::Reason::Budget);
  EXPECT_EQ(r.optimized_cost, r.original_cost);
  EXPECT_EQ(r.optimized.num_ops(), 2u);
}

TEST(Sequential, WeightOnlyWorkIsFree) {
  // The matmul of two weights is precomputed at load time, so only the ewadd costs.
  Expr g = parse_expr("(ewadd (input x 4 4) (matmul 0 (weight a 4 4) (weight b 4 4)))");
  FlopCostModel cost;
  OptimizeReport r = optimize_sequential(g, rules_for_test(), cost, {});
  Shape s{4, 4};
  std::vector<Shape> in{s, s};
  EXPECT_DOUBLE_EQ(r.original_cost, cost.node_cost(OpKind::EwAdd, {}, in, s));
}

TEST(Sequential, KeepsSeveralOutputsInOrder) {
  Expr g = parse_expr("(let x (input x 3 4)) (matmul 0 x (weight a 4 2)) (matmul 0 x (weight b 4 7)) (relu x)");
  FlopCostModel cost;
  OptimizeReport r = optimize_sequential(g, rules_for_test(), cost, {});
  ASSERT_EQ(r.optimized.roots().size(), 3u);
  auto shapes = infer_shapes(r.optimized, {});
  EXPECT_EQ(shapes[r.optimized.roots()[0].value], (Shape{3, 2}));
  EXPECT_EQ(shapes[r.optimized.roots()[1].value], (Shape{3, 7}));
  EXPECT_EQ(shapes[r.optimized.roots()[2].value], (Shape{3, 4}));
  expect_same_values(g, r.optimized);
}

TEST(Sequential, SaturationIsNoWorseOnTheSameProblem) {
  Expr g = parse_expr(
      "(let x (input x 4 8)) (ewadd (relu (matmul 0 x (weight a 8 6))) (matmul 0 x (weight b 8 6)))");
  FlopCostModel cost;
  RuleCorpus rules = rules_for_test();
  OptimizeReport seq = optimize_sequential(g, rules, cost, {});
  OptimizeReport sat = optimize_graph(g, rules, cost, {.extract = ExtractMethod::Ilp});
  EXPECT_LE(sat.optimized_cost, seq.optimized_cost * (1 + 1e-12));
}

}  // namespace
}  // namespace teq
