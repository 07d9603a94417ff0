#include "optimizer/engine/extract.h"

#include <algorithm>
#include <stdexcept>

#include "rules/evaluator.h"

namespace teq {

double dag_cost(const ExtractionProblem& problem, std::span<const NodeId> choice) {
  enum : uint8_t { kWhite, kOnPath, kDone };
  std::vector<uint8_t> state(problem.classes.size(), kWhite);
  double total = 0;
  struct Frame {
    ClassId c;
    size_t next;
  };
  std::vector<Frame> stack;
  for (ClassId root : problem.roots) {
    if (root.value >= state.size()) return kInfiniteCost;
    if (state[root.value] == kDone) continue;
    stack.push_back({root, 0});
    state[root.value] = kOnPath;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const NodeId n = f.c.value < choice.size() ? choice[f.c.value] : kNoNode;
      if (n == kNoNode || n.value >= problem.nodes.size() || problem.nodes[n.value].cls != f.c)
        return kInfiniteCost;
      const auto& children = problem.nodes[n.value].children;
      if (f.next == children.size()) {
        total += problem.nodes[n.value].cost;
        state[f.c.value] = kDone;
        stack.pop_back();
        continue;
      }
      ClassId d = children[f.next++];
      if (d.value >= state.size() || state[d.value] == kOnPath) return kInfiniteCost;  // cycle
      if (state[d.value] == kWhite) {
        state[d.value] = kOnPath;
        stack.push_back({d, 0});
      }
    }
  }
  return total;
}

ExtractionProblem make_problem(const EGraph& egraph, std::span<const ClassId> roots, const CostModel& cost,
                               const std::vector<bool>& blacklist) {
  ExtractionProblem p;
  p.nodes.resize(egraph.node_slots());
  p.classes.resize(egraph.class_slots());
  auto usable = [&](NodeId n) { return !(n.value < blacklist.size() && blacklist[n.value]); };
  // Facts of each class as an operand: weight-only, and what the cost model says of it (CostModel::marks) when
  // it says something of one of its e-nodes (a fixpoint: marks may depend on the operands' marks; the chains,
  // a bias add of a conv say, are short).
  std::vector<OperandFacts> facts(egraph.class_slots());
  for (ClassId c : egraph.class_ids()) facts[c.value].precomputable = egraph.eclass(c).weight_only;
  std::vector<Shape> in;
  std::vector<OperandFacts> operands;
  auto context = [&](const ENode& e, ClassId c) {
    in.clear();
    operands.clear();
    for (ClassId d : e.children) {
      in.push_back(egraph.shape(d));
      operands.push_back(facts[egraph.find(d).value]);
    }
    const int32_t operand_type = e.children.empty() ? 0 : egraph.eclass(egraph.find(e.children[0])).elem_type;
    return NodeContext{e.op, e.attrs, in, egraph.eclass(c).shape, operands, egraph.eclass(c).elem_type, operand_type};
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (ClassId c : egraph.class_ids()) {
      if (facts[c.value].marks != 0) continue;
      for (NodeId n : egraph.eclass(c).nodes) {
        if (!usable(n)) continue;
        if (const NodeMarks m = cost.marks(context(egraph.node(n), c)); m != 0) {
          facts[c.value].marks = m;
          changed = true;
          break;
        }
      }
    }
  }
  for (ClassId c : egraph.class_ids()) {
    for (NodeId n : egraph.eclass(c).nodes) {
      if (!usable(n)) continue;
      const ENode& e = egraph.node(n);
      ExtractionProblem::Node& out = p.nodes[n.value];
      out.cls = c;
      for (ClassId d : e.children) out.children.push_back(egraph.find(d));
      if (!is_leaf(e.op) && !egraph.is_precomputable(n)) {
        out.cost = node_cost_in_context(cost, context(e, c));
        if (egraph.origin(n)) out.cost *= 1 + kRewrittenNodeTieBreak;
      }
      p.classes[c.value].push_back(n);
    }
  }
  for (ClassId r : roots) p.roots.push_back(egraph.find(r));
  return p;
}

Expr build_expr(const EGraph& egraph, std::span<const NodeId> choice, std::span<const ClassId> roots) {
  Expr out;
  std::vector<ExprId> done(egraph.class_slots(), ExprId(UINT32_MAX));
  std::vector<bool> on_path(egraph.class_slots(), false);
  struct Frame {
    ClassId c;
    size_t next;
  };
  std::vector<Frame> stack;
  for (ClassId root : roots) {
    root = egraph.find(root);
    if (done[root.value].value == UINT32_MAX) {
      stack.push_back({root, 0});
      on_path[root.value] = true;
    }
    while (!stack.empty()) {
      Frame& f = stack.back();
      const NodeId n = choice[f.c.value];
      if (n == kNoNode) throw std::logic_error("build_expr: no e-node chosen for e-class " + std::to_string(f.c.value));
      const ENode& e = egraph.node(n);
      if (f.next < e.children.size()) {
        ClassId d = egraph.find(e.children[f.next++]);
        if (on_path[d.value]) throw std::logic_error("build_expr: the selection is cyclic");
        if (done[d.value].value == UINT32_MAX) {
          on_path[d.value] = true;
          stack.push_back({d, 0});
        }
        continue;
      }
      ExprNode x{e.op, e.attrs, {}, e.name};
      for (ClassId d : e.children) x.children.push_back(done[egraph.find(d).value]);
      done[f.c.value] = out.add(std::move(x));
      on_path[f.c.value] = false;
      stack.pop_back();
    }
    out.add_root(done[root.value]);
  }
  return out;
}

namespace {

/// Which nodes the roots reach.
std::vector<bool> reached(const Expr& graph) {
  std::vector<bool> needed(graph.size(), false);
  for (ExprId r : graph.roots()) needed[r.value] = true;
  for (size_t i = graph.size(); i-- > 0;)
    if (needed[i])
      for (ExprId c : graph.nodes()[i].children) needed[c.value] = true;
  return needed;
}

/// Whether a node depends on weights and constants only (computed once at load time), given its children's.
bool is_precomputable(const ExprNode& n, const std::vector<bool>& precomputable) {
  if (n.op == OpKind::Weight || is_constant_op(n.op)) return true;
  if (is_leaf(n.op) || n.op == OpKind::Opaque || n.children.empty()) return false;
  return std::ranges::all_of(n.children, [&](ExprId c) { return precomputable[c.value]; });
}

}  // namespace

std::vector<bool> precomputable_nodes(const Expr& graph) {
  std::vector<bool> precomputable(graph.size(), false);
  for (size_t i = 0; i < graph.size(); ++i) precomputable[i] = is_precomputable(graph.nodes()[i], precomputable);
  return precomputable;
}

double weight_bytes(const Expr& graph, const LeafElemType& leaf_type) {
  const std::vector<bool> needed = reached(graph);
  double bytes = 0;
  for (size_t i = 0; i < graph.size(); ++i) {
    const ExprNode& n = graph.nodes()[i];
    if (needed[i] && n.op == OpKind::Weight)
      bytes += element_bytes(leaf_type ? leaf_type(n.op, n.attrs, n.name) : 0) *
               static_cast<double>(num_elements(Shape(n.attrs)));
  }
  return bytes;
}

GraphCost graph_cost_detail(const Expr& graph, const CostModel& cost, const LeafElemType& leaf_type) {
  const std::vector<Shape> shapes = infer_shapes(graph, {});
  const std::vector<int32_t> types = expr_elem_types(graph, leaf_type);
  const std::vector<bool> needed = reached(graph);
  const std::vector<bool> precomputable = precomputable_nodes(graph);
  std::vector<NodeMarks> marks(graph.size(), 0);
  std::vector<double> node_costs(graph.size(), 0.0);
  std::vector<Shape> in;
  std::vector<OperandFacts> operands;
  for (size_t i = 0; i < graph.size(); ++i) {
    const ExprNode& n = graph.nodes()[i];
    if (is_leaf(n.op)) continue;
    in.clear();
    operands.clear();
    for (ExprId c : n.children) {
      in.push_back(shapes[c.value]);
      operands.push_back({precomputable[c.value], marks[c.value]});
    }
    const NodeContext node{n.op, n.attrs, in, shapes[i], operands, types[i],
                           n.children.empty() ? 0 : types[n.children[0].value]};
    marks[i] = cost.marks(node);
    if (needed[i] && !precomputable[i]) node_costs[i] = node_cost_in_context(cost, node);
  }
  GraphCost total;
  for (double c : node_costs) total.unfused += c;
  total.fused = total.unfused;
  for (const PricedUnit& unit : cost.fused_units(graph, shapes, precomputable)) {
    if (!std::ranges::all_of(unit.nodes, [&](size_t i) { return i < graph.size() && needed[i]; })) continue;
    for (size_t i : unit.nodes) total.fused -= node_costs[i];
    total.fused += unit.cost;
    ++total.units;
  }
  return total;
}

double graph_cost(const Expr& graph, const CostModel& cost, const LeafElemType& leaf_type) {
  return graph_cost_detail(graph, cost, leaf_type).fused;
}

}  // namespace teq
