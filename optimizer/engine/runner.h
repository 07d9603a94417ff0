// Runner: equality saturation of an EGraph with a rule list. Each iteration searches every rule on the
// clean e-graph, applies the matches whose right side is well-shaped, and rebuilds once. Single-pattern
// rules go through an egg-style backoff scheduler; multi-pattern rules are joined as in Tensat and applied
// only in the first k_multi iterations, behind a cycle pre-filter (cycles.h). A single-pattern rule that
// matches its own output (rules/rule_growth.h) applies one generation deep: a match that binds the variable
// it grows to a class holding the term the rule itself created there is skipped. Extraction is elsewhere.
// Usage:
//   EGraph g; auto ids = g.add_expr(graph);
//   Runner runner(corpus.rules, RunnerConfig{.iter_limit = 10});
//   RunReport r = runner.run(g);   // r.stop == StopReason::Saturated, ...
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "optimizer/engine/egraph.h"
#include "optimizer/engine/pattern.h"
#include "optimizer/engine/scheduler.h"
#include "rules/corpus.h"

namespace teq {

/// One line of progress per saturation iteration.
struct IterationStats {
  size_t iteration = 0;
  size_t enodes = 0;
  size_t eclasses = 0;
  size_t matches = 0;
  double seconds = 0;  // since saturation started
};
/// "iter 3: 1234 e-nodes, 567 e-classes, 89 matches, 0.012 s"
std::string to_string(const IterationStats& s);

enum class StopReason { Saturated, NodeLimit, IterLimit, TimeLimit };
std::string_view to_string(StopReason reason);  // "saturated", "node-limit", "iter-limit", "time-limit"

struct RunnerConfig {
  size_t node_limit = 100'000;
  size_t iter_limit = 30;
  double time_limit_s = 60;
  int k_multi = 1;                   // multi-pattern rules apply in iterations [0, k_multi)
  bool backoff = true;               // egg's BackoffScheduler for single-pattern rules
  size_t match_limit = 1'000;        // a rule with more matches in one iteration is banned ...
  size_t ban_length = 5;             // ... for this many iterations; both double with every ban
  size_t multi_limit = 50'000;       // most joined matches one multi-pattern rule may apply per iteration
  // Also use two-pattern rules whose patterns share no variable while a right side uses both (relu-batch):
  // every pair of matches, up to multi_limit. For the tiny e-graphs of rulegen's derivability checks, where
  // pairs are few; on a model it would pair every two unrelated operators.
  bool cross_product_multi = false;
  // A rule that matches its own output applies one generation deep (rules/rule_growth.h). Off only where a test
  // needs an e-graph that grows without bound.
  bool self_feeding_once = true;
  std::function<void(const IterationStats&)> on_iteration = {};  // may be empty
  // Asked before each rule's matches are applied (the e-graph not rebuilt yet): once it says true, the
  // iteration applies nothing more, rebuilds and ends. rulegen's derivability checks stop at the first
  // derivation with it. May be empty.
  std::function<bool()> stop_applying = {};
  // Search each single-pattern rule when its matches are applied, on a copy of the e-graph as the iteration
  // began, instead of all rules first: the same matches in the same order, so the same result, but one rule's
  // matches in memory at a time, and no search for the rules after the node limit or stop_applying ends the
  // iteration. Only without backoff (whose bans depend on every rule's search). For rulegen's derivability
  // checks, whose last iteration may stop applying long before the last rule.
  bool search_lazily = false;
};

struct RunReport {
  StopReason stop = StopReason::Saturated;
  size_t iterations = 0;
  double seconds = 0;
  std::vector<IterationStats> per_iteration;
  size_t applied = 0;          // instantiations added (a no-op union counts too)
  size_t rejected_shape = 0;   // matches whose right side is ill-shaped (or of another shape)
  size_t rejected_cycle = 0;   // multi-pattern applications the cycle pre-filter refused
  /// Per rule that feeds itself (rules/rule_growth.h) and met its own output: the matches skipped. Such a rule
  /// applies one generation deep instead of growing the e-graph in every iteration.
  std::map<std::string, size_t> own_output_skipped;
  std::vector<std::string> notes;  // e.g. rules that could not be used, and why
};

/// A rule list compiled once into patterns, shared by many Runners (rulegen's derivability checks saturate
/// thousands of tiny e-graphs with subsets of one rule list; compiling ~2,000 rules for each was a tenth of
/// their time). Immutable after construction, so Runners on several threads may share one.
/// RuleId i is rules[i]. A multi-pattern rule whose patterns share no variable becomes two single rules
/// unless `cross_product_multi` (RunnerConfig); one with more than two patterns is not used (see notes()).
class CompiledRules {
 public:
  struct Entry;  // one rule's (or one half's) compiled patterns
  CompiledRules(std::span<const Rule> rules, bool cross_product_multi);
  ~CompiledRules();
  CompiledRules(CompiledRules&&) noexcept;

  size_t size() const { return ids_.size(); }
  const std::vector<std::string>& rule_ids() const { return ids_; }
  const std::vector<std::string>& notes() const { return notes_; }
  bool cross_product_multi() const { return cross_product_multi_; }

 private:
  friend class Runner;
  std::vector<std::string> ids_, notes_;
  std::vector<Entry> single_, multi_;
  bool cross_product_multi_;
};

class Runner {
 public:
  /// Compiles the rules (CompiledRules) and uses all of them.
  explicit Runner(std::span<const Rule> rules, RunnerConfig config = {});
  /// Uses rules compiled before (with config.cross_product_multi, checked); with `enabled` (indexed by
  /// RuleId, as long as the rule list) only the rules it marks.
  Runner(std::shared_ptr<const CompiledRules> rules, RunnerConfig config, std::span<const char> enabled = {});
  ~Runner();
  Runner(Runner&&) noexcept;

  /// Saturates `egraph` until a limit or saturation; leaves it clean (rebuilt).
  RunReport run(EGraph& egraph);
  /// Rule id strings, indexed by RuleId.
  const std::vector<std::string>& rule_ids() const { return rules_->rule_ids(); }

 private:
  using Compiled = CompiledRules::Entry;
  struct Iteration;  // one iteration's matches, joins and counters
  // One iteration is search (single-pattern rules, through the scheduler), join (multi-pattern rules),
  // apply (multi first, behind the cycle pre-filter, then single), and one rebuild (run).
  void search_single(const EGraph& egraph, Iteration& it);
  /// Single rule k's matches in `egraph` (the scheduler's threshold, own-output matches skipped); empty when the
  /// scheduler bans it.
  std::vector<Match> search_rule(const EGraph& egraph, Iteration& it, size_t k);
  void search_and_apply_single(const EGraph& snapshot, EGraph& egraph, Iteration& it, RunReport& report);
  void join_multi(const EGraph& egraph, Iteration& it) const;
  void apply_multi(EGraph& egraph, Iteration& it, RunReport& report) const;
  void apply_single(EGraph& egraph, Iteration& it, RunReport& report) const;
  bool apply(EGraph& egraph, const Compiled& rule, size_t side, ClassId root, const Subst& subst,
             RunReport& report) const;
  bool over_time() const;
  bool over_nodes(const EGraph& egraph) const { return egraph.num_nodes() > config_.node_limit; }

  std::shared_ptr<const CompiledRules> rules_;
  std::vector<const Compiled*> single_, multi_;  // the enabled ones, in rule order
  RunnerConfig config_;
  BackoffScheduler scheduler_;  // indexed like single_
  std::chrono::steady_clock::time_point started_{};
};

}  // namespace teq
