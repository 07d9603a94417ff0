// Every built-in model on the GPU against the reference evaluator (FP32, weights scaled by fan-in so
// activations stay in range). The CPU references run in parallel threads; models whose multiply-adds
// exceed TEQ_GPU_MODEL_MACS (default 6e9) are left out with a note, since the scalar reference
// evaluator would need minutes for them. Skips without a GPU.
#include <gtest/gtest.h>

#if TEQ_HAVE_CUDA && __has_include("optimizer/models/builtin.h")

#include <cstdlib>
#include <future>
#include <iostream>

#include "optimizer/engine/cost_model.h"
#include "optimizer/cuda/gpu_runtime.h"
#include "optimizer/models/builtin.h"
#include "rules/work.h"
#include "tests/optimizer/gpu_test_util.h"

namespace teq {
namespace {

std::map<std::string, Tensor<float>> model_leaves(const Expr& g) {
  std::map<std::string, Tensor<float>> leaves;
  uint32_t seed = 101;
  for (const ExprNode& n : g.nodes()) {
    if (!is_leaf(n.op) || leaves.count(n.name)) continue;
    const Shape& s = n.attrs;
    float bound = 1.0f;
    if (n.op == OpKind::Weight && s.size() >= 2) {
      const int64_t fan_in = s.size() == 4 ? s[1] * s[2] * s[3] : s[s.size() - 2];
      bound = std::sqrt(3.0f / static_cast<float>(std::max<int64_t>(fan_in, 1)));
    }
    const bool positive = !n.name.empty() && n.name[0] == 'p';
    leaves.emplace(n.name, gpu_test::random_tensor(s, seed++, positive ? 0.5f : -bound, positive ? 1.5f : bound));
  }
  return leaves;
}

double model_macs(const Expr& g) {
  const std::vector<Shape> shapes = infer_shapes(g, {});
  double total = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const ExprNode& n = g.nodes()[i];
    if (is_leaf(n.op)) continue;
    std::vector<Shape> in;
    for (ExprId c : n.children) in.push_back(shapes[c.value]);
    total += op_flops(n.op, n.attrs, in, shapes[i]);
  }
  return total;
}

TEST(GpuModels, EveryBuiltinModelMatchesTheReferenceEvaluator) {
  const gpu::Availability a = gpu::GpuRuntime::available();
  if (!a.ok) GTEST_SKIP() << "no GPU, built-in models not run on it: " << a.reason;
  const char* env = std::getenv("TEQ_GPU_MODEL_MACS");
  const double limit = env ? std::atof(env) : 6e9;
  struct Job {
    std::string name;
    Expr graph;
    std::map<std::string, Tensor<float>> leaves;
    std::future<std::vector<Tensor<float>>> reference;
  };
  std::vector<Job> jobs;
  for (const std::string& name : builtin_model_names()) {
    Expr g = build_builtin_model(name);
    const double macs = model_macs(g);
    if (macs > limit) {
      std::cout << "note: " << name << " (" << macs << " multiply-adds) left out; raise TEQ_GPU_MODEL_MACS\n";
      continue;
    }
    Job j{name, std::move(g), {}, {}};
    j.leaves = model_leaves(j.graph);
    jobs.push_back(std::move(j));
  }
  for (Job& j : jobs)
    j.reference = std::async(std::launch::async, [&j] { return evaluate<float>(j.graph, Arith<float>{}, j.leaves); });
  gpu::GpuRuntime gpu;
  for (Job& j : jobs) {
    SCOPED_TRACE(j.name);
    const std::vector<Tensor<float>> got = gpu.run_graph(j.graph, j.leaves);
    const std::vector<Tensor<float>> want = j.reference.get();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      float scale = 0;
      for (float v : want[i].data) scale = std::max(scale, std::fabs(v));
      EXPECT_EQ(got[i].shape, want[i].shape);
      EXPECT_TRUE(gpu_test::close(got[i].data, want[i].data, 1e-3f * std::max(scale, 1e-3f), 1e-3f))
          << "output " << i << " (largest magnitude " << scale << ")";
    }
  }
}

}  // namespace
}  // namespace teq

#endif
