// The GPU runtime against the reference evaluator: every vocabulary operator (several attribute and
// shape variants each) and small graphs must give evaluate<float>'s values within FP32 tolerance.
// Without a GPU these tests skip and say why; the table's coverage of the vocabulary is checked always.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/optimizer/gpu_test_util.h"

#if TEQ_HAVE_CUDA
#include "optimizer/cuda/gpu_runtime.h"
#include "optimizer/cost/measured_cost.h"
#endif

namespace teq {
namespace {

using gpu_test::close;
using gpu_test::random_leaves;

/// One or more cases per operator. Leaves named p* are positive (divisors, variances).
const std::vector<std::string>& operator_cases() {
  static const std::vector<std::string> cases = {
      "(ewadd (input a 2 3 4) (input b 2 3 4))",
      "(ewsub (input a 2 3 4) (input b 2 3 4))",
      "(ewmul (input a 5 7) (input b 5 7))",
      "(ewdiv (input a 5 7) (input pb 5 7))",
      "(smul (input x 3 5) (input s))",
      "(relu (input x 2 3 5 7))",
      "(tanh (input x 2 3 5 7))",
      "(sigmoid (input x 1000))",
      "(gelu (input x 4 33))",
      "(gelu_tanh (input x 4 33))",
      "(neg (input x 4 33))",
      "(reciprocal (input px 4 33))",
      "(nan_to_zero (input x 4 33))",
      "(cos (input x 4 33))",
      "(sin (input x 4 33))",
      "(sqrt (input px 4 33))",
      "(erf (input x 1000))",
      "(broadcast 2 3 4 5 (input x 3 1 5))",
      "(broadcast 4 6 (input x 6))",
      "(noop (relu (input x 3 4)) (input y 2))",
      "(matmul 0 (input a 3 4) (input b 4 5))",
      "(matmul 2 (input a 2 3 4) (input b 4 5))",
      "(matmul 1 (input a 3 4) (input b 2 4 5))",
      "(matmul 3 (input a 2 1 3 4) (input b 1 3 4 5))",
      "(matmul 0 (input a 2 3 17 33) (input b 2 3 33 9))",
      "(conv2d 1 1 1 1 2 (input x 1 3 8 8) (weight w 4 3 3 3))",
      "(conv2d 2 2 -1 -1 1 (input x 2 4 8 8) (weight w 6 4 3 3))",
      "(conv2d 1 1 -1 -1 3 (input x 1 4 7 9) (weight w 6 2 3 5))",
      "(conv2d 1 1 -1 -1 0 (input x 1 8 6 6) (weight w 8 1 3 3))",
      "(conv2d 2 1 0 0 0 (input x 2 16 5 5) (weight w 8 16 1 1))",
      "(conv2d 1 1 -1 -1 2 2 2 (input x 1 4 9 9) (weight w 6 2 3 3))",
      "(conv2d 2 1 1 0 0 1 3 (input x 2 3 8 10) (weight w 4 3 3 2))",
      "(enlarge 5 5 (input w 4 3 3 3))",
      "(enlarge 3 3 (input w 4 3 1 1))",
      "(merge 2 (input w 4 3 3 3))",
      "(merge 3 (input w 6 1 1 3))",
      "(maxpool 3 3 2 2 -1 -1 (input x 1 3 8 8))",
      "(maxpool 3 3 1 1 1 1 (input x 2 3 7 7))",
      "(maxpool 2 2 2 2 0 0 (input x 1 2 8 6))",
      "(avgpool 3 3 1 1 -1 -1 1 (input x 1 3 8 8))",
      "(avgpool 3 3 1 1 -1 -1 0 (input x 1 3 8 8))",
      "(avgpool 3 3 2 2 -1 -1 0 (input x 1 3 8 8))",
      "(avgpool 3 3 2 2 1 1 1 (input x 2 3 9 9))",
      "(global_avgpool (input x 2 5 7 7))",
      "(global_avgpool (input x 1 3 33 33))",
      "(concat 1 (input a 2 3 4) (input b 2 5 4) (input c 2 1 4))",
      "(concat -1 (input a 2 3 4) (input b 2 3 2))",
      "(concat 0 (input a 2 3) (input b 4 3))",
      "(split 1 0 1 (input x 2 7 3) (input r 2 3 5))",
      "(split 1 1 1 (input x 2 7 3) (input r 2 3 5))",
      "(split -1 1 0 (input x 2 3 9) (input r 4))",
      "(slice 2 1 4 (input x 2 3 5))",
      "(slice 0 1 2 (input x 3 4))",
      "(transpose 0 2 3 1 (input x 2 3 4 5))",
      "(transpose 1 0 (input x 7 3))",
      "(reshape 6 20 (input x 2 3 4 5))",
      "(batchnorm (input x 2 3 4 5) (input s 3) (input b 3) (input m 3) (input pv 3))",
      "(batchnorm (input x 4 3) (input s 3) (input b 3) (input m 3) (input pv 3))",
      "(softmax -1 (input x 2 3 5))",
      "(softmax 1 (input x 2 6 5))",
      "(ones (input x 2 3))",
      "(eye (input x 2 4))",
      "(iconv 3 3 (input x 1 4 5 5))",
      "(pool_kernel 3 3 (input x 1 4 5 5))",
  };
  return cases;
}

/// Small multi-operator graphs: residual block, attention, a weight-only subgraph, shared inputs and
/// several outputs, a root that is a view of an input.
const std::vector<std::string>& graph_cases() {
  static const std::vector<std::string> cases = {
      "(let x (input x 1 8 8 8)) (let h (conv2d 1 1 -1 -1 2 x (weight w1 8 8 3 3)))"
      " (relu (ewadd x (conv2d 1 1 -1 -1 0 h (weight w2 8 8 3 3))))",
      "(let q (matmul 0 (input x 2 4 8) (weight wq 8 8))) (let k (matmul 0 (input x 2 4 8) (weight wk 8 8)))"
      " (matmul 0 (softmax -1 (matmul 0 q (transpose 0 2 1 k))) (input x 2 4 8))",
      "(conv2d 1 1 -1 -1 2 (input x 1 4 6 6) (concat 0 (weight w1 3 4 3 3) (enlarge 3 3 (weight w2 5 4 1 1))))",
      "(let m (matmul 0 (input x 4 6) (concat 1 (weight w1 6 3) (weight w2 6 5))))"
      " (split 1 0 1 m (weight w1 6 3)) (split 1 1 1 m (weight w1 6 3))",
      "(reshape 12 (input x 3 4)) (tanh (input x 3 4))",
      "(global_avgpool (maxpool 3 3 2 2 -1 -1 (batchnorm (conv2d 2 2 -1 -1 0 (input x 1 3 16 16)"
      " (weight w 8 3 7 7)) (weight s 8) (weight b 8) (weight m 8) (weight pv 8))))",
  };
  return cases;
}

TEST(GpuRuntime, CasesCoverEveryVocabularyOperator) {
  std::set<OpKind> seen;
  for (const std::string& c : operator_cases()) {
    const Expr e = parse_expr(c);  // named: a range-for over parse_expr(c).nodes() reads a destroyed temporary
    for (const ExprNode& n : e.nodes()) seen.insert(n.op);
  }
  // Operators the GPU runtime has no kernel for yet (it says so: GpuError "has no GPU implementation"), so
  // measured costs and --check on the GPU do not cover models that use them.
  const std::set<OpKind> no_kernel_yet = {OpKind::Clip, OpKind::Pad, OpKind::ReduceMean, OpKind::Cast};
  for (const OpInfo& info : all_ops()) {
    if (is_leaf(info.kind) || info.kind == OpKind::Opaque || no_kernel_yet.count(info.kind)) continue;
    EXPECT_TRUE(seen.count(info.kind)) << "no GPU test case for operator " << info.name;
  }
}

#if TEQ_HAVE_CUDA

using gpu::GpuRuntime;

#define TEQ_REQUIRE_GPU()                                                              \
  do {                                                                                 \
    const gpu::Availability a = GpuRuntime::available();                               \
    if (!a.ok) GTEST_SKIP() << "no GPU, GPU runtime not exercised: " << a.reason; \
  } while (0)

void expect_gpu_matches_cpu(GpuRuntime& gpu, const std::string& text, float atol, float rtol) {
  SCOPED_TRACE(text);
  const Expr g = parse_expr(text);
  const auto leaves = random_leaves(g);
  const std::vector<Tensor<float>> want = evaluate<float>(g, Arith<float>{}, leaves);
  const std::vector<Tensor<float>> got = gpu.run_graph(g, leaves);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].shape, want[i].shape) << "output " << i;
    EXPECT_TRUE(close(got[i].data, want[i].data, atol, rtol)) << "output " << i;
  }
}

TEST(GpuRuntime, EveryOperatorMatchesTheReferenceEvaluator) {
  TEQ_REQUIRE_GPU();
  GpuRuntime gpu;
  for (const std::string& c : operator_cases()) expect_gpu_matches_cpu(gpu, c, 1e-4f, 1e-4f);
}

TEST(GpuRuntime, OperatorsWithoutAlgorithmSearchMatch) {
  TEQ_REQUIRE_GPU();
  GpuRuntime gpu({.conv_algo_search = false});
  for (const std::string& c : operator_cases())
    if (c.starts_with("(conv2d")) expect_gpu_matches_cpu(gpu, c, 1e-4f, 1e-4f);
}

TEST(GpuRuntime, SmallGraphsMatchTheReferenceEvaluator) {
  TEQ_REQUIRE_GPU();
  GpuRuntime gpu;
  for (const std::string& c : graph_cases()) expect_gpu_matches_cpu(gpu, c, 1e-4f, 1e-4f);
}

TEST(GpuRuntime, Tf32StaysCloseToFp32) {
  TEQ_REQUIRE_GPU();
  GpuRuntime gpu({.tf32 = true});
  // TF32 keeps 10 mantissa bits: compare loosely.
  expect_gpu_matches_cpu(gpu, "(matmul 0 (input a 2 64 128) (input b 128 32))", 2e-2f, 2e-2f);
  expect_gpu_matches_cpu(gpu, "(conv2d 1 1 -1 -1 2 (input x 1 16 12 12) (weight w 16 16 3 3))", 2e-2f, 2e-2f);
}

TEST(GpuRuntime, OpaqueOperatorsAreRefused) {
  TEQ_REQUIRE_GPU();
  GpuRuntime gpu;
  const Expr g = parse_expr("(opaque 3 0 2 2 (input x 2 2))");
  EXPECT_THROW(gpu.run_graph(g, random_leaves(g)), gpu::GpuError);
}

TEST(GpuRuntime, MissingLeafIsAShapeError) {
  TEQ_REQUIRE_GPU();
  GpuRuntime gpu;
  EXPECT_THROW(gpu.run_graph(parse_expr("(relu (input x 2 2))"), {}), ShapeError);
}

TEST(GpuRuntime, TimesNodesAndGraphs) {
  TEQ_REQUIRE_GPU();
  GpuRuntime gpu({.warmup = 1, .repeats = 5});
  const std::vector<Shape> conv_in = {{1, 64, 28, 28}, {64, 64, 3, 3}};
  const gpu::Timing conv = gpu.time_node(OpKind::Conv2d, std::vector<int64_t>{1, 1, -1, -1, 2}, conv_in);
  EXPECT_GT(conv.median_ms, 0);
  EXPECT_LE(conv.min_ms, conv.median_ms);
  EXPECT_LE(conv.median_ms, conv.max_ms);
  EXPECT_EQ(conv.repeats, 5);
  const std::vector<Shape> view_in = {{4, 6}};
  EXPECT_EQ(gpu.time_node(OpKind::Reshape, std::vector<int64_t>{24}, view_in).median_ms, 0);
  const gpu::Timing whole = gpu.time_graph(parse_expr(graph_cases()[0]));
  EXPECT_GT(whole.median_ms, 0);
}

TEST(GpuRuntime, MeasuredCostModelTimesOnTheDevice) {
  TEQ_REQUIRE_GPU();
  const auto file = std::filesystem::temp_directory_path() / "teq-gpu-measured-costs.json";
  std::filesystem::remove(file);
  {
    auto model = make_measured_cost_model({.warmup = 1, .repeats = 3}, nullptr, file);
    const std::vector<Shape> in = {{1, 32, 16, 16}, {32, 32, 3, 3}};
    const double s = model->node_cost(OpKind::Conv2d, std::vector<int64_t>{1, 1, -1, -1, 2}, in, {1, 32, 16, 16});
    EXPECT_GT(s, 0);
    EXPECT_LT(s, 1.0) << "a small convolution takes far less than a second";
    EXPECT_EQ(model->node_cost(OpKind::Conv2d, std::vector<int64_t>{1, 1, -1, -1, 2}, in, {1, 32, 16, 16}), s);
    EXPECT_EQ(model->stats().measured, 1u);
    EXPECT_EQ(model->stats().hits, 1u);
  }
  const CostDb db = CostDb::load(file);
  EXPECT_EQ(db.entries_ms.size(), 1u);
  EXPECT_FALSE(db.device.empty());
  std::filesystem::remove(file);
}

TEST(GpuRuntime, MeasuresEndToEndLatency) {
  TEQ_REQUIRE_GPU();
  const Expr g = parse_expr(graph_cases()[0]);
  const LatencyComparison c = measure_latency(g, g, {.warmup = 1, .repeats = 5});
  EXPECT_GT(c.original.median_ms, 0);
  EXPECT_GT(c.optimized.median_ms, 0);
  EXPECT_GT(c.speedup, 0);
  EXPECT_EQ(c.to_json()["original"]["repeats"], 5);
}

#endif  // TEQ_HAVE_CUDA

}  // namespace
}  // namespace teq
