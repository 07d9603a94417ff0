#include "rules/expr.h"

#include <cassert>
#include <unordered_set>

namespace teq {

size_t ExprNodeHash::operator()(const ExprNode& n) const noexcept {
  return node_hash(n.op, std::span<const int64_t>(n.attrs), std::span<const ExprId>(n.children), n.name);
}

ExprId Expr::add(ExprNode node) {
  for (ExprId c : node.children) assert(c.value < nodes_.size() && "Expr::add: child not yet added");
  if (auto it = memo_.find(node); it != memo_.end()) return it->second;
  ExprId id(nodes_.size());
  memo_.emplace(node, id);
  nodes_.push_back(std::move(node));
  return id;
}

ExprId Expr::add(OpKind op, std::vector<int64_t> attrs, std::vector<ExprId> children) {
  return add(ExprNode{op, std::move(attrs), std::move(children), {}});
}

ExprId Expr::add_var(std::string name) { return add(ExprNode{OpKind::Var, {}, {}, std::move(name)}); }

ExprId Expr::import(const Expr& other, ExprId id) {
  // Children precede parents: mark what `id` reaches walking backwards, then copy forwards.
  std::vector<bool> needed(id.value + 1, false);
  needed[id.value] = true;
  for (uint32_t i = id.value + 1; i-- > 0;)
    if (needed[i])
      for (ExprId c : other.nodes_[i].children) needed[c.value] = true;
  std::unordered_map<uint32_t, ExprId> mapped;
  for (uint32_t i = 0; i <= id.value; ++i) {
    if (!needed[i]) continue;
    ExprNode n = other.nodes_[i];
    for (ExprId& c : n.children) c = mapped.at(c.value);
    mapped.emplace(i, add(std::move(n)));
  }
  return mapped.at(id.value);
}

std::vector<std::string> Expr::variables() const {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const ExprNode& n : nodes_)
    if (n.op == OpKind::Var && seen.insert(n.name).second) out.push_back(n.name);
  return out;
}

size_t Expr::num_ops() const {
  size_t n = 0;
  for (const ExprNode& node : nodes_) n += !is_leaf(node.op);
  return n;
}

std::vector<bool> reached_from(const Expr& expr, ExprId root) {
  std::vector<bool> reached(root.value + 1, false);
  reached[root.value] = true;
  for (uint32_t i = root.value + 1; i-- > 0;)
    if (reached[i])
      for (ExprId c : expr[ExprId(i)].children) reached[c.value] = true;
  return reached;
}

}  // namespace teq
