// The fast reference path (optimizer/onnx/fast_eval.h) against the operators' one definition
// (evaluate_op, rules/semantics.h): every operator of rules/op_list.inc on random small shapes, in double
// and float; convolutions grouped, strided, dilated, padded (SAME included) with every fused activation; batched
// and broadcast matmuls; and whole graphs (intermediates freed, several roots, progress).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>

#include "optimizer/onnx/fast_eval.h"
#include "rules/evaluator.h"
#include "rules/float_types.h"
#include "rules/sexpr.h"

namespace teq::onnx_io {
namespace {

using Rng = std::mt19937_64;

int64_t rnd(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

Shape random_shape(Rng& rng, size_t rank, int64_t lo = 1, int64_t hi = 4) {
  Shape s(rank);
  for (int64_t& d : s) d = rnd(rng, lo, hi);
  return s;
}

/// One application of an operator: attributes and operand shapes.
struct Case {
  std::vector<int64_t> attrs;
  std::vector<Shape> shapes;
};

/// A random case of `op`, possibly ill-shaped (the caller keeps those infer_shape accepts); nullopt for
/// an operator this test has no generator for, which fails the test: a new operator needs a case here.
std::optional<Case> random_case(OpKind op, Rng& rng) {
  const size_t rank = static_cast<size_t>(rnd(rng, 1, 4));
  const Shape s = random_shape(rng, rank);
  const int64_t act = rnd(rng, 0, 3);
  if (is_elementwise(op) && op_info(op).num_attrs == 0) {  // operands of one shape, but smul's 0-d scalar
    Case c{{}, std::vector<Shape>(static_cast<size_t>(op_info(op).min_children), s)};
    if (op == OpKind::Smul) c.shapes.back() = {};
    return c;
  }
  switch (op) {
    case OpKind::GlobalAvgPool:  // needs rank 4: the others are rejected by its shape rule
    case OpKind::Ones:
    case OpKind::Eye: return Case{{}, {s}};
    case OpKind::Clip: {
      // ReLU6, [-1/2, 5/4], an upper bound only, a lower bound only.
      static const std::vector<std::vector<int64_t>> kBounds = {{0, 0, 6, 0}, {-1, 1, 5, 2}, {0, -1, 1, 2}, {-3, 2, 0, -1}};
      return Case{kBounds[static_cast<size_t>(rnd(rng, 0, 3))], {s}};
    }
    case OpKind::Cast: {
      static const std::vector<int64_t> kTargets = {kFloat32Type, kFloat16Type, kBFloat16Type};
      return Case{{kTargets[static_cast<size_t>(rnd(rng, 0, 2))]}, {s}};
    }
    case OpKind::ReduceMean: {
      Case c{{rnd(rng, 0, 1)}, {s}};
      for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
        if (rnd(rng, 0, 1)) c.attrs.push_back(d);
      if (c.attrs.size() == 1) c.attrs.push_back(rnd(rng, 0, static_cast<int64_t>(rank) - 1));
      return c;
    }
    case OpKind::Pad: {
      Case c{{}, {s}};
      for (size_t k = 0; k < 2 * rank; ++k) c.attrs.push_back(rnd(rng, 0, 2));
      return c;
    }
    case OpKind::Broadcast: {
      // A suffix of the target with some dimensions 1.
      Shape in(s.end() - rnd(rng, 0, static_cast<int64_t>(rank)), s.end());
      for (int64_t& d : in)
        if (rnd(rng, 0, 1)) d = 1;
      return Case{s, {in}};
    }
    case OpKind::Noop: {
      Case c;
      for (int64_t k = rnd(rng, 1, 3); k-- > 0;) c.shapes.push_back(random_shape(rng, rank));
      return c;
    }
    case OpKind::Matmul: {
      const int64_t m = rnd(rng, 1, 5), k = rnd(rng, 1, 5), n = rnd(rng, 1, 5);
      const Shape batch = random_shape(rng, static_cast<size_t>(rnd(rng, 0, 2)), 1, 3);
      auto operand = [&](int64_t r, int64_t c) {  // a suffix of the batch, dims randomly broadcast
        Shape t(batch.end() - rnd(rng, 0, static_cast<int64_t>(batch.size())), batch.end());
        for (int64_t& d : t)
          if (rnd(rng, 0, 2) == 0) d = 1;
        t.push_back(r);
        t.push_back(c);
        return t;
      };
      return Case{{act}, {operand(m, k), operand(k, n)}};
    }
    case OpKind::Conv2d: {
      const int64_t groups = rnd(rng, 1, 3), per_group = rnd(rng, 1, 3), kh = rnd(rng, 1, 3), kw = rnd(rng, 1, 3);
      std::vector<int64_t> attrs{rnd(rng, 1, 2), rnd(rng, 1, 2), rnd(rng, -1, 1), rnd(rng, -1, 1), act};
      if (rnd(rng, 0, 1)) {  // dilated: the canonical form writes dilations only when one is not 1
        const int64_t dh = rnd(rng, 1, 3), dw = dh == 1 ? rnd(rng, 2, 3) : rnd(rng, 1, 3);
        attrs.insert(attrs.end(), {dh, dw});
      }
      return Case{attrs,
                  {{rnd(rng, 1, 2), groups * per_group, rnd(rng, 1, 9), rnd(rng, 1, 9)},
                   {groups * rnd(rng, 1, 3), per_group, kh, kw}}};
    }
    case OpKind::Enlarge: {
      const Shape w = random_shape(rng, 4, 1, 3);
      return Case{{w[2] + 2 * rnd(rng, 0, 2), w[3] + 2 * rnd(rng, 0, 2)}, {w}};
    }
    case OpKind::Merge: {
      const int64_t count = rnd(rng, 1, 3);
      return Case{{count}, {{count * rnd(rng, 1, 3), rnd(rng, 1, 3), rnd(rng, 1, 3), rnd(rng, 1, 3)}}};
    }
    case OpKind::MaxPool:
    case OpKind::AvgPool: {
      Case c{{rnd(rng, 1, 3), rnd(rng, 1, 3), rnd(rng, 1, 2), rnd(rng, 1, 2), rnd(rng, -1, 1), rnd(rng, -1, 1)},
             {random_shape(rng, 4, 1, 6)}};
      if (op == OpKind::AvgPool) c.attrs.push_back(rnd(rng, 0, 1));
      return c;
    }
    case OpKind::Concat: {
      const int64_t axis = rnd(rng, -static_cast<int64_t>(rank), static_cast<int64_t>(rank) - 1);
      const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
      Case c{{axis}, {}};
      for (int64_t k = rnd(rng, 1, 3); k-- > 0;) {
        Shape t = s;
        t[a] = rnd(rng, 1, 4);
        c.shapes.push_back(t);
      }
      return c;
    }
    case OpKind::Split: {
      const int64_t axis = rnd(rng, 0, static_cast<int64_t>(rank) - 1);
      Shape ref = random_shape(rng, static_cast<size_t>(rnd(rng, 1, 3)));
      const int64_t ref_axis = rnd(rng, 0, static_cast<int64_t>(ref.size()) - 1);
      ref[static_cast<size_t>(ref_axis)] = rnd(rng, 1, std::max<int64_t>(1, s[static_cast<size_t>(axis)] - 1));
      return Case{{axis, rnd(rng, 0, 1), ref_axis}, {s, ref}};
    }
    case OpKind::Slice: {
      const int64_t axis = rnd(rng, 0, static_cast<int64_t>(rank) - 1), d = s[static_cast<size_t>(axis)];
      const int64_t begin = rnd(rng, 0, d - 1);
      return Case{{axis, begin, rnd(rng, begin + 1, d)}, {s}};
    }
    case OpKind::Transpose: {
      std::vector<int64_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      return Case{perm, {s}};
    }
    case OpKind::Reshape: {
      Shape target(s.rbegin(), s.rend());
      if (rnd(rng, 0, 1)) target = {num_elements(s)};
      if (rnd(rng, 0, 1)) target.insert(target.begin(), 1);
      return Case{target, {s}};
    }
    case OpKind::BatchNorm: {
      const Shape x = random_shape(rng, std::max<size_t>(rank, 2));
      const Shape c{x[1]};
      return Case{{}, {x, c, c, c, c}};
    }
    case OpKind::Softmax: return Case{{rnd(rng, -static_cast<int64_t>(rank), static_cast<int64_t>(rank) - 1)}, {s}};
    case OpKind::IConv:
    case OpKind::PoolKernel: return Case{{2 * rnd(rng, 0, 2) + 1, 2 * rnd(rng, 0, 2) + 1}, {random_shape(rng, 4)}};
    case OpKind::Opaque: return Case{{0, 0, 2, 3}, {s}};
    case OpKind::Var:
    case OpKind::Input:
    case OpKind::Weight: break;
    default: break;  // the element-wise operators without attributes, above
  }
  return std::nullopt;
}

/// Random operand values; operands that must be positive (a divisor, a batchnorm variance, a square root's)
/// stay in [0.5, 1.5].
template <class S>
std::vector<Tensor<S>> random_operands(OpKind op, const std::vector<Shape>& shapes, Rng& rng) {
  std::vector<Tensor<S>> out;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const bool positive = (op == OpKind::EwDiv && k == 1) || (op == OpKind::BatchNorm && k == 4) || op == OpKind::Sqrt;
    std::uniform_real_distribution<double> u(positive ? 0.5 : -1.0, positive ? 1.5 : 1.0);
    std::vector<S> v(static_cast<size_t>(num_elements(shapes[k])));
    for (S& x : v) x = static_cast<S>(u(rng));
    out.emplace_back(shapes[k], std::move(v));
  }
  return out;
}

/// Largest |fast - generic| / (1 + |generic|) of one case, in scalar type S.
template <class S>
double max_error(OpKind op, const Case& c, const Shape& out_shape, Rng& rng) {
  std::vector<Tensor<S>> operands = random_operands<S>(op, c.shapes, rng);
  std::vector<const Tensor<S>*> args;
  for (const Tensor<S>& t : operands) args.push_back(&t);
  const Tensor<S> want = evaluate_op<S>(Arith<S>{}, op, c.attrs, args, out_shape);
  const Tensor<S> got = evaluate_op_fast<S>(op, c.attrs, args, out_shape);
  EXPECT_EQ(got.shape, want.shape);
  if (got.data.size() != want.data.size()) return INFINITY;
  double err = 0;
  for (size_t i = 0; i < want.data.size(); ++i)
    err = std::max(err, std::fabs(double(got.data[i]) - double(want.data[i])) / (1 + std::fabs(double(want.data[i]))));
  return err;
}

std::string describe(OpKind op, const Case& c) {
  std::string s = std::string(op_name(op)) + " attrs " + to_string(c.attrs) + " on";
  for (const Shape& sh : c.shapes) s += " " + to_string(sh);
  return s;
}

/// Checks one case in double and float; false when its shapes are ill-formed (not a case).
bool check_case(OpKind op, const Case& c, Rng& rng) {
  Shape out_shape;
  try {
    out_shape = infer_shape(op, c.attrs, c.shapes);
  } catch (const ShapeError&) {
    return false;
  }
  EXPECT_LE(max_error<double>(op, c, out_shape, rng), 1e-12) << describe(op, c);
  EXPECT_LE(max_error<float>(op, c, out_shape, rng), 1e-5) << describe(op, c);
  return true;
}

TEST(FastEval, EveryOperatorAgreesWithTheDefinition) {
  Rng rng(17);
  for (const OpInfo& info : all_ops()) {
    if (is_leaf(info.kind)) continue;
    if (info.kind == OpKind::Opaque) {
      // No value in any strategy: both refuse the same way.
      const Tensor<double> x(Shape{2}, 1.0);
      const std::vector<const Tensor<double>*> args{&x};
      const std::vector<int64_t> attrs{0, 0, 2};
      EXPECT_THROW(evaluate_op<double>(Arith<double>{}, info.kind, attrs, args, {2}), ShapeError);
      EXPECT_THROW(evaluate_op_fast<double>(info.kind, attrs, args, {2}), ShapeError);
      continue;
    }
    int accepted = 0;
    for (int tries = 0; tries < 3000 && accepted < 40; ++tries) {
      std::optional<Case> c = random_case(info.kind, rng);
      if (!c) break;
      accepted += check_case(info.kind, *c, rng);
    }
    EXPECT_GE(accepted, 40) << "operator " << info.name
                            << ": too few well-shaped random cases (a new operator needs a case in random_case)";
  }
}

// Every combination of groups, kernel, stride, padding (-1 = SAME), dilation and fused activation, on odd
// and even image sizes, several images; 1x1 stride-1 unpadded kernels take the path without im2col.
TEST(FastEval, Conv2dEveryVariantAgreesWithTheDefinition) {
  Rng rng(5);
  int cases = 0;
  for (int64_t groups : {1, 2, 3})
    for (auto [kh, kw] : {std::pair<int64_t, int64_t>{1, 1}, {3, 3}, {1, 3}, {2, 2}})
      for (int64_t stride : {1, 2})
        for (int64_t pad : {-1, 0, 1})
          for (auto [dh, dw] : {std::pair<int64_t, int64_t>{1, 1}, {2, 2}, {1, 3}})
            for (int64_t act = 0; act <= 3; ++act)
              for (int64_t size : {7, 8}) {
                Case c{ops::conv2d_attr_list({stride, stride == 2 ? 1 : stride, pad, pad == 1 ? 0 : pad,
                                              static_cast<Activation>(act), dh, dw}),
                       {{2, groups * 2, size, size + 1}, {groups * 3, 2, kh, kw}}};
                Shape out_shape = infer_shape(OpKind::Conv2d, c.attrs, c.shapes);
                EXPECT_LE(max_error<double>(OpKind::Conv2d, c, out_shape, rng), 1e-12) << describe(OpKind::Conv2d, c);
                EXPECT_LE(max_error<float>(OpKind::Conv2d, c, out_shape, rng), 1e-5) << describe(OpKind::Conv2d, c);
                ++cases;
              }
  EXPECT_EQ(cases, 3 * 4 * 2 * 3 * 3 * 4 * 2);
  // Images large enough that the columns are made a band of output rows at a time (2^21 elements per
  // band: 36 of the 100 rows here, then 36 and 28), padded and strided.
  for (Case c : {Case{{1, 1, -1, -1, 2}, {{1, 16, 100, 400}, {2, 16, 3, 3}}},
                 Case{{2, 1, 1, 2, 0}, {{1, 16, 200, 400}, {2, 8, 3, 3}}},
                 Case{{1, 2, -1, 1, 0, 2, 3}, {{1, 16, 100, 400}, {4, 8, 3, 3}}}}) {
    EXPECT_LE(max_error<double>(OpKind::Conv2d, c, infer_shape(OpKind::Conv2d, c.attrs, c.shapes), rng), 1e-12)
        << describe(OpKind::Conv2d, c);
  }
  // Depthwise (one channel per group), as MobileNet has it.
  Case dw{{2, 2, -1, -1, 2}, {{1, 8, 7, 7}, {8, 1, 3, 3}}};
  EXPECT_LE(max_error<double>(OpKind::Conv2d, dw, infer_shape(OpKind::Conv2d, dw.attrs, dw.shapes), rng), 1e-12);
}

TEST(FastEval, MatmulBatchesAndBroadcastsAgreeWithTheDefinition) {
  Rng rng(9);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},           {{2, 3, 4}, {4, 5}},       {{2, 3, 4}, {1, 4, 5}},    {{3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {3, 4, 2}},  {{2, 3, 3, 4}, {2, 3, 4, 2}}, {{1, 3, 4}, {2, 4, 5}}, {{1, 1}, {1, 1}}};
  for (const auto& [a, b] : cases)
    for (int64_t act = 0; act <= 3; ++act) {
      Case c{{act}, {a, b}};
      Shape out_shape = infer_shape(OpKind::Matmul, c.attrs, c.shapes);
      EXPECT_LE(max_error<double>(OpKind::Matmul, c, out_shape, rng), 1e-12) << describe(OpKind::Matmul, c);
      EXPECT_LE(max_error<float>(OpKind::Matmul, c, out_shape, rng), 1e-5) << describe(OpKind::Matmul, c);
    }
}

// A graph with shared subterms, several roots (one of them also an operand, one a leaf): the same values
// as evaluate<double>, and progress reported once per operator node.
TEST(FastEval, GraphsAgreeWithTheGenericEvaluator) {
  Expr g = parse_expr(R"(
    (let x (input x 2 4 6 6)) (let w (weight w 6 2 3 3)) (let v (weight v 8 6 1 1))
    (let c (conv2d 1 1 -1 -1 2 x w)) (let d (conv2d 2 2 1 1 0 c v))
    (let f (reshape 2 128 d)) (let m (matmul 3 f (weight m 128 5)))
    m (ewadd c c) (relu (ewadd m m)) x)");
  Rng rng(3);
  std::map<std::string, Tensor<double>> values;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"x", {2, 4, 6, 6}}, {"w", {6, 2, 3, 3}}, {"v", {8, 6, 1, 1}}, {"m", {128, 5}}})
    values.emplace(name, random_operands<double>(OpKind::Relu, {shape}, rng)[0]);
  std::map<std::string, const Tensor<double>*> leaves;
  for (const auto& [name, t] : values) leaves.emplace(name, &t);
  std::vector<std::pair<size_t, size_t>> progress;
  const auto got = evaluate_fast<double>(g, leaves, {.on_progress = [&](size_t done, size_t total) {
                                                  progress.emplace_back(done, total);
                                                },
                                                .opaque = {}});
  const auto want = evaluate<double>(g, Arith<double>{}, values);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].shape, want[k].shape) << k;
    for (size_t i = 0; i < want[k].data.size(); ++i)
      EXPECT_NEAR(got[k].data[i], want[k].data[i], 1e-12 * (1 + std::fabs(want[k].data[i]))) << k << " " << i;
  }
  ASSERT_EQ(progress.size(), g.num_ops());
  EXPECT_EQ(progress.back(), std::make_pair(g.num_ops(), g.num_ops()));
  // A missing leaf is an error, as in evaluate.
  leaves.erase("m");
  EXPECT_THROW(evaluate_fast<double>(g, leaves), ShapeError);
}

}  // namespace
}  // namespace teq::onnx_io
