// The constants' shape rules (rules/ops/constants.h), written once over a dimension policy (rules/dims.h).
// ones has its reference's shape (infer_shape_with answers it directly).
#pragma once

#include <string>
#include <string_view>

#include "rules/dims.h"
#include "rules/ops/detail/common_shape.h"
#include "rules/ops/constants.h"

namespace teq::ops {

template <DimPolicy P>
ShapeOf<P> shape_eye(P& p, ShapesOf<P> in) {
  TEQ_REQUIRE(p, !in[0].empty(), "eye", "reference must have rank >= 1");
  return {in[0].back(), in[0].back()};
}

/// iconv's and pool_kernel's (`op` names which).
template <DimPolicy P>
ShapeOf<P> shape_kernel_constant(P& p, std::string_view op, AttrSpan attrs, ShapesOf<P> in) {
  TEQ_REQUIRE(p, in[0].size() >= 2, op, "reference must have rank >= 2 (channels at dim 1)");
  const KernelSize ks = kernel_constant_size(attrs);
  TEQ_REQUIRE(p, ks.kh >= 1 && ks.kw >= 1 && ks.kh % 2 == 1 && ks.kw % 2 == 1, op,
              "kernel size must be odd and positive, got " + std::to_string(ks.kh) + "x" + std::to_string(ks.kw));
  const DimOf<P>& channels = in[0][1];
  return {channels, op == "iconv" ? channels : p.k(1), p.k(ks.kh), p.k(ks.kw)};
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

template <> struct ShapeRule<OpKind::Ones> : FirstOperandShape {};
template <>
struct ShapeRule<OpKind::Eye> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan, ShapesOf<P> in) {
    return shape_eye(p, in);
  }
};
/// iconv's and pool_kernel's rule.
struct KernelConstantShape {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo& info, AttrSpan attrs, ShapesOf<P> in) {
    return shape_kernel_constant(p, info.name, attrs, in);
  }
};
template <> struct ShapeRule<OpKind::IConv> : KernelConstantShape {};
template <> struct ShapeRule<OpKind::PoolKernel> : KernelConstantShape {};

}  // namespace teq::ops
