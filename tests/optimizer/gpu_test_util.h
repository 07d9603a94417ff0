// Helpers shared by the GPU tests: reproducible random leaf values and a tolerance comparison.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq::gpu_test {

/// Uniform values in [lo, hi), reproducible per seed.
inline Tensor<float> random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor<float> t(shape, 0.0f);
  for (float& v : t.data) v = dist(rng);
  return t;
}

/// Values for every leaf of `g`. Leaves named p* get positive values (divisors, variances), the rest
/// span both signs so that relu and max pooling see negatives.
inline std::map<std::string, Tensor<float>> random_leaves(const Expr& g, uint32_t seed = 11) {
  std::map<std::string, Tensor<float>> leaves;
  for (const ExprNode& n : g.nodes()) {
    if (!is_leaf(n.op) || leaves.count(n.name)) continue;
    const bool positive = !n.name.empty() && n.name[0] == 'p';
    leaves.emplace(n.name, random_tensor(n.attrs, seed++, positive ? 0.5f : -1.0f, positive ? 1.5f : 1.0f));
  }
  return leaves;
}

/// |a - b| <= atol + rtol * |b| element by element, reporting the first offending index.
inline ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, float atol,
                                        float rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  return ::testing::AssertionSuccess();
}

}  // namespace teq::gpu_test
