#include "verify/prover.h"

#include <chrono>
#include <cstdio>
#include <mutex>

#include "verify/axioms.h"
#include "verify/batches.h"

namespace teq {
namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

RuleReport verify_rule(const Rule& rule, z3::context& ctx, const VerifyOptions& options) {
  const auto start = Clock::now();
  RuleReport report;
  report.id = rule.id;
  report.source = rule.source;
  try {
    // Probes in double first (they find almost every wrong rule, with a counterexample); then the proof for
    // all shapes; Z3 on the concrete shapes only for a rule that proof does not cover (or when asked):
    // element by element it was a third of the gate's CPU on rules the axioms prove anyway.
    ElementwiseResult ew = refute_elementwise(rule, options.elementwise);
    bool by_axioms = false;
    // The axioms state laws for all shapes with ungrouped convolutions; a rule with shape conditions or grouped
    // convolutions in its scope is proved element-wise.
    if (ew.awaiting_proof && options.use_axioms && rule.same_shape.empty() && rule.conv_groupings.empty()) {
      AxiomOptions ax;
      ax.rlimit = options.axiom_rlimit;
      ax.elementwise = options.elementwise;
      const AxiomProof proof = prove_from_axioms(rule, ctx, ax, ew.shapes);
      by_axioms = proof.proved;
      if (!by_axioms) report.axiom_failure = proof.detail;
    }
    if (!by_axioms || options.elementwise_too) ew = prove_unrefuted(rule, ctx, options.elementwise, std::move(ew));
    report.shapes = std::move(ew.shapes);
    report.counterexample = std::move(ew.counterexample);
    report.detail = std::move(ew.detail);
    if (by_axioms && ew.status != VerifyStatus::Wrong) {
      // Without --elementwise-too the element-wise stage did not run; with it, the proof for all shapes
      // covers the concrete ones Z3 could not finish.
      report.status = VerifyStatus::Verified;
      report.method = kMethodAxioms;
    } else {
      report.status = ew.status;
      report.method = ew.status == VerifyStatus::Unknown ? "" : kMethodElementwise;
      // A counterexample to a rule the axioms proved means an unsound axiom: say so.
      if (by_axioms) report.detail += " (the axioms proved this rule: an axiom is unsound)";
    }
  } catch (const std::exception& e) {
    // A rule the semantics cannot evaluate (opaque operators) is not proven; say why.
    report.status = VerifyStatus::Unknown;
    report.method.clear();
    report.detail = e.what();
  }
  report.ms = ms_since(start);
  return report;
}

CorpusReport verify_rules(std::span<const Rule> rules, const VerifyOptions& options, const ProgressFn& progress) {
  const auto start = Clock::now();
  CorpusReport out;
  out.rules.resize(rules.size());
  // The axiom instances every rule may use are proved first, in a fixed order (prepare_axiom_instances).
  if (options.use_axioms) prepare_axiom_instances(rules, options.elementwise, options.jobs);
  size_t done = 0;
  std::mutex mu;
  for_each_in_batches(rules.size(), options.jobs, [&](size_t i, z3::context& ctx) {
    RuleReport r = verify_rule(rules[i], ctx, options);
    std::lock_guard lock(mu);
    out.rules[i] = std::move(r);
    ++done;
    if (progress) progress(done, rules.size(), out.rules[i]);
  });
  for (const RuleReport& r : out.rules) {
    switch (r.status) {
      case VerifyStatus::Verified:
        ++out.verified;
        (r.method == kMethodAxioms ? out.by_axioms : out.by_elementwise)++;
        break;
      case VerifyStatus::Wrong: ++out.wrong; break;
      case VerifyStatus::Unknown: ++out.unknown; break;
    }
  }
  out.ms = ms_since(start);
  return out;
}

std::string format_report_line(const RuleReport& r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%8.0f ms", r.ms);
  std::string id = r.id.size() < 36 ? r.id + std::string(36 - r.id.size(), ' ') : r.id;
  std::string status(status_name(r.status));
  status.resize(9, ' ');
  std::string method = r.method.empty() ? "-" : r.method;
  method.resize(15, ' ');
  std::string line = id + " " + status + method + buf;
  if (r.status == VerifyStatus::Unknown && !r.detail.empty()) line += "  (" + r.detail + ")";
  return line;
}

std::string format_summary(const CorpusReport& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%zu rules: %d verified (%d for all shapes by axioms, %d element-wise on concrete shapes), "
                "%d wrong, %d unknown in %.2f s (%.1f rules/s)",
                r.rules.size(), r.verified, r.by_axioms, r.by_elementwise, r.wrong, r.unknown, r.ms / 1000,
                r.ms > 0 ? 1000.0 * r.rules.size() / r.ms : 0.0);
  return buf;
}

nlohmann::json report_to_json(const CorpusReport& report) {
  nlohmann::json j;
  j["summary"] = {{"rules", report.rules.size()}, {"verified", report.verified},  {"wrong", report.wrong},
                  {"unknown", report.unknown},    {"by_axioms", report.by_axioms}, {"by_elementwise", report.by_elementwise},
                  {"ms", report.ms}};
  j["rules"] = nlohmann::json::array();
  for (const RuleReport& r : report.rules) {
    nlohmann::json e = {{"id", r.id}, {"status", status_name(r.status)}, {"method", r.method}, {"ms", r.ms}};
    if (!r.source.empty()) e["source"] = r.source;
    for (const VarShapes& s : r.shapes) {
      nlohmann::json sj = nlohmann::json::object();
      for (const auto& [name, shape] : s) sj[name] = shape;
      e["shapes"].push_back(sj);
    }
    if (r.counterexample) e["counterexample"] = counterexample_to_json(*r.counterexample);
    if (!r.detail.empty()) e["detail"] = r.detail;
    if (!r.axiom_failure.empty()) e["not_for_all_shapes"] = r.axiom_failure;
    j["rules"].push_back(std::move(e));
  }
  return j;
}

}  // namespace teq
