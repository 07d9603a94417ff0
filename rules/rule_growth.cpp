#include "rules/rule_growth.h"

#include <map>

#include "rules/sexpr.h"

namespace teq {

namespace {

/// Matches pattern node `p` of `lhs` against term node `t` of `rhs`, whose variables are opaque leaves.
/// Bindings are compared as terms (their s-expressions), since a variable may occur more than once.
bool match(const Expr& lhs, ExprId p, const Expr& rhs, ExprId t, std::map<std::string, ExprId>& bound) {
  const ExprNode& pn = lhs[p];
  if (pn.op == OpKind::Var) {
    auto [it, fresh] = bound.emplace(pn.name, t);
    return fresh || to_sexpr(rhs, it->second) == to_sexpr(rhs, t);
  }
  const ExprNode& tn = rhs[t];
  if (tn.op != pn.op || tn.attrs != pn.attrs || tn.children.size() != pn.children.size()) return false;
  for (size_t k = 0; k < pn.children.size(); ++k)
    if (!match(lhs, pn.children[k], rhs, tn.children[k], bound)) return false;
  return true;
}

}  // namespace

std::vector<GrowingVar> self_feeding_vars(const Expr& lhs, const Expr& rhs) {
  for (size_t t = 0; t < rhs.nodes().size(); ++t) {
    std::map<std::string, ExprId> bound;
    if (!match(lhs, lhs.root(), rhs, ExprId(static_cast<uint32_t>(t)), bound)) continue;
    std::vector<GrowingVar> grows;
    for (const auto& [var, term] : bound)
      if (rhs[term].op != OpKind::Var) grows.push_back({var, rhs[term].op});
    if (!grows.empty()) return grows;
  }
  return {};
}

}  // namespace teq
