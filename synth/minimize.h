// Derivability by equality saturation (Ruler's minimization): is an equation provable from a rule set
// by rewriting? Used to drop generated rules that the rules kept before them already derive, and by
// `rulegen derive` to measure how much of another rule set a corpus covers. The e-graph and the
// saturation loop are the optimizer's (optimizer/engine/egraph.h, optimizer/engine/runner.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rules/corpus.h"
#include "synth/candidates.h"
#include "synth/prove.h"
#include "synth/vocabulary.h"

namespace teq {
class CompiledRules;  // optimizer/engine/runner.h
}

namespace teq::synth {

/// The counts decide: node_limit between iterations, and `growth` times it inside one (applications stop once
/// the e-graph holds that many e-nodes, so one iteration cannot blow a small e-graph up to a million nodes);
/// time_limit_s is a last-resort guard whose stops are counted (saturations_stopped_by_clock).
struct DeriveLimits {
  size_t node_limit = 4'000;
  size_t iter_limit = 8;
  size_t growth = 8;
  double time_limit_s = 20;
  int k_multi = 3;  // iterations in which multi-pattern rules apply
  /// Where an equation's variables get their shapes. LeafTypes: from the leaf types (set A), whose
  /// extents coincide by design (square matrices, kernels with as many outputs as the image has channels),
  /// so a derivation there may go through rules that hold only at such shapes. Generic: from verify's shape
  /// search, the smallest distinct extents under which the equation is well-shaped (leaf types when there
  /// is none): a derivation there holds without coincidences, so rulegen's minimization drops a rule only
  /// when it follows in general (with LeafTypes it dropped `(transpose 1 0 (transpose 1 0 ?w)) => ?w`,
  /// derived through rules about square matrices). `rulegen derive` measures coverage with LeafTypes.
  enum class Typing { LeafTypes, Generic } typing = Typing::LeafTypes;
};

struct DeriveResult {
  bool derived = false;
  std::string reason;  // when not derived: "not equal after saturation (node-limit, 4012 e-nodes)", ...
};

/// Rules as the saturation uses them: each rule, plus its reverse when the reverse is a valid rule
/// (right side binds every variable and is not a bare variable). Corpus rules are equations; reversing
/// lets minimization and coverage use them both ways.
std::vector<Rule> both_directions(const std::vector<Rule>& rules);

/// Saturations in this process that DeriveLimits::time_limit_s stopped (a verdict that can depend on the
/// machine's load, unlike the node and iteration limits); rulegen reports the count of its run in
/// generator.stats.derivations_stopped_by_clock, so a corpus says how much of it the clock decided.
uint64_t saturations_stopped_by_clock();

/// What the derivability checks of this process have done so far (informational, for the log: rulegen
/// reports each restore's share). `max_enodes` is the largest e-graph a saturation ended with.
struct SaturationCounts {
  uint64_t saturations = 0, iterations = 0, enodes = 0, max_enodes = 0;
};
SaturationCounts saturation_counts();

/// `rules` compiled for the saturations here (CompiledRules, with cross-product two-pattern rules), so that
/// many derivability checks over subsets of one list compile it once.
std::shared_ptr<const CompiledRules> compile_for_derivation(const std::vector<Rule>& rules);

/// A compiled rule list and which of its rules a saturation uses (`enabled`, indexed like the list; empty:
/// all). Points into its owner's storage: the owner outlives the saturations.
struct RuleSubset {
  explicit RuleSubset(std::shared_ptr<const CompiledRules> compiled, std::span<const char> mask = {})
      : rules(std::move(compiled)), enabled(mask) {}
  std::shared_ptr<const CompiledRules> rules;
  std::span<const char> enabled;
};

struct EGraphHolder;

/// Many derivability questions in one e-graph (Ruler's batching): every equation's sides are added to
/// one e-graph, which is saturated once for all of them, so rule matching is paid once per batch rather
/// than once per equation. Variables become input leaves with shapes from the leaf types (set A,
/// typing.h); leaves of equal name and shape are shared between equations, which is sound: any equality
/// the e-graph finds follows from the rules.
/// Usage:
///   EquationBatch batch(types);
///   size_t i = *batch.add(rule);
///   batch.saturate(both_directions(kept), limits);
///   if (batch.equal(i)) ...            // derivable
///   batch.assert_equal(j);             // a proved rule: its sides are equal from now on
class EquationBatch {
 public:
  explicit EquationBatch(std::vector<LeafType> types, DeriveLimits::Typing typing = DeriveLimits::Typing::LeafTypes);
  ~EquationBatch();
  EquationBatch(EquationBatch&&) noexcept = default;

  /// Adds `target` (every lhs[i] == rhs[i]); the equation's index, or nullopt with `why_not` set when
  /// it cannot be typed or built. A right side whose variables are not its own left side's (two-pattern
  /// rules that batch, a right side that drops a variable) is looked up, never added: added, it would hand
  /// the rules the very subterm (a concat of the kernels) that the two-pattern rule exists to create. A
  /// pattern pair over the same variables is an equation of its own, even in a two-pattern rule (TASO
  /// glues unrelated single rules into two-pattern ones: relu fusion beside avgpool as a convolution).
  /// With `look_up_rhs`, every right side is looked up, never added: the equation then holds only if
  /// saturation builds the right side from the left one (a rewrite, not a meeting in the middle).
  std::optional<size_t> add(const Rule& target, std::string* why_not = nullptr, bool look_up_rhs = false);
  /// Whether every pattern pair of equation i is in one e-class.
  bool equal(size_t i) const;
  /// Merges the sides of equation i (known true: a proved rule), adding looked-up sides if needed.
  void assert_equal(size_t i);
  /// Saturates with `rules` within `limits` (the node limit is checked between iterations; multi-pattern
  /// rules apply in the first limits.k_multi iterations). Stops early once every equation in `watch`
  /// (all, when empty) is equal. Returns the stop reason in words, e.g. "node-limit, 4012 e-nodes, 3 iterations".
  std::string saturate(const std::vector<Rule>& rules, const DeriveLimits& limits, const std::vector<size_t>& watch = {});
  /// The same with rules compiled before.
  std::string saturate(const RuleSubset& rules, const DeriveLimits& limits, const std::vector<size_t>& watch = {});
  size_t num_nodes() const;
  /// Every (operator, attributes, arity) its e-nodes have, as sorted distinct hashes (node_key in
  /// minimize.cpp): a rule whose left side has a node outside them matched nowhere in this e-graph.
  std::vector<uint64_t> node_keys() const;

 private:
  struct Equation;
  std::vector<LeafType> types_;
  DeriveLimits::Typing typing_;
  std::unique_ptr<EGraphHolder> graph_;
  std::vector<Equation> equations_;
};

/// Whether `target` (every lhs[i] == rhs[i]) follows from `rules` (already both_directions'ed if wanted)
/// by saturation within `limits`: an EquationBatch of one.
DeriveResult derive_rule(const Rule& target, const std::vector<Rule>& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits = {});
DeriveResult derive_rule(const Rule& target, const RuleSubset& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits = {});

/// Stricter: whether `rules` rewrite target's left side into its right side (right side looked up, not
/// added) and, when the target is a valid rule backwards, its right side into its left side. A rule that
/// passes can be dropped from a rule set without losing any rewrite it made, within limits: derive_rule
/// alone may join the sides only because terms of the right side were present, which a saturation that
/// applies the rule never has.
DeriveResult derive_as_rewrites(const Rule& target, const std::vector<Rule>& rules,
                                const std::vector<LeafType>& types, const DeriveLimits& limits = {});
DeriveResult derive_as_rewrites(const Rule& target, const RuleSubset& rules, const std::vector<LeafType>& types,
                                const DeriveLimits& limits = {});

// ---- rulegen's minimization policy (run_rulegen and merge_rulegen drive it, rulegen.h) ------------------

/// Minimization's settings: what of RulegenConfig (rulegen.h) the minimization, the final pass and the
/// restores use; rulegen fills them from its own (the defaults are the same).
struct MinimizeConfig {
  bool minimize = true;  // drop candidates derivable from the smaller rules kept before them (else prove all)
  int threads = 0;       // 0 = all cores
  ProveConfig prove;
  // Minimization derives at generic shapes, not at the leaf types' (DeriveLimits::Typing).
  DeriveLimits derive{.typing = DeriveLimits::Typing::Generic};
  size_t minimize_chunk = 256;         // candidates sharing one e-graph during minimization
  size_t batch_node_limit = 60'000;    // e-nodes of that e-graph
  size_t restore_node_limit = 30'000;  // a dropped rule restored unless derivable alone within this
  size_t prove_slice = 32;             // candidates proved per minimization round (independent of the threads)
  std::function<void(const std::string&)> log;  // progress lines; may be empty
};

/// A candidate that did not make it into the corpus because it was not proved.
struct Rejected {
  std::string lhs, rhs;  // pattern texts (" ; " between patterns)
  std::string status, reason;
};

/// What the proofs made by minimization or a restore found: counts (a candidate a shard proved already is
/// counted there), the seconds they took, and the candidates not proved, in order.
struct ProofTally {
  uint64_t proved = 0, wrong = 0, unknown = 0;
  double prove_s = 0;
  std::vector<Rejected> rejected;
};

struct MinimizeResult {
  std::vector<Rule> kept;
  std::vector<Rule> derivable;    // the single-pattern candidates dropped as derivable, in candidate order
  uint64_t pruned_derivable = 0;  // all candidates dropped as derivable
  ProofTally proofs;
};

/// Ruler's minimization of rulegen's candidates (in ordered_unique_candidates' order, candidates.h),
/// smallest first, with proofs made lazily: a chunk of candidates shares one e-graph saturated with the rules
/// kept so far, and the candidates it derives are dropped without a proof. The rest are proved a slice at a
/// time, smallest first (in parallel); a proved one is kept unless the ones kept before it in the slice
/// already joined its sides, and its sides are joined so that the later ones see it. The next round rebuilds
/// the e-graph from what is still undecided. A derivation of a rule without enlarge uses no rule with it
/// (enlarge exists only for kernels up to its target size), so candidates with and without enlarge get an
/// e-graph each. Returns the kept rules, the candidates dropped as derivable and what the proofs found.
MinimizeResult minimize_candidates(std::vector<OrderedCandidate>& candidates, const MinimizeConfig& config,
                                   const std::vector<LeafType>& types);

/// Ruler's final pass: smallest-first minimization keeps a rule whose derivation needs rules kept after it.
/// Every rule is checked against all the others in parallel (a flag), then the flagged ones, largest first,
/// one at a time against the rules still kept, so that two rules never justify each other's removal. The
/// check is derive_as_rewrites (the others rewrite each side into the other), not derive_rule: dropping a
/// rule whose sides merely meet in the middle lost 7 of Tensat's 120 rules from the coverage.
/// Removes the derivable rules from `kept` (appended to `dropped` when given); returns how many.
size_t drop_derivable_from_the_rest(std::vector<Rule>& kept, const std::vector<LeafType>& types,
                                    const MinimizeConfig& config, std::vector<Rule>* dropped = nullptr);

/// The final pass's drops checked again, each alone against the rules finally kept: a rule is dropped when
/// the rules not dropped before it derive it, and the rules dropped after it may be what that derivation
/// used, so the final set derives it only through derivations of derivations, which saturation within the
/// limits need not reach (a second final pass after generalization made this lose rules). Appends to `kept`
/// every rule of `dropped` that derive_as_rewrites with the final pass's limits does not derive from
/// `kept`, in `dropped`'s order; returns how many. Each check is independent (parallel), so the result
/// does not depend on the threads.
/// `memo`: as for restore_candidates_derived_only_together, below.
class RestoreMemo;
size_t restore_underivable(std::vector<Rule>& kept, const std::vector<Rule>& dropped,
                           const std::vector<LeafType>& types, const MinimizeConfig& config,
                           RestoreMemo* memo = nullptr);

/// Meeting in the middle undone: minimization drops a candidate when its sides join in an e-graph it shares
/// with other candidates, whose terms may be what joins them; the rules kept may then not derive it alone
/// (the seed's transpose-concat was such a candidate). Each of `derivable` (minimize_candidates' dropped
/// single-pattern candidates) is checked alone (derive_rule, the derivation limits); those that do not
/// derive are taken in order, each checked again against the kept rules and those restored before it, proved
/// (they were dropped unproved) and appended to `kept` when verified. Returns how many were restored and
/// what the proofs found (refuted ones listed there). The verdicts do not depend on the
/// threads (a window of checks is taken in order up to the first restore, like the final pass). Candidates
/// that fail their proof are removed from `derivable`, so that a second call does not prove them again.
/// `memo` (optional, kept by the caller across calls) remembers each check's verdict and the operators its
/// saturation met: a later check of the same candidate, against rules that differ from that check's only by
/// rules whose left sides could not match there (an operator with its attributes that none of its e-nodes
/// had), would run the very same saturation, so it takes the remembered verdict instead. The verdicts, and
/// so the rules restored, are those of a call without it.
struct RestoreResult {
  size_t restored = 0;
  ProofTally proofs;
};
RestoreResult restore_candidates_derived_only_together(std::vector<Rule>& kept, std::vector<Rule>& derivable,
                                                       const std::vector<LeafType>& types,
                                                       const MinimizeConfig& config, RestoreMemo* memo = nullptr);

/// The memory of the restores between their calls: each check's record (opaque), and how many checks ran a
/// saturation and how many took a remembered verdict.
class RestoreMemo {
 public:
  RestoreMemo();
  ~RestoreMemo();
  size_t checks_run() const;
  size_t checks_reused() const;
  struct State;
  std::unique_ptr<State> state;
};

}  // namespace teq::synth
