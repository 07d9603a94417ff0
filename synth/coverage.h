// Coverage: which rules of a target set (ours, Tensat's, TASO's, via rules/import) follow from a corpus
// by saturation (minimize.h), with the reason for each one that does not. `rulegen derive` prints it.
#pragma once

#include <string>
#include <vector>

#include "rules/import/import_result.h"
#include "synth/minimize.h"

namespace teq::synth {

struct CoverageEntry {
  std::string rule_id;
  bool derived = false;
  std::string reason;  // for rules not derived (including the importer's reason for skipped rules)
  std::vector<std::string> rule;  // the rule, one "lhs  =>  rhs" line per pattern (empty for skipped rules)
};

struct CoverageReport {
  size_t total = 0;    // rules in the target file (imported + skipped)
  size_t derived = 0;
  std::vector<CoverageEntry> entries;  // one per target rule, in file order; skipped ones last
  double percent() const { return total ? 100.0 * static_cast<double>(derived) / static_cast<double>(total) : 0; }
};

/// `rulegen derive`'s default limits. A coverage question is asked once per target rule, not thousands of
/// times as in minimization, so it gets the e-graph size the optimizer itself saturates to (10 k nodes and
/// more): with minimization's 4 k nodes and 2 s, a 681-rule corpus hits the node limit in three iterations
/// on rules it derives at 30 k (relu over concat, conv batching). The time limit is only a guard: at 10 s
/// the verdict on a few rules whose last iteration is large depended on the machine's speed, so the node and
/// iteration limits decide.
inline DeriveLimits coverage_limits() {
  DeriveLimits l;
  l.node_limit = 30'000;
  l.growth = 100;  // as good as unbounded inside an iteration: coverage measures, it keeps no rule set
  l.time_limit_s = 60;
  return l;
}

/// Checks every target rule against `base` (used both ways), in parallel on `threads` threads.
CoverageReport derive_coverage(const RuleCorpus& base, const ImportResult& target, const std::vector<LeafType>& types,
                               const DeriveLimits& limits, int threads);

/// "derived 130/133 (97.7%)" followed by one line per rule not derived, with its reason, and the rule below it.
std::string format_coverage(const CoverageReport& report, const std::string& target_name);

}  // namespace teq::synth
