// Arith<S>: the scalar operations the operator semantics need, for each scalar type they run on.
// + - * / come from the scalar type itself; Arith adds constants, max and the non-linear functions.
//   - ModInt (exact arithmetic modulo a prime, used for fingerprints): non-linear functions are fixed
//     pseudo-random functions, so a rule about them is found only if it holds for any such function.
//   - float / double (the reference evaluator): the real functions.
//   - z3::expr (verify/z3_arith.h): uninterpreted functions, relu as ite(x > 0, x, 0).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "rules/float_types.h"

namespace teq {

/// Non-linear point-wise functions. relu and max are not here: they have real meaning everywhere. The casts
/// round to float32, float16 and bfloat16 (`cast`): uninterpreted in Z3 like the others. NanToZero is x with
/// 0 where x is NaN (`nan_to_zero`): uninterpreted too, since Z3's reals have no NaN and the identity there
/// would prove rules that are wrong on a NaN. Cos and Sin (rotary position embeddings): uninterpreted.
enum class UnaryFn : uint8_t { Tanh, Sigmoid, Gelu, Exp, Rsqrt, Sqrt, Erf, GeluTanh, ToFloat32, ToFloat16, ToBFloat16,
                               NanToZero, Cos, Sin };
inline constexpr size_t kNumUnaryFns = 14;
const char* unary_fn_name(UnaryFn fn);

/// An element of Z/pZ with p = 2^61 - 1: exact arithmetic with division, no overflow, no rounding.
/// Comparisons (for relu/max) use the centred representative in (-p/2, p/2], which equals the true
/// integer for the small values that fingerprinting produces.
class ModInt {
 public:
  static constexpr uint64_t kPrime = (uint64_t{1} << 61) - 1;

  constexpr ModInt() = default;
  static ModInt from_int(int64_t v) {
    int64_t r = v % static_cast<int64_t>(kPrime);
    return ModInt(static_cast<uint64_t>(r < 0 ? r + static_cast<int64_t>(kPrime) : r));
  }
  static constexpr ModInt from_raw(uint64_t v) { return ModInt(v % kPrime); }

  uint64_t raw() const { return value_; }
  /// The representative in (-p/2, p/2].
  int64_t centred() const {
    return value_ > kPrime / 2 ? static_cast<int64_t>(value_) - static_cast<int64_t>(kPrime)
                               : static_cast<int64_t>(value_);
  }

  friend ModInt operator+(ModInt a, ModInt b) { return ModInt(reduce(a.value_ + b.value_)); }
  friend ModInt operator-(ModInt a, ModInt b) { return ModInt(reduce(a.value_ + kPrime - b.value_)); }
  friend ModInt operator-(ModInt a) { return ModInt(reduce(kPrime - a.value_)); }
  friend ModInt operator*(ModInt a, ModInt b) {
    unsigned __int128 p = static_cast<unsigned __int128>(a.value_) * b.value_;
    uint64_t lo = static_cast<uint64_t>(p & kPrime), hi = static_cast<uint64_t>(p >> 61);
    return ModInt(reduce(lo + hi));
  }
  /// Division by zero yields zero (a fixed, total choice; z3 also leaves x/0 unspecified).
  friend ModInt operator/(ModInt a, ModInt b) { return a * b.inverse(); }
  ModInt& operator+=(ModInt b) { return *this = *this + b; }
  ModInt& operator*=(ModInt b) { return *this = *this * b; }
  friend bool operator==(ModInt a, ModInt b) = default;

  ModInt inverse() const {
    ModInt result = from_raw(1), base = *this;
    for (uint64_t e = kPrime - 2; e; e >>= 1) {
      if (e & 1) result = result * base;
      base = base * base;
    }
    return result;  // 0^(p-2) = 0
  }

 private:
  constexpr explicit ModInt(uint64_t v) : value_(v) {}
  static constexpr uint64_t reduce(uint64_t v) {
    v = (v & kPrime) + (v >> 61);
    return v >= kPrime ? v - kPrime : v;
  }
  uint64_t value_ = 0;
};

template <class S>
struct Arith;  // specialized per scalar type

template <>
struct Arith<ModInt> {
  ModInt constant(int64_t num, int64_t den = 1) const {
    return ModInt::from_int(num) / ModInt::from_int(den);
  }
  ModInt max(ModInt a, ModInt b) const { return a.centred() >= b.centred() ? a : b; }
  ModInt unary(UnaryFn fn, ModInt x) const;  // a fixed pseudo-random function per fn
};

template <class F>
struct FloatArith {
  F constant(int64_t num, int64_t den = 1) const { return static_cast<F>(num) / static_cast<F>(den); }
  F max(F a, F b) const { return std::max(a, b); }
  F unary(UnaryFn fn, F x) const {
    switch (fn) {
      case UnaryFn::Tanh: return std::tanh(x);
      case UnaryFn::Sigmoid: return F(1) / (F(1) + std::exp(-x));
      case UnaryFn::Gelu: return F(0.5) * x * (F(1) + std::erf(x / std::sqrt(F(2))));
      case UnaryFn::Exp: return std::exp(x);
      case UnaryFn::Rsqrt: return F(1) / std::sqrt(x);
      case UnaryFn::Sqrt: return std::sqrt(x);
      case UnaryFn::Erf: return std::erf(x);
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): PyTorch's gelu(approximate='tanh'), GPT-2's gelu_new.
      case UnaryFn::GeluTanh: {
        const F k = std::sqrt(F(2) / F(3.14159265358979323846264338327950288L));
        return F(0.5) * x * (F(1) + std::tanh(k * (x + F(0.044715) * x * x * x)));
      }
      case UnaryFn::ToFloat32: return static_cast<F>(round_to_float_type(static_cast<double>(x), kFloat32Type));
      case UnaryFn::ToFloat16: return static_cast<F>(round_to_float_type(static_cast<double>(x), kFloat16Type));
      case UnaryFn::ToBFloat16: return static_cast<F>(round_to_float_type(static_cast<double>(x), kBFloat16Type));
      case UnaryFn::NanToZero: return std::isnan(x) ? F(0) : x;
      case UnaryFn::Cos: return std::cos(x);
      case UnaryFn::Sin: return std::sin(x);
    }
    return x;
  }
};
template <>
struct Arith<double> : FloatArith<double> {};
template <>
struct Arith<float> : FloatArith<float> {};

/// relu(x) = max(x, 0) in every instantiation.
template <class S>
S relu(const Arith<S>& ar, const S& x) {
  return ar.max(x, ar.constant(0));
}

}  // namespace teq
