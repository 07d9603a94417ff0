// Helpers shared by the operator families: argument access, fused activations, 2-d windows.
#pragma once

#include <span>

#include "rules/arith.h"
#include "rules/op.h"
#include "rules/tensor.h"

namespace teq::ops {

template <class S>
using Args = std::span<const Tensor<S>* const>;
using Shapes = std::span<const Shape>;

/// Operator K's meaning, `template <class S> static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S>, const
/// Shape& out_shape)`, specialized in K's family header beside its definition. evaluate_op (rules/semantics.h)
/// dispatches to it from op_list.inc, so an operator on the list without one does not compile.
/// An operator whose work (op_list.inc) is Compute also says what one run computes, `static double
/// flops(AttrSpan, Shapes inputs, const Shape& out_shape)` (multiply-adds, or one operation per element);
/// the others move data or nothing and have none. op_flops (rules/work.h) checks both at compile time.
/// An operator whose run does not depend on all of its attributes and operand shapes as written also says
/// what it does depend on, `static WorkKey work_key(AttrSpan, Shapes inputs)` (work_key, rules/work.h).
template <OpKind K>
struct Semantics;

/// `attrs` with the attribute that names an operand axis (concat's, slice's and softmax's first) made
/// non-negative against `rank`, so that -1 and rank-1 read the same; other operators' attributes unchanged.
std::vector<int64_t> with_normalized_axis(OpKind op, std::vector<int64_t> attrs, size_t rank);

/// What one run of an operator depends on: its operator, attributes and operand shapes, with what does not
/// change the work normalized or dropped (work_key, rules/work.h).
struct WorkKey {
  OpKind op;
  std::vector<int64_t> attrs;
  std::vector<Shape> inputs;
};
/// The work key of an operator whose first attribute is an operand axis (concat, slice, softmax): the axis
/// made non-negative against the first operand's rank.
template <OpKind K>
struct AxisWorkKey {
  static WorkKey work_key(AttrSpan attrs, Shapes in) {
    WorkKey k{K, {attrs.begin(), attrs.end()}, {in.begin(), in.end()}};
    if (!k.inputs.empty()) k.attrs = with_normalized_axis(K, std::move(k.attrs), k.inputs[0].size());
    return k;
  }
};

/// The work of an operator that computes one value per output element from as many operand elements.
struct OnePerElement {
  static double flops(AttrSpan, Shapes, const Shape& out_shape) { return static_cast<double>(num_elements(out_shape)); }
};
/// The work of a reduction: one add per element of its operand (global_avgpool, reduce_mean).
struct OnePerOperandElement {
  static double flops(AttrSpan, Shapes in, const Shape&) { return static_cast<double>(num_elements(in[0])); }
};

/// Applies a fused activation (TASO/Tensat numbering) to one scalar.
template <class S>
S activate(const Arith<S>& ar, Activation act, const S& x) {
  switch (act) {
    case Activation::None: return x;
    case Activation::Relu: return relu(ar, x);
    case Activation::Sigmoid: return ar.unary(UnaryFn::Sigmoid, x);
    case Activation::Tanh: return ar.unary(UnaryFn::Tanh, x);
  }
  return x;
}

/// One spatial axis of a sliding window: output extent and the padding before the first element.
/// pad == -1 means SAME (TF/TASO convention: out = ceil(in/stride), extra padding at the end).
/// Dim is a dimension policy's (rules/dims.h); the evaluators use int64_t.
template <class Dim>
struct WindowOf {
  Dim out;
  Dim pad_before;
};
using Window = WindowOf<int64_t>;
/// The window rule of rules/ops/detail/common_shape.h on concrete values; throws ShapeError naming `shapes`.
Window window_1d(int64_t in, int64_t kernel, int64_t stride, int64_t pad, std::string_view op, Shapes shapes);


}  // namespace teq::ops
