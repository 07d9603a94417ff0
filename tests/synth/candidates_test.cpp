// collect_unique_equations (synth/candidates.h): the same candidates as collect_equations then
// drop_renamings, and its count cap on the last size's candidates.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "rules/sexpr.h"
#include "synth/candidates.h"
#include "synth/enumerate.h"

namespace teq::synth {
namespace {

std::vector<std::string> texts(const std::vector<PatternEquation>& eqs) {
  std::vector<std::string> out;
  for (const PatternEquation& q : eqs)
    out.push_back(std::string(q.bound ? "B " : "U ") + to_sexpr(q.lhs, q.lhs.root()) + " = " +
                  to_sexpr(q.rhs, q.rhs.root()) + " #" + std::to_string(q.size));
  return out;
}

bool is_subsequence(const std::vector<std::string>& part, const std::vector<std::string>& whole) {
  size_t j = 0;
  for (size_t i = 0; i < whole.size() && j < part.size(); ++i) j += whole[i] == part[j];
  return j == part.size();
}

Enumeration small_enumeration() {
  const Vocabulary vocab = make_vocabulary({"matmul", "ewadd", "concat", "split", "relu"}, default_leaf_types(2));
  return enumerate_terms(vocab, {.max_ops = 3, .max_inputs = 3, .threads = 2});
}

TEST(Candidates, CollectUniqueIsCollectThenDropRenamings) {
  const Enumeration e = small_enumeration();
  const Pruned<PatternEquation> before = drop_renamings(collect_equations(e));
  const UniqueEquations now = collect_unique_equations(e, 0);
  ASSERT_GT(before.kept.size(), 100u);
  EXPECT_EQ(texts(now.equations), texts(before.kept));
  EXPECT_EQ(now.renamings, before.dropped);
  EXPECT_EQ(now.capped, 0u);
}

TEST(Candidates, CapKeepsAFixedSampleOfTheLastSize) {
  const Enumeration e = small_enumeration();
  const UniqueEquations whole = collect_unique_equations(e, 0);
  const auto all = texts(whole.equations);
  const int last = e.levels.back().level;
  const size_t cap = all.size() / 3;
  const UniqueEquations sampled = collect_unique_equations(e, cap);
  const auto some = texts(sampled.equations);
  EXPECT_GT(sampled.capped, 0u);
  EXPECT_EQ(some.size() + sampled.capped, all.size());
  EXPECT_EQ(sampled.renamings, whole.renamings);  // renamings are dropped as before, capped or not
  EXPECT_TRUE(is_subsequence(some, all));
  // Everything below the last size is kept.
  Enumeration smaller = e;
  std::erase_if(smaller.equations, [&](const Equation& q) { return q.size == last; });
  const auto below = texts(collect_unique_equations(smaller, 0).equations);
  ASSERT_FALSE(below.empty());
  EXPECT_TRUE(is_subsequence(below, some));
  // Of the last size exactly `cap`: the rest of `some`.
  EXPECT_EQ(some.size() - below.size(), cap);
  // The same sample again (no dependence on anything but the equations).
  const UniqueEquations again = collect_unique_equations(e, cap);
  EXPECT_EQ(texts(again.equations), some);
  EXPECT_EQ(again.capped, sampled.capped);
}

}  // namespace
}  // namespace teq::synth
