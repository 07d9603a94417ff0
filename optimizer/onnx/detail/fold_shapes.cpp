#include "optimizer/onnx/detail/fold_shapes.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/model.h"

namespace teq::onnx_io::detail {

namespace {

/// An integer tensor: row-major values, its dims and its ONNX element type (INT64 or INT32).
struct IntTensor {
  Shape dims;
  std::vector<int64_t> v;
  int32_t type = onnx::TensorProto::INT64;
};

bool is_int_type(int32_t t) { return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32; }

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::optional<IntTensor> from_proto(const onnx::TensorProto& t) {
  if (!is_int_type(t.data_type()) || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  Shape dims = tensor_dims(t);
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxFoldedElements) return std::nullopt;
    count *= d;
    if (count > kMaxFoldedElements) return std::nullopt;
  }
  try {
    IntTensor v{dims, tensor_ints(t), t.data_type()};
    if (static_cast<int64_t>(v.v.size()) != count) return std::nullopt;  // malformed: values do not fit dims
    return v;
  } catch (const OnnxError&) {
    return std::nullopt;
  }
}

/// Numpy-style broadcast of two dims lists; nullopt when they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[k] = da == 1 ? db : da;
  }
  return out;
}

/// Flat index into `dims` (right-aligned, broadcast) of the output element with multi-index `idx`.
int64_t broadcast_index(const Shape& dims, const Shape& idx) {
  int64_t flat = 0;
  size_t off = idx.size() - dims.size();
  for (size_t k = 0; k < dims.size(); ++k) flat = flat * dims[k] + (dims[k] == 1 ? 0 : idx[off + k]);
  return flat;
}

int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

class Folder {
 public:
  explicit Folder(onnx::ModelProto& m) : m_(m), opset_(default_opset(m)) {}

  int run() {
    int total = 0;
    if (!has_candidates()) return 0;
    for (int round = 0; round < 1000; ++round) {
      if (!infer()) break;
      int folded = pass();
      total += folded;
      if (folded == 0) break;
    }
    m_.mutable_graph()->clear_value_info();
    return total;
  }

 private:
  static bool foldable(const std::string& op) {
    static const std::unordered_set<std::string> ops{"Shape", "Size",  "Identity", "Cast",  "Unsqueeze",
                                                     "Squeeze", "Concat", "Gather", "Slice", "Range",
                                                     "Add",   "Sub",   "Mul",      "Div",   "Min", "Max"};
    return ops.count(op) > 0;
  }

  bool has_candidates() const {
    for (const auto& n : m_.graph().node())
      if (is_default_domain(n.domain()) && (n.op_type() == "Shape" || n.op_type() == "Size")) return true;
    return false;
  }

  /// Shape inference; records each tensor's element type and static dims.
  bool infer() {
    m_.mutable_graph()->clear_value_info();
    try {
      onnx::shape_inference::InferShapes(m_, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, true));
    } catch (const std::exception&) {
      return false;
    }
    types_.clear();
    const auto& g = m_.graph();
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
      for (const auto& vi : *list) {
        if (!vi.type().has_tensor_type()) continue;
        const auto& tt = vi.type().tensor_type();
        Known k{tt.elem_type(), std::nullopt};
        if (tt.has_shape()) {
          Shape s;
          bool all = true;
          for (const auto& d : tt.shape().dim()) {
            all = all && d.has_dim_value() && d.dim_value() >= 0;
            s.push_back(d.has_dim_value() ? d.dim_value() : -1);
          }
          if (all) k.dims = s;
        }
        types_[vi.name()] = k;
      }
    return true;
  }

  int pass() {
    auto& g = *m_.mutable_graph();
    consts_.clear();
    std::unordered_set<std::string> inputs;
    for (const auto& in : g.input()) inputs.insert(in.name());
    for (const auto& t : g.initializer())
      if (!inputs.count(t.name()))  // an initializer that is also an input can be overridden
        if (auto v = from_proto(t)) consts_[t.name()] = *v;
    int folded = 0;
    for (auto& n : *g.mutable_node()) {
      if (!is_default_domain(n.domain())) continue;
      if (n.op_type() == "Constant") {
        if (auto v = constant_value(n)) consts_[n.output(0)] = *v;
        continue;
      }
      if (n.output_size() != 1 || !foldable(n.op_type())) continue;
      std::optional<IntTensor> v;
      try {
        v = evaluate(n);
      } catch (const std::exception&) {
        v.reset();  // out-of-range index and the like: leave the node to onnxruntime's checks
      }
      if (!v || num_elements(v->dims) > kMaxFoldedElements) continue;
      consts_[n.output(0)] = *v;
      replace_by_constant(n, *v);
      ++folded;
    }
    return folded;
  }

  std::optional<IntTensor> constant_value(const onnx::NodeProto& n) const {
    for (const auto& a : n.attribute()) {
      if (a.name() == "value" && a.has_t()) return from_proto(a.t());
      if (a.name() == "value_int") return IntTensor{{}, {a.i()}, onnx::TensorProto::INT64};
      if (a.name() == "value_ints")
        return IntTensor{{a.ints_size()}, {a.ints().begin(), a.ints().end()}, onnx::TensorProto::INT64};
    }
    return std::nullopt;
  }

  static void replace_by_constant(onnx::NodeProto& n, const IntTensor& v) {
    onnx::TensorProto t = make_int_tensor(n.output(0), v.dims, v.v);
    if (v.type == onnx::TensorProto::INT32) {
      t.clear_int64_data();
      t.set_data_type(onnx::TensorProto::INT32);
      for (int64_t x : v.v) t.add_int32_data(static_cast<int32_t>(x));
    }
    n.clear_input();
    n.clear_attribute();
    n.set_op_type("Constant");
    n.set_domain("");
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = std::move(t);
  }

  const IntTensor* input(const onnx::NodeProto& n, int k) const {
    if (k >= n.input_size() || n.input(k).empty()) return nullptr;
    auto it = consts_.find(n.input(k));
    return it == consts_.end() ? nullptr : &it->second;
  }
  bool has_input(const onnx::NodeProto& n, int k) const { return k < n.input_size() && !n.input(k).empty(); }

  /// Axes of Unsqueeze/Squeeze: an attribute before opset 13, the optional second input from 13 on.
  std::optional<std::vector<int64_t>> axes_of(const onnx::NodeProto& n) const {
    if (opset_ < 13) return attr_ints(n, "axes").value_or(std::vector<int64_t>{});
    if (!has_input(n, 1)) return std::vector<int64_t>{};
    const IntTensor* a = input(n, 1);
    if (!a) return std::nullopt;
    return a->v;
  }

  std::optional<IntTensor> fold_unsqueeze(const onnx::NodeProto& n, const IntTensor* x) const {
    auto axes = axes_of(n);
    if (!axes) return std::nullopt;
    int64_t rank = static_cast<int64_t>(x->dims.size() + axes->size());
    Shape dims(rank, 0);
    std::vector<bool> is_new(rank, false);
    for (int64_t a : *axes) {
      a = norm_axis(a, rank);
      if (a < 0 || a >= rank || is_new[a]) return std::nullopt;
      is_new[a] = true;
    }
    size_t src = 0;
    for (int64_t k = 0; k < rank; ++k) dims[k] = is_new[k] ? 1 : x->dims[src++];
    return IntTensor{dims, x->v, x->type};
  }

  std::optional<IntTensor> fold_squeeze(const onnx::NodeProto& n, const IntTensor* x) const {
    auto axes = axes_of(n);
    if (!axes) return std::nullopt;
    int64_t rank = static_cast<int64_t>(x->dims.size());
    std::vector<bool> drop(rank, false);
    if (axes->empty())
      for (int64_t k = 0; k < rank; ++k) drop[k] = x->dims[k] == 1;
    for (int64_t a : *axes) {
      a = norm_axis(a, rank);
      if (a < 0 || a >= rank || x->dims[a] != 1) return std::nullopt;
      drop[a] = true;
    }
    Shape dims;
    for (int64_t k = 0; k < rank; ++k)
      if (!drop[k]) dims.push_back(x->dims[k]);
    return IntTensor{dims, x->v, x->type};
  }

  std::optional<IntTensor> fold_concat(const onnx::NodeProto& n, const IntTensor* x) const {
    std::vector<const IntTensor*> parts;
    for (int k = 0; k < n.input_size(); ++k) {
      const IntTensor* p = input(n, k);
      if (!p || p->dims.size() != x->dims.size() || p->dims.empty()) return std::nullopt;
      parts.push_back(p);
    }
    int64_t rank = static_cast<int64_t>(x->dims.size());
    int64_t axis = norm_axis(attr_int(n, "axis", 0), rank);
    if (axis < 0 || axis >= rank) return std::nullopt;
    Shape dims = x->dims;
    dims[axis] = 0;
    for (const IntTensor* p : parts) {
      for (int64_t k = 0; k < rank; ++k)
        if (k != axis && p->dims[k] != x->dims[k]) return std::nullopt;
      dims[axis] += p->dims[axis];
    }
    int64_t outer = num_elements(Shape(dims.begin(), dims.begin() + axis));
    IntTensor y{dims, {}, x->type};
    for (int64_t o = 0; o < outer; ++o)
      for (const IntTensor* p : parts) {
        int64_t block = num_elements(Shape(p->dims.begin() + axis, p->dims.end()));
        y.v.insert(y.v.end(), p->v.begin() + o * block, p->v.begin() + (o + 1) * block);
      }
    return y;
  }

  std::optional<IntTensor> fold_gather(const onnx::NodeProto& n, const IntTensor* x) const {
    const IntTensor* idx = input(n, 1);
    if (!idx || x->dims.empty()) return std::nullopt;
    int64_t rank = static_cast<int64_t>(x->dims.size());
    int64_t axis = norm_axis(attr_int(n, "axis", 0), rank);
    if (axis < 0 || axis >= rank) return std::nullopt;
    int64_t outer = num_elements(Shape(x->dims.begin(), x->dims.begin() + axis));
    int64_t inner = num_elements(Shape(x->dims.begin() + axis + 1, x->dims.end()));
    int64_t extent = x->dims[axis];
    if (outer * inner * static_cast<int64_t>(idx->v.size()) > kMaxFoldedElements) return std::nullopt;
    Shape dims(x->dims.begin(), x->dims.begin() + axis);
    dims.insert(dims.end(), idx->dims.begin(), idx->dims.end());
    dims.insert(dims.end(), x->dims.begin() + axis + 1, x->dims.end());
    IntTensor y{dims, {}, x->type};
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : idx->v) {
        if (i < 0) i += extent;
        if (i < 0 || i >= extent) return std::nullopt;
        auto from = x->v.begin() + (o * extent + i) * inner;
        y.v.insert(y.v.end(), from, from + inner);
      }
    return y;
  }

  std::optional<IntTensor> fold_slice(const onnx::NodeProto& n, const IntTensor* x) const {
    // 1-d data only (shape vectors); starts/ends/axes/steps inputs from opset 10, attributes before.
    if (x->dims.size() != 1) return std::nullopt;
    int64_t extent = x->dims[0], start = 0, end = 0, step = 1;
    if (opset_ < 10) {
      auto s = attr_ints(n, "starts"), e = attr_ints(n, "ends");
      if (!s || !e || s->size() != 1 || e->size() != 1) return std::nullopt;
      start = (*s)[0];
      end = (*e)[0];
    } else {
      const IntTensor *s = input(n, 1), *e = input(n, 2);
      if (!s || !e || s->v.size() != 1 || e->v.size() != 1) return std::nullopt;
      start = s->v[0];
      end = e->v[0];
      if (has_input(n, 3)) {
        const IntTensor* a = input(n, 3);
        if (!a || a->v.size() != 1 || norm_axis(a->v[0], 1) != 0) return std::nullopt;
      }
      if (has_input(n, 4)) {
        const IntTensor* st = input(n, 4);
        if (!st || st->v.size() != 1 || st->v[0] == 0) return std::nullopt;
        step = st->v[0];
      }
    }
    // ONNX's clamping: [0, extent] for positive steps, [-1, extent - 1] for negative ones.
    auto clamp = [&](int64_t v) {
      if (v < 0) v += extent;
      return step > 0 ? std::clamp(v, int64_t{0}, extent) : std::clamp(v, int64_t{-1}, extent - 1);
    };
    start = clamp(start);
    end = clamp(end);
    IntTensor y{{0}, {}, x->type};
    for (__int128 k = start; step > 0 ? k < end : k > end; k += step) y.v.push_back(x->v[static_cast<size_t>(k)]);
    y.dims[0] = static_cast<int64_t>(y.v.size());
    return y;
  }

  std::optional<IntTensor> fold_range(const onnx::NodeProto& n, const IntTensor* x) const {
    const IntTensor *limit = input(n, 1), *delta = input(n, 2);
    if (!limit || !delta || x->v.size() != 1 || limit->v.size() != 1 || delta->v.size() != 1 || delta->v[0] == 0)
      return std::nullopt;
    int64_t s = x->v[0], l = limit->v[0], d = delta->v[0];
    __int128 span = static_cast<__int128>(l) - s + d + (d > 0 ? -1 : 1);
    __int128 steps = std::max<__int128>(span / d, 0);
    if (steps > kMaxFoldedElements) return std::nullopt;
    int64_t count = static_cast<int64_t>(steps);
    IntTensor y{{count}, {}, x->type};
    for (int64_t k = 0; k < count; ++k)  // wraps on overflow instead of signed-overflow UB
      y.v.push_back(static_cast<int64_t>(static_cast<uint64_t>(s) + static_cast<uint64_t>(k) * static_cast<uint64_t>(d)));
    return y;
  }

  /// Element-wise binary operators with broadcasting.
  std::optional<IntTensor> fold_binary(const onnx::NodeProto& n, const IntTensor* x) const {
    const std::string& op = n.op_type();
    const IntTensor* b = input(n, 1);
    if (!b || b->type != x->type) return std::nullopt;
    auto dims = broadcast(x->dims, b->dims);
    if (!dims || num_elements(*dims) > kMaxFoldedElements) return std::nullopt;
    IntTensor y{*dims, {}, x->type};
    Shape idx(dims->size(), 0);
    for (int64_t flat = 0; flat < num_elements(*dims); ++flat) {
      int64_t p = x->v[broadcast_index(x->dims, idx)], q = b->v[broadcast_index(b->dims, idx)];
      // Two's-complement wrap-around on overflow (as onnxruntime), without signed overflow here.
      auto wrap = [](uint64_t u) { return static_cast<int64_t>(u); };
      int64_t r;
      if (op == "Add") r = wrap(static_cast<uint64_t>(p) + static_cast<uint64_t>(q));
      else if (op == "Sub") r = wrap(static_cast<uint64_t>(p) - static_cast<uint64_t>(q));
      else if (op == "Mul") r = wrap(static_cast<uint64_t>(p) * static_cast<uint64_t>(q));
      else if (op == "Div") {
        if (q == 0 || (q == -1 && p == std::numeric_limits<int64_t>::min())) return std::nullopt;
        r = p / q;  // truncates toward zero, as onnxruntime's integer Div
      } else if (op == "Min") r = std::min(p, q);
      else if (op == "Max") r = std::max(p, q);
      else return std::nullopt;
      y.v.push_back(r);
      for (size_t k = idx.size(); k-- > 0;) {  // next multi-index
        if (++idx[k] < (*dims)[k]) break;
        idx[k] = 0;
      }
    }
    return y;
  }

  std::optional<IntTensor> evaluate(const onnx::NodeProto& n) const {
    const std::string& op = n.op_type();
    if (op == "Shape" || op == "Size") {
      auto it = types_.find(n.input(0));
      if (it == types_.end() || !it->second.dims) return std::nullopt;
      const Shape& s = *it->second.dims;
      if (op == "Size") return IntTensor{{}, {num_elements(s)}};
      int64_t rank = static_cast<int64_t>(s.size());
      auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
      int64_t b = clamp(attr_int(n, "start", 0)), e = clamp(attr_int(n, "end", rank));
      std::vector<int64_t> v(s.begin() + b, s.begin() + std::max(b, e));
      return IntTensor{{static_cast<int64_t>(v.size())}, v};
    }
    const IntTensor* x = input(n, 0);
    if (!x) return std::nullopt;
    if (op == "Identity") return *x;
    if (op == "Cast") {
      int64_t to = attr_int(n, "to", 0);
      if (!is_int_type(static_cast<int32_t>(to))) return std::nullopt;
      IntTensor y = *x;
      y.type = static_cast<int32_t>(to);
      if (to == onnx::TensorProto::INT32)
        for (int64_t& e : y.v) e = static_cast<int32_t>(e);
      return y;
    }
    if (op == "Unsqueeze") return fold_unsqueeze(n, x);
    if (op == "Squeeze") return fold_squeeze(n, x);
    if (op == "Concat") return fold_concat(n, x);
    if (op == "Gather") return fold_gather(n, x);
    if (op == "Slice") return fold_slice(n, x);
    if (op == "Range") return fold_range(n, x);
    return fold_binary(n, x);
  }
  struct Known {
    int32_t elem_type = 0;
    std::optional<Shape> dims;
  };

  onnx::ModelProto& m_;
  int64_t opset_;
  std::unordered_map<std::string, Known> types_;
  std::unordered_map<std::string, IntTensor> consts_;
};

}  // namespace

int fold_shape_arithmetic(onnx::ModelProto& model) { return Folder(model).run(); }

}  // namespace teq::onnx_io::detail
