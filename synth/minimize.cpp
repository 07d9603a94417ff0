#include "synth/minimize.h"

#include <chrono>
#include <set>

#include "optimizer/engine/egraph.h"
#include "optimizer/engine/runner.h"
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

struct EGraphHolder {
  EGraph egraph;
};

struct EquationBatch::Equation {
  struct Side {
    ClassId lhs;
    std::optional<ClassId> rhs;  // added right side
    Expr rhs_graph;              // looked-up right side (when rhs is empty)
  };
  std::vector<Side> sides;
};

EquationBatch::EquationBatch(std::vector<LeafType> types)
    : types_(std::move(types)), graph_(std::make_unique<EGraphHolder>()) {}

EquationBatch::~EquationBatch() = default;

size_t EquationBatch::num_nodes() const { return graph_->egraph.num_nodes(); }

std::optional<size_t> EquationBatch::add(const Rule& target, std::string* why_not, bool look_up_rhs) {
  auto typing = assign_types(target, types_, {ShapeChoice{ShapeChoice::SetA}});
  if (!typing) {
    if (why_not) *why_not = "no leaf-type shapes make the rule well-shaped";
    return std::nullopt;
  }
  VarShapes shapes = shapes_of(*typing, types_, {ShapeChoice::SetA});
  EGraph& egraph = graph_->egraph;
  Equation eq;
  try {
    for (size_t i = 0; i < target.lhs.size(); ++i) {
      Expr l = as_graph(target.lhs[i], shapes), r = as_graph(target.rhs[i], shapes);
      Equation::Side side{egraph.add_expr(l)[l.root().value], std::nullopt, {}};
      auto lv = target.lhs[i].variables(), rv = target.rhs[i].variables();
      if (!look_up_rhs && std::set(lv.begin(), lv.end()) == std::set(rv.begin(), rv.end()) && !target.is_multi())
        side.rhs = egraph.add_expr(r)[r.root().value];
      else
        side.rhs_graph = std::move(r);
      eq.sides.push_back(std::move(side));
    }
  } catch (const std::exception& e) {
    if (why_not) *why_not = std::string("cannot build the rule's graphs: ") + e.what();
    return std::nullopt;
  }
  egraph.rebuild();
  equations_.push_back(std::move(eq));
  return equations_.size() - 1;
}

namespace {

std::optional<ClassId> lookup_graph(const EGraph& egraph, const Expr& g) {
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
}

}  // namespace

bool EquationBatch::equal(size_t i) const {
  const EGraph& egraph = graph_->egraph;
  for (const Equation::Side& s : equations_.at(i).sides) {
    std::optional<ClassId> r = s.rhs ? s.rhs : lookup_graph(egraph, s.rhs_graph);
    if (!r || egraph.find(*r) != egraph.find(s.lhs)) return false;
  }
  return true;
}

void EquationBatch::assert_equal(size_t i) {
  EGraph& egraph = graph_->egraph;
  for (Equation::Side& s : equations_.at(i).sides) {
    if (!s.rhs) s.rhs = egraph.add_expr(s.rhs_graph)[s.rhs_graph.root().value];
    egraph.merge(s.lhs, *s.rhs);
  }
  egraph.rebuild();
}

std::string EquationBatch::saturate(const std::vector<Rule>& rules, const DeriveLimits& limits,
                                    const std::vector<size_t>& watch) {
  EGraph& egraph = graph_->egraph;
  auto all_equal = [&] {
    if (watch.empty()) {
      for (size_t i = 0; i < equations_.size(); ++i)
        if (!equal(i)) return false;
    } else {
      for (size_t i : watch)
        if (!equal(i)) return false;
    }
    return true;
  };
  if (all_equal()) return "equal before saturation";
  RunnerConfig config;
  // The runner's node count can read high transiently (dead nodes during rebuild), which stops it
  // after one iteration on tiny e-graphs; the limit is enforced here, between iterations, instead.
  config.node_limit = SIZE_MAX;
  config.iter_limit = 1;
  config.time_limit_s = limits.time_limit_s;
  config.backoff = false;  // every rule every iteration: the limits below bound the work
  config.cross_product_multi = true;  // relu-batch-like rules: the e-graphs here are small
  config.k_multi = 1;
  Runner with_multi(rules, config);
  config.k_multi = 0;
  Runner single_only(rules, config);
  auto start = std::chrono::steady_clock::now();
  StopReason stop = StopReason::IterLimit;
  size_t iterations = 0;
  for (size_t iter = 0; iter < limits.iter_limit; ++iter) {
    if (egraph.num_nodes() > limits.node_limit) {
      stop = StopReason::NodeLimit;
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limits.time_limit_s) {
      stop = StopReason::TimeLimit;
      break;
    }
    uint64_t before = egraph.version();
    (iter < static_cast<size_t>(limits.k_multi) ? with_multi : single_only).run(egraph);
    ++iterations;
    if (all_equal()) return "equal";
    if (egraph.version() == before) {
      stop = StopReason::Saturated;
      break;
    }
  }
  return std::string(to_string(stop)) + ", " + std::to_string(egraph.num_nodes()) + " e-nodes, " +
         std::to_string(iterations) + " iterations";
}

DeriveResult derive_rule(const Rule& target, const std::vector<Rule>& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits) {
  EquationBatch batch(types);
  std::string why_not;
  auto index = batch.add(target, &why_not);
  if (!index) return {false, why_not};
  if (batch.equal(*index)) return {true, ""};
  std::string stop = batch.saturate(rules, limits);
  if (batch.equal(*index)) return {true, ""};
  return {false, "not equal after saturation (" + stop + ")"};
}

DeriveResult derive_as_rewrites(const Rule& target, const std::vector<Rule>& rules,
                                const std::vector<LeafType>& types, const DeriveLimits& limits) {
  auto one_way = [&](const Rule& r) -> DeriveResult {
    EquationBatch batch(types);
    std::string why_not;
    auto index = batch.add(r, &why_not, /*look_up_rhs=*/true);
    if (!index) return {false, why_not};
    if (batch.equal(*index)) return {true, ""};
    std::string stop = batch.saturate(rules, limits);
    if (batch.equal(*index)) return {true, ""};
    return {false, "right side not built from the left (" + stop + ")"};
  };
  DeriveResult forward = one_way(target);
  if (!forward.derived) return forward;
  std::vector<Rule> directions = both_directions({target});
  if (directions.size() < 2) return forward;  // not a rule backwards: nothing more to rewrite
  DeriveResult backward = one_way(directions[1]);
  if (!backward.derived) backward.reason = "backwards: " + backward.reason;
  return backward;
}

}  // namespace teq::synth
