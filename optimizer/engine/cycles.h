// Cycle handling as in Tensat. Rewriting can make e-classes reach themselves; a "graph" extracted through
// such a cycle is not a graph. Two tools: a reachability index over the e-class graph (a pre-filter that
// keeps multi-pattern applications from creating cycles) and a blacklist of e-nodes that breaks every
// remaining cycle before extraction (the newest e-node on each cycle goes). Also a generic SCC routine.
#pragma once

#include <cstdint>
#include <vector>

#include "optimizer/engine/egraph.h"

namespace teq {

/// Strongly connected components of a directed graph given as adjacency lists (Tarjan, iterative).
/// Components are numbered in reverse topological order: if u reaches v then comp[v] <= comp[u].
std::vector<uint32_t> strongly_connected_components(const std::vector<std::vector<uint32_t>>& adjacency);

/// "Can class `from` reach class `to` by following children?" for the e-graph as it was when built.
/// SCCs in reverse topological order answer most queries at once; the rest by a DFS pruned to the
/// components that can still lead to `to`.
class ReachabilityIndex {
 public:
  explicit ReachabilityIndex(const EGraph& egraph);
  /// True if from == to or `to` is a descendant of `from`. Classes newer than the index: true
  /// (conservative, the caller then skips the application).
  bool reaches(ClassId from, ClassId to) const;

 private:
  std::vector<std::vector<uint32_t>> children_;  // class slot -> distinct child class slots
  std::vector<uint32_t> comp_;
  mutable std::vector<uint32_t> stamp_;
  mutable uint32_t epoch_ = 0;
};

struct CycleFilterStats {
  size_t blacklisted = 0;  // e-nodes removed from extraction
  size_t passes = 0;
};

/// Marks e-nodes (indexed by NodeId) so that the e-graph restricted to the unmarked live nodes has no
/// cycle: for each cycle found, its newest e-node whose class keeps another usable node (else simply its
/// newest) is marked. `blacklist` may come pre-filled and is extended. Precondition: egraph is clean.
CycleFilterStats blacklist_cycles(const EGraph& egraph, std::vector<bool>& blacklist);

}  // namespace teq
