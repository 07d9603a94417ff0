// Candidates: turns the enumerator's equations into rules. An equation whose sides use the same
// variables gives a single-pattern rule; one whose side uses variables the other lacks (a split of a
// concat, a batched operator) can only be a rule inside a multi-pattern rule, so it is kept as an
// "unbound" equation and paired with another one that binds the missing variables (TASO's two-output
// graphs). Verification (prove.h) and pruning (prune.h) come after.
#pragma once

#include <string>
#include <vector>

#include "rules/corpus.h"
#include "synth/enumerate.h"

namespace teq::synth {

/// An equation between two patterns. `lhs` binds every variable of `rhs` when `bound`; otherwise rhs
/// has variables lhs lacks, and the equation is material for a multi-pattern rule.
struct PatternEquation {
  Expr lhs, rhs;
  bool bound = true;
  int size = 0;  // operators of the larger side
};

/// The equations of an enumeration, oriented: for equal variable sets, lhs is the later-found (usually
/// larger) term; otherwise lhs is the side with fewer variables... unless that side is a bare variable,
/// in which case the equation becomes the single rule "bigger side -> variable".
std::vector<PatternEquation> collect_equations(const Enumeration& e);

/// Number of operator nodes of a pattern (shared subterms counted once).
int pattern_size(const Expr& p);

/// Canonical text of a rule up to renaming of variables (first occurrence order over lhs, then rhs),
/// used to drop renamings. For a rule that is valid both ways the smaller of the two orientations.
/// With `keep_types`, variables of different leaf types (by name prefix) stay apart.
/// Not thread-safe (one call at a time).
std::string canonical_key(const std::vector<Expr>& lhs, const std::vector<Expr>& rhs, bool both_ways,
                          bool keep_types = false);

/// Pairs unbound equations into two-pattern rules: (t1, t2) -> (u1, u2) when u1 and u2 are two outputs
/// of one operator (same operator and operands, other attributes: the parts of one split) and t1, t2
/// together bind every variable of u1 and u2. `max_rhs_ops` bounds the operators of the joint right
/// side. `paired`, when given, marks the equations that are in at least one pair.
std::vector<Rule> pair_multi_rules(const std::vector<PatternEquation>& unbound, int max_rhs_ops,
                                   std::vector<char>* paired = nullptr);

/// Makes a rule (id given) from one bound equation.
Rule single_rule(const std::string& id, const PatternEquation& eq);

}  // namespace teq::synth
