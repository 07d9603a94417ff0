// ILP extraction with CBC (as Tensat): a binary per e-node and per e-class, roots chosen, exactly one node
// per chosen class, a chosen node's child classes chosen, and acyclicity by order variables on the
// e-class edges inside strongly connected components (none are needed where the e-graph is acyclic).
// Warm-started from the better greedy answer, stopped by a time limit; the best feasible answer wins.
#pragma once

#include "optimizer/engine/extract.h"

namespace teq {

struct IlpConfig {
  double time_limit_s = 60;
  bool warm_start = true;  // give CBC the greedy answer as its first incumbent
};

/// Optimal DAG-cost extraction (when CBC proves it within the time limit: `optimal`, bound == cost).
/// Otherwise the best answer found, CBC's bound and the gap; if CBC finds nothing better, the greedy
/// answer (status says so). Not ok() only if no root has an acyclic extraction.
Extraction extract_ilp(const ExtractionProblem& problem, const IlpConfig& config = {});

}  // namespace teq
