#include "rules/rank_signature.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "rules/symbolic_dims.h"

namespace teq {
namespace {

constexpr size_t kMax = RankSignature::kMaxProbedRank;

/// The rank tuples probed for `n` operands (see rank_signature).
std::vector<std::vector<size_t>> probed_tuples(size_t n) {
  std::vector<std::vector<size_t>> out;
  if (n <= 3) {
    std::vector<size_t> t(n, 0);
    while (true) {
      out.push_back(t);
      size_t j = 0;
      while (j < n && ++t[j] > kMax) t[j++] = 0;
      if (j == n) break;
    }
    return out;
  }
  for (size_t base = 0; base <= kMax; ++base)
    for (size_t j = 0; j < n; ++j)
      for (size_t r = 0; r <= kMax; ++r)
        if (j == 0 || r != base) {  // the all-equal tuple once
          std::vector<size_t> t(n, base);
          t[j] = r;
          out.push_back(std::move(t));
        }
  return out;
}

RankSignature compute_signature(OpKind op, AttrSpan attrs, size_t n) {
  std::vector<std::pair<std::vector<size_t>, size_t>> accepted;  // operand ranks, output rank
  for (const std::vector<size_t>& t : probed_tuples(n))
    if (auto r = symbolic_rank(op, attrs, t)) accepted.emplace_back(t, *r);
  RankSignature sig;
  sig.accepts = !accepted.empty();
  if (!sig.accepts) return sig;
  sig.operands.resize(n);
  for (size_t j = 0; j < n; ++j) {
    auto [lo, hi] = std::ranges::minmax(accepted, {}, [&](const auto& a) { return a.first[j]; });
    sig.operands[j].at_least = static_cast<int>(lo.first[j]);
    if (lo.first[j] == hi.first[j]) sig.operands[j].fixed = static_cast<int>(lo.first[j]);
    for (size_t i = 0; i < j; ++i)
      if (std::ranges::all_of(accepted, [&](const auto& a) { return a.first[i] == a.first[j]; }))
        sig.equal_operands.emplace_back(i, j);
  }
  auto [lo, hi] = std::ranges::minmax(accepted, {}, [](const auto& a) { return a.second; });
  sig.output_at_least = static_cast<int>(lo.second);
  if (lo.second == hi.second) sig.output_fixed = static_cast<int>(lo.second);
  for (size_t j = 0; j < n; ++j) {
    const auto same = std::ranges::count_if(accepted, [&](const auto& a) { return a.first[j] == a.second; });
    if (same == static_cast<std::ptrdiff_t>(accepted.size()) && !sig.output_equals) sig.output_equals = j;
    // A fixed-rank operand (smul's scalar) says nothing about the output's rank when they coincide.
    else if (same > 0 && same < static_cast<std::ptrdiff_t>(accepted.size()) && !sig.operands[j].fixed)
      sig.output_may_equal.push_back(j);
  }
  return sig;
}

}  // namespace

const RankSignature& rank_signature(OpKind op, AttrSpan attrs, size_t operands) {
  static std::mutex mu;
  static std::map<std::tuple<OpKind, std::vector<int64_t>, size_t>, std::unique_ptr<RankSignature>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[{op, std::vector<int64_t>(attrs.begin(), attrs.end()), operands}];
  if (!slot) slot = std::make_unique<RankSignature>(compute_signature(op, attrs, operands));
  return *slot;
}

}  // namespace teq
