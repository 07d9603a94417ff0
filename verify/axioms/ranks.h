// What the checked shape assignments (VarShapes, verify/elementwise.h) say about ranks: of the variables, of a
// pattern's nodes and of its root.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "verify/elementwise.h"

namespace teq::axioms {

/// Lowest and highest rank of each variable over the assignments.
std::map<std::string, std::pair<int, int>> rank_ranges(std::span<const VarShapes> assignments);

/// The lowest and highest rank node `node` of `e` has in the shapes where `e` is well-shaped; nullopt if none.
std::optional<std::pair<int, int>> node_ranks(const Expr& e, size_t node, std::span<const VarShapes> shapes);

/// The lowest and highest rank `pattern`'s root has in the assignments ({0, 0} when none applies).
std::pair<int, int> root_ranks(const Expr& pattern, std::span<const VarShapes> shapes);

/// The assignments in which every variable has the lowest rank it has in any of them.
std::vector<VarShapes> lowest_rank_assignments(std::span<const VarShapes> shapes);

}  // namespace teq::axioms
