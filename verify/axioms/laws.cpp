#include "verify/axioms/laws.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "verify/axioms/ranks.h"
#include "verify/axioms/shape_facts.h"

namespace teq::axioms {
namespace {

void collect_ids(const z3::expr& e, std::set<unsigned>& ids) {
  if (!ids.insert(Z3_get_ast_id(e.ctx(), e)).second || !e.is_app()) return;
  for (unsigned i = 0; i < e.num_args(); ++i) collect_ids(e.arg(i), ids);
}

bool contains_all(const z3::expr& e, const std::map<std::string, z3::expr>& vars) {
  std::set<unsigned> ids;
  collect_ids(e, ids);
  for (const auto& [name, v] : vars)
    if (!ids.contains(Z3_get_ast_id(v.ctx(), v))) return false;
  return true;
}

/// Variables of a law used only as the reference of a split (their extents matter only as the cut).
std::set<std::string> cut_only_vars(const Rule& law) {
  std::set<std::string> refs, others;
  for (const auto* side : {&law.lhs, &law.rhs})
    for (const Expr& e : *side)
      for (const ExprNode& n : e.nodes())
        for (size_t k = 0; k < n.children.size(); ++k)
          if (const ExprNode& c = e[n.children[k]]; c.op == OpKind::Var)
            (n.op == OpKind::Split && k == kSplitReference ? refs : others).insert(c.name);
  // A root that is a variable is no child of anything: it is an operand, not a reference.
  for (const auto* side : {&law.lhs, &law.rhs})
    for (const Expr& e : *side)
      if (e[e.root()].op == OpKind::Var) others.insert(e[e.root()].name);
  std::set<std::string> out;
  std::ranges::set_difference(refs, others, std::inserter(out, out.end()));
  return out;
}

/// What the assignments say about the variables' ranks: exactly that rank when it never varied, from the
/// lowest one up to kMaxFactRank (the ranks the shape facts cover) otherwise, and equal ranks for variables whose ranks were equal in every assignment.
/// Without the ties, (matmul ?x (concat 1 ?y ?z)) = (concat 1 (matmul ?x ?y) (matmul ?x ?z)), checked at
/// ranks 2 and 4, would also be stated for ?x of rank 3 and ?y, ?z of rank 2, where it is false (axis 1 is
/// then the rows of the result, the columns of ?y).
std::vector<z3::expr> rank_constraints(const std::map<std::string, z3::expr>& vars, std::span<const VarShapes> shapes,
                                       Encoder& enc) {
  const std::map<std::string, std::pair<int, int>> ranges = rank_ranges(shapes);
  std::vector<z3::expr> out;
  std::vector<std::string> seen;
  for (const auto& [name, v] : vars) {
    auto it = ranges.find(name);
    if (it == ranges.end() || v.get_sort().is_int()) continue;
    const auto [lo, hi] = it->second;
    out.push_back(lo == hi ? enc.rank(v) == lo : enc.rank(v) >= lo && enc.rank(v) <= static_cast<int>(kMaxFactRank));
    if (lo == hi) continue;
    // A named copy: clang before 16 cannot capture a structured binding in a lambda.
    const std::string& var = name;
    auto tied = [&](const std::string& other) {
      return std::ranges::all_of(shapes, [&](const VarShapes& s) {
        return s.contains(var) && s.contains(other) && s.at(var).size() == s.at(other).size();
      });
    };
    if (auto w = std::ranges::find_if(seen, tied); w != seen.end()) out.push_back(enc.rank(v) == enc.rank(vars.at(*w)));
    seen.push_back(name);
  }
  return out;
}

/// For each operator node of `e` and each pair of its operands that its shape rule requires to agree
/// (operand_agreements): their equal ranks appended to `out`, then f(x, y, agreement, node of x) with both
/// encoded.
template <class F>
void for_each_agreement(const Expr& e, Encoder& enc, Scope& scope, std::vector<z3::expr>& out, F&& f) {
  for (size_t i = 0; i < e.size(); ++i) {
    const ExprNode& n = e.nodes()[i];
    if (is_leaf(n.op)) continue;
    for (const OperandAgreement& ag : operand_agreements(n.op, n.attrs, n.children.size())) {
      z3::expr x = enc.term(e, n.children[ag.a], scope), y = enc.term(e, n.children[ag.b], scope);
      out.push_back(enc.rank(x) == enc.rank(y));
      f(x, y, ag, n.children[ag.a].value);
    }
  }
}

/// The operands of each node of `sides` that its shape rule requires to agree (operand_agreements: a binary
/// element-wise operator's, equal ranks and extents; a concat's, equal ranks and extents off its axis), which
/// the shape facts do not state (they hold for ill-shaped applications too). A law's guard on its trigger
/// side, an assumption of the agreement check and of the rule's goal. `shapes`: the checked assignments,
/// which fix the ranks of most nodes.
std::vector<z3::expr> equal_operand_shapes(std::initializer_list<const std::vector<Expr>*> sides, Encoder& enc,
                                           Scope& scope, std::span<const VarShapes> shapes = {}) {
  std::vector<z3::expr> out;
  for (const auto* side : sides)
    for (const Expr& e : *side)
      for_each_agreement(e, enc, scope, out, [&](const z3::expr& x, const z3::expr& y, const OperandAgreement& ag,
                                                 size_t a) {
        // At a rank the checked shapes fix, the extents one by one: ground equalities, much cheaper for Z3
        // than a quantifier over the axis (and the same statement, since the rank facts fix that rank).
        if (auto ranks = node_ranks(e, a, shapes); ranks && ranks->first == ranks->second) {
          for (int k = 0; k < ranks->first; ++k)
            if (!ag.except.contains(k)) out.push_back(enc.dim(x, k) == enc.dim(y, k));
          return;
        }
        z3::expr idx = enc.context().int_const("i!");
        z3::expr off_axis = enc.context().bool_val(true);
        for (int64_t k : ag.except) off_axis = off_axis && idx != enc.context().int_val(k);
        out.push_back(enc.quantified({{"i", idx}}, z3::implies(off_axis, enc.dim(x, idx) == enc.dim(y, idx)),
                                     {enc.dim(x, idx), enc.dim(y, idx)}));
      });
  return out;
}

/// `a` and `b` have the same extents below `lo` (the lowest rank they have in the checked shapes): every
/// one at a fixed rank (lo == hi); where the rank is free, the trailing ones (a matmul's batch extents are
/// unknown, they may broadcast; its matrix extents are the last two). `skip`: axes that may differ.
std::vector<z3::expr> same_extents(const z3::expr& a, const z3::expr& b, std::pair<int, int> ranks, Encoder& enc,
                                   const std::set<int64_t>& skip = {}) {
  const auto [lo, hi] = ranks;
  std::vector<z3::expr> out;
  for (int k = 0; k < lo; ++k) {
    if (lo == hi && skip.contains(k)) continue;
    z3::expr ia = lo == hi ? enc.context().int_val(k) : enc.rank(a) - (k + 1);
    z3::expr ib = lo == hi ? enc.context().int_val(k) : enc.rank(b) - (k + 1);
    z3::expr eq = enc.dim(a, ia) == enc.dim(b, ib);
    if (lo != hi)
      for (int64_t axis : skip) eq = z3::implies(ia != enc.context().int_val(axis), eq);
    out.push_back(eq);
  }
  return out;
}

/// What the other side needs of its nodes' agreeing operands (as equal_operand_shapes assumes), to be shown
/// from the triggering side's.
std::vector<z3::expr> operand_shape_goals(const Expr& e, std::span<const VarShapes> shapes, Encoder& enc,
                                          Scope& scope) {
  std::vector<z3::expr> out;
  for_each_agreement(e, enc, scope, out, [&](const z3::expr& x, const z3::expr& y, const OperandAgreement& ag,
                                             size_t a) {
    for (const z3::expr& eq : same_extents(x, y, node_ranks(e, a, shapes).value_or(std::pair{0, 0}), enc, ag.except))
      out.push_back(eq);
  });
  return out;
}

}  // namespace

/// The law as quantified formulas, one per side that may trigger it: forall vars: rank guards && guard &&
/// splits well-shaped && the trigger side's element-wise operators and concats well-shaped => lhs == rhs.
/// The last guard is what keeps the laws consistent with the shape facts: those are stated for every
/// application, ill-shaped ones included (an element-wise operator's shape is its first operand's), so an
/// unguarded ewadd-comm, applied to ewadd(x, y) of any x and y of equal rank, would give every two tensors
/// of a rank the same extents, and with the split facts' tensors of every extent, false
/// (rg-0495-split-var's consistency check). Empty when no side can be a trigger.
std::vector<z3::expr> encode_law(const Instance& inst, const InstanceVerdict& verdict, Encoder& enc, z3::context& ctx) {
  Scope scope{.prefix = "v!", .cut_only = cut_only_vars(inst.rule)};
  const Expr &l = inst.rule.lhs[0], &r = inst.rule.rhs[0];
  z3::expr lt = enc.term(l, l.root(), scope), rt = enc.term(r, r.root(), scope);
  // Untyped equations would be unsound: (transpose 1 0 (transpose 1 0 ?x)) = ?x for every tensor makes
  // every tensor a transpose, hence of rank 2. So each axiom is guarded by the ranks its variables had
  // where it was checked (rank_constraints).
  z3::expr guard = encode_guard(inst.guard, enc, scope);
  for (const z3::expr& c : rank_constraints(scope.vars, verdict.shapes, enc)) guard = guard && c;
  for (const z3::expr& w : scope.well_shaped) guard = guard && w;
  for (const std::string& v : inst.nonneg) guard = guard && enc.unary(OpKind::Relu, scope.vars.at(v)) == scope.vars.at(v);
  std::vector<z3::expr> laws;
  for (int side : {0, 1}) {
    const z3::expr& t = side == 0 ? lt : rt;
    if (!verdict.from[side] || t.num_args() == 0 || !contains_all(t, scope.vars)) continue;
    // A law assuming non-negative operands fires from its lhs only: from the rhs (conv2d with no activation,
    // a product) it would add relu terms to every such term of every rule, and their laws, for nothing.
    if (side == 1 && !inst.nonneg.empty()) continue;
    z3::expr side_guard = guard;
    for (const z3::expr& w : equal_operand_shapes({side == 0 ? &inst.rule.lhs : &inst.rule.rhs}, enc, scope, verdict.shapes))
      side_guard = side_guard && w;
    laws.push_back(enc.quantified(scope.vars, z3::implies(side_guard, lt == rt), {t}));
  }
  return laws;
}

std::string law_shape_disagreement(const Rule& law, const Guard& guard, std::span<const VarShapes> shapes,
                                   z3::context& ctx, int from) {
  Encoder enc(ctx);
  Scope scope{.prefix = "g!", .cut_only = cut_only_vars(law)};
  const Expr &l = law.lhs[0], &r = law.rhs[0];
  z3::expr lt = enc.term(l, l.root(), scope), rt = enc.term(r, r.root(), scope);
  z3::solver solver(ctx);
  z3::params p(ctx);
  p.set("rlimit", 200'000u);
  p.set("mbqi", false);
  solver.set(p);
  solver.add(encode_guard(guard, enc, scope));
  for (const z3::expr& w : scope.well_shaped) solver.add(w);
  for (const z3::expr& w : equal_operand_shapes({from == 0 ? &law.lhs : &law.rhs}, enc, scope)) solver.add(w);
  for (const z3::expr& c : rank_constraints(scope.vars, shapes, enc)) solver.add(c);
  z3::expr_vector same(ctx);
  same.push_back(enc.rank(lt) == enc.rank(rt));
  for (const z3::expr& eq : same_extents(lt, rt, root_ranks(l, shapes), enc)) same.push_back(eq);
  for (const z3::expr& eq : operand_shape_goals(from == 0 ? r : l, shapes, enc, scope)) same.push_back(eq);
  solver.add(!z3::mk_and(same));
  for (const z3::expr& f : shape_facts(enc)) solver.add(f);
  const z3::check_result res = solver.check();
  if (res == z3::unsat) return "";
  return res == z3::sat ? "the guard does not make both sides' shapes agree"
                        : "shape agreement not shown (" + solver.reason_unknown() + ")";
}

Goal encode_goal(const Rule& rule, std::span<const VarShapes> shapes, Encoder& enc) {
  Scope scope;
  std::vector<z3::expr> equal;
  std::vector<z3::expr> facts;
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    z3::expr l = enc.term(rule.lhs[i], rule.lhs[i].root(), scope), r = enc.term(rule.rhs[i], rule.rhs[i].root(), scope);
    equal.push_back(l == r);
    facts.push_back(enc.rank(l) == enc.rank(r));
    for (int k = 0; k < root_ranks(rule.lhs[i], shapes).first; ++k) facts.push_back(enc.dim(l, k) == enc.dim(r, k));
  }
  for (const z3::expr& c : rank_constraints(scope.vars, shapes, enc)) facts.push_back(c);
  facts.insert(facts.end(), scope.well_shaped.begin(), scope.well_shaped.end());
  // And the operands of its element-wise operators and concats agree in shape (off the concat axis).
  for (const z3::expr& w : equal_operand_shapes({&rule.lhs, &rule.rhs}, enc, scope)) facts.push_back(w);
  z3::expr lhs0 = enc.term(rule.lhs[0], rule.lhs[0].root(), scope);
  return {std::move(equal), lhs0, std::move(facts)};
}

}  // namespace teq::axioms
