#include "rules/rule_scope.h"

#include <algorithm>

namespace teq {

std::vector<ExprId> scoped_convs(const Expr& pattern) {
  // Only what the root reaches, as a compiled pattern keeps (optimizer/engine/pattern.cpp).
  const ExprId root = pattern.root();
  const std::vector<bool> reached = reached_from(pattern, root);
  std::vector<ExprId> out;
  for (uint32_t i = 0; i <= root.value; ++i) {
    if (!reached[i]) continue;
    const ExprNode& n = pattern[ExprId(i)];
    if (n.op == OpKind::Conv2d && has_free_shape(pattern, n.children[1])) out.push_back(ExprId(i));
  }
  return out;
}

std::string pattern_grouping(const Expr& pattern, const std::vector<Shape>& node_shapes) {
  std::string out;
  for (ExprId c : scoped_convs(pattern)) {
    const ExprNode& n = pattern[c];
    out += is_ungrouped_conv(node_shapes[n.children[0].value], node_shapes[n.children[1].value]) ? 'u' : 'g';
  }
  return out;
}

std::string join_grouping(const std::vector<std::string>& lhs, const std::vector<std::string>& rhs) {
  std::string out;
  for (size_t i = 0; i < lhs.size(); ++i) out += (i ? "," : "") + lhs[i];
  out += '|';
  for (size_t i = 0; i < rhs.size(); ++i) out += (i ? "," : "") + rhs[i];
  return out;
}

SidedGrouping split_grouping(std::string_view grouping) {
  auto parts = [](std::string_view side) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t comma; (comma = side.find(',', start)) != std::string_view::npos; start = comma + 1)
      out.emplace_back(side.substr(start, comma - start));
    out.emplace_back(side.substr(start));
    return out;
  };
  const size_t bar = grouping.find('|');
  if (bar == std::string_view::npos) return {parts(grouping), {}};
  return {parts(grouping.substr(0, bar)), parts(grouping.substr(bar + 1))};
}

std::string ungrouped_grouping(const Rule& rule) {
  auto side = [](const std::vector<Expr>& patterns) {
    std::vector<std::string> out;
    for (const Expr& p : patterns) out.emplace_back(scoped_convs(p).size(), 'u');
    return out;
  };
  return join_grouping(side(rule.lhs), side(rule.rhs));
}

std::string reversed_grouping(std::string_view grouping) {
  const size_t bar = grouping.find('|');
  if (bar == std::string_view::npos) return std::string(grouping);
  return std::string(grouping.substr(bar + 1)) + "|" + std::string(grouping.substr(0, bar));
}

std::string grouping_problem(const Rule& rule, std::string_view grouping) {
  const size_t bar = grouping.find('|');
  if (bar == std::string_view::npos || grouping.find('|', bar + 1) != std::string_view::npos)
    return "'" + std::string(grouping) + "' must be LHS|RHS, e.g. \"g|uu\"";
  const std::string expected = ungrouped_grouping(rule);
  auto shape_of = [](std::string_view s) {
    std::string out(s);
    std::replace(out.begin(), out.end(), 'g', 'u');
    return out;
  };
  if (grouping.find_first_not_of("ug,|") != std::string_view::npos || shape_of(grouping) != expected)
    return "'" + std::string(grouping) + "' does not fit the rule's convolutions on weights of free shape (" +
           expected + " has one letter u or g per such convolution, in node order)";
  return "";
}

bool scope_admits(const Rule& rule, std::string_view grouping) {
  if (rule.conv_groupings.empty()) return grouping.find('g') == std::string_view::npos;
  return std::find(rule.conv_groupings.begin(), rule.conv_groupings.end(), grouping) != rule.conv_groupings.end();
}

std::vector<std::string> scope_groupings(const Rule& rule) {
  if (rule.conv_groupings.empty()) return {ungrouped_grouping(rule)};
  return rule.conv_groupings;
}

std::optional<std::string> instance_grouping(const Rule& rule, const VarShapes& shapes) {
  std::vector<std::string> sides[2];
  for (int side = 0; side < 2; ++side)
    for (const Expr& p : side == 0 ? rule.lhs : rule.rhs) {
      std::optional<std::vector<Shape>> node_shapes = try_infer_shapes(p, shapes);
      if (!node_shapes) return std::nullopt;
      sides[side].push_back(pattern_grouping(p, *node_shapes));
    }
  return join_grouping(sides[0], sides[1]);
}

std::vector<std::string> all_groupings(const Rule& rule, size_t max_convs) {
  const std::string ungrouped = ungrouped_grouping(rule);
  std::vector<size_t> letters;
  for (size_t i = 0; i < ungrouped.size(); ++i)
    if (ungrouped[i] == 'u') letters.push_back(i);
  if (letters.size() > max_convs) return {};
  std::vector<std::string> out;
  for (uint32_t mask = 0; mask < (1u << letters.size()); ++mask) {
    std::string g = ungrouped;
    for (size_t k = 0; k < letters.size(); ++k)
      if (mask & (1u << k)) g[letters[k]] = 'g';
    out.push_back(std::move(g));
  }
  return out;
}

bool has_scoped_convs(const Rule& rule) {
  for (const std::vector<Expr>* side : {&rule.lhs, &rule.rhs})
    for (const Expr& p : *side)
      if (!scoped_convs(p).empty()) return true;
  return false;
}

}  // namespace teq
