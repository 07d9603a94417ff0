#include "rules/ops/layout.h"

#include <algorithm>
#include <string>

namespace teq::ops {

Shape shape_concat(AttrSpan attrs, Shapes in) {
  const Shape& first = in[0];
  int64_t axis = normalize_axis(attrs[0], first.size(), "concat", in);
  Shape out = first;
  for (size_t k = 1; k < in.size(); ++k) {
    shape_check(in[k].size() == first.size(), "concat", "operands must have equal rank", in);
    for (size_t d = 0; d < first.size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        shape_check(in[k][d] == first[d], "concat",
                    "dimension " + std::to_string(d) + " differs off the concat axis " + std::to_string(axis), in);
    out[axis] += in[k][axis];
  }
  return out;
}

SplitRange split_range(AttrSpan attrs, const Shape& x, const Shape& ref) {
  int64_t axis = attrs[0] < 0 ? attrs[0] + static_cast<int64_t>(x.size()) : attrs[0];
  int64_t ref_axis = attrs[2] < 0 ? attrs[2] + static_cast<int64_t>(ref.size()) : attrs[2];
  int64_t cut = ref[ref_axis];
  return attrs[1] == 0 ? SplitRange{axis, 0, cut} : SplitRange{axis, cut, x[axis]};
}

Shape shape_split(AttrSpan attrs, Shapes in) {
  const Shape &x = in[0], &ref = in[1];
  int64_t axis = normalize_axis(attrs[0], x.size(), "split", in);
  shape_check(attrs[1] == 0 || attrs[1] == 1, "split", "part must be 0 or 1, got " + std::to_string(attrs[1]),
              in);
  int64_t ref_axis = normalize_axis(attrs[2], ref.size(), "split", in);
  shape_check(ref[ref_axis] < x[axis], "split",
              "cut " + std::to_string(ref[ref_axis]) + " must be inside the split axis of extent " +
                  std::to_string(x[axis]),
              in);
  SplitRange r = split_range(attrs, x, ref);
  Shape out = x;
  out[axis] = r.end - r.begin;
  return out;
}

Shape shape_slice(AttrSpan attrs, Shapes in) {
  const Shape& x = in[0];
  int64_t axis = normalize_axis(attrs[0], x.size(), "slice", in);
  shape_check(attrs[1] >= 0 && attrs[1] < attrs[2] && attrs[2] <= x[axis], "slice",
              "range [" + std::to_string(attrs[1]) + "," + std::to_string(attrs[2]) + ") not inside axis " +
                  std::to_string(axis),
              in);
  Shape out = x;
  out[axis] = attrs[2] - attrs[1];
  return out;
}

Shape shape_transpose(AttrSpan perm, Shapes in) {
  const Shape& x = in[0];
  shape_check(perm.size() == x.size(), "transpose",
              "permutation " + to_string(perm) + " does not match rank " + std::to_string(x.size()), in);
  std::vector<int64_t> sorted(perm.begin(), perm.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    shape_check(sorted[i] == static_cast<int64_t>(i), "transpose", to_string(perm) + " is not a permutation", in);
  Shape out;
  for (int64_t p : perm) out.push_back(x[p]);
  return out;
}

Shape shape_reshape(AttrSpan attrs, Shapes in) {
  for (int64_t d : attrs) shape_check(d >= 1, "reshape", "target dims must be >= 1: " + to_string(attrs), in);
  shape_check(num_elements(attrs) == num_elements(in[0]), "reshape",
              "target " + to_string(attrs) + " has a different element count", in);
  return Shape(attrs.begin(), attrs.end());
}

Shape shape_pad(AttrSpan attrs, Shapes in) {
  const Shape& x = in[0];
  shape_check(attrs.size() == 2 * x.size(), "pad",
              "needs 2 x rank = " + std::to_string(2 * x.size()) + " amounts (begins then ends), got " +
                  std::to_string(attrs.size()),
              in);
  constexpr int64_t kLimit = int64_t{1} << 30;
  Shape out = x;
  for (size_t k = 0; k < attrs.size(); ++k) {
    shape_check(attrs[k] >= 0 && attrs[k] <= kLimit, "pad",
                "amounts must be in 0..2^30 (zero padding only, no cropping): " + to_string(attrs), in);
    out[k % x.size()] += attrs[k];
  }
  shape_check(num_elements(out) <= kMaxElements, "pad", "result too large", in);
  return out;
}

}  // namespace teq::ops
