// E-graph invariants (hash-consing, congruence after rebuild, the shape and weight-only analysis),
// e-matching, right-side shape checks, the runner's limits and derivations one line each.
#include <gtest/gtest.h>

#include "optimizer/engine/cycles.h"
#include "optimizer/engine/egraph.h"
#include "optimizer/engine/pattern.h"
#include "optimizer/engine/runner.h"
#include "rules/rule_growth.h"
#include "rules/sexpr.h"
#include "test_rules.h"

namespace teq {
namespace {

ENode leaf(OpKind op, std::string name, Shape shape) { return ENode{op, std::move(shape), {}, std::move(name)}; }
ENode op(OpKind kind, std::vector<ClassId> children, std::vector<int64_t> attrs = {}) {
  return ENode{kind, std::move(attrs), std::move(children), {}};
}

TEST(EGraph, HashConsesEqualNodes) {
  EGraph g;
  ClassId x = g.add(leaf(OpKind::Input, "x", {2, 3}));
  ClassId r1 = g.add(op(OpKind::Relu, {x}));
  ClassId r2 = g.add(op(OpKind::Relu, {x}));
  EXPECT_EQ(r1, r2);
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.num_classes(), 2u);
  EXPECT_EQ(g.shape(r1), (Shape{2, 3}));
  // Same name, other shape: another leaf.
  EXPECT_NE(g.add(leaf(OpKind::Input, "x", {3, 2})), x);
}

TEST(EGraph, RebuildRestoresCongruence) {
  EGraph g;
  ClassId a = g.add(leaf(OpKind::Input, "a", {2, 2}));
  ClassId b = g.add(leaf(OpKind::Input, "b", {2, 2}));
  ClassId fa = g.add(op(OpKind::Tanh, {a}));
  ClassId fb = g.add(op(OpKind::Tanh, {b}));
  ClassId gfa = g.add(op(OpKind::Relu, {fa}));
  ClassId gfb = g.add(op(OpKind::Relu, {fb}));
  EXPECT_NE(g.find(gfa), g.find(gfb));
  EXPECT_TRUE(g.merge(a, b));
  EXPECT_FALSE(g.merge(a, b));
  EXPECT_FALSE(g.is_clean());
  g.rebuild();
  EXPECT_TRUE(g.is_clean());
  EXPECT_EQ(g.find(fa), g.find(fb));
  EXPECT_EQ(g.find(gfa), g.find(gfb));  // congruence propagates upwards
  EXPECT_EQ(g.num_classes(), 3u);
  EXPECT_EQ(g.num_nodes(), 4u);  // a, b, tanh(ab), relu(tanh(ab))
  EXPECT_EQ(g.eclass(g.find(fa)).nodes.size(), 1u);
  EXPECT_EQ(g.lookup(op(OpKind::Tanh, {b})), g.find(fa));
}

TEST(EGraph, MergeOfDifferentShapesIsABug) {
  EGraph g;
  ClassId a = g.add(leaf(OpKind::Input, "a", {2, 2}));
  ClassId b = g.add(leaf(OpKind::Input, "b", {2, 3}));
  try {
    g.merge(a, b);
    FAIL() << "merge of [2,2] and [2,3] accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("different shapes [2,2] and [2,3]"), std::string::npos) << e.what();
  }
}

TEST(EGraph, IllShapedNodeIsRejected) {
  EGraph g;
  ClassId a = g.add(leaf(OpKind::Input, "a", {2, 3}));
  ClassId b = g.add(leaf(OpKind::Weight, "b", {2, 3}));
  EXPECT_THROW(g.add(op(OpKind::Matmul, {a, b}, {0})), ShapeError);
  EXPECT_THROW(g.add(ENode{OpKind::Var, {}, {}, "x"}), std::invalid_argument);
  EXPECT_EQ(g.num_nodes(), 2u);
}

TEST(EGraph, WeightOnlyAnalysis) {
  EGraph g;
  ClassId x = g.add(leaf(OpKind::Input, "x", {2, 2}));
  ClassId w = g.add(leaf(OpKind::Weight, "w", {2, 2}));
  ClassId ww = g.add(op(OpKind::Matmul, {w, w}, {0}));
  ClassId xw = g.add(op(OpKind::Matmul, {x, w}, {0}));
  ClassId ones = g.add(op(OpKind::Ones, {x}));
  EXPECT_FALSE(g.is_weight_only(x));
  EXPECT_TRUE(g.is_weight_only(w));
  EXPECT_TRUE(g.is_weight_only(ww));
  EXPECT_FALSE(g.is_weight_only(xw));
  EXPECT_TRUE(g.is_weight_only(ones));  // a constant: its values never depend on x
  // An input-dependent class merged with a weight-only one becomes weight-only, and so do its parents.
  ClassId y = g.add(leaf(OpKind::Input, "y", {2, 2}));
  ClassId ry = g.add(op(OpKind::Relu, {y}));
  ClassId rry = g.add(op(OpKind::Tanh, {ry}));
  g.merge(y, ww);
  g.rebuild();
  EXPECT_TRUE(g.is_weight_only(ry));
  EXPECT_TRUE(g.is_weight_only(rry));
}

TEST(Pattern, MatchesAndBindsVariables) {
  EGraph g;
  Expr graph = parse_expr("(matmul 0 (input a 2 3) (matmul 0 (weight b 3 4) (weight c 4 5)))");
  std::vector<ClassId> ids = g.add_expr(graph);
  g.rebuild();
  VarTable vars;
  Pattern p(parse_pattern("(matmul 0 ?a (matmul 0 ?b ?c))"), vars);
  EXPECT_EQ(p.canonical_key(), "(matmul 0 ?0 (matmul 0 ?1 ?2))");
  ClassIndex index(g);
  std::vector<Match> ms = search(g, index, p, vars.names.size());
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].root, g.find(ids[graph.root().value]));
  EXPECT_EQ(ms[0].subst[*vars.find("a")], g.find(ids[0]));
  // Right sides are shape-checked before insertion.
  Pattern good(parse_pattern("(matmul 0 (matmul 0 ?a ?b) ?c)"), vars);
  Pattern bad(parse_pattern("(matmul 0 (matmul 0 ?b ?a) ?c)"), vars);
  EXPECT_TRUE(instantiated_shapes(g, good, ms[0].subst).has_value());
  EXPECT_FALSE(instantiated_shapes(g, bad, ms[0].subst).has_value());
  // A repeated variable must bind one class.
  VarTable v2;
  Pattern same(parse_pattern("(matmul 0 ?x ?x)"), v2);
  EXPECT_TRUE(search(g, index, same, v2.names.size()).empty());
}

/// Saturates `start` (plus `expected`, added to the same e-graph) and reports whether they meet.
bool derives(const RuleCorpus& rules, const std::string& start, const std::string& expected) {
  EGraph g;
  Expr a = parse_expr(start), b = parse_expr(expected);
  std::vector<ClassId> ia = g.add_expr(a), ib = g.add_expr(b);
  Runner(rules.rules, RunnerConfig{.node_limit = 5'000, .iter_limit = 8}).run(g);
  return g.find(ia[a.root().value]) == g.find(ib[b.root().value]);
}

TEST(Runner, Derivations) {
  const RuleCorpus rules = test::engine_test_rules();
  EXPECT_TRUE(derives(rules, "(relu (relu (relu (input x 2 3))))", "(relu (input x 2 3))"));
  EXPECT_TRUE(derives(rules, "(matmul 0 (matmul 0 (input a 2 3) (weight b 3 4)) (weight c 4 5))",
                      "(matmul 0 (input a 2 3) (matmul 0 (weight b 3 4) (weight c 4 5)))"));
  EXPECT_TRUE(derives(rules, "(relu (matmul 0 (input a 2 3) (weight b 3 4)))", "(matmul 2 (input a 2 3) (weight b 3 4))"));
  EXPECT_TRUE(derives(rules, "(split 1 1 1 (concat 1 (input a 2 3) (input b 2 5)) (input a 2 3))", "(input b 2 5)"));
  EXPECT_TRUE(derives(rules, "(transpose 1 0 (transpose 1 0 (input a 2 3)))", "(input a 2 3)"));
  // Not derivable: a wrong identity must not appear.
  EXPECT_FALSE(derives(rules, "(relu (input x 2 3))", "(tanh (input x 2 3))"));
  EXPECT_FALSE(derives(rules, "(matmul 0 (input a 3 3) (weight b 3 3))", "(matmul 0 (weight b 3 3) (input a 3 3))"));
}

// A rule proved for undilated convolutions (5 attributes) never fires on a dilated one: the dilations are
// two more attributes, written only when one is not 1 (rules/ops/conv.h), so the patterns differ.
TEST(Runner, UndilatedConvRulesDoNotFireOnDilatedConvs) {
  RuleCorpus rules;
  rules.rules.push_back(make_rule("conv-relu", {"(relu (conv2d 1 1 -1 -1 0 ?x ?w))"}, {"(conv2d 1 1 -1 -1 2 ?x ?w)"}));
  const std::string xw = " (input x 1 2 7 7) (weight w 3 2 3 3))";
  EXPECT_TRUE(derives(rules, "(relu (conv2d 1 1 -1 -1 0" + xw + ")", "(conv2d 1 1 -1 -1 2" + xw));
  const std::string dilated = "(relu (conv2d 1 1 -1 -1 0 2 2" + xw + ")";
  EXPECT_FALSE(derives(rules, dilated, "(conv2d 1 1 -1 -1 2" + xw));  // the undilated conv: another value
  EXPECT_FALSE(derives(rules, dilated, "(conv2d 1 1 -1 -1 2 2 2" + xw));
  EGraph g;
  g.add_expr(parse_expr(dilated));
  g.rebuild();
  ClassIndex index(g);
  VarTable vars;
  Pattern undilated(parse_pattern("(conv2d 1 1 -1 -1 0 ?x ?w)"), vars);
  EXPECT_TRUE(search(g, index, undilated, vars.names.size()).empty());
  Pattern same_dilation(parse_pattern("(conv2d 1 1 -1 -1 0 2 2 ?x ?w)"), vars);
  EXPECT_EQ(search(g, index, same_dilation, vars.names.size()).size(), 1u);
}

TEST(Runner, StopsAtLimitsAndSaturation) {
  const RuleCorpus rules = test::engine_test_rules();
  {
    EGraph g;
    g.add_expr(parse_expr("(relu (relu (input x 2 3)))"));
    RunReport r = Runner(rules.rules).run(g);
    EXPECT_EQ(r.stop, StopReason::Saturated);
    EXPECT_EQ(r.per_iteration.size(), r.iterations);
  }
  {
    // ewadd chains under assoc + comm grow without bound: the node limit stops them.
    EGraph g;
    g.add_expr(parse_expr("(ewadd (input a 2 2) (ewadd (input b 2 2) (ewadd (input c 2 2) (ewadd (input d 2 2) "
                          "(ewadd (input e 2 2) (input f 2 2))))))"));
    std::vector<IterationStats> seen;
    RunReport r = Runner(rules.rules, RunnerConfig{.node_limit = 300, .iter_limit = 100,
                                                   .on_iteration = [&](const IterationStats& s) { seen.push_back(s); }})
                      .run(g);
    EXPECT_EQ(r.stop, StopReason::NodeLimit);
    EXPECT_EQ(seen.size(), r.iterations);
    EXPECT_GT(seen.back().enodes, 300u);
    EXPECT_NE(to_string(seen.back()).find("e-nodes"), std::string::npos);
  }
  {
    EGraph g;
    g.add_expr(parse_expr("(ewadd (input a 2 2) (ewadd (input b 2 2) (ewadd (input c 2 2) (input d 2 2))))"));
    RunReport r = Runner(rules.rules, RunnerConfig{.iter_limit = 2}).run(g);
    EXPECT_EQ(r.stop, StopReason::IterLimit);
    EXPECT_EQ(r.iterations, 2u);
  }
}

TEST(RuleGrowth, ARuleThatMatchesItsOwnOutputWithALargerTermFeedsItself) {
  // Zero-padding a kernel (the reversal of removing an enlarge) matches its own output with ?k := (enlarge ?k).
  const std::vector<GrowingVar> grows =
      self_feeding_vars(parse_pattern("(conv2d 1 1 -1 -1 0 ?i ?k)"), parse_pattern("(conv2d 1 1 -1 -1 0 ?i (enlarge 3 3 ?k))"));
  ASSERT_EQ(grows.size(), 1u);
  EXPECT_EQ(grows[0].var, "k");
  EXPECT_EQ(grows[0].image_op, OpKind::Enlarge);
  EXPECT_EQ(self_feeding_vars(parse_pattern("(relu ?x)"), parse_pattern("(relu (relu ?x))")).size(), 1u);
  // Commutativity matches its output by renaming only; associativity and a fusion do not match theirs.
  EXPECT_TRUE(self_feeding_vars(parse_pattern("(ewadd ?a ?b)"), parse_pattern("(ewadd ?b ?a)")).empty());
  EXPECT_TRUE(self_feeding_vars(parse_pattern("(ewadd ?a (ewadd ?b ?c))"), parse_pattern("(ewadd (ewadd ?a ?b) ?c)")).empty());
  EXPECT_TRUE(self_feeding_vars(parse_pattern("(relu (matmul 0 ?a ?b))"), parse_pattern("(matmul 2 ?a ?b)")).empty());
  // A repeated variable must bind one term: (ewmul ?a ?a) does not match (ewmul ?a (relu ?a)).
  EXPECT_TRUE(self_feeding_vars(parse_pattern("(ewmul ?a ?a)"), parse_pattern("(ewmul ?a (relu ?a))")).empty());
}

TEST(Runner, ARuleThatFeedsItselfAppliesOneGenerationDeep) {
  // Without the limit, conv(x, k) -> conv(x, enlarge k) -> conv(x, enlarge (enlarge k)) ... adds two e-nodes in
  // every iteration until the iteration limit (the seed's conv-enlarge did this to SqueezeNet).
  RuleCorpus rules;
  rules.rules.push_back(make_rule("pad-kernel", {"(conv2d 1 1 -1 -1 0 ?x ?k)"}, {"(conv2d 1 1 -1 -1 0 ?x (enlarge 3 3 ?k))"}));
  EGraph g;
  const std::string conv = "(conv2d 1 1 -1 -1 0 (input x 1 2 5 5) (weight k 4 2 1 1))";
  g.add_expr(parse_expr(conv));
  const RunReport r = Runner(rules.rules, RunnerConfig{.iter_limit = 20}).run(g);
  EXPECT_EQ(r.stop, StopReason::Saturated);
  EXPECT_LE(r.iterations, 3u);
  EXPECT_EQ(g.num_nodes(), 5u);  // x, k, the conv, enlarge k and the conv on it: one generation
  ASSERT_EQ(r.own_output_skipped.size(), 1u);
  EXPECT_EQ(r.own_output_skipped.begin()->first, "pad-kernel");
  EXPECT_GE(r.own_output_skipped.begin()->second, 1u);
  // The one generation is there: the padded kernel's convolution is in the original's class.
  EXPECT_TRUE(derives(rules, conv, "(conv2d 1 1 -1 -1 0 (input x 1 2 5 5) (enlarge 3 3 (weight k 4 2 1 1)))"));
}

TEST(Runner, BackoffBansRulesWithTooManyMatches) {
  RuleCorpus rules;
  rules.rules.push_back(make_rule("ewadd-comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"}));
  EGraph g;
  g.add_expr(parse_expr("(ewadd (input a 2 2) (ewadd (input b 2 2) (input c 2 2)))"));
  // Two matches exceed a limit of one: banned in the first iteration, nothing applied.
  RunReport r = Runner(rules.rules, RunnerConfig{.iter_limit = 1, .match_limit = 1, .ban_length = 5}).run(g);
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.stop, StopReason::IterLimit);
  // Nothing else changes the e-graph, so (as in egg) the ban is lifted and the doubled limit admits it.
  RunReport r2 = Runner(rules.rules, RunnerConfig{.iter_limit = 3, .match_limit = 1, .ban_length = 5}).run(g);
  EXPECT_GT(r2.applied, 0u);
}

TEST(Runner, SharedCompiledRulesApplyOnlyTheEnabledOnes) {
  RuleCorpus rules;
  rules.rules.push_back(make_rule("relu-idem", {"(relu (relu ?x))"}, {"(relu ?x)"}));
  rules.rules.push_back(make_rule("tanh-tanh", {"(tanh (tanh ?x))"}, {"(tanh ?x)"}));  // a rule to switch off
  auto compiled = std::make_shared<const CompiledRules>(rules.rules, /*cross_product_multi=*/false);
  // Which of relu(relu(x)) = relu(x) and tanh(tanh(x)) = tanh(x) a run with `enabled` finds.
  auto merged = [&](std::vector<char> enabled) {
    EGraph g;
    ClassId x = g.add(leaf(OpKind::Input, "x", {2, 3}));
    ClassId r1 = g.add(op(OpKind::Relu, {x})), r2 = g.add(op(OpKind::Relu, {r1}));
    ClassId t1 = g.add(op(OpKind::Tanh, {x})), t2 = g.add(op(OpKind::Tanh, {t1}));
    Runner(compiled, RunnerConfig{.iter_limit = 4}, enabled).run(g);
    return std::pair(g.find(r1) == g.find(r2), g.find(t1) == g.find(t2));
  };
  EXPECT_EQ(merged({}), std::pair(true, true));  // empty mask: every rule
  EXPECT_EQ(merged({1, 0}), std::pair(true, false));
  EXPECT_EQ(merged({0, 1}), std::pair(false, true));
  EXPECT_EQ(Runner(compiled, RunnerConfig{}).rule_ids(), (std::vector<std::string>{"relu-idem", "tanh-tanh"}));
  // A mask of the wrong length, or rules compiled for another two-pattern policy, are refused.
  EXPECT_THROW(Runner(compiled, RunnerConfig{}, std::vector<char>{1}), std::invalid_argument);
  EXPECT_THROW(Runner(compiled, RunnerConfig{.cross_product_multi = true}), std::invalid_argument);
}

TEST(Runner, MultiPatternRuleWithoutSharedVariablesBecomesSingleRules) {
  RuleCorpus rules;
  rules.rules.push_back(make_rule("two-singles", {"(relu (relu ?x))", "(tanh (tanh ?y))"}, {"(relu ?x)", "(tanh (tanh ?y))"}));
  EXPECT_TRUE(derives(rules, "(relu (relu (input x 2 3)))", "(relu (input x 2 3))"));
  rules.rules.push_back(make_rule("three", {"(relu ?x)", "(tanh ?x)", "(sigmoid ?x)"}, {"(relu ?x)", "(tanh ?x)", "(sigmoid ?x)"}));
  EGraph g;
  g.add_expr(parse_expr("(relu (input x 2 3))"));
  RunReport r = Runner(rules.rules).run(g);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("rule 'three'"), std::string::npos);
}

TEST(Cycles, ReachabilityAndBlacklist) {
  EGraph g;
  Expr graph = parse_expr("(relu (relu (input x 2 3)))");
  std::vector<ClassId> ids = g.add_expr(graph);
  const ClassId x = ids[0], r1 = ids[1], r2 = ids[2];
  {
    ReachabilityIndex reach(g);
    EXPECT_TRUE(reach.reaches(r2, x));
    EXPECT_FALSE(reach.reaches(x, r2));
  }
  // relu(relu x) = relu x: the class of relu x now contains relu(itself), a self-loop.
  g.merge(r1, r2);
  g.rebuild();
  ReachabilityIndex reach(g);
  EXPECT_TRUE(reach.reaches(r1, r1));
  std::vector<bool> blacklist;
  CycleFilterStats s = blacklist_cycles(g, blacklist);
  EXPECT_EQ(s.blacklisted, 1u);
  // The newest node on the cycle (the outer relu) goes; relu(x) stays usable.
  for (NodeId n : g.eclass(g.find(r1)).nodes)
    EXPECT_EQ(blacklist[n.value], g.node(n).children[0] == g.find(r1)) << n.value;
}

TEST(Cycles, SccNumbersDescendantsFirst) {
  // 0 -> 1 -> 2 -> 1, 2 -> 3
  std::vector<std::vector<uint32_t>> adj{{1}, {2}, {1, 3}, {}};
  std::vector<uint32_t> comp = strongly_connected_components(adj);
  EXPECT_EQ(comp[1], comp[2]);
  EXPECT_LT(comp[3], comp[1]);
  EXPECT_LT(comp[1], comp[0]);
}

}  // namespace
}  // namespace teq
