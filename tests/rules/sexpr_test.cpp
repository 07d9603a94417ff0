#include <gtest/gtest.h>

#include <set>

#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

TEST(Sexpr, ParsesPatternWithAttributesAndVariables) {
  Expr p = parse_pattern("(matmul 0 ?a (matmul 0 ?b ?c))");
  EXPECT_EQ(p.variables(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p[p.root()].op, OpKind::Matmul);
  EXPECT_EQ(p[p.root()].attrs, std::vector<int64_t>{0});
  EXPECT_EQ(to_sexpr(p, p.root()), "(matmul 0 ?a (matmul 0 ?b ?c))");
}

TEST(Sexpr, SharesEqualSubterms) {
  Expr g = parse_expr("(ewadd (relu (input x 2 3)) (relu (input x 2 3)))");
  EXPECT_EQ(g.size(), 3u);  // input, relu, ewadd
}

TEST(Sexpr, GraphRoundTripsWithLets) {
  const char* text =
      "(let h (relu (matmul 0 (input x 2 4) (weight w 4 4))))\n"
      "(ewadd h (tanh h))\n"
      "(input \"onnx::odd name\" 3)\n";
  Expr g = parse_expr(text);
  ASSERT_EQ(g.roots().size(), 2u);
  std::string printed = print_graph(g);
  EXPECT_EQ(print_graph(parse_expr(printed)), printed);
  EXPECT_NE(printed.find("(let t0"), std::string::npos);
  EXPECT_NE(printed.find("\"onnx::odd name\""), std::string::npos);
}

struct BadInput {
  const char* text;
  int line, column;
  const char* message;
};

class SexprErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(SexprErrors, ReportLineAndColumn) {
  const BadInput& bad = GetParam();
  try {
    parse_expr(bad.text);
    FAIL() << "no error for " << bad.text;
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), bad.line) << e.what();
    EXPECT_EQ(e.column(), bad.column) << e.what();
    EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, SexprErrors,
    ::testing::Values(BadInput{"(convv 1 ?x)", 1, 2, "unknown operator 'convv'"},
                      BadInput{"(relu ?x", 1, 1, "unclosed '('"},
                      BadInput{"\n  (matmul ?a ?b)", 2, 4, "expects 1 integer attributes, got 0"},
                      BadInput{"(conv2d 1 1 0 0 0 2 ?x ?w)", 1, 2, "conv2d expects 5 or 7 integer attributes, got 6"},
                      BadInput{"(relu ?a ?b)", 1, 2, "expects 1 operands, got 2"},
                      BadInput{"(relu foo)", 1, 7, "unknown name 'foo'"},
                      BadInput{")", 1, 1, "unexpected ')'"},
                      BadInput{"", 1, 1, "expected at least one term"},
                      BadInput{"(input x 0 3)", 1, 2, "dimensions must be >= 1"},
                      BadInput{"(relu 3)", 1, 7, "unexpected integer"},
                      BadInput{"(relu \"abc", 1, 7, "unterminated string"}));

TEST(Sexpr, EveryOperatorFormRoundTrips) {
  // One pattern per operator of op_list.inc (attributes first, negative ones included); printing a
  // parsed pattern gives the same text back.
  const std::vector<std::string> forms = {
      "(ewadd ?a ?b)", "(ewsub ?a ?b)", "(ewmul ?a ?b)", "(ewdiv ?a ?b)", "(smul ?a ?s)", "(relu ?a)",
      "(tanh ?a)", "(sigmoid ?a)", "(gelu ?a)", "(gelu_tanh ?a)", "(cast 10 ?a)", "(neg ?a)", "(reciprocal ?a)", "(nan_to_zero ?a)", "(cos ?a)", "(sin ?a)", "(sqrt ?a)", "(erf ?a)", "(clip -1 1 0 -1 ?a)",
      "(reduce_mean 0 0 2 ?a)", "(pad 0 1 2 0 ?a)", "(broadcast 2 3 ?a)", "(noop ?a ?b ?c)", "(matmul 2 ?a ?b)",
      "(conv2d 2 1 -1 0 3 ?x ?w)", "(conv2d 1 1 -1 -1 0 2 3 ?x ?w)", "(enlarge 5 3 ?w)", "(merge 2 ?w)",
      "(maxpool 3 3 2 2 -1 -1 ?x)",
      "(avgpool 3 3 1 1 1 1 0 ?x)", "(global_avgpool ?x)", "(concat -1 ?a ?b ?c)", "(split 1 0 -1 ?x ?r)",
      "(slice 0 1 3 ?x)", "(transpose 2 0 1 ?x)", "(reshape 6 ?x)", "(batchnorm ?x ?s ?b ?m ?v)",
      "(softmax -1 ?x)", "(ones ?x)", "(eye ?x)", "(iconv 3 3 ?x)", "(pool_kernel 3 1 ?x)",
      "(opaque 4 0 2 3 ?x ?y)", "(opaque 4 1 7)", "(relu (input \"a b\" 2 3))", "(tanh (weight w))"};
  std::set<OpKind> seen;
  for (const std::string& text : forms) {
    Expr p = parse_pattern(text);
    EXPECT_EQ(to_sexpr(p, p.root()), text);
    seen.insert(p[p.root()].op);
    for (const ExprNode& n : p.nodes()) seen.insert(n.op);
  }
  for (const OpInfo& info : all_ops()) EXPECT_TRUE(seen.contains(info.kind)) << "no form for " << info.name;
}

TEST(Sexpr, CommentsEscapesAndLets) {
  Expr g = parse_expr(
      "; a comment line\n"
      "(let \"q\\\"name\" (input x 2)) ; trailing comment\n"
      "(relu \"q\\\"name\")\n");
  ASSERT_EQ(g.roots().size(), 1u);
  EXPECT_EQ(to_sexpr(g, g.root()), "(relu (input x 2))");
  Expr h = parse_expr("(input \"a\\\"b\" 1)");
  EXPECT_EQ(h[h.root()].name, "a\"b");
  EXPECT_EQ(print_graph(h), "(input \"a\\\"b\" 1)\n");
  EXPECT_EQ(parse_expr(print_graph(h)), h);
}

TEST(Sexpr, PrintGraphRoundTripsSharedWork) {
  Expr g = parse_expr(
      "(let c (conv2d 1 1 -1 -1 2 (input x 1 2 4 4) (weight w 2 2 3 3)))"
      "(let s (split 1 0 1 c (weight r 1 1)))"
      "(concat 1 s (split 1 1 1 c (weight r 1 1)))"
      "(maxpool 2 2 2 2 0 0 s)");
  const std::string printed = print_graph(g);
  Expr back = parse_expr(printed);
  EXPECT_EQ(back.size(), g.size());
  EXPECT_EQ(back.roots().size(), 2u);
  EXPECT_EQ(print_graph(back), printed);
  for (size_t i = 0; i < g.roots().size(); ++i)
    EXPECT_EQ(to_sexpr(back, back.roots()[i]), to_sexpr(g, g.roots()[i]));
}

TEST(Sexpr, LetErrors) {
  auto error_of = [](const char* text) -> std::string {
    try {
      parse_expr(text);
    } catch (const ParseError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of("(let a (input x 2)) (let a (input y 2)) a"), "line 1, column 26: name 'a' is bound twice");
  EXPECT_EQ(error_of("(let ?a (input x 2)) ?a"), "line 1, column 6: let cannot bind a ?variable");
  EXPECT_EQ(error_of("(let 3 (input x 2))"), "line 1, column 6: expected a name after let");
  EXPECT_EQ(error_of("(relu ?x) (tanh ?y)").substr(0, 10), "(no error)");
  EXPECT_EQ(error_of("(ewadd 1 ?a ?b)"), "line 1, column 8: unexpected integer 1 where a term is expected");
  EXPECT_EQ(error_of("(? ?a)"), "line 1, column 2: unknown operator '?'");
  EXPECT_EQ(error_of("(relu ?)"), "line 1, column 7: empty variable name '?'");
  try {
    parse_pattern("(relu ?x) (tanh ?x)");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("expected exactly one term, got 2"), std::string::npos) << e.what();
  }
}

TEST(Shapes, ErrorNamesOperatorAndShapes) {
  Expr g = parse_expr("(matmul 0 (input x 2 3) (input y 4 5))");
  try {
    infer_shapes(g, {});
    FAIL();
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2,3], [4,5]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace teq
