// Every operator's shape rule over a dimension policy (rules/dims.h), and infer_shape_with: the one dispatch
// from an OpKind to its rule, arity included. infer_shape (ThrowingDims) and try_infer_shape (CheckingDims,
// rules/semantics.h) both call it; a policy over symbolic dimensions can reuse it as it stands.
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
  using namespace ops;
  const OpInfo& info = op_info(op);
  if (!arity_fits(p, info, attrs.size(), in.size())) return {};
  if (is_elementwise(op)) return shape_elementwise(p, info, attrs, in);
  switch (op) {
    case OpKind::Noop:
    case OpKind::Ones: return in[0];
    case OpKind::Broadcast: return shape_broadcast(p, attrs, in);
    case OpKind::Matmul: return shape_matmul(p, attrs, in);
    case OpKind::Conv2d: return shape_conv2d(p, attrs, in);
    case OpKind::Enlarge: return shape_enlarge(p, attrs, in);
    case OpKind::Merge: return shape_merge(p, attrs, in);
    case OpKind::MaxPool:
    case OpKind::AvgPool: return shape_pool(p, info.name, attrs, in);
    case OpKind::GlobalAvgPool: return shape_global_avgpool(p, in);
    case OpKind::Concat: return shape_concat(p, attrs, in);
    case OpKind::Split: return shape_split(p, attrs, in);
    case OpKind::Slice: return shape_slice(p, attrs, in);
    case OpKind::Transpose: return shape_transpose(p, attrs, in);
    case OpKind::Reshape: return shape_reshape(p, attrs, in);
    case OpKind::Pad: return shape_pad(p, attrs, in);
    case OpKind::ReduceMean: return shape_reduce_mean(p, attrs, in);
    case OpKind::BatchNorm: return shape_batchnorm(p, in);
    case OpKind::Softmax: return shape_softmax(p, attrs, in);
    case OpKind::Eye: return shape_eye(p, in);
    case OpKind::IConv:
    case OpKind::PoolKernel: return shape_kernel_constant(p, info.name, attrs, in);
    case OpKind::Opaque: return shape_opaque(p, attrs, in);
    case OpKind::Var:
    case OpKind::Input:
    case OpKind::Weight: break;
    default: break;  // the element-wise operators, answered above
  }
  throw std::logic_error("infer_shape: operator " + std::string(info.name) + " has no shape rule");
}

}  // namespace teq
