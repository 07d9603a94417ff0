#include "rules/arith.h"

namespace teq {

const char* unary_fn_name(UnaryFn fn) {
  switch (fn) {
    case UnaryFn::Tanh: return "tanh";
    case UnaryFn::Sigmoid: return "sigmoid";
    case UnaryFn::Gelu: return "gelu";
    case UnaryFn::Exp: return "exp";
    case UnaryFn::Rsqrt: return "rsqrt";
    case UnaryFn::Sqrt: return "sqrt";
    case UnaryFn::Erf: return "erf";
    case UnaryFn::GeluTanh: return "gelu_tanh";
    case UnaryFn::ToFloat32: return "to_float32";
    case UnaryFn::ToFloat16: return "to_float16";
    case UnaryFn::ToBFloat16: return "to_bfloat16";
    case UnaryFn::NanToZero: return "nan_to_zero";
    case UnaryFn::Cos: return "cos";
    case UnaryFn::Sin: return "sin";
  }
  return "?";
}

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

ModInt Arith<ModInt>::unary(UnaryFn fn, ModInt x) const {
  // Keep outputs small (|y| < 2^20) so later relu/max comparisons stay meaningful on centred values.
  uint64_t h = splitmix64(x.raw() * 0x100000001b3ULL + static_cast<uint64_t>(fn) + 1);
  return ModInt::from_int(static_cast<int64_t>(h % (1u << 21)) - (1 << 20));
}

}  // namespace teq
