// optimize_sequential: the TASO-style baseline. A backtracking search over whole graphs: take the
// cheapest graph from a priority queue, apply every rule at every match site (multi-pattern rules by
// joining their patterns' matches on shared variables), keep each new graph whose cost is below
// alpha x the best cost so far, dedupe graphs by hash, stop on a budget of graphs or time. Matching is
// done directly on the Expr (no e-graph), so this baseline shares only the rules and the cost model
// with saturation, which is what the benchmark report compares.
// Usage:
//   OptimizeReport r = optimize_sequential(graph, corpus, cost, {.alpha = 1.05, .time_limit_s = 30});
//   // r.optimized has the same inputs and outputs; r.optimized_cost <= r.original_cost
#pragma once

#include <functional>

#include "optimizer/optimize.h"

namespace teq {

/// Progress once per graph taken from the queue.
struct SequentialProgress {
  size_t expanded = 0;    // graphs taken from the queue so far
  size_t generated = 0;   // distinct graphs produced by rewrites so far
  size_t queued = 0;      // graphs waiting in the queue
  double best_cost = 0;
  double seconds = 0;
};

struct SequentialConfig {
  double alpha = 1.05;         // TASO's relaxation: keep candidates with cost < alpha * best
  size_t budget = 1'000;       // graphs taken from the queue (TASO's "budget")
  // Distinct graphs generated: a count that decides where the search stops when expanding one graph of a
  // large model takes long (NasNet-A: 13 expansions in 20 s), so the result does not depend on the load.
  size_t max_graphs = 1'000'000;
  double time_limit_s = 60;    // a last-resort guard, reported as time-limit
  size_t max_queue = 1'000;    // bound on waiting graphs (memory); the costliest are dropped beyond it
  std::function<void(const SequentialProgress&)> on_progress = {};  // may be empty
};

/// Searches for a cheaper equivalent of `graph` with `rules` under `cost`. The report's
/// saturate_seconds holds the search time (extract_seconds is 0), iterations the graphs expanded,
/// enodes the distinct graphs generated, rules_used the rule applications on the way to the best graph,
/// stop.reason one of QueueEmpty, Budget, GraphLimit, TimeLimit. Throws ShapeError for an ill-shaped graph.
/// The result is never costlier than the input, always acyclic and well-shaped, with the same roots.
OptimizeReport optimize_sequential(const Expr& graph, const RuleCorpus& rules, const CostModel& cost,
                                   const SequentialConfig& config);

}  // namespace teq
