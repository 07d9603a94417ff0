#include <gtest/gtest.h>

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
                      BadInput{"(relu ?a ?b)", 1, 2, "expects 1 operands, got 2"},
                      BadInput{"(relu foo)", 1, 7, "unknown name 'foo'"},
                      BadInput{")", 1, 1, "unexpected ')'"},
                      BadInput{"", 1, 1, "expected at least one term"},
                      BadInput{"(input x 0 3)", 1, 2, "dimensions must be >= 1"},
                      BadInput{"(relu 3)", 1, 7, "unexpected integer"},
                      BadInput{"(relu \"abc", 1, 7, "unterminated string"}));

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
