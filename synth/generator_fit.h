// The generator's own restrictions on each operator, beyond the operators' shape rules (try_infer_shape
// decides those): one entry per line of rules/op_list.inc, an operator without a specialization here having
// none. Adding an operator that needs a restriction: a specialization of GeneratorFit below.
#pragma once

#include <array>

#include "rules/op.h"
#include "rules/shape.h"

namespace teq::synth {

/// Whether the generator may apply K to a first operand of shape `a` and a second of shape `b` (null for a
/// unary operator); `reads_activation`: K reads an activation (on a weight it only restates the kernel's own
/// shape, so enumerate.cpp applies it to activations only).
template <OpKind K>
struct GeneratorFit {
  static bool fits(const Shape&, const Shape*) { return true; }
  static constexpr bool reads_activation = false;
};

/// smul scales a tensor, not a scalar.
template <>
struct GeneratorFit<OpKind::Smul> {
  static bool fits(const Shape& a, const Shape*) { return !a.empty(); }
  static constexpr bool reads_activation = false;
};
/// Batched matmul exists, but the generator keeps to matrices as TASO does.
template <>
struct GeneratorFit<OpKind::Matmul> {
  static bool fits(const Shape& a, const Shape* b) { return a.size() == 2 && b->size() == 2; }
  static constexpr bool reads_activation = false;
};
/// A convolution's kernel is no larger than its image (SAME padding would allow it).
template <>
struct GeneratorFit<OpKind::Conv2d> {
  static bool fits(const Shape& a, const Shape* b) {
    return a.size() == 4 && b->size() == 4 && (*b)[2] <= a[2] && (*b)[3] <= a[3];
  }
  static constexpr bool reads_activation = true;
};
/// Identity and pooling kernels are made for 4-d images only (their rule takes any rank >= 2).
struct FourDimensionalLike {
  static bool fits(const Shape& a, const Shape*) { return a.size() == 4; }
  static constexpr bool reads_activation = false;
};
template <>
struct GeneratorFit<OpKind::IConv> : FourDimensionalLike {};
template <>
struct GeneratorFit<OpKind::PoolKernel> : FourDimensionalLike {};
/// Pooling reads activations.
struct Pooling {
  static bool fits(const Shape&, const Shape*) { return true; }
  static constexpr bool reads_activation = true;
};
template <>
struct GeneratorFit<OpKind::MaxPool> : Pooling {};
template <>
struct GeneratorFit<OpKind::AvgPool> : Pooling {};

namespace detail {
inline constexpr std::array kGeneratorFits{
#define TEQ_OP(kind, ...) &GeneratorFit<OpKind::kind>::fits,
#include "rules/op_list.inc"
#undef TEQ_OP
};
inline constexpr std::array kReadsActivation{
#define TEQ_OP(kind, ...) GeneratorFit<OpKind::kind>::reads_activation,
#include "rules/op_list.inc"
#undef TEQ_OP
};
}  // namespace detail

/// GeneratorFit<op>::fits.
inline bool generator_fits(OpKind op, const Shape& a, const Shape* b) {
  return detail::kGeneratorFits[static_cast<size_t>(op)](a, b);
}
/// GeneratorFit<op>::reads_activation.
inline bool reads_activation(OpKind op) { return detail::kReadsActivation[static_cast<size_t>(op)]; }

}  // namespace teq::synth
