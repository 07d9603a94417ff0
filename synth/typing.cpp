#include "synth/typing.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "rules/semantics.h"

namespace teq::synth {

namespace {

const Shape& shape_for(const LeafType& t, ShapeChoice c) {
  switch (c.kind) {
    case ShapeChoice::SetA: return t.shape_a;
    case ShapeChoice::SetB: return t.shape_b;
    case ShapeChoice::SetC: return t.shape_c ? *t.shape_c : t.shape_a;  // callers check shape_c first
  }
  return t.shape_a;
}

/// Type named by a variable such as "x2" (prefix + digits), or -1.
int named_type(const std::string& name, const std::vector<LeafType>& types) {
  for (size_t t = 0; t < types.size(); ++t) {
    const std::string& p = types[t].prefix;
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0 &&
        std::all_of(name.begin() + p.size(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return static_cast<int>(t);
  }
  return -1;
}

/// False when some node whose variables are all typed is ill-shaped.
bool partial_ok(const Expr& p, const std::map<std::string, int>& typing, const std::vector<LeafType>& types,
                ShapeChoice choice) {
  std::vector<std::optional<Shape>> shapes(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const ExprNode& n = p.nodes()[i];
    if (n.op == OpKind::Var) {
      if (auto it = typing.find(n.name); it != typing.end()) shapes[i] = shape_for(types[it->second], choice);
      continue;
    }
    if (is_leaf(n.op)) continue;
    std::vector<Shape> in;
    bool known = true;
    for (ExprId c : n.children) {
      if (!shapes[c.value]) { known = false; break; }
      in.push_back(*shapes[c.value]);
    }
    if (!known) continue;
    shapes[i] = try_infer_shape(n.op, n.attrs, in);
    if (!shapes[i]) return false;
  }
  return true;
}

}  // namespace

VarShapes shapes_of(const std::map<std::string, int>& typing, const std::vector<LeafType>& types, ShapeChoice choice) {
  VarShapes out;
  for (const auto& [name, t] : typing) out.emplace(name, shape_for(types[t], choice));
  return out;
}

std::optional<std::map<std::string, int>> assign_types(const Rule& rule, const std::vector<LeafType>& types,
                                                       const std::vector<ShapeChoice>& choices) {
  std::vector<std::string> vars = rule.variables();
  for (const Expr& p : rule.rhs)
    for (const std::string& v : p.variables())
      if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  std::vector<const Expr*> patterns;
  for (const Expr& p : rule.lhs) patterns.push_back(&p);
  for (const Expr& p : rule.rhs) patterns.push_back(&p);
  std::map<std::string, int> typing;
  auto ok = [&] {
    for (const Expr* p : patterns)
      for (ShapeChoice c : choices)
        if (!partial_ok(*p, typing, types, c)) return false;
    return true;
  };
  // Depth-first over the variables, checking every fully typed subterm as soon as it is typed.
  std::function<bool(size_t)> search = [&](size_t k) {
    if (k == vars.size()) return true;
    // The type a name suggests first; other files' names may mean something else (TASO's w4 is a
    // 4x4x3x3 kernel), so the other types are tried after it.
    int named = named_type(vars[k], types);
    std::vector<int> order;
    if (named >= 0) order.push_back(named);
    for (int t = 0; t < static_cast<int>(types.size()); ++t)
      if (t != named) order.push_back(t);
    for (int t : order) {
      typing[vars[k]] = t;
      if (ok() && search(k + 1)) return true;
    }
    typing.erase(vars[k]);
    return false;
  };
  if (!search(0)) return std::nullopt;
  return typing;
}

}  // namespace teq::synth
