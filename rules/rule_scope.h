// What a verified rule covers, for the rewriters that apply it (the e-graph and the sequential search) and for
// the verifier that proves it: one definition, used by both, so that a rule is never applied where it was not
// proved.
//
// A convolution's group count comes from its operands' shapes (C / w.dim(1)), and many conv rules hold only for
// some groupings: concatenating kernels is false for grouped convolutions (TASO issue #62); batching two
// convolutions into one is right with the merged convolution grouped and the parts ungrouped or grouped alike,
// but folding a copied input, `(conv2d (concat 1 ?i ?i) (concat 0 ?a1 ?a2)) => (conv2d ?i (concat 0 ?a1 ?a2))`,
// is right only where the right side's convolution is ungrouped. So a rule's scope is a set of *groupings*: for
// each convolution on a weight of free shape (one that comes from a ?variable), on every pattern of both
// sides, whether it is ungrouped ('u') or grouped ('g'). Written "lhs|rhs", the patterns of a side separated by
// commas, each pattern's convolutions in node order: "g|uu" is a rule whose left convolution is grouped and
// whose two right ones are not. The scope is Rule::conv_groupings, the groupings the rule was verified at
// (rulegen finds them, ruleverify proves each), or the all-ungrouped grouping where it lists none. A rewriter computes the
// grouping of every match, left side from the matched shapes and right side from the instantiated ones, and
// applies the rule only where the scope admits it, in whichever direction the rule is used.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/corpus.h"
#include "rules/evaluator.h"
#include "rules/expr.h"
#include "rules/shape.h"

namespace teq {

/// Constants whose shape comes from a reference tensor but which are not free tensors themselves.
inline bool is_shape_constant(OpKind op) {
  return op == OpKind::Ones || op == OpKind::Eye || op == OpKind::IConv || op == OpKind::PoolKernel;
}

/// A conv2d with input shape x and weight shape w is ungrouped (groups = x.dim(1) / w.dim(1) = 1).
inline bool is_ungrouped_conv(const Shape& x, const Shape& w) { return x.size() == 4 && w.size() == 4 && x[1] == w[1]; }

/// Whether a pattern node has a shape that comes from a ?variable, rather than from a constant generator
/// such as (pool_kernel 3 3 ?x). `node(i)` returns the node at index i (anything with .op and .children),
/// `index(c)` turns a child reference into an index; one walk serves Expr and compiled patterns.
template <class NodeAt, class IndexOf, class Index>
bool has_free_shape(const NodeAt& node, const IndexOf& index, Index i) {
  const auto& n = node(i);
  if (n.op == OpKind::Var) return true;
  if (is_shape_constant(n.op)) return false;
  for (const auto& c : n.children)
    if (has_free_shape(node, index, index(c))) return true;
  return false;
}

inline bool has_free_shape(const Expr& pattern, ExprId id) {
  return has_free_shape([&](ExprId i) -> const ExprNode& { return pattern[i]; }, [](ExprId c) { return c; }, id);
}

/// The nodes of `pattern` whose grouping the scope constrains: the conv2d nodes on a weight of free shape, in
/// node order. Both the rewriters (over their compiled patterns, which keep the Expr's node order) and the
/// verifier index a grouping by this list.
std::vector<ExprId> scoped_convs(const Expr& pattern);

/// One pattern's grouping, 'u' or 'g' per scoped conv, from the shapes of the pattern's nodes (indexed by node).
std::string pattern_grouping(const Expr& pattern, const std::vector<Shape>& node_shapes);

/// A rule's grouping in its text form: each side's patterns' groupings joined by ',', the sides by '|'.
std::string join_grouping(const std::vector<std::string>& lhs, const std::vector<std::string>& rhs);
/// The all-ungrouped grouping of `rule` (every scoped conv 'u'): always in the scope.
std::string ungrouped_grouping(const Rule& rule);
/// A grouping's text split into each side's per-pattern groupings ("g|u,u" -> {"g"}, {"u", "u"}).
struct SidedGrouping {
  std::vector<std::string> lhs, rhs;
  bool operator==(const SidedGrouping&) const = default;
};
SidedGrouping split_grouping(std::string_view grouping);
/// The same grouping with the sides swapped: what a grouping of `rule` is for reversed_rule(rule).
std::string reversed_grouping(std::string_view grouping);

/// Checks a grouping's text against `rule`: one entry per pattern, one letter 'u'/'g' per scoped conv. Returns
/// the problem, or an empty string.
std::string grouping_problem(const Rule& rule, std::string_view grouping);

/// Whether `rule` may be applied at `grouping`: one of Rule::conv_groupings, or, where it lists none, the
/// all-ungrouped grouping.
bool scope_admits(const Rule& rule, std::string_view grouping);

/// The groupings in `rule`'s scope: Rule::conv_groupings, or {ungrouped_grouping(rule)} where it lists none.
std::vector<std::string> scope_groupings(const Rule& rule);

/// The grouping of `rule`'s instance where its variables have `shapes` (all patterns of both sides), or
/// nullopt when a pattern is ill-shaped there.
std::optional<std::string> instance_grouping(const Rule& rule, const VarShapes& shapes);

/// Every grouping of `rule`'s scoped convs, the all-ungrouped one first (2^n for n of them); empty when there
/// are more than `max_convs`.
std::vector<std::string> all_groupings(const Rule& rule, size_t max_convs = 8);

/// Whether any pattern of `rule` has a scoped conv (otherwise every match is in scope, nothing to compute).
bool has_scoped_convs(const Rule& rule);

}  // namespace teq
