// Candidates: turns the enumerator's equations into rules. An equation whose sides use the same
// variables gives a single-pattern rule; one whose side uses variables the other lacks (a split of a
// concat, a batched operator) can only be a rule inside a multi-pattern rule, so it is kept as an
// "unbound" equation and paired with another one that binds the missing variables (TASO's two-output
// graphs). Verification (prove.h) comes after; the pruning and the minimization order are here.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rules/corpus.h"
#include "rules/tensor.h"
#include "synth/enumerate.h"
#include "synth/vocabulary.h"

namespace teq::synth {

/// An equation between two patterns. `lhs` binds every variable of `rhs` when `bound`; otherwise rhs
/// has variables lhs lacks, and the equation is material for a multi-pattern rule.
struct PatternEquation {
  Expr lhs, rhs;
  bool bound = true;
  int size = 0;  // operators of the larger side
  // For an equation of the enumeration's last size, when asked for (collect_unique_equations): the hash
  // by which --max-last-size-candidates samples, so that merge can apply the cap to shards' union.
  std::optional<uint64_t> sample_hash;
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

// ---- pruning and order, before and after the proofs (rulegen.h drives them) ----------------------------

/// What a pruning step kept, in order, and how many it dropped.
template <class T>
struct Pruned {
  std::vector<T> kept;
  uint64_t dropped = 0;
};

/// collect_unique_equations' equations, with how many it dropped as renamings and left out by the cap.
struct UniqueEquations {
  std::vector<PatternEquation> equations;
  uint64_t renamings = 0;
  uint64_t capped = 0;
};

/// drop_renamings(collect_equations(e)) without holding every equation's patterns at once (at size 4 they
/// were tens of GB), and with a count cap: when `max_last_level` > 0 and more unique equations than that were
/// found at the enumeration's last level, only the `max_last_level` whose canonical texts hash lowest are
/// kept (a sample fixed by the hash: the same on every machine and at any load); `capped` counts the others.
/// Equations of smaller sizes are all kept. `renamings` counts the renamings. With `last_level_hashes`, each
/// kept last-level equation gets its `sample_hash` and the vector all of them, ascending: what a shard
/// tells merge so that the cap applies to all shards together (rulegen.h, RulegenConfig::shard_count).
UniqueEquations collect_unique_equations(const Enumeration& e, uint64_t max_last_level,
                                         std::vector<uint64_t>* last_level_hashes = nullptr);

/// The `cap` lowest of `hashes` (all of them when there are no more than `cap`, or `cap` is 0): the sample
/// --max-last-size-candidates keeps. Returns the largest hash kept, or nullopt when all are kept.
std::optional<uint64_t> sample_threshold(std::vector<uint64_t> hashes, uint64_t cap);

/// The equations less those equal to an earlier one up to variable renaming (leaf types kept apart, so
/// that shards and one whole run drop the same ones).
Pruned<PatternEquation> drop_renamings(std::vector<PatternEquation> equations);

/// The equations less the unbound ones that pair with no other (pair_multi_rules, `max_rhs_ops`): they cannot
/// become rules, so they are not worth a proof.
Pruned<PatternEquation> drop_unpaired(std::vector<PatternEquation> equations, int max_rhs_ops);

/// TASO's pruning: both sides contain the same operator subterm, and the rule with that subterm replaced
/// by a fresh leaf of the same type still holds (checked on both fingerprint sets). The general rule is
/// smaller and enumerated too, so this one adds nothing.
bool has_common_subgraph(const PatternEquation& eq, const std::vector<LeafType>& types, uint64_t seed);

/// Cheap refutation before any proof: evaluates both sides (in double, the real semantics) on the leaf
/// types' third shape set C at random small integers. Returns why the equation is false when both sides are
/// well-shaped there and their shapes or values differ; nullopt otherwise, also when set C is absent for a
/// type or a side is ill-shaped under C, which decides nothing (a split cuts at a leaf's extent: a true rule
/// can be ill-shaped at C). A returned reason is a concrete counterexample, so no true rule is refuted.
std::optional<std::string> refute_on_third_set(const PatternEquation& eq, const std::vector<LeafType>& types,
                                               uint64_t seed);

/// Small non-zero integers as doubles: sums and products of them stay exact, so only avgpool's division
/// rounds; a true equation differs by rounding alone. `negative` is the chance of a negative value.
Tensor<double> random_double_tensor(const Shape& shape, std::mt19937_64& rng, double negative);

/// A rule's size for minimization order: operators of the larger side, counted as trees. Counted as
/// DAGs, a special case that repeats a variable ((conv (ewadd i i) k) = (ewadd (conv i k) (conv i k)))
/// would be smaller than its general law and be kept before it, then the law too.
int rule_size(const Rule& r);

/// Patterns as text, " ; " between them (logs and the list of unproved candidates).
std::string patterns_text(const std::vector<Expr>& patterns);

/// A candidate rule in minimization order: smaller first, then the general one before its special cases.
struct OrderedCandidate {
  int size;
  int fewer_vars;  // minus the variable count: the general rule before its special cases
  std::string key, text;
  Rule rule;
};

/// The candidates smallest first, one of each class of rules equal up to variable renaming (the others
/// dropped).
Pruned<OrderedCandidate> ordered_unique_candidates(std::vector<Rule> singles, std::vector<Rule> multis);

}  // namespace teq::synth
