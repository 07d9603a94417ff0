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
  uint64_t dropped_before = 0, dropped = 0, capped = 0;
  const auto before = drop_renamings(collect_equations(e), dropped_before);
  const auto now = collect_unique_equations(e, 0, dropped, capped);
  ASSERT_GT(before.size(), 100u);
  EXPECT_EQ(texts(now), texts(before));
  EXPECT_EQ(dropped, dropped_before);
  EXPECT_EQ(capped, 0u);
}

TEST(Candidates, CapKeepsAFixedSampleOfTheLastSize) {
  const Enumeration e = small_enumeration();
  uint64_t dropped = 0, capped = 0;
  const auto all = texts(collect_unique_equations(e, 0, dropped, capped));
  const int last = e.levels.back().level;
  const size_t cap = all.size() / 3;
  uint64_t dropped_capped = 0, capped_count = 0;
  const auto some = texts(collect_unique_equations(e, cap, dropped_capped, capped_count));
  EXPECT_GT(capped_count, 0u);
  EXPECT_EQ(some.size() + capped_count, all.size());
  EXPECT_EQ(dropped_capped, dropped);  // renamings are dropped as before, capped or not
  EXPECT_TRUE(is_subsequence(some, all));
  // Everything below the last size is kept.
  Enumeration smaller = e;
  std::erase_if(smaller.equations, [&](const Equation& q) { return q.size == last; });
  uint64_t d2 = 0, c2 = 0;
  const auto below = texts(collect_unique_equations(smaller, 0, d2, c2));
  ASSERT_FALSE(below.empty());
  EXPECT_TRUE(is_subsequence(below, some));
  // Of the last size exactly `cap`: the rest of `some`.
  EXPECT_EQ(some.size() - below.size(), cap);
  // The same sample again (no dependence on anything but the equations).
  uint64_t d3 = 0, c3 = 0;
  EXPECT_EQ(texts(collect_unique_equations(e, cap, d3, c3)), some);
  EXPECT_EQ(c3, capped_count);
}

}  // namespace
}  // namespace teq::synth
