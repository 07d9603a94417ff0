// rulegen end to end on small vocabularies: known rules are rediscovered (checked by derivation from the
// emitted corpus, which an empty corpus cannot do), the second fingerprint set separates a collision,
// shards merged equal one run, and every emitted rule is proved again.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <iostream>
#include <set>

#include "rules/sexpr.h"
#include "synth/coverage.h"
#include "synth/enumerate.h"
#include "synth/minimize.h"
#include "synth/rulegen.h"
#include "verify/prover.h"

namespace teq::synth {
namespace {

RulegenConfig small(std::vector<std::string> ops, int max_ops) {
  RulegenConfig c;
  c.ops = std::move(ops);
  c.max_ops = max_ops;
  c.max_inputs = 3;
  c.leaves_per_type = 2;
  c.threads = 2;
  c.prove.rlimit = 300'000;  // rules Z3 cannot settle quickly only cost time here
  return c;
}

/// The corpus derives `rule` by saturation, and an empty corpus does not.
void expect_rediscovered(const RuleCorpus& corpus, const Rule& rule) {
  auto types = default_leaf_types(2);  // includes every type the test rules use
  EXPECT_FALSE(derive_rule(rule, {}, types).derived) << "trivially equal: " << rule.id;
  DeriveResult d = derive_rule(rule, both_directions(corpus.rules), types);
  EXPECT_TRUE(d.derived) << rule.id << ": " << d.reason;
}

std::set<std::string> rule_texts(const RuleCorpus& c) {
  std::set<std::string> out;
  for (const Rule& r : c.rules) {
    std::string t;
    for (const Expr& p : r.lhs) t += to_sexpr(p, p.root()) + ";";
    t += "=>";
    for (const Expr& p : r.rhs) t += to_sexpr(p, p.root()) + ";";
    out.insert(t);
  }
  return out;
}

TEST(Rulegen, RediscoversMatmulAssociativityAndDistribution) {
  RulegenConfig c = small({"matmul", "ewadd"}, 3);
  for (const LeafType& t : default_leaf_types(2))
    if (t.prefix == "x" || t.prefix == "w") c.leaf_types.push_back(t);
  RulegenResult r = run_rulegen(c);
  ASSERT_GT(r.stats.kept, 0u);
  expect_rediscovered(r.corpus, make_rule("matmul-assoc", {"(matmul 0 (matmul 0 ?x1 ?w1) ?w2)"},
                                          {"(matmul 0 ?x1 (matmul 0 ?w1 ?w2))"}));
  expect_rediscovered(r.corpus, make_rule("matmul-distrib", {"(matmul 0 ?x1 (ewadd ?w1 ?w2))"},
                                          {"(ewadd (matmul 0 ?x1 ?w1) (matmul 0 ?x1 ?w2))"}));
  // Every emitted rule passes ruleverify's checks (its default options: element-wise, then axioms).
  const CorpusReport verified = verify_rules(r.corpus.rules);
  for (const RuleReport& report : verified.rules)
    EXPECT_EQ(report.status, VerifyStatus::Verified) << report.id << ": " << report.detail;
  EXPECT_TRUE(verified.all_verified()) << format_summary(verified);
}

TEST(Rulegen, RediscoversConvConcatBatching) {
  RulegenConfig c = small({"conv2d", "concat", "split"}, 3);
  // Activations and 3x3 kernels only: the rule is about them, and the run stays small.
  for (LeafType t : default_leaf_types(2))
    if (t.prefix == "i" || t.prefix == "k") c.leaf_types.push_back(t);
  c.derive.iter_limit = 4;
  // No final pass: exercised by the other tests; here it would double the run time (CI budget).
  c.final_stages = {{FinalStage::Generalize}, {FinalStage::RestoreCandidates}};
  RulegenResult r = run_rulegen(c);
  expect_rediscovered(r.corpus, make_rule("conv-concat", {"(concat 1 (conv2d 1 1 -1 -1 0 ?i1 ?k1) (conv2d 1 1 -1 -1 0 ?i1 ?k2))"},
                                          {"(conv2d 1 1 -1 -1 0 ?i1 (concat 0 ?k1 ?k2))"}));
  // The two-pattern form: two convolutions of one input become one convolution and two splits.
  expect_rediscovered(r.corpus, make_rule("conv-batch", {"(conv2d 1 1 -1 -1 0 ?i1 ?k1)", "(conv2d 1 1 -1 -1 0 ?i1 ?k2)"},
                                          {"(split 1 0 1 (conv2d 1 1 -1 -1 0 ?i1 (concat 0 ?k1 ?k2)) ?k1)",
                                           "(split 1 1 1 (conv2d 1 1 -1 -1 0 ?i1 (concat 0 ?k1 ?k2)) ?k1)"}));
  EXPECT_GT(r.stats.kept_multi, 0u) << r.stats.multi_candidates << " two-pattern candidates, "
                                    << r.unbound.size() << " unbound left";
}

TEST(Rulegen, SecondInputSetSeparatesAShapeCoincidence) {
  // 1x1 matrices commute under matmul; 3x3 ones do not.
  std::vector<LeafType> types = {{"w", {1, 1}, {3, 3}, 2, true}};
  auto has_pair = [](const Enumeration& e, const std::vector<std::pair<TermNode, uint32_t>>& pairs) {
    for (const auto& [term, cls] : pairs) {
      Expr t = e.term_pattern(term), c = e.class_pattern(cls);
      if (to_sexpr(t, t.root()) == "(matmul 0 ?w2 ?w1)" && to_sexpr(c, c.root()) == "(matmul 0 ?w1 ?w2)") return true;
    }
    return false;
  };
  auto equations = [](const Enumeration& e) {
    std::vector<std::pair<TermNode, uint32_t>> out;
    for (const Equation& q : e.equations) out.emplace_back(q.member, q.cls);
    return out;
  };
  Enumeration e = enumerate_terms(make_vocabulary({"matmul"}, types), {.max_ops = 1});
  EXPECT_TRUE(has_pair(e, e.separated_examples));
  EXPECT_FALSE(has_pair(e, equations(e)));
  EXPECT_GE(e.levels.at(0).separated, 1u);
  // With both sets 1x1 the pair collides: set A alone would make it a candidate.
  types[0].shape_b = {1, 1};
  Enumeration same = enumerate_terms(make_vocabulary({"matmul"}, types), {.max_ops = 1});
  EXPECT_TRUE(has_pair(same, equations(same)));
  EXPECT_EQ(same.levels.at(0).separated, 0u);
}

PatternEquation equation(const std::string& lhs, const std::string& rhs) {
  return {parse_pattern(lhs), parse_pattern(rhs), true, 0, std::nullopt};
}

TEST(Rulegen, ThirdInputSetRefutesWhatTheFirstTwoDoNotSeparate) {
  // 1x1 matrices commute in sets A and B; set C's 3x3 ones do not.
  std::vector<LeafType> types = {{"w", {1, 1}, {1, 1}, 2, true, Shape{3, 3}}};
  PatternEquation swap = equation("(matmul 0 ?w2 ?w1)", "(matmul 0 ?w1 ?w2)");
  auto why = refute_on_third_set(swap, types, 7);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("fingerprint set C"), std::string::npos) << *why;
  // No set C: no verdict, whatever the rule.
  types[0].shape_c.reset();
  EXPECT_FALSE(refute_on_third_set(swap, types, 7).has_value());
  // A true rule is never refuted.
  EXPECT_FALSE(refute_on_third_set(equation("(matmul 0 (matmul 0 ?w1 ?w2) ?w3)", "(matmul 0 ?w1 (matmul 0 ?w2 ?w3))"),
                                   default_leaf_types(3), 7));
  // A pooling-order coincidence: SAME stride 2 and VALID stride 1 agree in shape on 5x5 and 4x4 images (sets
  // A and B), not on set C's 7x5 one. The prover's shape search let it through before set C.
  auto pools = refute_on_third_set(equation("(maxpool 3 3 1 1 -1 -1 (maxpool 3 3 2 2 -1 -1 ?i1))",
                                            "(maxpool 3 3 1 1 -1 -1 (maxpool 3 3 1 1 0 0 ?i1))"),
                                   default_leaf_types(1), 7);
  ASSERT_TRUE(pools.has_value());
  EXPECT_NE(pools->find("shapes"), std::string::npos) << *pools;
  // relu does nothing after maxpool unless a whole window is negative: the mostly-negative draw shows it.
  EXPECT_TRUE(refute_on_third_set(equation("(relu (maxpool 3 3 1 1 0 0 ?i1))", "(maxpool 3 3 1 1 0 0 ?i1)"),
                                  default_leaf_types(1), 7));
}

TEST(Rulegen, RuleIllShapedOnTheThirdSetIsNotRefuted) {
  // The split cuts at x1's extent, which set C makes differ from y1's rows: ill-shaped there, still true.
  std::vector<LeafType> types = {{"x", {2, 4}, {3, 5}, 1, false, Shape{5, 3}},
                                 {"y", {2, 2}, {3, 3}, 1, false, Shape{4, 4}}};
  EXPECT_FALSE(refute_on_third_set(equation("(split 1 0 1 (concat 1 ?x1 ?y1) ?x1)", "?x1"), types, 7));
}

TEST(Rulegen, CheapRefutationSkipsTheProofAndIsCounted) {
  std::vector<LeafType> types = {{"w", {1, 1}, {1, 1}, 2, true, Shape{3, 3}}};
  RulegenConfig c = small({"matmul"}, 1);
  c.leaf_types = types;
  RulegenResult r = run_rulegen(c);
  EXPECT_GE(r.stats.refuted_cheaply, 1u);
  bool listed = false;
  for (const Rejected& j : r.rejected)
    listed |= j.status == "wrong" && j.reason.rfind("refuted cheaply", 0) == 0;
  EXPECT_TRUE(listed);
  for (const std::string& t : rule_texts(r.corpus)) EXPECT_EQ(t.find("(matmul 0 ?w2 ?w1)"), std::string::npos) << t;
  // Every phase is reported, in pipeline order, in generator.stats.
  std::vector<std::string> names;
  for (const auto& p : r.corpus.generator.at("stats").at("phases")) names.push_back(p.at("phase").get<std::string>());
  EXPECT_EQ(names, (std::vector<std::string>{"enumerate", "fingerprint", "candidates", "refuted cheaply", "proved",
                                             "minimized", "generalized", "restored", "kept"}));
  EXPECT_EQ(r.corpus.generator["stats"]["refuted_cheaply"].get<uint64_t>(), r.stats.refuted_cheaply);
}

// Minimization proves candidates ahead on a core that would otherwise wait, and the final pass checks its
// flagged rules speculatively in parallel: neither may change a verdict, so one thread and four give the
// same rules in the same order and the same counts.
TEST(Rulegen, ThreadCountChangesNothing) {
  RulegenConfig c = small({"matmul", "ewadd", "relu", "transpose"}, 2);
  c.threads = 1;
  RulegenResult one = run_rulegen(c);
  c.threads = 4;
  RulegenResult four = run_rulegen(c);
  ASSERT_EQ(one.corpus.rules.size(), four.corpus.rules.size());
  for (size_t i = 0; i < one.corpus.rules.size(); ++i) {
    EXPECT_EQ(one.corpus.rules[i].id, four.corpus.rules[i].id);
    EXPECT_EQ(patterns_text(one.corpus.rules[i].lhs), patterns_text(four.corpus.rules[i].lhs));
    EXPECT_EQ(patterns_text(one.corpus.rules[i].rhs), patterns_text(four.corpus.rules[i].rhs));
  }
  EXPECT_EQ(one.stats.proved, four.stats.proved);
  EXPECT_EQ(one.stats.wrong, four.stats.wrong);
  EXPECT_EQ(one.stats.unknown, four.stats.unknown);
  EXPECT_EQ(one.stats.pruned_derivable, four.stats.pruned_derivable);
  EXPECT_EQ(one.stats.pruned_final, four.stats.pruned_final);
  EXPECT_EQ(one.rejected.size(), four.rejected.size());
}

/// `count` shards of the run `c`, written to files and merged with c's limits but another max_ops and seed:
/// the settings of the run (pairing's bound, generalization's seed) are the shard files' own.
RulegenResult merged_shards(const RulegenConfig& c, int count, bool defer_proofs) {
  auto dir = std::filesystem::temp_directory_path() / "teq_rulegen_shard_test";
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> parts;
  for (int i = 0; i < count; ++i) {
    RulegenConfig s = c;
    s.shard_index = i, s.shard_count = count, s.defer_proofs = defer_proofs;
    RulegenResult part = run_rulegen(s);
    EXPECT_TRUE(part.is_shard);
    parts.push_back(dir / ("shard" + std::to_string(i) + ".json"));
    save_rulegen_output(part, parts.back());
  }
  RulegenConfig merge_config = c;
  merge_config.max_ops = c.max_ops + 1, merge_config.seed = c.seed + 1;
  RulegenResult merged = merge_rulegen(parts, merge_config);
  std::filesystem::remove_all(dir);
  return merged;
}

TEST(Rulegen, ShardsMergedEqualOneRun) {
  RulegenConfig c = small({"matmul", "ewadd", "relu", "transpose"}, 2);
  RulegenResult whole = run_rulegen(c);
  RulegenResult merged = merged_shards(c, 2, false);
  EXPECT_EQ(rule_texts(merged.corpus), rule_texts(whole.corpus));
  EXPECT_EQ(merged.stats.kept, whole.stats.kept);
}

// --max-last-size-candidates keeps the lowest hashes of the last size's distinct candidates. Each shard keeps
// its own lowest and writes their hashes; merge keeps the lowest of all: one process's sample, not one per shard.
TEST(Rulegen, ShardsWithABindingCapMergedEqualOneRunWithTheCap) {
  RulegenConfig c = small({"matmul", "ewadd", "relu", "transpose"}, 2);
  c.max_last_size_candidates = 20;
  RulegenResult whole = run_rulegen(c);
  ASSERT_GT(whole.stats.candidates_capped, 0u);
  for (bool defer : {false, true}) {
    RulegenResult merged = merged_shards(c, 3, defer);
    EXPECT_EQ(rule_texts(merged.corpus), rule_texts(whole.corpus)) << "defer_proofs " << defer;
    EXPECT_EQ(merged.stats.candidates_capped, whole.stats.candidates_capped) << "defer_proofs " << defer;
  }
}

// Shards that defer their proofs leave pairing and every proof to merge, which then proves what one process
// proves: the same rules and the same verdicts, not only the same kept rules.
TEST(Rulegen, ShardsThatDeferTheirProofsMergedEqualOneRunProofForProof) {
  // Size 3 of concat and split over matrices: batching rules with two patterns, whose unbound equations
  // come from different shards.
  RulegenConfig c = small({"ewadd", "concat", "split"}, 3);
  for (LeafType t : default_leaf_types(2))
    if (t.prefix == "x") c.leaf_types.push_back(t);
  RulegenResult whole = run_rulegen(c);
  RulegenResult merged = merged_shards(c, 3, true);
  ASSERT_EQ(merged.corpus.rules.size(), whole.corpus.rules.size());
  for (size_t i = 0; i < whole.corpus.rules.size(); ++i) {
    EXPECT_EQ(merged.corpus.rules[i].id, whole.corpus.rules[i].id);
    EXPECT_EQ(patterns_text(merged.corpus.rules[i].lhs), patterns_text(whole.corpus.rules[i].lhs));
    EXPECT_EQ(patterns_text(merged.corpus.rules[i].rhs), patterns_text(whole.corpus.rules[i].rhs));
  }
  EXPECT_GT(whole.stats.multi_candidates, 0u);  // unbound equations were paired across the shards
  EXPECT_EQ(merged.stats.multi_candidates, whole.stats.multi_candidates);
  EXPECT_EQ(merged.stats.pruned_unpaired, whole.stats.pruned_unpaired);
  EXPECT_EQ(merged.stats.proved, whole.stats.proved);
  EXPECT_EQ(merged.stats.wrong, whole.stats.wrong);
  EXPECT_EQ(merged.stats.unknown, whole.stats.unknown);
}

TEST(Rulegen, TermEqualToALeafJoinsTheLeafsClass) {
  // (ewmul ?x1 (ones ?x1)) is ?x1: as a class of its own it became the left side of two-pattern rules
  // that paired an identity in disguise with an unrelated pattern.
  std::vector<LeafType> types;
  for (const LeafType& t : default_leaf_types(2))
    if (t.prefix == "x") types.push_back(t);
  Enumeration e = enumerate_terms(make_vocabulary({"ewmul", "ones"}, types), {.max_ops = 2});
  bool found = false;
  for (const Equation& q : e.equations) {
    Expr t = e.term_pattern(q.member);
    if (to_sexpr(t, t.root()) != "(ewmul ?x1 (ones ?x1))") continue;
    found = true;
    Expr c = e.class_pattern(q.cls);
    EXPECT_EQ(to_sexpr(c, c.root()), "?x1");
  }
  EXPECT_TRUE(found) << "no equation for (ewmul ?x1 (ones ?x1))";
  for (size_t k = e.leaf_names.size(); k < e.classes.size(); ++k) {
    Expr c = e.class_pattern(static_cast<uint32_t>(k));
    EXPECT_NE(to_sexpr(c, c.root()), "(ewmul ?x1 (ones ?x1))") << "a class of its own";
  }
}

// A scoped family (family_scope) is enumerated only with the operators of its scope: 3-d transposes with
// each other, the padded convolution with ewadd and relu. The other operators still combine freely.
TEST(Rulegen, AScopedFamilyIsEnumeratedWithItsScopeOnly) {
  const Vocabulary vocab = make_vocabulary({"transpose3d", "ewadd", "relu", "concat", "conv_pad1"}, {});
  auto names = [&](std::initializer_list<const char*> ops) {
    uint64_t m = 0;
    for (const char* op : ops)
      m |= uint64_t{1} << (std::ranges::find(vocab.op_names, op) - vocab.op_names.begin());
    return m;
  };
  EXPECT_TRUE(vocab.may_combine(names({"transpose3d"})));
  EXPECT_FALSE(vocab.may_combine(names({"transpose3d", "relu"})));
  EXPECT_TRUE(vocab.may_combine(names({"conv_pad1", "ewadd", "relu"})));
  EXPECT_FALSE(vocab.may_combine(names({"conv_pad1", "concat"})));
  EXPECT_FALSE(vocab.may_combine(names({"conv_pad1", "transpose3d"})));
  EXPECT_TRUE(vocab.may_combine(names({"ewadd", "relu", "concat"})));

  std::vector<LeafType> types = {rank3_leaf_type()};
  Enumeration e = enumerate_terms(make_vocabulary({"transpose3d", "relu", "ewadd"}, types), {.max_ops = 2});
  size_t transposes_of_transposes = 0, relus_of_sums = 0;
  auto check = [&](const Expr& p) {
    const std::string text = to_sexpr(p, p.root());
    const bool transposes = text.find("transpose") != std::string::npos;
    EXPECT_FALSE(transposes && (text.find("relu") != std::string::npos || text.find("ewadd") != std::string::npos))
        << text;
    transposes_of_transposes += text.starts_with("(transpose") && text.find("(transpose", 1) != std::string::npos;
    relus_of_sums += text.starts_with("(relu (ewadd");
  };
  for (const Equation& q : e.equations) check(e.term_pattern(q.member));
  for (size_t k = e.leaf_names.size(); k < e.classes.size(); ++k) check(e.class_pattern(static_cast<uint32_t>(k)));
  EXPECT_GT(transposes_of_transposes, 0u);
  EXPECT_GT(relus_of_sums, 0u);
}

TEST(Rulegen, ConvolutionsReadActivationsNotWeightsCutAtOne) {
  // A kernel split at an activation's extent is still a kernel: convolving it as an image only gave
  // shape-coincidence rules ((conv2d 2 2 ...) = (conv2d 1 1 ...) on a 1-pixel-wide output).
  std::vector<LeafType> types;
  for (const LeafType& t : default_leaf_types(2))
    if (t.prefix == "i" || t.prefix == "k") types.push_back(t);
  Enumeration e = enumerate_terms(make_vocabulary({"conv2d", "split"}, types), {.max_ops = 2});
  auto reads_a_weight = [](const Expr& p) {
    for (const ExprNode& n : p.nodes()) {
      if (n.op != OpKind::Conv2d) continue;
      ExprId data = n.children[0];
      while (p[data].op == OpKind::Split) data = p[data].children[0];  // the cut's reference is not read
      if (p[data].op == OpKind::Var && p[data].name[0] == 'k') return true;
    }
    return false;
  };
  size_t convs = 0;
  for (const Equation& q : e.equations) {
    Expr t = e.term_pattern(q.member);
    convs += to_sexpr(t, t.root()).find("conv2d") != std::string::npos;
    EXPECT_FALSE(reads_a_weight(t)) << to_sexpr(t, t.root());
  }
  for (size_t k = e.leaf_names.size(); k < e.classes.size(); ++k) {
    Expr c = e.class_pattern(static_cast<uint32_t>(k));
    convs += to_sexpr(c, c.root()).find("conv2d") != std::string::npos;
    EXPECT_FALSE(reads_a_weight(c)) << to_sexpr(c, c.root());
  }
  EXPECT_GT(convs, 0u);  // the check above saw convolutions
}

TEST(Rulegen, RulesWithEnlargeDoNotDropAGeneralRule) {
  // conv kernel batching with SAME padding follows from enlarge rules for kernels up to 3x3, and holds
  // for every kernel; minimization must keep it (a 5x5 kernel has no enlarge to 3x3).
  const Rule general = make_rule("batch", {"(concat 1 (conv2d 1 1 -1 -1 0 ?i1 ?a1) (conv2d 1 1 -1 -1 0 ?i1 ?a2))"},
                                 {"(conv2d 1 1 -1 -1 0 ?i1 (concat 0 ?a1 ?a2))"});
  RuleCorpus input;
  input.rules = {
      make_rule("enlarge", {"(conv2d 1 1 -1 -1 0 ?i1 (enlarge 3 3 ?a1))"}, {"(conv2d 1 1 -1 -1 0 ?i1 ?a1)"}),
      make_rule("batch-enlarged", {"(concat 1 (conv2d 1 1 -1 -1 0 ?i1 ?a1) (conv2d 1 1 -1 -1 0 ?i1 ?k1))"},
                {"(conv2d 1 1 -1 -1 0 ?i1 (concat 0 (enlarge 3 3 ?a1) ?k1))"}),
      make_rule("enlarge-concat", {"(concat 0 (enlarge 3 3 ?a1) (enlarge 3 3 ?a2))"},
                {"(enlarge 3 3 (concat 0 ?a1 ?a2))"}),
      general};
  // The enlarge rules do derive it at the fingerprint shapes (1x3 kernels): the premise of the test.
  std::vector<Rule> with_enlarge(input.rules.begin(), input.rules.end() - 1);
  ASSERT_TRUE(derive_as_rewrites(general, both_directions(with_enlarge), default_leaf_types(2)).derived);
  auto path = std::filesystem::temp_directory_path() / "teq_rulegen_enlarge_test.json";
  save_corpus(input, path);
  RulegenConfig c = small({"conv2d", "concat", "enlarge"}, 3);
  RulegenResult merged = merge_rulegen({path}, c);
  std::filesystem::remove(path);
  EXPECT_TRUE(rule_texts(merged.corpus).contains(
      "(concat 1 (conv2d 1 1 -1 -1 0 ?i1 ?a1) (conv2d 1 1 -1 -1 0 ?i1 ?a2));=>(conv2d 1 1 -1 -1 0 ?i1 (concat 0 ?a1 ?a2));"))
      << merged.corpus.rules.size() << " rules kept";
}

TEST(Rulegen, TheSeedsFormsAreScopedFamiliesInTheDefault) {
  // transpose3d and conv_pad1 give the forms of the hand seed's last rules. Enumerated with every operator
  // they took corpus/rules.json past 700 rules (one copy of each law per permutation or padding); within
  // their scopes 12 rules of corpus/rules.json use them. transpose3d brings its rank-3 leaves. conv_cut,
  // restricted to kernels whose output count is no activation's channel count, and maxpool2x2 are in the
  // default list too.
  for (const std::string family : {"transpose3d", "conv_pad1"}) {
    EXPECT_EQ(std::ranges::count(default_op_names(), family), 1) << family;
    EXPECT_FALSE(family_scope(family).empty()) << family;
  }
  for (const std::string family : {"conv_cut", "maxpool2x2"}) {
    EXPECT_EQ(std::ranges::count(default_op_names(), family), 1) << family;
    EXPECT_TRUE(family_scope(family).empty()) << family;
  }
  const Vocabulary plain = make_vocabulary({"transpose"}, default_leaf_types(2));
  EXPECT_TRUE(std::ranges::none_of(plain.leaf_types, [](const LeafType& t) { return t.shape_a.size() == 3; }));
  const Vocabulary t3 = make_vocabulary({"transpose", "transpose3d"}, default_leaf_types(2));
  EXPECT_EQ(std::ranges::count_if(t3.leaf_types, [](const LeafType& t) { return t.shape_a.size() == 3; }), 1);
  EXPECT_EQ(t3.variants.size(), 6u);  // the 2-d swap and five permutations
  // The inverse pair of 3-d permutations and the self-inverse swap of the last two axes are rediscovered.
  const RuleCorpus found = run_rulegen(small({"transpose", "transpose3d"}, 2)).corpus;
  std::vector<LeafType> types = default_leaf_types(2);
  types.push_back(rank3_leaf_type());
  for (const Rule& rule : {make_rule("inverse", {"(transpose 1 2 0 (transpose 2 0 1 ?t1))"}, {"?t1"}),
                           make_rule("swap", {"(transpose 0 2 1 (transpose 0 2 1 ?t1))"}, {"?t1"})}) {
    EXPECT_FALSE(derive_rule(rule, {}, types).derived) << rule.id;
    const DeriveResult d = derive_rule(rule, both_directions(found.rules), types);
    EXPECT_TRUE(d.derived) << rule.id << ": " << d.reason;
  }
}

TEST(Rulegen, AConvCutTakesItsExtentFromAKernelOnly) {
  // conv_cut splits a convolution's channels at a kernel's output-channel count. Cut at any other leaf (an
  // activation's batch, a matrix's rows) it only made rules that hold where unrelated extents agree: 356 of
  // 1137 rules at --max-ops 3 before the reference was restricted to 4-d weight leaves. Of those, only a
  // kernel whose output count is no activation's channel count (a and b: 6 outputs, 4 channels; not the
  // square k, nor d, whose 4 outputs are i's 4 channels): a cut at k took concatenated activations apart
  // too (834 rules with conv_cut before, 668 after).
  const Vocabulary v = make_vocabulary({"conv2d", "concat", "conv_cut"}, default_leaf_types(1));
  ASSERT_TRUE(std::ranges::any_of(v.variants, [](const OpVariant& o) { return o.kernel_reference; }));
  Enumeration e = enumerate_terms(v, {.max_ops = 3});
  size_t cuts = 0;
  for (const Equation& q : e.equations) {
    const Expr t = e.term_pattern(q.member);
    for (const ExprNode& n : t.nodes()) {
      if (n.op != OpKind::Split || n.attrs.at(2) != 0 || n.attrs.at(0) != 1) continue;
      ++cuts;
      const ExprNode& ref = t[n.children[1]];
      EXPECT_TRUE(ref.op == OpKind::Var && std::string("ab").find(ref.name[0]) != std::string::npos)
          << to_sexpr(t, t.root());
    }
  }
  EXPECT_GT(cuts, 0u);
}

TEST(Rulegen, UnknownOperatorIsAClearError) {
  try {
    make_vocabulary({"matmul", "frobnicate"}, default_leaf_types());
    FAIL() << "no error";
  } catch (const VocabularyError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown operator 'frobnicate'"), std::string::npos) << e.what();
  }
}

TEST(Rulegen, OperatorsOfModelImportsAreNotEnumerated) {
  // The vocabulary is rulegen's own list (synth/vocabulary.cpp), not op_list.inc: the operators added for
  // real model imports are excluded by default and unknown to --ops (docs/rulegen.md), so they cannot slow
  // enumeration down.
  for (const std::string op : {"sqrt", "erf", "clip", "reduce_mean", "pad"}) {
    for (const std::string& name : default_op_names()) EXPECT_NE(name, op);
    EXPECT_THROW(make_vocabulary({op}, default_leaf_types()), VocabularyError) << op;
  }
}

}  // namespace
}  // namespace teq::synth
