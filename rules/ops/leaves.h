// The leaves (var, input, weight): their shapes come from bindings or their own attributes and their values
// from the caller, so they have neither a shape rule nor a meaning; the dispatch (rules/semantics.h,
// rules/shape_rules.h) reaching one is a programming error (std::logic_error).
#pragma once

#include <stdexcept>
#include <string>

#include "rules/ops/detail/common_shape.h"

namespace teq::ops {

template <OpKind K>
struct LeafRules {
  template <class S>
  [[noreturn]] static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S>, const Shape&) {
    throw std::logic_error("evaluate_op: leaf operator " + std::string(op_name(K)) + " has no computation");
  }
  template <DimPolicy P>
  [[noreturn]] static ShapeOf<P> infer(P&, const OpInfo& info, AttrSpan, ShapesOf<P>) {
    throw std::logic_error("infer_shape: operator " + std::string(info.name) + " has no shape rule");
  }
};

/// A leaf's dimensions: `(input NAME d0 d1 ...)` and `(weight NAME d0 d1 ...)` hold them as their attributes.
inline AttrSpan leaf_dims(AttrSpan attrs) { return attrs; }

template <> struct Semantics<OpKind::Var> : LeafRules<OpKind::Var> {};
template <> struct Semantics<OpKind::Input> : LeafRules<OpKind::Input> {};
template <> struct Semantics<OpKind::Weight> : LeafRules<OpKind::Weight> {};
template <> struct ShapeRule<OpKind::Var> : LeafRules<OpKind::Var> {};
template <> struct ShapeRule<OpKind::Input> : LeafRules<OpKind::Input> {};
template <> struct ShapeRule<OpKind::Weight> : LeafRules<OpKind::Weight> {};

}  // namespace teq::ops
