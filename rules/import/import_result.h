// What every rule importer returns: the rules it converted and, for each rule it could not convert, the
// reason. Importers never drop a rule silently: imported + skipped == total.
#pragma once

#include <string>
#include <vector>

#include "rules/corpus.h"

namespace teq {

/// A rule we could not convert, and why (e.g. "split on axis 1: no concat boundary to cut at").
struct ImportIssue {
  std::string rule_id;
  std::string reason;
};

struct ImportResult {
  RuleCorpus corpus;                 // the converted rules, each validated (validate_rule)
  std::vector<ImportIssue> skipped;  // one entry per rule that was not converted
  size_t total = 0;                  // rules found in the input: corpus.rules.size() + skipped.size()
};

}  // namespace teq
