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
};

struct CoverageReport {
  size_t total = 0;    // rules in the target file (imported + skipped)
  size_t derived = 0;
  std::vector<CoverageEntry> entries;  // one per target rule, in file order; skipped ones last
  double percent() const { return total ? 100.0 * static_cast<double>(derived) / static_cast<double>(total) : 0; }
};

/// Checks every target rule against `base` (used both ways), in parallel on `threads` threads.
CoverageReport derive_coverage(const RuleCorpus& base, const ImportResult& target, const std::vector<LeafType>& types,
                               const DeriveLimits& limits, int threads);

/// "derived 130/133 (97.7%)" followed by one line per rule not derived, with its reason.
std::string format_coverage(const CoverageReport& report, const std::string& target_name);

}  // namespace teq::synth
