#include "optimizer/onnx/detail/onnx_node_eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "optimizer/onnx/detail/node_eval_common.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/model.h"
#include "rules/arith.h"
#include "rules/shape.h"

namespace teq::onnx_io::detail {

using namespace eval;

namespace {
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

// ---------------------------------------------------------------- dispatch

const std::set<std::string>& other_ops() {
  static const std::set<std::string> ops = {
      "Where", "Not", "IsNaN", "IsInf", "Cast", "CastLike", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu",
      "Selu", "Gelu", "Dropout", "Constant", "Expand", "Gather", "GatherElements", "GatherND", "Unsqueeze", "Squeeze",
      "Reshape", "Flatten", "Transpose", "Concat", "Slice", "Split", "Tile", "Shape", "Size", "ConstantOfShape",
      "Range", "CumSum", "Trilu", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
      "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "Softmax",
      "LogSoftmax", "LayerNormalization", "Conv", "MatMul", "ScatterND", "Pad", "MaxPool", "AveragePool", "LpPool",
      "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool", "NonZero", "Compress", "TopK", "Unique", "Gemm", "BatchNormalization"};
  return ops;
}

/// The element-wise operators: each output element from the inputs' elements at its position (after
/// broadcasting); nullopt for any other operator.
std::optional<std::vector<OnnxValue>> eval_elementwise(const Node& c) {
  const std::string& op = c.n.op_type();
  if (auto it = unary_ops().find(op); it != unary_ops().end()) {
    T y = c.x(0);
    for (double& v : y.data) v = it->second(v);
    return std::vector<OnnxValue>{make(std::move(y), c.type(0))};
  }
  if (kBinary.count(op) || kComparisons.count(op)) return std::vector<OnnxValue>{binary(c)};
  if (kVariadic.count(op)) return std::vector<OnnxValue>{variadic(c)};
  if (op == "Where") {
    const T r = broadcast_map(c.n, {&c.x(0), &c.x(1), &c.x(2)}, [](const double* v) { return v[0] != 0 ? v[1] : v[2]; });
    return std::vector<OnnxValue>{make(r, c.type(1))};
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
    // The vocabulary's definitions of the two forms (rules/arith.h), not a copy of them.
    const std::string approx = c.s("approximate", "none");
    if (approx != "none" && approx != "tanh") not_covered(c.n, "approximate='" + approx + "'");
    const UnaryFn fn = approx == "tanh" ? UnaryFn::GeluTanh : UnaryFn::Gelu;
    return map1(c.type(0), [fn](double x) { return FloatArith<double>{}.unary(fn, x); });
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
  return std::nullopt;
}

/// The operators that are not element-wise: layout, indexing, reductions, and the network layers.
std::vector<OnnxValue> eval_structural(const Node& c) {
  const std::string& op = c.n.op_type();
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
  if (op == "Gemm") return {gemm(c)};
  if (op == "BatchNormalization") return {batch_norm(c)};
  if (op == "ScatterND") return {scatter_nd(c)};
  if (op == "Pad") return {pad(c)};
  if (op == "NonZero") return {nonzero(c)};
  if (op == "Compress") return {compress(c)};
  if (op == "TopK") return topk(c);
  if (op == "Unique") return unique(c);
  not_covered(c.n, "not implemented");
}

std::vector<OnnxValue> dispatch(const Node& c) {
  if (std::optional<std::vector<OnnxValue>> values = eval_elementwise(c)) return std::move(*values);
  return eval_structural(c);
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

bool is_scan(const onnx::NodeProto& node) {
  return (node.domain().empty() || node.domain() == "ai.onnx") && node.op_type() == "Scan";
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

/// Slice j of `x` along `axis` (the axis removed).
OnnxValue slice_along(const OnnxValue& x, size_t axis, int64_t j) {
  const Shape& s = x.t.shape;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  Shape out = s;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  std::vector<double> v;
  v.reserve(static_cast<size_t>(outer * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const auto from = x.t.data.begin() + (o * s[axis] + j) * inner;
    v.insert(v.end(), from, from + inner);
  }
  return {T(out, std::move(v)), x.type};
}

/// `parts` (of one shape) stacked along a new `axis`.
OnnxValue stack_along(const std::vector<OnnxValue>& parts, size_t axis) {
  const Shape& s = parts.at(0).t.shape;
  if (axis > s.size()) throw NotEvaluable("Scan output axis out of range");
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis; d < s.size(); ++d) inner *= s[d];
  Shape out = s;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<int64_t>(parts.size()));
  std::vector<double> v;
  v.reserve(static_cast<size_t>(outer * inner) * parts.size());
  for (int64_t o = 0; o < outer; ++o)
    for (const OnnxValue& p : parts) {
      if (p.t.shape != s) throw NotEvaluable("Scan output whose shape changes between iterations");
      v.insert(v.end(), p.t.data.begin() + o * inner, p.t.data.begin() + (o + 1) * inner);
    }
  return {T(out, std::move(v)), parts[0].type};
}

/// ONNX Scan (opset 9 on): N state values then M scan inputs; the body maps (state..., one slice of each scan
/// input...) to (state..., one element of each scan output...), iterating over the scan inputs' scan axis in
/// its direction; the node's outputs are the final states, then each scan output stacked along its axis.
std::vector<OnnxValue> evaluate_scan(const onnx::NodeProto& node, const std::vector<const OnnxValue*>& inputs,
                                     const OuterValues& outer, int64_t opset) {
  if (opset < 9) throw NotEvaluable("Scan of opset 8 (sequence_lens and a batch axis)");
  const onnx::GraphProto& body = *branch(node, "body");
  const int64_t m = attr_int(node, "num_scan_inputs", -1);
  const int64_t total = static_cast<int64_t>(inputs.size());
  if (m < 1 || m > total) throw NotEvaluable("Scan whose num_scan_inputs does not fit its inputs");
  const size_t states = static_cast<size_t>(total - m), scans_in = static_cast<size_t>(m);
  if (body.input_size() != total || body.output_size() < static_cast<int>(states))
    throw NotEvaluable("Scan body whose inputs and outputs do not fit the node");
  const size_t scans_out = static_cast<size_t>(body.output_size()) - states;
  auto list = [&](const char* name, size_t n, int64_t fallback) {
    std::vector<int64_t> v = attr_ints(node, name).value_or(std::vector<int64_t>(n, fallback));
    if (v.size() != n) throw NotEvaluable(std::string("Scan attribute ") + name + " of the wrong length");
    return v;
  };
  const std::vector<int64_t> in_axes = list("scan_input_axes", scans_in, 0), in_dirs = list("scan_input_directions", scans_in, 0),
                             out_axes = list("scan_output_axes", scans_out, 0),
                             out_dirs = list("scan_output_directions", scans_out, 0);
  std::vector<OnnxValue> state;
  for (size_t k = 0; k < states; ++k) {
    if (!inputs[k]) throw NotEvaluable("Scan with a missing state value");
    state.push_back(*inputs[k]);
  }
  int64_t length = -1;
  std::vector<size_t> axes(scans_in);
  for (size_t k = 0; k < scans_in; ++k) {
    const OnnxValue* x = inputs[states + k];
    if (!x) throw NotEvaluable("Scan with a missing scan input");
    const int64_t rank = static_cast<int64_t>(x->t.shape.size()), a = in_axes[k] < 0 ? in_axes[k] + rank : in_axes[k];
    if (a < 0 || a >= rank) throw ShapeError("Scan input axis out of range");
    axes[k] = static_cast<size_t>(a);
    const int64_t len = x->t.shape[axes[k]];
    if (length >= 0 && len != length) throw ShapeError("Scan inputs of different lengths");
    length = len;
  }
  if (length > kMaxLoopIterations) throw NotEvaluable("Scan of more than " + std::to_string(kMaxLoopIterations) + " iterations");
  std::vector<std::vector<OnnxValue>> scanned(scans_out);
  for (int64_t i = 0; i < length; ++i) {
    std::vector<OnnxValue> bound = state;
    for (size_t k = 0; k < scans_in; ++k)
      bound.push_back(slice_along(*inputs[states + k], axes[k], in_dirs[k] != 0 ? length - 1 - i : i));
    std::vector<OnnxValue> out = evaluate_graph(body, outer, opset, std::move(bound));
    for (size_t k = 0; k < states; ++k) state[k] = std::move(out[k]);
    for (size_t k = 0; k < scans_out; ++k) scanned[k].push_back(std::move(out[states + k]));
  }
  std::vector<OnnxValue> result = std::move(state);
  for (size_t k = 0; k < scans_out; ++k) {
    if (scanned[k].empty()) throw NotEvaluable("Scan without iterations has scan outputs of no known shape");
    if (out_dirs[k] != 0) std::reverse(scanned[k].begin(), scanned[k].end());
    const int64_t rank = static_cast<int64_t>(scanned[k][0].t.shape.size()) + 1;
    const int64_t a = out_axes[k] < 0 ? out_axes[k] + rank : out_axes[k];
    if (a < 0 || a >= rank) throw ShapeError("Scan output axis out of range");
    result.push_back(stack_along(scanned[k], static_cast<size_t>(a)));
  }
  if (static_cast<int>(result.size()) != node.output_size()) throw NotEvaluable("Scan with another number of outputs");
  return result;
}

}  // namespace

bool onnx_node_evaluable(const onnx::NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (is_if(node)) {
    const onnx::GraphProto *then_g = branch(node, "then_branch"), *else_g = branch(node, "else_branch");
    return then_g && else_g && graph_evaluable(*then_g) && graph_evaluable(*else_g);
  }
  if (is_loop(node) || is_scan(node)) {
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
  if (is_scan(node)) return evaluate_scan(node, inputs, outer, opset);
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
