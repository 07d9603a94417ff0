// The one place that maps an OpKind to its shape rule and its meaning, generated from op_list.inc: each
// operator's meaning is its family's ops::Semantics specialization (rules/ops/<family>.h). Fingerprints
// (ModInt), the reference evaluator (float/double) and the verifier (z3::expr) all call evaluate_op; no other
// code switches on OpKind to compute values.
#pragma once

#include <optional>
#include <span>
#include <type_traits>

#include "rules/ops/constants.h"
#include "rules/ops/conv.h"
#include "rules/ops/elementwise.h"
#include "rules/ops/layout.h"
#include "rules/ops/leaves.h"
#include "rules/ops/matmul.h"
#include "rules/ops/norm.h"
#include "rules/ops/opaque.h"
#include "rules/ops/pool.h"
#include "rules/ops/reduce.h"

namespace teq {

/// Output shape of `op` on inputs of these shapes; throws ShapeError naming the operator and the shapes
/// when the arity, the attributes or the shapes do not fit. Leaves (var, input, weight) are not handled
/// here: their shapes come from bindings or their own attributes.
Shape infer_shape(OpKind op, AttrSpan attrs, std::span<const Shape> inputs);
/// As infer_shape, but nullopt where infer_shape throws ShapeError; builds no message and throws nothing
/// (for "does this fit?" on the rewrite engines' hot paths). A leaf still throws std::logic_error. Both
/// run the same rules (rules/shape_rules.h).
std::optional<Shape> try_infer_shape(OpKind op, AttrSpan attrs, std::span<const Shape> inputs);

/// Element-wise operators: each output element is a function of the elements at its index in the operands,
/// which all have the output's shape, except smul's 0-d scalar: those whose meaning is an ops::ElementWise
/// (rules/ops/elementwise.h).
constexpr bool is_elementwise(OpKind op) {
  constexpr bool kElementwise[] = {
#define TEQ_OP(kind, ...) std::is_base_of_v<ops::ElementWise, ops::Semantics<OpKind::kind>>,
#include "rules/op_list.inc"
#undef TEQ_OP
  };
  return kElementwise[static_cast<size_t>(op)];
}

/// Value of `op` on `args`. Preconditions: infer_shape accepted the same op, attrs and argument shapes,
/// and `out_shape` is its result.
template <class S>
Tensor<S> evaluate_op(const Arith<S>& ar, OpKind op, AttrSpan attrs, ops::Args<S> args, const Shape& out_shape) {
  // One case per line of op_list.inc, each the operator's own definition (ops::Semantics in its family header).
  switch (op) {
#define TEQ_OP(kind, ...) \
  case OpKind::kind: return ops::Semantics<OpKind::kind>::eval(ar, attrs, args, out_shape);
#include "rules/op_list.inc"
#undef TEQ_OP
  }
  throw std::logic_error("evaluate_op: no operator " + std::to_string(static_cast<int>(op)));
}

}  // namespace teq
