// The GPU runtime's index plans (optimizer/cuda/gpu_plan.h) run on the CPU through the same index
// functions the kernels use, and must agree with evaluate<float>. They also check that what the runtime
// hands cuDNN (symmetric padding, or an explicitly padded input) means the vocabulary's operator.
// Needs the CUDA build (the plans live in teq_cuda) but no GPU.
#include <gtest/gtest.h>

#if TEQ_HAVE_CUDA

#include "optimizer/cuda/gpu_plan.h"
#include "rules/ops/conv.h"
#include "tests/optimizer/gpu_test_util.h"

namespace teq::gpu {
namespace {

using gpu_test::close;
using gpu_test::random_tensor;

std::string dims(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += " " + std::to_string(d);
  return out;
}

/// Value of a one-operator term over leaves x (and y).
Tensor<float> eval_term(const std::string& term, const std::map<std::string, Tensor<float>>& leaves) {
  return evaluate<float>(parse_expr(term), Arith<float>{}, leaves)[0];
}

TEST(GpuPlan, BroadcastGatherMatchesEvaluator) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 1, 5}, {2, 3, 4, 5}}, {{4}, {3, 4}}, {{}, {2, 3}}, {{1, 1}, {2, 3}}, {{2, 1, 3}, {2, 4, 3}}};
  for (const auto& [in, out] : cases) {
    const Tensor<float> x = random_tensor(in, 1);
    const Tensor<float> want = eval_term("(broadcast" + dims(out) + " (input x" + dims(in) + "))", {{"x", x}});
    EXPECT_TRUE(close(run_gather_host(plan_broadcast(in, out), x.data), want.data, 0, 0)) << to_string(in);
  }
}

TEST(GpuPlan, TransposeGatherMatchesEvaluator) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 3}, {1, 0}}, {{2, 3, 4, 5}, {0, 2, 3, 1}}, {{2, 3, 4}, {2, 0, 1}}, {{3, 4, 5}, {0, 1, 2}}};
  for (const auto& [in, perm] : cases) {
    const Tensor<float> x = random_tensor(in, 2);
    const Tensor<float> want = eval_term("(transpose" + dims(perm) + " (input x" + dims(in) + "))", {{"x", x}});
    EXPECT_TRUE(close(run_gather_host(plan_transpose(in, perm), x.data), want.data, 0, 0)) << to_string(perm);
  }
}

TEST(GpuPlan, SliceAndSplitCopiesMatchEvaluator) {
  const Shape in = {2, 7, 3};
  const Tensor<float> x = random_tensor(in, 3);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (auto [b, e] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}}) {
      const Tensor<float> want = eval_term("(slice " + std::to_string(axis) + " " + std::to_string(b) + " " +
                                               std::to_string(e) + " (input x 2 7 3))",
                                           {{"x", x}});
      std::vector<float> got(want.data.size(), -99.0f);
      run_copy2d_host(plan_slice_copy(in, axis, b, e), x.data.data(), got.data());
      EXPECT_TRUE(close(got, want.data, 0, 0)) << "axis " << axis;
    }
  // split part 1 along axis 1 at the cut r.dim(0) = 4
  const Tensor<float> r = random_tensor({4}, 4);
  const Tensor<float> want = eval_term("(split 1 1 0 (input x 2 7 3) (input r 4))", {{"x", x}, {"r", r}});
  std::vector<float> got(want.data.size());
  run_copy2d_host(plan_slice_copy(in, 1, 4, 7), x.data.data(), got.data());
  EXPECT_TRUE(close(got, want.data, 0, 0));
}

TEST(GpuPlan, ConcatCopiesMatchEvaluator) {
  for (int64_t axis = 0; axis < 3; ++axis) {
    std::vector<Shape> ins = {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}};
    ins[1][axis] = 5;
    ins[2][axis] = 1;
    std::map<std::string, Tensor<float>> leaves;
    std::string term = "(concat " + std::to_string(axis);
    for (size_t i = 0; i < ins.size(); ++i) {
      const std::string name = "x" + std::to_string(i);
      leaves.emplace(name, random_tensor(ins[i], 10 + i));
      term += " (input " + name + dims(ins[i]) + ")";
    }
    const Tensor<float> want = eval_term(term + ")", leaves);
    std::vector<float> got(want.data.size(), -99.0f);
    const std::vector<Copy2d> copies = plan_concat_copies(ins, axis);
    ASSERT_EQ(copies.size(), 3u);
    for (size_t i = 0; i < copies.size(); ++i)
      run_copy2d_host(copies[i], leaves.at("x" + std::to_string(i)).data.data(), got.data());
    EXPECT_TRUE(close(got, want.data, 0, 0)) << "axis " << axis;
  }
}

TEST(GpuPlan, MergeCopiesIntoZerosMatchEvaluator) {
  for (const auto& [in, count] : std::vector<std::pair<Shape, int64_t>>{
           {{4, 2, 3, 3}, 2}, {{6, 1, 1, 3}, 3}, {{4, 3, 2, 1}, 1}, {{4, 1, 1, 1}, 4}}) {
    const Tensor<float> w = random_tensor(in, 20);
    const Tensor<float> want = eval_term("(merge " + std::to_string(count) + " (input w" + dims(in) + "))", {{"w", w}});
    std::vector<float> got(want.data.size(), 0.0f);  // the runtime fills the output with zeros first
    for (const Copy2d& c : plan_merge_copies(in, count)) run_copy2d_host(c, w.data.data(), got.data());
    EXPECT_TRUE(close(got, want.data, 0, 0)) << to_string(in) << " count " << count;
  }
}

TEST(GpuPlan, MatmulBatchesMatchEvaluator) {
  struct Case {
    Shape a, b;
    bool strided;
  };
  const std::vector<Case> cases = {{{3, 4}, {4, 5}, true},           {{2, 3, 4}, {4, 5}, true},
                                   {{3, 4}, {2, 4, 5}, true},        {{2, 3, 3, 4}, {3, 4, 5}, false},
                                   {{2, 1, 3, 4}, {1, 3, 4, 5}, false}, {{2, 3, 3, 4}, {2, 1, 4, 5}, false}};
  for (const Case& c : cases) {
    const Tensor<float> a = random_tensor(c.a, 5), b = random_tensor(c.b, 6);
    const Tensor<float> want =
        eval_term("(matmul 0 (input a" + dims(c.a) + ") (input b" + dims(c.b) + "))", {{"a", a}, {"b", b}});
    const MatmulPlan p = plan_matmul(c.a, c.b, want.shape);
    EXPECT_EQ(p.strided, c.strided) << to_string(c.a) << " x " << to_string(c.b);
    EXPECT_TRUE(close(run_matmul_host(p, a.data, b.data), want.data, 1e-5f, 1e-5f))
        << to_string(c.a) << " x " << to_string(c.b);
  }
}

struct WindowCase {
  int64_t h, w, kh, kw, sh, sw, ph, pw;
};
const std::vector<WindowCase> kWindows = {
    {8, 8, 3, 3, 1, 1, -1, -1},  // SAME, odd kernel, stride 1: symmetric
    {8, 8, 3, 3, 2, 2, -1, -1},  // SAME, stride 2: one extra element at the end
    {7, 9, 3, 5, 2, 1, -1, -1},  // mixed
    {9, 9, 2, 2, 2, 2, -1, -1},  // even kernel
    {8, 6, 3, 3, 1, 2, 1, 0},    // explicit
    {5, 5, 1, 1, 1, 1, 0, 0},    // 1x1
};

TEST(GpuPlan, ConvolutionPaddingMeansTheSame) {
  int explicit_cases = 0;
  for (const WindowCase& c : kWindows)
    for (auto [act, dh, dw] : {std::tuple<int64_t, int64_t, int64_t>{0, 1, 1}, {2, 1, 1}, {0, 2, 1}, {2, 2, 2}}) {
      const Shape xs = {2, 4, c.h, c.w}, ws = {6, 2, c.kh, c.kw};  // 2 groups
      const Tensor<float> x = random_tensor(xs, 7), w = random_tensor(ws, 8);
      const std::vector<int64_t> attrs =
          ops::conv2d_attr_list({c.sh, c.sw, c.ph, c.pw, static_cast<Activation>(act), dh, dw});
      auto conv = [&](const Shape& in, int64_t ph, int64_t pw) {
        std::vector<int64_t> a = attrs;
        a[2] = ph, a[3] = pw;
        return "(conv2d" + dims(a) + " (input x" + dims(in) + ") (input w" + dims(ws) + "))";
      };
      if ((c.kh - 1) * dh + 1 > c.h + 2 * std::max<int64_t>(c.ph, 0) && c.ph >= 0) continue;  // kernel too large
      const Tensor<float> want = eval_term(conv(xs, c.ph, c.pw), {{"x", x}, {"w", w}});
      const ConvPlan p = plan_conv2d(attrs, xs, ws, want.shape);
      EXPECT_EQ(p.groups, 2);
      Tensor<float> got = want;
      if (p.window.explicit_pad) {
        ++explicit_cases;
        const Tensor<float> padded({xs[0], xs[1], p.pad.out_h, p.pad.out_w}, run_pad2d_host(p.pad, x.data));
        got = eval_term(conv(padded.shape, 0, 0), {{"x", padded}, {"w", w}});
      } else {
        got = eval_term(conv(xs, p.window.pad_h, p.window.pad_w), {{"x", x}, {"w", w}});
      }
      EXPECT_EQ(got.shape, want.shape);
      EXPECT_TRUE(close(got.data, want.data, 1e-5f, 1e-5f)) << "window " << c.h << "x" << c.w << " k" << c.kh;
    }
  EXPECT_GT(explicit_cases, 0) << "no case exercised the explicit padding path";
}

TEST(GpuPlan, PoolingMatchesEvaluatorBothWays) {
  for (const WindowCase& c : kWindows)
    for (int mode = 0; mode < 3; ++mode) {
      if (c.kh <= std::max<int64_t>(c.ph, 0) || c.kw <= std::max<int64_t>(c.pw, 0)) continue;
      const Shape xs = {2, 3, c.h, c.w};
      const Tensor<float> x = random_tensor(xs, 9);
      auto pool = [&](int64_t ph, int64_t pw) {
        const std::string head = mode == 0 ? "(maxpool " : "(avgpool ";
        std::string t = head + std::to_string(c.kh) + " " + std::to_string(c.kw) + " " + std::to_string(c.sh) + " " +
                        std::to_string(c.sw) + " " + std::to_string(ph) + " " + std::to_string(pw);
        if (mode > 0) t += mode == 1 ? " 1" : " 0";
        return t + " (input x" + dims(xs) + "))";
      };
      const Tensor<float> want = eval_term(pool(c.ph, c.pw), {{"x", x}});
      std::vector<int64_t> attrs = {c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, mode == 1 ? 1 : 0};
      // The direct kernel's plan, always usable:
      EXPECT_TRUE(close(run_pool_host(plan_pool_direct(mode == 0, attrs, xs, want.shape), x.data), want.data, 1e-6f,
                        1e-6f))
          << pool(c.ph, c.pw);
      // What cuDNN gets when the padding is symmetric:
      const WindowPlan w = plan_window(xs, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, want.shape[2], want.shape[3]);
      if (!w.explicit_pad) {
        EXPECT_TRUE(close(eval_term(pool(w.pad_h, w.pad_w), {{"x", x}}).data, want.data, 1e-6f, 1e-6f))
            << pool(c.ph, c.pw);
      }
    }
}

TEST(GpuPlan, EnlargeIsACentredPaddedCopy) {
  for (auto [from, to] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {3, 5}, {3, 3}, {1, 7}}) {
    const Shape ws = {4, 3, from, from};
    const Tensor<float> w = random_tensor(ws, 12);
    const Tensor<float> want =
        eval_term("(enlarge " + std::to_string(to) + " " + std::to_string(to) + " (input w" + dims(ws) + "))",
                  {{"w", w}});
    const std::vector<int64_t> attrs = {to, to};
    EXPECT_TRUE(close(run_pad2d_host(plan_enlarge(attrs, ws), w.data), want.data, 0, 0)) << from << "->" << to;
  }
}

TEST(GpuPlan, WindowDecisions) {
  // SAME with stride 2 on an even extent needs padding only at the end: cuDNN cannot say that.
  EXPECT_TRUE(plan_window({1, 1, 8, 8}, 3, 3, 2, 2, -1, -1, 4, 4).explicit_pad);
  const WindowPlan sym = plan_window({1, 1, 8, 8}, 3, 3, 1, 1, -1, -1, 8, 8);
  EXPECT_FALSE(sym.explicit_pad);
  EXPECT_EQ(sym.pad_h, 1);
  EXPECT_EQ(sym.pad_w, 1);
}

}  // namespace
}  // namespace teq::gpu

#endif  // TEQ_HAVE_CUDA
