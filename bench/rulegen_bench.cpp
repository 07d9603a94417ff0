// Times rulegen's enumeration and fingerprinting (`rulegen --max-ops N`, default vocabulary, 20 leaf
// tensors as TASO) on 2 threads and reports graphs, classes, candidates and peak memory (getrusage).
// For scale: TASO's generator visits ~16.4 M graphs at size 3 in 2 min 45 s with 7.1 GB peak memory.
// BM_RulegenFull times the whole pipeline (`rulegen --max-ops N`: enumerate, prune, prove lazily,
// minimize, restore) the same way, its ratio to TASO's 165 s (vs_taso_165s, below 1 is faster) and each phase's
// seconds (PHASE_s); size 3 takes minutes (docs/rulegen.md, "What the default run gives"), so filter it out for
// quick runs (--benchmark_filter=Enumerate).
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <algorithm>
#include <string>

#include "synth/enumerate.h"
#include "synth/rulegen.h"

namespace {

void BM_RulegenEnumerate(benchmark::State& state) {
  using namespace teq::synth;
  const int max_ops = static_cast<int>(state.range(0));
  Vocabulary vocab = make_vocabulary(default_op_names(), default_leaf_types(3));
  Enumeration e;
  for (auto _ : state) {
    e = enumerate_terms(vocab, {.max_ops = max_ops, .max_inputs = 4, .threads = 2});
    benchmark::DoNotOptimize(e.classes.size());
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["graphs"] = static_cast<double>(e.total_terms());
  state.counters["classes"] = static_cast<double>(e.classes.size());
  state.counters["candidates"] = static_cast<double>(e.equations.size());
  state.counters["peak_rss_MB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  state.counters["graphs_per_s"] = static_cast<double>(e.total_terms()) / e.seconds;
}
BENCHMARK(BM_RulegenEnumerate)->Arg(2)->Arg(3)->Unit(benchmark::kSecond)->Iterations(1);

void BM_RulegenFull(benchmark::State& state) {
  using namespace teq::synth;
  RulegenConfig config;
  config.max_ops = static_cast<int>(state.range(0));
  config.threads = 2;
  RulegenResult r;
  for (auto _ : state) {
    r = run_rulegen(config);
    benchmark::DoNotOptimize(r.stats.kept);
  }
  // TASO's generator at size 3 on one core of this kind of machine (issue 21): the reference rulegen must beat.
  constexpr double kTasoSize3Seconds = 165;
  state.counters["seconds"] = r.stats.seconds;
  state.counters["vs_taso_165s"] = r.stats.seconds / kTasoSize3Seconds;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["graphs"] = static_cast<double>(r.stats.enumerated);
  state.counters["candidates"] = static_cast<double>(r.stats.candidates);
  state.counters["proved"] = static_cast<double>(r.stats.proved);
  state.counters["kept"] = static_cast<double>(r.stats.kept);
  state.counters["peak_rss_MB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  // Each phase's seconds (generator.stats.phases), e.g. minimized_s and restored_s; "kept" is the whole run.
  for (const PhaseStats& p : r.stats.phases) {
    if (p.phase == "kept") continue;
    std::string name = p.phase + "_s";
    std::replace(name.begin(), name.end(), ' ', '_');
    state.counters[name] = p.seconds;
  }
}
BENCHMARK(BM_RulegenFull)->Arg(2)->Arg(3)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
