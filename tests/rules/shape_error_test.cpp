// Shape errors: for every operator a bad shape or a bad attribute is refused with a ShapeError whose
// message names the operator, the problem and the input shapes; wrong operand and attribute counts too.
#include <gtest/gtest.h>

#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

struct BadShape {
  std::string text;             // one pattern
  VarShapes vars;               // shapes of its variables
  std::string shapes;           // expected "(input shapes ...)" content
  std::string problem;          // expected fragment describing the problem
};

void PrintTo(const BadShape& c, std::ostream* os) { *os << c.text; }

class ShapeErrors : public ::testing::TestWithParam<BadShape> {};

TEST_P(ShapeErrors, NameTheOperatorTheProblemAndTheShapes) {
  const BadShape& c = GetParam();
  Expr e = parse_pattern(c.text);
  const std::string op(op_name(e[e.root()].op));
  try {
    infer_shapes(e, c.vars);
    FAIL() << "no ShapeError for " << c.text;
  } catch (const ShapeError& err) {
    const std::string msg = err.what();
    EXPECT_TRUE(msg.starts_with(op + ": ")) << msg;
    EXPECT_NE(msg.find("(input shapes " + c.shapes + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.problem), std::string::npos) << msg;
    EXPECT_NE(msg.find(" in " + to_sexpr(e, e.root())), std::string::npos) << "names the subterm: " << msg;
  }
  EXPECT_FALSE(try_infer_shapes(e, c.vars).has_value());
}

INSTANTIATE_TEST_SUITE_P(
    Elementwise, ShapeErrors,
    ::testing::Values(
        BadShape{"(ewadd ?a ?b)", {{"a", {2, 3}}, {"b", {3, 2}}}, "[2,3], [3,2]", "operands must have equal shapes"},
        BadShape{"(ewsub ?a ?b)", {{"a", {2}}, {"b", {2, 1}}}, "[2], [2,1]", "equal shapes"},
        BadShape{"(ewmul ?a ?b)", {{"a", {1}}, {"b", {}}}, "[1], []", "equal shapes"},
        BadShape{"(ewdiv ?a ?b)", {{"a", {4, 4}}, {"b", {4, 5}}}, "[4,4], [4,5]", "equal shapes"},
        BadShape{"(smul ?a ?s)", {{"a", {2}}, {"s", {1}}}, "[2], [1]", "second operand must be a 0-d scalar"},
        BadShape{"(broadcast 2 3 ?x)", {{"x", {2, 2}}}, "[2,2]", "cannot broadcast to [2,3]"},
        BadShape{"(broadcast 3 ?x)", {{"x", {2, 3}}}, "[2,3]", "target [3] has lower rank"},
        BadShape{"(broadcast 0 3 ?x)", {{"x", {3}}}, "[3]", "target dims must be >= 1"}));

INSTANTIATE_TEST_SUITE_P(
    MatmulConv, ShapeErrors,
    ::testing::Values(
        BadShape{"(matmul 0 ?a ?b)", {{"a", {2, 3}}, {"b", {4, 5}}}, "[2,3], [4,5]", "inner dimensions differ"},
        BadShape{"(matmul 0 ?a ?b)", {{"a", {3}}, {"b", {3, 2}}}, "[3], [3,2]", "rank >= 2"},
        BadShape{"(matmul 0 ?a ?b)", {{"a", {2, 2, 3}}, {"b", {3, 3, 4}}}, "[2,2,3], [3,3,4]",
                 "batch dimensions do not broadcast"},
        BadShape{"(matmul 4 ?a ?b)", {{"a", {2, 3}}, {"b", {3, 4}}}, "[2,3], [3,4]", "activation must be 0"},
        BadShape{"(conv2d 1 1 0 0 0 ?x ?w)", {{"x", {1, 3, 4, 4}}, {"w", {2, 2, 3, 3}}}, "[1,3,4,4], [2,2,3,3]",
                 "input channels 3 not divisible by weight in-channels 2"},
        BadShape{"(conv2d 1 1 0 0 0 ?x ?w)", {{"x", {1, 4, 4, 4}}, {"w", {3, 2, 3, 3}}}, "[1,4,4,4], [3,2,3,3]",
                 "output channels 3 not divisible by groups 2"},
        BadShape{"(conv2d 1 1 0 0 0 ?x ?w)", {{"x", {3, 4, 4}}, {"w", {2, 3, 3, 3}}}, "[3,4,4], [2,3,3,3]",
                 "must be 4-d"},
        BadShape{"(conv2d 1 1 0 0 0 ?x ?w)", {{"x", {1, 1, 2, 5}}, {"w", {1, 1, 3, 3}}}, "[1,1,2,5], [1,1,3,3]",
                 "kernel 3 larger than padded extent 2"},
        BadShape{"(conv2d 0 1 0 0 0 ?x ?w)", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 3, 3}}}, "[1,1,4,4], [1,1,3,3]",
                 "stride must be >= 1, got 0"},
        BadShape{"(conv2d 1 1 0 -2 0 ?x ?w)", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 3, 3}}}, "[1,1,4,4], [1,1,3,3]",
                 "padding must be -1 (same) or >= 0, got -2"},
        BadShape{"(conv2d 1 1 0 0 9 ?x ?w)", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 3, 3}}}, "[1,1,4,4], [1,1,3,3]",
                 "activation must be 0"},
        BadShape{"(conv2d 1 1 0 0 0 0 1 ?x ?w)", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 3, 3}}}, "[1,1,4,4], [1,1,3,3]",
                 "dilations must be 1 .. 2^20, got 0 1"},
        BadShape{"(conv2d 1 1 0 0 0 1 1 ?x ?w)", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 3, 3}}}, "[1,1,4,4], [1,1,3,3]",
                 "dilations 1 1 are written without them"},
        BadShape{"(conv2d 1 1 0 0 0 2 1 ?x ?w)", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 3, 3}}}, "[1,1,4,4], [1,1,3,3]",
                 "kernel 5 larger than padded extent 4"},
        BadShape{"(enlarge 1 1 ?w)", {{"w", {1, 1, 3, 3}}}, "[1,1,3,3]", "target 1x1 smaller than kernel"},
        BadShape{"(enlarge 4 4 ?w)", {{"w", {1, 1, 3, 3}}}, "[1,1,3,3]", "differ by an even amount"},
        BadShape{"(enlarge 3 3 ?w)", {{"w", {1, 3, 3}}}, "[1,3,3]", "kernel must be 4-d"},
        BadShape{"(merge 2 ?w)", {{"w", {3, 1, 3, 3}}}, "[3,1,3,3]", "output channels 3 not divisible by count 2"},
        BadShape{"(merge 0 ?w)", {{"w", {2, 1, 3, 3}}}, "[2,1,3,3]", "count must be >= 1"},
        BadShape{"(merge 2 ?w)", {{"w", {2, 3, 3}}}, "[2,3,3]", "kernel must be 4-d"}));

INSTANTIATE_TEST_SUITE_P(
    Pooling, ShapeErrors,
    ::testing::Values(
        BadShape{"(maxpool 2 2 1 1 0 0 ?x)", {{"x", {1, 4, 4}}}, "[1,4,4]", "input must be 4-d"},
        BadShape{"(maxpool 2 2 1 1 2 2 ?x)", {{"x", {1, 1, 4, 4}}}, "[1,1,4,4]",
                 "padding must be smaller than the kernel"},
        BadShape{"(maxpool 0 2 1 1 0 0 ?x)", {{"x", {1, 1, 4, 4}}}, "[1,1,4,4]", "kernel size must be >= 1"},
        BadShape{"(avgpool 2 2 1 1 0 0 2 ?x)", {{"x", {1, 1, 4, 4}}}, "[1,1,4,4]", "include_pad must be 0 or 1"},
        BadShape{"(avgpool 5 5 1 1 0 0 0 ?x)", {{"x", {1, 1, 3, 3}}}, "[1,1,3,3]", "kernel 5 larger than padded"},
        BadShape{"(global_avgpool ?x)", {{"x", {2, 3}}}, "[2,3]", "input must be 4-d"}));

INSTANTIATE_TEST_SUITE_P(
    Layout, ShapeErrors,
    ::testing::Values(
        BadShape{"(concat 1 ?a ?b)", {{"a", {2, 3}}, {"b", {3, 3}}}, "[2,3], [3,3]",
                 "dimension 0 differs off the concat axis 1"},
        BadShape{"(concat 0 ?a ?b)", {{"a", {2, 3}}, {"b", {3}}}, "[2,3], [3]", "operands must have equal rank"},
        BadShape{"(concat 2 ?a ?b)", {{"a", {2, 3}}, {"b", {2, 3}}}, "[2,3], [2,3]", "axis 2 out of range for rank 2"},
        BadShape{"(split 1 2 1 ?x ?r)", {{"x", {2, 3}}, {"r", {2, 1}}}, "[2,3], [2,1]", "part must be 0 or 1, got 2"},
        BadShape{"(split 1 0 1 ?x ?r)", {{"x", {2, 3}}, {"r", {2, 3}}}, "[2,3], [2,3]",
                 "cut 3 must be inside the split axis of extent 3"},
        BadShape{"(split 1 0 2 ?x ?r)", {{"x", {2, 3}}, {"r", {2, 1}}}, "[2,3], [2,1]",
                 "axis 2 out of range for rank 2"},
        BadShape{"(split -3 0 0 ?x ?r)", {{"x", {2, 3}}, {"r", {1}}}, "[2,3], [1]", "axis -3 out of range"},
        BadShape{"(slice 1 2 2 ?x)", {{"x", {2, 4}}}, "[2,4]", "range [2,2) not inside axis 1"},
        BadShape{"(slice 0 0 3 ?x)", {{"x", {2, 4}}}, "[2,4]", "range [0,3) not inside axis 0"},
        BadShape{"(transpose 0 0 ?x)", {{"x", {2, 3}}}, "[2,3]", "[0,0] is not a permutation"},
        BadShape{"(transpose 1 0 2 ?x)", {{"x", {2, 3}}}, "[2,3]", "permutation [1,0,2] does not match rank 2"},
        BadShape{"(reshape 4 ?x)", {{"x", {2, 3}}}, "[2,3]", "target [4] has a different element count"},
        BadShape{"(reshape 0 6 ?x)", {{"x", {2, 3}}}, "[2,3]", "target dims must be >= 1"}));

INSTANTIATE_TEST_SUITE_P(
    NormAndConstants, ShapeErrors,
    ::testing::Values(
        BadShape{"(batchnorm ?x ?s ?b ?m ?v)", {{"x", {1, 3, 2}}, {"s", {2}}, {"b", {3}}, {"m", {3}}, {"v", {3}}},
                 "[1,3,2], [2], [3], [3], [3]", "scale, bias, mean and var must be [C]"},
        BadShape{"(batchnorm ?x ?s ?s ?s ?s)", {{"x", {3}}, {"s", {3}}}, "[3], [3], [3], [3], [3]", "rank >= 2"},
        BadShape{"(softmax 2 ?x)", {{"x", {2, 3}}}, "[2,3]", "axis 2 out of range for rank 2"},
        BadShape{"(eye ?x)", {{"x", {}}}, "[]", "reference must have rank >= 1"},
        BadShape{"(iconv 2 3 ?x)", {{"x", {1, 2, 4, 4}}}, "[1,2,4,4]", "kernel size must be odd and positive, got 2x3"},
        BadShape{"(iconv 3 3 ?x)", {{"x", {4}}}, "[4]", "reference must have rank >= 2"},
        BadShape{"(pool_kernel 0 1 ?x)", {{"x", {1, 2, 4, 4}}}, "[1,2,4,4]", "odd and positive, got 0x1"},
        BadShape{"(opaque 0 0 2 0 ?x)", {{"x", {2}}}, "[2]", "output dims must be >= 1"}));

// Operand and attribute counts. The parser refuses them first (with a position, see sexpr_test), so
// these call infer_shape directly, as code that builds nodes by hand would.
TEST(ShapeErrors, ArityIsCheckedForEveryOperator) {
  int checked = 0;
  for (const OpInfo& info : all_ops()) {
    if (is_leaf(info.kind)) continue;
    const std::string name(info.name);
    std::vector<int64_t> attrs(info.num_attrs == kVariadic ? 2 : info.num_attrs, 1);
    auto expect_error = [&](size_t operands, const std::vector<int64_t>& a, const std::string& what) {
      std::vector<Shape> in(operands, Shape{2});
      std::string shapes;
      for (size_t i = 0; i < operands; ++i) shapes += i ? ", [2]" : "[2]";
      try {
        infer_shape(info.kind, a, in);
        ADD_FAILURE() << name << " accepted " << operands << " operands and " << a.size() << " attributes";
      } catch (const ShapeError& e) {
        const std::string msg = e.what();
        EXPECT_TRUE(msg.starts_with(name + ": expects ")) << msg;
        EXPECT_NE(msg.find(what), std::string::npos) << msg;
        EXPECT_NE(msg.find("(input shapes " + shapes + ")"), std::string::npos) << msg;
        ++checked;
      }
    };
    if (info.max_children != kVariadic)
      expect_error(info.max_children + 1, attrs, "operands, got " + std::to_string(info.max_children + 1));
    if (info.min_children > 0)
      expect_error(info.min_children - 1, attrs, "operands, got " + std::to_string(info.min_children - 1));
    if (info.num_attrs != kVariadic) {
      std::vector<int64_t> more(info.num_attrs + 1, 1);
      expect_error(info.min_children, more,
                   attr_count_text(info) + " integer attributes, got " + std::to_string(info.num_attrs + 1));
      if (info.num_attrs > 0) {
        std::vector<int64_t> fewer(info.num_attrs - 1, 1);
        expect_error(info.min_children, fewer, "integer attributes, got " + std::to_string(info.num_attrs - 1));
      }
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(ShapeErrors, ArityMessagesSpellTheRange) {
  auto message = [](OpKind op, std::vector<int64_t> attrs, size_t operands) -> std::string {
    try {
      infer_shape(op, attrs, std::vector<Shape>(operands, Shape{3}));
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(message(OpKind::Relu, {}, 2), "relu: expects 1 operands, got 2 (input shapes [3], [3])");
  EXPECT_EQ(message(OpKind::Noop, {}, 0), "noop: expects 1 or more operands, got 0 (input shapes )");
  EXPECT_EQ(message(OpKind::Matmul, {}, 2), "matmul: expects 1 integer attributes, got 0 (input shapes [3], [3])");
  EXPECT_EQ(message(OpKind::Tanh, {0}, 1), "tanh: expects 0 integer attributes, got 1 (input shapes [3])");
  EXPECT_EQ(message(OpKind::BatchNorm, {}, 4), "batchnorm: expects 5 operands, got 4 (input shapes [3], [3], [3], [3])");
}

TEST(ShapeErrors, OpaqueNeedsItsAttributes) {
  try {
    infer_shape(OpKind::Opaque, std::vector<int64_t>{1}, std::vector<Shape>{});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("opaque: needs attributes: id, output index"), std::string::npos) << e.what();
  }
}

TEST(ShapeErrors, LeavesHaveNoShapeRule) {
  EXPECT_THROW(infer_shape(OpKind::Var, {}, {}), std::logic_error);
  EXPECT_THROW(infer_shape(OpKind::Input, {}, {}), std::logic_error);
}

TEST(ShapeErrors, WellShapedRightSidesPass) {
  // The other side of try_infer_shapes: a well-shaped pattern gives every node's shape.
  Expr e = parse_pattern("(split 1 1 1 (concat 1 ?a ?b) ?a)");
  auto shapes = try_infer_shapes(e, {{"a", {2, 3}}, {"b", {2, 5}}});
  ASSERT_TRUE(shapes.has_value());
  EXPECT_EQ((*shapes)[e.root().value], (Shape{2, 5}));
}

TEST(EvaluateErrors, MissingVariableShapeAndLeafValues) {
  Expr e = parse_pattern("(relu ?x)");
  try {
    infer_shapes(e, {});
    FAIL();
  } catch (const ShapeError& err) {
    EXPECT_EQ(std::string(err.what()), "no shape for variable ?x");
  }
  Expr g = parse_expr("(ewadd (input x 2) (weight w 2))");
  std::map<std::string, Tensor<double>> leaves{{"x", Tensor<double>({2}, 1.0)}};
  try {
    evaluate<double>(g, Arith<double>{}, leaves);
    FAIL();
  } catch (const ShapeError& err) {
    EXPECT_NE(std::string(err.what()).find("no value for leaf 'w'"), std::string::npos) << err.what();
  }
  leaves.emplace("w", Tensor<double>({3}, 1.0));
  try {
    evaluate<double>(g, Arith<double>{}, leaves);
    FAIL();
  } catch (const ShapeError& err) {
    EXPECT_NE(std::string(err.what()).find("value for 'w' has shape [3], expected [2]"), std::string::npos)
        << err.what();
  }
}

TEST(EvaluateErrors, OpaqueHasNoValue) {
  Expr g = parse_expr("(opaque 7 0 2 (input x 2))");
  try {
    evaluate<double>(g, Arith<double>{}, {{"x", Tensor<double>({2}, 1.0)}});
    FAIL();
  } catch (const ShapeError& err) {
    EXPECT_NE(std::string(err.what()).find("opaque operator #7 is outside the vocabulary"), std::string::npos)
        << err.what();
  }
}

}  // namespace
}  // namespace teq
