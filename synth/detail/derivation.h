// Helpers shared by rulegen's minimization (minimize.cpp) and its restores (restore.cpp): which rules a
// derivation may use, rule lists compiled once with what RestoreMemo compares them by, the restores' limits,
// and their log. Private to synth/.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "optimizer/engine/runner.h"
#include "synth/candidates.h"
#include "synth/minimize.h"

namespace teq::synth::detail {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// What a pattern node needs of an e-node to match it (pattern.cpp's Matcher): the operator, its attributes and
/// its arity, hashed (FNV-1a over 64-bit words). Equal nodes have equal keys; a collision can only make a
/// rule look as if it might match.
inline uint64_t node_key(OpKind op, const std::vector<int64_t>& attrs, size_t arity) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  mix(static_cast<uint64_t>(op));
  mix(arity);
  mix(attrs.size());
  for (int64_t a : attrs) mix(static_cast<uint64_t>(a));
  return h;
}

inline void log_line(const MinimizeConfig& c, const std::string& s) {
  if (c.log) c.log(s);
}

/// One stage of a restore on the log: its saturations (how many, their iterations, the e-nodes they ended
/// with, the largest e-graph of the process so far) and seconds. Informational: nothing is decided by it.
class StageLog {
 public:
  StageLog(const MinimizeConfig& config, std::string name)
      : config_(config), name_(std::move(name)), before_(saturation_counts()), start_(Clock::now()) {}
  void end(const std::string& what = "") const {
    const SaturationCounts now = saturation_counts();
    const uint64_t n = now.saturations - before_.saturations;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    char buf[280];
    std::snprintf(buf, sizeof buf, "rulegen: %s%s: %llu saturations, %llu iterations, %llu k e-nodes at their ends "
                  "(largest e-graph so far %llu), %.1f s, peak %ld MB", name_.c_str(), what.c_str(),
                  static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(now.iterations - before_.iterations),
                  static_cast<unsigned long long>((now.enodes - before_.enodes) / 1000),
                  static_cast<unsigned long long>(now.max_enodes), since(start_), usage.ru_maxrss / 1024);
    log_line(config_, buf);
  }

 private:
  const MinimizeConfig& config_;
  std::string name_;
  SaturationCounts before_;
  Clock::time_point start_;
};

/// Whether a derivation may use `rule` for `target`. `enlarge` exists only for kernels up to its target
/// size: a derivation through it holds for the 1x3 kernels of the fingerprint shapes but not for a 5x5
/// kernel, so a rule without enlarge is never dropped on the strength of rules with it (the general
/// SAME-padding conv batching rules were, leaving 5x5 kernels without them).
inline bool uses_enlarge(const Rule& r) {
  for (const auto* side : {&r.lhs, &r.rhs})
    for (const Expr& p : *side)
      for (const ExprNode& n : p.nodes())
        if (n.op == OpKind::Enlarge) return true;
  return false;
}
inline bool may_derive(const Rule& rule, const Rule& target) {
  return !uses_enlarge(rule) || uses_enlarge(target);
}

/// A rule list as a saturation uses it, in order, without the compiled patterns: what RestoreMemo compares a
/// check's rules with a later one's by.
struct DirectionList {
  std::vector<std::string> keys;  // each direction's text and shape conditions, "#k" on its k-th repeat
  std::vector<std::vector<std::vector<uint64_t>>> lhs_keys;  // per direction, per left pattern: node_key of its nodes
  std::vector<char> enlarge;                                  // uses_enlarge(direction)

  explicit DirectionList(const std::vector<Rule>& directions) {
    std::map<std::string, size_t> seen;
    for (const Rule& d : directions) {
      std::string key = patterns_text(d.lhs) + " => " + patterns_text(d.rhs);
      for (const auto& group : d.same_shape) {
        key += " |";
        for (const std::string& v : group) key += " " + v;
      }
      for (const std::string& g : d.conv_groupings) key += " @" + g;
      key += "#" + std::to_string(seen[key]++);
      keys.push_back(std::move(key));
      std::vector<std::vector<uint64_t>> patterns;
      for (const Expr& p : d.lhs) {
        std::vector<uint64_t> nodes;
        for (const ExprNode& n : p.nodes())
          if (n.op != OpKind::Var) nodes.push_back(node_key(n.op, n.attrs, n.children.size()));
        patterns.push_back(std::move(nodes));
      }
      lhs_keys.push_back(std::move(patterns));
      enlarge.push_back(uses_enlarge(d));
    }
  }
};

/// Every direction of `rules` (both_directions), compiled once, for derivations of targets one at a time.
struct CompiledDirections {
  std::vector<Rule> directions;
  std::shared_ptr<const CompiledRules> compiled;
  std::shared_ptr<const DirectionList> list;

  explicit CompiledDirections(const std::vector<Rule>& rules) {
    for (const Rule& r : rules)
      for (Rule& d : both_directions({r})) directions.push_back(std::move(d));
    compiled = compile_for_derivation(directions);
    list = std::make_shared<const DirectionList>(directions);
  }
  /// Which directions a derivation of `target` may use (may_derive): the mask of a RuleSubset, which only
  /// views it, so the caller keeps it alive.
  std::vector<char> usable_for(const Rule& target) const {
    std::vector<char> enabled(directions.size());
    for (size_t k = 0; k < directions.size(); ++k) enabled[k] = may_derive(directions[k], target);
    return enabled;
  }
};

/// What a dropped rule must derive within to stay dropped (restore_underivable and
/// restore_candidates_derived_only_together): the node budget of `rulegen derive`, which measures coverage,
/// where minimization's 4 k e-nodes decide cheaply and stop early on what a larger e-graph reaches.
inline DeriveLimits restore_limits(const MinimizeConfig& config) {
  DeriveLimits limits = config.derive;
  limits.node_limit = std::max(limits.node_limit, config.restore_node_limit);
  return limits;
}

/// Two-pattern rules are judged one derive_rule each, which compiles every kept rule; at size 3 there are
/// thousands of pairs, so they get a smaller budget.
inline DeriveLimits two_pattern_limits(DeriveLimits limits) {
  limits.iter_limit = std::min<size_t>(limits.iter_limit, 4);
  limits.time_limit_s = std::min(limits.time_limit_s, 5.0);
  return limits;
}

}  // namespace teq::synth::detail
