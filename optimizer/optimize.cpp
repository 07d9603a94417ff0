#include "optimizer/optimize.h"

#include <chrono>

#include "optimizer/engine/cycles.h"
#include "optimizer/engine/egraph.h"
#include "optimizer/engine/extract.h"
#include "optimizer/engine/extract_greedy.h"
#include "optimizer/engine/reshape_free.h"
#include "optimizer/ilp/extract_ilp.h"
#include "rules/evaluator.h"

namespace teq {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

std::string to_string(const SearchStop& stop) {
  using enum SearchStop::Reason;
  std::string text;
  switch (stop.reason) {
    case QueueEmpty: text = "queue-empty"; break;
    case Budget: text = "budget"; break;
    case GraphLimit: text = "graph-limit"; break;
    // The saturation reasons are spelled as the Runner spells them.
    case Saturated: text = to_string(StopReason::Saturated); break;
    case NodeLimit: text = to_string(StopReason::NodeLimit); break;
    case IterLimit: text = to_string(StopReason::IterLimit); break;
    case TimeLimit: text = to_string(StopReason::TimeLimit); break;
  }
  if (stop.extraction_failure)
    text += "; extraction failed (" + *stop.extraction_failure + "), input returned unchanged";
  return text;
}

namespace {
SearchStop::Reason to_search_stop(StopReason runner_stop) {
  switch (runner_stop) {
    case StopReason::Saturated: return SearchStop::Reason::Saturated;
    case StopReason::NodeLimit: return SearchStop::Reason::NodeLimit;
    case StopReason::IterLimit: return SearchStop::Reason::IterLimit;
    case StopReason::TimeLimit: return SearchStop::Reason::TimeLimit;
  }
  return SearchStop::Reason::Saturated;
}

/// One round: e-graph from `graph`, saturate, extract.
OptimizeReport optimize_round(const Expr& graph, const RuleCorpus& rules, const CostModel& cost,
                              const OptimizeConfig& config) {
  OptimizeReport report;
  report.optimized = graph;
  report.original_cost = report.optimized_cost = graph_cost(graph, cost, config.leaf_types);

  // Saturate.
  const auto t0 = Clock::now();
  EGraph egraph;
  egraph.set_leaf_types(config.leaf_types);
  const std::vector<ClassId> ids = egraph.add_expr(graph);
  std::vector<ClassId> roots;
  for (ExprId r : graph.roots()) roots.push_back(ids[r.value]);
  Runner runner(rules.rules, config.saturation);
  const RunReport run = runner.run(egraph);
  report.saturate_seconds = seconds_since(t0);
  report.iterations = run.iterations;
  report.enodes = egraph.num_nodes();
  report.eclasses = egraph.num_classes();
  report.stop.reason = to_search_stop(run.stop);
  report.notes = run.notes;
  report.own_output_skipped = run.own_output_skipped;

  // Break cycles, then extract.
  const auto t1 = Clock::now();
  std::vector<bool> blacklist;
  report.blacklisted = blacklist_cycles(egraph, blacklist).blacklisted;
  const ExtractionProblem problem = make_problem(egraph, roots, cost, blacklist);
  Extraction ex;
  switch (config.extract) {
    case ExtractMethod::Greedy: ex = extract_greedy(problem); break;
    case ExtractMethod::DagGreedy: ex = extract_dag_greedy(problem); break;
    case ExtractMethod::Ilp:
      ex = extract_ilp(problem, IlpConfig{.max_nodes = config.ilp_max_nodes,
                                          .max_lp_iterations = config.ilp_max_lp_iterations,
                                          .time_limit_s = config.ilp_time_limit_s});
      break;
  }
  report.extract_seconds = seconds_since(t1);
  report.extraction = ExtractionStats{ex.method, ex.cost, ex.bound, ex.gap(), ex.status};
  if (!ex.status.empty()) report.notes.push_back("extraction: " + ex.status);
  if (!ex.ok()) {
    report.stop.extraction_failure = ex.status;
    return report;
  }

  Expr optimized = build_expr(egraph, ex.choice, roots);
  const double optimized_cost = graph_cost(optimized, cost, config.leaf_types);
  if (optimized_cost > report.original_cost) {
    // A heuristic extractor can lose to the input (tree cost ignores sharing): keep the input.
    report.notes.push_back("extracted graph costs more than the input; input kept");
    return report;
  }
  // Explanation: which rules made the e-nodes of the extracted graph.
  std::vector<bool> seen(egraph.class_slots(), false);
  std::vector<ClassId> todo(problem.roots.begin(), problem.roots.end());
  while (!todo.empty()) {
    ClassId c = todo.back();
    todo.pop_back();
    if (seen[c.value]) continue;
    seen[c.value] = true;
    const NodeId n = ex.choice[c.value];
    if (auto rule = egraph.origin(n)) ++report.rules_used[runner.rule_ids()[rule->value]];
    for (ClassId d : problem.nodes[n.value].children) todo.push_back(d);
  }
  report.optimized = std::move(optimized);
  report.optimized_cost = optimized_cost;
  return report;
}

}  // namespace

OptimizeReport optimize_graph(const Expr& graph, const RuleCorpus& rules, const CostModel& cost,
                              const OptimizeConfig& config) {
  for (const ExprNode& n : graph.nodes())
    if (n.op == OpKind::Var) throw ShapeError("optimize_graph: the graph has a pattern variable ?" + n.name);
  infer_shapes(graph, {});  // throws ShapeError naming the ill-shaped subterm

  // Reshapes around element-wise computations go first (engine/reshape_free.h): never worse, and as an
  // alternative in the e-graph they only multiply the extraction's ties.
  const ReshapeFree canonical = remove_reshapes_around_elementwise(graph, config.opaque);
  OptimizeReport report = optimize_round(canonical.graph, rules, cost, config);
  // Another round only after one that lowered its starting cost by kRoundMinGain with at least one rule: a
  // round that applied none returns its own input with common subterms shared, which the e-graph shares
  // anyway (the next round would extract the same graph), and one that gained less than 0.1% has nothing a
  // further round builds on (a 32-layer LLaMA: 0.01% from re-associated products, then a second round's ILP
  // ran 56 s, into the 60 s wall-clock guard, and changed nothing).
  auto worth_another = [](const OptimizeReport& round, double start_cost) {
    return !round.rules_used.empty() && round.optimized_cost < start_cost * (1 - kRoundMinGain);
  };
  bool another_round = worth_another(report, report.original_cost);
  if (canonical.removed > 0) {
    report.original_cost = graph_cost(graph, cost);
    report.rules_used[kReshapeFreeRule] += canonical.removed;
  }
  report.rounds = 1;
  if (report.stop.reason == SearchStop::Reason::TimeLimit) report.rounds_stopped_by_clock.push_back(1);
  // Further rounds start from the extracted graph: a multi-pattern rule applies only in the first k_multi
  // iterations, so pairs that appear only after other rewrites (a batched matmul whose halves meet a second
  // batching) are matched in the next round, on a small e-graph, instead of in one e-graph past its limits.
  // The time limits are shared by all rounds: saturation time and extraction time are each a budget.
  if (config.rounds > 1 && !another_round && report.optimized_cost < report.original_cost)
    report.notes.push_back("round 1 lowered the cost by less than 0.1% or by no rule; rounds stop");
  while (report.rounds < config.rounds && another_round &&
         report.saturate_seconds < config.saturation.time_limit_s && report.extract_seconds < config.ilp_time_limit_s) {
    OptimizeConfig round_config = config;
    round_config.saturation.time_limit_s = config.saturation.time_limit_s - report.saturate_seconds;
    round_config.ilp_time_limit_s = config.ilp_time_limit_s - report.extract_seconds;
    OptimizeReport next = optimize_round(report.optimized, rules, cost, round_config);
    report.saturate_seconds += next.saturate_seconds;
    report.extract_seconds += next.extract_seconds;
    report.iterations += next.iterations;
    report.enodes = std::max(report.enodes, next.enodes);
    report.eclasses = std::max(report.eclasses, next.eclasses);
    report.blacklisted += next.blacklisted;
    for (const auto& [rule, n] : next.own_output_skipped) report.own_output_skipped[rule] += n;
    ++report.rounds;
    if (next.stop.reason == SearchStop::Reason::TimeLimit) report.rounds_stopped_by_clock.push_back(report.rounds);
    const bool improved = next.optimized_cost < report.optimized_cost;
    another_round = worth_another(next, report.optimized_cost);
    if (improved) {
      report.optimized = std::move(next.optimized);
      report.optimized_cost = next.optimized_cost;
      report.stop = next.stop;
      report.extraction = next.extraction;
      for (const auto& [rule, count] : next.rules_used) report.rules_used[rule] += count;
    }
    report.notes.push_back("round " + std::to_string(report.rounds) + ": " + to_string(next.stop) +
                           (!improved       ? ", no gain; rounds stop"
                            : another_round ? ", cost lowered"
                                            : ", cost lowered by less than 0.1% or by no rule; rounds stop"));
    if (!improved) break;
  }
  return report;
}

}  // namespace teq
