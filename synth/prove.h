// rulegen's prover: a candidate enters the corpus only if the verify library proves it, with the same
// element-wise method as `ruleverify --no-axioms` (verify/prover.h): every output element on several shape
// assignments with small, distinct dimensions found by verify's shape search, so a law that holds only
// on rulegen's tiny fingerprint shapes (a pool-order swap on 1x1 spatial extents) is refuted.
// Budgets are Z3 resource limits, not wall-clock time, so verdicts do not depend on machine load and a
// sharded run agrees with an unsharded one. Thread-safe: each call uses its own Z3 context.
#pragma once

#include <string>

#include "rules/corpus.h"

namespace teq::synth {

struct ProveConfig {
  /// Z3 resource limit per query (one output element on one shape assignment).
  unsigned rlimit = 5'000'000;
  /// Wall-clock bound per rule, a guard: queries are bounded by rlimit (a count, below ruleverify's default
  /// --rlimit, so that every kept rule also verifies there), so only rules near this bound depend on machine
  /// load. ruleverify itself decides by resource limits alone (its --guard-ms is a reported last resort).
  unsigned timeout_ms = 10'000;
  /// Refuse a rule that holds only where unrelated extents agree (ElementwiseOptions::coincidence_is_wrong,
  /// `rulegen --strict-shapes`). Off by default: the fingerprint shapes tie such extents, so the general
  /// form of a rule (a cut at the right operand) often shares its class with the coincidental one and is
  /// never a candidate of its own; refusing the coincidental one then loses the rule (measured in
  /// docs/rulegen.md). Minimization at generic shapes (DeriveLimits::Typing) keeps such rules from
  /// justifying the removal of general ones instead.
  bool reject_coincidences = false;
};

struct ProofResult {
  std::string status = "unknown";  // "verified", "wrong", "unknown"
  std::string reason;              // why not verified: counterexample, resource limit, no shapes
  double ms = 0;
  /// Shape conditions under which the rule was verified (Rule::same_shape); empty: none needed.
  std::vector<std::vector<std::string>> same_shape;
  /// The groupings at which it was verified (Rule::conv_groupings); empty: all ungrouped only.
  std::vector<std::string> conv_groupings;
};

/// Proves every lhs[i] == rhs[i] of `rule` with verify's element-wise prover. A wrong rule that batches
/// convolutions by concatenating their kernels (a conv2d on a concat) is proved again under the condition
/// that the variables of each leaf type have equal shapes, as they have at the fingerprint shapes (the
/// variables' names carry their type: ?k1, ?k2): Tensat's and TASO's grouped merges are right exactly then.
/// Under those conditions it is proved at each grouping of its convolutions (rules/rule_scope.h), one at a
/// time; the groupings where it holds make its scope. If there is one, the result is verified with those
/// conditions and groupings.
ProofResult prove_rule(const Rule& rule, const ProveConfig& config = {});

/// The variables of `rule` grouped by leaf type (the letters of their names), groups of two or more only.
std::vector<std::vector<std::string>> same_type_groups(const Rule& rule);

}  // namespace teq::synth
