#include "rules/float_types.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace teq {
namespace {

/// binary16 bits to float by the format's definition.
float half_to_float_by_definition(uint16_t h) {
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float f;
  if (exp == 0) f = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) f = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else f = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return (h & 0x8000u) ? -f : f;
}

/// All 65,536 halves as floats, made once: --check widens every 16-bit weight of an LLM at every size it
/// evaluates (billions of elements at 7B parameters), and a lookup costs a fraction of ldexp's call.
const std::array<float, 65536>& half_table() {
  static const std::array<float, 65536> table = [] {
    std::array<float, 65536> t{};
    for (uint32_t h = 0; h < t.size(); ++h) t[h] = half_to_float_by_definition(static_cast<uint16_t>(h));
    return t;
  }();
  return table;
}

}  // namespace

float half_to_float(uint16_t h) { return half_table()[h]; }

const float* half_to_float_table() { return half_table().data(); }

float bfloat_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, infinity
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to a magnitude beyond 65504: infinity
  if (abs < 0x38800000u) {
    // Subnormal in half (or zero): the value in units of 2^-24, rounded to nearest even.
    const float scaled = std::fabs(f) * 0x1p24f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  const uint32_t rebased = abs - 0x38000000u;
  const uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return sign | static_cast<uint16_t>(rounded >> 13);
}

uint16_t float_to_bfloat(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN stays NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

double round_to_float_type(double x, int32_t type) {
  const float f = static_cast<float>(x);
  if (type == kFloat16Type) return half_to_float(float_to_half(f));
  if (type == kBFloat16Type) return bfloat_to_float(float_to_bfloat(f));
  return f;
}

}  // namespace teq
