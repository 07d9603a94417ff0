#include "synth/prove.h"

#include <z3++.h>

#include "verify/prover.h"

namespace teq::synth {

ProofResult prove_rule(const Rule& rule, const ProveConfig& config) {
  VerifyOptions options;
  options.use_axioms = false;  // shape-generic proofs are ruleverify's extra; element-wise decides entry
  options.elementwise.rlimit = config.rlimit;
  options.elementwise.timeout_ms = config.timeout_ms;
  options.elementwise.coincidence_is_wrong = config.reject_coincidences;
  // The shape search is bounded by its check count; its wall-clock bound is lifted for determinism.
  options.elementwise.shapes.max_ms = config.timeout_ms;
  z3::context ctx;
  const RuleReport report = verify_rule(rule, ctx, options);
  ProofResult result{std::string(status_name(report.status)), report.detail, report.ms};
  if (report.counterexample) result.reason = format_counterexample(*report.counterexample);
  return result;
}

}  // namespace teq::synth
