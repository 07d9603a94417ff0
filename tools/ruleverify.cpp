// ruleverify FILE...: proves every rule of JSON corpora, Tensat rule text or TASO graph_subst.pb files
// with Z3 (verify/prover.h). One line per rule, counterexamples for wrong ones, a summary; exit 0 only if
// every rule is verified, 1 if any is wrong, unknown or could not be imported, 2 on unreadable input or a
// bad command line (docs/errors.md lists the messages).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <set>

#include <CLI/CLI.hpp>

#include "tools/cli_checks.h"

#include "rules/import/load_rules.h"
#include "rules/sexpr.h"
#include "verify/prover.h"

using namespace teq;

using teq::cli::kNonNegative;

int main(int argc, char** argv) {
  CLI::App app{"ruleverify: prove tensor rewrite rules with Z3 (element-wise on concrete shapes, and for all "
               "shapes from operator axioms)"};
  std::vector<std::string> files, only;
  std::string json_path;
  VerifyOptions opt;
  bool no_axioms = false, no_probe = false, update = false;
  app.add_option("files", files, "rule files: JSON corpus, Tensat rule text, TASO graph_subst.pb")->required();
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
  app.add_option("--rule", only, "verify only the rule with this id (repeatable)");
  app.add_option("--json", json_path, "write a JSON report (statuses, methods, times, counterexamples)");
  app.add_option("--shapes", opt.elementwise.shapes.max_assignments, "shape assignments per rule")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--grouped-conv", opt.elementwise.grouped_conv, "also check an assignment with grouped convolutions");
  app.add_flag("--no-axioms", no_axioms, "skip the shape-generic proof from axioms");
  app.add_flag("--no-probe", no_probe, "let Z3 find every counterexample (no random probe in double first)");
  app.add_flag("--update", update, "write each rule's verification result back into its JSON corpus file");
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

  // Load everything first: unreadable input is exit status 2 before any proof starts.
  struct Loaded {
    std::string path;
    ImportResult result;
    bool is_json;
  };
  std::vector<Loaded> loaded;
  std::vector<Rule> rules;
  std::vector<std::pair<size_t, size_t>> origin;  // (file, rule index in file) of each rule to verify
  size_t skipped = 0;
  try {
    for (const std::string& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string head(1, '\0');
      in.read(head.data(), 1);
      bool is_json = in && head[0] == '{';
      if (update && in.is_open() && !is_json)
        throw std::invalid_argument(f + ": --update writes results into JSON corpora, and this is not one");
      loaded.push_back({f, load_rules_file(f), is_json});
      for (const ImportIssue& s : loaded.back().result.skipped)
        std::cerr << "ruleverify: " << f << ": skipped rule " << s.rule_id << ": " << s.reason << "\n";
      skipped += loaded.back().result.skipped.size();
    }
  } catch (const std::exception& e) {
    std::cerr << "ruleverify: " << e.what() << "\n";
    return 2;
  }
  std::set<std::string> wanted(only.begin(), only.end()), seen;
  for (size_t f = 0; f < loaded.size(); ++f)
    for (size_t i = 0; i < loaded[f].result.corpus.rules.size(); ++i) {
      const Rule& r = loaded[f].result.corpus.rules[i];
      if (!wanted.empty() && !wanted.contains(r.id)) continue;
      seen.insert(r.id);
      rules.push_back(r);
      origin.emplace_back(f, i);
    }
  for (const std::string& id : wanted)
    if (!seen.contains(id)) {
      std::cerr << "ruleverify: no rule with id '" << id << "'\n";
      return 2;
    }

  // Progress on stderr, at most every two seconds, so long runs show they are alive.
  auto last = std::chrono::steady_clock::now();
  const auto start = last;
  int wrong = 0, unknown = 0;
  ProgressFn progress = [&](size_t done, size_t total, const RuleReport& r) {
    wrong += r.status == VerifyStatus::Wrong;
    unknown += r.status == VerifyStatus::Unknown;
    auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(2) && done != total) return;
    if (now - start < std::chrono::seconds(2)) return;
    last = now;
    std::fprintf(stderr, "ruleverify: %zu/%zu rules, %d wrong, %d unknown, %.1f s\n", done, total, wrong, unknown,
                 std::chrono::duration<double>(now - start).count());
  };
  CorpusReport report = verify_rules(rules, opt, progress);

  for (size_t k = 0; k < report.rules.size(); ++k) {
    const RuleReport& r = report.rules[k];
    std::cout << format_report_line(r) << "\n";
    if (r.status == VerifyStatus::Wrong) {
      const Rule& rule = rules[k];
      for (size_t i = 0; i < rule.lhs.size(); ++i)
        std::cout << "    " << to_sexpr(rule.lhs[i], rule.lhs[i].root()) << "  =>  "
                  << to_sexpr(rule.rhs[i], rule.rhs[i].root()) << "\n";
      if (r.counterexample) {
        std::string text = format_counterexample(*r.counterexample);
        for (size_t pos = 0, nl; pos < text.size(); pos = nl + 1) {
          nl = text.find('\n', pos);
          if (nl == std::string::npos) nl = text.size();
          std::cout << "    " << text.substr(pos, nl - pos) << "\n";
        }
      } else if (!r.detail.empty()) {
        std::cout << "    " << r.detail << "\n";
      }
    }
  }
  std::cout << format_summary(report);
  if (skipped) std::cout << "; " << skipped << " rules could not be imported (see stderr)";
  std::cout << "\n";

  if (!json_path.empty()) {
    nlohmann::json j = report_to_json(report);
    j["summary"]["skipped"] = skipped;
    for (const Loaded& l : loaded)
      for (const ImportIssue& s : l.result.skipped)
        j["skipped"].push_back({{"file", l.path}, {"id", s.rule_id}, {"reason", s.reason}});
    std::ofstream out(json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::cerr << "ruleverify: cannot write " << json_path << "\n";
      return 2;
    }
  }
  if (update) {
    for (size_t k = 0; k < report.rules.size(); ++k) {
      const RuleReport& r = report.rules[k];
      Rule& rule = loaded[origin[k].first].result.corpus.rules[origin[k].second];
      rule.verification = Verification{std::string(status_name(r.status)), r.method, std::round(r.ms)};
    }
    for (const Loaded& l : loaded) {
      if (!l.is_json) continue;  // only our own corpus format records verification results
      try {
        save_corpus(l.result.corpus, l.path);
      } catch (const std::exception& e) {
        std::cerr << "ruleverify: " << e.what() << "\n";
        return 2;
      }
    }
  }
  return report.all_verified() && skipped == 0 ? 0 : 1;
}
