#include "optimizer/engine/extract_greedy.h"

#include <algorithm>
#include <chrono>

namespace teq {

namespace {

/// The tree-cost fixpoint (Bellman-Ford style: strict improvements only, so no cycle is ever chosen
/// when costs are >= 0).
std::vector<double> tree_fixpoint(const ExtractionProblem& p, std::vector<NodeId>& choice) {
  std::vector<double> cost(p.classes.size(), kInfiniteCost);
  choice.assign(p.classes.size(), kNoNode);
  for (size_t pass = 0; pass <= p.classes.size(); ++pass) {
    bool changed = false;
    for (uint32_t c = 0; c < p.classes.size(); ++c)
      for (NodeId n : p.classes[c]) {
        const auto& node = p.nodes[n.value];
        double v = node.cost;
        for (ClassId d : node.children) v += cost[d.value];
        if (v < cost[c]) {
          cost[c] = v;
          choice[c] = n;
          changed = true;
        }
      }
    if (!changed) break;
  }
  return cost;
}

}  // namespace

std::vector<double> tree_costs(const ExtractionProblem& problem) {
  std::vector<NodeId> choice;
  return tree_fixpoint(problem, choice);
}

Extraction extract_greedy(const ExtractionProblem& problem) {
  Extraction out;
  out.method = "greedy";
  tree_fixpoint(problem, out.choice);
  out.cost = dag_cost(problem, out.choice);
  if (!out.ok()) out.status = "no acyclic extraction of a root";
  return out;
}

Extraction extract_dag_greedy(const ExtractionProblem& problem, const DagGreedyConfig& config) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto out_of_time = [&] {
    return std::chrono::duration<double>(Clock::now() - t0).count() > config.time_limit_s;
  };
  Extraction tree = extract_greedy(problem);
  const size_t nc = problem.classes.size();
  // set[c]: (class, cost of its chosen node) for every class below c's choice, sorted by class, c included.
  using Entry = std::pair<uint32_t, double>;
  std::vector<std::vector<Entry>> set(nc);
  std::vector<double> total(nc, kInfiniteCost);
  std::vector<NodeId> choice(nc, kNoNode);
  size_t entries = 0;
  bool over_budget = false, over_time = false;
  std::vector<Entry> merged, tmp;
  for (size_t pass = 0; pass < config.max_passes && !over_budget; ++pass) {
    bool changed = false;
    for (uint32_t c = 0; c < nc && !over_budget; ++c) {
      if (c % 256 == 0 && config.time_limit_s < kInfiniteCost && out_of_time()) {
        over_budget = over_time = true;
        break;
      }
      for (NodeId n : problem.classes[c]) {
        const auto& node = problem.nodes[n.value];
        bool ready = true;
        for (ClassId d : node.children) ready = ready && total[d.value] < kInfiniteCost;
        if (!ready) continue;
        merged.assign(1, Entry{c, node.cost});
        for (ClassId d : node.children) {
          tmp.clear();
          std::set_union(merged.begin(), merged.end(), set[d.value].begin(), set[d.value].end(),
                         std::back_inserter(tmp), [](const Entry& a, const Entry& b) { return a.first < b.first; });
          merged.swap(tmp);
        }
        double v = 0;
        for (const Entry& e : merged) v += e.second;
        if (v >= total[c]) continue;
        // A child's set containing c itself: choosing n would make a cycle.
        bool cyclic = false;
        for (ClassId d : node.children)
          cyclic = cyclic || std::binary_search(set[d.value].begin(), set[d.value].end(), Entry{c, 0},
                                                [](const Entry& a, const Entry& b) { return a.first < b.first; });
        if (cyclic) continue;
        entries += merged.size();
        entries -= set[c].size();
        set[c] = merged;
        total[c] = v;
        choice[c] = n;
        changed = true;
        if (entries > config.set_budget) over_budget = true;
      }
    }
    if (!changed) break;
  }
  Extraction out;
  out.method = "dag-greedy";
  out.choice = std::move(choice);
  // Stopped early, the selection is still one node per class, possibly incomplete or cyclic (dag_cost
  // says so); where it is complete it is a valid answer.
  out.cost = dag_cost(problem, out.choice);
  const char* stopped = over_time ? "time limit" : over_budget ? "set budget exceeded" : nullptr;
  if (tree.cost <= out.cost) {
    tree.method = "dag-greedy";
    tree.status = stopped ? std::string(stopped) + ": tree greedy answer" : "tree greedy answer was as good";
    return tree;
  }
  if (stopped) out.status = std::string(stopped) + ": partial DAG greedy answer";
  return out;
}

}  // namespace teq
