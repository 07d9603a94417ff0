// The Z3 encoding of terms: an uninterpreted sort of tensors, one function per (operator, attribute count,
// operand count), dim(T, Int) and rank(T) for shapes. A split is encoded with its cut instead of its
// reference tensor. The shape facts of the operators it applies are in shape_facts.h.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <z3++.h>

#include "rules/expr.h"

namespace teq::axioms {

/// A split's operands: the tensor it cuts and the reference whose extent is the cut.
inline constexpr size_t kSplitInput = 0, kSplitReference = 1;

/// The variables of one encoded equation (a law or the rule), with what the encoding learnt about them.
struct Scope {
  std::string prefix = {};                    // of the Z3 constants' names
  std::set<std::string> cut_only = {};        // law variables used only as split references (their cut is an Int)
  std::map<std::string, z3::expr> vars = {};  // tensor variables, and "r.R" Int cuts
  std::vector<z3::expr> well_shaped = {};     // the preconditions of the splits encoded
};

/// An operator applied in an encoding: its kind, its attributes (a split's with the reference axis 0: its cut
/// is an operand of the encoded function, its reference axis none) and its operand count.
using Applied = std::tuple<OpKind, std::vector<int64_t>, size_t>;

/// Terms over an uninterpreted sort T: one function per (operator, #attributes, #operands), attributes as
/// Int arguments; dim(T, Int) and rank(T) describe shapes.
class Encoder {
 public:
  explicit Encoder(z3::context& ctx)
      : ctx_(ctx),
        T_(ctx.uninterpreted_sort("Tensor")),
        dim_(ctx.function("dim", T_, ctx.int_sort(), ctx.int_sort())),
        rank_(ctx.function("rank", T_, ctx.int_sort())) {}

  z3::sort tensor_sort() const { return T_; }
  z3::context& context() { return ctx_; }
  z3::expr dim(const z3::expr& t, const z3::expr& i) { return dim_(t, i); }
  z3::expr dim(const z3::expr& t, int64_t i) { return dim_(t, ctx_.int_val(i)); }
  z3::expr rank(const z3::expr& t) { return rank_(t); }

  /// The function of `kind` with `attrs` Int arguments and `operands` tensor arguments.
  z3::func_decl op(OpKind kind, size_t attrs, size_t operands);

  /// The term for `id` in `e`; variables come from `scope.vars` (created on first use). A split is
  /// encoded with its cut as an Int argument (split X p cut t), not with its reference tensor: sides whose
  /// references differ but have equal extents are then equal by congruence, and a law can state its
  /// condition on the cut by arithmetic.
  z3::expr term(const Expr& e, ExprId id, Scope& scope);

  /// `kind` without attributes applied to `x` (its shape facts recorded, as term's are).
  z3::expr unary(OpKind kind, const z3::expr& x);

  /// forall vars: (cond =>) lhs == rhs, triggered by whichever side contains every variable.
  z3::expr quantified(const std::map<std::string, z3::expr>& vars, const z3::expr& body,
                      const std::vector<z3::expr>& triggers);

  /// Each operator applied so far: shape_facts (shape_facts.h) states the facts of each.
  const std::set<Applied>& applied() const { return applied_; }

 private:
  z3::expr split_term(const Expr& e, const ExprNode& n, Scope& scope);
  /// A split's cut: dim(ref, R), or, for a law's variable used only as a split reference, an Int variable
  /// ("r.R"): the law then holds for every cut, not only for the extents of some tensor.
  z3::expr split_cut(const Expr& e, const ExprNode& n, Scope& scope);

  z3::context& ctx_;
  z3::sort T_;
  z3::func_decl dim_, rank_;
  std::map<std::tuple<OpKind, size_t, size_t>, z3::func_decl> decls_;
  std::set<Applied> applied_;
};

}  // namespace teq::axioms
