// Fingerprints: a 64-bit hash of a tensor's shape and exact integer values (Arith<ModInt>), and the
// random leaf values they are computed from. Equal functions give equal fingerprints on the same inputs;
// the enumerator (enumerate.h) buckets terms by the fingerprints of two independent input sets.
#pragma once

#include <cstdint>
#include <random>

#include "rules/arith.h"
#include "rules/tensor.h"

namespace teq::synth {

inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Hash of shape and values; two tensors with equal shape and values always hash equally.
inline uint64_t fingerprint(const Tensor<ModInt>& t) {
  uint64_t h = mix64(t.shape.size());
  for (int64_t d : t.shape) h = mix64(h ^ static_cast<uint64_t>(d));
  for (const ModInt& v : t.data) h = mix64(h ^ v.raw());
  return h;
}

/// Combines the fingerprints of the two input sets into one class key.
inline uint64_t combine_fingerprints(uint64_t a, uint64_t b) { return mix64(a ^ (b * 0x2545f4914f6cdd1dULL)); }

/// A tensor of small non-zero integers in [-range, range]: small, so relu/max compare true integers;
/// non-zero, so that products do not vanish and hide differences.
inline Tensor<ModInt> random_tensor(const Shape& shape, std::mt19937_64& rng, int64_t range = 9) {
  std::uniform_int_distribution<int64_t> dist(1, range);
  std::bernoulli_distribution sign(0.5);
  std::vector<ModInt> data;
  data.reserve(num_elements(shape));
  for (int64_t i = 0; i < num_elements(shape); ++i) data.push_back(ModInt::from_int(sign(rng) ? dist(rng) : -dist(rng)));
  return Tensor<ModInt>(shape, std::move(data));
}

}  // namespace teq::synth
