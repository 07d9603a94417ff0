// Derivability checks of synth/minimize.h: derive_rule joins a rule's two sides anywhere in one e-graph;
// derive_as_rewrites asks that the rules rewrite each side into the other, which is what a rule set must
// still do after the final pass drops a rule.
#include <gtest/gtest.h>

#include "synth/minimize.h"
#include "synth/prove.h"
#include "synth/rulegen.h"

namespace teq::synth {
namespace {

std::vector<LeafType> matrix_types() { return {{"x", {2, 4}, {3, 5}, 3}}; }

TEST(Minimize, MeetingInTheMiddleIsNotARewrite) {
  // Taking the first part of a concat gives its first operand back: a one-way rule (its reverse would
  // invent ?b).
  const std::vector<Rule> rules = both_directions(
      {make_rule("split-concat", {"(split 0 0 0 (concat 0 ?a ?b) ?a)"}, {"?a"})});
  ASSERT_EQ(rules.size(), 1u);
  // Both sides reduce to ?x1, so they meet; but nothing rewrites one side into the other.
  const Rule target = make_rule("meet", {"(split 0 0 0 (concat 0 ?x1 ?x2) ?x1)"},
                                {"(split 0 0 0 (concat 0 ?x1 (relu ?x2)) ?x1)"});
  EXPECT_TRUE(derive_rule(target, rules, matrix_types()).derived);
  const DeriveResult as_rewrites = derive_as_rewrites(target, rules, matrix_types());
  EXPECT_FALSE(as_rewrites.derived);
  EXPECT_NE(as_rewrites.reason.find("right side not built"), std::string::npos) << as_rewrites.reason;
}

TEST(Minimize, ATwoPatternRuleOfIndependentEquationsIsDerivedPairByPair) {
  // TASO glues unrelated single rules into two-pattern ones. Each pair over its own variables is an equation
  // of its own, derived as a single rule is (its right side may be added): the right side here cannot be
  // built from the left, since the one-way rule (a transpose of a transpose) cannot be reversed.
  const std::vector<Rule> rules = both_directions(
      {make_rule("involution", {"(transpose 1 0 (transpose 1 0 ?a))"}, {"?a"}),
       make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"})});
  const Rule glued = make_rule("glued", {"(ewadd ?x1 ?x2)", "(relu ?x3)"},
                               {"(ewadd ?x2 ?x1)", "(relu (transpose 1 0 (transpose 1 0 ?x3)))"});
  const std::vector<LeafType> square = {{"x", {4, 4}, {5, 5}, 3}};
  const DeriveResult d = derive_rule(glued, rules, square);
  EXPECT_TRUE(d.derived) << d.reason;
  // A pair whose right side has a variable its left side lacks is still looked up, never added: a batching
  // rule's right side (the concat of both operands) must be built by the rules.
  const Rule batch = make_rule("batch", {"(relu ?x1)", "(relu ?x2)"},
                               {"(split 0 0 0 (relu (concat 0 ?x1 ?x2)) ?x1)", "(split 0 1 0 (relu (concat 0 ?x1 ?x2)) ?x1)"});
  EXPECT_FALSE(derive_rule(batch, rules, square).derived);
}

TEST(Minimize, RewritesBothWays) {
  const std::vector<Rule> rules = both_directions(
      {make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"}),
       make_rule("assoc", {"(ewadd ?a (ewadd ?b ?c))"}, {"(ewadd (ewadd ?a ?b) ?c)"})});
  const Rule target = make_rule("rotate", {"(ewadd ?x1 (ewadd ?x2 ?x3))"}, {"(ewadd ?x3 (ewadd ?x1 ?x2))"});
  EXPECT_TRUE(derive_as_rewrites(target, rules, matrix_types()).derived);
  // With assoc in one direction only, the forward rewrite is there and the backward one is missing.
  const std::vector<Rule> forward_only = {make_rule("assoc", {"(ewadd ?a (ewadd ?b ?c))"}, {"(ewadd (ewadd ?a ?b) ?c)"})};
  const Rule assoc = make_rule("assoc-again", {"(ewadd ?x1 (ewadd ?x2 ?x3))"}, {"(ewadd (ewadd ?x1 ?x2) ?x3)"});
  EXPECT_TRUE(derive_rule(assoc, forward_only, matrix_types()).derived);
  const DeriveResult one_way = derive_as_rewrites(assoc, forward_only, matrix_types());
  EXPECT_FALSE(one_way.derived);
  EXPECT_NE(one_way.reason.find("backwards"), std::string::npos) << one_way.reason;
}

// A saturation that the clock stops says so and is counted, so that rulegen can report how many of its
// derivability verdicts could depend on the machine's load.
TEST(Minimize, ASaturationStoppedByTheClockIsCounted) {
  const std::vector<Rule> rules = both_directions({make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"})});
  const Rule target = make_rule("swap", {"(ewadd ?x1 ?x2)"}, {"(ewadd ?x2 ?x1)"});
  const uint64_t before = saturations_stopped_by_clock();
  EXPECT_TRUE(derive_rule(target, rules, matrix_types()).derived);
  EXPECT_EQ(saturations_stopped_by_clock(), before);
  DeriveLimits no_time;
  no_time.time_limit_s = 0;
  const DeriveResult stopped = derive_rule(target, rules, matrix_types(), no_time);
  EXPECT_FALSE(stopped.derived);
  EXPECT_NE(stopped.reason.find("time-limit"), std::string::npos) << stopped.reason;
  EXPECT_EQ(saturations_stopped_by_clock(), before + 1);
}


std::vector<std::string> rule_ids(const std::vector<Rule>& rules) {
  std::vector<std::string> ids;
  for (const Rule& r : rules) ids.push_back(r.id);
  return ids;
}

// The final pass confirms its flagged rules one after the other (each against the rules not dropped before
// it), checking a window of them in parallel on the guess that the ones before it are dropped. Here every
// rule but relu-twice is flagged, and the order is assoc-again, assoc, assoc-instance (equal sizes, the one
// kept last first): assoc-again is dropped (assoc derives it), assoc is then kept (the instance alone cannot
// derive it), and the instance is dropped because assoc is kept. Its check on the guess that assoc was
// dropped says "kept", a verdict that must be thrown away and redone, as one thread would.
TEST(Minimize, FinalPassDecidesAsOneThreadWhateverTheThreads) {
  const std::vector<Rule> kept = {
      make_rule("assoc-instance", {"(ewadd ?a (ewadd ?b ?b))"}, {"(ewadd (ewadd ?a ?b) ?b)"}),
      make_rule("assoc", {"(ewadd ?a (ewadd ?b ?c))"}, {"(ewadd (ewadd ?a ?b) ?c)"}),
      make_rule("assoc-again", {"(ewadd ?p (ewadd ?q ?r))"}, {"(ewadd (ewadd ?p ?q) ?r)"}),
      make_rule("relu-twice", {"(relu (relu ?a))"}, {"(relu ?a)"}),
  };
  for (int threads : {1, 2, 3, 8}) {
    MinimizeConfig config;
    config.threads = threads;
    std::vector<Rule> rules = kept;
    EXPECT_EQ(drop_derivable_from_the_rest(rules, matrix_types(), config), 2u) << threads << " threads";
    EXPECT_EQ(rule_ids(rules), (std::vector<std::string>{"assoc", "relu-twice"})) << threads << " threads";
  }
}

// The final pass drops a rule when the rules not dropped before it derive it; a later drop can remove what
// that derivation used. restore_underivable checks each dropped rule again, alone, against the rules kept at
// the end: relu-twice derives from nothing kept and comes back (once, though dropped twice); the second
// commutativity derives from the first and stays dropped.
TEST(Minimize, RestoreBringsBackADroppedRuleTheKeptRulesDoNotDerive) {
  std::vector<Rule> kept = {make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"})};
  const std::vector<Rule> dropped = {make_rule("comm-again", {"(ewadd ?p ?q)"}, {"(ewadd ?q ?p)"}),
                                     make_rule("relu-twice", {"(relu (relu ?a))"}, {"(relu ?a)"}),
                                     make_rule("relu-twice", {"(relu (relu ?a))"}, {"(relu ?a)"})};
  MinimizeConfig config;
  EXPECT_EQ(restore_underivable(kept, dropped, matrix_types(), config), 1u);
  EXPECT_EQ(rule_ids(kept), (std::vector<std::string>{"comm", "relu-twice"}));
}

// Candidates dropped in a shared e-graph are taken in order: the first that the kept rules do not derive
// alone is proved and kept, and the ones after it are checked against it too (assoc derives its instance,
// which is not restored), with the same verdicts on any number of threads; a false candidate (it was
// dropped unproved) is refuted and listed, never kept.
TEST(Minimize, RestoreOfDroppedCandidatesProvesThemInOrder) {
  const std::vector<Rule> candidates = {
      make_rule("assoc", {"(ewadd ?a (ewadd ?b ?c))"}, {"(ewadd (ewadd ?a ?b) ?c)"}),
      make_rule("relu-of-sum", {"(relu (ewadd ?a ?b))"}, {"(ewadd (relu ?a) (relu ?b))"}),
      make_rule("assoc-instance", {"(ewadd ?a (ewadd ?b ?b))"}, {"(ewadd (ewadd ?a ?b) ?b)"}),
      make_rule("relu-twice", {"(relu (relu ?a))"}, {"(relu ?a)"}),
  };
  for (int threads : {1, 2, 4}) {
    MinimizeConfig config;
    config.threads = threads;
    config.derive.typing = DeriveLimits::Typing::Generic;
    std::vector<Rule> kept = {make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"})};
    std::vector<Rule> derivable = candidates;
    const RestoreResult result = restore_candidates_derived_only_together(kept, derivable, matrix_types(), config);
    EXPECT_EQ(result.restored, 2u);
    EXPECT_EQ(rule_ids(kept), (std::vector<std::string>{"comm", "assoc", "relu-twice"})) << threads << " threads";
    for (size_t i = 1; i < kept.size(); ++i) {
      ASSERT_TRUE(kept[i].verification.has_value()) << kept[i].id;
      EXPECT_EQ(kept[i].verification->status, "verified") << kept[i].id;
    }
    ASSERT_EQ(result.proofs.rejected.size(), 1u);
    EXPECT_EQ(result.proofs.wrong, 1u);
    EXPECT_EQ(result.proofs.proved, 2u);
    // The refuted candidate is gone from the list: a second call proves nothing again.
    EXPECT_EQ(derivable.size(), candidates.size() - 1);
    const RestoreResult again = restore_candidates_derived_only_together(kept, derivable, matrix_types(), config);
    EXPECT_EQ(again.restored, 0u);
    EXPECT_EQ(again.proofs.wrong, 0u);
  }
}

// A restore remembers each check's verdict and the operators its saturation met: a later call whose rules differ
// only by a rule that cannot match there (relu, in e-graphs of ewadd) takes the verdict without saturating,
// and one that lost a rule the derivation used (assoc) saturates again and restores the candidate.
TEST(Minimize, RestoreMemoReusesAVerdictOnlyWhereTheSaturationIsTheSame) {
  const Rule assoc = make_rule("assoc", {"(ewadd ?a (ewadd ?b ?c))"}, {"(ewadd (ewadd ?a ?b) ?c)"});
  const Rule comm = make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"});
  const Rule relu_twice = make_rule("relu-twice", {"(relu (relu ?a))"}, {"(relu ?a)"});
  const Rule instance = make_rule("assoc-instance", {"(ewadd ?a (ewadd ?b ?b))"}, {"(ewadd (ewadd ?a ?b) ?b)"});
  MinimizeConfig config;
  config.derive.typing = DeriveLimits::Typing::Generic;
  RestoreMemo memo;
  std::vector<Rule> derivable = {instance};
  std::vector<Rule> kept = {assoc, comm};
  EXPECT_EQ(restore_candidates_derived_only_together(kept, derivable, matrix_types(), config, &memo).restored, 0u);
  const size_t run = memo.checks_run();
  EXPECT_GT(run, 0u);
  kept = {assoc, comm, relu_twice};
  EXPECT_EQ(restore_candidates_derived_only_together(kept, derivable, matrix_types(), config, &memo).restored, 0u);
  EXPECT_EQ(memo.checks_run(), run);
  EXPECT_GT(memo.checks_reused(), 0u);
  kept = {comm, relu_twice};
  EXPECT_EQ(restore_candidates_derived_only_together(kept, derivable, matrix_types(), config, &memo).restored, 1u);
  EXPECT_GT(memo.checks_run(), run);
  EXPECT_EQ(rule_ids(kept), (std::vector<std::string>{"comm", "relu-twice", "assoc-instance"}));
  // The final-pass restore too: relu-twice dropped, nothing kept derives it, with or without the memo.
  std::vector<Rule> rules = {assoc, comm};
  EXPECT_EQ(restore_underivable(rules, {relu_twice}, matrix_types(), config, &memo), 1u);
  rules = {assoc, comm};
  EXPECT_EQ(restore_underivable(rules, {relu_twice}, matrix_types(), config, &memo), 1u);
}

// The leaf types' extents coincide by design (a square w), so a derivation there may go through rules that
// hold only at such shapes; with generic typing the equation gets the smallest distinct extents verify's
// shape search finds, and the derivation has to hold without the coincidence (rulegen's minimization).
TEST(Minimize, GenericTypingDoesNotDeriveThroughASquareMatrix) {
  const std::vector<Rule> rules = {
      // Sound where the optimizer applies it (its sides agree in shape), which is for square matrices only.
      make_rule("ones-of-transpose", {"(ones ?a)"}, {"(ones (transpose 1 0 ?a))"}),
      // Well-shaped for square matrices only.
      make_rule("times-ones-of-transpose", {"(ewmul ?a (ones (transpose 1 0 ?a)))"}, {"?a"})};
  const Rule target = make_rule("times-ones", {"(ewmul ?w1 (ones ?w1))"}, {"?w1"});
  const std::vector<LeafType> square = {{"w", {4, 4}, {5, 5}, 3}};
  EXPECT_TRUE(derive_rule(target, rules, square).derived);
  DeriveLimits generic;
  generic.typing = DeriveLimits::Typing::Generic;
  const DeriveResult d = derive_rule(target, rules, square, generic);
  EXPECT_FALSE(d.derived);
  EXPECT_NE(d.reason.find("not equal after saturation"), std::string::npos) << d.reason;
  // A derivation that needs no coincidence holds under either typing.
  const std::vector<Rule> general = {make_rule("times-ones", {"(ewmul ?a (ones ?a))"}, {"?a"})};
  EXPECT_TRUE(derive_rule(target, general, square, generic).derived);
}

TEST(Minimize, GenericTypingDoesNotDeriveThroughASquareKernel) {
  const std::vector<Rule> rules = {
      // Sound where the optimizer applies it (its sides agree in shape), which is for 3x3 kernels only.
      make_rule("pad1-is-same", {"(conv2d 1 1 1 1 0 ?i ?k)"}, {"(conv2d 1 1 -1 -1 0 ?i ?k)"}),
      make_rule("same-linear", {"(conv2d 1 1 -1 -1 0 (ewadd ?i ?j) ?k)"},
                {"(ewadd (conv2d 1 1 -1 -1 0 ?i ?k) (conv2d 1 1 -1 -1 0 ?j ?k))"})};
  const Rule target = make_rule("pad1-linear", {"(conv2d 1 1 1 1 0 (ewadd ?i1 ?i2) ?a1)"},
                                {"(ewadd (conv2d 1 1 1 1 0 ?i1 ?a1) (conv2d 1 1 1 1 0 ?i2 ?a1))"});
  const std::vector<LeafType> types = default_leaf_types();
  DeriveLimits generic;
  generic.typing = DeriveLimits::Typing::Generic;
  // The shape search's first choice for a kernel is 3x3; generic typing asks for two extents, so the
  // derivation through "one-pixel padding is SAME padding" does not hold there and the rule is kept.
  const DeriveResult d = derive_rule(target, rules, types, generic);
  EXPECT_FALSE(d.derived);
  EXPECT_NE(d.reason.find("not equal after saturation"), std::string::npos) << d.reason;
  // On the 3x3 kernel k the same rules do derive it: the coincidence is real there.
  const Rule on_k = make_rule("pad1-linear-k", {"(conv2d 1 1 1 1 0 (ewadd ?i1 ?i2) ?k1)"},
                              {"(ewadd (conv2d 1 1 1 1 0 ?i1 ?k1) (conv2d 1 1 1 1 0 ?i2 ?k1))"});
  EXPECT_TRUE(derive_rule(on_k, rules, types).derived);
}

// rulegen's prover finds the grouped merge's correct instance: wrong as enumerated, verified once the variables
// of each leaf type have equal shapes (as at the fingerprint shapes); a rule true without conditions gets none.
TEST(Prove, AGroupedMergeIsVerifiedWithShapeConditions) {
  const Rule merge = make_rule("merge", {"(concat 1 (conv2d 1 1 0 0 0 ?i1 ?k1) (conv2d 1 1 0 0 0 ?i2 ?k2))"},
                               {"(conv2d 1 1 0 0 0 (concat 1 ?i1 ?i2) (concat 0 ?k1 ?k2))"});
  const ProofResult p = prove_rule(merge);
  EXPECT_EQ(p.status, "verified") << p.reason;
  EXPECT_EQ(p.same_shape, (std::vector<std::vector<std::string>>{{"i1", "i2"}, {"k1", "k2"}}));
  const Rule share = make_rule("share", {"(concat 1 (conv2d 1 1 0 0 0 ?i1 ?k1) (conv2d 1 1 0 0 0 ?i1 ?k2))"},
                               {"(conv2d 1 1 0 0 0 ?i1 (concat 0 ?k1 ?k2))"});
  const ProofResult q = prove_rule(share);
  EXPECT_EQ(q.status, "verified") << q.reason;
  EXPECT_TRUE(q.same_shape.empty());
  // A wrong rule that batches no convolutions is not tried under conditions.
  const ProofResult r = prove_rule(make_rule("wrong", {"(ewadd ?a1 ?a2)"}, {"(ewmul ?a1 ?a2)"}));
  EXPECT_EQ(r.status, "wrong");
  EXPECT_TRUE(r.same_shape.empty());
}

}  // namespace
}  // namespace teq::synth
