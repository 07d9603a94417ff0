// rulegen's restores (minimize.h, step 9 of docs/rulegen.md): the final passes' drops and the candidates
// minimization dropped in a shared e-graph, checked again alone against the rules kept, each check remembered
// (RestoreMemo) so that a later one that would run the same saturation takes its verdict.
#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "synth/detail/derivation.h"
#include "synth/minimize.h"
#include "synth/parallel.h"
#include "synth/prove.h"
#include "synth/rulegen.h"

namespace teq::synth {

using namespace detail;

namespace {

/// One derivability check of a candidate, remembered: its verdict, the rules it saturated with, whether the
/// candidate uses enlarge (which of those rules it could use, may_derive) and the node keys its e-graph ended
/// with. Empty `keys` with `derived` unset and no rules: a verdict that does not depend on the rules (no shapes).
struct CheckRecord {
  bool derived = false;
  std::shared_ptr<const DirectionList> rules;
  bool target_enlarge = false;
  std::vector<uint64_t> keys;
};

/// Whether a rule (one direction, by its left patterns' node keys) matched nowhere in an e-graph whose node
/// keys are `present`: each of its patterns has a node no e-node had (a two-pattern rule whose pattern has
/// none matches nowhere either, but one pattern is enough only for joined rules; both are required here).
bool inert(const std::vector<std::vector<uint64_t>>& lhs, const std::vector<uint64_t>& present) {
  for (const std::vector<uint64_t>& pattern : lhs) {
    bool absent = false;
    for (uint64_t k : pattern) absent = absent || !std::binary_search(present.begin(), present.end(), k);
    if (!absent) return false;
  }
  return true;
}

/// How one rule list became another: the directions only in the first (`removed`, its indices), only in the
/// second (`added`), and whether the ones in both keep their order.
struct ListChange {
  std::vector<size_t> removed, added;
  bool order_kept = true;
};

ListChange change_between(const DirectionList& before, const DirectionList& after) {
  std::unordered_map<std::string_view, size_t> at;
  for (size_t k = 0; k < after.keys.size(); ++k) at.emplace(after.keys[k], k);
  ListChange change;
  std::vector<char> matched(after.keys.size(), 0);
  size_t last = 0;
  bool any = false;
  for (size_t k = 0; k < before.keys.size(); ++k) {
    auto found = at.find(before.keys[k]);
    if (found == at.end()) {
      change.removed.push_back(k);
      continue;
    }
    if (any && found->second < last) change.order_kept = false;
    last = found->second, any = true;
    matched[found->second] = 1;
  }
  for (size_t k = 0; k < after.keys.size(); ++k)
    if (!matched[k]) change.added.push_back(k);
  return change;
}

}  // namespace

struct RestoreMemo::State {
  std::unordered_map<std::string, CheckRecord> records;  // by check: the target's text, which restore, limits, way
  std::mutex mutex;                                          // guards `changes`
  std::map<std::pair<const DirectionList*, const DirectionList*>,
           std::pair<std::array<std::shared_ptr<const DirectionList>, 2>, ListChange>>
      changes;  // holds both lists, so that their addresses are not reused while cached
  std::atomic<size_t> reused{0}, run{0};

  const ListChange& change(const std::shared_ptr<const DirectionList>& before,
                           const std::shared_ptr<const DirectionList>& after) {
    std::lock_guard lock(mutex);
    auto key = std::pair(before.get(), after.get());
    auto found = changes.find(key);
    if (found == changes.end())
      found = changes.emplace(key, std::pair(std::array{before, after}, change_between(*before, *after))).first;
    return found->second.second;
  }

  /// Whether a check of a candidate (`target_enlarge`: whether it uses enlarge) with `rules` would run the
  /// saturation `record` remembers: the rules it may use differ only by rules inert there, in the same order.
  bool same_saturation(const CheckRecord& record, const std::shared_ptr<const DirectionList>& rules) {
    if (!record.rules) return true;  // a verdict without a saturation
    if (record.rules == rules) return true;
    const ListChange& c = change(record.rules, rules);
    if (!c.order_kept) return false;
    auto usable = [&](const DirectionList& list, size_t k) { return !list.enlarge[k] || record.target_enlarge; };
    for (size_t k : c.removed)
      if (usable(*record.rules, k) && !inert(record.rules->lhs_keys[k], record.keys)) return false;
    for (size_t k : c.added)
      if (usable(*rules, k) && !inert(rules->lhs_keys[k], record.keys)) return false;
    return true;
  }
};

RestoreMemo::RestoreMemo() : state(std::make_unique<State>()) {}
RestoreMemo::~RestoreMemo() = default;
size_t RestoreMemo::checks_run() const { return state->run; }
size_t RestoreMemo::checks_reused() const { return state->reused; }

namespace {

/// A derivability check, remembered in `slot`: derive_rule's verdict on `target` (`look_up_rhs` false) or that
/// of one way of derive_as_rewrites (true), with the directions of `rules` that may derive `target` (may_derive),
/// within `limits`. A slot whose record ran the same saturation gives its verdict without one. A saturation
/// that stopped saturated is the one a larger node limit runs too: `larger_slot` (when given) gets its record.
bool check_remembered(RestoreMemo::State& state, std::optional<CheckRecord>& slot, std::optional<CheckRecord>* larger_slot,
                      const Rule& target, const CompiledDirections& rules, const std::vector<LeafType>& types,
                      const DeriveLimits& limits, bool look_up_rhs) {
  if (slot && state.same_saturation(*slot, rules.list)) {
    ++state.reused;
    return slot->derived;
  }
  ++state.run;
  const std::vector<char> usable = rules.usable_for(target);
  EquationBatch batch(types, limits.typing);
  CheckRecord fresh;
  fresh.target_enlarge = uses_enlarge(target);
  auto index = batch.add(target, nullptr, look_up_rhs);
  std::string stop;
  if (index) {  // otherwise not derived whatever the rules: a record without rules
    fresh.rules = rules.list;
    if (!batch.equal(*index)) stop = batch.saturate(RuleSubset{rules.compiled, usable}, limits);
    fresh.derived = batch.equal(*index);
    fresh.keys = batch.node_keys();
  }
  const bool derived = fresh.derived;
  auto stopped_by = [&](StopReason reason) { return stop.rfind(to_string(reason), 0) == 0; };
  if (stopped_by(StopReason::TimeLimit)) {  // the clock's verdict is not repeatable: not remembered
    slot.reset();
    return derived;
  }
  if (larger_slot && stopped_by(StopReason::Saturated)) *larger_slot = fresh;
  slot = std::move(fresh);
  return derived;
}

/// A call's records, one slot per check, taken from the memo (copies: texts may repeat) and given back.
class MemoSlots {
 public:
  MemoSlots(RestoreMemo::State& state, std::vector<std::string> keys) : state_(state), keys_(std::move(keys)) {
    slots_.resize(keys_.size());
    for (size_t k = 0; k < keys_.size(); ++k) {
      auto found = state_.records.find(keys_[k]);
      if (found != state_.records.end()) slots_[k] = found->second;
    }
  }
  std::optional<CheckRecord>& operator[](size_t k) { return slots_[k]; }
  /// Gives slot k's record back to the memo (the last one given back for a key stays).
  void give_back(size_t k) {
    if (slots_[k]) state_.records.insert_or_assign(keys_[k], std::move(*slots_[k]));
  }

 private:
  RestoreMemo::State& state_;
  std::vector<std::string> keys_;
  std::vector<std::optional<CheckRecord>> slots_;
};

std::string rule_text(const Rule& r) { return patterns_text(r.lhs) + " => " + patterns_text(r.rhs); }

}  // namespace

size_t restore_underivable(std::vector<Rule>& kept, const std::vector<Rule>& dropped_rules,
                           const std::vector<LeafType>& types, const MinimizeConfig& config, RestoreMemo* memo) {
  // Each rule once, and none that is kept (restored before, or dropped twice).
  std::set<std::string> seen;
  for (const Rule& r : kept) seen.insert(rule_text(r));
  std::vector<Rule> dropped;
  for (const Rule& r : dropped_rules)
    if (seen.insert(rule_text(r)).second) dropped.push_back(r);
  if (dropped.empty()) return 0;
  RestoreMemo own;  // a call without a memo remembers nothing beyond itself
  RestoreMemo::State& state = *(memo ? memo : &own)->state;
  const CompiledDirections rules(kept);
  // Slots: (rule, limits, way) -> 4 i + 2 stage + way; stage 0 the final pass's limits, 1 the restore limit.
  std::vector<std::string> keys;
  for (const Rule& r : dropped)
    for (const char* suffix : {" |final 0 fwd", " |final 0 bwd", " |final 1 fwd", " |final 1 bwd"})
      keys.push_back(rule_text(r) + suffix);
  MemoSlots slots(state, std::move(keys));
  // derive_as_rewrites, each way remembered.
  auto derived_with = [&](size_t i, int stage) {
    const Rule& target = dropped[i];
    DeriveLimits limits = stage == 0 ? config.derive : restore_limits(config);
    if (target.is_multi()) limits = two_pattern_limits(limits);
    std::vector<Rule> ways = both_directions({target});
    for (size_t way = 0; way < ways.size(); ++way) {
      const size_t slot = 4 * i + 2 * stage + way;
      std::optional<CheckRecord>* larger = stage == 0 ? &slots[slot + 2] : nullptr;
      if (!check_remembered(state, slots[slot], larger, ways[way], rules, types, limits, /*look_up_rhs=*/true))
        return false;
    }
    return true;
  };
  // The final pass's limits first (cheap), then the larger budget for the ones that stop there.
  std::vector<char> derived(dropped.size(), 0);
  const size_t reused_before = state.reused, run_before = state.run;
  const StageLog small(config, "restore of final-pass drops, at the final pass's limits");
  parallel_for(dropped.size(), thread_count(config.threads), [&](size_t i) { derived[i] = derived_with(i, 0); });
  small.end();
  const StageLog large(config, "restore of final-pass drops, at the restore limit");
  parallel_for(dropped.size(), thread_count(config.threads), [&](size_t i) {
    if (!derived[i]) derived[i] = derived_with(i, 1);
  });
  large.end();
  log_line(config, "rulegen: restore of final-pass drops: " + std::to_string(state.run - run_before) +
                       " checks run, " + std::to_string(state.reused - reused_before) +
                       " verdicts reused (the same saturation)");
  for (size_t k = 0; k < 4 * dropped.size(); ++k) slots.give_back(k);
  size_t restored = 0;
  for (size_t i = 0; i < dropped.size(); ++i)
    if (!derived[i]) kept.push_back(dropped[i]), ++restored;
  return restored;
}


RestoreResult restore_candidates_derived_only_together(std::vector<Rule>& kept, std::vector<Rule>& derivable,
                                                       const std::vector<LeafType>& types,
                                                       const MinimizeConfig& config, RestoreMemo* memo) {
  ProofTally tally;
  const int threads = thread_count(config.threads);
  RestoreMemo own;  // a call without a memo still reuses within itself
  RestoreMemo::State& state = *(memo ? memo : &own)->state;
  // Slots: (candidate, limits) -> 2 i + stage; stage 0 the derivation limits, 1 the restore limit.
  std::vector<std::string> keys;
  for (const Rule& r : derivable)
    for (const char* suffix : {" |candidate 0", " |candidate 1"}) keys.push_back(rule_text(r) + suffix);
  MemoSlots slots(state, std::move(keys));
  const DeriveLimits larger = restore_limits(config);
  // derive_rule of candidate i with `rules`, remembered.
  auto derived_alone = [&](size_t i, const CompiledDirections& rules, int stage) {
    return check_remembered(state, slots[2 * i + stage], stage == 0 ? &slots[2 * i + 1] : nullptr, derivable[i],
                            rules, types, stage == 0 ? config.derive : larger, /*look_up_rhs=*/false);
  };
  // Every dropped candidate alone against the rules kept (independent checks: minimization's limits, then
  // the larger budget for those that stop there), then the ones that fail, in candidate order (smallest
  // first), against the kept rules and those restored before them.
  auto current = std::make_unique<CompiledDirections>(kept);
  std::vector<char> derived(derivable.size(), 0);
  const size_t reused_before = state.reused, run_before = state.run;
  const StageLog small(config, "restore of candidates, alone at minimization's limits");
  parallel_for(derivable.size(), threads, [&](size_t i) { derived[i] = derived_alone(i, *current, 0); });
  small.end();
  const StageLog large(config, "restore of candidates, alone at the restore limit");
  parallel_for(derivable.size(), threads, [&](size_t i) {
    if (!derived[i]) derived[i] = derived_alone(i, *current, 1);
  });
  large.end();
  const StageLog in_order(config, "restore of candidates, in order");
  std::vector<size_t> order;
  for (size_t i = 0; i < derivable.size(); ++i)
    if (!derived[i]) order.push_back(i);
  log_line(config, "rulegen: " + std::to_string(order.size()) + " of the " + std::to_string(derivable.size()) +
                       " candidates dropped as derivable in a shared e-graph do not derive alone from the rules kept");
  size_t restored = 0;
  std::vector<char> refuted(derivable.size(), 0);
  const size_t window = static_cast<size_t>(std::max(threads, 1));
  for (size_t k = 0; k < order.size();) {
    // A window of checks against the same rules; taken in order up to the first that does not derive (the
    // later ones are checked again once it is restored).
    const size_t n = std::min(window, order.size() - k);
    std::vector<char> verdict(n, 0);
    parallel_for(n, threads, [&](size_t j) { verdict[j] = derived_alone(order[k + j], *current, 1); });
    size_t j = 0;
    while (j < n && verdict[j]) ++j;
    k += j;
    if (j == n) continue;
    const size_t at = order[k++];
    Rule r = derivable[at];
    const ProofResult proof = prove_rule(r, config.prove);
    if (proof.status != "verified") {
      (proof.status == "wrong" ? tally.wrong : tally.unknown)++;
      tally.rejected.push_back({patterns_text(r.lhs), patterns_text(r.rhs), proof.status, proof.reason});
      refuted[at] = 1;
      continue;
    }
    ++tally.proved;
    r.verification = Verification{"verified", "z3-elementwise", proof.ms};
    r.same_shape = proof.same_shape;
    r.conv_groupings = proof.conv_groupings;
    kept.push_back(std::move(r));
    ++restored;
    current = std::make_unique<CompiledDirections>(kept);
  }
  in_order.end(" (" + std::to_string(restored) + " restored)");
  log_line(config, "rulegen: restore of candidates: " + std::to_string(state.run - run_before) + " checks run, " +
                       std::to_string(state.reused - reused_before) + " verdicts reused (the same saturation)");
  // A candidate not proved is no rule to derive: a later call does not prove it again. The records go back
  // to the memo.
  std::vector<Rule> rest;
  for (size_t i = 0; i < derivable.size(); ++i) {
    if (refuted[i]) continue;
    slots.give_back(2 * i), slots.give_back(2 * i + 1);
    rest.push_back(std::move(derivable[i]));
  }
  derivable = std::move(rest);
  return {restored, std::move(tally)};
}

}  // namespace teq::synth
