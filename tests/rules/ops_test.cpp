// Float semantics of every value-computing operator: hand-computed small cases, then identities that
// relate operators to each other (conv2d = im2col + matmul, grouped conv = per-group convs, ...).
// Every value here comes from evaluate<double>; the tests never compute a conv or matmul themselves,
// only index copying (im2col) and the batchnorm formula, which are the independent side of a check.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "rules/evaluator.h"
#include "rules/float_types.h"
#include "rules/ops/elementwise.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

using T = Tensor<double>;
using Leaves = std::map<std::string, T>;

T t(Shape s, std::vector<double> v) { return T(std::move(s), std::move(v)); }

/// 0, 1, 2, ... or `first`, first+1, ... in row-major order.
T iota(Shape s, double first = 0) {
  T out(s, 0.0);
  std::iota(out.data.begin(), out.data.end(), first);
  return out;
}

/// Small integers in [-4, 4]: sums and products stay exact in double, so identities compare exactly.
T random_ints(Shape s, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-4, 4);
  T out(s, 0.0);
  for (double& v : out.data) v = dist(gen);
  return out;
}

/// Evaluates a one-root pattern or graph text on named double values.
T eval(std::string_view text, const Leaves& leaves = {}) {
  return evaluate<double>(parse_expr(text), Arith<double>{}, leaves).at(0);
}

::testing::AssertionResult same(const T& actual, const Shape& shape, const std::vector<double>& expected,
                                double tol = 1e-12) {
  if (actual.shape != shape)
    return ::testing::AssertionFailure() << "shape " << to_string(actual.shape) << ", expected " << to_string(shape);
  if (actual.data.size() != expected.size())
    return ::testing::AssertionFailure() << actual.data.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < expected.size(); ++i)
    if (!(std::abs(actual.data[i] - expected[i]) <= tol * std::max(1.0, std::abs(expected[i]))))
      return ::testing::AssertionFailure() << "element " << i << " is " << actual.data[i] << ", expected "
                                           << expected[i];
  return ::testing::AssertionSuccess();
}
::testing::AssertionResult same(const T& actual, const T& expected, double tol = 1e-12) {
  return same(actual, expected.shape, expected.data, tol);
}

// ---------------------------------------------------------------------------------------------------
// Element-wise

TEST(OpsFloat, BinaryElementwise) {
  Leaves in{{"a", t({2, 2}, {1, 2, 3, 4})}, {"b", t({2, 2}, {5, 6, 7, -8})}};
  EXPECT_TRUE(same(eval("(ewadd ?a ?b)", in), {2, 2}, {6, 8, 10, -4}));
  EXPECT_TRUE(same(eval("(ewsub ?a ?b)", in), {2, 2}, {-4, -4, -4, 12}));
  EXPECT_TRUE(same(eval("(ewmul ?a ?b)", in), {2, 2}, {5, 12, 21, -32}));
  EXPECT_TRUE(same(eval("(ewdiv ?a ?b)", in), {2, 2}, {0.2, 1.0 / 3, 3.0 / 7, -0.5}));
  // Operand order matters for sub and div.
  EXPECT_TRUE(same(eval("(ewdiv ?b ?a)", in), {2, 2}, {5, 3, 7.0 / 3, -2}));
}

TEST(OpsFloat, ScalarMultiply) {
  Leaves in{{"x", t({3}, {1, -2, 3})}, {"s", t({}, {2.5})}};
  EXPECT_TRUE(same(eval("(smul ?x ?s)", in), {3}, {2.5, -5, 7.5}));
}

TEST(OpsFloat, Relu) {
  EXPECT_TRUE(same(eval("(relu ?x)", {{"x", t({4}, {-1, 0, 2, -0.5})}}), {4}, {0, 0, 2, 0}));
}

TEST(OpsFloat, NonLinearPointwise) {
  Leaves in{{"x", t({3}, {0, 1, -1})}};
  // Reference values: tanh(1), Phi(1) = 0.841344746..., gelu(x) = x * Phi(x).
  EXPECT_TRUE(same(eval("(tanh ?x)", in), {3}, {0, 0.7615941559557649, -0.7615941559557649}));
  EXPECT_TRUE(same(eval("(gelu ?x)", in), {3}, {0, 0.8413447460685429, -0.15865525393145707}));
  Leaves s{{"x", t({3}, {0, std::log(3.0), -std::log(3.0)})}};
  EXPECT_TRUE(same(eval("(sigmoid ?x)", s), {3}, {0.5, 0.75, 0.25}));
}

TEST(OpsFloat, Broadcast) {
  EXPECT_TRUE(same(eval("(broadcast 2 3 ?x)", {{"x", t({3}, {1, 2, 3})}}), {2, 3}, {1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(same(eval("(broadcast 2 3 ?x)", {{"x", t({2, 1}, {1, 2})}}), {2, 3}, {1, 1, 1, 2, 2, 2}));
  // A leading new axis and a size-1 axis at once.
  EXPECT_TRUE(same(eval("(broadcast 2 2 2 ?x)", {{"x", t({1, 2}, {7, 8})}}), {2, 2, 2}, {7, 8, 7, 8, 7, 8, 7, 8}));
  EXPECT_TRUE(same(eval("(broadcast 1 ?x)", {{"x", t({}, {4})}}), {1}, {4}));
}

TEST(OpsFloat, NoopIsItsFirstChild) {
  Leaves in{{"a", t({2}, {1, 2})}, {"b", t({3}, {3, 4, 5})}};
  EXPECT_TRUE(same(eval("(noop ?a ?b)", in), {2}, {1, 2}));
  EXPECT_TRUE(same(eval("(noop ?b ?a)", in), {3}, {3, 4, 5}));
  EXPECT_TRUE(same(eval("(noop ?a)", in), {2}, {1, 2}));
}

// ---------------------------------------------------------------------------------------------------
// matmul

TEST(OpsFloat, Matmul) {
  Leaves in{{"a", t({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", t({3, 2}, {7, 8, 9, 10, 11, 12})}};
  EXPECT_TRUE(same(eval("(matmul 0 ?a ?b)", in), {2, 2}, {58, 64, 139, 154}));
  EXPECT_TRUE(same(eval("(matmul 0 ?b ?a)", in), {3, 3}, {39, 54, 69, 49, 68, 87, 59, 82, 105}));
}

TEST(OpsFloat, MatmulBatched) {
  // Batch 0 multiplies by the identity, batch 1 by ones.
  Leaves in{{"a", t({2, 2, 2}, {1, 2, 3, 4, 1, 1, 1, 1})}, {"b", t({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4})}};
  EXPECT_TRUE(same(eval("(matmul 0 ?a ?b)", in), {2, 2, 2}, {1, 2, 3, 4, 4, 6, 4, 6}));
}

TEST(OpsFloat, MatmulBroadcastBatchDims) {
  // [2,1,2] x [2,1]: the rank-2 operand is shared by every batch.
  EXPECT_TRUE(same(eval("(matmul 0 ?a ?b)", {{"a", t({2, 1, 2}, {1, 2, 3, 4})}, {"b", t({2, 1}, {10, 1})}}),
                   {2, 1, 1}, {12, 34}));
  // [2,1,1,2] x [1,3,2,1] -> [2,3,1,1]: size-1 batch dims broadcast on both sides; out[i][j] = a_i . b_j.
  Leaves in{{"a", t({2, 1, 1, 2}, {1, 2, 3, 4})}, {"b", t({1, 3, 2, 1}, {1, 0, 0, 1, 1, 1})}};
  EXPECT_TRUE(same(eval("(matmul 0 ?a ?b)", in), {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7}));
}

TEST(OpsFloat, MatmulFusedActivation) {
  Leaves in{{"a", t({1, 2}, {1, 2})}, {"b", t({2, 2}, {1, -1, 1, -1})}};  // a.b = {3, -3}
  EXPECT_TRUE(same(eval("(matmul 0 ?a ?b)", in), {1, 2}, {3, -3}));
  EXPECT_TRUE(same(eval("(matmul 2 ?a ?b)", in), {1, 2}, {3, 0}));
  EXPECT_TRUE(same(eval("(matmul 3 ?a ?b)", in), {1, 2}, {std::tanh(3.0), std::tanh(-3.0)}));
  EXPECT_TRUE(same(eval("(matmul 1 ?a ?b)", in), {1, 2}, {1 / (1 + std::exp(-3.0)), 1 / (1 + std::exp(3.0))}));
}

// ---------------------------------------------------------------------------------------------------
// conv2d and enlarge

TEST(OpsFloat, Conv2dValid) {
  // out[i][j] = x[i][j] + x[i+1][j+1]
  Leaves in{{"x", iota({1, 1, 3, 3}, 1)}, {"w", t({1, 1, 2, 2}, {1, 0, 0, 1})}};
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 0 ?x ?w)", in), {1, 1, 2, 2}, {6, 8, 12, 14}));
}

TEST(OpsFloat, Conv2dStride2) {
  // Sums of the four 2x2 blocks of 1..16.
  Leaves in{{"x", iota({1, 1, 4, 4}, 1)}, {"w", t({1, 1, 2, 2}, {1, 1, 1, 1})}};
  EXPECT_TRUE(same(eval("(conv2d 2 2 0 0 0 ?x ?w)", in), {1, 1, 2, 2}, {14, 22, 46, 54}));
  // Stride only along the width.
  EXPECT_TRUE(same(eval("(conv2d 1 2 0 0 0 ?x ?w)", in), {1, 1, 3, 2}, {14, 22, 30, 38, 46, 54}));
}

// 3x3 neighbourhood sums of 1..9 with zero padding.
const std::vector<double> kNeighbourSums = {12, 21, 16, 27, 45, 33, 24, 39, 28};

TEST(OpsFloat, Conv2dExplicitAndSamePadding) {
  Leaves in{{"x", iota({1, 1, 3, 3}, 1)}, {"w", t({1, 1, 3, 3}, std::vector<double>(9, 1))}};
  EXPECT_TRUE(same(eval("(conv2d 1 1 1 1 0 ?x ?w)", in), {1, 1, 3, 3}, kNeighbourSums));
  EXPECT_TRUE(same(eval("(conv2d 1 1 -1 -1 0 ?x ?w)", in), {1, 1, 3, 3}, kNeighbourSums));
  // Padding only along the height: rows -1..1, 0..2, 1..3 over all three columns.
  EXPECT_TRUE(same(eval("(conv2d 1 1 1 0 0 ?x ?w)", in), {1, 1, 3, 1}, {21, 45, 39}));
}

TEST(OpsFloat, Conv2dSameStride2PadsAtTheEnd) {
  // 4x4 input, 3x3 kernel, stride 2, SAME: out 2x2, total padding 1, all of it after the last row/column
  // (TF/TASO convention), so windows start at rows/columns 0 and 2.
  Leaves in{{"x", iota({1, 1, 4, 4}, 1)}, {"w", t({1, 1, 3, 3}, std::vector<double>(9, 1))}};
  EXPECT_TRUE(same(eval("(conv2d 2 2 -1 -1 0 ?x ?w)", in), {1, 1, 2, 2}, {54, 45, 72, 54}));
}

TEST(OpsFloat, Conv2dChannelsAndBatch) {
  // x: two images, two channels of 1x2; w: out 0 = 2*c0 + 3*c1, out 1 = c0 - c1.
  Leaves in{{"x", t({2, 2, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, {"w", t({2, 2, 1, 1}, {2, 3, 1, -1})}};
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 0 ?x ?w)", in), {2, 2, 1, 2}, {11, 16, -2, -2, 31, 36, -2, -2}));
}

TEST(OpsFloat, Conv2dGroups) {
  // Four input channels, two groups: w [2,2,1,1]; output 0 reads channels 0-1, output 1 channels 2-3.
  Leaves in{{"x", t({1, 4, 1, 1}, {1, 2, 3, 4})}, {"w", t({2, 2, 1, 1}, {10, 1, 100, 1000})}};
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 0 ?x ?w)", in), {1, 2, 1, 1}, {12, 4300}));
  // Depthwise (groups = channels), two outputs per group.
  Leaves dw{{"x", t({1, 2, 1, 2}, {1, 2, 3, 4})}, {"w", t({4, 1, 1, 1}, {1, -1, 10, 2})}};
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 0 ?x ?w)", dw), {1, 4, 1, 2}, {1, 2, -1, -2, 30, 40, 6, 8}));
}

TEST(OpsFloat, Conv2dFusedActivation) {
  Leaves in{{"x", t({1, 1, 1, 2}, {1, -1})}, {"w", t({1, 1, 1, 1}, {-3})}};
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 0 ?x ?w)", in), {1, 1, 1, 2}, {-3, 3}));
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 2 ?x ?w)", in), {1, 1, 1, 2}, {0, 3}));
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 3 ?x ?w)", in), {1, 1, 1, 2}, {std::tanh(-3.0), std::tanh(3.0)}));
}

TEST(OpsFloat, Conv2dDilated) {
  // A 1x2 kernel of ones dilated by 2 along W: out[j] = x[j] + x[j + 2].
  Leaves in{{"x", iota({1, 1, 1, 5}, 1)}, {"w", t({1, 1, 1, 2}, {1, 1})}};
  EXPECT_TRUE(same(eval("(conv2d 1 1 0 0 0 1 2 ?x ?w)", in), {1, 1, 1, 3}, {4, 6, 8}));
  // SAME sees the dilated extent 3: one column of padding on each side.
  EXPECT_TRUE(same(eval("(conv2d 1 1 -1 -1 0 1 2 ?x ?w)", in), {1, 1, 1, 5}, {2, 4, 6, 8, 4}));
}

TEST(OpsFloat, Enlarge) {
  EXPECT_TRUE(same(eval("(enlarge 3 3 ?w)", {{"w", t({1, 1, 1, 1}, {5})}}), {1, 1, 3, 3},
                   {0, 0, 0, 0, 5, 0, 0, 0, 0}));
  EXPECT_TRUE(same(eval("(enlarge 3 5 ?w)", {{"w", t({1, 1, 1, 3}, {1, 2, 3})}}), {1, 1, 3, 5},
                   {0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0}));
  // Two output channels, 2x2 -> 4x4: each kernel lands in the centre.
  T big = eval("(enlarge 4 4 ?w)", {{"w", iota({2, 1, 2, 2}, 1)}});
  std::vector<double> expect(32, 0);
  for (int o = 0; o < 2; ++o)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x) expect[o * 16 + (y + 1) * 4 + (x + 1)] = 1 + o * 4 + y * 2 + x;
  EXPECT_TRUE(same(big, {2, 1, 4, 4}, expect));
}

TEST(OpsFloat, MergeIsUpstreamTasosLayout) {
  // w [4,1,1,2], count 2: output channels 0, 1 keep their weights in input block 0, channels 2, 3 in
  // block 1 (upstream TASO merge_gconv: block o / (O/count)); zeros elsewhere.
  T m = eval("(merge 2 ?w)", {{"w", iota({4, 1, 1, 2}, 1)}});
  EXPECT_TRUE(same(m, {4, 2, 1, 2}, {1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0, 7, 8}));
  // count 1 is the kernel itself.
  const T w = random_ints({6, 2, 3, 1}, 5);
  EXPECT_TRUE(same(eval("(merge 1 ?w)", {{"w", w}}), w));
}

TEST(OpsIdentity, MergedKernelGivesTheGroupedConvBackOnlyForCountGroups) {
  const T w = random_ints({6, 2, 3, 3}, 21);
  const char* grouped = "(conv2d 1 1 -1 -1 0 ?x ?w)";
  const char* merged = "(conv2d 1 1 -1 -1 0 ?x (merge 3 ?w))";
  // 6 input channels, w.dim(1) = 2: 3 groups; merged, [6,6,3,3] is one ungrouped conv with the same value.
  const T x3 = random_ints({1, 6, 4, 5}, 22);
  EXPECT_TRUE(same(eval(merged, {{"x", x3}, {"w", w}}), eval(grouped, {{"x", x3}, {"w", w}})));
  // 12 input channels: 6 groups, merged 2 groups of 6 channels; output channel 1 reads input block 0 of
  // its group instead of its own, so the values differ.
  const T x6 = random_ints({1, 12, 4, 5}, 23);
  EXPECT_FALSE(same(eval(merged, {{"x", x6}, {"w", w}}), eval(grouped, {{"x", x6}, {"w", w}})));
}

// ---------------------------------------------------------------------------------------------------
// Pooling

TEST(OpsFloat, MaxPool) {
  EXPECT_TRUE(same(eval("(maxpool 2 2 2 2 0 0 ?x)", {{"x", iota({1, 1, 4, 4}, 1)}}), {1, 1, 2, 2}, {6, 8, 14, 16}));
  // Padding never wins the max, even against negative values.
  EXPECT_TRUE(same(eval("(maxpool 3 3 1 1 1 1 ?x)", {{"x", t({1, 1, 2, 2}, {-1, -2, -3, -4})}}), {1, 1, 2, 2},
                   {-1, -1, -1, -1}));
  // SAME, stride 2 on 3x3: windows rows {0,1}, {2}; columns likewise.
  EXPECT_TRUE(same(eval("(maxpool 2 2 2 2 -1 -1 ?x)", {{"x", iota({1, 1, 3, 3}, 1)}}), {1, 1, 2, 2}, {5, 6, 8, 9}));
  // Channels are pooled separately.
  EXPECT_TRUE(same(eval("(maxpool 1 2 1 2 0 0 ?x)", {{"x", t({1, 2, 1, 2}, {1, 5, 7, 3})}}), {1, 2, 1, 1}, {5, 7}));
}

TEST(OpsFloat, AvgPoolIncludePad) {
  Leaves in{{"x", iota({1, 1, 3, 3}, 1)}};
  std::vector<double> by9;
  for (double s : kNeighbourSums) by9.push_back(s / 9);
  EXPECT_TRUE(same(eval("(avgpool 3 3 1 1 1 1 1 ?x)", in), {1, 1, 3, 3}, by9));
  // include_pad 0 divides by the real elements: 4 in corners, 6 on edges, 9 in the centre.
  EXPECT_TRUE(same(eval("(avgpool 3 3 1 1 1 1 0 ?x)", in), {1, 1, 3, 3}, {3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7}));
  // SAME, stride 2: windows {1,2,4,5}, {3,6}, {7,8}, {9}.
  EXPECT_TRUE(same(eval("(avgpool 2 2 2 2 -1 -1 0 ?x)", in), {1, 1, 2, 2}, {3, 4.5, 7.5, 9}));
  EXPECT_TRUE(same(eval("(avgpool 2 2 2 2 -1 -1 1 ?x)", in), {1, 1, 2, 2}, {3, 2.25, 3.75, 2.25}));
  // No padding: include_pad does not matter.
  EXPECT_TRUE(same(eval("(avgpool 2 2 1 1 0 0 0 ?x)", in), {1, 1, 2, 2}, {3, 4, 6, 7}));
  EXPECT_TRUE(same(eval("(avgpool 2 2 1 1 0 0 1 ?x)", in), {1, 1, 2, 2}, {3, 4, 6, 7}));
}

TEST(OpsFloat, GlobalAvgPool) {
  EXPECT_TRUE(same(eval("(global_avgpool ?x)", {{"x", iota({2, 2, 2, 2}, 1)}}), {2, 2, 1, 1}, {2.5, 6.5, 10.5, 14.5}));
}

// ---------------------------------------------------------------------------------------------------
// Layout

TEST(OpsFloat, ConcatOnSeveralAxes) {
  Leaves in{{"a", t({2, 2}, {1, 2, 3, 4})}, {"b", t({2, 1}, {5, 6})}, {"c", t({1, 2}, {7, 8})}};
  EXPECT_TRUE(same(eval("(concat 1 ?a ?b)", in), {2, 3}, {1, 2, 5, 3, 4, 6}));
  EXPECT_TRUE(same(eval("(concat -1 ?a ?b)", in), {2, 3}, {1, 2, 5, 3, 4, 6}));
  EXPECT_TRUE(same(eval("(concat 0 ?a ?c)", in), {3, 2}, {1, 2, 3, 4, 7, 8}));
  EXPECT_TRUE(same(eval("(concat 0 ?c ?a ?c)", in), {4, 2}, {7, 8, 1, 2, 3, 4, 7, 8}));
  EXPECT_TRUE(same(eval("(concat 1 ?a)", in), {2, 2}, {1, 2, 3, 4}));
  // Middle axis of a 3-d tensor.
  Leaves in3{{"x", iota({2, 1, 2}, 0)}, {"y", iota({2, 2, 2}, 10)}};
  EXPECT_TRUE(same(eval("(concat 1 ?x ?y)", in3), {2, 3, 2}, {0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17}));
}

TEST(OpsFloat, SplitPartsWithRefAxis) {
  Leaves in{{"x", iota({2, 3}, 1)}, {"r", t({2, 1}, {0, 0})}, {"q", t({1, 2}, {0, 0})}};
  // Cut at r.dim(1) = 1.
  EXPECT_TRUE(same(eval("(split 1 0 1 ?x ?r)", in), {2, 1}, {1, 4}));
  EXPECT_TRUE(same(eval("(split 1 1 1 ?x ?r)", in), {2, 2}, {2, 3, 5, 6}));
  // Cut at q.dim(1) = 2: the cut comes from the reference tensor's shape, not from x.
  EXPECT_TRUE(same(eval("(split 1 0 1 ?x ?q)", in), {2, 2}, {1, 2, 4, 5}));
  EXPECT_TRUE(same(eval("(split -1 1 -1 ?x ?q)", in), {2, 1}, {3, 6}));
  // Cut along x's axis 0 at q.dim(0) = 1: the reference axis differs from the split axis.
  EXPECT_TRUE(same(eval("(split 0 0 0 ?x ?q)", in), {1, 3}, {1, 2, 3}));
  EXPECT_TRUE(same(eval("(split 0 1 0 ?x ?q)", in), {1, 3}, {4, 5, 6}));
  EXPECT_TRUE(same(eval("(split 1 0 0 ?x ?q)", in), {2, 1}, {1, 4}));
}

TEST(OpsFloat, Slice) {
  Leaves in{{"x", iota({2, 4}, 1)}};
  EXPECT_TRUE(same(eval("(slice 1 1 3 ?x)", in), {2, 2}, {2, 3, 6, 7}));
  EXPECT_TRUE(same(eval("(slice 0 1 2 ?x)", in), {1, 4}, {5, 6, 7, 8}));
  EXPECT_TRUE(same(eval("(slice -1 3 4 ?x)", in), {2, 1}, {4, 8}));
}

TEST(OpsFloat, Transpose) {
  EXPECT_TRUE(same(eval("(transpose 1 0 ?x)", {{"x", iota({2, 3}, 1)}}), {3, 2}, {1, 4, 2, 5, 3, 6}));
  // out[i][j][k] = x[j][k][i] for (transpose 2 0 1 x): out.dim(d) = x.dim(p_d).
  T x = iota({2, 3, 4});
  T out = eval("(transpose 2 0 1 ?x)", {{"x", x}});
  std::vector<double> expect;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) expect.push_back(x.data[(j * 3 + k) * 4 + i]);
  EXPECT_TRUE(same(out, {4, 2, 3}, expect));
}

TEST(OpsFloat, Reshape) {
  EXPECT_TRUE(same(eval("(reshape 3 2 ?x)", {{"x", iota({2, 3}, 1)}}), {3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(same(eval("(reshape 6 ?x)", {{"x", iota({1, 2, 3}, 1)}}), {6}, {1, 2, 3, 4, 5, 6}));
}

// ---------------------------------------------------------------------------------------------------
// Normalization

TEST(OpsFloat, BatchNorm) {
  // Channel 0: (x - 1) * 2 / sqrt(4) + 1 = x;  channel 1: (x - 2) * 3 / sqrt(0.25) - 1 = 6x - 13.
  Leaves in{{"x", t({1, 2, 1, 2}, {1, 2, 3, 4})}, {"scale", t({2}, {2, 3})}, {"bias", t({2}, {1, -1})},
            {"mean", t({2}, {1, 2})}, {"var", t({2}, {4, 0.25})}};
  EXPECT_TRUE(same(eval("(batchnorm ?x ?scale ?bias ?mean ?var)", in), {1, 2, 1, 2}, {1, 2, 5, 11}));
  // Rank 2 input [N, C].
  Leaves in2{{"x", t({2, 2}, {1, 3, 2, 4})}, {"scale", t({2}, {2, 3})}, {"bias", t({2}, {1, -1})},
             {"mean", t({2}, {1, 2})}, {"var", t({2}, {4, 0.25})}};
  EXPECT_TRUE(same(eval("(batchnorm ?x ?scale ?bias ?mean ?var)", in2), {2, 2}, {1, 5, 2, 11}));
}

TEST(OpsFloat, Softmax) {
  const double l3 = std::log(3.0);
  EXPECT_TRUE(same(eval("(softmax 1 ?x)", {{"x", t({1, 2}, {0, l3})}}), {1, 2}, {0.25, 0.75}));
  EXPECT_TRUE(same(eval("(softmax -1 ?x)", {{"x", t({1, 2}, {0, l3})}}), {1, 2}, {0.25, 0.75}));
  // Along axis 0: columns {0, ln 3} and {0, 0}.
  EXPECT_TRUE(same(eval("(softmax 0 ?x)", {{"x", t({2, 2}, {0, 0, l3, 0})}}), {2, 2}, {0.25, 0.5, 0.75, 0.5}));
}

// ---------------------------------------------------------------------------------------------------
// Constants

TEST(OpsFloat, Ones) {
  EXPECT_TRUE(same(eval("(ones ?x)", {{"x", iota({2, 3})}}), {2, 3}, std::vector<double>(6, 1)));
}

TEST(OpsFloat, Eye) {
  EXPECT_TRUE(same(eval("(eye ?x)", {{"x", iota({2, 3})}}), {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(OpsFloat, IConv) {
  T k = eval("(iconv 3 1 ?x)", {{"x", iota({1, 2, 4, 4})}});
  // [2,2,3,1]: one at (c, c, 1, 0).
  EXPECT_TRUE(same(k, {2, 2, 3, 1}, {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}));
}

TEST(OpsFloat, PoolKernel) {
  EXPECT_TRUE(same(eval("(pool_kernel 3 1 ?x)", {{"x", iota({1, 2, 4, 4})}}), {2, 1, 3, 1},
                   std::vector<double>(6, 1.0 / 3)));
  EXPECT_TRUE(same(eval("(pool_kernel 1 1 ?x)", {{"x", iota({1, 1, 2})}}), {1, 1, 1, 1}, {1}));
}

TEST(OpsFloat, GraphWithSharedInputsAndWeights) {
  // A whole graph through the parser: inputs and weights as named leaves, a let, two outputs.
  Expr g = parse_expr(
      "(let h (relu (matmul 0 (input x 1 2) (weight w 2 2))))\n"
      "(ewadd h h)\n"
      "(smul h (weight s))\n");
  auto out = evaluate<double>(g, Arith<double>{},
                              {{"x", t({1, 2}, {1, -1})}, {"w", t({2, 2}, {1, 2, 3, 1})}, {"s", t({}, {-2})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(same(out[0], {1, 2}, {0, 2}));   // x.w = {-2, 1}
  EXPECT_TRUE(same(out[1], {1, 2}, {0, -2}));
}

// ---------------------------------------------------------------------------------------------------
// Identities through the shared operators

struct ConvCase {
  Shape x, w;
  int sh, sw, ph, pw, act;
};

/// One spatial axis of a conv in the test's own arithmetic: output extent and padding before.
std::pair<int64_t, int64_t> conv_axis(int64_t in, int64_t k, int64_t s, int64_t p) {
  if (p >= 0) return {(in + 2 * p - k) / s + 1, p};
  int64_t out = (in + s - 1) / s;
  return {out, std::max<int64_t>((out - 1) * s + k - in, 0) / 2};
}

class ConvAsIm2colMatmul : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvAsIm2colMatmul, Agrees) {
  const ConvCase& c = GetParam();
  const T x = random_ints(c.x, 1), w = random_ints(c.w, 2);
  const int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], O = c.w[0], KH = c.w[2], KW = c.w[3];
  auto [OH, pad_y] = conv_axis(H, KH, c.sh, c.ph);
  auto [OW, pad_x] = conv_axis(W, KW, c.sw, c.pw);
  // im2col by index copying only: cols [N, OH*OW, C*KH*KW], zero where the window leaves the image.
  const int64_t P = OH * OW, K = C * KH * KW;
  T cols({N, P, K}, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx) {
              int64_t iy = oy * c.sh - pad_y + ky, ix = ox * c.sw - pad_x + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              cols.data[(n * P + oy * OW + ox) * K + (ch * KH + ky) * KW + kx] = x.at4(n, ch, iy, ix);
            }
  T wmat({K, O}, 0.0);  // wmat[k][o] = w[o][k]
  for (int64_t o = 0; o < O; ++o)
    for (int64_t k = 0; k < K; ++k) wmat.data[k * O + o] = w.data[o * K + k];

  std::ostringstream conv_text, mm_text;
  conv_text << "(conv2d " << c.sh << " " << c.sw << " " << c.ph << " " << c.pw << " " << c.act << " ?x ?w)";
  mm_text << "(matmul " << c.act << " ?cols ?wmat)";
  T conv = eval(conv_text.str(), {{"x", x}, {"w", w}});
  T mm = eval(mm_text.str(), {{"cols", cols}, {"wmat", wmat}});  // [N, P, O]
  ASSERT_EQ(conv.shape, (Shape{N, O, OH, OW}));
  std::vector<double> expect;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t p = 0; p < P; ++p) expect.push_back(mm.data[(n * P + p) * O + o]);
  EXPECT_TRUE(same(conv, conv.shape, expect)) << conv_text.str();
}

INSTANTIATE_TEST_SUITE_P(Configs, ConvAsIm2colMatmul,
                         ::testing::Values(ConvCase{{1, 1, 4, 4}, {1, 1, 3, 3}, 1, 1, 0, 0, 0},
                                           ConvCase{{2, 3, 5, 6}, {4, 3, 3, 3}, 1, 1, 1, 1, 0},
                                           ConvCase{{2, 3, 7, 6}, {4, 3, 3, 2}, 2, 1, 1, 0, 0},
                                           ConvCase{{1, 2, 7, 7}, {3, 2, 3, 3}, 2, 2, -1, -1, 0},
                                           ConvCase{{1, 2, 6, 5}, {3, 2, 2, 3}, 1, 2, -1, -1, 0},
                                           ConvCase{{1, 2, 6, 6}, {3, 2, 3, 3}, 2, 2, -1, -1, 2},
                                           ConvCase{{2, 2, 5, 5}, {2, 2, 1, 1}, 3, 3, 0, 0, 2},
                                           ConvCase{{1, 3, 4, 4}, {2, 3, 5, 5}, 1, 1, 2, 2, 0}));

TEST(OpsIdentity, SplitAfterConcatGivesThePartsBack) {
  const T a = random_ints({2, 3, 4}, 3);
  for (int axis : {0, 1, 2, -1, -2}) {
    int ax = axis < 0 ? axis + 3 : axis;
    Shape bs = a.shape;
    bs[ax] = 2;
    const T b = random_ints(bs, 4 + ax);
    Leaves in{{"a", a}, {"b", b}};
    std::string cat = "(concat " + std::to_string(axis) + " ?a ?b)";
    std::string part = "(split " + std::to_string(axis) + " ";
    std::string tail = " " + std::to_string(axis) + " " + cat + " ?a)";
    EXPECT_TRUE(same(eval(part + "0" + tail, in), a)) << "axis " << axis;
    EXPECT_TRUE(same(eval(part + "1" + tail, in), b)) << "axis " << axis;
  }
}

TEST(OpsIdentity, TransposeTwiceWithInversePermutationIsIdentity) {
  const T x = random_ints({2, 3, 4, 5}, 5);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  int count = 0;
  do {
    std::vector<int64_t> inv(4);
    for (int64_t i = 0; i < 4; ++i) inv[perm[i]] = i;
    std::string text = "(transpose";
    for (int64_t p : inv) text += " " + std::to_string(p);
    text += " (transpose";
    for (int64_t p : perm) text += " " + std::to_string(p);
    text += " ?x))";
    EXPECT_TRUE(same(eval(text, {{"x", x}}), x)) << text;
    ++count;
  } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_EQ(count, 24);
}

TEST(OpsIdentity, BatchNormEqualsItsFormula) {
  std::mt19937 gen(6);
  std::uniform_real_distribution<double> u(-2, 2), pos(0.1, 3);
  const int64_t N = 2, C = 3, H = 2, W = 3;
  T x({N, C, H, W}, 0.0), scale({C}, 0.0), bias({C}, 0.0), mean({C}, 0.0), var({C}, 0.0);
  for (double& v : x.data) v = u(gen);
  for (int64_t c = 0; c < C; ++c) scale.data[c] = u(gen), bias.data[c] = u(gen), mean.data[c] = u(gen),
                                  var.data[c] = pos(gen);
  T y = eval("(batchnorm ?x ?s ?b ?m ?v)", {{"x", x}, {"s", scale}, {"b", bias}, {"m", mean}, {"v", var}});
  std::vector<double> expect;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * W; ++i)
        expect.push_back((x.data[(n * C + c) * H * W + i] - mean.data[c]) / std::sqrt(var.data[c]) * scale.data[c] +
                         bias.data[c]);
  EXPECT_TRUE(same(y, x.shape, expect, 1e-12));
}

TEST(OpsIdentity, DilatedConvIsTheConvOfTheZeroInsertedKernel) {
  // The independent side: the kernel with dh-1 zero rows and dw-1 zero columns between its taps.
  auto spread = [](const T& w, int64_t dh, int64_t dw) {
    T out({w.dim(0), w.dim(1), (w.dim(2) - 1) * dh + 1, (w.dim(3) - 1) * dw + 1}, 0.0);
    for (int64_t o = 0; o < w.dim(0); ++o)
      for (int64_t c = 0; c < w.dim(1); ++c)
        for (int64_t y = 0; y < w.dim(2); ++y)
          for (int64_t x = 0; x < w.dim(3); ++x) out.at4(o, c, y * dh, x * dw) = w.at4(o, c, y, x);
    return out;
  };
  int cases = 0;
  for (auto [dh, dw] : {std::pair<int64_t, int64_t>{2, 2}, {1, 3}, {3, 2}})
    for (const char* window : {"1 1 -1 -1", "2 2 -1 -1", "1 2 1 0", "2 1 0 2"})
      for (int64_t groups : {1, 2}) {
        const T x = random_ints({2, 2 * groups, 9, 8}, 31), w = random_ints({2 * groups, 2, 3, 2}, 32);
        const std::string head = std::string("(conv2d ") + window + " 2";
        const T dilated = eval(head + " " + std::to_string(dh) + " " + std::to_string(dw) + " ?x ?w)", {{"x", x}, {"w", w}});
        EXPECT_TRUE(same(dilated, eval(head + " ?x ?w)", {{"x", x}, {"w", spread(w, dh, dw)}})))
            << window << " dilations " << dh << " " << dw << " groups " << groups;
        ++cases;
      }
  EXPECT_EQ(cases, 24);
}

/// (concat 1 (conv2d ... (slice 1 ..x) (slice 0 ..w)) ...): one conv per group, through slice and concat.
std::string per_group_convs(const std::string& conv_attrs, int64_t groups, int64_t cg, int64_t og) {
  std::string text = "(concat 1";
  for (int64_t g = 0; g < groups; ++g)
    text += " (conv2d " + conv_attrs + " (slice 1 " + std::to_string(g * cg) + " " + std::to_string((g + 1) * cg) +
            " ?x) (slice 0 " + std::to_string(g * og) + " " + std::to_string((g + 1) * og) + " ?w))";
  return text + ")";
}

TEST(OpsIdentity, GroupedConvEqualsPerGroupConvs) {
  struct Case {
    Shape x, w;
    std::string attrs;
  };
  for (const Case& c : {Case{{1, 4, 5, 5}, {6, 2, 3, 3}, "1 1 0 0 0"}, Case{{2, 6, 6, 5}, {6, 2, 3, 3}, "2 1 -1 -1 2"},
                        Case{{1, 4, 5, 5}, {8, 1, 3, 3}, "1 1 1 1 0"}, Case{{1, 3, 4, 4}, {3, 1, 2, 2}, "2 2 0 0 0"}}) {
    const int64_t groups = c.x[1] / c.w[1], og = c.w[0] / groups;
    ASSERT_GT(groups, 1);
    Leaves in{{"x", random_ints(c.x, 7)}, {"w", random_ints(c.w, 8)}};
    T whole = eval("(conv2d " + c.attrs + " ?x ?w)", in);
    T parts = eval(per_group_convs(c.attrs, groups, c.w[1], og), in);
    EXPECT_TRUE(same(parts, whole)) << c.attrs << " groups " << groups;
  }
}

TEST(OpsIdentity, ConvWithIConvIsIdentity) {
  const T x = random_ints({2, 3, 4, 5}, 9);
  for (const char* text : {"(conv2d 1 1 -1 -1 0 ?x (iconv 3 3 ?x))", "(conv2d 1 1 1 2 0 ?x (iconv 3 5 ?x))",
                           "(conv2d 1 1 0 0 0 ?x (iconv 1 1 ?x))", "(conv2d 1 1 -1 -1 0 ?x (iconv 5 1 ?x))"})
    EXPECT_TRUE(same(eval(text, {{"x", x}}), x)) << text;
}

TEST(OpsIdentity, ConvWithPoolKernelIsAvgPoolIncludingPadding) {
  const T x = random_ints({2, 3, 5, 6}, 10);
  for (const char* attrs : {"1 1 1 1", "2 2 1 1", "1 2 0 1", "2 2 -1 -1", "1 1 -1 -1"}) {
    std::string a = attrs;
    T conv = eval("(conv2d " + a + " 0 ?x (pool_kernel 3 3 ?x))", {{"x", x}});
    T pool = eval("(avgpool 3 3 " + a + " 1 ?x)", {{"x", x}});
    EXPECT_TRUE(same(conv, pool, 1e-12)) << attrs;
  }
}

TEST(OpsIdentity, EnlargedKernelWithSamePaddingGivesTheSameConv) {
  // Holds for stride 1: SAME pads (k-1)/2 before, and enlarging by 2d adds d on each side of the kernel.
  const T x = random_ints({1, 2, 5, 6}, 11);
  for (Shape ws : {Shape{3, 2, 1, 1}, Shape{3, 2, 3, 3}, Shape{2, 2, 1, 3}}) {
    const T w = random_ints(ws, 12);
    T small = eval("(conv2d 1 1 -1 -1 0 ?x ?w)", {{"x", x}, {"w", w}});
    for (const char* big : {"(conv2d 1 1 -1 -1 0 ?x (enlarge 5 5 ?w))", "(conv2d 1 1 -1 -1 0 ?x (enlarge 3 5 ?w))"})
      EXPECT_TRUE(same(eval(big, {{"x", x}, {"w", w}}), small)) << big << " " << to_string(ws);
  }
}

TEST(OpsIdentity, EnlargeWithSamePaddingDiffersAtStride2OnEvenInputs) {
  // Not an identity: with stride 2 on a 6-wide input, SAME gives a 1x1 kernel no padding (windows at 0, 2,
  // 4) but the enlarged 3x3 kernel one column of padding at the end, so its centre reads 1, 3, 5. A rule
  // "conv(x, w) = conv(x, enlarge(w))" must therefore be limited to stride 1; the verifier has to refuse it.
  Leaves in{{"x", iota({1, 1, 1, 6}, 1)}, {"w", t({1, 1, 1, 1}, {1})}};
  EXPECT_TRUE(same(eval("(conv2d 1 2 -1 -1 0 ?x ?w)", in), {1, 1, 1, 3}, {1, 3, 5}));
  EXPECT_TRUE(same(eval("(conv2d 1 2 -1 -1 0 ?x (enlarge 1 3 ?w))", in), {1, 1, 1, 3}, {2, 4, 6}));
}

// ---------------------------------------------------------------------------------------------------
// sqrt, erf, clip, reduce_mean, pad (the operators of real PyTorch exports)

/// The ShapeError message of infer_shape, or "" when it accepts.
std::string shape_error(OpKind op, std::vector<int64_t> attrs, std::vector<Shape> in) {
  try {
    infer_shape(op, attrs, in);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}
Shape shape_of(OpKind op, std::vector<int64_t> attrs, std::vector<Shape> in) { return infer_shape(op, attrs, in); }
#define EXPECT_SHAPE_ERROR(op, attrs, in, what)                        \
  do {                                                                 \
    const std::string msg = shape_error(op, attrs, in);                \
    EXPECT_NE(msg.find(what), std::string::npos) << "message: " << msg; \
  } while (0)

TEST(OpsFloat, SqrtAndErf) {
  EXPECT_TRUE(same(eval("(sqrt ?x)", {{"x", t({3}, {0, 4, 2})}}), {3}, {0, 2, std::sqrt(2.0)}));
  // erf(1) = 0.8427007929497149, odd.
  EXPECT_TRUE(same(eval("(erf ?x)", {{"x", t({3}, {0, 1, -1})}}), {3}, {0, 0.8427007929497149, -0.8427007929497149}));
  EXPECT_EQ(shape_of(OpKind::Sqrt, {}, {{2, 3}}), (Shape{2, 3}));
  EXPECT_SHAPE_ERROR(OpKind::Sqrt, {}, (std::vector<Shape>{{2}, {2}}), "sqrt: expects 1 operands, got 2");
  EXPECT_SHAPE_ERROR(OpKind::Erf, {1}, (std::vector<Shape>{{2}}), "erf: expects 0 integer attributes, got 1");
}

TEST(OpsFloat, NegAndReciprocal) {
  EXPECT_TRUE(same(eval("(neg ?x)", {{"x", t({3}, {0, 4, -2.5})}}), {3}, {0, -4, 2.5}));
  EXPECT_TRUE(same(eval("(reciprocal ?x)", {{"x", t({3}, {4, -0.5, 3})}}), {3}, {0.25, -2, 1.0 / 3}));
  EXPECT_EQ(shape_of(OpKind::Neg, {}, {{2, 3}}), (Shape{2, 3}));
  EXPECT_SHAPE_ERROR(OpKind::Reciprocal, {}, (std::vector<Shape>{{2}, {2}}), "reciprocal: expects 1 operands, got 2");
}

TEST(OpsFloat, CosAndSin) {
  EXPECT_TRUE(same(eval("(cos ?x)", {{"x", t({3}, {0, 1.5, -2})}}), {3}, {1, std::cos(1.5), std::cos(-2.0)}));
  EXPECT_TRUE(same(eval("(sin ?x)", {{"x", t({3}, {0, 1.5, -2})}}), {3}, {0, std::sin(1.5), std::sin(-2.0)}));
  EXPECT_EQ(shape_of(OpKind::Sin, {}, {{2, 3}}), (Shape{2, 3}));
  EXPECT_SHAPE_ERROR(OpKind::Cos, {}, (std::vector<Shape>{{2}, {2}}), "cos: expects 1 operands, got 2");
}

TEST(OpsFloat, NanToZeroZeroesOnlyNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(same(eval("(nan_to_zero ?x)", {{"x", t({4}, {nan, -7e30, 2.5, -0.0})}}), {4}, {0, -7e30, 2.5, 0}));
  EXPECT_EQ(shape_of(OpKind::NanToZero, {}, {{2, 3}}), (Shape{2, 3}));
  EXPECT_SHAPE_ERROR(OpKind::NanToZero, {}, (std::vector<Shape>{{2}, {2}}), "nan_to_zero: expects 1 operands, got 2");
}

TEST(OpsFloat, CastRoundsToItsType) {
  // 1 + 2^-12 is a float32 but not a float16 (10 mantissa bits: rounds to even, 1); 1 + 2^-9 is neither a
  // bfloat16 (7 bits: 1) ...; 70000 overflows float16 (infinity); 0.1 is rounded to float32 first.
  const Leaves in{{"x", t({4}, {1 + 0x1p-12, 1 + 0x1p-9, 70000, 0.1})}};
  T half = eval("(cast 10 ?x)", in);
  EXPECT_TRUE(std::isinf(half.data.at(2)) && half.data[2] > 0) << half.data[2];
  half.data[2] = 0;
  EXPECT_TRUE(same(half, {4}, {1, 1 + 0x1p-9, 0, half_to_float(float_to_half(0.1f))}));
  EXPECT_TRUE(same(eval("(cast 16 ?x)", in), {4}, {1, 1, 70144, bfloat_to_float(float_to_bfloat(0.1f))}));
  EXPECT_TRUE(same(eval("(cast 1 ?x)", in), {4}, {1 + 0x1p-12, 1 + 0x1p-9, 70000, static_cast<double>(0.1f)}));
  EXPECT_EQ(shape_of(OpKind::Cast, {10}, {{2, 3}}), (Shape{2, 3}));
  EXPECT_SHAPE_ERROR(OpKind::Cast, {7}, (std::vector<Shape>{{2}}), "cast: target type must be 1 (float32), 10 (float16) or 16");
  EXPECT_SHAPE_ERROR(OpKind::Cast, {}, (std::vector<Shape>{{2}}), "cast: expects 1 integer attributes, got 0");
  // Its result's element type is its target, any other operator's its operand's.
  EXPECT_EQ(ops::result_elem_type(OpKind::Cast, std::vector<int64_t>{10}, kFloat32Type), kFloat16Type);
  EXPECT_EQ(ops::result_elem_type(OpKind::Relu, {}, kBFloat16Type), kBFloat16Type);
}

TEST(OpsFloat, Clip) {
  Leaves in{{"x", t({5}, {-2, -0.25, 0.5, 3, 7})}};
  // ReLU6: [0, 6].
  EXPECT_TRUE(same(eval("(clip 0 0 6 0 ?x)", in), {5}, {0, 0, 0.5, 3, 6}));
  // [-1/2, 5/4]: num / 2^exp.
  EXPECT_TRUE(same(eval("(clip -1 1 5 2 ?x)", in), {5}, {-0.5, -0.25, 0.5, 1.25, 1.25}));
  // Only an upper bound (exp -1: none), only a lower one.
  EXPECT_TRUE(same(eval("(clip 0 -1 1 0 ?x)", in), {5}, {-2, -0.25, 0.5, 1, 1}));
  EXPECT_TRUE(same(eval("(clip -3 0 0 -1 ?x)", in), {5}, {-2, -0.25, 0.5, 3, 7}));
  EXPECT_TRUE(same(eval("(clip 1 0 0 -1 ?x)", in), {5}, {1, 1, 1, 3, 7}));
  // Equal bounds are allowed.
  EXPECT_TRUE(same(eval("(clip 3 1 3 1 ?x)", in), {5}, {1.5, 1.5, 1.5, 1.5, 1.5}));
  const std::vector<Shape> x{{2, 3}};
  EXPECT_EQ(shape_of(OpKind::Clip, {0, 0, 6, 0}, x), (Shape{2, 3}));
  EXPECT_SHAPE_ERROR(OpKind::Clip, (std::vector<int64_t>{0, 0, 6}), x, "clip: expects 4 integer attributes, got 3");
  EXPECT_SHAPE_ERROR(OpKind::Clip, (std::vector<int64_t>{0, 0, 6, 0}), (std::vector<Shape>{{2}, {2}}),
                     "clip: expects 1 operands, got 2");
  EXPECT_SHAPE_ERROR(OpKind::Clip, (std::vector<int64_t>{6, 0, 0, 0}), x, "lower bound above the upper bound");
  EXPECT_SHAPE_ERROR(OpKind::Clip, (std::vector<int64_t>{0, -1, 0, -1}), x, "needs at least one bound");
  EXPECT_SHAPE_ERROR(OpKind::Clip, (std::vector<int64_t>{1, -1, 6, 0}), x, "absent (exponent -1) but its numerator");
  EXPECT_SHAPE_ERROR(OpKind::Clip, (std::vector<int64_t>{0, 0, 6, 63}), x, "exponent must be -1 (no bound) or 0..62");
  EXPECT_SHAPE_ERROR(OpKind::Clip, (std::vector<int64_t>{0, 0, 12, 1}), x, "not in lowest terms");
}

TEST(OpsFloat, ReduceMean) {
  Leaves in{{"x", iota({2, 3, 2})}};  // x[i][j][k] = 6i + 2j + k
  EXPECT_TRUE(same(eval("(reduce_mean 1 2 ?x)", in), {2, 3, 1}, {0.5, 2.5, 4.5, 6.5, 8.5, 10.5}));
  EXPECT_TRUE(same(eval("(reduce_mean 0 2 ?x)", in), {2, 3}, {0.5, 2.5, 4.5, 6.5, 8.5, 10.5}));
  EXPECT_TRUE(same(eval("(reduce_mean 1 0 2 ?x)", in), {1, 3, 1}, {3.5, 5.5, 7.5}));
  EXPECT_TRUE(same(eval("(reduce_mean 0 1 ?x)", in), {2, 2}, {2, 3, 8, 9}));
  EXPECT_TRUE(same(eval("(reduce_mean 0 0 1 2 ?x)", in), {}, {5.5}));
  const std::vector<Shape> x{{2, 3, 2}};
  EXPECT_SHAPE_ERROR(OpKind::ReduceMean, (std::vector<int64_t>{1}), x, "needs keepdims and at least one axis");
  EXPECT_SHAPE_ERROR(OpKind::ReduceMean, (std::vector<int64_t>{2, 0}), x, "keepdims must be 0 or 1");
  EXPECT_SHAPE_ERROR(OpKind::ReduceMean, (std::vector<int64_t>{1, 3}), x, "strictly increasing and in 0..2");
  EXPECT_SHAPE_ERROR(OpKind::ReduceMean, (std::vector<int64_t>{1, 2, 1}), x, "strictly increasing");
  EXPECT_SHAPE_ERROR(OpKind::ReduceMean, (std::vector<int64_t>{1, -1}), x, "strictly increasing");
  EXPECT_SHAPE_ERROR(OpKind::ReduceMean, (std::vector<int64_t>{1, 0}), (std::vector<Shape>{{2}, {2}}),
                     "reduce_mean: expects 1 operands, got 2");
}

TEST(OpsFloat, Pad) {
  Leaves in{{"x", t({2, 2}, {1, 2, 3, 4})}};
  // One row before axis 0, one column after axis 1.
  EXPECT_TRUE(same(eval("(pad 1 0 0 1 ?x)", in), {3, 3}, {0, 0, 0, 1, 2, 0, 3, 4, 0}));
  EXPECT_TRUE(same(eval("(pad 0 0 0 0 ?x)", in), {2, 2}, {1, 2, 3, 4}));
  EXPECT_TRUE(same(eval("(pad 0 2 1 0 ?x)", in), {3, 4}, {0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0}));
  EXPECT_EQ(shape_of(OpKind::Pad, {0, 0, 1, 1, 0, 0, 1, 1}, {{1, 2, 5, 5}}), (Shape{1, 2, 7, 7}));
  const std::vector<Shape> x{{2, 2}};
  EXPECT_SHAPE_ERROR(OpKind::Pad, (std::vector<int64_t>{1, 1}), x, "pad: needs 2 x rank = 4 amounts");
  EXPECT_SHAPE_ERROR(OpKind::Pad, (std::vector<int64_t>{1, -1, 0, 0}), x, "zero padding only, no cropping");
  EXPECT_SHAPE_ERROR(OpKind::Pad, (std::vector<int64_t>{1, 1, 1, 1}), (std::vector<Shape>{{2, 2}, {2, 2}}),
                     "pad: expects 1 operands, got 2");
}

TEST(OpsIdentity, ZeroPadThenAvgPoolCountingPadsIsTheAvgPoolsOwnPadding) {
  // What the ONNX importer folds (Inception-v3's avg_pool2d(padding=1)): Pad 1 + AveragePool 3x3 = our
  // avgpool with SAME padding and include_pad 1.
  Leaves in{{"x", random_ints({1, 2, 5, 4}, 3)}};
  EXPECT_TRUE(same(eval("(avgpool 3 3 1 1 0 0 0 (pad 0 0 1 1 0 0 1 1 ?x))", in),
                   eval("(avgpool 3 3 1 1 -1 -1 1 ?x)", in)));
  // With include_pad 0 the divisor differs at the borders.
  EXPECT_FALSE(same(eval("(avgpool 3 3 1 1 0 0 0 (pad 0 0 1 1 0 0 1 1 ?x))", in),
                    eval("(avgpool 3 3 1 1 -1 -1 0 ?x)", in)));
}

// ---------------------------------------------------------------------------------------------------
// The operator reference cannot fall behind the code.

TEST(OperatorDocs, EveryOperatorIsDocumented) {
  std::ifstream in(std::string(TEQ_SOURCE_DIR) + "/docs/operators.md");
  ASSERT_TRUE(in) << "docs/operators.md not found under " << TEQ_SOURCE_DIR;
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string doc = buf.str();
  for (const OpInfo& op : all_ops()) {
    if (op.kind == OpKind::Var) {
      EXPECT_NE(doc.find("?name"), std::string::npos) << "pattern variables are not documented";
      continue;
    }
    EXPECT_NE(doc.find("(" + std::string(op.name) + " "), std::string::npos)
        << "docs/operators.md does not document (" << op.name;
  }
}

}  // namespace
}  // namespace teq
