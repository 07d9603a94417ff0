// Times rulegen's enumeration and fingerprinting (`rulegen --max-ops N`, default vocabulary, 20 leaf
// tensors as TASO) on 2 threads and reports graphs, classes, candidates and peak memory (getrusage).
// For scale: TASO's generator visits ~16.4 M graphs at size 3 in 2 min 45 s with 7.1 GB peak memory.
// Proving and minimization are timed by the full `rulegen` run (its summary line), not here.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include "synth/enumerate.h"

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

}  // namespace

BENCHMARK_MAIN();
