// The built-in benchmark models: operator counts and output shapes counted by hand from the published
// architectures (docs/benchmarks.md), every node well-shaped, unknown names rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "optimizer/models/builtin.h"
#include "rules/evaluator.h"

namespace teq {
namespace {

std::map<std::string, size_t> op_counts(const Expr& g) {
  std::map<std::string, size_t> counts;
  for (const ExprNode& n : g.nodes())
    if (!is_leaf(n.op)) ++counts[std::string(op_name(n.op))];
  return counts;
}

struct Expected {
  std::string model;
  Shape output;
  std::map<std::string, size_t> ops;  // only the operators listed are checked
};

class BuiltinModel : public ::testing::TestWithParam<Expected> {};

TEST_P(BuiltinModel, HasPublishedOperatorCountsAndOutputShape) {
  const Expected& e = GetParam();
  Expr g = build_builtin_model(e.model);
  ASSERT_EQ(g.roots().size(), 1u);
  std::vector<Shape> shapes = infer_shapes(g, {});  // throws ShapeError if any node is ill-shaped
  EXPECT_EQ(shapes[g.root().value], e.output);
  auto counts = op_counts(g);
  for (const auto& [op, n] : e.ops) EXPECT_EQ(counts[op], n) << e.model << ": " << op;
  // Every operator node is reachable from the output (no dead layers).
  std::vector<bool> live(g.size(), false);
  live[g.root().value] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (ExprId c : g.nodes()[i].children) live[c.value] = true;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_TRUE(live[i]) << e.model << ": dead node " << i;
}

INSTANTIATE_TEST_SUITE_P(
    All, BuiltinModel,
    ::testing::Values(
        // 8 layers x (Q, K, V, QK^T, PV, output projection); 3 reshapes + 3 transposes into heads, 1 + 1 out
        Expected{"bert", {64, 1024}, {{"matmul", 48}, {"softmax", 8}, {"transpose", 32}, {"reshape", 32}}},
        // 5 steps x 8 pairs of matmuls; per step 8 + 3 adds, 4 muls, 8 tanh, 5 sigmoid, 2 relu
        Expected{"nasrnn", {1, 512},
                 {{"matmul", 80}, {"ewadd", 55}, {"ewmul", 20}, {"tanh", 40}, {"sigmoid", 25}, {"relu", 10}}},
        // stem + 18 cells x (squeeze, fit, 5 separable convs of 2); a cell's repeated pooling is one node
        Expected{"nasneta", {1, 1000},
                 {{"conv2d", 217}, {"concat", 18}, {"ewadd", 90}, {"avgpool", 36}, {"maxpool", 4}, {"matmul", 1}}},
        // stem + 16 bottlenecks x 3 + 4 projection shortcuts = 53 convolutions, then the classifier
        Expected{"resnext50", {1, 1000}, {{"conv2d", 53}, {"ewadd", 16}, {"relu", 16}, {"matmul", 1}}},
        Expected{"resnet50", {1, 1000},
                 {{"conv2d", 53}, {"ewadd", 16}, {"relu", 16}, {"maxpool", 1}, {"global_avgpool", 1}, {"matmul", 1}}},
        // stem 5 + A 3x7 + B 4 + C 4x10 + D 6 + E 2x9 = 94 convolutions; 11 modules end in a concat
        Expected{"inceptionv3", {1, 1000},
                 {{"conv2d", 94}, {"concat", 11}, {"avgpool", 9}, {"maxpool", 4}, {"matmul", 1}}},
        Expected{"vgg19", {1, 1000}, {{"conv2d", 16}, {"relu", 18}, {"maxpool", 5}, {"matmul", 3}}},
        // stem + 8 fire modules x 3 + the 1x1 classifier convolution
        Expected{"squeezenet", {1, 1000}, {{"conv2d", 26}, {"relu", 26}, {"concat", 8}, {"maxpool", 3}}}),
    [](const auto& info) { return info.param.model; });

TEST(BuiltinModels, NamesAreTheEightBenchmarks) {
  EXPECT_EQ(builtin_model_names(), (std::vector<std::string>{"bert", "nasrnn", "nasneta", "resnext50", "resnet50",
                                                             "inceptionv3", "vgg19", "squeezenet"}));
}

TEST(BuiltinModels, UnknownNameListsValidOnes) {
  try {
    build_builtin_model("resnet51");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'resnet51'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("resnet50"), std::string::npos) << msg;
    EXPECT_NE(msg.find("squeezenet"), std::string::npos) << msg;
  }
}

TEST(BuiltinModels, GroupedConvolutionsInResNeXt) {
  // The 3x3 convolutions of ResNeXt-50 have 32 groups: weight [width, width/32, 3, 3].
  Expr g = build_builtin_model("resnext50");
  std::vector<Shape> shapes = infer_shapes(g, {});
  size_t grouped = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const ExprNode& n = g.nodes()[i];
    if (n.op != OpKind::Conv2d) continue;
    const Shape& x = shapes[n.children[0].value];
    const Shape& w = shapes[n.children[1].value];
    if (x[1] / w[1] == 32) ++grouped;
  }
  EXPECT_EQ(grouped, 16u);
}

TEST(BuiltinModels, NasRnnEvaluatesOnTheReferenceEvaluator) {
  // Small enough to run on the CPU: every leaf gets a value and the output is finite and bounded by
  // the final tanh.
  Expr g = build_builtin_model("nasrnn");
  std::map<std::string, Tensor<double>> leaves;
  for (const ExprNode& n : g.nodes())
    if (is_leaf(n.op)) {
      Tensor<double> t(n.attrs, 0.0);
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.01 * static_cast<double>((i * 7919) % 13) - 0.06;
      leaves.emplace(n.name, std::move(t));
    }
  auto out = evaluate<double>(g, Arith<double>{}, leaves);
  ASSERT_EQ(out.size(), 1u);
  for (double v : out[0].data) {
    EXPECT_LE(std::abs(v), 1.0);
    EXPECT_FALSE(std::isnan(v));
  }
}

}  // namespace
}  // namespace teq
