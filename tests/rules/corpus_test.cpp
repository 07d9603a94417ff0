// The rule corpus format: round trip through JSON and files, and errors that name the rule id and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "rules/corpus.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

RuleCorpus sample_corpus() {
  RuleCorpus c;
  c.generator = {{"max_ops", 3}, {"ops", {"matmul", "ewadd", "relu"}}, {"seed", 7}};
  c.rules.push_back(make_rule("matmul-assoc", {"(matmul 0 ?a (matmul 0 ?b ?c))"}, {"(matmul 0 (matmul 0 ?a ?b) ?c)"}));
  c.rules.back().verification = Verification{"verified", "z3-elementwise", 12.5};
  c.rules.push_back(make_rule("matmul-share-input", {"(matmul 0 ?x ?w1)", "(matmul 0 ?x ?w2)"},
                              {"(split 1 0 1 (matmul 0 ?x (concat 1 ?w1 ?w2)) ?w1)",
                               "(split 1 1 1 (matmul 0 ?x (concat 1 ?w1 ?w2)) ?w1)"}));
  c.rules.back().source = "tensat multi.txt:3";
  c.rules.push_back(make_rule("conv-same-attrs", {"(conv2d 1 1 -1 -1 2 ?x ?w)"}, {"(relu (conv2d 1 1 -1 -1 0 ?x ?w))"}));
  c.rules.back().verification = Verification{"unknown", "", 0};
  return c;
}

void expect_same_corpus(const RuleCorpus& a, const RuleCorpus& b) {
  EXPECT_EQ(a.generator, b.generator);
  ASSERT_EQ(a.rules.size(), b.rules.size());
  for (size_t i = 0; i < a.rules.size(); ++i) {
    const Rule &x = a.rules[i], &y = b.rules[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.lhs, y.lhs) << x.id;
    EXPECT_EQ(x.rhs, y.rhs) << x.id;
    EXPECT_EQ(x.source, y.source) << x.id;
    EXPECT_EQ(x.same_shape, y.same_shape) << x.id;
    EXPECT_EQ(x.conv_groupings, y.conv_groupings) << x.id;
    ASSERT_EQ(x.verification.has_value(), y.verification.has_value()) << x.id;
    if (x.verification) {
      EXPECT_EQ(x.verification->status, y.verification->status);
      EXPECT_EQ(x.verification->method, y.verification->method);
      EXPECT_EQ(x.verification->ms, y.verification->ms);
    }
  }
}

TEST(Corpus, ReversedRuleSwapsTheSidesOnlyWhereARewriterCanApplyIt) {
  // Zero-padding a 1x1 kernel: rulegen finds it as the removal of an enlarge.
  Rule drop = make_rule("drop-enlarge", {"(conv2d 1 1 -1 -1 0 ?x (enlarge 3 3 ?w))"}, {"(conv2d 1 1 -1 -1 0 ?x ?w)"});
  drop.verification = Verification{"verified", "axioms", 3};
  std::optional<Rule> pad = reversed_rule(drop);
  ASSERT_TRUE(pad.has_value());
  EXPECT_EQ(pad->id, "drop-enlarge~rev");
  EXPECT_EQ(pad->lhs, drop.rhs);
  EXPECT_EQ(pad->rhs, drop.lhs);
  ASSERT_TRUE(pad->verification.has_value());
  EXPECT_EQ(pad->verification->status, "verified");
  EXPECT_NO_THROW(validate_rule(*pad));
  // Growing the right side back is fine: an e-graph keeps relu(relu(x)) in relu(x)'s class.
  EXPECT_TRUE(reversed_rule(make_rule("relu-idem", {"(relu (relu ?x))"}, {"(relu ?x)"})).has_value());
  // A right side that is a bare variable would match every e-class.
  EXPECT_FALSE(reversed_rule(make_rule("split-concat", {"(split 0 0 0 (concat 0 ?a ?b) ?a)"}, {"?a"})).has_value());
  EXPECT_FALSE(reversed_rule(make_rule("x-times-zero", {"(ewmul ?x (ewsub ?y ?y))"}, {"(ewsub ?y ?y)"})).has_value())
      << "?x is not on the right: the reversal could not instantiate it";
  // Multi-pattern rules stay one way.
  EXPECT_FALSE(reversed_rule(sample_corpus().rules[1]).has_value());
}

TEST(Corpus, RoundTripsThroughJson) {
  const RuleCorpus c = sample_corpus();
  const std::string text = dump_corpus(c);
  const RuleCorpus back = parse_corpus(text);
  expect_same_corpus(c, back);
  EXPECT_EQ(dump_corpus(back), text);
  EXPECT_TRUE(back.rules[1].is_multi());
  EXPECT_FALSE(back.rules[0].is_multi());
  EXPECT_EQ(back.rules[1].variables(), (std::vector<std::string>{"x", "w1", "w2"}));
  ASSERT_NE(back.find("matmul-assoc"), nullptr);
  EXPECT_EQ(back.find("matmul-assoc")->id, "matmul-assoc");
  EXPECT_EQ(back.find("no-such-rule"), nullptr);
}

// Shape conditions (Rule::same_shape) are written with the variables' '?', read back with or without it in
// make_rule, and carried into the reversal.
TEST(Corpus, ShapeConditionsRoundTripAndReverse) {
  RuleCorpus c;
  c.rules.push_back(make_rule("grouped-merge", {"(concat 1 (conv2d 1 1 0 0 0 ?x1 ?w1) (conv2d 1 1 0 0 0 ?x2 ?w2))"},
                              {"(conv2d 1 1 0 0 0 (concat 1 ?x1 ?x2) (concat 0 ?w1 ?w2))"},
                              {{"?x1", "x2"}, {"?w1", "?w2"}}));
  EXPECT_EQ(c.rules[0].same_shape, (std::vector<std::vector<std::string>>{{"x1", "x2"}, {"w1", "w2"}}));
  const std::string text = dump_corpus(c);
  EXPECT_NE(text.find(R"("same_shape":[["?x1","?x2"],["?w1","?w2"]])"), std::string::npos) << text;
  const RuleCorpus back = parse_corpus(text);
  expect_same_corpus(c, back);
  EXPECT_EQ(dump_corpus(back), text);
  const std::optional<Rule> rev = reversed_rule(c.rules[0]);
  ASSERT_TRUE(rev.has_value());
  EXPECT_EQ(rev->same_shape, c.rules[0].same_shape);
  // The same sides without conditions are another rule: add_reversed_rules keeps both reversals.
  RuleCorpus both = c;
  both.rules.push_back(c.rules[0]);
  both.rules.back().id = "unconditional";
  both.rules.back().same_shape.clear();
  EXPECT_EQ(add_reversed_rules(both), 2u);
}

// A rule's scope (Rule::conv_groupings, rules/rule_scope.h) is written and read back as it is, and the
// reversal swaps each grouping's sides, since a grouping names the left side's convolutions first.
TEST(Corpus, ConvGroupingsRoundTripAndReverse) {
  RuleCorpus c;
  c.rules.push_back(make_rule("grouped-merge", {"(concat 1 (conv2d 1 1 0 0 0 ?x1 ?w1) (conv2d 1 1 0 0 0 ?x2 ?w2))"},
                              {"(conv2d 1 1 0 0 0 (concat 1 ?x1 ?x2) (concat 0 ?w1 ?w2))"},
                              {{"?x1", "x2"}, {"?w1", "?w2"}}, {"uu|g", "gg|g"}));
  const std::string text = dump_corpus(c);
  EXPECT_NE(text.find(R"("conv_groupings":["uu|g","gg|g"])"), std::string::npos) << text;
  const RuleCorpus back = parse_corpus(text);
  expect_same_corpus(c, back);
  EXPECT_EQ(dump_corpus(back), text);
  const std::optional<Rule> rev = reversed_rule(c.rules[0]);
  ASSERT_TRUE(rev.has_value());
  EXPECT_EQ(rev->conv_groupings, (std::vector<std::string>{"g|uu", "g|gg"}));
  // The same sides with another scope are another rule: add_reversed_rules keeps both reversals.
  RuleCorpus both = c;
  both.rules.push_back(c.rules[0]);
  both.rules.back().id = "narrower";
  both.rules.back().conv_groupings = {"uu|g"};
  EXPECT_EQ(add_reversed_rules(both), 2u);
}

// eqsat-run's both-ways adds no reversal that builds a copy of a tensor (an operator with one variable as two
// operands): backwards, the grouped convolution of a copied input made SqueezeNet's extraction 18 times slower
// for the same graph. Reading one tensor in two places is no copy: the reversal of a merge of two matmuls of
// ?x (split back into two) is added.
TEST(Corpus, NoReversalBuildsACopy) {
  RuleCorpus c;
  c.rules = {make_rule("grouped", {"(conv2d 1 1 -1 -1 2 (concat 1 ?i1 ?i1) (concat 0 ?a1 ?a2))"},
                       {"(conv2d 1 1 -1 -1 2 ?i1 (concat 0 ?a1 ?a2))"}),
             make_rule("merge", {"(concat 1 (matmul 0 ?x ?w1) (matmul 0 ?x ?w2))"}, {"(matmul 0 ?x (concat 1 ?w1 ?w2))"})};
  EXPECT_TRUE(reversal_copies_an_operand(c.rules[0]));
  EXPECT_FALSE(reversal_copies_an_operand(c.rules[1]));
  ASSERT_TRUE(reversed_rule(c.rules[0]).has_value());  // a rule both ways (rulegen's derivations use it)
  EXPECT_EQ(add_reversed_rules(c), 1u);
  ASSERT_EQ(c.rules.size(), 3u);
  EXPECT_EQ(c.rules[2].id, "merge~rev");
}

TEST(Corpus, DumpIsOneRulePerLine) {
  const std::string text = dump_corpus(sample_corpus());
  EXPECT_NE(text.find("\"format\": \"tensor-eqsat-rules\""), std::string::npos);
  size_t rule_lines = 0, pos = 0;
  while ((pos = text.find("\n    {\"id\":", pos)) != std::string::npos) ++rule_lines, ++pos;
  EXPECT_EQ(rule_lines, 3u) << text;
}

TEST(Corpus, RoundTripsThroughAFile) {
  const auto path = std::filesystem::temp_directory_path() / ("teq_corpus_test_" + std::to_string(getpid()) + ".json");
  const RuleCorpus c = sample_corpus();
  save_corpus(c, path);
  const RuleCorpus back = load_corpus(path);
  std::filesystem::remove(path);
  expect_same_corpus(c, back);
}

TEST(Corpus, ParsesTheDesignExample) {
  const char* text = R"j({
    "format": "tensor-eqsat-rules", "version": 1,
    "generator": { "max_ops": 3 },
    "rules": [
      { "id": "matmul-assoc", "lhs": ["(matmul 0 ?a (matmul 0 ?b ?c))"], "rhs": ["(matmul 0 (matmul 0 ?a ?b) ?c)"],
        "verification": { "status": "verified", "method": "z3-elementwise", "ms": 12 } },
      { "id": "no-verification", "lhs": ["(relu (relu ?x))"], "rhs": ["(relu ?x)"] }
    ] })j";
  RuleCorpus c = parse_corpus(text);
  ASSERT_EQ(c.rules.size(), 2u);
  EXPECT_EQ(c.rules[0].verification->ms, 12);
  EXPECT_FALSE(c.rules[1].verification.has_value());
  EXPECT_EQ(to_sexpr(c.rules[1].lhs[0], c.rules[1].lhs[0].root()), "(relu (relu ?x))");
}

TEST(Corpus, EmptyRuleListIsAValidCorpus) {
  RuleCorpus c = parse_corpus(R"j({"format": "tensor-eqsat-rules", "version": 1, "rules": []})j");
  EXPECT_TRUE(c.rules.empty());
  EXPECT_TRUE(c.generator.is_object());
}

// ---------------------------------------------------------------------------------------------------
// Errors: every message names the origin, and for a rule its id and the field.

struct BadCorpus {
  std::string name;
  std::string rules_json;              // the "rules" array; or a whole document when it starts with '!'
  std::vector<std::string> expected;   // fragments the message must contain
};

void PrintTo(const BadCorpus& c, std::ostream* os) { *os << c.name; }

class CorpusErrors : public ::testing::TestWithParam<BadCorpus> {};

TEST_P(CorpusErrors, NameTheRuleAndTheField) {
  const BadCorpus& c = GetParam();
  const std::string text = c.rules_json.starts_with("!")
                               ? c.rules_json.substr(1)
                               : R"j({"format": "tensor-eqsat-rules", "version": 1, "rules": )j" + c.rules_json + "}";
  try {
    parse_corpus(text, "rules.json");
    FAIL() << "no error for " << c.name;
  } catch (const CorpusError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.starts_with("rules.json: ")) << msg;
    for (const std::string& f : c.expected) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' in: " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, CorpusErrors,
    ::testing::Values(
        BadCorpus{"BadJson", "!{\"format\": \"tensor-eqsat-rules\",", {"not valid JSON"}},
        BadCorpus{"NotAnObject", "![1, 2]", {"top level must be a JSON object"}},
        BadCorpus{"WrongFormat", R"j(!{"format": "taso", "version": 1, "rules": []})j", {"field 'format'"}},
        BadCorpus{"MissingFormat", R"j(!{"version": 1, "rules": []})j", {"field 'format'"}},
        BadCorpus{"WrongVersion", R"j(!{"format": "tensor-eqsat-rules", "version": 2, "rules": []})j",
                  {"field 'version' must be 1"}},
        BadCorpus{"MissingRules", R"j(!{"format": "tensor-eqsat-rules", "version": 1})j", {"field 'rules'"}},
        BadCorpus{"RuleNotObject", "[3]", {"rule #0", "must be an object"}},
        BadCorpus{"MissingId", R"j([{"lhs": ["(relu ?x)"], "rhs": ["?x"]}])j", {"rule #0", "field 'id'"}},
        BadCorpus{"MissingLhs", R"j([{"id": "r1", "rhs": ["(relu ?x)"]}])j", {"rule 'r1'", "lhs", "array of pattern"}},
        BadCorpus{"LhsNotStrings", R"j([{"id": "r1", "lhs": [3], "rhs": ["?x"]}])j", {"rule 'r1'", "lhs"}},
        BadCorpus{"CountMismatch", R"j([{"id": "r2", "lhs": ["(relu ?x)", "(tanh ?x)"], "rhs": ["?x"]}])j",
                  {"rule 'r2'", "rhs", "1 patterns for 2 lhs patterns"}},
        BadCorpus{"EmptyLhs", R"j([{"id": "r2", "lhs": [], "rhs": []}])j", {"rule 'r2'", "lhs", "no patterns"}},
        BadCorpus{"UnknownOperator", R"j([{"id": "r3", "lhs": ["(relu ?x)"], "rhs": ["(relu (convv 1 ?x))"]}])j",
                  {"rule 'r3'", "rhs[0]", "line 1, column 8", "unknown operator 'convv'"}},
        BadCorpus{"ParseErrorInSecondLhs",
                  R"j([{"id": "r4", "lhs": ["(relu ?x)", "(relu ?x"], "rhs": ["?x", "?x"]}])j",
                  {"rule 'r4'", "lhs[1]", "line 1, column 1", "unclosed"}},
        BadCorpus{"UnboundRhsVariable", R"j([{"id": "r5", "lhs": ["(relu ?x)"], "rhs": ["(ewadd ?x ?y)"]}])j",
                  {"rule 'r5'", "rhs[0]", "variable ?y is not bound by the lhs"}},
        BadCorpus{"BareVariableLhs", R"j([{"id": "r6", "lhs": ["?x"], "rhs": ["(relu ?x)"]}])j",
                  {"rule 'r6'", "lhs[0]", "bare variable"}},
        BadCorpus{"GraphLeafInPattern", R"j([{"id": "r7", "lhs": ["(relu (input x 2))"], "rhs": ["(relu ?x)"]}])j",
                  {"rule 'r7'", "lhs[0]", "not input leaves"}},
        BadCorpus{"TwoTermsInOnePattern", R"j([{"id": "r8", "lhs": ["(relu ?x) (tanh ?x)"], "rhs": ["?x"]}])j",
                  {"rule 'r8'", "lhs[0]", "exactly one term"}},
        BadCorpus{"DuplicateId",
                  R"j([{"id": "dup", "lhs": ["(relu ?x)"], "rhs": ["(relu ?x)"]},
                      {"id": "dup", "lhs": ["(tanh ?x)"], "rhs": ["(tanh ?x)"]}])j",
                  {"rule 'dup'", "id", "duplicate id"}},
        BadCorpus{"BadVerificationStatus",
                  R"j([{"id": "r9", "lhs": ["(relu ?x)"], "rhs": ["(relu ?x)"], "verification": {"status": "maybe"}}])j",
                  {"rule 'r9'", "verification.status", "'maybe'"}},
        BadCorpus{"VerificationWithoutStatus",
                  R"j([{"id": "r10", "lhs": ["(relu ?x)"], "rhs": ["(relu ?x)"], "verification": {"ms": 3}}])j",
                  {"rule 'r10'", "verification", "string 'status'"}},
        BadCorpus{"SameShapeNotArrays",
                  R"j([{"id": "r12", "lhs": ["(ewadd ?x ?y)"], "rhs": ["(ewadd ?y ?x)"], "same_shape": ["?x"]}])j",
                  {"rule 'r12'", "same_shape", "arrays of ?variable names"}},
        BadCorpus{"SameShapeWithoutQuestionMark",
                  R"j([{"id": "r13", "lhs": ["(ewadd ?x ?y)"], "rhs": ["(ewadd ?y ?x)"], "same_shape": [["x", "?y"]]}])j",
                  {"rule 'r13'", "same_shape", "?variable names"}},
        BadCorpus{"SameShapeOfOne",
                  R"j([{"id": "r14", "lhs": ["(ewadd ?x ?y)"], "rhs": ["(ewadd ?y ?x)"], "same_shape": [["?x"]]}])j",
                  {"rule 'r14'", "same_shape[0]", "at least two variables"}},
        BadCorpus{"SameShapeUnbound",
                  R"j([{"id": "r15", "lhs": ["(ewadd ?x ?y)"], "rhs": ["(ewadd ?y ?x)"], "same_shape": [["?x", "?z"]]}])j",
                  {"rule 'r15'", "same_shape[0]", "?z is not bound by the lhs"}},
        BadCorpus{"ConvGroupingsNotStrings",
                  R"j([{"id": "r16", "lhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "rhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "conv_groupings": [1]}])j",
                  {"rule 'r16'", "conv_groupings", "grouping strings"}},
        BadCorpus{"ConvGroupingOfTheWrongLength",
                  R"j([{"id": "r17", "lhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "rhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "conv_groupings": ["gg|g"]}])j",
                  {"rule 'r17'", "conv_groupings[0]", "u|u has one letter"}},
        BadCorpus{"ConvGroupingWithoutSides",
                  R"j([{"id": "r18", "lhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "rhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "conv_groupings": ["g"]}])j",
                  {"rule 'r18'", "conv_groupings[0]", "LHS|RHS"}},
        BadCorpus{"ConvGroupingTwice",
                  R"j([{"id": "r19", "lhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "rhs": ["(conv2d 1 1 0 0 0 ?x ?w)"], "conv_groupings": ["g|g", "g|g"]}])j",
                  {"rule 'r19'", "conv_groupings[1]", "listed twice"}},
        BadCorpus{"SourceNotString",
                  R"j([{"id": "r11", "lhs": ["(relu ?x)"], "rhs": ["(relu ?x)"], "source": 5}])j",
                  {"rule 'r11'", "source", "must be a string"}}));

TEST(CorpusErrors, LoadingAMissingFileNamesIt) {
  const std::string path = "/nonexistent/dir/rules.json";
  try {
    load_corpus(path);
    FAIL();
  } catch (const CorpusError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open file");
  }
}

TEST(CorpusErrors, LoadErrorsArePrefixedWithThePath) {
  const auto path = std::filesystem::temp_directory_path() / ("teq_bad_corpus_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << R"j({"format": "tensor-eqsat-rules", "version": 1, "rules": [{"id": "x", "lhs": ["?a"], "rhs": ["?a"]}]})j";
  try {
    load_corpus(path);
    ADD_FAILURE() << "no error";
  } catch (const CorpusError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with(path.string() + ": rule 'x': lhs[0]")) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(CorpusErrors, MakeRuleValidatesToo) {
  EXPECT_THROW(make_rule("", {"(relu ?x)"}, {"(relu ?x)"}), CorpusError);
  try {
    make_rule("m", {"(matmul 0 ?a ?b)"}, {"(matmul 0 ?b ?c)"});
    FAIL();
  } catch (const CorpusError& e) {
    EXPECT_EQ(std::string(e.what()), "rule 'm': rhs[0]: variable ?c is not bound by the lhs");
  }
}

}  // namespace
}  // namespace teq
