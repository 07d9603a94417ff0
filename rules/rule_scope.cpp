#include "rules/rule_scope.h"

namespace teq {

bool has_free_shape(const Expr& pattern, ExprId id) {
  const ExprNode& n = pattern[id];
  if (n.op == OpKind::Var) return true;
  if (is_shape_constant(n.op)) return false;
  for (ExprId c : n.children)
    if (has_free_shape(pattern, c)) return true;
  return false;
}

}  // namespace teq
