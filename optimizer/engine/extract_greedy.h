// Greedy extractors. extract_greedy: egg's bottom-up fixpoint on tree cost (a shared subgraph counts once
// per use), fast and always acyclic. extract_dag_greedy: the same fixpoint on DAG cost, each class
// carrying the set of classes below its choice so a shared subgraph counts once (as in extraction-gym's
// faster-greedy-dag); it never returns something worse than extract_greedy. Exact answers: extract_ilp.h.
#pragma once

#include <vector>

#include "optimizer/engine/extract.h"

namespace teq {

/// Tree-cost greedy. Classes with no acyclic extraction keep kNoNode; `ok()` is false if a root is one.
Extraction extract_greedy(const ExtractionProblem& problem);

/// Per-class tree cost of the greedy fixpoint (kInfiniteCost: the class has no acyclic extraction).
std::vector<double> tree_costs(const ExtractionProblem& problem);

struct DagGreedyConfig {
  // Beyond either limit the passes stop; the answer is the better of the selection so far (if complete and
  // acyclic) and tree greedy's.
  size_t set_budget = 4'000'000;  // total entries of all class sets (16 bytes each)
  size_t max_passes = 30;
  double time_limit_s = kInfiniteCost;  // wall clock
};

/// DAG-cost greedy; the better of it and extract_greedy (by DAG cost).
Extraction extract_dag_greedy(const ExtractionProblem& problem, const DagGreedyConfig& config = {});

}  // namespace teq
