#include "verify/axioms/ranks.h"

#include <algorithm>
#include <iterator>

#include "rules/evaluator.h"

namespace teq::axioms {

std::map<std::string, std::pair<int, int>> rank_ranges(std::span<const VarShapes> assignments) {
  std::map<std::string, std::pair<int, int>> ranks;
  for (const VarShapes& s : assignments)
    for (const auto& [name, shape] : s) {
      const int rank = static_cast<int>(shape.size());
      auto [it, added] = ranks.emplace(name, std::pair{rank, rank});
      it->second.first = std::min(it->second.first, rank);
      it->second.second = std::max(it->second.second, rank);
    }
  return ranks;
}

std::optional<std::pair<int, int>> node_ranks(const Expr& e, size_t node, std::span<const VarShapes> shapes) {
  std::optional<std::pair<int, int>> ranks;
  for (const VarShapes& s : shapes)
    if (auto all = try_infer_shapes(e, s)) {
      const int r = static_cast<int>((*all)[node].size());
      ranks = ranks ? std::pair{std::min(ranks->first, r), std::max(ranks->second, r)} : std::pair{r, r};
    }
  return ranks;
}

std::pair<int, int> root_ranks(const Expr& pattern, std::span<const VarShapes> shapes) {
  return node_ranks(pattern, pattern.root().value, shapes).value_or(std::pair{0, 0});
}

std::vector<VarShapes> lowest_rank_assignments(std::span<const VarShapes> shapes) {
  const auto ranges = rank_ranges(shapes);
  std::vector<VarShapes> out;
  std::ranges::copy_if(shapes, std::back_inserter(out), [&](const VarShapes& s) {
    return std::ranges::all_of(s, [&](const auto& entry) {
      return static_cast<int>(entry.second.size()) == ranges.at(entry.first).first;
    });
  });
  return out;
}

}  // namespace teq::axioms
