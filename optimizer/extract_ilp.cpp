#include "optimizer/extract_ilp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "CbcHeuristic.hpp"
#include "CbcHeuristicFPump.hpp"
#include "CbcModel.hpp"
#include "CglClique.hpp"
#include "CglFlowCover.hpp"
#include "CglGomory.hpp"
#include "CglKnapsackCover.hpp"
#include "CglMixedIntegerRounding2.hpp"
#include "CglProbing.hpp"
#include "CoinPackedMatrix.hpp"
#include "OsiClpSolverInterface.hpp"
#include "optimizer/cycles.h"
#include "optimizer/extract_greedy.h"

namespace teq {

namespace {

constexpr int kNone = -1;

struct Model {
  std::vector<int> node_col;   // by NodeId, kNone if not a column
  std::vector<int> class_col;  // by ClassId
  std::vector<int> order_col;  // by ClassId: order variable, kNone outside non-trivial SCCs
  std::vector<double> lb, ub, obj;
  std::vector<bool> integer;
  CoinPackedMatrix rows{false, 0, 0};
  std::vector<double> row_lb, row_ub;
  std::vector<uint32_t> comp, comp_size;

  int add_col(double l, double u, double c, bool is_int) {
    lb.push_back(l);
    ub.push_back(u);
    obj.push_back(c);
    integer.push_back(is_int);
    return static_cast<int>(lb.size() - 1);
  }
  void add_row(const std::vector<int>& cols, const std::vector<double>& vals, double l, double u) {
    rows.appendRow(static_cast<int>(cols.size()), cols.data(), vals.data());
    row_lb.push_back(l);
    row_ub.push_back(u);
  }
};

}  // namespace

Extraction extract_ilp(const ExtractionProblem& problem, const IlpConfig& config) {
  Extraction greedy = extract_dag_greedy(problem);
  greedy.method = "ilp";
  if (!greedy.ok()) return greedy;
  const std::vector<double> tree = tree_costs(problem);
  const size_t nc = problem.classes.size();

  // Usable nodes: every child extractable and no self-loop. Keep the classes the roots reach through them.
  auto usable = [&](NodeId n) {
    const auto& node = problem.nodes[n.value];
    for (ClassId d : node.children)
      if (d == node.cls || tree[d.value] == kInfiniteCost) return false;
    return true;
  };
  std::vector<bool> reached(nc, false);
  std::vector<ClassId> todo, order;
  for (ClassId r : problem.roots)
    if (!reached[r.value]) reached[r.value] = true, todo.push_back(r);
  while (!todo.empty()) {
    ClassId c = todo.back();
    todo.pop_back();
    order.push_back(c);
    for (NodeId n : problem.classes[c.value])
      if (usable(n))
        for (ClassId d : problem.nodes[n.value].children)
          if (!reached[d.value]) reached[d.value] = true, todo.push_back(d);
  }
  std::sort(order.begin(), order.end());
  bool forced = true;  // one usable node per reached class: nothing to decide
  for (ClassId c : order) {
    size_t k = 0;
    for (NodeId n : problem.classes[c.value]) k += usable(n);
    forced = forced && k == 1;
  }
  if (greedy.cost == 0 || forced) {
    greedy.bound = greedy.cost;
    greedy.optimal = true;
    greedy.status = forced ? "no choice to make" : "zero cost";
    return greedy;
  }

  Model m;
  m.node_col.assign(problem.nodes.size(), kNone);
  m.class_col.assign(nc, kNone);
  m.order_col.assign(nc, kNone);
  const double scale = 1000.0 / greedy.cost;  // keeps CBC's tolerances meaningful for tiny costs (seconds)
  for (ClassId c : order) m.class_col[c.value] = m.add_col(0, 1, 0, true);
  for (ClassId r : problem.roots) m.lb[m.class_col[r.value]] = 1;
  for (ClassId c : order)
    for (NodeId n : problem.classes[c.value])
      if (usable(n)) m.node_col[n.value] = m.add_col(0, 1, problem.nodes[n.value].cost * scale, true);

  // Acyclicity only matters on edges inside strongly connected components of the class graph.
  std::vector<std::vector<uint32_t>> adj(nc);
  for (ClassId c : order)
    for (NodeId n : problem.classes[c.value])
      if (m.node_col[n.value] != kNone)
        for (ClassId d : problem.nodes[n.value].children) adj[c.value].push_back(d.value);
  m.comp = strongly_connected_components(adj);
  m.comp_size.assign(nc, 0);
  for (ClassId c : order) ++m.comp_size[m.comp[c.value]];
  for (ClassId c : order) {
    uint32_t size = m.comp_size[m.comp[c.value]];
    if (size > 1) m.order_col[c.value] = m.add_col(0, size - 1, 0, false);
  }

  for (ClassId c : order) {
    std::vector<int> cols{m.class_col[c.value]};
    std::vector<double> vals{-1};
    for (NodeId n : problem.classes[c.value])
      if (m.node_col[n.value] != kNone) cols.push_back(m.node_col[n.value]), vals.push_back(1);
    m.add_row(cols, vals, 0, 0);  // sum of chosen nodes == class chosen
  }
  for (ClassId c : order)
    for (NodeId n : problem.classes[c.value]) {
      const int x = m.node_col[n.value];
      if (x == kNone) continue;
      std::vector<ClassId> kids = problem.nodes[n.value].children;
      std::sort(kids.begin(), kids.end());
      kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
      for (ClassId d : kids) {
        m.add_row({x, m.class_col[d.value]}, {1, -1}, -COIN_DBL_MAX, 0);  // node chosen => child chosen
        if (m.comp[d.value] == m.comp[c.value]) {
          // t_c >= t_d + 1 when x = 1; vacuous when x = 0.
          const double big = m.comp_size[m.comp[c.value]];
          m.add_row({m.order_col[c.value], m.order_col[d.value], x}, {1, -1, -big}, 1 - big, COIN_DBL_MAX);
        }
      }
    }

  // Warm start: the greedy selection, order variables = height inside its component.
  std::vector<double> warm(m.lb.size(), 0);
  {
    std::vector<double> height(nc, -1);
    std::vector<std::pair<ClassId, bool>> stack;
    for (ClassId r : problem.roots) stack.push_back({r, false});
    while (!stack.empty()) {
      auto [c, expanded] = stack.back();
      stack.pop_back();
      const NodeId n = greedy.choice[c.value];
      if (expanded) {
        double h = 0;
        for (ClassId d : problem.nodes[n.value].children)
          if (m.comp[d.value] == m.comp[c.value]) h = std::max(h, height[d.value] + 1);
        height[c.value] = h;
        continue;
      }
      if (height[c.value] >= 0) continue;
      height[c.value] = 0;  // visited; fixed when expanded
      stack.push_back({c, true});
      for (ClassId d : problem.nodes[n.value].children)
        if (height[d.value] < 0) stack.push_back({d, false});
    }
    for (ClassId c : order) {
      if (height[c.value] < 0) continue;
      warm[m.class_col[c.value]] = 1;
      if (m.node_col[greedy.choice[c.value].value] != kNone) warm[m.node_col[greedy.choice[c.value].value]] = 1;
      if (m.order_col[c.value] != kNone) warm[m.order_col[c.value]] = height[c.value];
    }
  }

  OsiClpSolverInterface solver;
  solver.loadProblem(m.rows, m.lb.data(), m.ub.data(), m.obj.data(), m.row_lb.data(), m.row_ub.data());
  for (size_t i = 0; i < m.integer.size(); ++i)
    if (m.integer[i]) solver.setInteger(static_cast<int>(i));
  solver.messageHandler()->setLogLevel(0);
  solver.getModelPtr()->messageHandler()->setLogLevel(0);

  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setUseElapsedTime(true);  // the limit is wall-clock time, as the user reads it
  model.setMaximumSeconds(config.time_limit_s);
  model.setNumberThreads(0);
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
  const double warm_obj = greedy.cost * scale;
  if (config.warm_start) model.setBestSolution(warm.data(), static_cast<int>(warm.size()), warm_obj, true);
  model.branchAndBound();

  Extraction out;
  out.method = "ilp";
  const double* sol = model.bestSolution();
  if (sol) {
    out.choice.assign(nc, kNoNode);
    for (ClassId c : order) {
      if (sol[m.class_col[c.value]] < 0.5) continue;
      for (NodeId n : problem.classes[c.value])
        if (m.node_col[n.value] != kNone && sol[m.node_col[n.value]] > 0.5) out.choice[c.value] = n;
    }
    out.cost = dag_cost(problem, out.choice);
  }
  const bool proven = model.isProvenOptimal();
  double bound = model.getBestPossibleObjValue() / scale;
  if (!out.ok() || out.cost > greedy.cost) {
    // CBC found nothing better than its start (or nothing at all within the limit): keep greedy's.
    out.choice = greedy.choice;
    out.cost = greedy.cost;
  }
  out.optimal = proven;
  out.bound = proven ? out.cost : std::clamp(std::isfinite(bound) ? bound : 0.0, 0.0, out.cost);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s, %zu columns, %zu rows, %d nodes explored, gap %.2f%%",
                proven ? "proved optimal" : (model.isSecondsLimitReached() ? "time limit" : "stopped"),
                m.lb.size(), m.row_lb.size(), model.getNodeCount(), 100 * out.gap());
  out.status = buf;
  return out;
}

}  // namespace teq
