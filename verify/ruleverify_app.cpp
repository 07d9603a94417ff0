#include "verify/ruleverify_app.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "rules/import/load_rules.h"

namespace teq {

namespace {

// Loads every file, reporting the rules each skipped. Returns 0, or the exit status 2 (said on err) when
// a file cannot be read or --update is given a file that is not a JSON corpus.
int load_inputs(const RuleverifyConfig& config, RuleSet& set) {
  std::ostream& err = *config.err;
  try {
    set = load_rule_set({config.files.begin(), config.files.end()});
  } catch (const std::exception& e) {
    err << "ruleverify: " << e.what() << "\n";
    return 2;
  }
  for (const RuleFile& file : set.files) {
    if (config.update && file.format != RuleFileFormat::Json) {
      err << "ruleverify: " << file.path.string() << ": --update writes results into JSON corpora, and this is not one\n";
      return 2;
    }
    for (const ImportIssue& s : file.rules.skipped)
      err << "ruleverify: " << file.path.string() << ": skipped rule " << s.rule_id << ": " << s.reason << "\n";
  }
  return 0;
}

// The rules to verify (all, or those --only names) and where each came from. Returns 0, or 2 (said on
// err) when --only names an id no file has.
int select_rules(const RuleverifyConfig& config, const RuleSet& set, std::vector<Rule>& rules,
                 std::vector<RuleOrigin>& origin) {
  std::set<std::string> wanted(config.only.begin(), config.only.end()), seen;
  for (size_t k = 0; k < set.corpus.rules.size(); ++k) {
    const Rule& r = set.corpus.rules[k];
    if (!wanted.empty() && !wanted.contains(r.id)) continue;
    seen.insert(r.id);
    rules.push_back(r);
    origin.push_back(set.origin[k]);
  }
  for (const std::string& id : wanted)
    if (!seen.contains(id)) {
      *config.err << "ruleverify: no rule with id '" << id << "'\n";
      return 2;
    }
  return 0;
}

CorpusReport verify_with_progress(const std::vector<Rule>& rules, const RuleverifyConfig& config) {
  std::ostream& err = *config.err;
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
    char line[128];
    std::snprintf(line, sizeof line, "ruleverify: %zu/%zu rules, %d wrong, %d unknown, %.1f s\n", done, total, wrong,
                  unknown, std::chrono::duration<double>(now - start).count());
    err << line;
  };
  return verify_rules(rules, config.options, progress);
}

// One line a rule; under a wrong one, the rule and its counterexample (or the reason), indented.
void print_report(std::ostream& out, const CorpusReport& report, const std::vector<Rule>& rules, size_t skipped) {
  for (size_t k = 0; k < report.rules.size(); ++k) {
    const RuleReport& r = report.rules[k];
    out << format_report_line(r) << "\n";
    if (r.status == VerifyStatus::Wrong) {
      for (const std::string& line : rule_lines(rules[k])) out << "    " << line << "\n";
      if (r.counterexample) {
        std::string text = format_counterexample(*r.counterexample);
        for (size_t pos = 0, nl; pos < text.size(); pos = nl + 1) {
          nl = text.find('\n', pos);
          if (nl == std::string::npos) nl = text.size();
          out << "    " << text.substr(pos, nl - pos) << "\n";
        }
      } else if (!r.detail.empty()) {
        out << "    " << r.detail << "\n";
      }
    }
  }
  out << format_summary(report);
  if (skipped) out << "; " << skipped << " rules could not be imported (see stderr)";
  out << "\n";
}

// --json: the report with the skipped rules. Returns 0, or 2 (said on err) when the file cannot be written.
int write_json_report(const RuleverifyConfig& config, const CorpusReport& report, const RuleSet& set,
                      size_t skipped) {
  nlohmann::json j = report_to_json(report);
  j["summary"]["skipped"] = skipped;
  for (const RuleFile& file : set.files)
    for (const ImportIssue& s : file.rules.skipped)
      j["skipped"].push_back({{"file", file.path.string()}, {"id", s.rule_id}, {"reason", s.reason}});
  std::ofstream file(config.json_path);
  file << j.dump(2) << "\n";
  if (!file) {
    *config.err << "ruleverify: cannot write " << config.json_path << "\n";
    return 2;
  }
  return 0;
}

// --update: each rule's verdict written back into the corpus file it came from. Returns 0, or 2 (said on
// err) when a file cannot be saved.
int update_corpora(const RuleverifyConfig& config, const CorpusReport& report, const std::vector<RuleOrigin>& origin,
                   RuleSet& set) {
  for (size_t k = 0; k < report.rules.size(); ++k) {
    const RuleReport& r = report.rules[k];
    Rule& rule = set.files[origin[k].file].rules.corpus.rules[origin[k].index];
    rule.verification = Verification{std::string(status_name(r.status)), r.method, std::round(r.ms)};
  }
  for (const RuleFile& file : set.files) {  // all JSON: --update refuses other formats in load_inputs
    try {
      save_corpus(file.rules.corpus, file.path);
    } catch (const std::exception& e) {
      *config.err << "ruleverify: " << e.what() << "\n";
      return 2;
    }
  }
  return 0;
}

}  // namespace

int run_ruleverify(const RuleverifyConfig& config) {
  // Load everything first: unreadable input is exit status 2 before any proof starts.
  RuleSet set;
  if (int rc = load_inputs(config, set); rc != 0) return rc;
  const size_t skipped = set.skipped();
  std::vector<Rule> rules;
  std::vector<RuleOrigin> origin;  // of each rule to verify
  if (int rc = select_rules(config, set, rules, origin); rc != 0) return rc;

  CorpusReport report = verify_with_progress(rules, config);
  print_report(*config.out, report, rules, skipped);
  if (!config.json_path.empty())
    if (int rc = write_json_report(config, report, set, skipped); rc != 0) return rc;
  if (config.update)
    if (int rc = update_corpora(config, report, origin, set); rc != 0) return rc;
  return report.all_verified() && skipped == 0 ? 0 : 1;
}

}  // namespace teq
