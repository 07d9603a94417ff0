#include "optimizer/onnx/detail/onnx_node_eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/model.h"
#include "rules/shape.h"

namespace teq::onnx_io::detail {

namespace {

using T = Tensor<double>;
using TP = onnx::TensorProto;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void bad(const onnx::NodeProto& n, const std::string& what) {
  throw ShapeError(n.op_type() + (n.name().empty() ? "" : " (node '" + n.name() + "')") + ": " + what);
}
[[noreturn]] void not_covered(const onnx::NodeProto& n, const std::string& what) {
  throw NotEvaluable("operator " + n.op_type() + (n.name().empty() ? "" : " (node '" + n.name() + "')") +
                     " has no evaluation in --check: " + what);
}

int64_t rank_of(const T& t) { return static_cast<int64_t>(t.shape.size()); }

int64_t norm_axis(const onnx::NodeProto& n, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) bad(n, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

/// Values of a 0-d or 1-d integer input, as int64.
std::vector<int64_t> ints_of(const T& t) {
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
double conform(double x, int32_t type) {
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

void conform_all(OnnxValue& v) {
  if (!is_integer_type(v.type) && v.type != TP::BOOL) return;
  for (double& x : v.t.data) x = conform(x, v.type);
}

// ---------------------------------------------------------------- broadcasting

Shape broadcast_shapes(const onnx::NodeProto& n, const std::vector<const Shape*>& shapes) {
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
std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> own = strides_of(s);
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) st[out.size() - s.size() + d] = own[d];
  return st;
}

/// Elements of `src` read at each index of `out`, at offset base + sum(index[d] * strides[d]).
T strided_view(const T& src, const Shape& out, int64_t base, const std::vector<int64_t>& strides) {
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
T broadcast_map(const onnx::NodeProto& n, const std::vector<const T*>& in,
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

OnnxValue make(T t, int32_t type) {
  OnnxValue v{std::move(t), type};
  conform_all(v);
  return v;
}

// ---------------------------------------------------------------- element-wise

using Unary = std::function<double(double)>;

const std::map<std::string, Unary>& unary_ops() {
  static const std::map<std::string, Unary> ops = {
      {"Abs", [](double x) { return std::fabs(x); }},
      {"Neg", [](double x) { return -x; }},
      {"Reciprocal", [](double x) { return 1.0 / x; }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"Sin", [](double x) { return std::sin(x); }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Tan", [](double x) { return std::tan(x); }},
      {"Asin", [](double x) { return std::asin(x); }},
      {"Acos", [](double x) { return std::acos(x); }},
      {"Atan", [](double x) { return std::atan(x); }},
      {"Sinh", [](double x) { return std::sinh(x); }},
      {"Cosh", [](double x) { return std::cosh(x); }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Round", [](double x) { return std::nearbyint(x); }},  // halves to even
      {"Sign", [](double x) { return std::isnan(x) ? x : static_cast<double>((x > 0) - (x < 0)); }},
      {"Relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"Softplus", [](double x) { return x > 30 ? x : std::log1p(std::exp(x)); }},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }},
      {"Identity", [](double x) { return x; }},
  };
  return ops;
}

using Binary = std::function<double(double, double)>;

/// Arithmetic whose integer form differs (Div truncates, Mod has two meanings): decided by the output type.
Binary binary_op(const Node& c, int32_t type) {
  const std::string& op = c.n.op_type();
  const bool integer = is_integer_type(type);
  if (op == "Add" || op == "Sum") return [](double a, double b) { return a + b; };
  if (op == "Sub") return [](double a, double b) { return a - b; };
  if (op == "Mul") return [](double a, double b) { return a * b; };
  if (op == "Div") {
    if (integer)
      return [](double a, double b) {
        if (b == 0) return 0.0;
        return static_cast<double>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
      };
    return [](double a, double b) { return a / b; };
  }
  if (op == "Pow") return [](double a, double b) { return std::pow(a, b); };
  if (op == "Mod") {
    if (c.i("fmod", 0)) return [](double a, double b) { return std::fmod(a, b); };
    if (!integer)  // the sign of the divisor, as Python's %
      return [](double a, double b) {
        double r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
      };
    return [](double a, double b) {
      if (b == 0) return 0.0;
      const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return static_cast<double>(r);
    };
  }
  if (op == "Max")
    return [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); };
  if (op == "Min")
    return [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); };
  if (op == "Equal") return [](double a, double b) { return double(a == b); };
  if (op == "Greater") return [](double a, double b) { return double(a > b); };
  if (op == "GreaterOrEqual") return [](double a, double b) { return double(a >= b); };
  if (op == "Less") return [](double a, double b) { return double(a < b); };
  if (op == "LessOrEqual") return [](double a, double b) { return double(a <= b); };
  if (op == "And") return [](double a, double b) { return double(a != 0 && b != 0); };
  if (op == "Or") return [](double a, double b) { return double(a != 0 || b != 0); };
  if (op == "Xor") return [](double a, double b) { return double((a != 0) != (b != 0)); };
  if (op == "PRelu") return [](double a, double b) { return a < 0 ? a * b : a; };
  return nullptr;
}

const std::set<std::string> kComparisons = {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And",
                                             "Or", "Xor"};
const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu"};
const std::set<std::string> kVariadic = {"Max", "Min", "Sum", "Mean"};

OnnxValue binary(const Node& c) {
  const std::string& op = c.n.op_type();
  const int32_t type = kComparisons.count(op) ? TP::BOOL : c.type(0);
  const Binary f = binary_op(c, c.type(0));
  const T r = broadcast_map(c.n, {&c.x(0), &c.x(1)}, [&](const double* v) { return f(v[0], v[1]); });
  return make(r, type);
}

OnnxValue variadic(const Node& c) {
  const std::string& op = c.n.op_type();
  const Binary f = binary_op(c, c.type(0));
  const Binary g = op == "Mean" ? [](double a, double b) { return a + b; } : f;
  T acc = c.x(0);
  size_t count = 1;
  for (size_t k = 1; k < c.in.size(); ++k) {
    if (!c.has(k)) continue;
    acc = broadcast_map(c.n, {&acc, &c.x(k)}, [&](const double* v) { return g(v[0], v[1]); });
    ++count;
  }
  if (op == "Mean")
    for (double& v : acc.data) v /= static_cast<double>(count);
  return make(acc, c.type(0));
}

// ---------------------------------------------------------------- casts and constants

/// The element type named by Cast's `to`.
OnnxValue cast(const OnnxValue& v, int32_t to, const onnx::NodeProto& n) {
  if (to == TP::STRING || to == TP::UNDEFINED) not_covered(n, "cast to type " + std::to_string(to));
  return make(v.t, to);
}

OnnxValue constant(const Node& c) {
  const onnx::NodeProto& n = c.n;
  for (const auto& a : n.attribute()) {
    if (a.name() == "value") return decode_tensor(a.t());
    if (a.name() == "value_float") return {T(Shape{}, static_cast<double>(a.f())), TP::FLOAT};
    if (a.name() == "value_int") return {T(Shape{}, static_cast<double>(a.i())), TP::INT64};
    if (a.name() == "value_floats")
      return {T(Shape{a.floats_size()}, std::vector<double>(a.floats().begin(), a.floats().end())), TP::FLOAT};
    if (a.name() == "value_ints") {
      std::vector<double> v;
      for (int64_t x : a.ints()) v.push_back(static_cast<double>(x));
      return {T(Shape{a.ints_size()}, std::move(v)), TP::INT64};
    }
  }
  not_covered(n, "a Constant other than a numeric tensor");
}

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

T concat(const onnx::NodeProto& n, const std::vector<const T*>& parts, int64_t axis_attr) {
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

/// MaxPool, AveragePool, LpPool and their Global forms over any number of spatial axes, with ONNX's
/// attributes: kernel_shape, strides, pads, dilations, auto_pad, ceil_mode (as onnxruntime: the last window
/// starts inside the input or its begin padding), count_include_pad, p, and MaxPool's Indices output (storage_order 0: row-major, 1: column-major).
/// Padding never enters a maximum or an Lp sum; an average counts it only with count_include_pad (the window
/// clipped to the padded extent, as onnxruntime).
std::vector<OnnxValue> pool(const Node& c) {
  const std::string& op = c.n.op_type();
  const T& x = c.x(0);
  if (x.shape.size() < 3) bad(c.n, "input of rank " + std::to_string(x.shape.size()) + " (pools need N, C and a spatial axis)");
  const size_t spatial = x.shape.size() - 2;
  const bool global = op.rfind("Global", 0) == 0;
  const std::string kind = global ? op.substr(6) : op;  // MaxPool, AveragePool, LpPool
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
  const int64_t N = x.shape[0], C = x.shape[1], plane = num_elements(in), out_plane = num_elements(out);
  const bool include_pad = c.i("count_include_pad", 0) != 0;
  const double p = static_cast<double>(c.i("p", 2));
  const bool want_indices = kind == "MaxPool" && c.n.output_size() > 1 && !c.n.output(1).empty();
  const bool column_major = c.i("storage_order", 0) != 0;
  std::vector<double> y(static_cast<size_t>(N * C * out_plane)), indices(want_indices ? y.size() : 0);
  Shape o(spatial, 0), w(spatial, 0);
  for (int64_t oi = 0; oi < out_plane; ++oi) {
    // Each window position: its input element (row-major within the plane) or outside the input.
    std::vector<int64_t> members;
    int64_t padded_count = 0;
    std::fill(w.begin(), w.end(), 0);
    for (int64_t wi = 0, count = num_elements(kernel); wi < count; ++wi) {
      int64_t flat = 0;
      bool inside = true, inside_padded = true;
      for (size_t k = 0; k < spatial; ++k) {
        const int64_t pos = o[k] * strides[k] - before[k] + w[k] * dil[k];
        inside = inside && pos >= 0 && pos < in[k];
        inside_padded = inside_padded && pos >= -before[k] && pos < in[k] + after[k];
        flat = flat * in[k] + pos;
      }
      if (inside) members.push_back(flat);
      padded_count += inside_padded;
      next_index(w, kernel);
    }
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const double* img = x.data.data() + nc * plane;
      double r;
      const size_t at = static_cast<size_t>(nc * out_plane + oi);
      if (kind == "MaxPool") {
        r = -std::numeric_limits<float>::max();  // onnxruntime's start (a window of padding only)
        int64_t arg = members.empty() ? 0 : members[0];
        for (int64_t m : members)
          if (img[m] > r || std::isnan(img[m])) {
            r = img[m];
            arg = m;
            if (std::isnan(r)) break;
          }
        if (want_indices) {
          int64_t index = arg;
          if (column_major) {  // the same element counted with the first spatial axis fastest
            index = 0;
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
          }
          indices[at] = static_cast<double>(nc * plane + index);
        }
      } else if (kind == "AveragePool") {
        double sum = 0;
        for (int64_t m : members) sum += img[m];
        const int64_t count = include_pad ? padded_count : static_cast<int64_t>(members.size());
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

// ---------------------------------------------------------------- dispatch

const std::set<std::string>& other_ops() {
  static const std::set<std::string> ops = {
      "Where", "Not", "IsNaN", "IsInf", "Cast", "CastLike", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu",
      "Selu", "Gelu", "Dropout", "Constant", "Expand", "Gather", "GatherElements", "GatherND", "Unsqueeze", "Squeeze",
      "Reshape", "Flatten", "Transpose", "Concat", "Slice", "Split", "Tile", "Shape", "Size", "ConstantOfShape",
      "Range", "CumSum", "Trilu", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
      "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "Softmax",
      "LogSoftmax", "LayerNormalization", "Conv", "MatMul", "ScatterND", "Pad", "MaxPool", "AveragePool", "LpPool",
      "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"};
  return ops;
}

std::vector<OnnxValue> dispatch(const Node& c) {
  const std::string& op = c.n.op_type();
  if (auto it = unary_ops().find(op); it != unary_ops().end()) {
    T y = c.x(0);
    for (double& v : y.data) v = it->second(v);
    return {make(std::move(y), c.type(0))};
  }
  if (kBinary.count(op) || kComparisons.count(op)) return {binary(c)};
  if (kVariadic.count(op)) return {variadic(c)};
  if (op == "Where") {
    const T r = broadcast_map(c.n, {&c.x(0), &c.x(1), &c.x(2)}, [](const double* v) { return v[0] != 0 ? v[1] : v[2]; });
    return {make(r, c.type(1))};
  }
  auto map1 = [&](int32_t type, const std::function<double(double)>& f) {
    T y = c.x(0);
    for (double& v : y.data) v = f(v);
    return std::vector<OnnxValue>{make(std::move(y), type)};
  };
  if (op == "Not") return map1(TP::BOOL, [](double x) { return double(x == 0); });
  if (op == "IsNaN") return map1(TP::BOOL, [](double x) { return double(std::isnan(x)); });
  if (op == "IsInf") {
    const bool neg = c.i("detect_negative", 1) != 0, pos = c.i("detect_positive", 1) != 0;
    return map1(TP::BOOL, [=](double x) { return double((pos && x == kInf) || (neg && x == -kInf)); });
  }
  if (op == "LeakyRelu") {
    const double alpha = c.f("alpha", 0.01);
    return map1(c.type(0), [=](double x) { return x < 0 ? alpha * x : x; });
  }
  if (op == "HardSigmoid") {
    const double alpha = c.f("alpha", 0.2), beta = c.f("beta", 0.5);
    return map1(c.type(0), [=](double x) { return std::clamp(alpha * x + beta, 0.0, 1.0); });
  }
  if (op == "HardSwish") return map1(c.type(0), [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); });
  if (op == "Elu") {
    const double alpha = c.f("alpha", 1.0);
    return map1(c.type(0), [=](double x) { return x < 0 ? alpha * (std::exp(x) - 1) : x; });
  }
  if (op == "Selu") {
    const double alpha = c.f("alpha", 1.67326319217681884765625), gamma = c.f("gamma", 1.05070102214813232421875);
    return map1(c.type(0), [=](double x) { return gamma * (x <= 0 ? alpha * (std::exp(x) - 1) : x); });
  }
  if (op == "Gelu") {
    const std::string approx = c.s("approximate", "none");
    if (approx == "tanh")
      return map1(c.type(0), [](double x) {
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      });
    if (approx != "none") not_covered(c.n, "approximate='" + approx + "'");
    return map1(c.type(0), [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  }
  if (op == "Clip") {
    double lo = -kInf, hi = kInf;
    if (c.opset < 11 || find_attr(c.n, "min") || find_attr(c.n, "max")) {
      lo = c.f("min", lo);
      hi = c.f("max", hi);
    } else {
      if (c.has(1)) lo = c.x(1).data.at(0);
      if (c.has(2)) hi = c.x(2).data.at(0);
    }
    return map1(c.type(0), [=](double x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); });
  }
  if (op == "Dropout") {
    if (c.has(2) && c.x(2).data.at(0) != 0) not_covered(c.n, "training mode");
    if (c.i("is_test", 1) == 0 && c.opset < 7) not_covered(c.n, "training mode");
    return {c.value(0), {T(c.x(0).shape, 1.0), TP::BOOL}};
  }
  if (op == "Cast") return {cast(c.value(0), static_cast<int32_t>(c.i("to", 0)), c.n)};
  if (op == "CastLike") return {cast(c.value(0), c.type(1), c.n)};
  if (op == "Constant") return {constant(c)};
  if (op == "Expand") return {expand(c)};
  if (op == "Gather") return {gather(c)};
  if (op == "GatherElements") return {gather_elements(c)};
  if (op == "GatherND") return {gather_nd(c)};
  if (op == "Unsqueeze") return {unsqueeze(c)};
  if (op == "Squeeze") return {squeeze(c)};
  if (op == "Reshape") return {reshape_op(c)};
  if (op == "Flatten") return {flatten(c)};
  if (op == "Transpose") return {transpose(c)};
  if (op == "Concat") {
    std::vector<const T*> parts;
    for (size_t k = 0; k < c.in.size(); ++k)
      if (c.has(k)) parts.push_back(&c.x(k));
    return {{concat(c.n, parts, c.i("axis", 0)), c.type(0)}};
  }
  if (op == "Slice") return {slice(c)};
  if (op == "Split") return split(c);
  if (op == "Tile") return {tile(c)};
  if (op == "Shape") return {shape_op(c)};
  if (op == "Size") return {{T(Shape{}, static_cast<double>(c.x(0).size())), TP::INT64}};
  if (op == "ConstantOfShape") return {constant_of_shape(c)};
  if (op == "Range") return {range(c)};
  if (op == "CumSum") return {cumsum(c)};
  if (op == "Trilu") return {trilu(c)};
  if (op.rfind("Reduce", 0) == 0) return {reduce(c)};
  if (op == "ArgMax" || op == "ArgMin") return {arg_extreme(c)};
  if (op == "Softmax" || op == "LogSoftmax") return {softmax(c)};
  if (op == "LayerNormalization") return layer_norm(c);
  if (op == "Conv") return {conv(c)};
  if (op.find("Pool") != std::string::npos) return pool(c);
  if (op == "MatMul") return {matmul(c)};
  if (op == "ScatterND") return {scatter_nd(c)};
  if (op == "Pad") return {pad(c)};
  not_covered(c.n, "not implemented");
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    f = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    f = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -f : f;
}

float bfloat_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <class R>
std::vector<double> raw_values(const onnx::TensorProto& t, size_t n) {
  const std::string& raw = t.raw_data();
  if (raw.size() != n * sizeof(R))
    throw OnnxError("tensor '" + t.name() + "': raw_data holds " + std::to_string(raw.size()) + " bytes, expected " +
                    std::to_string(n * sizeof(R)));
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    R r;
    std::memcpy(&r, raw.data() + i * sizeof(R), sizeof(R));
    if constexpr (std::is_same_v<R, uint16_t>)
      v[i] = t.data_type() == TP::FLOAT16 ? half_to_float(r) : t.data_type() == TP::BFLOAT16 ? bfloat_to_float(r) : r;
    else
      v[i] = static_cast<double>(r);
  }
  return v;
}

}  // namespace

bool is_integer_type(int32_t type) {
  switch (type) {
    case TP::INT8: case TP::INT16: case TP::INT32: case TP::INT64:
    case TP::UINT8: case TP::UINT16: case TP::UINT32: case TP::UINT64: return true;
    default: return false;
  }
}

bool is_float_type(int32_t type) {
  return type == 0 || type == TP::FLOAT || type == TP::DOUBLE || type == TP::FLOAT16 || type == TP::BFLOAT16;
}

const std::vector<std::string>& operators_evaluated() {
  static const std::vector<std::string> names = [] {
    std::set<std::string> all(other_ops().begin(), other_ops().end());
    for (const auto& [name, _] : unary_ops()) all.insert(name);
    all.insert(kBinary.begin(), kBinary.end());
    all.insert(kComparisons.begin(), kComparisons.end());
    all.insert(kVariadic.begin(), kVariadic.end());
    return std::vector<std::string>(all.begin(), all.end());
  }();
  return names;
}

namespace {

bool is_if(const onnx::NodeProto& node) {
  return (node.domain().empty() || node.domain() == "ai.onnx") && node.op_type() == "If";
}

bool is_loop(const onnx::NodeProto& node) {
  return (node.domain().empty() || node.domain() == "ai.onnx") && node.op_type() == "Loop";
}

/// Loops longer than this are not evaluated (the check says it cannot run rather than taking minutes).
constexpr int64_t kMaxLoopIterations = 1 << 16;

const onnx::GraphProto* branch(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name && a.has_g()) return &a.g();
  return nullptr;
}

bool graph_evaluable(const onnx::GraphProto& g) {
  for (const auto& n : g.node())
    if (!onnx_node_evaluable(n)) return false;
  return true;
}

/// A subgraph (an If's branch, a Loop's body): its nodes in order over `bound` (its graph inputs' values, in
/// order), its own initializers and values, then the enclosing scopes'.
std::vector<OnnxValue> evaluate_graph(const onnx::GraphProto& g, const OuterValues& outer, int64_t opset,
                                      std::vector<OnnxValue> bound = {}) {
  std::map<std::string, OnnxValue> local;
  if (static_cast<int>(bound.size()) != g.input_size())
    throw NotEvaluable("a subgraph with " + std::to_string(g.input_size()) + " inputs given " + std::to_string(bound.size()));
  for (int k = 0; k < g.input_size(); ++k) local[g.input(k).name()] = std::move(bound[static_cast<size_t>(k)]);
  for (const auto& t : g.initializer()) local[t.name()] = decode_tensor(t);
  auto find = [&](const std::string& name) -> const OnnxValue* {
    if (auto it = local.find(name); it != local.end()) return &it->second;
    if (auto it = outer.find(name); it != outer.end()) return it->second;
    throw NotEvaluable("a subgraph reads '" + name + "', which has no value there");
  };
  for (const auto& n : g.node()) {
    std::vector<const OnnxValue*> inputs;
    for (const auto& in : n.input()) inputs.push_back(in.empty() ? nullptr : find(in));
    OuterValues scope = outer;  // a nested If sees this branch's values too
    for (const auto& [name, v] : local) scope[name] = &v;
    std::vector<OnnxValue> outs = evaluate_onnx_node(n, inputs, opset, scope);
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) local[n.output(k)] = std::move(outs[static_cast<size_t>(k)]);
  }
  std::vector<OnnxValue> result;
  for (const auto& o : g.output()) result.push_back(*find(o.name()));
  return result;
}

/// ONNX Loop: optional trip count M and condition, then the loop-carried values; the body maps (iteration,
/// condition, carried...) to (condition, carried..., scan outputs...); the node's outputs are the final carried
/// values, then each scan output stacked along a new first axis.
std::vector<OnnxValue> evaluate_loop(const onnx::NodeProto& node, const std::vector<const OnnxValue*>& inputs,
                                     const OuterValues& outer, int64_t opset) {
  const onnx::GraphProto& body = *branch(node, "body");
  auto scalar = [&](size_t k) -> std::optional<double> {
    if (k >= inputs.size() || !inputs[k]) return std::nullopt;
    if (inputs[k]->t.data.size() != 1) throw NotEvaluable("Loop with a trip count or condition that is not one element");
    return inputs[k]->t.data[0];
  };
  const std::optional<double> trips = scalar(0), first_cond = scalar(1);
  const size_t carried = inputs.size() > 2 ? inputs.size() - 2 : 0;
  if (body.input_size() != static_cast<int>(carried) + 2 || body.output_size() < static_cast<int>(carried) + 1)
    throw NotEvaluable("Loop body whose inputs and outputs do not fit the node");
  const size_t scans = static_cast<size_t>(body.output_size()) - 1 - carried;
  std::vector<OnnxValue> state;
  for (size_t k = 0; k < carried; ++k) {
    if (!inputs[k + 2]) throw NotEvaluable("Loop with a missing loop-carried value");
    state.push_back(*inputs[k + 2]);
  }
  std::vector<std::vector<OnnxValue>> scanned(scans);
  bool cond = !first_cond || *first_cond != 0;
  int64_t i = 0;
  for (; cond && (!trips || i < static_cast<int64_t>(*trips)); ++i) {
    if (i >= kMaxLoopIterations) throw NotEvaluable("Loop of more than " + std::to_string(kMaxLoopIterations) + " iterations");
    std::vector<OnnxValue> bound{{T(Shape{}, static_cast<double>(i)), TP::INT64}, {T(Shape{}, cond ? 1.0 : 0.0), TP::BOOL}};
    bound.insert(bound.end(), state.begin(), state.end());
    std::vector<OnnxValue> out = evaluate_graph(body, outer, opset, std::move(bound));
    if (out[0].t.data.size() != 1) throw NotEvaluable("Loop body whose condition is not one element");
    cond = out[0].t.data[0] != 0;
    for (size_t k = 0; k < carried; ++k) state[k] = std::move(out[k + 1]);
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(out[1 + carried + k]));
  }
  std::vector<OnnxValue> result = std::move(state);
  for (auto& values : scanned) {
    if (values.empty()) throw NotEvaluable("Loop without iterations has scan outputs of no known shape");
    Shape shape{static_cast<int64_t>(values.size())};
    shape.insert(shape.end(), values[0].t.shape.begin(), values[0].t.shape.end());
    std::vector<double> data;
    for (const OnnxValue& v : values) {
      if (v.t.shape != values[0].t.shape) throw NotEvaluable("Loop scan output whose shape changes between iterations");
      data.insert(data.end(), v.t.data.begin(), v.t.data.end());
    }
    result.push_back({T(shape, std::move(data)), values[0].type});
  }
  if (static_cast<int>(result.size()) != node.output_size()) throw NotEvaluable("Loop with another number of outputs");
  return result;
}

}  // namespace

bool onnx_node_evaluable(const onnx::NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (is_if(node)) {
    const onnx::GraphProto *then_g = branch(node, "then_branch"), *else_g = branch(node, "else_branch");
    return then_g && else_g && graph_evaluable(*then_g) && graph_evaluable(*else_g);
  }
  if (is_loop(node)) {
    const onnx::GraphProto* body = branch(node, "body");
    return body && graph_evaluable(*body);
  }
  for (const auto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) return false;
  const auto& ops = operators_evaluated();
  return std::binary_search(ops.begin(), ops.end(), node.op_type());
}

std::vector<OnnxValue> evaluate_onnx_node(const onnx::NodeProto& node, const std::vector<const OnnxValue*>& inputs,
                                          int64_t opset, const OuterValues& outer) {
  if (!onnx_node_evaluable(node))
    throw NotEvaluable("operator " + (node.domain().empty() ? "" : node.domain() + ".") + node.op_type() +
                       (node.name().empty() ? "" : " (node '" + node.name() + "')") + " has no evaluation in --check");
  if (is_if(node)) {
    if (inputs.empty() || !inputs[0] || inputs[0]->t.data.size() != 1) throw NotEvaluable("If without a one-element condition");
    const bool cond = inputs[0]->t.data[0] != 0;
    std::vector<OnnxValue> out = evaluate_graph(*branch(node, cond ? "then_branch" : "else_branch"), outer, opset);
    if (static_cast<int>(out.size()) != node.output_size()) throw NotEvaluable("If branch with another number of outputs");
    return out;
  }
  if (is_loop(node)) return evaluate_loop(node, inputs, outer, opset);
  const Node c{node, inputs, opset};
  std::vector<OnnxValue> out = dispatch(c);
  out.resize(static_cast<size_t>(std::max(node.output_size(), 1)));
  return out;
}

OnnxValue decode_tensor(const onnx::TensorProto& t) {
  if (t.data_location() == TP::EXTERNAL)
    throw OnnxError("tensor '" + t.name() + "' keeps its data in an external file that was not loaded");
  const Shape dims = tensor_dims(t);
  const size_t n = static_cast<size_t>(num_elements(dims));
  const int32_t type = t.data_type();
  std::vector<double> v;
  const bool raw = t.has_raw_data();
  switch (type) {
    case TP::FLOAT:
      v = raw ? raw_values<float>(t, n) : std::vector<double>(t.float_data().begin(), t.float_data().end());
      break;
    case TP::DOUBLE:
      v = raw ? raw_values<double>(t, n) : std::vector<double>(t.double_data().begin(), t.double_data().end());
      break;
    case TP::INT64:
      if (raw) v = raw_values<int64_t>(t, n);
      else for (int64_t x : t.int64_data()) v.push_back(static_cast<double>(x));
      break;
    case TP::UINT32: case TP::UINT64:
      if (raw) v = type == TP::UINT32 ? raw_values<uint32_t>(t, n) : raw_values<uint64_t>(t, n);
      else for (uint64_t x : t.uint64_data()) v.push_back(static_cast<double>(x));
      break;
    case TP::INT32: case TP::INT16: case TP::INT8: case TP::UINT16: case TP::UINT8: case TP::BOOL:
    case TP::FLOAT16: case TP::BFLOAT16:
      if (raw) {
        switch (type) {
          case TP::INT32: v = raw_values<int32_t>(t, n); break;
          case TP::INT16: v = raw_values<int16_t>(t, n); break;
          case TP::INT8: v = raw_values<int8_t>(t, n); break;
          case TP::UINT8: case TP::BOOL: v = raw_values<uint8_t>(t, n); break;
          default: v = raw_values<uint16_t>(t, n); break;
        }
      } else {
        for (int32_t x : t.int32_data())
          v.push_back(type == TP::FLOAT16    ? half_to_float(static_cast<uint16_t>(x))
                      : type == TP::BFLOAT16 ? bfloat_to_float(static_cast<uint16_t>(x))
                                             : static_cast<double>(x));
      }
      break;
    default:
      throw NotEvaluable("tensor '" + t.name() + "' has element type " + std::to_string(type) +
                         ", which --check does not evaluate");
  }
  if (v.size() != n)
    throw OnnxError("tensor '" + t.name() + "' holds " + std::to_string(v.size()) + " values, expected " +
                    std::to_string(n));
  if (type == TP::BOOL)
    for (double& x : v) x = x != 0;
  return {T(dims, std::move(v)), type};
}

}  // namespace teq::onnx_io::detail
