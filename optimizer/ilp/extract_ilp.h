// ILP extraction with CBC (as Tensat): a binary per e-node and per e-class, roots chosen, exactly one node
// per chosen class, a chosen node's child classes chosen, and acyclicity by order variables on the
// e-class edges inside strongly connected components (none are needed where the e-graph is acyclic).
// Warm-started from the better greedy answer, stopped by a node limit (a wall-clock guard behind it); the best
// feasible answer wins.
#pragma once

#include "optimizer/engine/extract.h"

namespace teq {

struct IlpConfig {
  /// Branch-and-bound nodes CBC may explore before it returns its best answer: the limit that decides the
  /// result. It is a count, so one e-graph gives one extraction on an idle and on a loaded machine.
  int max_nodes = 1000;
  /// Simplex iterations of the root LP relaxation; beyond them the LP counts as unsolved and the incumbent
  /// (greedy's) is the answer. A count, like max_nodes: the LP of a 100k-e-node e-graph takes minutes.
  int max_lp_iterations = 100'000;
  /// Wall-clock guard, a last resort: when it stops the LP, CBC's root or its search before the node limit,
  /// the answer depends on the machine's speed and load, and the status says "wall-clock guard".
  double time_limit_s = 60;
  bool warm_start = true;  // give CBC the greedy answer as its first incumbent
};

/// Optimal DAG-cost extraction (when CBC proves it within its limits: `optimal`, bound == cost).
/// Otherwise the best answer found, CBC's bound and the gap; if CBC finds nothing better, the greedy
/// answer (status says so). Not ok() only if no root has an acyclic extraction.
Extraction extract_ilp(const ExtractionProblem& problem, const IlpConfig& config = {});

}  // namespace teq
