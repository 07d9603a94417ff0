// infer_shape and try_infer_shape run each operator's one shape rule (rules/shape_rules.h) through two
// dimension policies (rules/dims.h). For every operator of the vocabulary (all_ops(), so a new one is covered
// without a change here), on random operand shapes and attribute lists, fitting and not: try_infer_shape
// answers nullopt exactly where infer_shape throws ShapeError, and the same shape everywhere else.
#include "rules/semantics.h"

#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <random>
#include <sstream>

namespace teq {
namespace {

/// Random operands and attributes for an operator, biased towards cases that fit (operands that repeat or
/// cut the first one's dimensions, the operator's own counts, attributes taken from the dimensions) so that
/// every rule's accepting path is met as well as each of its checks.
class CaseGenerator {
 public:
  explicit CaseGenerator(uint64_t seed) : rng_(seed) {}

  std::vector<Shape> operands(const OpInfo& info) {
    const int max = info.max_children == kVariadic ? info.min_children + 3 : info.max_children;
    int n = static_cast<int>(uniform(info.min_children, max));
    if (percent(10)) n = info.min_children - 1;  // too few
    if (percent(10)) n = max + 1;                // too many
    std::vector<Shape> in;
    for (int k = 0; k < std::max(n, 0); ++k) in.push_back(k == 0 ? random_shape() : related_to(in));
    return in;
  }

  std::vector<int64_t> attrs(const OpInfo& info, const std::vector<Shape>& in) {
    int64_t n = info.num_attrs;
    if (info.optional_attrs > 0 && percent(30)) n += info.optional_attrs;
    if (info.num_attrs == kVariadic) n = percent(20) && !in.empty() ? 2 * in[0].size() : uniform(0, 7);
    if (percent(15)) n = std::max<int64_t>(n + (percent(50) ? 1 : -1), 0);  // a wrong count
    std::vector<int64_t> out;
    for (int64_t k = 0; k < n; ++k) out.push_back(attribute(in));
    return out;
  }

 private:
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool percent(int p) { return uniform(0, 99) < p; }

  Shape random_shape() {
    Shape s(static_cast<size_t>(uniform(0, 5)));
    for (int64_t& d : s) d = uniform(1, 6);
    return s;
  }

  /// A later operand: the one before it again, the first one again (perhaps one dimension off), one of the
  /// first one's dimensions alone (a batchnorm statistic: its channels half the time), the first one's rank,
  /// or anything.
  Shape related_to(const std::vector<Shape>& in) {
    const Shape& first = in.front();
    const int64_t kind = uniform(0, 99);
    if (kind < 30) return in.back();
    if (kind < 65) {
      Shape s = first;
      if (!s.empty() && percent(30)) s[index_into(s)] = uniform(1, 6);
      return s;
    }
    if (kind < 80 && !first.empty()) return {first.size() >= 2 && percent(50) ? first[1] : first[index_into(first)]};
    Shape s = random_shape();
    if (kind < 90) s.resize(first.size(), 1);
    return s;
  }

  size_t index_into(const Shape& s) { return static_cast<size_t>(uniform(0, static_cast<int64_t>(s.size()) - 1)); }

  /// Mostly small values (axes, counts, codes, dimensions), some taken from the first operand, some at or
  /// past the rules' limits.
  int64_t attribute(const std::vector<Shape>& in) {
    static constexpr std::array<int64_t, 12> kEdges = {
        -1, 62, 63, int64_t{1} << 20, (int64_t{1} << 20) + 1, int64_t{1} << 30, (int64_t{1} << 30) + 1,
        kMaxElements, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
        -(int64_t{1} << 30), 3};
    const int64_t kind = uniform(0, 99);
    if (kind < 15 && !in.empty() && !in[0].empty()) return in[0][index_into(in[0])];
    if (kind < 25) return uniform(0, 1);
    if (kind < 35) return kEdges[static_cast<size_t>(uniform(0, kEdges.size() - 1))];
    if (kind < 65) return uniform(1, 3);  // a kernel, a stride, a count that fits the small dimensions
    return uniform(-2, 7);
  }

  std::mt19937_64 rng_;
};

std::string describe(const OpInfo& info, const std::vector<int64_t>& attrs, const std::vector<Shape>& in) {
  std::ostringstream out;
  out << info.name << " attrs " << to_string(attrs) << " operands";
  for (const Shape& s : in) out << " " << to_string(s);
  return out.str();
}

TEST(ShapePolicy, TryInferShapeAgreesWithInferShapeForEveryOperator) {
  constexpr int kCasesPerOperator = 8000;
  CaseGenerator gen(20261202);
  for (const OpInfo& info : all_ops()) {
    if (is_leaf(info.kind)) continue;
    int fits = 0, refusals = 0;
    for (int round = 0; round < kCasesPerOperator; ++round) {
      const std::vector<Shape> in = gen.operands(info);
      const std::vector<int64_t> attrs = gen.attrs(info, in);
      std::optional<Shape> thrown_or;  // infer_shape's answer; nullopt where it threw ShapeError
      try {
        thrown_or = infer_shape(info.kind, attrs, in);
      } catch (const ShapeError&) {
      }
      const std::optional<Shape> tried = try_infer_shape(info.kind, attrs, in);
      ASSERT_EQ(tried.has_value(), thrown_or.has_value())
          << describe(info, attrs, in) << ": infer_shape " << (thrown_or ? "accepts" : "refuses")
          << ", try_infer_shape " << (tried ? "accepts" : "refuses");
      if (tried) {
        ASSERT_EQ(*tried, *thrown_or) << describe(info, attrs, in);
        ++fits;
      } else {
        ++refusals;
      }
    }
    // Both paths of every rule were compared, not only its refusals.
    EXPECT_GT(fits, 0) << info.name;
    EXPECT_GT(refusals, 0) << info.name;
  }
}

TEST(ShapePolicy, LeavesHaveNoShapeRuleEitherWay) {
  EXPECT_THROW(try_infer_shape(OpKind::Var, {}, {}), std::logic_error);
  EXPECT_THROW(try_infer_shape(OpKind::Weight, {}, {}), std::logic_error);
}

}  // namespace
}  // namespace teq
