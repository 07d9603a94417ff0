// The --check evaluator's operator implementations (onnx_node_eval.cpp dispatches to them), in families of
// their own files: what they share (the node's attributes and inputs, axis and broadcasting helpers, integer
// conformance of results) is here. Internal to onnx_node_eval; include nowhere else.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/onnx/detail/onnx_node_eval.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/model.h"
#include "rules/shape.h"

namespace teq::onnx_io::detail::eval {

using T = Tensor<double>;
using TP = onnx::TensorProto;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] inline void bad(const onnx::NodeProto& n, const std::string& what) {
  throw ShapeError(n.op_type() + (n.name().empty() ? "" : " (node '" + n.name() + "')") + ": " + what);
}
[[noreturn]] inline void not_covered(const onnx::NodeProto& n, const std::string& what) {
  throw NotEvaluable("operator " + n.op_type() + (n.name().empty() ? "" : " (node '" + n.name() + "')") +
                     " has no evaluation in --check: " + what);
}

inline int64_t rank_of(const T& t) { return static_cast<int64_t>(t.shape.size()); }

inline int64_t norm_axis(const onnx::NodeProto& n, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) bad(n, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

inline int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

/// Values of a 0-d or 1-d integer input, as int64.
inline std::vector<int64_t> ints_of(const T& t) {
  // Values are held as doubles: INT64_MAX/MIN (a Slice's "to the end") round to +-2^63, outside int64, whose
  // conversion is undefined. Saturate instead, which keeps their meaning.
  constexpr double kTwo63 = 9223372036854775808.0;
  std::vector<int64_t> v;
  for (double d : t.data)
    v.push_back(d >= kTwo63 ? std::numeric_limits<int64_t>::max()
                : d < -kTwo63 ? std::numeric_limits<int64_t>::min()
                              : static_cast<int64_t>(d));
  return v;
}

/// The value an element of `type` holds after conversion from x (integers truncate toward zero and wrap,
/// booleans are x != 0).
inline double conform(double x, int32_t type) {
  switch (type) {
    case TP::BOOL: return x != 0 ? 1.0 : 0.0;
    case TP::INT8: case TP::INT16: case TP::INT32: case TP::INT64:
    case TP::UINT8: case TP::UINT16: case TP::UINT32: case TP::UINT64: {
      if (std::isnan(x)) return 0;
      double t = std::trunc(x);
      if (std::fabs(t) >= 9.2e18) return t;
      const int64_t i = static_cast<int64_t>(t);
      switch (type) {
        case TP::INT8: return static_cast<int8_t>(i);
        case TP::INT16: return static_cast<int16_t>(i);
        case TP::INT32: return static_cast<int32_t>(i);
        case TP::UINT8: return static_cast<uint8_t>(i);
        case TP::UINT16: return static_cast<uint16_t>(i);
        case TP::UINT32: return static_cast<uint32_t>(i);
        case TP::UINT64: return i < 0 ? static_cast<double>(static_cast<uint64_t>(i)) : t;
        default: return t;
      }
    }
    default: return x;
  }
}

inline void conform_all(OnnxValue& v) {
  if (!is_integer_type(v.type) && v.type != TP::BOOL) return;
  for (double& x : v.t.data) x = conform(x, v.type);
}

// ---------------------------------------------------------------- broadcasting

inline Shape broadcast_shapes(const onnx::NodeProto& n, const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes)
    for (size_t d = 0; d < s->size(); ++d) {
      int64_t& o = out[rank - s->size() + d];
      const int64_t v = (*s)[d];
      if (v == o || v == 1) continue;
      if (o != 1) bad(n, "shapes do not broadcast: " + to_string(*s) + " against " + to_string(out));
      o = v;
    }
  return out;
}

/// Strides of `s` read at the indices of `out` (numpy broadcasting: 0 where s repeats).
inline std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> own = strides_of(s);
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) st[out.size() - s.size() + d] = own[d];
  return st;
}

/// Elements of `src` read at each index of `out`, at offset base + sum(index[d] * strides[d]).
inline T strided_view(const T& src, const Shape& out, int64_t base, const std::vector<int64_t>& strides) {
  const int64_t count = num_elements(out);
  std::vector<double> res(static_cast<size_t>(count));
  const size_t rank = out.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t off = base;
  for (int64_t i = 0; i < count; ++i) {
    res[static_cast<size_t>(i)] = src.data[static_cast<size_t>(off)];
    for (size_t d = rank; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < out[d]) break;
      off -= strides[d] * idx[d];
      idx[d] = 0;
    }
  }
  return T(out, std::move(res));
}

/// f over the broadcast elements of `in`.
inline T broadcast_map(const onnx::NodeProto& n, const std::vector<const T*>& in,
                const std::function<double(const double*)>& f) {
  std::vector<const Shape*> shapes;
  for (const T* t : in) shapes.push_back(&t->shape);
  const Shape out = broadcast_shapes(n, shapes);
  const size_t k = in.size(), rank = out.size();
  std::vector<std::vector<int64_t>> st;
  for (const T* t : in) st.push_back(broadcast_strides(t->shape, out));
  const int64_t count = num_elements(out);
  std::vector<double> res(static_cast<size_t>(count)), vals(k);
  std::vector<int64_t> idx(rank, 0), off(k, 0);
  for (int64_t i = 0; i < count; ++i) {
    for (size_t j = 0; j < k; ++j) vals[j] = in[j]->data[static_cast<size_t>(off[j])];
    res[static_cast<size_t>(i)] = f(vals.data());
    for (size_t d = rank; d-- > 0;) {
      for (size_t j = 0; j < k; ++j) off[j] += st[j][d];
      if (++idx[d] < out[d]) break;
      for (size_t j = 0; j < k; ++j) off[j] -= st[j][d] * idx[d];
      idx[d] = 0;
    }
  }
  return T(out, std::move(res));
}

// ---------------------------------------------------------------- attributes and inputs

struct Node {
  const onnx::NodeProto& n;
  const std::vector<const OnnxValue*>& in;
  int64_t opset;

  bool has(size_t k) const { return k < in.size() && in[k] != nullptr; }
  const OnnxValue& value(size_t k) const {
    if (!has(k)) bad(n, "input " + std::to_string(k) + " is missing");
    return *in[k];
  }
  const T& x(size_t k = 0) const { return value(k).t; }
  int32_t type(size_t k = 0) const { return value(k).type == 0 ? TP::FLOAT : value(k).type; }
  int64_t i(const std::string& name, int64_t fallback) const { return attr_int(n, name, fallback); }
  double f(const std::string& name, double fallback) const {
    const onnx::AttributeProto* a = find_attr(n, name);
    return a ? static_cast<double>(a->f()) : fallback;
  }
  std::string s(const std::string& name, const std::string& fallback) const { return attr_string(n, name, fallback); }
  std::optional<std::vector<int64_t>> ints(const std::string& name) const { return attr_ints(n, name); }
  /// Integer list from an attribute (older opsets) or else input k (newer ones); nullopt when neither.
  std::optional<std::vector<int64_t>> ints_attr_or_input(const std::string& name, size_t k) const {
    if (auto a = ints(name)) return a;
    if (has(k)) return ints_of(x(k));
    return std::nullopt;
  }
};

inline OnnxValue make(T t, int32_t type) {
  OnnxValue v{std::move(t), type};
  conform_all(v);
  return v;
}

inline T concat(const onnx::NodeProto& n, const std::vector<const T*>& parts, int64_t axis_attr) {
  const T& first = *parts.at(0);
  const int64_t rank = rank_of(first);
  const size_t axis = static_cast<size_t>(norm_axis(n, axis_attr, rank));
  Shape out = first.shape;
  out[axis] = 0;
  for (const T* p : parts) {
    if (rank_of(*p) != rank) bad(n, "inputs of different ranks");
    for (size_t d = 0; d < out.size(); ++d)
      if (d != axis && p->shape[d] != out[d]) bad(n, "inputs of different shapes");
    out[axis] += p->shape[axis];
  }
  const int64_t outer = prod(out, 0, axis), inner = prod(out, axis + 1, out.size());
  std::vector<double> res;
  res.reserve(static_cast<size_t>(num_elements(out)));
  for (int64_t o = 0; o < outer; ++o)
    for (const T* p : parts) {
      const int64_t block = p->shape[axis] * inner;
      res.insert(res.end(), p->data.begin() + o * block, p->data.begin() + (o + 1) * block);
    }
  return T(out, std::move(res));
}

// Layout, indexing and generators: node_eval_layout.cpp.
OnnxValue reshape_op(const Node& c);
OnnxValue unsqueeze(const Node& c);
OnnxValue squeeze(const Node& c);
OnnxValue flatten(const Node& c);
OnnxValue transpose(const Node& c);
OnnxValue expand(const Node& c);
OnnxValue tile(const Node& c);
OnnxValue slice(const Node& c);
std::vector<OnnxValue> split(const Node& c);
OnnxValue gather(const Node& c);
OnnxValue gather_elements(const Node& c);
OnnxValue gather_nd(const Node& c);
OnnxValue scatter_nd(const Node& c);
OnnxValue pad(const Node& c);
OnnxValue shape_op(const Node& c);
OnnxValue constant_of_shape(const Node& c);
OnnxValue range(const Node& c);
OnnxValue cumsum(const Node& c);
OnnxValue trilu(const Node& c);
// Outputs whose shapes depend on the values.
OnnxValue nonzero(const Node& c);
OnnxValue compress(const Node& c);
std::vector<OnnxValue> topk(const Node& c);
std::vector<OnnxValue> unique(const Node& c);

// Reductions, normalizations, convolution, pooling, products: node_eval_nn.cpp.
OnnxValue reduce(const Node& c);
OnnxValue arg_extreme(const Node& c);
OnnxValue softmax(const Node& c);
std::vector<OnnxValue> layer_norm(const Node& c);
OnnxValue conv(const Node& c);
std::vector<OnnxValue> pool(const Node& c);
OnnxValue matmul(const Node& c);
OnnxValue gemm(const Node& c);
OnnxValue batch_norm(const Node& c);

}  // namespace teq::onnx_io::detail::eval
