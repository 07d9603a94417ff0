// ruleverify FILE...: proves every rule of JSON corpora, Tensat rule text or TASO graph_subst.pb files
// with Z3 (verify/prover.h). One line per rule, counterexamples for wrong ones, a summary; exit 0 only if
// every rule is verified, 1 if any is wrong, unknown or could not be imported, 2 on unreadable input or a
// bad command line (docs/errors.md lists the messages).
#include <iostream>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "tools/cli_checks.h"
#include "verify/ruleverify_app.h"

using namespace teq;

using teq::cli::kNonNegative;

int main(int argc, char** argv) {
  CLI::App app{"ruleverify: prove tensor rewrite rules with Z3 (element-wise on concrete shapes, and for all "
               "shapes from operator axioms)"};
  RuleverifyConfig config;
  VerifyOptions& opt = config.options;
  bool no_axioms = false, no_probe = false;
  app.add_option("files", config.files, "rule files: JSON corpus, Tensat rule text, TASO graph_subst.pb")->required();
  // Budgets are Z3 resource limits (counts of Z3's work), so a verdict is the same on an idle and a loaded
  // machine; the wall-clock guard is a last resort whose verdicts are reported as machine-dependent.
  app.add_option("--rlimit", opt.elementwise.rlimit,
                 "Z3 resource limit per element-wise query (one output element on one shape assignment); 0 = none")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--axiom-rlimit", opt.axiom_rlimit, "Z3 resource limit of the proof from axioms, per rule")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--guard-ms", opt.elementwise.timeout_ms,
                 "wall-clock guard per rule, a last resort: a rule it stops is unknown, and says so; 0 = none")
      ->check(kNonNegative)
      ->capture_default_str();
  // The old wall-clock budgets made verdicts depend on the machine's load: refused with the replacement.
  std::string removed_timeout, removed_axiom_timeout;
  app.add_option("--timeout-ms", removed_timeout, "removed: use --rlimit (and --guard-ms)");
  app.add_option("--axiom-timeout-ms", removed_axiom_timeout, "removed: use --axiom-rlimit");
  app.add_option("--jobs,-j", opt.jobs, "worker threads (0 = all cores)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--rule", config.only, "verify only the rule with this id (repeatable)");
  app.add_option("--json", config.json_path, "write a JSON report (statuses, methods, times, counterexamples)");
  app.add_option("--shapes", opt.elementwise.shapes.max_assignments, "shape assignments per rule")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--grouped-conv", opt.elementwise.grouped_conv, "also check an assignment with grouped convolutions");
  app.add_flag("--strict-shapes", opt.elementwise.coincidence_is_wrong,
               "also count as wrong a rule that holds only where unrelated extents agree (its sides are "
               "well-shaped with different shapes once one dimension is moved); rulegen drops such rules");
  app.add_flag("--no-axioms", no_axioms, "skip the shape-generic proof from axioms");
  app.add_flag("--elementwise-too", opt.elementwise_too,
               "also prove element-wise on concrete shapes the rules proved for all shapes (cross-checks the axioms)");
  app.add_flag("--no-probe", no_probe, "let Z3 find every counterexample (no random probe in double first)");
  app.add_flag("--update", config.update, "write each rule's verification result back into its JSON corpus file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // usage errors are bad input, like unreadable files
  }
  for (const auto& [flag, replacement] : {std::pair{"--timeout-ms", "--rlimit N (and --guard-ms N)"},
                                          std::pair{"--axiom-timeout-ms", "--axiom-rlimit N"}})
    if (app.count(flag) > 0) {
      std::cerr << "ruleverify: " << flag << " was removed: budgets are Z3 resource limits now, so that verdicts "
                << "do not depend on the machine's load; use " << replacement << "\n";
      return 2;
    }
  opt.use_axioms = !no_axioms;
  opt.elementwise.random_probe = !no_probe;

  return run_ruleverify(config);
}
