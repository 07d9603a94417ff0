// A normal form of element terms in which equal elements usually become the same Z3 term, so that most
// element pairs of a true rule are closed without a solver query (verify/elementwise.h):
//   - arithmetic in sum-of-monomials form, comparisons as (a - b) OP 0 with a normalized difference;
//   - max (built as ite(a >= b, a, b), verify/z3_arith.h; relu is max(x, 0)) flattened into one n-ary
//     application over the set of its arguments: max is associative, commutative and idempotent, so
//     nested pooling windows, relus of maxima and maxima of relus compare as sets; a constant argument is
//     dropped where another argument is provably at least as large (a 0 beside a sum of products of relus).
// Only equality of normal forms is used, as a proof that two terms are equal; different normal forms prove
// nothing (the pair then goes to Z3).
#pragma once

#include <map>
#include <utility>

#include <z3++.h>

namespace teq {

class NormalForm {
 public:
  explicit NormalForm(z3::context& ctx);

  /// The normal form of `e`. Example: of(max(max(a, b), a)) and of(max(b, a)) are the same term.
  z3::expr of(const z3::expr& e);

 private:
  z3::expr rebuild(const z3::expr& e);
  z3::expr flatten_max(const z3::expr& e);
  bool nonnegative(const z3::expr& e);
  z3::func_decl max_decl(unsigned arity);

  z3::context& ctx_;
  z3::params som_;
  // Keyed by AST id; each entry holds its input too, because Z3 reuses the id of a freed term.
  std::map<unsigned, std::pair<z3::expr, z3::expr>> memo_;
  std::map<unsigned, std::pair<z3::expr, bool>> nonnegative_;
  std::map<unsigned, z3::func_decl> max_decls_;
};

/// The simplifier settings of the sum-of-monomials form, shared by the element-wise prover.
z3::params sum_of_monomials(z3::context& ctx);

}  // namespace teq
