// Layout operators (any rank, negative axes allowed):
//   (concat axis a b ...)           all dims equal except `axis`
//   (split axis part ref_axis x ref) cuts x along `axis` at c = ref.dim(ref_axis): part 0 is [0, c),
//                                   part 1 is [c, end). The cut comes from a tensor's shape, never from a
//                                   graph's history, so a rule's meaning is explicit (docs/operators.md).
//   (slice axis begin end x)         [begin, end) along `axis`
//   (transpose p0 .. pn x)           out.dim(i) = x.dim(p_i)
//   (reshape d0 .. dn x)             row-major, same element count
//   (pad b0 .. bn e0 .. en x)        b_d zeros before and e_d zeros after axis d (all >= 0; the order of
//                                   ONNX Pad's pads), so out.dim(d) = x.dim(d) + b_d + e_d
#pragma once

#include "rules/ops/common.h"

namespace teq::ops {

// The shape rules: rules/ops/detail/layout_shape.h.

/// The attributes by name.
inline int64_t concat_axis(AttrSpan a) { return a[0]; }
struct SplitAttrs {
  int64_t axis, part, ref_axis;
};
inline SplitAttrs split_attrs(AttrSpan a) { return {a[0], a[1], a[2]}; }
/// The attribute list of a split.
inline std::vector<int64_t> split_attr_list(const SplitAttrs& s) { return {s.axis, s.part, s.ref_axis}; }
struct SliceAttrs {
  int64_t axis, begin, end;
};
inline SliceAttrs slice_attrs(AttrSpan a) { return {a[0], a[1], a[2]}; }
/// pad's zeros before and after each axis (one of each per axis, in ONNX Pad's order).
struct PadAttrs {
  std::vector<int64_t> before, after;
};
inline PadAttrs pad_attrs(AttrSpan a) {
  const auto rank = static_cast<std::ptrdiff_t>(a.size() / 2);
  return {{a.begin(), a.begin() + rank}, {a.begin() + rank, a.end()}};
}

/// [begin, end) of the part that a split selects (attributes already validated by shape_split); Dim is a
/// dimension policy's (rules/dims.h), int64_t outside the shape rules.
template <class Dim>
struct SplitRangeOf {
  int64_t axis;
  Dim begin, end;
};
using SplitRange = SplitRangeOf<int64_t>;
SplitRange split_range(AttrSpan attrs, const Shape& x, const Shape& ref);

/// Copies [begin, end) along `axis` of x.
template <class S>
Tensor<S> slice_axis(const Tensor<S>& x, int64_t axis, int64_t begin, int64_t end, const Shape& out_shape) {
  AxisSplit s = split_at_axis(x.shape, axis);
  std::vector<S> out;
  out.reserve(num_elements(out_shape));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t a = begin; a < end; ++a)
      for (int64_t i = 0; i < s.inner; ++i) out.push_back(x.data[(o * s.extent + a) * s.inner + i]);
  return Tensor<S>(out_shape, std::move(out));
}

template <class S>
Tensor<S> eval_concat(AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  int64_t axis = attrs[0] < 0 ? attrs[0] + static_cast<int64_t>(out_shape.size()) : attrs[0];
  AxisSplit s = split_at_axis(out_shape, axis);
  std::vector<S> out;
  out.reserve(num_elements(out_shape));
  for (int64_t o = 0; o < s.outer; ++o)
    for (const Tensor<S>* t : in) {
      int64_t block = t->shape[axis] * s.inner;
      out.insert(out.end(), t->data.begin() + o * block, t->data.begin() + (o + 1) * block);
    }
  return Tensor<S>(out_shape, std::move(out));
}

template <class S>
Tensor<S> eval_split(AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  SplitRange r = split_range(attrs, in[0]->shape, in[1]->shape);
  return slice_axis(*in[0], r.axis, r.begin, r.end, out_shape);
}

template <class S>
Tensor<S> eval_slice(AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  int64_t axis = attrs[0] < 0 ? attrs[0] + static_cast<int64_t>(in[0]->rank()) : attrs[0];
  return slice_axis(*in[0], axis, attrs[1], attrs[2], out_shape);
}

template <class S>
Tensor<S> eval_transpose(AttrSpan perm, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  std::vector<int64_t> in_strides = strides_of(x.shape), idx;
  std::vector<S> out;
  out.reserve(x.data.size());
  for (int64_t flat = 0; flat < x.size(); ++flat) {
    unravel(flat, out_shape, idx);
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += idx[d] * in_strides[perm[d]];
    out.push_back(x.data[src]);
  }
  return Tensor<S>(out_shape, std::move(out));
}

template <class S>
Tensor<S> eval_pad(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  const size_t rank = x.rank();
  const std::vector<int64_t> out_strides = strides_of(out_shape);
  int64_t offset = 0;  // where x's first element lands
  for (size_t d = 0; d < rank; ++d) offset += attrs[d] * out_strides[d];
  Tensor<S> out(out_shape, ar.constant(0));
  std::vector<int64_t> idx;
  for (int64_t flat = 0; flat < x.size(); ++flat) {
    unravel(flat, x.shape, idx);
    int64_t dst = offset;
    for (size_t d = 0; d < rank; ++d) dst += idx[d] * out_strides[d];
    out.data[dst] = x.data[flat];
  }
  return out;
}

template <class S>
Tensor<S> eval_reshape(Args<S> in, const Shape& out_shape) {
  return Tensor<S>(out_shape, in[0]->data);
}

// ---- each operator's meaning (Semantics, rules/ops/common.h) ------------------------------------------

template <>
struct Semantics<OpKind::Concat> : AxisWorkKey<OpKind::Concat> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_concat(attrs, in, out_shape);
  }
};
template <>
struct Semantics<OpKind::Split> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_split(attrs, in, out_shape);
  }
  /// The slice it selects, of x alone (the reference only supplies the cut).
  static WorkKey work_key(AttrSpan attrs, Shapes in) {
    if (attrs.size() != 3 || in.size() != 2) return {OpKind::Split, {attrs.begin(), attrs.end()}, {in.begin(), in.end()}};
    const SplitRange r = split_range(attrs, in[0], in[1]);
    return {OpKind::Slice, {r.axis, r.begin, r.end}, {in[0]}};
  }
};
template <>
struct Semantics<OpKind::Slice> : AxisWorkKey<OpKind::Slice> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_slice(attrs, in, out_shape);
  }
};
template <>
struct Semantics<OpKind::Transpose> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_transpose(attrs, in, out_shape);
  }
};
template <>
struct Semantics<OpKind::Reshape> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan, Args<S> in, const Shape& out_shape) {
    return eval_reshape(in, out_shape);
  }
};
template <>
struct Semantics<OpKind::Pad> {
  template <class S>
  static Tensor<S> eval(const Arith<S>& ar, AttrSpan attrs, Args<S> in, const Shape& out_shape) {
    return eval_pad(ar, attrs, in, out_shape);
  }
};

}  // namespace teq::ops
