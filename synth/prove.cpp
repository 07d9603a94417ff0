#include "synth/prove.h"

#include <map>
#include <optional>

#include <z3++.h>

#include "rules/rule_scope.h"
#include "verify/elementwise.h"
#include "verify/prover.h"

namespace teq::synth {

namespace {

ProofResult prove_as_given(const Rule& rule, const ProveConfig& config) {
  VerifyOptions options;
  options.use_axioms = false;  // shape-generic proofs are ruleverify's extra; element-wise decides entry
  options.elementwise.rlimit = config.rlimit;
  options.elementwise.timeout_ms = config.timeout_ms;
  options.elementwise.coincidence_is_wrong = config.reject_coincidences;
  // The shape search is bounded by its check count; its wall-clock bound is lifted for determinism.
  options.elementwise.shapes.max_ms = config.timeout_ms;
  z3::context ctx;
  const RuleReport report = verify_rule(rule, ctx, options);
  ProofResult result{std::string(status_name(report.status)), report.detail, report.ms, {}, {}};
  if (report.counterexample) result.reason = format_counterexample(*report.counterexample);
  return result;
}

/// A conv2d whose kernel is a concat: two convolutions batched into one, which is a grouped convolution
/// when the inputs are concatenated too.
bool batches_convolutions(const Rule& rule) {
  for (const std::vector<Expr>* side : {&rule.lhs, &rule.rhs})
    for (const Expr& p : *side)
      for (const ExprNode& n : p.nodes())
        if (n.op == OpKind::Conv2d && p[n.children[1]].op == OpKind::Concat) return true;
  return false;
}

}  // namespace

std::vector<std::vector<std::string>> same_type_groups(const Rule& rule) {
  std::map<std::string, std::vector<std::string>> by_type;
  for (const std::string& v : rule.variables()) by_type[v.substr(0, v.find_first_of("0123456789"))].push_back(v);
  std::vector<std::vector<std::string>> groups;
  for (auto& [type, vars] : by_type)
    if (vars.size() >= 2) groups.push_back(std::move(vars));
  return groups;
}

/// Groupings tried per rule are 2^n for n scoped convolutions: a bound keeps a large rule's count small.
constexpr size_t kMaxScopedConvs = 5;

/// `rule` (with conv_groupings empty) proved at each grouping of its convolutions, one at a time: verified
/// with the groupings where it holds as its scope, or nullopt when it holds at none.
static std::optional<ProofResult> prove_at_each_grouping(Rule rule, const ProveConfig& config, double& ms) {
  for (const std::string& grouping : all_groupings(rule, kMaxScopedConvs)) {
    Rule at = rule;
    at.conv_groupings = {grouping};
    const ProofResult proof = prove_as_given(at, config);
    ms += proof.ms;
    if (proof.status == "verified") rule.conv_groupings.push_back(grouping);
  }
  if (rule.conv_groupings.empty()) return std::nullopt;
  // All ungrouped alone is the default scope, which a rule file does not spell out.
  if (rule.conv_groupings == std::vector<std::string>{ungrouped_grouping(rule)}) rule.conv_groupings.clear();
  ProofResult again = prove_as_given(rule, config);
  if (again.status != "verified") return std::nullopt;
  again.ms += ms;
  again.same_shape = std::move(rule.same_shape);
  again.conv_groupings = std::move(rule.conv_groupings);
  return again;
}

ProofResult prove_rule(const Rule& rule, const ProveConfig& config) {
  ProofResult result = prove_as_given(rule, config);
  if (result.status == "verified" || !rule.conv_groupings.empty() || !has_scoped_convs(rule)) return result;
  double ms = result.ms;
  // No instance with every convolution ungrouped (a depthwise pool kernel, a merge grouped by construction):
  // its scope is the groupings it holds at.
  if (result.status == "unknown" && result.reason.find(kNoAssignmentInScope) != std::string::npos)
    if (std::optional<ProofResult> scoped = prove_at_each_grouping(rule, config, ms)) return *scoped;
  // A convolution batching that is wrong as enumerated: again with the variables of each leaf type of equal
  // shape, at each grouping.
  if (!rule.same_shape.empty() || !batches_convolutions(rule)) return result;
  Rule conditional = rule;
  conditional.same_shape = same_type_groups(rule);
  if (conditional.same_shape.empty()) return result;
  if (std::optional<ProofResult> scoped = prove_at_each_grouping(conditional, config, ms)) return *scoped;
  return result;
}

}  // namespace teq::synth
