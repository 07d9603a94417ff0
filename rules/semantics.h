// The one place that maps an OpKind to its shape rule and its meaning. Fingerprints (ModInt), the
// reference evaluator (float/double) and the verifier (z3::expr) all call evaluate_op; no other code
// switches on OpKind to compute values.
#pragma once

#include <optional>
#include <span>

#include "rules/ops/constants.h"
#include "rules/ops/conv.h"
#include "rules/ops/elementwise.h"
#include "rules/ops/layout.h"
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

/// Value of `op` on `args`. Preconditions: infer_shape accepted the same op, attrs and argument shapes,
/// and `out_shape` is its result.
template <class S>
Tensor<S> evaluate_op(const Arith<S>& ar, OpKind op, AttrSpan attrs, ops::Args<S> args, const Shape& out_shape) {
  using namespace ops;
  auto pointwise = [&](auto f) { return eval_pointwise(args, f); };
  switch (op) {
    case OpKind::EwAdd: return eval_binary(BinaryOp::Add, args);
    case OpKind::EwSub: return eval_binary(BinaryOp::Sub, args);
    case OpKind::EwMul: return eval_binary(BinaryOp::Mul, args);
    case OpKind::EwDiv: return eval_binary(BinaryOp::Div, args);
    case OpKind::Smul: return eval_smul(args);
    case OpKind::Relu: return pointwise([&](const S& x) { return relu(ar, x); });
    case OpKind::Tanh: return pointwise([&](const S& x) { return ar.unary(UnaryFn::Tanh, x); });
    case OpKind::Sigmoid: return pointwise([&](const S& x) { return ar.unary(UnaryFn::Sigmoid, x); });
    case OpKind::Gelu: return pointwise([&](const S& x) { return ar.unary(UnaryFn::Gelu, x); });
    case OpKind::Sqrt: return pointwise([&](const S& x) { return ar.unary(UnaryFn::Sqrt, x); });
    case OpKind::Erf: return pointwise([&](const S& x) { return ar.unary(UnaryFn::Erf, x); });
    case OpKind::Clip: return eval_clip(ar, attrs, args);
    case OpKind::Broadcast: return eval_broadcast(args, out_shape);
    case OpKind::Noop: return *args[0];
    case OpKind::Matmul: return eval_matmul(ar, attrs, args, out_shape);
    case OpKind::Conv2d: return eval_conv2d(ar, attrs, args, out_shape);
    case OpKind::Enlarge: return eval_enlarge(ar, attrs, args, out_shape);
    case OpKind::Merge: return eval_merge(ar, attrs, args, out_shape);
    case OpKind::MaxPool: return eval_pool(ar, /*is_max=*/true, attrs, args, out_shape);
    case OpKind::AvgPool: return eval_pool(ar, /*is_max=*/false, attrs, args, out_shape);
    case OpKind::GlobalAvgPool: return eval_global_avgpool(ar, args, out_shape);
    case OpKind::Concat: return eval_concat(attrs, args, out_shape);
    case OpKind::Split: return eval_split(attrs, args, out_shape);
    case OpKind::Slice: return eval_slice(attrs, args, out_shape);
    case OpKind::Transpose: return eval_transpose(attrs, args, out_shape);
    case OpKind::Reshape: return eval_reshape(args, out_shape);
    case OpKind::Pad: return eval_pad(ar, attrs, args, out_shape);
    case OpKind::ReduceMean: return eval_reduce_mean(ar, attrs, args, out_shape);
    case OpKind::BatchNorm: return eval_batchnorm(ar, args, out_shape);
    case OpKind::Softmax: return eval_softmax(ar, attrs, args, out_shape);
    case OpKind::Ones: return eval_ones(ar, out_shape);
    case OpKind::Eye: return eval_eye(ar, out_shape);
    case OpKind::IConv: return eval_iconv(ar, out_shape);
    case OpKind::PoolKernel: return eval_pool_kernel(ar, out_shape);
    case OpKind::Opaque: throw_opaque_not_evaluable(attrs);
    case OpKind::Var:
    case OpKind::Input:
    case OpKind::Weight: break;
  }
  throw std::logic_error("evaluate_op: leaf operator " + std::string(op_name(op)) + " has no computation");
}

}  // namespace teq
