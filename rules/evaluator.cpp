#include "rules/evaluator.h"

#include "rules/sexpr.h"

namespace teq {

namespace {
/// infer_shapes' walk, written once. With kReport each failure throws ShapeError with its message; without,
/// the walk answers nullopt, builds no message and throws nothing (try_infer_shapes, on hot paths).
template <bool kReport>
std::optional<std::vector<Shape>> walk_shapes(const Expr& expr, const VarShapes& vars) {
  // The failure's message is built (and thrown) only when reporting.
  auto fail = []([[maybe_unused]] auto&& message) -> std::nullopt_t {
    if constexpr (kReport) throw ShapeError(message());
    return std::nullopt;
  };
  std::vector<Shape> shapes(expr.size());
  std::vector<Shape> in;
  for (size_t i = 0; i < expr.size(); ++i) {
    const ExprNode& n = expr.nodes()[i];
    if (n.op == OpKind::Var) {
      auto it = vars.find(n.name);
      if (it == vars.end()) return fail([&] { return "no shape for variable ?" + n.name; });
      shapes[i] = it->second;
      for (int64_t d : shapes[i])
        if (d < 1)
          return fail([&] { return "variable ?" + n.name + ": dimensions must be >= 1, got " + to_string(shapes[i]); });
    } else if (n.op == OpKind::Input || n.op == OpKind::Weight) {
      shapes[i] = n.attrs;
      for (int64_t d : n.attrs)
        if (d < 1)
          return fail([&] { return std::string(op_name(n.op)) + " '" + n.name + "': dimensions must be >= 1"; });
    } else {
      in.clear();
      for (ExprId c : n.children) in.push_back(shapes[c.value]);
      if constexpr (kReport) {
        try {
          shapes[i] = infer_shape(n.op, n.attrs, in);
        } catch (const ShapeError& e) {
          std::string term = to_sexpr(expr, ExprId(i));
          if (term.size() > 120) term = term.substr(0, 117) + "...";
          throw ShapeError(std::string(e.what()) + " in " + term);
        }
      } else {
        std::optional<Shape> shape = try_infer_shape(n.op, n.attrs, in);
        if (!shape) return std::nullopt;
        shapes[i] = std::move(*shape);
      }
    }
    if (num_elements(shapes[i]) > kMaxElements)
      return fail([&] {
        return "tensor of shape " + to_string(shapes[i]) + " exceeds the limit of 2^40 elements in " +
               to_sexpr(expr, ExprId(i)).substr(0, 120);
      });
  }
  return shapes;
}
}  // namespace

std::vector<Shape> infer_shapes(const Expr& expr, const VarShapes& vars) { return *walk_shapes<true>(expr, vars); }

std::optional<std::vector<Shape>> try_infer_shapes(const Expr& expr, const VarShapes& vars) {
  return walk_shapes<false>(expr, vars);
}

}  // namespace teq
