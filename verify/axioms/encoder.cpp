#include "verify/axioms/encoder.h"

#include "rules/ops/layout.h"
#include "verify/axioms/shape_facts.h"

namespace teq::axioms {

z3::func_decl Encoder::op(OpKind kind, size_t attrs, size_t operands) {
  auto key = std::make_tuple(kind, attrs, operands);
  if (auto it = decls_.find(key); it != decls_.end()) return it->second;
  z3::sort_vector dom(ctx_);
  for (size_t i = 0; i < attrs; ++i) dom.push_back(ctx_.int_sort());
  for (size_t i = 0; i < operands; ++i) dom.push_back(T_);
  std::string name = std::string(op_name(kind)) + "/" + std::to_string(attrs) + "/" + std::to_string(operands);
  z3::func_decl f = ctx_.function(name.c_str(), dom, T_);
  decls_.emplace(key, f);
  return f;
}

z3::expr Encoder::term(const Expr& e, ExprId id, Scope& scope) {
  const ExprNode& n = e[id];
  if (n.op == OpKind::Var) {
    auto it = scope.vars.find(n.name);
    if (it == scope.vars.end())
      it = scope.vars.emplace(n.name, ctx_.constant((scope.prefix + n.name).c_str(), T_)).first;
    return it->second;
  }
  if (n.op == OpKind::Split) return split_term(e, n, scope);
  z3::expr_vector args(ctx_);
  for (int64_t a : n.attrs) args.push_back(ctx_.int_val(a));
  for (ExprId c : n.children) args.push_back(term(e, c, scope));
  applied_.emplace(n.op, std::vector<int64_t>(n.attrs.begin(), n.attrs.end()), n.children.size());
  return op(n.op, n.attrs.size(), n.children.size())(args);
}

/// (split axis part cut x): the reference axis gives way to the cut; the split's precondition goes to
/// `scope.well_shaped`.
z3::expr Encoder::split_term(const Expr& e, const ExprNode& n, Scope& scope) {
  const ops::SplitAttrs s = ops::split_attrs(n.attrs);
  z3::expr_vector args(ctx_);
  args.push_back(ctx_.int_val(s.axis));
  args.push_back(ctx_.int_val(s.part));
  z3::expr x = term(e, n.children[kSplitInput], scope), cut = split_cut(e, n, scope);
  args.push_back(cut);
  args.push_back(x);
  scope.well_shaped.push_back(split_well_shaped(*this, x, cut, s.axis, s.part));
  applied_.emplace(n.op, ops::split_attr_list({.axis = s.axis, .part = s.part, .ref_axis = 0}), 1);
  return op(n.op, args.size() - 1, 1)(args);
}

z3::expr Encoder::split_cut(const Expr& e, const ExprNode& n, Scope& scope) {
  const ExprNode& ref = e[n.children[kSplitReference]];
  const int64_t ref_axis = ops::split_attrs(n.attrs).ref_axis;
  if (ref.op == OpKind::Var && scope.cut_only.contains(ref.name)) {
    const std::string key = ref.name + "." + std::to_string(ref_axis);
    auto it = scope.vars.find(key);
    if (it == scope.vars.end()) it = scope.vars.emplace(key, ctx_.int_const((scope.prefix + key).c_str())).first;
    return it->second;
  }
  return dim(term(e, n.children[kSplitReference], scope), ref_axis);
}

z3::expr Encoder::unary(OpKind kind, const z3::expr& x) {
  applied_.emplace(kind, std::vector<int64_t>{}, 1);
  return op(kind, 0, 1)(x);
}

z3::expr Encoder::quantified(const std::map<std::string, z3::expr>& vars, const z3::expr& body,
                             const std::vector<z3::expr>& triggers) {
  z3::expr_vector bound(ctx_);
  for (const auto& [name, v] : vars) bound.push_back(v);
  if (bound.empty()) return body;
  // Patterns are ASTs with a reference count: hold each in an expr so Z3 does not collect it early.
  std::vector<Z3_pattern> pats;
  z3::expr_vector keep(ctx_);
  for (const z3::expr& t : triggers) {
    Z3_ast a = t;
    pats.push_back(Z3_mk_pattern(ctx_, 1, &a));
    keep.push_back(z3::expr(ctx_, Z3_pattern_to_ast(ctx_, pats.back())));
  }
  std::vector<Z3_app> apps;
  for (unsigned i = 0; i < bound.size(); ++i) apps.push_back(reinterpret_cast<Z3_app>(static_cast<Z3_ast>(bound[i])));
  Z3_ast q = Z3_mk_forall_const(ctx_, 0, apps.size(), apps.data(), pats.size(), pats.data(), body);
  return z3::expr(ctx_, q);
}

}  // namespace teq::axioms
