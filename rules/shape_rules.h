// Every operator's shape rule over a dimension policy (rules/dims.h), and infer_shape_with: the one dispatch
// from an OpKind to its rule (ops::ShapeRule, generated from op_list.inc), arity included. infer_shape
// (ThrowingDims) and try_infer_shape (CheckingDims, rules/semantics.h) both call it; a policy over symbolic
// dimensions can reuse it as it stands.
#pragma once

#include <stdexcept>
#include <string>

#include "rules/ops/detail/constants_shape.h"
#include "rules/ops/detail/conv_shape.h"
#include "rules/ops/detail/elementwise_shape.h"
#include "rules/ops/detail/layout_shape.h"
#include "rules/ops/detail/matmul_shape.h"
#include "rules/ops/detail/norm_shape.h"
#include "rules/ops/detail/opaque_shape.h"
#include "rules/ops/detail/pool_shape.h"
#include "rules/ops/detail/reduce_shape.h"
#include "rules/ops/leaves.h"

namespace teq {

/// The operand and attribute counts op_list.inc allows the operator (concrete in every policy).
template <DimPolicy P>
bool arity_fits(P& p, const OpInfo& info, size_t attr_count, size_t operand_count) {
  const int n = static_cast<int>(operand_count);
  TEQ_REQUIRE(p, n >= info.min_children && (info.max_children == kVariadic || n <= info.max_children), info.name,
              "expects " + std::to_string(info.min_children) +
                  (info.max_children == kVariadic ? " or more"
                   : info.max_children == info.min_children
                       ? ""
                       : " to " + std::to_string(info.max_children)) +
                  " operands, got " + std::to_string(n));
  TEQ_REQUIRE(p, attr_count_fits(info, attr_count), info.name,
              "expects " + attr_count_text(info) + " integer attributes, got " + std::to_string(attr_count));
  return true;
}

/// The output shape of `op` on operands of these shapes, through policy `p`. Leaves (var, input, weight)
/// have no rule: their shapes come from bindings or their own attributes (std::logic_error).
template <DimPolicy P>
ShapeOf<P> infer_shape_with(P& p, OpKind op, AttrSpan attrs, ShapesOf<P> in) {
  const OpInfo& info = op_info(op);
  if (!arity_fits(p, info, attrs.size(), in.size())) return {};
  // One case per line of op_list.inc, each the operator's own rule (ops::ShapeRule in its family's
  // rules/ops/detail/<family>_shape.h).
  switch (op) {
#define TEQ_OP(kind, ...) \
  case OpKind::kind: return ops::ShapeRule<OpKind::kind>::infer(p, info, attrs, in);
#include "rules/op_list.inc"
#undef TEQ_OP
  }
  throw std::logic_error("infer_shape: no operator " + std::to_string(static_cast<int>(op)));
}

}  // namespace teq
