// What a verified rule covers, for the rewriters that apply it (the e-graph and the sequential search).
// The verifier (verify/shape_assign.h) keeps every convolution whose weight shape comes from a rule
// variable ungrouped: rules that concatenate convolution weights are false for grouped convolutions
// (TASO issue #62; docs/anchor-rules.md has a counterexample). So a rewriter instantiates a rule only
// where each such convolution of the right side is ungrouped. A rule with shape conditions (Rule::same_shape,
// the grouped merges) is verified on grouped convolutions as well, and applied only where its conditions hold.
#pragma once

#include "rules/corpus.h"
#include "rules/expr.h"
#include "rules/shape.h"

namespace teq {

/// Constants whose shape comes from a reference tensor but which are not free tensors themselves.
inline bool is_shape_constant(OpKind op) {
  return op == OpKind::Ones || op == OpKind::Eye || op == OpKind::IConv || op == OpKind::PoolKernel;
}

/// Whether rewriters keep `rule`'s convolutions on weights of free shape ungrouped: every rule but one with
/// shape conditions, which the verifier checks on grouped convolutions too (verify/elementwise.cpp).
inline bool keeps_convs_ungrouped(const Rule& rule) { return rule.same_shape.empty(); }

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

}  // namespace teq
