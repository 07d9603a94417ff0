#include "verify/axioms/shape_facts.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "rules/ops/layout.h"
#include "rules/symbolic_dims.h"
#include "verify/axioms.h"

namespace teq::axioms {
namespace {

/// An operator's shape rule at every tuple of operand ranks up to kMaxFactRank that its ranks and attributes
/// accept: the output's dimensions as terms over the operands' (rules/symbolic_dims.h), in one arena.
struct RankCases {
  SymbolicArena arena;
  std::vector<std::pair<std::vector<size_t>, std::vector<SymDim>>> cases;  // operand ranks, output dims
  std::vector<std::vector<SymCond>> conditions;                             // per case: what it requires
};

/// RankCases of (operator, attributes, operand count), computed once per process. A split's operands are its
/// input and its cut, as Encoder::term encodes it: the reference is a rank-1 tensor whose one extent is the cut
/// (its attributes name reference axis 0, Applied).
const RankCases& rank_cases(OpKind kind, const std::vector<int64_t>& attrs, size_t operands) {
  static std::mutex mu;
  static std::map<std::tuple<OpKind, std::vector<int64_t>, size_t>, std::unique_ptr<RankCases>> cache;
  std::lock_guard lock(mu);
  std::unique_ptr<RankCases>& slot = cache[{kind, attrs, operands}];
  if (slot) return *slot;
  slot = std::make_unique<RankCases>();
  const bool split = kind == OpKind::Split;
  std::vector<size_t> ranks(operands, 0);
  while (true) {
    std::vector<size_t> rule_ranks = ranks;
    if (split) rule_ranks.push_back(1);
    if (auto shape = symbolic_shape(slot->arena, kind, attrs, rule_ranks)) {
      slot->cases.emplace_back(ranks, shape->dims);
      slot->conditions.push_back(shape->conditions);
    }
    size_t j = 0;
    while (j < operands && ++ranks[j] > kMaxFactRank) ranks[j++] = 0;
    if (j == operands) break;
  }
  return *slot;
}

/// Term `id` of `arena` as a Z3 expression, operand dimensions from `operand_dim`.
template <class OperandDim>
z3::expr to_z3(z3::context& ctx, const SymbolicArena& arena, uint32_t id, const OperandDim& operand_dim) {
  const SymNode& n = arena[id];
  auto arg = [&](uint32_t a) { return to_z3(ctx, arena, a, operand_dim); };
  switch (n.op) {
    case SymOp::Const: return ctx.int_val(n.value);
    case SymOp::Operand: return operand_dim(static_cast<size_t>(n.value), n.axis);
    case SymOp::Add: return arg(n.a) + arg(n.b);
    case SymOp::Sub: return arg(n.a) - arg(n.b);
    case SymOp::Mul: return arg(n.a) * arg(n.b);
    case SymOp::Div: return arg(n.a) / arg(n.b);
    case SymOp::Mod: return z3::mod(arg(n.a), arg(n.b));
    case SymOp::Select: return z3::ite(arg(n.a), arg(n.b), arg(n.c));
    case SymOp::Eq: return arg(n.a) == arg(n.b);
    case SymOp::Lt: return arg(n.a) < arg(n.b);
    case SymOp::Le: return arg(n.a) <= arg(n.b);
    case SymOp::And: return arg(n.a) && arg(n.b);
    case SymOp::Or: return arg(n.a) || arg(n.b);
    case SymOp::Not: return !arg(n.a);
  }
  return ctx.int_val(0);
}

/// A shape rule that is the same at every rank it accepts (an element-wise operator's, a concat's, a split's):
/// the output has operand `operand`'s rank and its dimensions, but at `axes`, where it is the same term at
/// every rank (a concat's sum along its axis). Only where the rule accepts two ranks or more.
struct RankPolymorphic {
  size_t operand = 0;
  std::map<size_t, uint32_t> axes;
};

std::optional<RankPolymorphic> rank_polymorphic(const RankCases& rc) {
  if (rc.cases.size() < 2) return std::nullopt;
  const size_t nc = rc.cases.front().first.size();
  for (size_t j = 0; j < nc; ++j) {
    auto same_rank = [&](const auto& c) { return c.second.size() == c.first[j]; };
    if (!std::ranges::all_of(rc.cases, same_rank)) continue;
    std::optional<std::map<size_t, uint32_t>> axes;
    bool uniform = true;
    for (const auto& [ranks, dims] : rc.cases) {
      std::map<size_t, uint32_t> own;
      for (size_t k = 0; k < dims.size(); ++k) {
        const SymNode& t = rc.arena[dims[k].id];
        if (t.op != SymOp::Operand || t.value != static_cast<int64_t>(j) || t.axis != k) own.emplace(k, dims[k].id);
      }
      if (axes && own != *axes) uniform = false;
      axes = std::move(own);
    }
    if (uniform) return RankPolymorphic{j, *axes};
  }
  return std::nullopt;
}

/// The axes k with x_a.k = x_b.k among the conjuncts of `id`.
void equal_axes(const SymbolicArena& arena, uint32_t id, size_t a, size_t b, std::set<int64_t>& out) {
  const SymNode& t = arena[id];
  if (t.op == SymOp::And) return equal_axes(arena, t.a, a, b, out), equal_axes(arena, t.b, a, b, out);
  if (t.op != SymOp::Eq) return;
  const SymNode &x = arena[t.a], &y = arena[t.b];
  if (x.op != SymOp::Operand || y.op != SymOp::Operand || x.axis != y.axis) return;
  const auto j = static_cast<int64_t>(a), k = static_cast<int64_t>(b);
  if ((x.value == j && y.value == k) || (x.value == k && y.value == j)) out.insert(x.axis);
}

std::vector<OperandAgreement> find_operand_agreements(OpKind kind, const std::vector<int64_t>& attrs, size_t operands) {
  if (kind == OpKind::Split) return {};  // its reference is encoded as its cut
  const RankCases& rc = rank_cases(kind, attrs, operands);
  std::vector<OperandAgreement> out;
  if (rc.cases.empty()) return out;
  for (size_t b = 1; b < operands; ++b)
    for (size_t a = 0; a < b; ++a) {
      std::optional<std::set<int64_t>> except;
      bool uniform = true, some_axis = false;
      for (size_t c = 0; c < rc.cases.size() && uniform; ++c) {
        const std::vector<size_t>& ranks = rc.cases[c].first;
        uniform = ranks[a] == ranks[b];
        std::set<int64_t> same, own;
        for (const SymCond& cond : rc.conditions[c]) equal_axes(rc.arena, cond.id, a, b, same);
        for (int64_t k = 0; k < static_cast<int64_t>(ranks[a]); ++k)
          if (!same.contains(k)) own.insert(k);
        if (except && own != *except) uniform = false;
        some_axis |= !same.empty();
        except = std::move(own);
      }
      // Operands of fixed ranks with no extent in common (a convolution's) agree in nothing worth stating.
      if (uniform && except && some_axis) out.push_back({a, b, *except});
    }
  return out;
}


/// The facts of one applied operator (shape_facts), appended to `facts`.
void add_facts(Encoder& enc, const Applied& applied, z3::expr_vector& facts) {
  z3::context& ctx = enc.context();
  // Named copies: clang before 16 cannot capture a structured binding in a lambda.
  const OpKind kind = std::get<0>(applied);
  const std::vector<int64_t>& attrs = std::get<1>(applied);
  const size_t nc = std::get<2>(applied);
  const RankCases& rc = rank_cases(kind, attrs, nc);
  if (rc.cases.empty()) return;
  const bool split = kind == OpKind::Split;
  z3::expr_vector args(ctx);
  std::map<std::string, z3::expr> vars;
  std::vector<z3::expr> opnd;
  if (split) {  // (split axis part cut x), as Encoder::term encodes it
    const ops::SplitAttrs s = ops::split_attrs(attrs);
    args.push_back(ctx.int_val(s.axis));
    args.push_back(ctx.int_val(s.part));
    z3::expr cut = ctx.int_const("c!");
    args.push_back(cut);
    vars.emplace("c", cut);
  } else {
    for (int64_t a : attrs) args.push_back(ctx.int_val(a));
  }
  for (size_t i = 0; i < nc; ++i) {
    opnd.push_back(ctx.constant(("t!" + std::to_string(i)).c_str(), enc.tensor_sort()));
    args.push_back(opnd.back());
    vars.emplace("t" + std::to_string(i), opnd.back());
  }
  const z3::expr app = enc.op(kind, args.size() - nc, nc)(args);
  auto operand_dim = [&](size_t j, size_t k) { return j < nc ? enc.dim(opnd[j], static_cast<int64_t>(k)) : vars.at("c"); };
  auto ranks_are = [&](const std::vector<size_t>& ranks) {
    z3::expr_vector when(ctx);
    for (size_t j = 0; j < nc; ++j) when.push_back(enc.rank(opnd[j]) == ctx.int_val(static_cast<int>(ranks[j])));
    return z3::mk_and(when);
  };
  if (const std::optional<RankPolymorphic> poly = rank_polymorphic(rc)) {
    // The same at every rank: stated for every rank, an index I for the axis (no case split on ranks).
    z3::expr I = ctx.int_const("i!");
    z3::expr value = enc.dim(opnd[poly->operand], I);
    for (const auto& [axis, term] : poly->axes)
      value = z3::ite(I == ctx.int_val(static_cast<int64_t>(axis)), to_z3(ctx, rc.arena, term, operand_dim), value);
    auto with_i = vars;
    with_i.emplace("i", I);
    facts.push_back(enc.quantified(with_i, enc.dim(app, I) == value, {enc.dim(app, I)}));
    facts.push_back(enc.quantified(vars, enc.rank(app) == enc.rank(opnd[poly->operand]), {enc.rank(app)}));
    return;
  }
  // One formula for the rank and one per output axis, the dimensions' each triggered by its own term
  // (dim(app, k)): Z3 instantiates a dimension's cases only where a proof mentions that dimension.
  z3::expr_vector rank_facts(ctx);
  size_t max_rank = 0;
  for (const auto& [ranks, dims] : rc.cases) {
    rank_facts.push_back(z3::implies(ranks_are(ranks), enc.rank(app) == ctx.int_val(static_cast<int>(dims.size()))));
    max_rank = std::max(max_rank, dims.size());
  }
  facts.push_back(enc.quantified(vars, z3::mk_and(rank_facts), {app}));
  for (size_t k = 0; k < max_rank; ++k) {
    const z3::expr d = enc.dim(app, static_cast<int64_t>(k));
    z3::expr_vector dim_cases(ctx);
    for (const auto& [ranks, dims] : rc.cases)
      if (k < dims.size()) dim_cases.push_back(z3::implies(ranks_are(ranks), d == to_z3(ctx, rc.arena, dims[k].id, operand_dim)));
    facts.push_back(enc.quantified(vars, z3::mk_and(dim_cases), {d}));
  }
}

}  // namespace

z3::expr split_well_shaped(Encoder& enc, const z3::expr& x, const z3::expr& cut, int64_t axis, int64_t part) {
  const RankCases& rc = rank_cases(OpKind::Split, ops::split_attr_list({.axis = axis, .part = part, .ref_axis = 0}), 1);
  if (rc.cases.empty()) return enc.context().bool_val(false);
  const size_t lowest = rc.cases.front().first[0];  // the cases run from the lowest rank up
  auto operand_dim = [&](size_t j, size_t k) { return j == 0 ? enc.dim(x, static_cast<int64_t>(k)) : cut; };
  z3::expr well = cut >= 1 && enc.rank(x) >= enc.context().int_val(static_cast<int>(lowest));
  for (const SymCond& c : rc.conditions.front()) well = well && to_z3(enc.context(), rc.arena, c.id, operand_dim);
  return well;
}

const std::vector<OperandAgreement>& operand_agreements(OpKind kind, AttrSpan attrs, size_t operands) {
  static std::mutex mu;
  static std::map<std::tuple<OpKind, std::vector<int64_t>, size_t>, std::vector<OperandAgreement>> cache;
  std::vector<int64_t> key_attrs(attrs.begin(), attrs.end());
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find({kind, key_attrs, operands}); it != cache.end()) return it->second;
  }
  std::vector<OperandAgreement> found = find_operand_agreements(kind, key_attrs, operands);
  std::lock_guard lock(mu);
  return cache.try_emplace({kind, std::move(key_attrs), operands}, std::move(found)).first->second;
}

z3::expr_vector shape_facts(Encoder& enc) {
  z3::expr_vector facts(enc.context());
  for (const Applied& applied : enc.applied()) add_facts(enc, applied, facts);
  return facts;
}

}  // namespace teq::axioms

namespace teq {

std::string shape_facts_contradiction(const Expr& term, std::span<const Shape> shapes, unsigned rlimit) {
  z3::context ctx;
  axioms::Encoder enc(ctx);
  z3::solver solver(ctx);
  z3::params p(ctx);
  p.set("rlimit", rlimit);
  p.set("mbqi", false);  // as the proofs run: E-matching instantiates the facts on the asserted dims
  solver.set(p);
  axioms::Scope scope{.prefix = "v!"};
  for (size_t i = 0; i < term.size(); ++i) {
    z3::expr t = enc.term(term, ExprId(static_cast<uint32_t>(i)), scope);
    const Shape& s = shapes[i];
    solver.add(enc.rank(t) == ctx.int_val(static_cast<int>(s.size())));
    for (size_t k = 0; k < s.size(); ++k) solver.add(enc.dim(t, static_cast<int64_t>(k)) == ctx.int_val(s[k]));
  }
  for (const z3::expr& f : axioms::shape_facts(enc)) solver.add(f);
  if (solver.check() != z3::unsat) return "";
  std::string text = "the shape facts contradict the shapes of";
  for (size_t i = 0; i < term.size(); ++i)
    if (!is_leaf(term.nodes()[i].op)) text += " " + std::string(op_name(term.nodes()[i].op)) + to_string(shapes[i]);
  return text;
}

}  // namespace teq
