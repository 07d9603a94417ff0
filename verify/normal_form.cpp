#include "verify/normal_form.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace teq {
namespace {

Z3_decl_kind kind_of(const z3::expr& e) { return e.is_app() ? e.decl().decl_kind() : Z3_OP_UNINTERPRETED; }

/// max(a, b) as Arith<z3::expr> builds it: ite(a >= b, a, b), with the very same a and b.
bool is_max(const z3::expr& e) {
  if (kind_of(e) != Z3_OP_ITE) return false;
  const z3::expr cond = e.arg(0);
  return kind_of(cond) == Z3_OP_GE && z3::eq(cond.arg(0), e.arg(1)) && z3::eq(cond.arg(1), e.arg(2));
}

bool at_least(const z3::expr& a, const z3::expr& b) { return (a >= b).simplify().is_true(); }

unsigned id_of(const z3::ast& a) { return Z3_get_ast_id(a.ctx(), a); }

/// An even integer numeral (the exponent of x^2).
bool is_even_integer(const z3::expr& n) {
  if (!n.is_numeral()) return false;
  const std::string text = Z3_get_numeral_string(n.ctx(), n);
  return text.find_first_not_of("0123456789") == std::string::npos && !text.empty() && (text.back() - '0') % 2 == 0;
}

}  // namespace

z3::params sum_of_monomials(z3::context& ctx) {
  z3::params p(ctx);
  p.set("som", true);
  p.set("som_blowup", 100000u);  // the default (10) stops expanding products of sums early
  return p;
}

NormalForm::NormalForm(z3::context& ctx) : ctx_(ctx), som_(sum_of_monomials(ctx)) {}

z3::expr NormalForm::of(const z3::expr& e) {
  if (!e.is_app() || e.num_args() == 0) return e;
  const unsigned id = id_of(e);
  if (auto it = memo_.find(id); it != memo_.end()) return it->second.second;
  z3::expr out = is_max(e) ? flatten_max(e) : rebuild(e);
  memo_.emplace(id, std::pair{e, out});
  return out;
}

z3::expr NormalForm::rebuild(const z3::expr& e) {
  z3::expr_vector args(ctx_);
  for (unsigned i = 0; i < e.num_args(); ++i) args.push_back(of(e.arg(i)));
  switch (e.decl().decl_kind()) {
    case Z3_OP_ITE: return z3::ite(args[0], args[1], args[2]);
    case Z3_OP_GE: return (args[0] - args[1]).simplify(som_) >= 0;
    case Z3_OP_LE: return (args[1] - args[0]).simplify(som_) >= 0;
    case Z3_OP_GT: return (args[0] - args[1]).simplify(som_) > 0;
    case Z3_OP_LT: return (args[1] - args[0]).simplify(som_) > 0;
    case Z3_OP_ADD:
    case Z3_OP_SUB:
    case Z3_OP_MUL:
    case Z3_OP_UMINUS:
    case Z3_OP_DIV: return e.decl()(args).simplify(som_);
    default: return e.decl()(args);
  }
}

z3::expr NormalForm::flatten_max(const z3::expr& e) {
  // The set of arguments of a tree of maxima; arguments that are themselves (normalized) maxima are spliced.
  std::vector<z3::expr> atoms;
  std::set<unsigned> seen;
  std::vector<z3::expr> todo{e};
  while (!todo.empty()) {
    z3::expr t = todo.back();
    todo.pop_back();
    if (is_max(t)) {
      todo.push_back(t.arg(2));
      todo.push_back(t.arg(1));
      continue;
    }
    z3::expr a = of(t);
    if (a.is_app() && max_decls_.contains(id_of(a.decl()))) {
      for (unsigned i = 0; i < a.num_args(); ++i)
        if (seen.insert(id_of(a.arg(i))).second) atoms.push_back(a.arg(i));
    } else if (seen.insert(id_of(a)).second) {
      atoms.push_back(a);
    }
  }
  // Constants: only the largest can matter, and not even that when it is <= 0 beside a non-negative term.
  std::optional<z3::expr> constant;
  std::vector<z3::expr> terms;
  for (const z3::expr& a : atoms) {
    if (!a.is_numeral()) terms.push_back(a);
    else if (!constant || at_least(a, *constant)) constant = a;
  }
  if (constant && !terms.empty() && at_least(ctx_.real_val(0), *constant) &&
      std::any_of(terms.begin(), terms.end(), [&](const z3::expr& t) { return nonnegative(t); }))
    constant.reset();
  if (constant) terms.push_back(*constant);
  if (terms.size() == 1) return terms[0];
  std::sort(terms.begin(), terms.end(), [](const z3::expr& a, const z3::expr& b) { return id_of(a) < id_of(b); });
  z3::expr_vector args(ctx_);
  for (const z3::expr& t : terms) args.push_back(t);
  return max_decl(static_cast<unsigned>(terms.size()))(args);
}

bool NormalForm::nonnegative(const z3::expr& e) {
  if (e.is_numeral()) return at_least(e, ctx_.real_val(0));
  if (!e.is_app()) return false;
  const unsigned id = id_of(e);
  if (auto it = nonnegative_.find(id); it != nonnegative_.end()) return it->second.second;
  bool out = false;
  if (max_decls_.contains(id_of(e.decl()))) {
    for (unsigned i = 0; i < e.num_args() && !out; ++i) out = nonnegative(e.arg(i));
  } else {
    switch (e.decl().decl_kind()) {
      case Z3_OP_ADD:
        out = true;
        for (unsigned i = 0; i < e.num_args() && out; ++i) out = nonnegative(e.arg(i));
        break;
      case Z3_OP_MUL: {
        // Every factor non-negative, or occurring an even number of times (x * x).
        std::map<unsigned, std::pair<z3::expr, int>> count;
        for (unsigned i = 0; i < e.num_args(); ++i) {
          auto [it, added] = count.emplace(id_of(e.arg(i)), std::pair{e.arg(i), 0});
          ++it->second.second;
        }
        out = true;
        for (const auto& [k, factor] : count)
          if (factor.second % 2 != 0 && !nonnegative(factor.first)) out = false;
        break;
      }
      case Z3_OP_POWER: {
        out = nonnegative(e.arg(0)) || is_even_integer(e.arg(1));
        break;
      }
      default: break;
    }
  }
  nonnegative_.emplace(id, std::pair{e, out});
  return out;
}

z3::func_decl NormalForm::max_decl(unsigned arity) {
  for (const auto& [id, d] : max_decls_)
    if (d.arity() == arity) return d;
  z3::sort_vector domain(ctx_);
  for (unsigned i = 0; i < arity; ++i) domain.push_back(ctx_.real_sort());
  z3::func_decl d = ctx_.function(("max!" + std::to_string(arity)).c_str(), domain, ctx_.real_sort());
  max_decls_.emplace(id_of(d), d);
  return d;
}

}  // namespace teq
