#include <gtest/gtest.h>

#include "rules/sexpr.h"
#include "verify/elementwise.h"
#include "verify/prover.h"

namespace teq {
namespace {

ShapeAssignments search(std::vector<std::string> texts, ShapeSearchOptions opt = {}) {
  std::vector<Expr> es;
  for (const std::string& t : texts) es.push_back(parse_pattern(t));
  std::vector<const Expr*> ps;
  for (const Expr& e : es) ps.push_back(&e);
  return find_shape_assignments(ps, opt);
}

TEST(ShapeSearch, MatmulChainGetsDistinctWellShapedDims) {
  ShapeAssignments r = search({"(matmul 0 ?a (matmul 0 ?b ?c))", "(matmul 0 (matmul 0 ?a ?b) ?c)"});
  ASSERT_EQ(r.assignments.size(), 3u) << r.failure;
  const VarShapes& s = r.assignments[0];
  EXPECT_EQ(s.at("a").size(), 2u);
  EXPECT_EQ(s.at("a")[1], s.at("b")[0]);
  EXPECT_EQ(s.at("b")[1], s.at("c")[0]);
  // Distinct sizes: m, k, n, p all differ, so a transposed operand cannot pass unnoticed.
  std::set<int64_t> dims = {s.at("a")[0], s.at("a")[1], s.at("b")[1], s.at("c")[1]};
  EXPECT_EQ(dims.size(), 4u);
  // One of the assignments is batched (rank 3).
  bool batched = false;
  for (const VarShapes& v : r.assignments) batched |= v.at("a").size() == 3;
  EXPECT_TRUE(batched);
}

TEST(ShapeSearch, RanksComeFromOperators) {
  ShapeAssignments r = search({"(conv2d 1 1 -1 -1 0 (smul ?x ?s) ?w)", "(smul (conv2d 1 1 -1 -1 0 ?x ?w) ?s)"});
  ASSERT_FALSE(r.assignments.empty()) << r.failure;
  for (const VarShapes& s : r.assignments) {
    EXPECT_EQ(s.at("s"), Shape{});
    EXPECT_EQ(s.at("x").size(), 4u);
    EXPECT_EQ(s.at("w")[1], s.at("x")[1]) << "convolutions are ungrouped by default";
    EXPECT_TRUE(try_infer_shapes(parse_pattern("(conv2d 1 1 -1 -1 0 ?x ?w)"), s).has_value());
  }
}

TEST(ShapeSearch, GroupedConvolutionsOnRequest) {
  ShapeSearchOptions opt;
  opt.conv_groups = ConvGroups::Grouped;
  ShapeAssignments r = search({"(conv2d 1 1 -1 -1 0 ?x ?w)", "(conv2d 1 1 -1 -1 0 ?x ?w)"}, opt);
  ASSERT_FALSE(r.assignments.empty()) << r.failure;
  EXPECT_NE(r.assignments[0].at("w")[1], r.assignments[0].at("x")[1]);
}

TEST(ShapeSearch, DistinctWithinAVariableAvoidsTheSquareKernel) {
  // Conv linearity under an explicit one-pixel padding: on a 3x3 kernel that padding is SAME padding, so a
  // derivation at those shapes may go through SAME-padding rules that do not hold for other kernels.
  const std::vector<std::string> rule = {"(conv2d 1 1 1 1 0 (ewadd ?x ?y) ?w)",
                                         "(ewadd (conv2d 1 1 1 1 0 ?x ?w) (conv2d 1 1 1 1 0 ?y ?w))"};
  ShapeSearchOptions opt;
  opt.max_assignments = 1;
  ShapeAssignments plain = search(rule, opt);
  ASSERT_EQ(plain.assignments.size(), 1u) << plain.failure;
  EXPECT_EQ(plain.assignments[0].at("w")[2], plain.assignments[0].at("w")[3]) << "the default prefers 3x3 kernels";
  opt.distinct_within_variable = true;
  ShapeAssignments distinct = search(rule, opt);
  ASSERT_EQ(distinct.assignments.size(), 1u) << distinct.failure;
  const Shape& w = distinct.assignments[0].at("w");
  EXPECT_NE(w[2], w[3]) << "a kernel of two extents, on which one-pixel padding is not SAME padding";
  // Its input channels are the input's (an ungrouped convolution): forced, so they may repeat a free size.
  EXPECT_EQ(w[1], distinct.assignments[0].at("x")[1]);
  // Where only equal extents are well-shaped, the search still finds them: a preference, not a condition.
  ShapeAssignments forced = search({"(ewadd ?a (transpose 1 0 ?a))", "(ewadd (transpose 1 0 ?a) ?a)"}, opt);
  ASSERT_EQ(forced.assignments.size(), 1u) << forced.failure;
  EXPECT_EQ(forced.assignments[0].at("a")[0], forced.assignments[0].at("a")[1]);
}

TEST(ShapeSearch, ReportsRankConflict) {
  ShapeAssignments r = search({"(smul ?a ?a)", "(transpose 1 0 ?a)"});
  EXPECT_TRUE(r.assignments.empty());
  EXPECT_NE(r.failure.find("rank conflict"), std::string::npos) << r.failure;
}

TEST(Elementwise, ProvesTextbookRules) {
  z3::context ctx;
  for (auto [l, r] : {std::pair{"(matmul 0 ?a (matmul 0 ?b ?c))", "(matmul 0 (matmul 0 ?a ?b) ?c)"},
                      {"(relu (conv2d 1 1 -1 -1 0 ?x ?w))", "(conv2d 1 1 -1 -1 2 ?x ?w)"},
                      {"(tanh (concat 1 ?a ?b))", "(concat 1 (tanh ?a) (tanh ?b))"},
                      {"(relu (maxpool 2 2 2 2 0 0 ?x))", "(maxpool 2 2 2 2 0 0 (relu ?x))"}}) {
    ElementwiseResult res = prove_elementwise(make_rule("t", {l}, {r}), ctx);
    EXPECT_EQ(res.status, VerifyStatus::Verified) << l << " => " << r << ": " << res.detail;
    EXPECT_FALSE(res.shapes.empty());
  }
}

TEST(Elementwise, WrongRuleGetsZ3CounterexampleThatReplays) {
  z3::context ctx;
  ElementwiseOptions opt;
  opt.random_probe = false;
  Rule rule = make_rule("relu-additive", {"(relu (ewadd ?a ?b))"}, {"(ewadd (relu ?a) (relu ?b))"});
  ElementwiseResult res = prove_elementwise(rule, ctx, opt);
  ASSERT_EQ(res.status, VerifyStatus::Wrong);
  ASSERT_TRUE(res.counterexample);
  const Counterexample& cex = *res.counterexample;
  EXPECT_EQ(cex.source, "z3 model");
  EXPECT_NE(cex.lhs_value, cex.rhs_value);
  std::optional<Difference> d = find_difference(rule, cex.inputs);
  ASSERT_TRUE(d) << format_counterexample(cex);
  EXPECT_EQ(d->index, cex.index);
  std::string text = format_counterexample(cex);
  EXPECT_NE(text.find("?a = [["), std::string::npos) << text;
  EXPECT_NE(text.find("output 0 at ["), std::string::npos) << text;
}

TEST(Elementwise, UninterpretedFunctionsAreNotAssumedOdd) {
  // tanh(-x) = -tanh(x) holds for the real tanh but not for every function: rejected.
  z3::context ctx;
  ElementwiseOptions opt;
  opt.random_probe = false;
  Rule rule = make_rule("tanh-odd", {"(tanh (smul ?x ?s))"}, {"(smul (tanh ?x) ?s)"});
  EXPECT_EQ(prove_elementwise(rule, ctx, opt).status, VerifyStatus::Wrong);
}

TEST(Elementwise, ShapeMismatchIsWrong) {
  z3::context ctx;
  ElementwiseResult res = prove_elementwise(make_rule("t", {"(transpose 1 0 ?a)"}, {"(relu ?a)"}), ctx);
  ASSERT_EQ(res.status, VerifyStatus::Wrong);
  ASSERT_TRUE(res.counterexample);
  EXPECT_NE(res.counterexample->note.find("but rhs has shape"), std::string::npos);
}

// A false rule that `without_probe` (a probe turned off) verifies and the default options refute with a
// probe's counterexample, which replays: its shapes keep the sides equal in shape and its values differ.
void expect_wrong_only_by_probe(const Rule& rule, const ElementwiseOptions& without_probe) {
  z3::context ctx;
  EXPECT_EQ(prove_elementwise(rule, ctx, without_probe).status, VerifyStatus::Verified);
  ElementwiseResult res = prove_elementwise(rule, ctx);
  ASSERT_EQ(res.status, VerifyStatus::Wrong);
  ASSERT_TRUE(res.counterexample);
  EXPECT_EQ(res.counterexample->source, "random probe");
  EXPECT_TRUE(find_difference(rule, res.counterexample->inputs));
}

// rg-0493-split-ones, once in corpus/rules.json: on the proofs' small shapes the split's cut (?k1's extent)
// falls on ?d1's edge, so both sides are ones; on larger ones the kept part holds some of ?d1.
TEST(Elementwise, WideProbeCatchesARuleTheSmallShapesHide) {
  const Rule rule = make_rule("t", {"(split 1 1 1 (concat 1 ?d1 (ones ?k1)) ?k1)"}, {"(ones ?d1)"});
  ElementwiseOptions small_only;
  small_only.wide_probe = false;
  small_only.neighbor_probe = false;
  expect_wrong_only_by_probe(rule, small_only);
}

// rg-0139-split-matmul, once in corpus/rules.json: true only where the cut (?k1's rows) is ?x1's row count.
// The shape search gave both the same size; the neighbour probe moves ?k1's rows to 1 and finds rows of
// ?x1 that the left side keeps and the right side multiplies.
TEST(Elementwise, NeighborProbeCatchesACutTiedToAnUnrelatedExtent) {
  const Rule rule = make_rule("t", {"(split 0 1 0 (concat 0 ?x1 (matmul 0 ?w1 ?w2)) ?k1)"},
                              {"(matmul 0 (split 0 1 0 (concat 0 ?x1 ?w1) ?k1) ?w2)"});
  ElementwiseOptions without;
  without.neighbor_probe = false;
  expect_wrong_only_by_probe(rule, without);
}

// The probe only visits assignments where the optimizer would apply the rule: a conv on a weight of free
// shape stays ungrouped (rg-0220 holds for ungrouped convs only; grouped, the halves of ?i1 meet other
// kernels), and a split that keeps exactly its first operand stays true for every cut that is its extent.
TEST(Elementwise, NeighborProbeKeepsRulesTrueWhereverTheyApply) {
  z3::context ctx;
  for (const Rule& rule :
       {make_rule("conv-of-doubled-input", {"(conv2d 1 1 -1 -1 0 (concat 1 ?i1 ?i1) (concat 1 ?a1 ?a2))"},
                  {"(conv2d 1 1 -1 -1 0 ?i1 (ewadd ?a1 ?a2))"}),
        make_rule("split-keeps-first", {"(split 1 0 1 (concat 1 ?a (relu ?b)) ?a)"}, {"?a"}),
        make_rule("split-keeps-second", {"(split 1 1 1 (concat 1 ?a (relu ?b)) ?a)"}, {"(relu ?b)"})}) {
    ElementwiseResult res = prove_elementwise(rule, ctx);
    EXPECT_EQ(res.status, VerifyStatus::Verified) << rule.id << ": " << res.detail;
  }
}

// rg-0059 of a rulegen run with the conv_cut family: one side cuts a convolution's output at ?d1's output
// count, the other at ?i1's channel count. Where the optimizer applies it (its sides agree in shape) it is
// true, so the default verdict is verified; coincidence_is_wrong (rulegen, ruleverify --strict-shapes)
// moves ?d1's extent alone and reports the sides' different shapes. Rules true wherever they apply stay.
TEST(Elementwise, CoincidenceOfUnrelatedExtentsIsWrongOnRequest) {
  z3::context ctx;
  const Rule cut = make_rule("cut-at-unrelated", {"(split 1 0 0 (conv2d 1 1 0 0 0 ?i1 ?a1) ?d1)"},
                             {"(split 1 0 1 (conv2d 1 1 0 0 0 ?i1 ?a1) ?i1)"});
  EXPECT_EQ(prove_elementwise(cut, ctx).status, VerifyStatus::Verified);
  ElementwiseOptions strict;
  strict.coincidence_is_wrong = true;
  const ElementwiseResult res = prove_elementwise(cut, ctx, strict);
  ASSERT_EQ(res.status, VerifyStatus::Wrong);
  ASSERT_TRUE(res.counterexample);
  EXPECT_NE(res.counterexample->note.find("unrelated extents"), std::string::npos) << res.counterexample->note;
  EXPECT_NE(res.counterexample->shapes.at("d1")[0], res.counterexample->shapes.at("i1")[1]);
  for (const Rule& rule :
       {make_rule("conv-share-input", {"(conv2d 1 1 -1 -1 0 ?x ?w1)", "(conv2d 1 1 -1 -1 0 ?x ?w2)"},
                  {"(split 1 0 0 (conv2d 1 1 -1 -1 0 ?x (concat 0 ?w1 ?w2)) ?w1)",
                   "(split 1 1 0 (conv2d 1 1 -1 -1 0 ?x (concat 0 ?w1 ?w2)) ?w1)"}),
        make_rule("split-keeps-first", {"(split 1 0 1 (concat 1 ?a (relu ?b)) ?a)"}, {"?a"}),
        make_rule("transpose-twice", {"(transpose 1 0 (transpose 1 0 ?a))"}, {"?a"})}) {
    const ElementwiseResult r = prove_elementwise(rule, ctx, strict);
    EXPECT_EQ(r.status, VerifyStatus::Verified) << rule.id << ": " << r.detail;
  }
}

// Tensat's rule 92: two convolutions of different inputs as one grouped convolution. False as stated (kernels
// of 6 and 4 outputs give groups of 5); its correct instance, with the inputs and the kernels of equal shapes
// (Rule::same_shape), verifies, on shapes where the left side's convolutions are ungrouped and on grouped ones.
TEST(Elementwise, GroupedMergeHoldsUnderItsShapeConditions) {
  z3::context ctx;
  const std::vector<std::string> lhs = {"(concat 1 (conv2d 1 1 0 0 0 ?x1 ?w1) (conv2d 1 1 0 0 0 ?x2 ?w2))"};
  const std::vector<std::string> rhs = {"(conv2d 1 1 0 0 0 (concat 1 ?x1 ?x2) (concat 0 ?w1 ?w2))"};
  const ElementwiseResult wrong = prove_elementwise(make_rule("as-stated", lhs, rhs), ctx);
  EXPECT_EQ(wrong.status, VerifyStatus::Wrong) << wrong.detail;
  // Its scope: the merged convolution grouped, the two it replaces ungrouped or grouped alike.
  const ElementwiseResult right = prove_elementwise(
      make_rule("correct-instance", lhs, rhs, {{"?x1", "?x2"}, {"?w1", "?w2"}}, {"uu|g", "gg|g"}), ctx);
  ASSERT_EQ(right.status, VerifyStatus::Verified) << right.detail;
  bool ungrouped_lhs = false, grouped_lhs = false;
  for (const VarShapes& s : right.shapes) {
    EXPECT_EQ(s.at("x1"), s.at("x2"));
    EXPECT_EQ(s.at("w1"), s.at("w2"));
    (s.at("x1")[1] == s.at("w1")[1] ? ungrouped_lhs : grouped_lhs) = true;
  }
  EXPECT_TRUE(ungrouped_lhs && grouped_lhs);
}

TEST(Elementwise, NeverWellShapedIsUnknown) {
  z3::context ctx;
  ElementwiseResult res = prove_elementwise(make_rule("t", {"(smul ?a ?a)"}, {"(transpose 1 0 ?a)"}), ctx);
  EXPECT_EQ(res.status, VerifyStatus::Unknown);
  EXPECT_NE(res.detail.find("no shape assignment"), std::string::npos) << res.detail;
}

TEST(Elementwise, RandomProbeCatchesWrongRuleWithIntegerInputs) {
  z3::context ctx;
  Rule rule = make_rule("t", {"(matmul 0 ?a (ewadd ?b ?c))"}, {"(ewadd (matmul 0 ?a ?b) (matmul 0 ?c ?c))"});
  ElementwiseResult res = prove_elementwise(rule, ctx);
  ASSERT_EQ(res.status, VerifyStatus::Wrong);
  EXPECT_EQ(res.counterexample->source, "random probe");
  EXPECT_TRUE(find_difference(rule, res.counterexample->inputs));
}

TEST(Elementwise, ExhaustedResourceLimitIsUnknownAndSaysSo) {
  // max(x^2)^2 = max(x^4) over a 3x3 window takes Z3 millions of resource units (a maxpool rule of the
  // corpus); with a budget of 1000 the verdict is unknown, on any machine, and the detail names the limit.
  z3::context ctx;
  ElementwiseOptions opt;
  opt.rlimit = 1000;
  opt.shapes.max_assignments = 1;
  Rule rule = make_rule("t", {"(maxpool 3 3 1 1 0 0 (ewmul (ewmul ?x ?x) (ewmul ?x ?x)))"},
                        {"(ewmul (maxpool 3 3 1 1 0 0 (ewmul ?x ?x)) (maxpool 3 3 1 1 0 0 (ewmul ?x ?x)))"});
  ElementwiseResult res = prove_elementwise(rule, ctx, opt);
  EXPECT_EQ(res.status, VerifyStatus::Unknown);
  EXPECT_NE(res.detail.find("rlimit 1000 per query"), std::string::npos) << res.detail;
  opt.rlimit = 20'000'000;
  EXPECT_EQ(prove_elementwise(rule, ctx, opt).status, VerifyStatus::Verified);
}

TEST(Counterexample, FormatsNestedTensors) {
  EXPECT_EQ(format_nested({2, 2}, {"1", "2", "3", "4"}), "[[1, 2], [3, 4]]");
  EXPECT_EQ(format_nested({}, {"-1/2"}), "-1/2");
  EXPECT_EQ(format_nested({1, 2, 1}, {"a", "b"}), "[[[a], [b]]]");
}

TEST(Prover, OneAndTwoJobsGiveTheSameVerdicts) {
  std::vector<Rule> rules = {make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"}),
                             make_rule("bad", {"(relu (ewadd ?a ?b))"}, {"(ewadd (relu ?a) (relu ?b))"}),
                             make_rule("fuse", {"(relu (matmul 0 ?a ?b))"}, {"(matmul 2 ?a ?b)"})};
  VerifyOptions one, two;
  one.jobs = 1, two.jobs = 2;
  CorpusReport a = verify_rules(rules, one), b = verify_rules(rules, two);
  ASSERT_EQ(a.rules.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(a.rules[i].id, rules[i].id);
    EXPECT_EQ(a.rules[i].status, b.rules[i].status);
    EXPECT_EQ(a.rules[i].method, b.rules[i].method);
  }
  EXPECT_EQ(a.verified, 2);
  EXPECT_EQ(a.wrong, 1);
  EXPECT_FALSE(a.all_verified());
  nlohmann::json j = report_to_json(a);
  EXPECT_EQ(j["summary"]["wrong"], 1);
  EXPECT_TRUE(j["rules"][1].contains("counterexample"));
}

TEST(Elementwise, Z3ProvesOnlyTheAssignmentsAskedAndProbesTheRest) {
  // (softmax -1 ?a) = (softmax 1 ?a) holds on the first assignment (rank 2) and not on the second (rank 3).
  // With z3_assignments = 1 Z3 sees the first only; the probes in double still see the others.
  z3::context ctx;
  const Rule rule = make_rule("softmax-axis", {"(softmax -1 ?a)"}, {"(softmax 1 ?a)"});
  ElementwiseOptions all, first;
  all.random_probe = first.random_probe = false;
  first.z3_assignments = 1;
  const ElementwiseResult a = prove_elementwise(rule, ctx, all), f = prove_elementwise(rule, ctx, first);
  ASSERT_EQ(a.shapes.size(), 3u);
  EXPECT_EQ(a.shapes[0].at("a").size(), 2u);
  EXPECT_EQ(a.status, VerifyStatus::Wrong);
  EXPECT_EQ(f.status, VerifyStatus::Verified) << "Z3 checked more than the first assignment";
  first.random_probe = true;
  EXPECT_EQ(prove_elementwise(rule, ctx, first).status, VerifyStatus::Wrong);
}

TEST(Verifier, TheReportSaysWhyARuleHasNoProofForAllShapes) {
  const std::vector<Rule> rules = {make_rule("t3", {"(transpose 1 2 0 (transpose 2 0 1 ?a))"}, {"?a"}),
                                   make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"})};
  const CorpusReport r = verify_rules(rules, {});
  ASSERT_EQ(r.verified, 2);
  const nlohmann::json j = report_to_json(r);
  ASSERT_EQ(j["rules"][0]["method"], kMethodElementwise);
  EXPECT_FALSE(j["rules"][0]["not_for_all_shapes"].get<std::string>().empty());
  ASSERT_EQ(j["rules"][1]["method"], kMethodAxioms);
  EXPECT_FALSE(j["rules"][1].contains("not_for_all_shapes"));
}

}  // namespace
}  // namespace teq
