// The dimension policies of rules/dims.h: the throwing one reports shape_check's messages, the checking one
// only a flag, and a rule written once over them accepts and rejects the same cases.
#include "rules/dims.h"

#include <gtest/gtest.h>

#include <random>

namespace teq {
namespace {

/// A toy rule in the style of rules/ops: equal shapes, then the given axis doubled.
template <class P>
typename P::Shape doubled_axis(P& p, int64_t axis, typename P::Shapes in) {
  TEQ_REQUIRE(p, same_shape(p, in[0], in[1]), "toy", "operands must have equal shapes");
  const int64_t a = normalize_axis(p, axis, in[0].size(), "toy");
  TEQ_PROPAGATE(p);
  typename P::Shape out = in[0];
  out[a] = out[a] + in[1][a];
  TEQ_REQUIRE(p, p.product(out) <= p.k(kMaxElements), "toy", "result of " + P::text(out[a]) + " too large");
  return out;
}

std::string message_of(int64_t axis, const std::vector<Shape>& in) {
  try {
    ThrowingDims p(in);
    doubled_axis(p, axis, std::span<const Shape>(in));
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(Dims, ThrowingPolicyKeepsShapeCheckMessages) {
  EXPECT_EQ(message_of(0, {{2, 3}, {2, 4}}), "toy: operands must have equal shapes (input shapes [2,3], [2,4])");
  EXPECT_EQ(message_of(2, {{2, 3}, {2, 3}}), "toy: axis 2 out of range for rank 2 (input shapes [2,3], [2,3])");
  EXPECT_EQ(message_of(-1, {{2, 3}, {2, 3}}), "");
  // The generic normalize_axis says what the concrete one (rules/shape.h) says.
  try {
    normalize_axis(5, 3, "x", {});
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "x: axis 5 out of range for rank 3 (input shapes )");
  }
  EXPECT_EQ(message_of(5, {{1, 1, 1}, {1, 1, 1}}), "toy: axis 5 out of range for rank 3 (input shapes [1,1,1], [1,1,1])");
}

TEST(Dims, CheckingPolicyAgreesWithThrowingOnRandomShapes) {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<int64_t> dim(1, 4), rank(0, 3), axis(-4, 4);
  for (int round = 0; round < 2000; ++round) {
    std::vector<Shape> in(2);
    for (Shape& s : in) s.assign(static_cast<size_t>(rank(rng)), 1);
    if (rng() % 2) in[1].resize(in[0].size());
    for (Shape& s : in)
      for (int64_t& d : s) d = dim(rng);
    if (rng() % 2) in[1] = in[0];
    const int64_t ax = axis(rng);
    CheckingDims c;
    const Shape got = doubled_axis(c, ax, std::span<const Shape>(in));
    std::optional<Shape> want;
    try {
      ThrowingDims t(in);
      want = doubled_axis(t, ax, std::span<const Shape>(in));
    } catch (const ShapeError&) {
    }
    ASSERT_EQ(!c.failed, want.has_value()) << round;
    if (want) {
      EXPECT_EQ(got, *want);
    }
  }
}

}  // namespace
}  // namespace teq
