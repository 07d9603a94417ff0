// infer_shape and try_infer_shape run each operator's one shape rule (rules/shape_rules.h) through two
// dimension policies (rules/dims.h). For every operator of the vocabulary (all_ops(), so a new one is covered
// without a change here), on random operand shapes and attribute lists, fitting and not: try_infer_shape
// answers nullopt exactly where infer_shape throws ShapeError, and the same shape everywhere else. And the third
// policy (SymbolicDims): the rule run over dimension terms at the operands' ranks, evaluated at the operands,
// accepts exactly where try_infer_shape does and gives the same shape.
#include "rules/rank_signature.h"
#include "rules/semantics.h"
#include "rules/symbolic_dims.h"

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

/// The symbolic rule's verdict and shape at concrete operands: nullopt where it refused the ranks or
/// attributes, or where one of its recorded conditions is false there.
std::optional<Shape> evaluated_symbolic_shape(const OpInfo& info, const std::vector<int64_t>& attrs,
                                              const std::vector<Shape>& in, bool& refused_by_ranks) {
  SymbolicArena arena;
  std::vector<size_t> ranks;
  for (const Shape& s : in) ranks.push_back(s.size());
  const std::optional<SymbolicShape> sym = symbolic_shape(arena, info.kind, attrs, ranks);
  refused_by_ranks = !sym;
  if (!sym) return std::nullopt;
  for (const SymCond& c : sym->conditions)
    if (evaluate(arena, c.id, in) == 0) return std::nullopt;
  Shape out;
  for (const SymDim& d : sym->dims) out.push_back(evaluate(arena, d.id, in));
  return out;
}

TEST(ShapePolicy, SymbolicShapeAtTheOperandsIsTryInferShapeForEveryOperator) {
  constexpr int kCasesPerOperator = 8000;
  CaseGenerator gen(20261203);
  for (const OpInfo& info : all_ops()) {
    if (is_leaf(info.kind)) continue;
    int fits = 0, refused_by_ranks = 0, refused_by_dims = 0;
    for (int round = 0; round < kCasesPerOperator; ++round) {
      const std::vector<Shape> in = gen.operands(info);
      const std::vector<int64_t> attrs = gen.attrs(info, in);
      const std::optional<Shape> concrete = try_infer_shape(info.kind, attrs, in);
      bool by_ranks = false;
      const std::optional<Shape> symbolic = evaluated_symbolic_shape(info, attrs, in, by_ranks);
      ASSERT_EQ(symbolic.has_value(), concrete.has_value())
          << describe(info, attrs, in) << ": try_infer_shape " << (concrete ? "accepts" : "refuses")
          << ", the symbolic rule " << (symbolic ? "accepts" : by_ranks ? "refuses the ranks" : "refuses the dims");
      if (symbolic) {
        ASSERT_EQ(*symbolic, *concrete) << describe(info, attrs, in);
        ++fits;
      } else {
        ++(by_ranks ? refused_by_ranks : refused_by_dims);
      }
    }
    EXPECT_GT(fits, 0) << info.name;
    EXPECT_GT(refused_by_ranks + refused_by_dims, 0) << info.name;
  }
}

TEST(ShapePolicy, SymbolicShapesFoldWhatTheAttributesDecide) {
  SymbolicArena arena;
  // conv2d stride 1, same padding: the output's spatial extents are the image's own terms; its channels the
  // kernel's count; the channel check is recorded, not decided.
  const std::vector<size_t> ranks = {4, 4};
  const std::vector<int64_t> conv = {1, 1, -1, -1, 0};
  const auto c = symbolic_shape(arena, OpKind::Conv2d, conv, ranks);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->dims.size(), 4u);
  EXPECT_EQ(c->dims[0].id, arena.operand(0, 0));
  EXPECT_EQ(c->dims[1].id, arena.operand(1, 0));
  EXPECT_EQ(c->dims[2].id, arena.operand(0, 2));
  EXPECT_EQ(c->dims[3].id, arena.operand(0, 3));
  EXPECT_FALSE(c->conditions.empty());
  // Ranks the rule refuses: no shape at all.
  const std::vector<size_t> matrix = {2, 4};
  EXPECT_FALSE(symbolic_shape(arena, OpKind::Conv2d, conv, matrix));
  const std::vector<size_t> unequal = {2, 3};
  EXPECT_FALSE(symbolic_shape(arena, OpKind::EwAdd, {}, unequal));
  EXPECT_EQ(symbolic_rank(OpKind::Matmul, std::vector<int64_t>{0}, unequal), 3u);
  EXPECT_EQ(symbolic_rank(OpKind::Matmul, std::vector<int64_t>{0}, std::vector<size_t>{1, 2}), std::nullopt);
}

// Rank signatures are read off the shape rules; these are the facts the rank solvers relied on when they
// were written out per operator (verify/shape_assign.cpp before 2026-12-02).
TEST(RankSignature, ReadOffTheShapeRules) {
  const RankSignature& add = rank_signature(OpKind::EwAdd, {}, 2);
  ASSERT_TRUE(add.accepts);
  EXPECT_EQ(add.equal_operands, (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(add.output_equals, 0u);
  EXPECT_FALSE(add.output_fixed);

  const RankSignature& smul = rank_signature(OpKind::Smul, {}, 2);
  EXPECT_EQ(smul.operands[1].fixed, 0);
  EXPECT_FALSE(smul.operands[0].fixed);
  EXPECT_TRUE(smul.output_may_equal.empty());  // the scalar's rank says nothing about the output's

  const std::vector<int64_t> no_activation = {0};
  const RankSignature& mm = rank_signature(OpKind::Matmul, no_activation, 2);
  EXPECT_EQ(mm.operands[0].at_least, 2);
  EXPECT_EQ(mm.operands[1].at_least, 2);
  EXPECT_EQ(mm.output_at_least, 2);
  EXPECT_FALSE(mm.output_equals);
  EXPECT_EQ(mm.output_may_equal, (std::vector<size_t>{0, 1}));

  const std::vector<int64_t> conv = {1, 1, -1, -1, 0};
  const RankSignature& c = rank_signature(OpKind::Conv2d, conv, 2);
  EXPECT_EQ(c.operands[0].fixed, 4);
  EXPECT_EQ(c.operands[1].fixed, 4);
  EXPECT_EQ(c.output_fixed, 4);

  const std::vector<int64_t> axis2 = {2};
  const RankSignature& cat = rank_signature(OpKind::Concat, axis2, 3);
  EXPECT_EQ(cat.operands[2].at_least, 3);
  EXPECT_EQ(cat.equal_operands.size(), 3u);

  // Beyond three operands the sampled tuples still find batchnorm's: x of rank >= 2, four vectors.
  const RankSignature& bn = rank_signature(OpKind::BatchNorm, {}, 5);
  ASSERT_TRUE(bn.accepts);
  EXPECT_EQ(bn.operands[0].at_least, 2);
  for (size_t k = 1; k < 5; ++k) EXPECT_EQ(bn.operands[k].fixed, 1);
  EXPECT_EQ(bn.output_equals, 0u);

  // Attributes no rank fits (a transpose that is no permutation): accepts nothing.
  const std::vector<int64_t> not_a_permutation = {0, 0};
  EXPECT_FALSE(rank_signature(OpKind::Transpose, not_a_permutation, 1).accepts);
}

TEST(ShapePolicy, LeavesHaveNoShapeRuleEitherWay) {
  EXPECT_THROW(try_infer_shape(OpKind::Var, {}, {}), std::logic_error);
  EXPECT_THROW(try_infer_shape(OpKind::Weight, {}, {}), std::logic_error);
  SymbolicArena arena;
  EXPECT_THROW(symbolic_shape(arena, OpKind::Input, {}, std::span<const size_t>{}), std::logic_error);
}

}  // namespace
}  // namespace teq
