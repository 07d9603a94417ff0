// The layout operators' shape rules (rules/ops/layout.h), written once over a dimension policy (rules/dims.h).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "rules/ops/detail/common_shape.h"
#include "rules/ops/layout.h"

namespace teq::ops {

template <DimPolicy P>
ShapeOf<P> shape_concat(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& first = in[0];
  const int64_t axis = normalize_axis(p, concat_axis(attrs), first.size(), "concat");
  TEQ_PROPAGATE(p);
  ShapeOf<P> out = first;
  for (size_t k = 1; k < in.size(); ++k) {
    TEQ_REQUIRE(p, in[k].size() == first.size(), "concat", "operands must have equal rank");
    for (size_t d = 0; d < first.size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        TEQ_REQUIRE(p, in[k][d] == first[d], "concat",
                    "dimension " + std::to_string(d) + " differs off the concat axis " + std::to_string(axis));
    out[axis] = out[axis] + in[k][axis];
  }
  return out;
}

/// split_range (rules/ops/layout.h) over a policy: the part's [begin, end) once shape_split accepted it.
template <class P>
SplitRangeOf<DimOf<P>> split_range(const P& p, AttrSpan attrs, const ShapeOf<P>& x, const ShapeOf<P>& ref) {
  const SplitAttrs a = split_attrs(attrs);
  const int64_t axis = a.axis < 0 ? a.axis + static_cast<int64_t>(x.size()) : a.axis;
  const int64_t ref_axis = a.ref_axis < 0 ? a.ref_axis + static_cast<int64_t>(ref.size()) : a.ref_axis;
  const DimOf<P>& cut = ref[ref_axis];
  if (a.part == 0) return {axis, p.k(0), cut};
  return {axis, cut, x[axis]};
}

template <DimPolicy P>
ShapeOf<P> shape_split(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  const ShapeOf<P>& ref = in[1];
  const SplitAttrs a = split_attrs(attrs);
  const int64_t axis = normalize_axis(p, a.axis, x.size(), "split");
  TEQ_PROPAGATE(p);
  TEQ_REQUIRE(p, a.part == 0 || a.part == 1, "split", "part must be 0 or 1, got " + std::to_string(a.part));
  const int64_t ref_axis = normalize_axis(p, a.ref_axis, ref.size(), "split");
  TEQ_PROPAGATE(p);
  TEQ_REQUIRE(p, ref[ref_axis] < x[axis], "split",
              "cut " + p.text(ref[ref_axis]) + " must be inside the split axis of extent " + p.text(x[axis]));
  const SplitRangeOf<DimOf<P>> r = split_range(p, attrs, x, ref);
  ShapeOf<P> out = x;
  out[axis] = r.end - r.begin;
  return out;
}

template <DimPolicy P>
ShapeOf<P> shape_slice(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  const SliceAttrs a = slice_attrs(attrs);
  const int64_t axis = normalize_axis(p, a.axis, x.size(), "slice");
  TEQ_PROPAGATE(p);
  auto outside = [&] {
    return "range [" + std::to_string(a.begin) + "," + std::to_string(a.end) + ") not inside axis " +
           std::to_string(axis);
  };
  // One message, two checks: the attributes' apart from the dimension's.
  TEQ_REQUIRE(p, a.begin >= 0 && a.begin < a.end, "slice", outside());
  TEQ_REQUIRE(p, p.k(a.end) <= x[axis], "slice", outside());
  ShapeOf<P> out = x;
  out[axis] = p.k(a.end - a.begin);
  return out;
}

template <DimPolicy P>
ShapeOf<P> shape_transpose(P& p, AttrSpan perm, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  TEQ_REQUIRE(p, perm.size() == x.size(), "transpose",
              "permutation " + to_string(perm) + " does not match rank " + std::to_string(x.size()));
  std::vector<int64_t> sorted(perm.begin(), perm.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    TEQ_REQUIRE(p, sorted[i] == static_cast<int64_t>(i), "transpose", to_string(perm) + " is not a permutation");
  ShapeOf<P> out;
  out.reserve(perm.size());
  for (int64_t axis : perm) out.push_back(x[axis]);
  return out;
}

template <DimPolicy P>
ShapeOf<P> shape_reshape(P& p, AttrSpan attrs, ShapesOf<P> in) {
  for (int64_t d : attrs) TEQ_REQUIRE(p, d >= 1, "reshape", "target dims must be >= 1: " + to_string(attrs));
  ShapeOf<P> target = attr_shape(p, attrs);
  TEQ_REQUIRE(p, p.product(target) == p.product(in[0]), "reshape",
              "target " + to_string(attrs) + " has a different element count");
  return target;
}

template <DimPolicy P>
ShapeOf<P> shape_pad(P& p, AttrSpan attrs, ShapesOf<P> in) {
  const ShapeOf<P>& x = in[0];
  TEQ_REQUIRE(p, attrs.size() == 2 * x.size(), "pad",
              "needs 2 x rank = " + std::to_string(2 * x.size()) + " amounts (begins then ends), got " +
                  std::to_string(attrs.size()));
  constexpr int64_t kLimit = int64_t{1} << 30;
  ShapeOf<P> out = x;
  for (size_t k = 0; k < attrs.size(); ++k) {
    TEQ_REQUIRE(p, attrs[k] >= 0 && attrs[k] <= kLimit, "pad",
                "amounts must be in 0..2^30 (zero padding only, no cropping): " + to_string(attrs));
    const size_t d = k % x.size();
    out[d] = out[d] + p.k(attrs[k]);
  }
  TEQ_REQUIRE(p, p.product(out) <= p.k(kMaxElements), "pad", "result too large");
  return out;
}

// ---- each operator's rule (ShapeRule, rules/ops/detail/common_shape.h) ---------------------------------

template <>
struct ShapeRule<OpKind::Concat> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_concat(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Split> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_split(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Slice> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_slice(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Transpose> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_transpose(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Reshape> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_reshape(p, attrs, in);
  }
};
template <>
struct ShapeRule<OpKind::Pad> {
  template <DimPolicy P>
  static ShapeOf<P> infer(P& p, const OpInfo&, AttrSpan attrs, ShapesOf<P> in) {
    return shape_pad(p, attrs, in);
  }
};

}  // namespace teq::ops
