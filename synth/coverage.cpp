#include "synth/coverage.h"

#include <atomic>
#include <cstdio>
#include <thread>

namespace teq::synth {

CoverageReport derive_coverage(const RuleCorpus& base, const ImportResult& target, const std::vector<LeafType>& types,
                               const DeriveLimits& limits, int threads) {
  std::vector<Rule> rules = both_directions(base.rules);
  CoverageReport report;
  report.total = target.total;
  const auto& todo = target.corpus.rules;
  report.entries.resize(todo.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
      DeriveResult d = derive_rule(todo[i], rules, types, limits);
      report.entries[i] = {todo[i].id, d.derived, d.reason, d.derived ? std::vector<std::string>{} : rule_lines(todo[i])};
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const CoverageEntry& e : report.entries) report.derived += e.derived;
  for (const ImportIssue& s : target.skipped) report.entries.push_back({s.rule_id, false, "not imported: " + s.reason, {}});
  return report;
}

std::string format_coverage(const CoverageReport& report, const std::string& target_name) {
  char head[256];
  std::snprintf(head, sizeof head, "derived %zu/%zu (%.1f%%) of %s\n", report.derived, report.total, report.percent(),
                target_name.c_str());
  std::string out = head;
  for (const CoverageEntry& e : report.entries)
    if (!e.derived) {
      out += "not derived: " + e.rule_id + ": " + e.reason + "\n";
      for (const std::string& line : e.rule) out += "    " + line + "\n";
    }
  return out;
}

}  // namespace teq::synth
