#include "optimizer/engine/egraph.h"

#include <algorithm>
#include <stdexcept>

#include "rules/semantics.h"
#include "rules/ops/elementwise.h"

namespace teq {

size_t ENodeHash::operator()(const ENode& n) const noexcept {
  return node_hash(n.op, std::span<const int64_t>(n.attrs), std::span<const ClassId>(n.children), n.name);
}

ClassId EGraph::find(ClassId id) const {
  uint32_t x = id.value;
  while (parent_[x].value != x) {
    parent_[x] = parent_[parent_[x].value];  // path halving
    x = parent_[x].value;
  }
  return ClassId(x);
}

ENode EGraph::canonical(ENode node) const {
  for (ClassId& c : node.children) c = find(c);
  return node;
}

bool EGraph::node_weight_only(const ENode& n) const {
  if (n.op == OpKind::Weight || is_constant_op(n.op)) return true;
  // Inputs vary per run; opaque operators may have side effects or state we know nothing about.
  if (n.op == OpKind::Input || n.op == OpKind::Opaque || n.children.empty()) return false;
  for (ClassId c : n.children)
    if (!classes_[find(c).value].weight_only) return false;
  return true;
}

bool EGraph::is_precomputable(NodeId id) const { return node_weight_only(nodes_[id.value]); }

std::optional<ClassId> EGraph::lookup(ENode node) const {
  node = canonical(std::move(node));
  auto it = memo_.find(node);
  if (it == memo_.end()) return std::nullopt;
  return find(node_class_[it->second.value]);
}

ClassId EGraph::add(ENode node, std::optional<RuleId> origin) {
  if (node.op == OpKind::Var) throw std::invalid_argument("EGraph::add: pattern variable ?" + node.name);
  node = canonical(std::move(node));
  if (auto it = memo_.find(node); it != memo_.end()) return find(node_class_[it->second.value]);

  Shape shape;
  if (node.op == OpKind::Input || node.op == OpKind::Weight) {
    shape = node.attrs;
  } else {
    std::vector<Shape> in;
    in.reserve(node.children.size());
    for (ClassId c : node.children) in.push_back(classes_[c.value].shape);
    shape = infer_shape(node.op, node.attrs, in);  // throws ShapeError
  }
  const NodeId nid(nodes_.size());
  const ClassId cid(classes_.size());
  const bool weight_only = node_weight_only(node);
  int32_t elem_type = 0;
  if (is_leaf(node.op) || node.op == OpKind::Opaque || node.children.empty())
    elem_type = leaf_type_ ? leaf_type_(node.op, node.attrs, node.name) : 0;
  else
    elem_type = ops::result_elem_type(node.op, node.attrs, classes_[find(node.children[0]).value].elem_type);
  parent_.push_back(cid);
  classes_.push_back(EClass{{nid}, {}, std::move(shape), weight_only, elem_type});
  for (size_t i = 0; i < node.children.size(); ++i) {
    ClassId c = node.children[i];
    // A node with a repeated child is one parent, not two.
    if (std::find(node.children.begin(), node.children.begin() + i, c) == node.children.begin() + i)
      classes_[c.value].parents.push_back(nid);
  }
  node_class_.push_back(cid);
  origin_.push_back(origin);
  dead_.push_back(false);
  memo_.emplace(node, nid);
  nodes_.push_back(std::move(node));
  ++num_classes_;
  ++version_;
  return cid;
}

std::vector<int32_t> expr_elem_types(const Expr& graph, const LeafElemType& leaf_type) {
  std::vector<int32_t> types(graph.size(), 0);
  for (size_t i = 0; i < graph.size(); ++i) {
    const ExprNode& n = graph.nodes()[i];
    if (is_leaf(n.op) || n.op == OpKind::Opaque || n.children.empty())
      types[i] = leaf_type ? leaf_type(n.op, n.attrs, n.name) : 0;
    else
      types[i] = ops::result_elem_type(n.op, n.attrs, types[n.children[0].value]);
  }
  return types;
}

std::vector<ClassId> EGraph::add_expr(const Expr& graph) {
  std::vector<ClassId> ids;
  ids.reserve(graph.size());
  for (const ExprNode& n : graph.nodes()) {
    ENode e{n.op, n.attrs, {}, n.name};
    for (ExprId c : n.children) e.children.push_back(ids[c.value]);
    ids.push_back(add(std::move(e)));
  }
  return ids;
}

bool EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return false;
  EClass* ca = &classes_[a.value];
  EClass* cb = &classes_[b.value];
  if (ca->shape != cb->shape)
    throw std::logic_error("EGraph::merge: e-classes " + std::to_string(a.value) + " and " +
                           std::to_string(b.value) + " have different shapes " + to_string(ca->shape) + " and " +
                           to_string(cb->shape) + " (an unsound rule or a shape-inference bug)");
  if (ca->elem_type != cb->elem_type)
    throw std::logic_error("EGraph::merge: e-classes " + std::to_string(a.value) + " and " + std::to_string(b.value) +
                           " have different element types " + std::to_string(ca->elem_type) + " and " +
                           std::to_string(cb->elem_type) + " (an unsound rule or a bug)");
  // The class with more parents stays the root: fewer parents need re-canonicalizing.
  if (ca->parents.size() < cb->parents.size()) {
    std::swap(a, b);
    std::swap(ca, cb);
  }
  parent_[b.value] = a;
  pending_.insert(pending_.end(), cb->parents.begin(), cb->parents.end());
  if (ca->weight_only != cb->weight_only) {
    // The side that was not weight-only gains the property: its parents may gain it too.
    const EClass& gained = ca->weight_only ? *cb : *ca;
    analysis_pending_.insert(analysis_pending_.end(), gained.parents.begin(), gained.parents.end());
    ca->weight_only = true;
  }
  ca->nodes.insert(ca->nodes.end(), cb->nodes.begin(), cb->nodes.end());
  ca->parents.insert(ca->parents.end(), cb->parents.begin(), cb->parents.end());
  *cb = EClass{};
  dirty_.push_back(a);
  --num_classes_;
  ++version_;
  return true;
}

void EGraph::rebuild() {
  while (!pending_.empty() || !analysis_pending_.empty()) {
    while (!pending_.empty()) {
      NodeId n = pending_.back();
      pending_.pop_back();
      if (dead_[n.value]) continue;
      ENode canon = canonical(nodes_[n.value]);
      if (canon != nodes_[n.value]) {
        if (auto it = memo_.find(nodes_[n.value]); it != memo_.end() && it->second == n) memo_.erase(it);
        nodes_[n.value] = std::move(canon);
      }
      auto [it, inserted] = memo_.try_emplace(nodes_[n.value], n);
      if (!inserted && it->second != n) {
        // Congruent to a node already present: one class, one node.
        NodeId keep = it->second;
        dead_[n.value] = true;
        ++num_dead_;
        dirty_.insert(dirty_.end(), nodes_[n.value].children.begin(), nodes_[n.value].children.end());
        dirty_.push_back(node_class_[n.value]);
        merge(node_class_[n.value], node_class_[keep.value]);
      }
    }
    while (!analysis_pending_.empty()) {
      NodeId n = analysis_pending_.back();
      analysis_pending_.pop_back();
      if (dead_[n.value]) continue;
      EClass& c = classes_[find(node_class_[n.value]).value];
      if (!c.weight_only && node_weight_only(nodes_[n.value])) {
        c.weight_only = true;
        analysis_pending_.insert(analysis_pending_.end(), c.parents.begin(), c.parents.end());
      }
    }
  }
  // Drop dead nodes from the touched classes' lists and make the lists sorted and unique.
  for (ClassId& d : dirty_) d = find(d);
  std::sort(dirty_.begin(), dirty_.end());
  dirty_.erase(std::unique(dirty_.begin(), dirty_.end()), dirty_.end());
  for (ClassId d : dirty_) {
    EClass& c = classes_[d.value];
    std::erase_if(c.nodes, [&](NodeId n) { return dead_[n.value]; });
    std::sort(c.nodes.begin(), c.nodes.end());
    c.nodes.erase(std::unique(c.nodes.begin(), c.nodes.end()), c.nodes.end());
    std::erase_if(c.parents, [&](NodeId n) { return dead_[n.value]; });
    std::sort(c.parents.begin(), c.parents.end());
    c.parents.erase(std::unique(c.parents.begin(), c.parents.end()), c.parents.end());
  }
  dirty_.clear();
}

std::vector<ClassId> EGraph::class_ids() const {
  std::vector<ClassId> out;
  out.reserve(num_classes_);
  for (uint32_t i = 0; i < classes_.size(); ++i)
    if (parent_[i].value == i) out.push_back(ClassId(i));
  return out;
}

}  // namespace teq
