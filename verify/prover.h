// The verifier's entry point: looks for a counterexample in double on the rule's shape assignments, tries
// to prove it for all shapes from operator axioms (verify/axioms.h), and proves it element-wise on the
// concrete shapes with Z3 (verify/elementwise.h) where that proof does not succeed; runs a
// corpus in parallel (one Z3 context per thread) and reports per rule and in total. Reading rule files and
// printing are the caller's (tools/ruleverify.cpp).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rules/corpus.h"
#include "verify/counterexample.h"
#include "verify/elementwise.h"

namespace teq {

inline constexpr const char* kMethodElementwise = "z3-elementwise";  // verified on the checked shapes
inline constexpr const char* kMethodAxioms = "axioms";               // verified for all shapes

struct VerifyOptions {
  ElementwiseOptions elementwise;
  /// Try the shape-generic proof from axioms for rules no probe refutes.
  bool use_axioms = true;
  /// Also prove element-wise with Z3 a rule the axioms proved for all shapes (a cross-check of the axioms;
  /// off by default: it was half of the gate's time).
  bool elementwise_too = false;
  /// Z3 resource limit of the proof from axioms (and of its consistency check); see AxiomOptions::rlimit.
  unsigned axiom_rlimit = 200'000;
  /// Worker threads for a corpus; 0 = all cores.
  int jobs = 0;
};

struct RuleReport {
  std::string id;
  std::string source;                 // provenance from the rule file, if any
  VerifyStatus status = VerifyStatus::Unknown;
  std::string method;                 // kMethodElementwise or kMethodAxioms; empty when nothing decided
  double ms = 0;
  std::vector<VarShapes> shapes;      // shape assignments checked element-wise
  std::optional<Counterexample> counterexample;
  std::string detail;                 // reason for unknown, or extra facts
  std::string axiom_failure;          // why a rule verified element-wise has no proof for all shapes
};

/// Verifies one rule. Example:
///   z3::context ctx;
///   RuleReport r = verify_rule(make_rule("comm", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"}), ctx, {});
///   // r.status == VerifyStatus::Verified, r.method == "axioms" or "z3-elementwise"
RuleReport verify_rule(const Rule& rule, z3::context& ctx, const VerifyOptions& options = {});

struct CorpusReport {
  std::vector<RuleReport> rules;      // in input order
  int verified = 0, wrong = 0, unknown = 0;
  int by_axioms = 0, by_elementwise = 0;  // verified rules, by the strongest method that proved them
  double ms = 0;                      // wall-clock time of the whole run
  bool all_verified() const { return wrong == 0 && unknown == 0; }
};

/// Called after each rule (from worker threads, serialized): rules done so far, total, the rule's report.
using ProgressFn = std::function<void(size_t done, size_t total, const RuleReport&)>;

/// Verifies rules in parallel. Rules i*16 .. i*16+15 share a fresh Z3 context (verify/batches.h), and the
/// axiom instances are proved beforehand in a fixed order, so that a verdict depends on the rule list and
/// the options only, not on the number of threads, their scheduling or the machine's load: the result is
/// deterministic apart from timings.
CorpusReport verify_rules(std::span<const Rule> rules, const VerifyOptions& options = {}, const ProgressFn& progress = {});

/// "matmul-assoc  verified  axioms  12 ms" (fixed-width columns).
std::string format_report_line(const RuleReport& report);
/// "33 rules: 33 verified (20 axioms, 13 z3-elementwise), 0 wrong, 0 unknown in 1.2 s".
std::string format_summary(const CorpusReport& report);
nlohmann::json report_to_json(const CorpusReport& report);

}  // namespace teq
