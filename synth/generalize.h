// Generalization by variable splitting (Ruler's idea): rulegen enumerates with at most three leaves of
// a type, so a law that needs four distinct variables of one type is found only as special cases that
// repeat a variable ((concat 1 (ewadd ?a1 ?a1) (ewadd ?a2 ?a3)) = (ewadd (concat 1 ?a1 ?a2) (concat 1 ?a1 ?a3))).
// A kept rule in which a variable occurs more than once on the left is tried with some occurrences of that
// variable renamed apart into a fresh one, on the left and on the right together; a candidate must be a
// valid rule, survive a numeric test on the fingerprint shapes (sets A, B and C), and be proved by rulegen's
// prover (prove.h: Z3 resource limits, counts). The first proved one replaces the rule, and the step
// repeats on it (one more variable each time). Rules that are then syntactic instances of a generalized
// rule are dropped: the general rule rewrites wherever they do, to the same right side.
// Deterministic: candidates are tried in a fixed order, every bound is a count.
// Usage:
//   GeneralizeStats st;
//   std::vector<Rule> rules = generalize_rules(std::move(kept), types, {}, threads, st);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rules/corpus.h"
#include "synth/prove.h"
#include "synth/vocabulary.h"

namespace teq::synth {

struct GeneralizeConfig {
  int max_steps = 4;              // fresh variables added to one rule at most
  size_t max_candidates = 1024;   // splits tested numerically per step (in the fixed order)
  size_t max_proofs = 4;          // numeric survivors sent to the prover per step
  uint64_t seed = 7;
  ProveConfig prove;
};

struct GeneralizeStats {
  uint64_t generalized = 0;  // rules replaced by a proved generalization
  uint64_t dropped = 0;      // rules dropped as syntactic instances of a generalized rule (or duplicates of one)
  uint64_t proofs = 0, proved = 0;  // prover calls on split candidates, and how many verified
};

/// The splits of `rule` (one variable's occurrences partly renamed to a fresh variable) that are valid
/// rules, keep a rule that is valid both ways valid both ways, and are not refuted numerically, in the order
/// they would be proved (most sharing, fewest renamed occurrences, later occurrences renamed first).
std::vector<Rule> variable_splits(const Rule& rule, const std::vector<LeafType>& types,
                                  const GeneralizeConfig& config = {});

/// What generalize_rule found: the most general proved generalization (none when no split is proved), and
/// the prover calls it took.
struct Generalization {
  std::optional<Rule> rule;
  uint64_t proofs = 0, proved = 0;  // prover calls, and how many verified
};

/// The most general proved generalization of `rule` (repeated splits).
Generalization generalize_rule(const Rule& rule, const std::vector<LeafType>& types, const GeneralizeConfig& config);

/// Whether `special` is a syntactic instance of `general` (one substitution of general's variables by
/// terms maps its patterns onto special's, in the same order or, for two patterns, swapped; or, when both
/// rules are valid both ways, onto special reversed). A rule valid both ways is never called an instance
/// of one that is not (dropping it would lose its backward rewrite).
bool is_instance_of(const Rule& special, const Rule& general);

/// Generalizes every rule (in parallel over rules; the result does not depend on `threads`), replaces each
/// by its generalization, and drops the rules that are instances of a generalized rule (is_instance_of),
/// keeping the first of equal ones. Order otherwise kept.
struct GeneralizedRules {
  std::vector<Rule> rules;
  GeneralizeStats stats;
};
GeneralizedRules generalize_rules(std::vector<Rule> rules, const std::vector<LeafType>& types,
                                  const GeneralizeConfig& config, int threads);

}  // namespace teq::synth
