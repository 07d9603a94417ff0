#include "rules/evaluator.h"

#include "rules/sexpr.h"

namespace teq {

std::vector<Shape> infer_shapes(const Expr& expr, const VarShapes& vars) {
  std::vector<Shape> shapes(expr.size());
  for (size_t i = 0; i < expr.size(); ++i) {
    const ExprNode& n = expr.nodes()[i];
    if (n.op == OpKind::Var) {
      auto it = vars.find(n.name);
      if (it == vars.end()) throw ShapeError("no shape for variable ?" + n.name);
      shapes[i] = it->second;
      for (int64_t d : shapes[i])
        if (d < 1) throw ShapeError("variable ?" + n.name + ": dimensions must be >= 1, got " + to_string(shapes[i]));
    } else if (n.op == OpKind::Input || n.op == OpKind::Weight) {
      shapes[i] = n.attrs;
      for (int64_t d : n.attrs)
        if (d < 1) throw ShapeError(std::string(op_name(n.op)) + " '" + n.name + "': dimensions must be >= 1");
    } else {
      std::vector<Shape> in;
      for (ExprId c : n.children) in.push_back(shapes[c.value]);
      try {
        shapes[i] = infer_shape(n.op, n.attrs, in);
      } catch (const ShapeError& e) {
        std::string term = to_sexpr(expr, ExprId(i));
        if (term.size() > 120) term = term.substr(0, 117) + "...";
        throw ShapeError(std::string(e.what()) + " in " + term);
      }
    }
    if (num_elements(shapes[i]) > kMaxElements)
      throw ShapeError("tensor of shape " + to_string(shapes[i]) + " exceeds the limit of 2^40 elements in " +
                       to_sexpr(expr, ExprId(i)).substr(0, 120));
  }
  return shapes;
}

std::optional<std::vector<Shape>> try_infer_shapes(const Expr& expr, const VarShapes& vars) {
  try {
    return infer_shapes(expr, vars);
  } catch (const ShapeError&) {
    return std::nullopt;
  }
}

}  // namespace teq
