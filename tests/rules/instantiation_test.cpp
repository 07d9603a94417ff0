// The three instantiations of the shared semantics agree: on the same small integer inputs,
// evaluate<ModInt> (fingerprints), evaluate<double> (reference evaluator) and evaluate<z3::expr> (verifier)
// give the same values. Z3 terms are simplified to exact rational numerals p/q; ModInt must then satisfy
// m * q == p (mod prime) and double must be close to p/q. Operators with uninterpreted functions (tanh,
// sigmoid, gelu, exp, rsqrt) are checked for determinism (ModInt) and for the function they apply (Z3).
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "rules/evaluator.h"
#include "rules/sexpr.h"
#include "verify/z3_arith.h"

namespace teq {
namespace {

struct Case {
  std::string text;                     // one pattern over ?variables
  std::map<std::string, Shape> vars;    // variables named d* get non-zero values (divisors)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.text; }

/// Small integers in [-4, 4] (non-zero for divisors), the same for every instantiation.
std::map<std::string, std::vector<int64_t>> integer_inputs(const Case& c, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-4, 4);
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, shape] : c.vars) {
    std::vector<int64_t> v(num_elements(shape));
    for (int64_t& x : v) {
      x = dist(gen);
      if (name.starts_with("d") && x == 0) x = 5;
    }
    out[name] = v;
  }
  return out;
}

template <class S, class F>
std::map<std::string, Tensor<S>> leaves_of(const Case& c, const std::map<std::string, std::vector<int64_t>>& ints,
                                           F&& make) {
  std::map<std::string, Tensor<S>> out;
  for (const auto& [name, shape] : c.vars) {
    std::vector<S> v;
    for (int64_t x : ints.at(name)) v.push_back(make(x));
    out.emplace(name, Tensor<S>(shape, std::move(v)));
  }
  return out;
}

struct Evaluations {
  Tensor<ModInt> mod;
  Tensor<double> dbl;
  Tensor<z3::expr> z3;
};

Evaluations evaluate_all(const Case& c, z3::context& ctx, unsigned seed = 1) {
  Expr e = parse_pattern(c.text);
  auto ints = integer_inputs(c, seed);
  auto mod = evaluate<ModInt>(e, Arith<ModInt>{}, leaves_of<ModInt>(c, ints, ModInt::from_int));
  auto dbl = evaluate<double>(e, Arith<double>{}, leaves_of<double>(c, ints, [](int64_t x) { return double(x); }));
  auto z = evaluate<z3::expr>(e, Arith<z3::expr>(ctx),
                              leaves_of<z3::expr>(c, ints, [&](int64_t x) { return ctx.real_val(x); }));
  return {mod.at(0), dbl.at(0), z.at(0)};
}

// ---------------------------------------------------------------------------------------------------
// Exact operators: polynomials, ratios and maxima of the inputs.

class ExactAgreement : public ::testing::TestWithParam<Case> {};

TEST_P(ExactAgreement, ModIntDoubleAndZ3GiveTheSameRationals) {
  z3::context ctx;
  Evaluations ev = evaluate_all(GetParam(), ctx);
  ASSERT_EQ(ev.mod.shape, ev.dbl.shape);
  ASSERT_EQ(ev.z3.shape, ev.dbl.shape);
  for (size_t i = 0; i < ev.dbl.data.size(); ++i) {
    z3::expr v = ev.z3.data[i].simplify();
    ASSERT_TRUE(v.is_numeral()) << "element " << i << " did not simplify to a numeral: " << v;
    const int64_t p = v.numerator().get_numeral_int64(), q = v.denominator().get_numeral_int64();
    // ModInt holds p/q as p * q^-1: multiplying back by the divisor gives the integer numerator.
    EXPECT_EQ(ev.mod.data[i] * ModInt::from_int(q), ModInt::from_int(p))
        << "element " << i << ": ModInt " << ev.mod.data[i].centred() << " vs " << p << "/" << q;
    if (q == 1) {
      EXPECT_EQ(ev.mod.data[i].centred(), p) << "element " << i;
    }
    EXPECT_NEAR(ev.dbl.data[i], double(p) / double(q), 1e-9) << "element " << i << ": " << p << "/" << q;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, ExactAgreement,
    ::testing::Values(
        Case{"(ewadd ?a ?b)", {{"a", {2, 3}}, {"b", {2, 3}}}}, Case{"(ewsub ?a ?b)", {{"a", {2, 3}}, {"b", {2, 3}}}},
        Case{"(ewmul ?a ?b)", {{"a", {2, 3}}, {"b", {2, 3}}}}, Case{"(ewdiv ?a ?d)", {{"a", {2, 3}}, {"d", {2, 3}}}},
        Case{"(smul ?a ?s)", {{"a", {2, 3}}, {"s", {}}}}, Case{"(relu ?a)", {{"a", {3, 4}}}},
        Case{"(broadcast 2 3 4 ?a)", {{"a", {3, 1}}}}, Case{"(noop ?a ?b)", {{"a", {2}}, {"b", {3}}}},
        Case{"(matmul 0 ?a ?b)", {{"a", {2, 3}}, {"b", {3, 4}}}},
        Case{"(matmul 2 ?a ?b)", {{"a", {2, 1, 2, 3}}, {"b", {3, 3, 2}}}},
        Case{"(conv2d 1 1 0 0 0 ?x ?w)", {{"x", {1, 2, 4, 4}}, {"w", {3, 2, 3, 3}}}},
        Case{"(conv2d 2 2 -1 -1 2 ?x ?w)", {{"x", {1, 2, 5, 4}}, {"w", {2, 2, 3, 3}}}},
        Case{"(conv2d 1 2 1 0 0 ?x ?w)", {{"x", {2, 4, 3, 4}}, {"w", {4, 2, 3, 1}}}},
        Case{"(enlarge 3 5 ?w)", {{"w", {2, 1, 1, 3}}}},
        Case{"(conv2d 1 1 0 0 0 ?x (merge 2 ?w))", {{"x", {1, 4, 3, 3}}, {"w", {4, 2, 2, 2}}}},
        Case{"(maxpool 2 2 2 2 -1 -1 ?x)", {{"x", {1, 2, 3, 3}}}},
        Case{"(maxpool 3 3 1 1 1 1 ?x)", {{"x", {1, 1, 3, 4}}}},
        Case{"(avgpool 3 3 1 1 1 1 0 ?x)", {{"x", {1, 2, 3, 3}}}},
        Case{"(avgpool 3 3 1 1 1 1 1 ?x)", {{"x", {1, 2, 3, 3}}}},
        Case{"(avgpool 2 2 2 2 -1 -1 0 ?x)", {{"x", {1, 1, 3, 3}}}},
        Case{"(global_avgpool ?x)", {{"x", {2, 2, 3, 2}}}},
        Case{"(concat 1 ?a ?b ?a)", {{"a", {2, 1, 2}}, {"b", {2, 3, 2}}}},
        Case{"(split 0 1 1 ?a ?r)", {{"a", {4, 2}}, {"r", {2, 3}}}},
        Case{"(slice -1 1 3 ?a)", {{"a", {2, 4}}}}, Case{"(transpose 2 0 1 ?a)", {{"a", {2, 3, 2}}}},
        Case{"(reshape 3 4 ?a)", {{"a", {2, 6}}}}, Case{"(ones ?a)", {{"a", {2, 2}}}}, Case{"(eye ?a)", {{"a", {2, 3}}}},
        Case{"(iconv 3 1 ?a)", {{"a", {1, 2, 2, 2}}}}, Case{"(pool_kernel 3 3 ?a)", {{"a", {1, 2, 2, 2}}}},
        Case{"(conv2d 1 1 -1 -1 0 ?x (pool_kernel 3 3 ?x))", {{"x", {1, 2, 3, 3}}}},
        // Integer clip bounds (ModInt compares centred representatives, meaningful for small integers).
        Case{"(clip -2 0 3 0 ?a)", {{"a", {3, 4}}}}, Case{"(clip 0 -1 1 0 ?a)", {{"a", {3, 4}}}},
        Case{"(reduce_mean 1 1 ?a)", {{"a", {2, 3}}}}, Case{"(reduce_mean 0 0 2 ?a)", {{"a", {2, 2, 3}}}},
        Case{"(pad 1 0 0 2 ?a)", {{"a", {2, 3}}}},
        // A small composition: the instantiations agree on graphs, not just single operators.
        Case{"(ewdiv (relu (matmul 0 ?a ?b)) (ewadd (ones ?d) (ewmul ?d ?d)))",
             {{"a", {2, 3}}, {"b", {3, 2}}, {"d", {2, 2}}}}));

TEST(ExactAgreement, ReluAndMaxUseTheSignOfNegativeModInts) {
  // ModInt compares centred representatives, so relu(-3) is 0, not -3 read as a huge positive number.
  Arith<ModInt> ar;
  EXPECT_EQ(relu(ar, ModInt::from_int(-3)), ModInt::from_int(0));
  EXPECT_EQ(relu(ar, ModInt::from_int(3)), ModInt::from_int(3));
  EXPECT_EQ(ar.max(ModInt::from_int(-3), ModInt::from_int(-5)), ModInt::from_int(-3));
}

// ---------------------------------------------------------------------------------------------------
// Operators with uninterpreted functions.

/// Does `e` contain an application of a function named `name`?
bool applies(const z3::expr& e, const std::string& name) {
  if (!e.is_app()) return false;
  if (e.decl().name().str() == name) return true;
  for (unsigned i = 0; i < e.num_args(); ++i)
    if (applies(e.arg(i), name)) return true;
  return false;
}

struct NonLinearCase {
  std::string text;
  std::map<std::string, Shape> vars;
  UnaryFn fn;
  std::string inner;  // when set: each output is fn(inner's output), compared exactly (empty: contains fn)
};

void PrintTo(const NonLinearCase& c, std::ostream* os) { *os << c.text; }

class UninterpretedFunctions : public ::testing::TestWithParam<NonLinearCase> {};

TEST_P(UninterpretedFunctions, ModIntIsDeterministicAndZ3AppliesTheNamedFunction) {
  const NonLinearCase& c = GetParam();
  z3::context ctx;
  const Case plain{c.text, c.vars};
  Evaluations a = evaluate_all(plain, ctx, 1), again = evaluate_all(plain, ctx, 1), other = evaluate_all(plain, ctx, 2);
  EXPECT_EQ(a.mod.data, again.mod.data) << "ModInt fingerprints must be a fixed function of the inputs";
  EXPECT_NE(a.mod.data, other.mod.data) << "different inputs should give different fingerprints";
  const std::string fn = unary_fn_name(c.fn);
  if (c.inner.empty()) {
    // An element may simplify to a numeral where the function's factor vanishes (batchnorm with scale 0),
    // but the function must show, and nothing else may stay symbolic.
    size_t with_fn = 0;
    for (size_t i = 0; i < a.z3.data.size(); ++i) {
      z3::expr v = a.z3.data[i].simplify();
      with_fn += applies(v, fn);
      EXPECT_TRUE(applies(v, fn) || v.is_numeral()) << "element " << i << ": " << v;
    }
    EXPECT_GT(with_fn, 0u) << "no element applies " << fn;
    return;
  }
  // Each element is exactly fn(v) where v is the exact value of `inner` (e.g. the matmul before its
  // fused activation), so Z3 keeps the function uninterpreted and applies it to the right argument.
  Evaluations in = evaluate_all(Case{c.inner, c.vars}, ctx, 1);
  ASSERT_EQ(in.z3.data.size(), a.z3.data.size());
  for (size_t i = 0; i < a.z3.data.size(); ++i) {
    z3::expr v = a.z3.data[i].simplify();
    ASSERT_TRUE(v.is_app() && v.num_args() == 1) << v;
    EXPECT_EQ(v.decl().name().str(), fn) << v;
    z3::expr arg = v.arg(0).simplify(), want = in.z3.data[i].simplify();
    ASSERT_TRUE(arg.is_numeral()) << arg;
    EXPECT_TRUE(z3::eq(arg, want)) << arg << " vs " << want;
  }
  // The ModInt fingerprint applies the same fixed function to the exact argument.
  Arith<ModInt> ar;
  for (size_t i = 0; i < a.mod.data.size(); ++i) EXPECT_EQ(a.mod.data[i], ar.unary(c.fn, in.mod.data[i]));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, UninterpretedFunctions,
    ::testing::Values(NonLinearCase{"(tanh ?a)", {{"a", {2, 3}}}, UnaryFn::Tanh, "(noop ?a)"},
                      NonLinearCase{"(sigmoid ?a)", {{"a", {2, 3}}}, UnaryFn::Sigmoid, "(noop ?a)"},
                      NonLinearCase{"(gelu ?a)", {{"a", {2, 3}}}, UnaryFn::Gelu, "(noop ?a)"},
                      NonLinearCase{"(sqrt ?a)", {{"a", {2, 3}}}, UnaryFn::Sqrt, "(noop ?a)"},
                      NonLinearCase{"(erf ?a)", {{"a", {2, 3}}}, UnaryFn::Erf, "(noop ?a)"},
                      NonLinearCase{"(matmul 3 ?a ?b)", {{"a", {2, 3}}, {"b", {3, 2}}}, UnaryFn::Tanh,
                                    "(matmul 0 ?a ?b)"},
                      NonLinearCase{"(matmul 1 ?a ?b)", {{"a", {2, 3}}, {"b", {3, 2}}}, UnaryFn::Sigmoid,
                                    "(matmul 0 ?a ?b)"},
                      NonLinearCase{"(conv2d 1 1 1 1 3 ?x ?w)", {{"x", {1, 2, 3, 3}}, {"w", {2, 2, 3, 3}}},
                                    UnaryFn::Tanh, "(conv2d 1 1 1 1 0 ?x ?w)"},
                      NonLinearCase{"(softmax 1 ?a)", {{"a", {2, 3}}}, UnaryFn::Exp, ""},
                      NonLinearCase{"(batchnorm ?x ?s ?b ?m ?v)",
                                    {{"x", {2, 3, 2}}, {"s", {3}}, {"b", {3}}, {"m", {3}}, {"v", {3}}},
                                    UnaryFn::Rsqrt, ""}));

TEST(UninterpretedFunctions, Z3FunctionsAreSharedWithinOneArith) {
  // tanh(x) built twice is the same term, so rules about tanh can cancel it.
  z3::context ctx;
  Arith<z3::expr> ar(ctx);
  z3::expr x = ctx.real_const("x");
  EXPECT_TRUE(z3::eq(ar.unary(UnaryFn::Tanh, x), ar.unary(UnaryFn::Tanh, x)));
  EXPECT_FALSE(z3::eq(ar.unary(UnaryFn::Tanh, x), ar.unary(UnaryFn::Sigmoid, x)));
}

}  // namespace
}  // namespace teq
