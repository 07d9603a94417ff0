#include "synth/minimize.h"

#include <set>

#include "optimizer/egraph.h"
#include "optimizer/runner.h"
#include "synth/typing.h"

namespace teq::synth {

std::vector<Rule> both_directions(const std::vector<Rule>& rules) {
  std::vector<Rule> out;
  for (const Rule& r : rules) {
    out.push_back(r);
    Rule rev;
    rev.id = r.id + "~rev";
    rev.lhs = r.rhs;
    rev.rhs = r.lhs;
    try {
      validate_rule(rev);
      out.push_back(std::move(rev));
    } catch (const CorpusError&) {
      // Not a valid rule backwards (unbound variables or a bare-variable side): one way only.
    }
  }
  return out;
}

namespace {

/// Replaces ?variables by input leaves carrying their shapes, so the pattern becomes a graph.
Expr as_graph(const Expr& pattern, const VarShapes& shapes) {
  Expr g;
  std::vector<ExprId> map(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    ExprNode n = pattern.nodes()[i];
    if (n.op == OpKind::Var) {
      n.op = OpKind::Input;
      n.attrs = shapes.at(n.name);
    }
    for (ExprId& c : n.children) c = map[c.value];
    map[i] = g.add(std::move(n));
  }
  g.add_root(map[pattern.root().value]);
  return g;
}

}  // namespace

DeriveResult derive_rule(const Rule& target, const std::vector<Rule>& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits) {
  auto typing = assign_types(target, types, {ShapeChoice{ShapeChoice::SetA, 0}});
  if (!typing) return {false, "no leaf-type shapes make the rule well-shaped"};
  VarShapes shapes = shapes_of(*typing, types, {ShapeChoice::SetA, 0});
  EGraph egraph;
  // A right side with variables its left side lacks (two-pattern rules) must be *built* by the rules
  // from the left sides: it is looked up, never added, or it would hand the rules the very subterm
  // (a concat of the kernels) that the two-pattern rule exists to create.
  std::vector<std::pair<ClassId, Expr>> goals;
  std::vector<std::pair<ClassId, ClassId>> equal_goals;
  try {
    for (size_t i = 0; i < target.lhs.size(); ++i) {
      Expr l = as_graph(target.lhs[i], shapes), r = as_graph(target.rhs[i], shapes);
      ClassId cl = egraph.add_expr(l)[l.root().value];
      auto lv = target.lhs[i].variables(), rv = target.rhs[i].variables();
      if (std::set(lv.begin(), lv.end()) == std::set(rv.begin(), rv.end()) && !target.is_multi())
        equal_goals.emplace_back(cl, egraph.add_expr(r)[r.root().value]);
      else
        goals.emplace_back(cl, std::move(r));
    }
  } catch (const std::exception& e) {
    return {false, std::string("cannot build the rule's graphs: ") + e.what()};
  }
  egraph.rebuild();
  auto lookup = [&](const Expr& g) -> std::optional<ClassId> {
    std::vector<ClassId> ids(g.size());
    for (size_t k = 0; k < g.size(); ++k) {
      const ExprNode& n = g.nodes()[k];
      ENode e{n.op, n.attrs, {}, n.name};
      for (ExprId c : n.children) e.children.push_back(ids[c.value]);
      auto found = egraph.lookup(std::move(e));
      if (!found) return std::nullopt;
      ids[k] = *found;
    }
    return ids[g.root().value];
  };
  auto all_equal = [&] {
    for (auto [a, b] : equal_goals)
      if (egraph.find(a) != egraph.find(b)) return false;
    for (const auto& [a, r] : goals) {
      auto c = lookup(r);
      if (!c || egraph.find(*c) != egraph.find(a)) return false;
    }
    return true;
  };
  if (all_equal()) return {true, ""};
  RunnerConfig config;
  // The runner's node count can read high transiently (dead nodes during rebuild), which stops it
  // after one iteration on tiny e-graphs; the limit is enforced here, between runs, instead.
  config.node_limit = SIZE_MAX;
  config.iter_limit = limits.iter_limit;
  config.time_limit_s = limits.time_limit_s;
  config.k_multi = limits.k_multi;
  config.backoff = false;  // small e-graphs: every rule every iteration
  RunReport report;
  for (size_t iter = 0; iter < limits.iter_limit && egraph.num_nodes() <= limits.node_limit; ++iter) {
    config.iter_limit = 1;
    config.k_multi = iter < static_cast<size_t>(limits.k_multi) ? 1 : 0;
    Runner step(rules, config);
    uint64_t before = egraph.version();
    report = step.run(egraph);
    if (all_equal()) return {true, ""};
    if (egraph.version() == before) {
      report.stop = StopReason::Saturated;
      break;
    }
    if (egraph.num_nodes() > limits.node_limit) report.stop = StopReason::NodeLimit;
  }
  if (all_equal()) return {true, ""};
  return {false, "not equal after saturation (" + std::string(to_string(report.stop)) + ", " +
                     std::to_string(egraph.num_nodes()) + " e-nodes, " + std::to_string(report.iterations) +
                     " iterations)"};
}

}  // namespace teq::synth
