// Dimension arithmetic policies, so that an operator's shape rule can be written once as a template over a
// policy P and instantiated for
//   ThrowingDims  concrete int64_t dimensions, a failed check throws ShapeError with its message (infer_shape);
//   CheckingDims  concrete int64_t dimensions, a failed check sets `failed` and builds no message.
// Where this stands (2026-12-02): every operator's shape rule is one template over P, in
// rules/ops/detail/<family>_shape.h (activation_attr, window_1d and attr_shape, shared, in common_shape.h),
// and rules/shape_rules.h's infer_shape_with is the one dispatch from an OpKind to its rule, arity included.
// infer_shape runs it with ThrowingDims, try_infer_shape (rules/semantics.h: no message, no exception, for
// the rewrite engines' "does it fit?") with CheckingDims; tests/rules/shape_policy_test.cpp compares the two
// on every operator. The concrete window_1d, split_range, dilated_extent and normalize_axis that the
// evaluators call wrap the templates. A third policy, SymbolicDims (rules/symbolic_dims.h), runs the same
// rules over dimension terms: the verifier's shape facts and the shape searches translate its terms.
// A policy provides:
//   Dim, Cond, Shape (std::vector<Dim>), Shapes (std::span<const Shape>);
//   k(int64_t)          a constant dimension (attributes mixed with dimensions go through it);
//   + - * / % and comparisons on Dim (operators; / and % on the non-negative values shape rules meet);
//   select(c, a, b)     a if c else b, where a result depends on a comparison of dimensions;
//   product(shape)      the element count (concretely saturating at INT64_MAX, as num_elements);
//   text(d)             a dimension in a message;
//   require(c, op, f)   the check c (a Cond, or a bool about ranks and attributes); f() builds the message,
//                       called only when c fails and the policy reports messages. Returns false when the
//                       rule must stop (TEQ_REQUIRE then returns {}); `failed` says a check failed.
// Rules branch on attributes and ranks (concrete in every policy), never on dimensions except via the policy.
// A check on ranks or attributes is a requirement of its own, before any indexing it guards (a symbolic
// policy's && does not short-circuit); where one message covers both, it is two requirements with that
// message. A helper that returns dimensions returns std::optional (a z3::expr has no empty value) and its
// caller stops with TEQ_PROPAGATE.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "rules/shape.h"

namespace teq {

/// Checks `cond` through policy `p`; returns {} from the enclosing rule when the rule must stop. The
/// message (the arguments after `op`, any expression convertible to std::string) is built only on failure.
#define TEQ_REQUIRE(p, cond, op, ...)                                                 \
  do {                                                                                \
    if (!(p).require((cond), (op), [&]() -> std::string { return __VA_ARGS__; })) return {}; \
  } while (0)
/// Returns {} from the enclosing rule when a helper rule it called failed.
#define TEQ_PROPAGATE(p) \
  do {                   \
    if ((p).failed) return {}; \
  } while (0)

/// What a rule template asks of its policy parameter (the list above; `failed` may be a constant).
template <class P>
concept DimPolicy = requires(P& p, const typename P::Dim& d) {
  typename P::Cond;
  typename P::Shape;
  typename P::Shapes;
  { p.k(int64_t{0}) } -> std::convertible_to<typename P::Dim>;
  { p.text(d) } -> std::convertible_to<std::string>;
  { p.failed } -> std::convertible_to<bool>;
};
template <class P>
using DimOf = typename P::Dim;
template <class P>
using ShapeOf = typename P::Shape;
template <class P>
using ShapesOf = typename P::Shapes;

/// int64_t dimensions, shared by the throwing and the checking policy.
struct ConcreteDims {
  using Dim = int64_t;
  using Cond = bool;
  using Shape = teq::Shape;
  using Shapes = std::span<const Shape>;
  static Dim k(int64_t v) { return v; }
  static Dim select(bool c, Dim a, Dim b) { return c ? a : b; }
  static Dim product(std::span<const Dim> s) { return num_elements(s); }
  static std::string text(Dim d) { return std::to_string(d); }
};

/// infer_shape's policy: a failed check throws ShapeError("<op>: <what> (input shapes ..)").
struct ThrowingDims : ConcreteDims {
  static constexpr bool failed = false;
  std::span<const Shape> inputs;  // named in the messages
  explicit ThrowingDims(std::span<const Shape> in = {}) : inputs(in) {}

  template <class F>
  bool require(bool ok, std::string_view op, F&& what) const {
    if (!ok) [[unlikely]]
      shape_check(false, op, what(), inputs);
    return true;
  }
};

/// try_infer_shape's policy: a failed check only sets `failed`; no message, no exception.
struct CheckingDims : ConcreteDims {
  bool failed = false;

  template <class F>
  bool require(bool ok, std::string_view, F&&) {
    if (!ok) [[unlikely]]
      failed = true;
    return ok;
  }
};

/// Normalizes a possibly negative axis against `rank` (ranks are concrete in every policy).
template <DimPolicy P>
int64_t normalize_axis(P& p, int64_t axis, size_t rank, std::string_view op) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t a = axis < 0 ? axis + r : axis;
  TEQ_REQUIRE(p, a >= 0 && a < r, op,
              "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return a;
}

/// Equal ranks and equal dimensions. Over conditions that are not bools (SymbolicDims, rules/symbolic_dims.h)
/// the conjunction of the dimensions' equalities, false outright when the ranks differ.
template <DimPolicy P>
typename P::Cond same_shape(const P& p, const ShapeOf<P>& a, const ShapeOf<P>& b) {
  if constexpr (std::is_same_v<typename P::Cond, bool>) {
    return a == b;
  } else {
    if (a.size() != b.size()) return p.k(0) == p.k(1);
    typename P::Cond all = p.k(0) == p.k(0);
    for (size_t d = 0; d < a.size(); ++d) all = all && a[d] == b[d];
    return all;
  }
}

}  // namespace teq
