// optimize_graph: the whole optimizer in one call (e-graph from a graph, saturation with a rule corpus,
// extraction under a cost model). eqsat-run, the benchmarks and the tests call this; the pieces are in
// egraph.h, runner.h, extract_*.h.
// Usage:
//   FlopCostModel cost;
//   OptimizeReport r = optimize_graph(parse_expr("(relu (relu (input x 2 3)))"), corpus, cost, {});
//   // r.optimized is equal in value to the input, r.optimized_cost <= r.original_cost
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/engine/cost_model.h"
#include "optimizer/engine/reshape_free.h"
#include "optimizer/engine/runner.h"  // RunnerConfig, IterationStats
#include "rules/corpus.h"
#include "rules/expr.h"

namespace teq {

enum class ExtractMethod { Greedy, DagGreedy, Ilp };

/// The product's saturation schedule (eqsat-run and bench_report): up to 8 rounds, each a short saturation
/// (3 iterations) and an extraction, the next round starting from the graph the last one extracted. With the
/// generated corpus applied both ways (~1,150 rules), iterations beyond the third mostly grow the e-graph with
/// split/concat/enlarge re-associations that no extraction keeps (SqueezeNet, NasRNN, NasNet-A and BERT reach
/// their best graphs by then), while the ILP's work grows with the e-graph (NasNet-A: 8 s at 3 iterations,
/// 40 s at 4). Counts, so the result does not depend on the machine.
inline constexpr size_t kDefaultRounds = 8;
inline constexpr size_t kDefaultIterationsPerRound = 3;
/// A further round runs only after one that lowered its starting cost by at least this fraction, with a rule
/// (optimize_graph): below it, the round's rewrites set up nothing the next round builds on, and that round's
/// extraction can cost more than the whole rest of the run.
inline constexpr double kRoundMinGain = 1e-3;

struct OptimizeConfig {
  // Each round's saturation: limits, scheduler, progress callback. Its time_limit_s, like ilp_time_limit_s,
  // is a budget shared by all rounds.
  RunnerConfig saturation = {};
  // Rounds of saturation + extraction, each from the previous round's graph, while the cost falls.
  size_t rounds = 1;
  ExtractMethod extract = ExtractMethod::Ilp;
  double ilp_time_limit_s = 60;         // the ILP's wall-clock guard (the counts below decide, IlpConfig)
  int ilp_max_nodes = 1000;             // CBC branch-and-bound nodes per extraction
  int ilp_max_lp_iterations = 100'000;  // simplex iterations of the root LP per extraction
  // Which opaque nodes only reshape an operand or are element-wise (engine/reshape_free.h): set by the ONNX
  // driver; empty for none.
  OpaqueFacts opaque = {};
  /// The element types of the graph's leaves and opaque nodes (egraph.h): the e-graph never merges classes
  /// of different types, and cost models that count bytes price 16-bit floats at 2 bytes. Empty: unknown.
  LeafElemType leaf_types = {};
};

struct ExtractionStats {
  std::string method;   // "greedy", "dag-greedy", "ilp"
  double objective = 0; // cost of the returned graph
  double bound = 0;     // best lower bound known (== objective when proved optimal)
  double gap = 0;       // (objective - bound) / objective
  std::string status;   // how it ended: "proved optimal", "node limit", "wall-clock guard ..." (ILP), ...
};

/// Why a search stopped: saturation as its Runner did (StopReason), the sequential search (sequential.h) when
/// its queue ran empty or its budget of expansions was spent, either at its time limit.
struct SearchStop {
  enum class Reason { Saturated, NodeLimit, IterLimit, TimeLimit, QueueEmpty, Budget, GraphLimit };
  Reason reason = Reason::Saturated;
  // Set when extraction failed (the input is then returned): the extractor's status, perhaps empty.
  std::optional<std::string> extraction_failure;
};
/// What reports and summaries print: "saturated", "node-limit", "iter-limit", "time-limit", "queue-empty",
/// "budget", "graph-limit"; after an extraction failure "<reason>; extraction failed (<status>), input returned unchanged".
std::string to_string(const SearchStop& stop);

/// The id under which OptimizeReport::rules_used counts the reshapes removed around element-wise
/// computations (engine/reshape_free.h), which no corpus rule states.
inline constexpr const char* kReshapeFreeRule = "reshape-free(built-in)";

struct OptimizeReport {
  Expr optimized;                            // same inputs/weights and roots (outputs) in the same order
  double original_cost = 0;
  double optimized_cost = 0;
  double saturate_seconds = 0;
  double extract_seconds = 0;
  size_t iterations = 0;                     // summed over rounds
  size_t rounds = 0;                         // rounds run (OptimizeConfig::rounds)
  size_t enodes = 0;                         // largest e-graph of any round
  size_t eclasses = 0;
  SearchStop stop;
  std::map<std::string, size_t> rules_used;  // rule id -> e-nodes of the extracted graph it produced
  ExtractionStats extraction;
  size_t blacklisted = 0;                    // e-nodes removed to break cycles before extraction
  /// Rules that match their own output (rules/rule_growth.h) -> matches of it skipped, all rounds: each is
  /// applied one generation deep (RunReport::own_output_skipped).
  std::map<std::string, size_t> own_output_skipped;
  std::vector<std::string> notes;            // rules not used, extraction fallbacks, ...
  /// Rounds whose saturation the wall-clock guard (SaturationConfig::time_limit_s) stopped, 1-based: their
  /// result may depend on the machine's speed, so eqsat-run says so (the counts decide everywhere else).
  std::vector<size_t> rounds_stopped_by_clock;
};

/// Optimizes `graph` (leaves are inputs and weights; several roots allowed). Throws ShapeError if the
/// graph is ill-shaped. Never returns a cyclic or ill-shaped graph; if extraction fails it returns the
/// input unchanged with stop.extraction_failure saying why.
OptimizeReport optimize_graph(const Expr& graph, const RuleCorpus& rules, const CostModel& cost,
                              const OptimizeConfig& config);

}  // namespace teq
