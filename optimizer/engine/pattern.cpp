#include "optimizer/engine/pattern.h"

#include "rules/rule_scope.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <unordered_map>

#include "rules/renamed_term.h"
#include "rules/semantics.h"

namespace teq {

uint32_t VarTable::slot(const std::string& name) {
  if (auto s = find(name)) return *s;
  names.push_back(name);
  return static_cast<uint32_t>(names.size() - 1);
}

std::optional<uint32_t> VarTable::find(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<uint32_t>(i);
  return std::nullopt;
}

Pattern::Pattern(const Expr& expr, VarTable& vars) {
  const ExprId root = expr.root();
  // Keep only what the root reaches; the root comes last.
  const std::vector<bool> needed = reached_from(expr, root);
  std::unordered_map<uint32_t, uint32_t> mapped;
  for (uint32_t i = 0; i <= root.value; ++i) {
    if (!needed[i]) continue;
    const ExprNode& n = expr[ExprId(i)];
    if (n.op == OpKind::Input || n.op == OpKind::Weight)
      throw std::invalid_argument("pattern contains a " + std::string(op_name(n.op)) + " leaf '" + n.name + "'");
    PatternNode p{n.op, n.attrs, {}, kUnbound};
    if (n.op == OpKind::Var) {
      p.var = vars.slot(n.name);
      if (std::find(var_slots_.begin(), var_slots_.end(), p.var) == var_slots_.end()) var_slots_.push_back(p.var);
    }
    for (ExprId c : n.children) p.children.push_back(mapped.at(c.value));
    mapped.emplace(i, static_cast<uint32_t>(nodes_.size()));
    nodes_.push_back(std::move(p));
  }
}

std::string Pattern::canonical_key() const {
  std::unordered_map<uint32_t, size_t> renamed;  // variable slot -> number, in order of first occurrence
  std::string out;
  print_renamed_term(
      root(), [&](uint32_t i) -> const PatternNode& { return nodes_[i]; },
      [&](const PatternNode& var) { return std::to_string(renamed.try_emplace(var.var, renamed.size()).first->second); },
      out);
  return out;
}

std::vector<uint32_t> Pattern::canonical_vars() const {
  std::vector<uint32_t> order;
  std::function<void(uint32_t)> walk = [&](uint32_t i) {
    const PatternNode& n = nodes_[i];
    if (n.op == OpKind::Var) {
      if (std::find(order.begin(), order.end(), n.var) == order.end()) order.push_back(n.var);
      return;
    }
    for (uint32_t c : n.children) walk(c);
  };
  walk(root());
  return order;
}

ClassIndex::ClassIndex(const EGraph& egraph) : by_op_(all_ops().size()) {
  for (ClassId c : egraph.class_ids()) {
    const std::vector<NodeId>& nodes = egraph.eclass(c).nodes;
    for (NodeId n : nodes) {
      std::vector<ClassId>& list = by_op_[static_cast<size_t>(egraph.node(n).op)];
      if (list.empty() || list.back() != c) list.push_back(c);
    }
  }
}

namespace {

/// Backtracking matcher: `todo` holds the (pattern node, e-class) pairs still to match; `s` is the
/// substitution so far. Every complete match is appended to `out`. No allocation per step.
class Matcher {
 public:
  Matcher(const EGraph& g, const Pattern& p, size_t limit) : g_(g), p_(p), limit_(limit) {}

  void run(ClassId root, Subst& s, std::vector<Subst>& out) {
    todo_.clear();
    todo_.push_back({p_.root(), root});
    out_ = &out;
    step(s);
  }

 private:
  void step(Subst& s) {
    if (out_->size() >= limit_) return;
    if (todo_.empty()) {
      out_->push_back(s);
      return;
    }
    const auto [pi, c] = todo_.back();
    todo_.pop_back();
    const PatternNode& pn = p_.nodes()[pi];
    if (pn.op == OpKind::Var) {
      ClassId& slot = s[pn.var];
      if (slot.value == kUnbound) {
        slot = c;
        step(s);
        s[pn.var] = ClassId(kUnbound);
      } else if (slot == c) {
        step(s);
      }
    } else {
      for (NodeId nid : g_.eclass(c).nodes) {
        const ENode& n = g_.node(nid);
        if (n.op != pn.op || n.children.size() != pn.children.size() || n.attrs != pn.attrs) continue;
        // Children are matched left to right: push them in reverse.
        for (size_t i = pn.children.size(); i-- > 0;) todo_.push_back({pn.children[i], n.children[i]});
        step(s);
        todo_.resize(todo_.size() - pn.children.size());
      }
    }
    todo_.push_back({pi, c});
  }

  const EGraph& g_;
  const Pattern& p_;
  size_t limit_;
  std::vector<std::pair<uint32_t, ClassId>> todo_;
  std::vector<Subst>* out_ = nullptr;
};

}  // namespace

std::vector<Match> search_class(const EGraph& egraph, ClassId root, const Pattern& pattern, size_t num_slots) {
  std::vector<Subst> substs;
  root = egraph.find(root);
  Subst s(num_slots, ClassId(kUnbound));
  Matcher(egraph, pattern, SIZE_MAX).run(root, s, substs);
  std::vector<Match> out;
  for (Subst& m : substs) out.push_back(Match{root, std::move(m)});
  return out;
}

std::vector<Match> search(const EGraph& egraph, const ClassIndex& index, const Pattern& pattern, size_t num_slots,
                          size_t limit) {
  std::vector<Match> out;
  std::vector<Subst> substs;
  Subst s(num_slots, ClassId(kUnbound));
  Matcher matcher(egraph, pattern, SIZE_MAX);
  for (ClassId c : index.classes_with(pattern.root_op())) {
    substs.clear();
    matcher.run(c, s, substs);
    for (Subst& m : substs) {
      out.push_back(Match{c, std::move(m)});
      if (out.size() >= limit) return out;
    }
  }
  return out;
}

namespace {
bool pattern_has_free_shape(const Pattern& pattern, uint32_t i) {
  return has_free_shape([&](uint32_t k) -> const PatternNode& { return pattern.nodes()[k]; },
                        [](uint32_t c) { return c; }, i);
}
}  // namespace

std::optional<std::vector<Shape>> instantiated_shapes(const EGraph& egraph, const Pattern& pattern,
                                                      const Subst& subst) {
  std::vector<Shape> shapes(pattern.nodes().size());
  std::vector<Shape> in;
  for (size_t i = 0; i < pattern.nodes().size(); ++i) {
    const PatternNode& n = pattern.nodes()[i];
    if (n.op == OpKind::Var) {
      shapes[i] = egraph.shape(subst[n.var]);
      continue;
    }
    in.clear();
    for (uint32_t c : n.children) in.push_back(shapes[c]);
    std::optional<Shape> shape = try_infer_shape(n.op, n.attrs, in);
    if (!shape) return std::nullopt;
    shapes[i] = std::move(*shape);
  }
  return shapes;
}

std::string pattern_grouping(const Pattern& pattern, const std::vector<Shape>& shapes) {
  std::string out;
  for (uint32_t i = 0; i < pattern.nodes().size(); ++i) {
    const PatternNode& n = pattern.nodes()[i];
    if (n.op != OpKind::Conv2d || !pattern_has_free_shape(pattern, n.children[1])) continue;
    out += is_ungrouped_conv(shapes[n.children[0]], shapes[n.children[1]]) ? 'u' : 'g';
  }
  return out;
}

ClassId instantiate(EGraph& egraph, const Pattern& pattern, const Subst& subst, std::optional<RuleId> origin) {
  std::vector<ClassId> ids(pattern.nodes().size());
  for (size_t i = 0; i < pattern.nodes().size(); ++i) {
    const PatternNode& n = pattern.nodes()[i];
    if (n.op == OpKind::Var) {
      ids[i] = egraph.find(subst[n.var]);
      continue;
    }
    ENode e{n.op, n.attrs, {}, {}};
    for (uint32_t c : n.children) e.children.push_back(ids[c]);
    ids[i] = egraph.add(std::move(e), origin);
  }
  return ids[pattern.root()];
}

}  // namespace teq
