// What an operator's one shape rule (rules/shape_rules.h) says about ranks alone, read off the rule by running
// it over dimension terms (rules/symbolic_dims.h) at tuples of operand ranks, for the rank solvers that must
// choose ranks before any dimension exists (verify/shape_assign.cpp, the importers). No operator is named
// here: a new operator's signature comes from its shape rule.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "rules/op.h"

namespace teq {

struct RankSignature {
  /// The ranks probed: 0 .. kMaxProbedRank for every operand.
  static constexpr size_t kMaxProbedRank = 6;
  struct Operand {
    std::optional<int> fixed;  // the only rank the rule accepts
    int at_least = 0;          // the lowest it accepts
  };
  bool accepts = false;  // whether any rank tuple probed was accepted (if not, nothing else is set)
  std::vector<Operand> operands;
  std::vector<std::pair<size_t, size_t>> equal_operands;  // pairs of operands whose ranks are always equal
  std::optional<int> output_fixed;                        // the output's rank when it is always the same
  std::optional<size_t> output_equals;                    // an operand whose rank the output's always is
  int output_at_least = 0;
  std::vector<size_t> output_may_equal;  // operands of no fixed rank that the output's is in some tuples only
};

/// `op`'s signature with these attributes and this many operands. Up to three operands every rank tuple is
/// probed; beyond, the tuples of equal ranks and those where one operand's rank differs from the others'
/// (enough for every rule of the vocabulary, whose operands beyond the first share one rank). Computed once
/// per (op, attrs, operand count) and process.
const RankSignature& rank_signature(OpKind op, AttrSpan attrs, size_t operands);

}  // namespace teq
