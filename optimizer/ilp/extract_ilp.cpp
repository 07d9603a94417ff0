#include "optimizer/ilp/extract_ilp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "CbcEventHandler.hpp"
#include "CbcHeuristic.hpp"
#include "CbcHeuristicFPump.hpp"
#include "CbcModel.hpp"
#include "CglClique.hpp"
#include "CglFlowCover.hpp"
#include "CglGomory.hpp"
#include "CglKnapsackCover.hpp"
#include "CglMixedIntegerRounding2.hpp"
#include "CglProbing.hpp"
#include "ClpSimplex.hpp"
#include "CoinPackedMatrix.hpp"
#include "OsiClpSolverInterface.hpp"
#include "optimizer/engine/cycles.h"
#include "optimizer/engine/extract_greedy.h"

namespace teq {

namespace {

constexpr int kNone = -1;
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

/// CBC checks its own time limit between branch-and-bound nodes only; root cut passes and heuristics on a
/// large model run past it. This handler stops it at any event after the deadline.
class DeadlineHandler : public CbcEventHandler {
 public:
  explicit DeadlineHandler(Clock::time_point deadline) : deadline_(deadline) {}
  CbcAction event(CbcEvent e) override {
    // Solution events decide whether a solution is accepted, not whether to go on: leave them alone.
    if (e == solution || e == heuristicSolution || e == beforeSolution1 || e == beforeSolution2) return noAction;
    return Clock::now() >= deadline_ ? stop : noAction;
  }
  CbcEventHandler* clone() const override { return new DeadlineHandler(*this); }

 private:
  Clock::time_point deadline_;
};

/// The MIP, row-wise as triplets (appending rows one at a time to a CoinPackedMatrix without spare room
/// copies the matrix each time: quadratic, minutes on a 100k-node e-graph).
struct Model {
  std::vector<int> node_col;   // by NodeId, kNone if not a column
  std::vector<int> class_col;  // by ClassId
  std::vector<int> order_col;  // by ClassId: order variable, kNone outside non-trivial SCCs
  std::vector<double> lb, ub, obj;
  std::vector<bool> integer;
  std::vector<CoinBigIndex> row_start{0};
  std::vector<int> row_len, index;
  std::vector<double> value, row_lb, row_ub;

  int add_col(double l, double u, double c, bool is_int) {
    lb.push_back(l);
    ub.push_back(u);
    obj.push_back(c);
    integer.push_back(is_int);
    return static_cast<int>(lb.size() - 1);
  }
  void add(int col, double v) {
    index.push_back(col);
    value.push_back(v);
  }
  void end_row(double l, double u) {
    row_len.push_back(static_cast<int>(index.size() - row_start.back()));
    row_start.push_back(static_cast<CoinBigIndex>(index.size()));
    row_lb.push_back(l);
    row_ub.push_back(u);
  }
  size_t rows() const { return row_lb.size(); }
  CoinPackedMatrix matrix() const {
    return CoinPackedMatrix(false, static_cast<int>(lb.size()), static_cast<int>(rows()),
                            static_cast<CoinBigIndex>(index.size()), value.data(), index.data(), row_start.data(),
                            row_len.data());
  }
};

/// Sorted distinct child classes.
std::vector<ClassId> child_set(const ExtractionProblem::Node& node) {
  std::vector<ClassId> kids = node.children;
  std::sort(kids.begin(), kids.end());
  kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
  return kids;
}

/// The problem without what cannot matter. A node is usable if every child is extractable and it is not a
/// self-loop. Within a class a usable node is dominated by another that costs no more and whose child
/// classes are a subset of its own: any acyclic selection through it stays acyclic and costs no more through
/// the other. Dominated nodes go (commutative twins op(a, b) / op(b, a) among them, which otherwise let the
/// LP relaxation pay half of each child), and only classes the roots reach through what is left are modelled.
struct Reduction {
  std::vector<std::vector<ClassId>> kids;  // by NodeId: sorted distinct child classes of usable nodes
  std::vector<NodeId> dominator;           // by NodeId: the kept node that dominates it, or kNoNode
  std::vector<std::vector<NodeId>> keep;   // by ClassId: the undominated usable nodes
  std::vector<ClassId> order;              // the classes the roots reach, sorted
  size_t usable_nodes = 0, dominated = 0;
};

Reduction reduce(const ExtractionProblem& problem, const std::vector<double>& tree) {
  const size_t nc = problem.classes.size();
  Reduction r;
  r.kids.resize(problem.nodes.size());
  r.dominator.assign(problem.nodes.size(), kNoNode);
  r.keep.resize(nc);
  std::vector<NodeId> cand;
  for (size_t c = 0; c < nc; ++c) {
    cand.clear();
    for (NodeId n : problem.classes[c]) {
      const auto& node = problem.nodes[n.value];
      bool ok = true;
      for (ClassId d : node.children) ok = ok && d != node.cls && tree[d.value] < kInfiniteCost;
      if (!ok) continue;
      r.kids[n.value] = child_set(node);
      cand.push_back(n);
    }
    r.usable_nodes += cand.size();
    std::stable_sort(cand.begin(), cand.end(), [&](NodeId a, NodeId b) {
      const double ca = problem.nodes[a.value].cost, cb = problem.nodes[b.value].cost;
      return ca != cb ? ca < cb : r.kids[a.value].size() < r.kids[b.value].size();
    });
    for (NodeId n : cand) {
      // Compare with (at most 64 of) the kept ones: cheaper or as cheap with no more children.
      NodeId by = kNoNode;
      const size_t k = std::min<size_t>(r.keep[c].size(), 64);
      for (size_t i = 0; i < k && by == kNoNode; ++i) {
        const NodeId m = r.keep[c][i];
        const auto &kn = r.kids[n.value], &km = r.kids[m.value];
        if (std::includes(kn.begin(), kn.end(), km.begin(), km.end())) by = m;
      }
      if (by == kNoNode) {
        r.keep[c].push_back(n);
      } else {
        r.dominator[n.value] = by;
        ++r.dominated;
      }
    }
  }
  std::vector<bool> reached(nc, false);
  std::vector<ClassId> todo;
  for (ClassId root : problem.roots)
    if (!reached[root.value]) reached[root.value] = true, todo.push_back(root);
  while (!todo.empty()) {
    ClassId c = todo.back();
    todo.pop_back();
    r.order.push_back(c);
    for (NodeId n : r.keep[c.value])
      for (ClassId d : r.kids[n.value])
        if (!reached[d.value]) reached[d.value] = true, todo.push_back(d);
  }
  std::sort(r.order.begin(), r.order.end());
  return r;
}

/// The class graph's strongly connected components over the kept nodes: acyclicity only matters on edges
/// inside them.
struct Components {
  std::vector<uint32_t> comp, size;  // by ClassId: component; by component: its number of reached classes
};

Components components(const Reduction& r, size_t nc) {
  std::vector<std::vector<uint32_t>> adj(nc);
  for (ClassId c : r.order)
    for (NodeId n : r.keep[c.value])
      for (ClassId d : r.kids[n.value]) adj[c.value].push_back(d.value);
  Components out{strongly_connected_components(adj), std::vector<uint32_t>(nc, 0)};
  for (ClassId c : r.order) ++out.size[out.comp[c.value]];
  return out;
}

/// Mandatory classes: those in every extraction of the roots. With need(c) = {c} united with, over c's
/// nodes, the intersection of the union of their children's needs (children first; exact when the class
/// graph is acyclic, so only called then), every extraction of c contains need(c). Fixing them chosen
/// tightens the LP a lot where associativity lets it spread a class over many fractional groupings, and the
/// sum of their cheapest nodes is a lower bound even if the LP does not finish. Mandatory classes are in
/// every extraction, so in the incumbent's: the sets are bitsets over (up to 4096 of) its classes,
/// restriction to them commuting with the unions and intersections.
std::vector<ClassId> mandatory_classes(const ExtractionProblem& problem, const Reduction& r, const Components& g,
                                       const Extraction& incumbent) {
  const size_t nc = problem.classes.size();
  std::vector<int> bit(nc, -1);
  int nbits = 0;
  {
    std::vector<ClassId> todo(problem.roots.begin(), problem.roots.end());
    std::vector<bool> seen(nc, false);
    while (!todo.empty() && nbits < 4096) {
      const ClassId c = todo.back();
      todo.pop_back();
      if (seen[c.value]) continue;
      seen[c.value] = true;
      bit[c.value] = nbits++;
      for (ClassId d : problem.nodes[incumbent.choice[c.value].value].children) todo.push_back(d);
    }
  }
  const size_t words = (nbits + 63) / 64;
  std::vector<uint64_t> need(nc * words, 0), acc(words), uni(words);
  std::vector<ClassId> topo = r.order;
  std::sort(topo.begin(), topo.end(), [&](ClassId a, ClassId b) { return g.comp[a.value] < g.comp[b.value]; });
  for (ClassId c : topo) {
    bool first = true;
    for (NodeId n : r.keep[c.value]) {
      std::fill(uni.begin(), uni.end(), 0);
      for (ClassId d : r.kids[n.value])
        for (size_t w = 0; w < words; ++w) uni[w] |= need[d.value * words + w];
      if (first) acc = uni, first = false;
      else
        for (size_t w = 0; w < words; ++w) acc[w] &= uni[w];
    }
    if (bit[c.value] >= 0) acc[bit[c.value] / 64] |= uint64_t{1} << (bit[c.value] % 64);
    std::copy(acc.begin(), acc.end(), need.begin() + c.value * words);
  }
  std::vector<ClassId> mandatory;
  for (ClassId c : r.order) {
    bool in_every = false;
    for (ClassId root : problem.roots)
      in_every = in_every ||
                 (bit[c.value] >= 0 && (need[root.value * words + bit[c.value] / 64] >> (bit[c.value] % 64) & 1));
    if (in_every) mandatory.push_back(c);
  }
  return mandatory;
}

/// The rows: a class's chosen nodes sum to the class chosen; one child row per (class, child class) rather
/// than per (node, child class): the nodes of a class that use d, summed, <= d chosen (valid as at most one
/// is chosen, and tighter in the LP relaxation); likewise the order rows inside a component: t_c >= t_d + 1
/// when one of them is chosen.
void add_rows(Model& m, const Reduction& r, const Components& g, size_t nc) {
  for (ClassId c : r.order) {
    m.add(m.class_col[c.value], -1);
    for (NodeId n : r.keep[c.value]) m.add(m.node_col[n.value], 1);
    m.end_row(0, 0);
  }
  std::vector<std::vector<int>> users(nc);  // by child class: the columns of c's nodes using it
  std::vector<ClassId> touched;
  for (ClassId c : r.order) {
    for (NodeId n : r.keep[c.value])
      for (ClassId d : r.kids[n.value]) {
        if (users[d.value].empty()) touched.push_back(d);
        users[d.value].push_back(m.node_col[n.value]);
      }
    std::sort(touched.begin(), touched.end());
    for (ClassId d : touched) {
      for (int x : users[d.value]) m.add(x, 1);
      m.add(m.class_col[d.value], -1);
      m.end_row(-COIN_DBL_MAX, 0);
      if (g.comp[d.value] == g.comp[c.value]) {
        const double big = g.size[g.comp[c.value]];
        m.add(m.order_col[c.value], 1);
        m.add(m.order_col[d.value], -1);
        for (int x : users[d.value]) m.add(x, -big);
        m.end_row(1 - big, COIN_DBL_MAX);
      }
      users[d.value].clear();
    }
    touched.clear();
  }
}

/// Warm start: the incumbent, order variables = height inside its component. Empty when the incumbent uses
/// a node the reduction dropped (cannot happen for greedy answers; be safe).
std::vector<double> warm_start(const ExtractionProblem& problem, const Model& m, const Components& g,
                               const Extraction& best) {
  const size_t nc = problem.classes.size();
  std::vector<double> warm(m.lb.size(), 0);
  std::vector<double> height(nc, -1);
  std::vector<std::pair<ClassId, bool>> stack;
  for (ClassId r : problem.roots) stack.push_back({r, false});
  while (!stack.empty()) {
    auto [c, expanded] = stack.back();
    stack.pop_back();
    const NodeId n = best.choice[c.value];
    if (expanded) {
      double h = 0;
      for (ClassId d : problem.nodes[n.value].children)
        if (g.comp[d.value] == g.comp[c.value]) h = std::max(h, height[d.value] + 1);
      height[c.value] = h;
      continue;
    }
    if (height[c.value] >= 0) continue;
    height[c.value] = 0;  // visited; fixed when expanded
    stack.push_back({c, true});
    for (ClassId d : problem.nodes[n.value].children)
      if (height[d.value] < 0) stack.push_back({d, false});
  }
  for (size_t c = 0; c < nc; ++c) {
    if (height[c] < 0) continue;
    const int x = m.node_col[best.choice[c].value];
    if (m.class_col[c] == kNone || x == kNone) return {};
    warm[m.class_col[c]] = 1;
    warm[x] = 1;
    if (m.order_col[c] != kNone) warm[m.order_col[c]] = height[c];
  }
  return warm;
}

/// What branch and cut found.
struct CbcOutcome {
  bool proven = false, time_limit = false, node_limit = false;
  int nodes = 0;
  double bound = 0;
  std::vector<NodeId> choice;  // empty: no solution
};

/// CBC on the loaded model from the root LP, with cut generators and heuristics, stopped at the deadline.
CbcOutcome branch_and_cut(OsiClpSolverInterface& solver, const Model& m, const Reduction& r, size_t nc,
                          const std::vector<double>& warm, double warm_cost, double scale, int max_nodes,
                          Clock::time_point deadline) {
  auto left = [&] { return seconds(Clock::now(), deadline); };
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setUseElapsedTime(true);  // the limit is wall-clock time, as the user reads it
  model.setMaximumSeconds(left());
  model.setMaximumNodes(std::max(0, max_nodes));
  model.setNumberThreads(0);  // one thread: CBC's search is then the same on every run
  DeadlineHandler on_deadline(deadline);
  model.passInEventHandler(&on_deadline);
  if (auto* clp = dynamic_cast<OsiClpSolverInterface*>(model.solver())) {
    clp->getModelPtr()->setMaximumWallSeconds(left());
    clp->messageHandler()->setLogLevel(0);
    clp->getModelPtr()->messageHandler()->setLogLevel(0);
  }
  CglProbing probing;
  probing.setUsingObjective(1);
  probing.setMaxPass(1);
  probing.setMaxLook(50);
  CglGomory gomory;
  CglKnapsackCover knapsack;
  CglClique clique;
  clique.setStarCliqueReport(false);
  clique.setRowCliqueReport(false);
  CglMixedIntegerRounding2 mir;
  CglFlowCover flow;
  model.addCutGenerator(&probing, -1, "Probing");
  model.addCutGenerator(&gomory, -1, "Gomory");
  model.addCutGenerator(&knapsack, -1, "Knapsack");
  model.addCutGenerator(&clique, -1, "Clique");
  model.addCutGenerator(&mir, -1, "MIR");
  model.addCutGenerator(&flow, -1, "FlowCover");
  CbcRounding rounding(model);
  model.addHeuristic(&rounding);
  CbcHeuristicFPump pump(model);
  model.addHeuristic(&pump);
  if (!warm.empty()) model.setBestSolution(warm.data(), static_cast<int>(warm.size()), warm_cost * scale, true);
  model.branchAndBound();

  CbcOutcome out;
  out.nodes = model.getNodeCount();
  out.time_limit = model.isSecondsLimitReached() || left() <= 0;
  out.node_limit = !out.time_limit && model.isNodeLimitReached();
  out.proven = model.isProvenOptimal() && !out.time_limit;
  const double b = model.getBestPossibleObjValue() / scale;
  if (std::isfinite(b) && !model.isProvenInfeasible()) out.bound = b;
  if (const double* sol = model.bestSolution()) {
    out.choice.assign(nc, kNoNode);
    for (ClassId c : r.order) {
      if (sol[m.class_col[c.value]] < 0.5) continue;
      for (NodeId n : r.keep[c.value])
        if (sol[m.node_col[n.value]] > 0.5) out.choice[c.value] = n;
    }
  }
  return out;
}

/// The problem with each reached class's dominated nodes left out (unreached classes empty).
ExtractionProblem reduced_problem(const ExtractionProblem& problem, const Reduction& r) {
  ExtractionProblem reduced;
  reduced.nodes = problem.nodes;
  reduced.classes.resize(problem.classes.size());
  for (ClassId c : r.order) reduced.classes[c.value] = r.keep[c.value];
  reduced.roots = problem.roots;
  return reduced;
}

/// Better incumbents than tree greedy's `best`: greedy's selection with dominated nodes swapped for their
/// dominators (edges only go away, so it stays acyclic and costs no more), then DAG greedy on the reduced
/// problem with part of the time (its answer counts only if it finishes or its partial selection is
/// complete). Returns whether the wall-clock guard stopped DAG greedy: the answer may then depend on the load.
bool improve_incumbent(const ExtractionProblem& problem, const Reduction& r, Clock::time_point deadline,
                       Extraction& best) {
  const ExtractionProblem reduced = reduced_problem(problem, r);
  Extraction swapped = best;
  for (NodeId& n : swapped.choice)
    if (n != kNoNode && r.dominator[n.value] != kNoNode) n = r.dominator[n.value];
  swapped.cost = dag_cost(problem, swapped.choice);
  if (swapped.cost < best.cost) best.choice = std::move(swapped.choice), best.cost = swapped.cost;
  // DAG greedy is bounded by its set budget (a count); the remaining time is only its guard.
  Extraction dag = extract_dag_greedy(
      reduced, DagGreedyConfig{.time_limit_s = std::max(0.0, seconds(Clock::now(), deadline))});
  if (dag.ok() && dag.cost < best.cost) best.choice = std::move(dag.choice), best.cost = dag.cost;
  return dag.status.find("time limit") != std::string::npos;
}

/// The classes every solution must choose, fixed to 1 in the model, and the bound their cheapest nodes give.
struct Mandatory {
  std::vector<ClassId> classes;
  double bound = 0;
};

/// The MIP: a binary per reached class and per kept node (its cost scaled by `scale`), an order variable per
/// class inside a cycle, the roots and (without cycles) the mandatory classes fixed to 1, and the rows.
Model build_model(const ExtractionProblem& problem, const Reduction& r, const Components& g, const Extraction& best,
                  double scale, Mandatory& mandatory) {
  const size_t nc = problem.classes.size();
  Model m;
  m.node_col.assign(problem.nodes.size(), kNone);
  m.class_col.assign(nc, kNone);
  m.order_col.assign(nc, kNone);
  for (ClassId c : r.order) m.class_col[c.value] = m.add_col(0, 1, 0, true);
  for (ClassId root : problem.roots) m.lb[m.class_col[root.value]] = 1;
  for (ClassId c : r.order)
    for (NodeId n : r.keep[c.value]) m.node_col[n.value] = m.add_col(0, 1, problem.nodes[n.value].cost * scale, true);
  bool acyclic = true;
  for (ClassId c : r.order) {
    uint32_t size = g.size[g.comp[c.value]];
    if (size > 1) m.order_col[c.value] = m.add_col(0, size - 1, 0, false), acyclic = false;
  }
  if (acyclic) mandatory.classes = mandatory_classes(problem, r, g, best);
  for (ClassId c : mandatory.classes) {
    double cheapest = kInfiniteCost;
    for (NodeId n : r.keep[c.value]) cheapest = std::min(cheapest, problem.nodes[n.value].cost);
    mandatory.bound += cheapest;
    m.lb[m.class_col[c.value]] = 1;
  }
  add_rows(m, r, g, nc);
  return m;
}

/// The root LP relaxation's outcome; `bound` (unscaled) counts only when `solved`.
struct RootLp {
  double bound = 0;
  bool solved = false, iteration_limit = false;
};

/// Loads the model into `solver` and solves the root LP ourselves, under the limit: its value is a lower
/// bound even if CBC gets no further.
RootLp solve_root_lp(OsiClpSolverInterface& solver, const Model& m, double scale, int max_lp_iterations,
                     Clock::time_point deadline) {
  auto left = [&] { return seconds(Clock::now(), deadline); };
  solver.loadProblem(m.matrix(), m.lb.data(), m.ub.data(), m.obj.data(), m.row_lb.data(), m.row_ub.data());
  for (size_t i = 0; i < m.integer.size(); ++i)
    if (m.integer[i]) solver.setInteger(static_cast<int>(i));
  solver.messageHandler()->setLogLevel(0);
  solver.getModelPtr()->messageHandler()->setLogLevel(0);

  RootLp lp;
  if (left() > 0) {
    solver.getModelPtr()->setMaximumWallSeconds(left());  // Clp: seconds from now
    solver.getModelPtr()->setMaximumIterations(std::max(0, max_lp_iterations));
    solver.initialSolve();
    lp.solved = solver.isProvenOptimal();
    lp.iteration_limit = !lp.solved && solver.isIterationLimitReached() && left() > 0;
    if (lp.solved) lp.bound = solver.getObjValue() / scale;
  }
  return lp;
}

}  // namespace

Extraction extract_ilp(const ExtractionProblem& problem, const IlpConfig& config) {
  const auto t0 = Clock::now();
  const double limit = std::max(0.0, config.time_limit_s);
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(limit, 1e9)));
  auto left = [&] { return seconds(Clock::now(), deadline); };

  // The incumbent: tree greedy, always computed whatever the limit (fast, linear passes).
  Extraction best = extract_greedy(problem);
  best.method = "ilp";
  if (!best.ok()) return best;
  const size_t nc = problem.classes.size();
  const Reduction r = reduce(problem, tree_costs(problem));
  // The wall-clock guard stopped a step: the answer may depend on the load.
  bool guard_hit = improve_incumbent(problem, r, deadline, best);
  const auto t_greedy = Clock::now();
  auto finish = [&](Extraction out, const char* what) {
    char pruned[96];
    std::snprintf(pruned, sizeof pruned, "; %zu dominated of %zu usable e-nodes pruned", r.dominated, r.usable_nodes);
    out.status = what + std::string(pruned);
    return out;
  };

  bool forced = true;  // one node per reached class: nothing to decide
  for (ClassId c : r.order) forced = forced && r.keep[c.value].size() == 1;
  if (best.cost == 0 || forced) {
    best.bound = best.cost;
    best.optimal = true;
    return finish(best, forced ? "no choice to make" : "zero cost");
  }

  const double scale = 1000.0 / best.cost;  // keeps CBC's tolerances meaningful for tiny costs (seconds)
  const Components g = components(r, nc);
  Mandatory mandatory;
  const Model m = build_model(problem, r, g, best, scale, mandatory);
  const std::vector<double> warm = config.warm_start ? warm_start(problem, m, g, best) : std::vector<double>{};
  const auto t_model = Clock::now();

  OsiClpSolverInterface solver;
  const RootLp lp = solve_root_lp(solver, m, scale, config.max_lp_iterations, deadline);
  const auto t_lp = Clock::now();

  Extraction out = best;
  out.method = "ilp";
  bool proven = false, cbc_ran = false;
  CbcOutcome cbc;
  // Integer costs are not assumed; stop when the LP bound already meets the incumbent.
  if (lp.solved && lp.bound >= best.cost * (1 - 1e-9)) {
    proven = true;
  } else if (lp.solved && left() > 0) {
    cbc_ran = true;
    cbc = branch_and_cut(solver, m, r, nc, warm, best.cost, scale, config.max_nodes, deadline);
    proven = cbc.proven;
    if (!cbc.choice.empty()) {
      const double cost = dag_cost(problem, cbc.choice);
      if (cost < out.cost) out.choice = std::move(cbc.choice), out.cost = cost;
    }
  }
  const auto t_end = Clock::now();

  out.optimal = proven;
  out.bound = proven ? out.cost : std::clamp(std::max({lp.bound, cbc.bound, mandatory.bound}), 0.0, out.cost);
  // The counts decide; only where the clock stopped a step first may the answer depend on the load.
  guard_hit = guard_hit || (!lp.solved && !lp.iteration_limit) || cbc.time_limit || (lp.solved && !cbc_ran && !proven);
  const char* how = proven               ? "proved optimal"
                    : lp.iteration_limit ? "LP iteration limit (the incumbent is the answer)"
                    : !lp.solved         ? "wall-clock guard before the LP relaxation was solved"
                    : guard_hit          ? "wall-clock guard (time limit)"
                    : cbc.node_limit     ? "node limit"
                                         : "stopped";
  char buf[352];
  std::snprintf(buf, sizeof buf,
                "%s%s, %zu columns, %zu rows, %zu e-classes mandatory, %d nodes explored, gap %.2f%%; seconds: "
                "greedy %.2f, model %.2f, LP %.2f, branch and cut %.2f",
                how, proven && guard_hit ? " (after the wall-clock guard stopped DAG greedy)" : "", m.lb.size(),
                m.rows(), mandatory.classes.size(), cbc.nodes, 100 * out.gap(), seconds(t0, t_greedy),
                seconds(t_greedy, t_model), seconds(t_model, t_lp), seconds(t_lp, t_end));
  return finish(out, buf);
}

}  // namespace teq
