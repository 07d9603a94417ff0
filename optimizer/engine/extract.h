// Extraction, the common part: the problem (e-classes, their usable e-nodes with costs, roots) that the
// greedy and ILP extractors (extract_greedy.h, extract_ilp.h) solve, the result type, DAG costing of a
// selection, and turning a selection back into an Expr. The problem is plain data, so tests can pose
// arbitrary (also cyclic) instances without building an e-graph.
#pragma once

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "optimizer/engine/cost_model.h"
#include "optimizer/engine/egraph.h"
#include "rules/expr.h"

namespace teq {

inline constexpr NodeId kNoNode{UINT32_MAX};
inline constexpr double kInfiniteCost = std::numeric_limits<double>::infinity();
/// What an e-node a rule made costs more than the same node from the input graph, as a fraction of its cost:
/// between selections of equal cost the extraction keeps the input's form. A rewrite that gains nothing in the
/// model's eyes can still lose in the runtime's: a re-associated product puts an RMS norm's `* gamma` inside its
/// division, which onnxruntime's fusion then no longer matches. Small enough that a real gain always wins
/// (at most 0.01% of the graph's cost, far below eqsat-run's --min-gain).
inline constexpr double kRewrittenNodeTieBreak = 1e-4;

struct ExtractionProblem {
  struct Node {
    ClassId cls;
    std::vector<ClassId> children;  // canonical class ids
    double cost = 0;                // >= 0; 0 for precomputable (weight-only) work
  };
  std::vector<Node> nodes;                   // indexed by NodeId
  std::vector<std::vector<NodeId>> classes;  // indexed by ClassId: the usable nodes (empty: no such class)
  std::vector<ClassId> roots;                // outputs, in order (repeats allowed)
};

/// A selection: at most one node per class. Only what the roots reach matters.
struct Extraction {
  std::string method;          // "greedy", "dag-greedy", "ilp"
  std::vector<NodeId> choice;  // indexed by ClassId; kNoNode = not chosen
  double cost = kInfiniteCost; // DAG cost: each reached class's chosen node counted once
  double bound = 0;            // best proven lower bound (0 if the method proves none)
  bool optimal = false;        // cost == optimum, proved
  std::string status;          // solver remarks, e.g. "time limit, gap 3%"
  bool ok() const { return cost < kInfiniteCost; }
  double gap() const { return cost > 0 && ok() ? (cost - bound) / cost : 0; }
};

/// DAG cost of what `choice` reaches from the roots; kInfiniteCost if a reached class has no chosen
/// node, a chosen node is not in its class, or the selection is cyclic.
double dag_cost(const ExtractionProblem& problem, std::span<const NodeId> choice);

/// The extraction problem of a clean e-graph: live e-nodes that are not blacklisted, each costed by
/// `cost` (precomputable e-nodes and leaves cost 0; one a rule made, kRewrittenNodeTieBreak more). `roots` are canonicalized. Under a model that fuses
/// epilogues (cost_model.h) an operand e-class is a fusion anchor when any of its e-nodes is one, so an
/// extraction that picks another e-node there can cost more than its objective says: optimize_graph prices
/// the extracted graph again with graph_cost and decides by that.
ExtractionProblem make_problem(const EGraph& egraph, std::span<const ClassId> roots, const CostModel& cost,
                               const std::vector<bool>& blacklist = {});

/// The graph that `choice` selects, with the roots in order. Throws std::logic_error if the selection
/// is incomplete or cyclic (extractors never return such a selection).
Expr build_expr(const EGraph& egraph, std::span<const NodeId> choice, std::span<const ClassId> roots);

/// Cost of a graph as the optimizer counts it: each operator node once, precomputable nodes (that
/// depend only on weights and constants) free, and each fused unit the model prices (CostModel::fused_units)
/// at its unit's cost instead of its nodes'.
/// `leaf_type`: the element types of its leaves and opaque nodes (egraph.h), for models that count bytes.
double graph_cost(const Expr& graph, const CostModel& cost, const LeafElemType& leaf_type = {});

/// Which nodes depend on weights and constants only (computed once at load time), indexed like graph.nodes().
std::vector<bool> precomputable_nodes(const Expr& graph);
/// The bytes of the weight leaves the roots of `graph` reach (4 an element, 2 for the 16-bit float types
/// `leaf_type` says): ModelFootprint::weight_bytes.
double weight_bytes(const Expr& graph, const LeafElemType& leaf_type = {});

/// Both sums of graph_cost: `fused` is what graph_cost returns, `unfused` prices every node alone (what the
/// runtime runs without its load-time fusions: onnxruntime at ORT_DISABLE_ALL under a DB measured there).
struct GraphCost {
  double fused = 0, unfused = 0;
  size_t units = 0;  // fused units priced
};
GraphCost graph_cost_detail(const Expr& graph, const CostModel& cost, const LeafElemType& leaf_type = {});

}  // namespace teq
