// The element normal form (verify/normal_form.h): equal forms must mean equal terms, and the max
// flattening must close the pooling and relu identities it is there for, without a solver.
#include <gtest/gtest.h>

#include "verify/normal_form.h"
#include "verify/z3_arith.h"

namespace teq {
namespace {

TEST(NormalForm, MaxIsComparedAsASetOfArguments) {
  z3::context ctx;
  Arith<z3::expr> ar(ctx);
  NormalForm nf(ctx);
  z3::expr a = ctx.real_const("a"), b = ctx.real_const("b"), c = ctx.real_const("c");
  // Associative, commutative, idempotent: nested windows of a pooling of a pooling.
  EXPECT_TRUE(z3::eq(nf.of(ar.max(ar.max(a, b), ar.max(b, c))), nf.of(ar.max(c, ar.max(a, b)))));
  EXPECT_TRUE(z3::eq(nf.of(ar.max(a, a)), nf.of(a)));
  // relu of a max is the max of the relus.
  EXPECT_TRUE(z3::eq(nf.of(relu(ar, ar.max(a, b))), nf.of(ar.max(relu(ar, a), relu(ar, b)))));
  // Different sets stay different (equality of forms is only ever used as a proof).
  EXPECT_FALSE(z3::eq(nf.of(ar.max(a, b)), nf.of(ar.max(a, c))));
  EXPECT_FALSE(z3::eq(nf.of(relu(ar, a)), nf.of(a)));
}

TEST(NormalForm, ReluOfANonNegativeTermIsTheTerm) {
  z3::context ctx;
  Arith<z3::expr> ar(ctx);
  NormalForm nf(ctx);
  z3::expr x = ctx.real_const("x"), w = ctx.real_const("w"), y = ctx.real_const("y"), v = ctx.real_const("v");
  // A convolution of relus is non-negative, so a fused relu after it changes nothing.
  z3::expr sum = relu(ar, x) * relu(ar, w) + relu(ar, y) * relu(ar, v);
  EXPECT_TRUE(z3::eq(nf.of(relu(ar, sum)), nf.of(sum)));
  EXPECT_TRUE(z3::eq(nf.of(relu(ar, x * x)), nf.of(x * x)));
  // Not for a term of unknown sign.
  EXPECT_FALSE(z3::eq(nf.of(relu(ar, x * w)), nf.of(x * w)));
  EXPECT_FALSE(z3::eq(nf.of(relu(ar, relu(ar, x) - relu(ar, w))), nf.of(relu(ar, x) - relu(ar, w))));
}

}  // namespace
}  // namespace teq
