// run_ruleverify: the whole of `ruleverify FILE...` but its command line (tools/ruleverify.cpp): loads the rule
// files (JSON corpora, Tensat rule text, TASO graph_subst.pb), proves every rule (verify/prover.h), prints one
// line per rule with counterexamples for wrong ones and a summary, writes --json and --update.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "verify/prover.h"

namespace teq {

struct RuleverifyConfig {
  std::vector<std::string> files;  // rule files, in order
  std::vector<std::string> only;   // rule ids to verify (empty: every rule)
  std::string json_path;           // JSON report to write (empty: none)
  VerifyOptions options;
  bool update = false;  // write each rule's verification back into its JSON corpus file
  std::ostream* out = &std::cout;  // per-rule results and the summary
  std::ostream* err = &std::cerr;  // skipped rules, progress, errors
};

/// Exit status: 0 when every rule is verified, 1 when one is wrong, unknown or could not be imported, 2 on
/// unreadable input (before any proof starts), an unknown --only id, or a report that cannot be written.
int run_ruleverify(const RuleverifyConfig& config);

}  // namespace teq
