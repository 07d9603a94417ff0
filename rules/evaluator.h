// Shapes and values of a whole Expr (graph or instantiated pattern), on any scalar type.
// Usage:
//   Expr g = parse_expr("(relu (matmul 0 (input x 2 3) (weight w 3 4)))");
//   auto shapes = infer_shapes(g, {});                          // shapes[g.root().value] == [2,4]
//   auto out = evaluate<double>(g, Arith<double>{}, leaves);    // leaves: name -> Tensor<double>
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rules/expr.h"
#include "rules/semantics.h"

namespace teq {

using VarShapes = std::map<std::string, Shape>;

/// Shape of every node. Variables take their shape from `vars` (missing -> ShapeError); inputs and
/// weights from their attributes. A ShapeError's message is prefixed with the failing subterm.
std::vector<Shape> infer_shapes(const Expr& expr, const VarShapes& vars);
/// As infer_shapes, but returns nullopt instead of throwing (for "is this right side well-shaped?").
std::optional<std::vector<Shape>> try_infer_shapes(const Expr& expr, const VarShapes& vars);

/// Values of the roots. `leaves` maps every variable, input and weight name to its value; missing
/// leaves or shape mismatches throw ShapeError.
template <class S>
std::vector<Tensor<S>> evaluate(const Expr& expr, const Arith<S>& ar, const std::map<std::string, Tensor<S>>& leaves) {
  VarShapes var_shapes;
  for (const auto& [name, t] : leaves) var_shapes.emplace(name, t.shape);
  std::vector<Shape> shapes = infer_shapes(expr, var_shapes);
  std::vector<std::optional<Tensor<S>>> values(expr.size());
  // Only nodes the roots reach are computed.
  std::vector<bool> needed(expr.size(), false);
  for (ExprId r : expr.roots()) needed[r.value] = true;
  for (size_t i = expr.size(); i-- > 0;)
    if (needed[i])
      for (ExprId c : expr.nodes()[i].children) needed[c.value] = true;
  for (size_t i = 0; i < expr.size(); ++i) {
    if (!needed[i]) continue;
    const ExprNode& n = expr.nodes()[i];
    if (is_leaf(n.op)) {
      auto it = leaves.find(n.name);
      if (it == leaves.end()) throw ShapeError("evaluate: no value for leaf '" + n.name + "'");
      if (it->second.shape != shapes[i])
        throw ShapeError("evaluate: value for '" + n.name + "' has shape " + to_string(it->second.shape) +
                         ", expected " + to_string(shapes[i]));
      values[i] = it->second;
      continue;
    }
    std::vector<const Tensor<S>*> args;
    for (ExprId c : n.children) args.push_back(&*values[c.value]);
    values[i] = evaluate_op<S>(ar, n.op, n.attrs, args, shapes[i]);
  }
  std::vector<Tensor<S>> out;
  for (ExprId r : expr.roots()) out.push_back(*values[r.value]);
  return out;
}

}  // namespace teq
