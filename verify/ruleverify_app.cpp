#include "verify/ruleverify_app.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "rules/import/load_rules.h"

namespace teq {

int run_ruleverify(const RuleverifyConfig& config) {
  std::ostream& out = *config.out;
  std::ostream& err = *config.err;
  // Load everything first: unreadable input is exit status 2 before any proof starts.
  RuleSet set;
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
  const size_t skipped = set.skipped();
  std::vector<Rule> rules;
  std::vector<RuleOrigin> origin;  // of each rule to verify
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
      err << "ruleverify: no rule with id '" << id << "'\n";
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
    char line[128];
    std::snprintf(line, sizeof line, "ruleverify: %zu/%zu rules, %d wrong, %d unknown, %.1f s\n", done, total, wrong,
                  unknown, std::chrono::duration<double>(now - start).count());
    err << line;
  };
  CorpusReport report = verify_rules(rules, config.options, progress);

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

  if (!config.json_path.empty()) {
    nlohmann::json j = report_to_json(report);
    j["summary"]["skipped"] = skipped;
    for (const RuleFile& file : set.files)
      for (const ImportIssue& s : file.rules.skipped)
        j["skipped"].push_back({{"file", file.path.string()}, {"id", s.rule_id}, {"reason", s.reason}});
    std::ofstream file(config.json_path);
    file << j.dump(2) << "\n";
    if (!file) {
      err << "ruleverify: cannot write " << config.json_path << "\n";
      return 2;
    }
  }
  if (config.update) {
    for (size_t k = 0; k < report.rules.size(); ++k) {
      const RuleReport& r = report.rules[k];
      Rule& rule = set.files[origin[k].file].rules.corpus.rules[origin[k].index];
      rule.verification = Verification{std::string(status_name(r.status)), r.method, std::round(r.ms)};
    }
    for (const RuleFile& file : set.files) {  // all JSON: --update refuses other formats above
      try {
        save_corpus(file.rules.corpus, file.path);
      } catch (const std::exception& e) {
        err << "ruleverify: " << e.what() << "\n";
        return 2;
      }
    }
  }
  return report.all_verified() && skipped == 0 ? 0 : 1;
}

}  // namespace teq
