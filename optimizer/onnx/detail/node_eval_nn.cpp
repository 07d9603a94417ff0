// The --check evaluator's reductions, normalizations, convolution, pooling and products (node_eval_common.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "optimizer/onnx/detail/node_eval_common.h"

namespace teq::onnx_io::detail::eval {

// ---------------------------------------------------------------- reductions and normalizations

OnnxValue reduce(const Node& c) {
  const std::string& op = c.n.op_type();
  const T& x = c.x(0);
  const int64_t rank = rank_of(x);
  std::optional<std::vector<int64_t>> axes = c.ints("axes");
  if (!axes && c.has(1)) axes = ints_of(c.x(1));
  if (!axes || axes->empty()) {
    if (c.i("noop_with_empty_axes", 0)) return {x, c.type(0)};
    axes = std::vector<int64_t>();
    for (int64_t d = 0; d < rank; ++d) axes->push_back(d);
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : *axes) reduced[static_cast<size_t>(norm_axis(c.n, a, rank))] = true;
  const bool keep = c.i("keepdims", 1) != 0;
  Shape out, kept_shape;  // kept_shape: x's shape with reduced axes as 1
  for (size_t d = 0; d < x.shape.size(); ++d) {
    kept_shape.push_back(reduced[d] ? 1 : x.shape[d]);
    if (!reduced[d]) out.push_back(x.shape[d]);
    else if (keep) out.push_back(1);
  }
  const int64_t n_out = num_elements(kept_shape), per = x.size() / std::max<int64_t>(n_out, 1);
  double init = 0;
  if (op == "ReduceMax") init = c.type(0) == TP::BOOL ? 0 : -kInf;
  if (op == "ReduceMin") init = c.type(0) == TP::BOOL ? 1 : kInf;
  if (op == "ReduceProd") init = 1;
  std::vector<double> acc(static_cast<size_t>(n_out), init);
  const std::vector<int64_t> ost = broadcast_strides(kept_shape, x.shape);
  std::vector<int64_t> idx(x.shape.size(), 0);
  int64_t off = 0;
  for (double v : x.data) {
    double& a = acc[static_cast<size_t>(off)];
    if (op == "ReduceMax") a = std::isnan(v) || std::isnan(a) ? kNaN : std::max(a, v);
    else if (op == "ReduceMin") a = std::isnan(v) || std::isnan(a) ? kNaN : std::min(a, v);
    else if (op == "ReduceProd") a *= v;
    else if (op == "ReduceSumSquare" || op == "ReduceL2") a += v * v;
    else if (op == "ReduceL1") a += std::fabs(v);
    else if (op == "ReduceLogSumExp") a += std::exp(v);
    else a += v;  // ReduceSum, ReduceMean, ReduceLogSum
    for (size_t d = x.shape.size(); d-- > 0;) {
      off += ost[d];
      if (++idx[d] < x.shape[d]) break;
      off -= ost[d] * idx[d];
      idx[d] = 0;
    }
  }
  for (double& a : acc) {
    if (op == "ReduceMean") a /= static_cast<double>(per);
    else if (op == "ReduceL2") a = std::sqrt(a);
    else if (op == "ReduceLogSum" || op == "ReduceLogSumExp") a = std::log(a);
  }
  return make(T(out, std::move(acc)), c.type(0));
}

OnnxValue arg_extreme(const Node& c) {
  const T& x = c.x(0);
  const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", 0), rank_of(x)));
  const bool keep = c.i("keepdims", 1) != 0, last = c.i("select_last_index", 0) != 0, max = c.n.op_type() == "ArgMax";
  const int64_t dim = x.shape[axis], outer = prod(x.shape, 0, axis), inner = prod(x.shape, axis + 1, x.shape.size());
  Shape out = x.shape;
  if (keep) out[axis] = 1;
  else out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  std::vector<double> res;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < dim; ++k) {
        const double v = x.data[static_cast<size_t>((o * dim + k) * inner + i)];
        const double b = x.data[static_cast<size_t>((o * dim + best) * inner + i)];
        if (max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = k;
      }
      res.push_back(static_cast<double>(best));
    }
  return {T(out, std::move(res)), TP::INT64};
}

OnnxValue softmax(const Node& c) {
  const T& x = c.x(0);
  const int64_t rank = rank_of(x);
  const bool log = c.n.op_type() == "LogSoftmax";
  int64_t dim, outer, inner;
  if (c.opset < 13) {  // the input coerced to 2-D at `axis`
    const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", 1), std::max<int64_t>(rank, 1)));
    outer = prod(x.shape, 0, axis);
    dim = prod(x.shape, axis, x.shape.size());
    inner = 1;
  } else {
    const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", -1), rank));
    dim = x.shape[axis];
    outer = prod(x.shape, 0, axis);
    inner = prod(x.shape, axis + 1, x.shape.size());
  }
  T y = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * dim + k) * inner + i); };
      double m = -kInf, sum = 0;
      for (int64_t k = 0; k < dim; ++k) m = std::max(m, x.data[at(k)]);
      for (int64_t k = 0; k < dim; ++k) sum += std::exp(x.data[at(k)] - m);
      for (int64_t k = 0; k < dim; ++k)
        y.data[at(k)] = log ? x.data[at(k)] - m - std::log(sum) : std::exp(x.data[at(k)] - m) / sum;
    }
  return {std::move(y), c.type(0)};
}

std::vector<OnnxValue> layer_norm(const Node& c) {
  const T& x = c.x(0);
  const int64_t rank = rank_of(x);
  const size_t axis = static_cast<size_t>(norm_axis(c.n, c.i("axis", -1), rank));
  const double eps = c.f("epsilon", 1e-5);
  const int64_t outer = prod(x.shape, 0, axis), len = prod(x.shape, axis, x.shape.size());
  T norm = x;
  Shape stat_shape(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  stat_shape.resize(x.shape.size(), 1);
  T mean(stat_shape, 0.0), inv(stat_shape, 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < len; ++k) m += x.data[static_cast<size_t>(o * len + k)];
    m /= static_cast<double>(len);
    for (int64_t k = 0; k < len; ++k) {
      const double d = x.data[static_cast<size_t>(o * len + k)] - m;
      v += d * d;
    }
    v /= static_cast<double>(len);
    const double r = 1.0 / std::sqrt(v + eps);
    for (int64_t k = 0; k < len; ++k) {
      double& e = norm.data[static_cast<size_t>(o * len + k)];
      e = (e - m) * r;
    }
    mean.data[static_cast<size_t>(o)] = m;
    inv.data[static_cast<size_t>(o)] = r;
  }
  T y = c.has(2) ? broadcast_map(c.n, {&norm, &c.x(1), &c.x(2)}, [](const double* v) { return v[0] * v[1] + v[2]; })
                 : broadcast_map(c.n, {&norm, &c.x(1)}, [](const double* v) { return v[0] * v[1]; });
  if (y.shape != x.shape) bad(c.n, "scale or bias broadcast beyond the input's shape");
  return {{std::move(y), c.type(0)}, {std::move(mean), TP::FLOAT}, {std::move(inv), TP::FLOAT}};
}

// ---------------------------------------------------------------- convolution and products

OnnxValue conv(const Node& c) {
  const T& x = c.x(0);
  const T& w = c.x(1);
  const size_t spatial = x.shape.size() < 3 ? 0 : x.shape.size() - 2;
  if (spatial < 1 || spatial > 2) not_covered(c.n, std::to_string(spatial) + "-d convolution (1-d and 2-d are)");
  if (w.shape.size() != x.shape.size()) bad(c.n, "weight of another rank");
  const int64_t group = c.i("group", 1);
  const std::vector<int64_t> ones(spatial, 1);
  const std::vector<int64_t> strides = c.ints("strides").value_or(ones), dil = c.ints("dilations").value_or(ones);
  std::vector<int64_t> pads = c.ints("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  const std::string auto_pad = c.s("auto_pad", "NOTSET");
  // As 2-D: a 1-D convolution is one of height 1.
  auto dim2 = [&](const std::vector<int64_t>& v, size_t k, int64_t one) { return spatial == 1 ? (k == 0 ? one : v[0]) : v[k]; };
  const int64_t N = x.shape[0], C = x.shape[1], H = spatial == 1 ? 1 : x.shape[2], W = x.shape.back();
  const int64_t M = w.shape[0], Cg = w.shape[1], KH = spatial == 1 ? 1 : w.shape[2], KW = w.shape.back();
  if (group <= 0 || C != Cg * group || M % group) bad(c.n, "channels do not fit the groups");
  const int64_t sh = dim2(strides, 0, 1), sw = dim2(strides, 1, 1), dh = dim2(dil, 0, 1), dw = dim2(dil, 1, 1);
  int64_t ph0, pw0, ph1, pw1, OH, OW;
  auto window = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int64_t& before, int64_t& out) {
    const int64_t ext = (k - 1) * d + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + ext - in);
      before = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID") {
      before = 0;
      out = (in - ext) / s + 1;
    } else {
      before = pb;
      out = (in + pb + pe - ext) / s + 1;
    }
  };
  if (spatial == 1) {
    ph0 = ph1 = 0;
    OH = 1;
    window(W, KW, sw, dw, pads[0], pads[1], pw0, OW);
  } else {
    window(H, KH, sh, dh, pads[0], pads[2], ph0, OH);
    window(W, KW, sw, dw, pads[1], pads[3], pw0, OW);
  }
  (void)ph1;
  (void)pw1;
  if (OH <= 0 || OW <= 0) bad(c.n, "empty output");
  const int64_t Mg = M / group;
  std::vector<double> out(static_cast<size_t>(N * M * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / Mg;
      double* o = out.data() + (n * M + m) * OH * OW;
      if (c.has(2)) std::fill(o, o + OH * OW, c.x(2).data.at(static_cast<size_t>(m)));
      for (int64_t ci = 0; ci < Cg; ++ci) {
        const double* img = x.data.data() + (n * C + g * Cg + ci) * H * W;
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            const double wv = w.data[static_cast<size_t>(((m * Cg + ci) * KH + ky) * KW + kx)];
            for (int64_t oy = 0; oy < OH; ++oy) {
              const int64_t iy = oy * sh - ph0 + ky * dh;
              if (iy < 0 || iy >= H) continue;
              for (int64_t ox = 0; ox < OW; ++ox) {
                const int64_t ix = ox * sw - pw0 + kx * dw;
                if (ix >= 0 && ix < W) o[oy * OW + ox] += wv * img[iy * W + ix];
              }
            }
          }
      }
    }
  Shape s = spatial == 1 ? Shape{N, M, OW} : Shape{N, M, OH, OW};
  return {T(s, std::move(out)), c.type(0)};
}

namespace {

/// Where a pool's windows lie over the spatial axes of its input.
struct PoolGeometry {
  size_t spatial = 0;  // how many spatial axes (the input's rank less N and C)
  Shape in, out;       // the spatial extents of the input and the output
  std::vector<int64_t> kernel, strides, dil;
  std::vector<int64_t> before, after;  // the padding at each axis's start and end
};

/// The geometry from the attributes (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode); a Global
/// pool's one window covers the whole input.
PoolGeometry pool_geometry(const Node& c, const T& x, bool global) {
  PoolGeometry g;
  const size_t spatial = g.spatial = x.shape.size() - 2;
  const std::vector<int64_t> ones(spatial, 1);
  std::vector<int64_t> kernel(x.shape.begin() + 2, x.shape.end()), strides = ones, dil = ones,
      pads(2 * spatial, 0);
  int64_t ceil_mode = 0;
  std::string auto_pad = "NOTSET";
  if (!global) {
    kernel = c.ints("kernel_shape").value_or(std::vector<int64_t>{});
    strides = c.ints("strides").value_or(ones);
    dil = c.ints("dilations").value_or(ones);
    pads = c.ints("pads").value_or(pads);
    ceil_mode = c.i("ceil_mode", 0);
    auto_pad = c.s("auto_pad", "NOTSET");
  }
  if (kernel.size() != spatial || strides.size() != spatial || dil.size() != spatial || pads.size() != 2 * spatial)
    bad(c.n, "kernel_shape, strides, dilations or pads do not fit the input's rank");
  const Shape in(x.shape.begin() + 2, x.shape.end());
  Shape out(spatial);
  std::vector<int64_t> before(spatial), after(spatial);
  for (size_t k = 0; k < spatial; ++k) {
    if (kernel[k] < 1 || strides[k] < 1 || dil[k] < 1) bad(c.n, "kernel, stride and dilation must be >= 1");
    const int64_t ext = (kernel[k] - 1) * dil[k] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[k] = (in[k] + strides[k] - 1) / strides[k];
      const int64_t total = std::max<int64_t>(0, (out[k] - 1) * strides[k] + ext - in[k]);
      before[k] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      after[k] = total - before[k];
    } else {
      if (auto_pad == "VALID") pads.assign(2 * spatial, 0);
      before[k] = pads[k];
      after[k] = pads[k + spatial];
      // A window larger than the padded input gives an empty axis (onnxruntime runs such a node).
      out[k] = pool_extent(in[k], kernel[k], strides[k], dil[k], before[k], after[k], ceil_mode != 0);
    }
  }
  g.in = in;
  g.out = out;
  g.kernel = kernel, g.strides = strides, g.dil = dil;
  g.before = before, g.after = after;
  return g;
}

/// One window's positions: its input elements (row-major within the plane), and how many positions lie
/// inside the padded input (what an average with count_include_pad divides by).
struct PoolWindow {
  std::vector<int64_t> members;
  int64_t padded_count = 0;
};

/// The window of output position `o` (a spatial index).
PoolWindow pool_window(const PoolGeometry& g, const Shape& o) {
  PoolWindow window;
  Shape w(g.spatial, 0);
  for (int64_t wi = 0, count = num_elements(g.kernel); wi < count; ++wi) {
    int64_t flat = 0;
    bool inside = true, inside_padded = true;
    for (size_t k = 0; k < g.spatial; ++k) {
      const int64_t pos = o[k] * g.strides[k] - g.before[k] + w[k] * g.dil[k];
      inside = inside && pos >= 0 && pos < g.in[k];
      inside_padded = inside_padded && pos >= -g.before[k] && pos < g.in[k] + g.after[k];
      flat = flat * g.in[k] + pos;
    }
    if (inside) window.members.push_back(flat);
    window.padded_count += inside_padded;
    next_index(w, g.kernel);
  }
  return window;
}

/// The row-major index `arg` within a plane of extents `in`, counted with the first spatial axis fastest
/// (MaxPool's Indices with storage_order 1).
int64_t column_major_index(int64_t arg, const Shape& in) {
  const size_t spatial = in.size();
  int64_t index = 0;
  int64_t rest = arg, stride = 1;
  Shape pos(spatial);
  for (size_t k = spatial; k-- > 0;) {
    pos[k] = rest % in[k];
    rest /= in[k];
  }
  for (size_t k = 0; k < spatial; ++k) {
    index += pos[k] * stride;
    stride *= in[k];
  }
  return index;
}

/// MaxPool over one window's elements of `img`: the maximum (a NaN wins) and the element that holds it.
double window_max(const double* img, const std::vector<int64_t>& members, int64_t& arg) {
  double r = -std::numeric_limits<float>::max();  // onnxruntime's start (a window of padding only)
  arg = members.empty() ? 0 : members[0];
  for (int64_t m : members)
    if (img[m] > r || std::isnan(img[m])) {
      r = img[m];
      arg = m;
      if (std::isnan(r)) break;
    }
  return r;
}

}  // namespace

/// MaxPool, AveragePool, LpPool and their Global forms over any number of spatial axes, with ONNX's
/// attributes: kernel_shape, strides, pads, dilations, auto_pad, ceil_mode (as onnxruntime: the last window
/// starts inside the input or its begin padding), count_include_pad, p, and MaxPool's Indices output (storage_order 0: row-major, 1: column-major).
/// Padding never enters a maximum or an Lp sum; an average counts it only with count_include_pad (the window
/// clipped to the padded extent, as onnxruntime).
std::vector<OnnxValue> pool(const Node& c) {
  const std::string& op = c.n.op_type();
  const T& x = c.x(0);
  if (x.shape.size() < 3) bad(c.n, "input of rank " + std::to_string(x.shape.size()) + " (pools need N, C and a spatial axis)");
  const bool global = op.rfind("Global", 0) == 0;
  const std::string kind = global ? op.substr(6) : op;  // MaxPool, AveragePool, LpPool
  const PoolGeometry g = pool_geometry(c, x, global);
  const Shape& in = g.in;
  const Shape& out = g.out;
  const int64_t N = x.shape[0], C = x.shape[1], plane = num_elements(in), out_plane = num_elements(out);
  const bool include_pad = c.i("count_include_pad", 0) != 0;
  const double p = static_cast<double>(c.i("p", 2));
  const bool want_indices = kind == "MaxPool" && c.n.output_size() > 1 && !c.n.output(1).empty();
  const bool column_major = c.i("storage_order", 0) != 0;
  std::vector<double> y(static_cast<size_t>(N * C * out_plane)), indices(want_indices ? y.size() : 0);
  Shape o(g.spatial, 0);
  for (int64_t oi = 0; oi < out_plane; ++oi) {
    const PoolWindow window = pool_window(g, o);
    const std::vector<int64_t>& members = window.members;
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const double* img = x.data.data() + nc * plane;
      double r;
      const size_t at = static_cast<size_t>(nc * out_plane + oi);
      if (kind == "MaxPool") {
        int64_t arg = 0;
        r = window_max(img, members, arg);
        if (want_indices) indices[at] = static_cast<double>(nc * plane + (column_major ? column_major_index(arg, in) : arg));
      } else if (kind == "AveragePool") {
        double sum = 0;
        for (int64_t m : members) sum += img[m];
        const int64_t count = include_pad ? window.padded_count : static_cast<int64_t>(members.size());
        r = count > 0 ? sum / static_cast<double>(count) : kNaN;
      } else if (kind == "LpPool") {
        double sum = 0;
        for (int64_t m : members) sum += std::pow(std::fabs(img[m]), p);
        r = std::pow(sum, 1.0 / p);
      } else {
        not_covered(c.n, "pooling '" + op + "'");
      }
      y[at] = r;
    }
    next_index(o, out);
  }
  Shape shape{N, C};
  shape.insert(shape.end(), out.begin(), out.end());
  std::vector<OnnxValue> results{make(T(shape, std::move(y)), c.type(0))};
  if (want_indices) results.push_back({T(shape, std::move(indices)), TP::INT64});
  return results;
}

OnnxValue matmul(const Node& c) {
  T a = c.x(0), b = c.x(1);
  const bool a1 = a.shape.size() == 1, b1 = b.shape.size() == 1;
  if (a1) a.shape.insert(a.shape.begin(), 1);
  if (b1) b.shape.push_back(1);
  if (a.shape.size() < 2 || b.shape.size() < 2) bad(c.n, "0-d operand");
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != k) bad(c.n, "inner dimensions differ");
  const Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  const Shape batch = broadcast_shapes(c.n, {&ab, &bb});
  const std::vector<int64_t> ast = broadcast_strides(ab, batch), bst = broadcast_strides(bb, batch);
  const int64_t batches = num_elements(batch);
  std::vector<double> out(static_cast<size_t>(batches * m * n), 0.0);
  std::vector<int64_t> idx;
  for (int64_t t = 0; t < batches; ++t) {
    unravel(t, batch, idx);
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch.size(); ++d) ao += idx[d] * ast[d], bo += idx[d] * bst[d];
    const double* pa = a.data.data() + ao * m * k;
    const double* pb = b.data.data() + bo * k * n;
    double* po = out.data() + t * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < k; ++l) {
        const double av = pa[i * k + l];
        for (int64_t j = 0; j < n; ++j) po[i * n + j] += av * pb[l * n + j];
      }
  }
  Shape s = batch;
  if (!a1) s.push_back(m);
  if (!b1) s.push_back(n);
  return make(T(s, std::move(out)), c.type(0));
}

OnnxValue gemm(const Node& c) {
  // Y = alpha * A' B' + beta * C, A' and B' transposed by transA/transB, C broadcast to [M, N].
  T a = c.x(0), b = c.x(1);
  if (a.shape.size() != 2 || b.shape.size() != 2) bad(c.n, "operands are not matrices");
  const bool ta = c.i("transA", 0) != 0, tb = c.i("transB", 0) != 0;
  const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != kb) bad(c.n, "inner dimensions differ");
  const double alpha = c.f("alpha", 1.0), beta = c.f("beta", 1.0);
  auto at = [&](int64_t i, int64_t l) { return a.data[static_cast<size_t>(ta ? l * m + i : i * k + l)]; };
  auto bt = [&](int64_t l, int64_t j) { return b.data[static_cast<size_t>(tb ? j * k + l : l * n + j)]; };
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t l = 0; l < k; ++l) {
      const double av = at(i, l);
      for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(i * n + j)] += av * bt(l, j);
    }
  T y(Shape{m, n}, std::move(out));
  for (double& v : y.data) v *= alpha;
  if (c.has(2)) {
    const T& bias = c.x(2);
    y = broadcast_map(c.n, {&y, &bias}, [beta](const double* v) { return v[0] + beta * v[1]; });
    if (y.shape != Shape{m, n}) bad(c.n, "C does not broadcast to [M, N]");
  }
  return make(std::move(y), c.type(0));
}

OnnxValue batch_norm(const Node& c) {
  // Inference mode: y = scale * (x - mean) / sqrt(var + epsilon) + B, per channel (axis 1).
  if (c.i("training_mode", 0) != 0) not_covered(c.n, "training mode");
  if (c.opset < 7 && c.i("is_test", 0) == 0) not_covered(c.n, "training mode");
  for (int k = 1; k < c.n.output_size(); ++k)
    if (!c.n.output(k).empty()) not_covered(c.n, "training-mode outputs");
  T x = c.x(0);
  if (x.shape.size() < 2) bad(c.n, "input of rank below 2");
  const double eps = c.f("epsilon", 1e-5);
  const int64_t channels = x.shape[1], inner = prod(x.shape, 2, x.shape.size());
  for (size_t k = 1; k <= 4; ++k)
    if (c.x(k).size() != channels) bad(c.n, "a parameter does not have one value per channel");
  const T &scale = c.x(1), &bias = c.x(2), &mean = c.x(3), &var = c.x(4);
  for (int64_t o = 0; o < x.shape[0]; ++o)
    for (int64_t ch = 0; ch < channels; ++ch) {
      const size_t q = static_cast<size_t>(ch);
      const double mul = scale.data[q] / std::sqrt(var.data[q] + eps);
      double* p = x.data.data() + (o * channels + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) p[i] = (p[i] - mean.data[q]) * mul + bias.data[q];
    }
  return make(std::move(x), c.type(0));
}

}  // namespace teq::onnx_io::detail::eval
