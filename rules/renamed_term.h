// print_renamed_term: the one printer of terms whose variables are written renamed (a pattern's canonical
// key, rulegen's candidate keys), over any node store: so two stores that hold the same term print alike.
// Usage:
//   std::string out;
//   print_renamed_term(e.root(), [&](ExprId i) -> const ExprNode& { return e[i]; },
//                      [&](const ExprNode& var) { return rename(var.name); }, out);
#pragma once

#include <cstdint>
#include <string>

#include "rules/op.h"

namespace teq {

/// Appends the term at `id` to `out` as "(op a0 a1 ... child ...)", a variable as "?" + var_name(node).
/// node_at(id) returns a node with `op`, `attrs` and `children` (ids of the same store); var_name is
/// called once per variable occurrence, in print order.
template <class Id, class NodeAt, class VarName>
void print_renamed_term(Id id, const NodeAt& node_at, const VarName& var_name, std::string& out) {
  const auto& n = node_at(id);
  if (n.op == OpKind::Var) {
    out += "?";
    out += var_name(n);
    return;
  }
  out += "(";
  out += op_name(n.op);
  for (int64_t a : n.attrs) out += " " + std::to_string(a);
  for (Id c : n.children) {
    out += " ";
    print_renamed_term(c, node_at, var_name, out);
  }
  out += ")";
}

}  // namespace teq
