// The --check evaluator's layout, indexing and generator operators (node_eval_common.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "optimizer/onnx/detail/node_eval_common.h"

namespace teq::onnx_io::detail::eval {

// ---------------------------------------------------------------- layout

T reshape(const T& t, Shape s) { return T(std::move(s), t.data); }

OnnxValue reshape_op(const Node& c) {
  const T& x = c.x(0);
  std::vector<int64_t> target = ints_of(c.x(1));
  const bool allowzero = c.i("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0 && !allowzero) {
      if (d >= x.shape.size()) bad(c.n, "0 in the target at an axis the input does not have");
      target[d] = x.shape[d];
    }
    if (target[d] == -1) {
      if (infer >= 0) bad(c.n, "more than one -1 in the target");
      infer = static_cast<int64_t>(d);
    } else {
      known *= target[d];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known) bad(c.n, "cannot infer the -1 of the target");
    target[static_cast<size_t>(infer)] = x.size() / known;
  }
  if (num_elements(target) != x.size()) bad(c.n, "target " + to_string(target) + " does not hold " + to_string(x.shape));
  return {reshape(x, target), c.type(0)};
}

OnnxValue unsqueeze(const Node& c) {
  const T& x = c.x(0);
  auto axes = c.ints_attr_or_input("axes", 1);
  if (!axes) bad(c.n, "no axes");
  const int64_t rank = rank_of(x) + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : *axes) inserted[static_cast<size_t>(norm_axis(c.n, a, rank))] = true;
  Shape s;
  size_t k = 0;
  for (int64_t d = 0; d < rank; ++d) s.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.shape[k++]);
  return {reshape(x, s), c.type(0)};
}

OnnxValue squeeze(const Node& c) {
  const T& x = c.x(0);
  auto axes = c.ints_attr_or_input("axes", 1);
  std::vector<bool> drop(x.shape.size(), false);
  if (!axes || axes->empty()) {
    for (size_t d = 0; d < x.shape.size(); ++d) drop[d] = x.shape[d] == 1;
  } else {
    for (int64_t a : *axes) {
      const size_t d = static_cast<size_t>(norm_axis(c.n, a, rank_of(x)));
      if (x.shape[d] != 1) bad(c.n, "squeezes an axis of size " + std::to_string(x.shape[d]));
      drop[d] = true;
    }
  }
  Shape s;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!drop[d]) s.push_back(x.shape[d]);
  return {reshape(x, s), c.type(0)};
}

OnnxValue flatten(const Node& c) {
  const T& x = c.x(0);
  int64_t axis = c.i("axis", 1);
  if (axis < 0) axis += rank_of(x);
  if (axis < 0 || axis > rank_of(x)) bad(c.n, "axis out of range");
  const size_t a = static_cast<size_t>(axis);
  return {reshape(x, {prod(x.shape, 0, a), prod(x.shape, a, x.shape.size())}), c.type(0)};
}

OnnxValue transpose(const Node& c) {
  const T& x = c.x(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm(rank);
  if (auto p = c.ints("perm"))
    perm = *p;
  else
    for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(rank - 1 - d);
  if (perm.size() != rank) bad(c.n, "perm of the wrong length");
  const std::vector<int64_t> st = strides_of(x.shape);
  Shape out(rank);
  std::vector<int64_t> ost(rank);
  for (size_t d = 0; d < rank; ++d) {
    const size_t p = static_cast<size_t>(norm_axis(c.n, perm[d], static_cast<int64_t>(rank)));
    out[d] = x.shape[p];
    ost[d] = st[p];
  }
  return {strided_view(x, out, 0, ost), c.type(0)};
}

OnnxValue expand(const Node& c) {
  const T& x = c.x(0);
  const std::vector<int64_t> s = ints_of(c.x(1));
  const Shape out = broadcast_shapes(c.n, {&x.shape, &s});
  return {strided_view(x, out, 0, broadcast_strides(x.shape, out)), c.type(0)};
}

OnnxValue tile(const Node& c) {
  const T& x = c.x(0);
  const std::vector<int64_t> reps = ints_of(c.x(1));
  if (reps.size() != x.shape.size()) bad(c.n, "repeats of the wrong length");
  Shape out(x.shape.size());
  for (size_t d = 0; d < out.size(); ++d) out[d] = x.shape[d] * reps[d];
  const std::vector<int64_t> st = strides_of(x.shape);
  std::vector<double> res(static_cast<size_t>(num_elements(out)));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < static_cast<int64_t>(res.size()); ++i) {
    unravel(i, out, idx);
    int64_t off = 0;
    for (size_t d = 0; d < out.size(); ++d) off += (idx[d] % x.shape[d]) * st[d];
    res[static_cast<size_t>(i)] = x.data[static_cast<size_t>(off)];
  }
  return {T(out, std::move(res)), c.type(0)};
}


/// x sliced along `axis` from `start` to `start + count` (step 1).
T slice_axis(const T& x, size_t axis, int64_t start, int64_t count) {
  Shape out = x.shape;
  out[axis] = count;
  const std::vector<int64_t> st = strides_of(x.shape);
  return strided_view(x, out, start * st[axis], st);
}

OnnxValue slice(const Node& c) {
  const T& x = c.x(0);
  const int64_t rank = rank_of(x);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10 || c.ints("starts")) {
    starts = c.ints("starts").value_or(std::vector<int64_t>{});
    ends = c.ints("ends").value_or(std::vector<int64_t>{});
    axes = c.ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = ints_of(c.x(1));
    ends = ints_of(c.x(2));
    if (c.has(3)) axes = ints_of(c.x(3));
    if (c.has(4)) steps = ints_of(c.x(4));
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    bad(c.n, "starts, ends, axes and steps of different lengths");
  Shape out = x.shape;
  const std::vector<int64_t> st = strides_of(x.shape);
  std::vector<int64_t> vst = st;
  int64_t base = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t a = static_cast<size_t>(norm_axis(c.n, axes[k], rank));
    const int64_t dim = x.shape[a], step = steps[k];
    if (step == 0) bad(c.n, "step 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0 && ends[k] > std::numeric_limits<int64_t>::min() / 2) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    out[a] = count;
    base += s * st[a];
    vst[a] = st[a] * step;
  }
  if (num_elements(out) == 0) return {T(out, std::vector<double>{}), c.type(0)};
  return {strided_view(x, out, base, vst), c.type(0)};
}

std::vector<OnnxValue> split(const Node& c) {
  const T& x = c.x(0);
  const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", 0), rank_of(x)));
  const int64_t dim = x.shape[axis];
  const size_t outputs = static_cast<size_t>(c.n.output_size());
  std::vector<int64_t> sizes;
  if (auto s = c.ints_attr_or_input("split", 1)) {
    sizes = *s;
  } else {
    const int64_t parts = c.i("num_outputs", static_cast<int64_t>(outputs));
    if (parts <= 0) bad(c.n, "no outputs");
    const int64_t each = (dim + parts - 1) / parts;
    for (int64_t k = 0, left = dim; k < parts; ++k, left -= each) sizes.push_back(std::min(each, std::max<int64_t>(left, 0)));
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim) bad(c.n, "split sizes do not add up to the axis");
  std::vector<OnnxValue> res;
  int64_t start = 0;
  for (int64_t s : sizes) {
    res.push_back({slice_axis(x, axis, start, s), c.type(0)});
    start += s;
  }
  return res;
}

OnnxValue gather(const Node& c) {
  const T& x = c.x(0);
  const T& idx = c.x(1);
  const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", 0), rank_of(x)));
  const int64_t dim = x.shape[axis], outer = prod(x.shape, 0, axis), inner = prod(x.shape, axis + 1, x.shape.size());
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape.end());
  std::vector<double> res;
  res.reserve(static_cast<size_t>(num_elements(out)));
  for (int64_t o = 0; o < outer; ++o)
    for (double v : idx.data) {
      int64_t j = static_cast<int64_t>(v);
      if (j < 0) j += dim;
      if (j < 0 || j >= dim) bad(c.n, "index " + std::to_string(static_cast<int64_t>(v)) + " out of range for axis of size " + std::to_string(dim));
      const auto from = x.data.begin() + (o * dim + j) * inner;
      res.insert(res.end(), from, from + inner);
    }
  return {T(out, std::move(res)), c.type(0)};
}

OnnxValue gather_elements(const Node& c) {
  const T& x = c.x(0);
  const T& idx = c.x(1);
  if (idx.shape.size() != x.shape.size()) bad(c.n, "indices of another rank");
  const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", 0), rank_of(x)));
  const std::vector<int64_t> st = strides_of(x.shape);
  std::vector<double> res(idx.data.size());
  std::vector<int64_t> at;
  for (size_t i = 0; i < res.size(); ++i) {
    unravel(static_cast<int64_t>(i), idx.shape, at);
    int64_t j = static_cast<int64_t>(idx.data[i]);
    if (j < 0) j += x.shape[axis];
    if (j < 0 || j >= x.shape[axis]) bad(c.n, "index out of range");
    at[axis] = j;
    int64_t off = 0;
    for (size_t d = 0; d < at.size(); ++d) off += at[d] * st[d];
    res[i] = x.data[static_cast<size_t>(off)];
  }
  return {T(idx.shape, std::move(res)), c.type(0)};
}

/// GatherND: each index tuple (the last axis of `indices`) picks a slice of the data, the first `batch_dims`
/// axes of both running in step.
OnnxValue gather_nd(const Node& c) {
  const T& x = c.x(0);
  const T& idx = c.x(1);
  const int64_t b = c.i("batch_dims", 0);
  const int64_t r = rank_of(x), q = rank_of(idx);
  if (q < 1 || b < 0 || b >= std::min(r, q)) bad(c.n, "batch_dims out of range");
  const int64_t k = idx.shape.back();
  if (k < 1 || b + k > r) bad(c.n, "index tuples longer than the data's rank");
  for (int64_t d = 0; d < b; ++d)
    if (x.shape[d] != idx.shape[d]) bad(c.n, "batch dimensions differ");
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + k, x.shape.end());
  const int64_t block = prod(x.shape, static_cast<size_t>(b + k), x.shape.size());
  const int64_t per_batch = prod(x.shape, static_cast<size_t>(b), x.shape.size());
  const int64_t tuples_per_batch = prod(idx.shape, static_cast<size_t>(b), idx.shape.size() - 1);
  const int64_t batches = prod(idx.shape, 0, static_cast<size_t>(b));
  const std::vector<int64_t> st = strides_of(x.shape);
  std::vector<double> res;
  res.reserve(static_cast<size_t>(batches * tuples_per_batch * block));
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < tuples_per_batch; ++t) {
      int64_t off = bi * per_batch;
      for (int64_t d = 0; d < k; ++d) {
        int64_t j = static_cast<int64_t>(idx.data[static_cast<size_t>((bi * tuples_per_batch + t) * k + d)]);
        const int64_t extent = x.shape[static_cast<size_t>(b + d)];
        if (j < 0) j += extent;
        if (j < 0 || j >= extent) bad(c.n, "index out of range");
        off += j * st[static_cast<size_t>(b + d)];
      }
      res.insert(res.end(), x.data.begin() + off, x.data.begin() + off + block);
    }
  return {T(out, std::move(res)), c.type(0)};
}

OnnxValue scatter_nd(const Node& c) {
  T data = c.x(0);
  const T& idx = c.x(1);
  const T& upd = c.x(2);
  const std::string reduction = c.s("reduction", "none");
  if (idx.shape.empty()) bad(c.n, "0-d indices");
  const size_t q = static_cast<size_t>(idx.shape.back());
  if (q > data.shape.size()) bad(c.n, "index tuples longer than the data's rank");
  const int64_t tuples = idx.size() / static_cast<int64_t>(std::max<size_t>(q, 1));
  const int64_t block = prod(data.shape, q, data.shape.size());
  const std::vector<int64_t> st = strides_of(data.shape);
  if (upd.size() != tuples * block) bad(c.n, "updates of the wrong size");
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (size_t d = 0; d < q; ++d) {
      int64_t j = static_cast<int64_t>(idx.data[static_cast<size_t>(t) * q + d]);
      if (j < 0) j += data.shape[d];
      if (j < 0 || j >= data.shape[d]) bad(c.n, "index out of range");
      off += j * st[d];
    }
    for (int64_t e = 0; e < block; ++e) {
      double& dst = data.data[static_cast<size_t>(off + e)];
      const double u = upd.data[static_cast<size_t>(t * block + e)];
      if (reduction == "none") dst = u;
      else if (reduction == "add") dst += u;
      else if (reduction == "mul") dst *= u;
      else if (reduction == "max") dst = std::max(dst, u);
      else if (reduction == "min") dst = std::min(dst, u);
      else not_covered(c.n, "reduction '" + reduction + "'");
    }
  }
  return {std::move(data), c.type(0)};
}

OnnxValue pad(const Node& c) {
  const T& x = c.x(0);
  const size_t rank = x.shape.size();
  const std::string mode = c.s("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<int64_t> axes;
  if (auto p = c.ints("pads")) {
    pads = *p;
    value = c.f("value", 0);
  } else {
    pads = ints_of(c.x(1));
    if (c.has(2) && c.x(2).size() > 0) value = c.x(2).data[0];
    if (c.has(3)) axes = ints_of(c.x(3));
  }
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  if (pads.size() != 2 * axes.size()) bad(c.n, "pads of the wrong length");
  std::vector<int64_t> before(rank, 0), after(rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t a = static_cast<size_t>(norm_axis(c.n, axes[k], static_cast<int64_t>(rank)));
    before[a] = pads[k];
    after[a] = pads[k + axes.size()];
  }
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) out[d] = x.shape[d] + before[d] + after[d];
  const std::vector<int64_t> st = strides_of(x.shape);
  std::vector<double> res(static_cast<size_t>(num_elements(out)));
  std::vector<int64_t> idx;
  for (size_t i = 0; i < res.size(); ++i) {
    unravel(static_cast<int64_t>(i), out, idx);
    int64_t off = 0;
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t j = idx[d] - before[d];
      const int64_t n = x.shape[d];
      if (j < 0 || j >= n) {
        if (mode == "constant") {
          outside = true;
          break;
        } else if (mode == "edge") {
          j = std::clamp<int64_t>(j, 0, n - 1);
        } else if (mode == "reflect") {
          if (n == 1) j = 0;
          const int64_t period = 2 * (n - 1);
          while (j < 0 || j >= n) {
            j = ((j % period) + period) % period;
            if (j >= n) j = period - j;
          }
        } else if (mode == "wrap") {
          j = ((j % n) + n) % n;
        } else {
          not_covered(c.n, "mode '" + mode + "'");
        }
      }
      off += j * st[d];
    }
    res[i] = outside ? value : x.data[static_cast<size_t>(off)];
  }
  return {T(out, std::move(res)), c.type(0)};
}

// ---------------------------------------------------------------- generators

OnnxValue shape_op(const Node& c) {
  const int64_t rank = rank_of(c.x(0));
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(c.i("start", 0)), end = clamp(c.i("end", rank));
  std::vector<double> v;
  for (int64_t d = start; d < end; ++d) v.push_back(static_cast<double>(c.x(0).shape[static_cast<size_t>(d)]));
  const Shape s{static_cast<int64_t>(v.size())};
  return {T(s, std::move(v)), TP::INT64};
}

OnnxValue constant_of_shape(const Node& c) {
  const std::vector<int64_t> s = ints_of(c.x(0));
  OnnxValue fill{T(Shape{}, 0.0), TP::FLOAT};
  if (const onnx::AttributeProto* a = find_attr(c.n, "value")) fill = decode_tensor(a->t());
  if (fill.t.size() != 1) bad(c.n, "value is not one element");
  return {T(Shape(s.begin(), s.end()), fill.t.data[0]), fill.type};
}

OnnxValue range(const Node& c) {
  const double start = c.x(0).data.at(0), limit = c.x(1).data.at(0), delta = c.x(2).data.at(0);
  if (delta == 0) bad(c.n, "delta 0");
  const int64_t count = std::max<int64_t>(static_cast<int64_t>(std::ceil((limit - start) / delta)), 0);
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) v[static_cast<size_t>(k)] = start + static_cast<double>(k) * delta;
  return make(T(Shape{count}, std::move(v)), c.type(0));
}

OnnxValue cumsum(const Node& c) {
  T x = c.x(0);
  const size_t axis = static_cast<size_t>(norm_axis(c.n, static_cast<int64_t>(c.x(1).data.at(0)), rank_of(x)));
  const bool exclusive = c.i("exclusive", 0) != 0, reverse = c.i("reverse", 0) != 0;
  const int64_t dim = x.shape[axis], outer = prod(x.shape, 0, axis), inner = prod(x.shape, axis + 1, x.shape.size());
  const T& src = c.x(0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < dim; ++k) {
        const int64_t j = reverse ? dim - 1 - k : k;
        const size_t at = static_cast<size_t>((o * dim + j) * inner + i);
        if (exclusive) {
          x.data[at] = sum;
          sum += src.data[at];
        } else {
          sum += src.data[at];
          x.data[at] = sum;
        }
      }
    }
  return {std::move(x), c.type(0)};
}

OnnxValue trilu(const Node& c) {
  T x = c.x(0);
  if (x.shape.size() < 2) bad(c.n, "rank below 2");
  const int64_t k = c.has(1) ? static_cast<int64_t>(c.x(1).data.at(0)) : 0;
  const bool upper = c.i("upper", 1) != 0;
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back(), mats = x.size() / std::max<int64_t>(rows * cols, 1);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) x.data[static_cast<size_t>((m * rows + i) * cols + j)] = 0;
      }
  return {std::move(x), c.type(0)};
}

}  // namespace teq::onnx_io::detail::eval

// ---------------------------------------------------------------- shapes that depend on values

namespace teq::onnx_io::detail::eval {

namespace {

/// `x` seen as [outer, dim, inner] around `axis`: element (o, j, i).
struct AxisView {
  int64_t outer, dim, inner;
  AxisView(const Shape& s, size_t axis) : outer(prod(s, 0, axis)), dim(s[axis]), inner(prod(s, axis + 1, s.size())) {}
};

/// The slices j of `x` along `axis` listed in `keep`, in that order: a tensor whose axis has keep.size() entries.
T take_slices(const T& x, size_t axis, const std::vector<int64_t>& keep) {
  const AxisView v(x.shape, axis);
  Shape out = x.shape;
  out[axis] = static_cast<int64_t>(keep.size());
  std::vector<double> res;
  res.reserve(static_cast<size_t>(num_elements(out)));
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t j : keep) {
      const auto from = x.data.begin() + (o * v.dim + j) * v.inner;
      res.insert(res.end(), from, from + v.inner);
    }
  return T(out, std::move(res));
}

}  // namespace

OnnxValue nonzero(const Node& c) {
  const T& x = c.x(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.size(); ++i)
    if (x.data[static_cast<size_t>(i)] != 0) hits.push_back(i);
  const int64_t n = static_cast<int64_t>(hits.size());
  // A scalar is read as one element of rank 1 (onnxruntime's output [1, n]).
  const size_t rows = std::max<size_t>(rank, 1);
  std::vector<double> res(rows * static_cast<size_t>(n));
  const std::vector<int64_t> strides = rank ? strides_of(x.shape) : std::vector<int64_t>{1};
  for (int64_t k = 0; k < n; ++k) {
    int64_t rest = hits[static_cast<size_t>(k)];
    for (size_t d = 0; d < rows; ++d) {
      res[d * static_cast<size_t>(n) + static_cast<size_t>(k)] = static_cast<double>(rest / strides[d]);
      rest %= strides[d];
    }
  }
  return {T(Shape{static_cast<int64_t>(rows), n}, std::move(res)), TP::INT64};
}

OnnxValue compress(const Node& c) {
  const T& x = c.x(0);
  const T& cond = c.x(1);
  if (cond.shape.size() != 1) bad(c.n, "condition is not 1-D");
  const onnx::AttributeProto* axis_attr = find_attr(c.n, "axis");
  const T flat(Shape{x.size()}, x.data);
  const T& src = axis_attr ? x : flat;
  const size_t axis = axis_attr ? static_cast<size_t>(norm_axis(c.n, axis_attr->i(), rank_of(x))) : 0;
  if (cond.size() > src.shape[axis]) bad(c.n, "condition longer than the axis");
  std::vector<int64_t> keep;
  for (int64_t j = 0; j < cond.size(); ++j)
    if (cond.data[static_cast<size_t>(j)] != 0) keep.push_back(j);
  return {take_slices(src, axis, keep), c.type(0)};
}

std::vector<OnnxValue> topk(const Node& c) {
  const T& x = c.x(0);
  const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", -1), rank_of(x)));
  const int64_t k = c.opset < 10 ? c.i("k", 0) : static_cast<int64_t>(c.x(1).data.at(0));
  const bool largest = c.i("largest", 1) != 0;
  const AxisView v(x.shape, axis);
  if (k < 0 || k > v.dim) bad(c.n, "k = " + std::to_string(k) + " outside 0.." + std::to_string(v.dim));
  Shape out = x.shape;
  out[axis] = k;
  std::vector<double> values(static_cast<size_t>(num_elements(out))), indices(values.size());
  std::vector<int64_t> order(static_cast<size_t>(v.dim));
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      auto at = [&](int64_t j) { return x.data[static_cast<size_t>((o * v.dim + j) * v.inner + i)]; };
      std::iota(order.begin(), order.end(), int64_t{0});
      // Ties: the lower index first (ONNX), NaN as the largest value (onnxruntime).
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double p = at(a), q = at(b);
        if (std::isnan(p) || std::isnan(q)) return largest ? std::isnan(p) && !std::isnan(q) : !std::isnan(p) && std::isnan(q);
        return largest ? p > q : p < q;
      });
      for (int64_t j = 0; j < k; ++j) {
        const size_t to = static_cast<size_t>((o * k + j) * v.inner + i);
        values[to] = at(order[static_cast<size_t>(j)]);
        indices[to] = static_cast<double>(order[static_cast<size_t>(j)]);
      }
    }
  return {{T(out, std::move(values)), c.type(0)}, {T(out, std::move(indices)), TP::INT64}};
}

std::vector<OnnxValue> unique(const Node& c) {
  const T& x = c.x(0);
  const onnx::AttributeProto* axis_attr = find_attr(c.n, "axis");
  const T flat(Shape{x.size()}, x.data);
  const T& src = axis_attr ? x : flat;
  const size_t axis = axis_attr ? static_cast<size_t>(norm_axis(c.n, axis_attr->i(), rank_of(x))) : 0;
  const AxisView v(src.shape, axis);
  auto slice_of = [&](int64_t j) {
    std::vector<double> s;
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) s.push_back(src.data[static_cast<size_t>((o * v.dim + j) * v.inner + i)]);
    return s;
  };
  std::vector<std::vector<double>> slices;
  for (int64_t j = 0; j < v.dim; ++j) slices.push_back(slice_of(j));
  // Each distinct slice by its first occurrence.
  std::vector<int64_t> firsts;
  std::map<std::vector<double>, int64_t> first_of;
  for (int64_t j = 0; j < v.dim; ++j)
    if (first_of.emplace(slices[static_cast<size_t>(j)], j).second) firsts.push_back(j);
  if (c.i("sorted", 1) != 0)
    std::sort(firsts.begin(), firsts.end(),
              [&](int64_t a, int64_t b) { return slices[static_cast<size_t>(a)] < slices[static_cast<size_t>(b)]; });
  std::map<std::vector<double>, int64_t> position;
  for (size_t u = 0; u < firsts.size(); ++u) position[slices[static_cast<size_t>(firsts[u])]] = static_cast<int64_t>(u);
  const int64_t n = static_cast<int64_t>(firsts.size());
  std::vector<double> idx, inverse, counts(firsts.size(), 0.0);
  for (int64_t j : firsts) idx.push_back(static_cast<double>(j));
  for (int64_t j = 0; j < v.dim; ++j) {
    const int64_t u = position.at(slices[static_cast<size_t>(j)]);
    inverse.push_back(static_cast<double>(u));
    counts[static_cast<size_t>(u)] += 1;
  }
  return {{take_slices(src, axis, firsts), c.type(0)},
          {T(Shape{n}, std::move(idx)), TP::INT64},
          {T(Shape{v.dim}, std::move(inverse)), TP::INT64},
          {T(Shape{n}, std::move(counts)), TP::INT64}};
}

}  // namespace teq::onnx_io::detail::eval
