// Verifier throughput: the hand-written seed corpus (tests/data/seed.json) verified on 1 and 2 threads, element-wise only
// and with the axiom proofs; reports rules per second as a counter. The goal is the full corpus in under
// two minutes on two cores. Prints figures only.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "rules/corpus.h"
#include "verify/prover.h"

namespace teq {
namespace {

/// $TEQ_CORPUS, else tests/data/seed.json below the working directory, else beside the build tree
/// (<root>/<build>/bin/verify_bench -> <root>/tests/data/seed.json).
const RuleCorpus& corpus() {
  static const RuleCorpus c = [] {
    namespace fs = std::filesystem;
    std::vector<fs::path> candidates;
    if (const char* env = std::getenv("TEQ_CORPUS")) candidates.emplace_back(env);
    candidates.emplace_back("tests/data/seed.json");
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back(exe.parent_path().parent_path().parent_path() / "tests/data/seed.json");
    for (const fs::path& p : candidates)
      if (fs::exists(p)) return load_corpus(p);
    return load_corpus(candidates.front());  // throws with the file name
  }();
  return c;
}

void BM_VerifyCorpus(benchmark::State& state) {
  VerifyOptions opt;
  opt.jobs = static_cast<int>(state.range(0));
  opt.use_axioms = state.range(1) != 0;
  int verified = 0;
  for (auto _ : state) {
    CorpusReport r = verify_rules(corpus().rules, opt);
    verified = r.verified;
    benchmark::DoNotOptimize(r);
  }
  state.counters["rules"] = static_cast<double>(corpus().rules.size());
  state.counters["verified"] = verified;
  state.counters["rules_per_s"] = benchmark::Counter(static_cast<double>(corpus().rules.size() * state.iterations()),
                                                     benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VerifyCorpus)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->ArgNames({"jobs", "axioms"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace teq

BENCHMARK_MAIN();
