// Saturation-engine figures (printed, never asserted): e-node insertions per second, rebuild time after a
// batch of merges, e-matching time on an e-graph of 50,000 e-nodes, and ILP extraction time on an e-graph
// of the size Tensat extracts from (a few thousand e-nodes after saturation with multi-pattern rules).
#include <benchmark/benchmark.h>

#include <optional>
#include <random>

#include "optimizer/engine/cycles.h"
#include "optimizer/engine/egraph.h"
#include "optimizer/engine/extract.h"
#include "optimizer/engine/extract_greedy.h"
#include "optimizer/ilp/extract_ilp.h"
#include "optimizer/engine/pattern.h"
#include "optimizer/engine/runner.h"
#include "rules/sexpr.h"
#include "tests/engine/test_rules.h"

namespace teq {
namespace {

constexpr size_t kNodes = 50'000;

/// kNodes e-nodes over 200 inputs of shape [4,4]: random ewadd/ewmul/matmul/relu/tanh on earlier classes.
EGraph random_egraph(uint32_t seed, size_t nodes = kNodes) {
  std::mt19937 rng(seed);
  EGraph g;
  std::vector<ClassId> classes;
  for (int i = 0; i < 200; ++i)
    classes.push_back(g.add(ENode{i % 4 ? OpKind::Input : OpKind::Weight, {4, 4}, {}, "t" + std::to_string(i)}));
  const OpKind ops[] = {OpKind::EwAdd, OpKind::EwMul, OpKind::Matmul, OpKind::Relu, OpKind::Tanh};
  while (g.num_nodes() < nodes) {
    OpKind op = ops[rng() % 5];
    auto pick = [&] { return classes[rng() % classes.size()]; };
    ENode n{op, op == OpKind::Matmul ? std::vector<int64_t>{0} : std::vector<int64_t>{}, {pick()}, {}};
    if (op != OpKind::Relu && op != OpKind::Tanh) n.children.push_back(pick());
    classes.push_back(g.add(std::move(n)));
  }
  g.rebuild();
  return g;
}

void BM_EnodeInsertions(benchmark::State& state) {
  for (auto _ : state) {
    EGraph g = random_egraph(1);
    benchmark::DoNotOptimize(g.num_nodes());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kNodes));
}
BENCHMARK(BM_EnodeInsertions)->Unit(benchmark::kMillisecond);

void BM_RebuildAfterMerges(benchmark::State& state) {
  const size_t merges = static_cast<size_t>(state.range(0));
  size_t classes_after = 0;
  std::optional<EGraph> g;  // destroyed and rebuilt outside the timed region
  for (auto _ : state) {
    state.PauseTiming();
    g.emplace(random_egraph(2));
    std::mt19937 rng(3);
    const std::vector<ClassId> ids = g->class_ids();
    for (size_t i = 0; i < merges; ++i) g->merge(ids[rng() % ids.size()], ids[rng() % ids.size()]);
    state.ResumeTiming();
    g->rebuild();
    classes_after = g->num_classes();
  }
  state.counters["classes_after"] = static_cast<double>(classes_after);
}
// Setting up a 50k e-graph takes far longer than the rebuild measured: a fixed iteration count.
BENCHMARK(BM_RebuildAfterMerges)->Arg(10)->Arg(100)->Arg(1000)->Iterations(10)->Unit(benchmark::kMicrosecond);

void BM_EMatch50k(benchmark::State& state) {
  const EGraph g = random_egraph(4);
  const RuleCorpus rules = test::engine_test_rules(false);
  std::vector<std::pair<Pattern, size_t>> patterns;
  for (const Rule& r : rules.rules) {
    VarTable vars;
    Pattern p(r.lhs[0], vars);
    patterns.emplace_back(std::move(p), vars.names.size());
  }
  size_t matches = 0;
  for (auto _ : state) {
    const ClassIndex index(g);
    matches = 0;
    for (const auto& [p, slots] : patterns) matches += search(g, index, p, slots).size();
  }
  state.counters["enodes"] = static_cast<double>(g.num_nodes());
  state.counters["patterns"] = static_cast<double>(patterns.size());
  state.counters["matches"] = static_cast<double>(matches);
}
BENCHMARK(BM_EMatch50k)->Unit(benchmark::kMillisecond);

/// A transformer-block-like graph (shared inputs for Q/K/V-style projections, MLP, residuals), saturated
/// with the test corpus including multi-pattern rules: an e-graph of a few thousand e-nodes.
ExtractionProblem tensat_sized_problem(size_t* enodes) {
  std::string text = "(let x (input x 16 64))";
  std::string h = "x";
  for (int layer = 0; layer < 4; ++layer) {
    std::string l = std::to_string(layer);
    text += " (let q" + l + " (matmul 0 " + h + " (weight wq" + l + " 64 64)))";
    text += " (let k" + l + " (matmul 0 " + h + " (weight wk" + l + " 64 64)))";
    text += " (let v" + l + " (matmul 0 " + h + " (weight wv" + l + " 64 64)))";
    text += " (let a" + l + " (matmul 0 (matmul 0 q" + l + " (transpose 1 0 k" + l + ")) v" + l + "))";
    text += " (let r" + l + " (ewadd " + h + " a" + l + "))";
    text += " (let m" + l + " (matmul 0 (relu (matmul 0 r" + l + " (weight w1" + l + " 64 128))) (weight w2" + l +
            " 128 64)))";
    text += " (let h" + l + " (ewadd r" + l + " m" + l + "))";
    h = "h" + l;
  }
  text += " " + h;
  const Expr graph = parse_expr(text);
  EGraph g;
  const std::vector<ClassId> ids = g.add_expr(graph);
  const RuleCorpus rules = test::engine_test_rules();
  Runner(rules.rules, RunnerConfig{.node_limit = 4'000, .iter_limit = 6}).run(g);
  std::vector<bool> blacklist;
  blacklist_cycles(g, blacklist);
  *enodes = g.num_nodes();
  return make_problem(g, std::vector<ClassId>{ids[graph.root().value]}, FlopCostModel{}, blacklist);
}

void BM_IlpTensatSized(benchmark::State& state) {
  size_t enodes = 0;
  const ExtractionProblem p = tensat_sized_problem(&enodes);
  Extraction ex;
  for (auto _ : state) ex = extract_ilp(p, IlpConfig{.time_limit_s = 20});
  const Extraction greedy = extract_greedy(p);
  state.counters["enodes"] = static_cast<double>(enodes);
  state.counters["greedy_cost_us"] = greedy.cost * 1e6;
  state.counters["ilp_cost_us"] = ex.cost * 1e6;
  state.counters["ilp_bound_us"] = ex.bound * 1e6;
  state.counters["gap_pct"] = 100 * ex.gap();
  state.counters["optimal"] = ex.optimal;
}
BENCHMARK(BM_IlpTensatSized)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace teq

BENCHMARK_MAIN();
