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
/// Integers and booleans (0/1): the element types folded.
bool is_foldable_type(int32_t t) { return is_int_type(t) || t == onnx::TensorProto::BOOL; }

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::optional<IntTensor> from_proto(const onnx::TensorProto& t) {
  if (!is_foldable_type(t.data_type()) || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
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
  Folder(onnx::ModelProto& m, FoldRecord* record, bool strict, const FoldRecord* probe)
      : m_(m), record_(record), strict_(strict), probe_(probe), opset_(default_opset(m)) {}

  int run() {
    int total = 0;
    if (!has_candidates()) return 0;
    // Strict inference where every node has a schema (as the importer's own): libonnx 1.12 can crash when it
    // carries on past a node whose shapes do not fit (a sequence longer than a model's position table).
    bool all_known = true;
    for (const auto& n : m_.graph().node()) all_known &= is_default_domain(n.domain());
    strict_ = strict_ || all_known;
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
    static const std::unordered_set<std::string> ops{
        "Shape", "Size",  "Identity", "Cast",    "Unsqueeze", "Squeeze", "Concat",         "Gather",
        "Slice", "Range", "Add",      "Sub",     "Mul",       "Div",     "Min",            "Max",
        "Mod",   "Neg",   "Abs",      "Not",     "Equal",     "Less",    "LessOrEqual",    "Greater",
        "And",   "Or",    "Xor",      "Where",   "Expand",    "Reshape", "ConstantOfShape", "CumSum",
        "GreaterOrEqual"};
    return ops.count(op) > 0;
  }

  /// Whether anything can fold in the first round: a Shape/Size, or a foldable node whose inputs are all
  /// integer constants (a Concat of initializers feeding a ConstantOfShape). Spares a model without either
  /// (most CNNs) a round of shape inference.
  bool has_candidates() const {
    const auto& g = m_.graph();
    std::unordered_set<std::string> inputs, constants;
    for (const auto& in : g.input()) inputs.insert(in.name());
    for (const auto& t : g.initializer())
      if (!inputs.count(t.name()) && is_foldable_type(t.data_type())) constants.insert(t.name());
    for (const auto& n : g.node()) {
      if (!is_default_domain(n.domain())) continue;
      if (n.op_type() == "Shape" || n.op_type() == "Size") return true;
      if (n.op_type() == "Constant" && n.output_size() == 1) constants.insert(n.output(0));
      if (!foldable(n.op_type()) || n.input_size() == 0) continue;
      bool all_constant = true;
      for (const auto& in : n.input()) all_constant &= in.empty() || constants.count(in) > 0;
      if (all_constant) return true;
    }
    return false;
  }

  /// Shape inference; records each tensor's element type and static dims.
  bool infer() {
    m_.mutable_graph()->clear_value_info();
    try {
      onnx::shape_inference::InferShapes(m_, onnx::OpSchemaRegistry::Instance(),
                                         inference_options(strict_));
    } catch (const std::exception&) {
      return false;
    }
    types_.clear();
    const auto& g = m_.graph();
    // Initializers have static shapes whether or not the graph lists them as inputs (Shape of a weight).
    for (const auto& t : g.initializer()) types_[t.name()] = Known{t.data_type(), tensor_dims(t)};
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
    forget_counted_pool_extents();
    return true;
  }

  /// ONNX's shape inference counts a ceil_mode window that would start in the end padding; onnxruntime drops
  /// it (pool_extent), so the extent it gives such a pooling's outputs, and every shape computed from them, is
  /// not the file's: those shapes are forgotten (a Shape of them stays a node, evaluated by what runs it).
  /// The importer then gives the pooling its true extent (Importer::adapt_ceil_mode_pools).
  void forget_counted_pool_extents() {
    std::unordered_set<std::string> miscounted;
    for (const auto& n : m_.graph().node()) {
      bool tainted = false;
      for (const auto& in : n.input()) tainted = tainted || miscounted.count(in) > 0;
      for (const auto& in : outer_references(n)) tainted = tainted || miscounted.count(in) > 0;
      tainted = tainted || counts_a_dropped_window(n);
      if (tainted)
        for (const auto& out : n.output()) miscounted.insert(out);
    }
    for (const std::string& name : miscounted)
      if (auto it = types_.find(name); it != types_.end()) it->second.dims.reset();
  }

  /// Whether `n` is a ceil_mode pooling whose extent ONNX's inference counts one window more than it has.
  bool counts_a_dropped_window(const onnx::NodeProto& n) const {
    const std::string& op = n.op_type();
    if (!is_default_domain(n.domain()) || (op != "MaxPool" && op != "AveragePool" && op != "LpPool")) return false;
    if (attr_int(n, "ceil_mode", 0) == 0 || n.input_size() < 1) return false;
    if (attr_string(n, "auto_pad", "NOTSET") != "NOTSET") return false;  // SAME/VALID: no explicit end padding
    auto x = types_.find(n.input(0));
    auto kernel = attr_ints(n, "kernel_shape");
    if (x == types_.end() || !x->second.dims || !kernel) return true;  // unknown: not trusted either
    const Shape& in = *x->second.dims;
    const size_t spatial = kernel->size();
    if (in.size() != spatial + 2) return true;
    const std::vector<int64_t> ones(spatial, 1);
    const std::vector<int64_t> strides = attr_ints(n, "strides").value_or(ones), dil = attr_ints(n, "dilations").value_or(ones);
    const std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
    if (strides.size() != spatial || dil.size() != spatial || pads.size() != 2 * spatial) return true;
    for (size_t k = 0; k < spatial; ++k)
      if (pool_extent(in[k + 2], (*kernel)[k], strides[k], dil[k], pads[k], pads[k + spatial], true) !=
          pool_extent(in[k + 2], (*kernel)[k], strides[k], dil[k], pads[k], pads[k + spatial], true, false))
        return true;
    return false;
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
      std::vector<bool> varies = probe_ ? variation(n, *v) : std::vector<bool>{};
      consts_[n.output(0)] = *v;
      if (std::find(varies.begin(), varies.end(), true) != varies.end()) varies_[n.output(0)] = varies;
      if (record_) record_->emplace(n.output(0), FoldedValue{n.SerializeAsString(), v->dims, v->v, std::move(varies)});
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
    if (v.type == onnx::TensorProto::INT32 || v.type == onnx::TensorProto::BOOL) {  // both in int32_data
      t.clear_int64_data();
      t.set_data_type(v.type);
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
    if (substitutes_)
      if (auto s = substitutes_->find(n.input(k)); s != substitutes_->end()) return &s->second;
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
    // starts/ends/axes/steps: inputs from opset 10, attributes (no steps) before.
    const int64_t rank = static_cast<int64_t>(x->dims.size());
    if (rank == 0) return std::nullopt;
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset_ < 10) {
      auto s = attr_ints(n, "starts"), e = attr_ints(n, "ends");
      if (!s || !e) return std::nullopt;
      starts = *s;
      ends = *e;
      axes = attr_ints(n, "axes").value_or(std::vector<int64_t>{});
    } else {
      const IntTensor *s = input(n, 1), *e = input(n, 2);
      if (!s || !e) return std::nullopt;
      starts = s->v;
      ends = e->v;
      if (has_input(n, 3)) {
        const IntTensor* a = input(n, 3);
        if (!a) return std::nullopt;
        axes = a->v;
      }
      if (has_input(n, 4)) {
        const IntTensor* st = input(n, 4);
        if (!st) return std::nullopt;
        steps = st->v;
      }
    }
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      return std::nullopt;
    // Per axis: the first index and the step; untouched axes keep every element.
    Shape first(rank, 0), step(rank, 1), dims = x->dims;
    std::vector<bool> seen(rank, false);
    for (size_t k = 0; k < starts.size(); ++k) {
      const int64_t a = norm_axis(axes[k], rank);
      if (a < 0 || a >= rank || seen[a] || steps[k] == 0) return std::nullopt;
      seen[a] = true;
      const int64_t extent = x->dims[a], st = steps[k];
      // ONNX's clamping: [0, extent] for positive steps, [-1, extent - 1] for negative ones.
      auto clamp = [&](int64_t v) {
        if (v < 0) v = v < -extent ? -extent - 1 : v + extent;  // without overflow for INT64_MIN
        return st > 0 ? std::clamp(v, int64_t{0}, extent) : std::clamp(v, int64_t{-1}, extent - 1);
      };
      const int64_t b = clamp(starts[k]), e = clamp(ends[k]);
      const __int128 span = st > 0 ? static_cast<__int128>(e) - b : static_cast<__int128>(b) - e;
      const __int128 mag = st > 0 ? st : -static_cast<__int128>(st);
      dims[a] = span <= 0 ? 0 : static_cast<int64_t>((span + mag - 1) / mag);
      first[a] = b;
      step[a] = st;
    }
    if (num_elements(dims) > kMaxFoldedElements) return std::nullopt;
    IntTensor y{dims, {}, x->type};
    Shape idx(rank, 0), strides(rank, 1);
    for (int64_t k = rank - 1; k > 0; --k) strides[k - 1] = strides[k] * x->dims[k];
    for (int64_t flat = 0; flat < num_elements(dims); ++flat) {
      int64_t at = 0;
      for (int64_t k = 0; k < rank; ++k) at += (first[k] + idx[k] * step[k]) * strides[k];
      y.v.push_back(x->v[static_cast<size_t>(at)]);
      next_index(idx, dims);
    }
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
    const bool logic = op == "And" || op == "Or" || op == "Xor";
    if (logic != (x->type == onnx::TensorProto::BOOL)) return std::nullopt;  // arithmetic on integers only
    const bool compare = op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" || op == "GreaterOrEqual";
    auto dims = broadcast(x->dims, b->dims);
    if (!dims || num_elements(*dims) > kMaxFoldedElements) return std::nullopt;
    IntTensor y{*dims, {}, compare ? onnx::TensorProto::BOOL : x->type};
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
      } else if (op == "Mod") {
        // fmod = 0: the result takes the divisor's sign (Python's %), as onnxruntime's integer Mod.
        if (q == 0 || attr_int(n, "fmod", 0) != 0 || (q == -1 && p == std::numeric_limits<int64_t>::min()))
          return std::nullopt;
        r = p % q;
        if (r != 0 && ((r < 0) != (q < 0))) r += q;
      } else if (op == "Min") r = std::min(p, q);
      else if (op == "Max") r = std::max(p, q);
      else if (op == "Equal") r = p == q;
      else if (op == "Less") r = p < q;
      else if (op == "LessOrEqual") r = p <= q;
      else if (op == "Greater") r = p > q;
      else if (op == "GreaterOrEqual") r = p >= q;
      else if (op == "And") r = p && q;
      else if (op == "Or") r = p || q;
      else if (op == "Xor") r = (p != 0) != (q != 0);
      else return std::nullopt;
      y.v.push_back(r);
      for (size_t k = idx.size(); k-- > 0;) {  // next multi-index
        if (++idx[k] < (*dims)[k]) break;
        idx[k] = 0;
      }
    }
    return y;
  }

  /// ConstantOfShape with an integer or boolean value (float fills are data, not shapes).
  std::optional<IntTensor> fold_constant_of_shape(const onnx::NodeProto& n) const {
    const IntTensor* shape = input(n, 0);
    if (!shape || shape->dims.size() != 1) return std::nullopt;
    for (int64_t d : shape->v)
      if (d < 0 || d > kMaxFoldedElements) return std::nullopt;
    if (num_elements(shape->v) > kMaxFoldedElements) return std::nullopt;
    IntTensor fill{{}, {0}, onnx::TensorProto::FLOAT};  // the default value is float 0: not folded
    if (const auto* a = find_attr(n, "value"); a && a->has_t()) {
      auto v = from_proto(a->t());
      if (!v || v->v.size() != 1) return std::nullopt;
      fill = *v;
    }
    if (!is_foldable_type(fill.type)) return std::nullopt;
    return IntTensor{shape->v, std::vector<int64_t>(static_cast<size_t>(num_elements(shape->v)), fill.v[0]), fill.type};
  }

  std::optional<IntTensor> fold_where(const onnx::NodeProto& n, const IntTensor* cond) const {
    const IntTensor *a = input(n, 1), *b = input(n, 2);
    if (!a || !b || cond->type != onnx::TensorProto::BOOL || a->type != b->type) return std::nullopt;
    auto ab = broadcast(a->dims, b->dims);
    auto dims = ab ? broadcast(cond->dims, *ab) : std::nullopt;
    if (!dims || num_elements(*dims) > kMaxFoldedElements) return std::nullopt;
    IntTensor y{*dims, {}, a->type};
    Shape idx(dims->size(), 0);
    for (int64_t flat = 0; flat < num_elements(*dims); ++flat) {
      y.v.push_back(cond->v[broadcast_index(cond->dims, idx)] ? a->v[broadcast_index(a->dims, idx)]
                                                              : b->v[broadcast_index(b->dims, idx)]);
      next_index(idx, *dims);
    }
    return y;
  }

  std::optional<IntTensor> fold_expand(const onnx::NodeProto& n, const IntTensor* x) const {
    const IntTensor* shape = input(n, 1);
    if (!shape || shape->dims.size() != 1) return std::nullopt;
    auto dims = broadcast(x->dims, shape->v);  // Expand broadcasts both ways (a 1 in `shape` keeps x's extent)
    if (!dims || num_elements(*dims) > kMaxFoldedElements) return std::nullopt;
    IntTensor y{*dims, {}, x->type};
    Shape idx(dims->size(), 0);
    for (int64_t flat = 0; flat < num_elements(*dims); ++flat) {
      y.v.push_back(x->v[broadcast_index(x->dims, idx)]);
      next_index(idx, *dims);
    }
    return y;
  }

  std::optional<IntTensor> fold_reshape(const onnx::NodeProto& n, const IntTensor* x) const {
    const IntTensor* target = input(n, 1);
    if (!target || target->dims.size() != 1) return std::nullopt;
    const bool allowzero = attr_int(n, "allowzero", 0) != 0;
    Shape dims = target->v;
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] == 0 && !allowzero) {
        if (k >= x->dims.size()) return std::nullopt;
        dims[k] = x->dims[k];
      }
      if (dims[k] == -1) {
        if (infer >= 0) return std::nullopt;
        infer = static_cast<int64_t>(k);
      } else if (dims[k] < 0) {
        return std::nullopt;
      } else {
        known *= dims[k];
      }
    }
    const int64_t count = num_elements(x->dims);
    if (infer >= 0) {
      if (known == 0 || count % known != 0) return std::nullopt;
      dims[infer] = count / known;
    }
    if (num_elements(dims) != count) return std::nullopt;
    return IntTensor{dims, x->v, x->type};
  }

  std::optional<IntTensor> fold_cumsum(const onnx::NodeProto& n, const IntTensor* x) const {
    const IntTensor* axis_input = input(n, 1);
    if (!axis_input || axis_input->v.size() != 1 || x->dims.empty() || x->type == onnx::TensorProto::BOOL)
      return std::nullopt;
    const int64_t rank = static_cast<int64_t>(x->dims.size()), axis = norm_axis(axis_input->v[0], rank);
    if (axis < 0 || axis >= rank) return std::nullopt;
    const bool exclusive = attr_int(n, "exclusive", 0) != 0, reverse = attr_int(n, "reverse", 0) != 0;
    const int64_t outer = num_elements(Shape(x->dims.begin(), x->dims.begin() + axis)), extent = x->dims[axis],
                  inner = num_elements(Shape(x->dims.begin() + axis + 1, x->dims.end()));
    IntTensor y = *x;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        uint64_t sum = 0;  // wraps on overflow, as the arithmetic above
        for (int64_t s = 0; s < extent; ++s) {
          const int64_t k = reverse ? extent - 1 - s : s, at = (o * extent + k) * inner + i;
          if (exclusive) {
            y.v[at] = static_cast<int64_t>(sum);
            sum += static_cast<uint64_t>(x->v[at]);
          } else {
            sum += static_cast<uint64_t>(x->v[at]);
            y.v[at] = static_cast<int64_t>(sum);
          }
        }
      }
    if (y.type == onnx::TensorProto::INT32)
      for (int64_t& e : y.v) e = static_cast<int32_t>(e);
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
    if (op == "ConstantOfShape") return fold_constant_of_shape(n);
    const IntTensor* x = input(n, 0);
    if (!x) return std::nullopt;
    if (op == "Identity") return *x;
    if (op == "Cast") {
      int64_t to = attr_int(n, "to", 0);
      if (!is_foldable_type(static_cast<int32_t>(to))) return std::nullopt;
      IntTensor y = *x;
      y.type = static_cast<int32_t>(to);
      if (to == onnx::TensorProto::INT32)
        for (int64_t& e : y.v) e = static_cast<int32_t>(e);
      if (to == onnx::TensorProto::BOOL)
        for (int64_t& e : y.v) e = e != 0;
      return y;
    }
    if (op == "Neg" || op == "Abs" || op == "Not") {
      if ((op == "Not") != (x->type == onnx::TensorProto::BOOL)) return std::nullopt;
      IntTensor y = *x;
      for (int64_t& e : y.v) {
        if (op != "Not" && e == std::numeric_limits<int64_t>::min()) return std::nullopt;
        e = op == "Neg" ? -e : op == "Abs" ? (e < 0 ? -e : e) : !e;
      }
      return y;
    }
    if (op == "Where") return fold_where(n, x);
    if (op == "Expand") return fold_expand(n, x);
    if (op == "Reshape") return fold_reshape(n, x);
    if (op == "CumSum") return fold_cumsum(n, x);
    if (op == "Unsqueeze") return fold_unsqueeze(n, x);
    if (op == "Squeeze") return fold_squeeze(n, x);
    if (op == "Concat") return fold_concat(n, x);
    if (op == "Gather") return fold_gather(n, x);
    if (op == "Slice") return fold_slice(n, x);
    if (op == "Range") return fold_range(n, x);
    return fold_binary(n, x);
  }
  /// Which elements of `n`'s folded value `v` vary with the symbolic dimensions (see fold_shapes.h).
  std::vector<bool> variation(const onnx::NodeProto& n, const IntTensor& v) {
    const std::string& op = n.op_type();
    const size_t count = v.v.size();
    const std::vector<bool> all(count, true), none(count, false);
    if (op == "Shape" || op == "Size") {
      auto it = probe_->find(n.output(0));
      if (it == probe_->end() || it->second.dims != v.dims) return all;
      std::vector<bool> out(count);
      for (size_t k = 0; k < count; ++k) out[k] = v.v[k] != it->second.values[k];
      return out;
    }
    auto varies_of = [&](const std::string& name) -> const std::vector<bool>* {
      auto it = varies_.find(name);
      return it == varies_.end() ? nullptr : &it->second;
    };
    static const std::unordered_set<std::string> elementwise{
        "Identity", "Cast", "Neg",  "Abs",  "Not",     "Add",         "Sub",     "Mul",
        "Div",      "Mod",  "Min",  "Max",  "Equal",   "Less",        "LessOrEqual",
        "Greater",  "GreaterOrEqual", "And", "Or",     "Xor",         "Where"};
    if (elementwise.count(op)) {
      // Output element at multi-index idx reads the broadcast element idx of each input, nothing else.
      std::vector<bool> out(count, false);
      for (int k = 0; k < n.input_size(); ++k) {
        const std::vector<bool>* in = varies_of(n.input(k));
        const IntTensor* x = input(n, k);
        if (!in) continue;
        if (!x) return all;
        Shape idx(v.dims.size(), 0);
        for (size_t flat = 0; flat < count; ++flat) {
          if ((*in)[static_cast<size_t>(broadcast_index(x->dims, idx))]) out[flat] = true;
          next_index(idx, v.dims);
        }
      }
      return out;
    }
    // Data movement: which inputs carry the data; the others (indices, shapes, axes) must not vary.
    std::vector<int> data;
    if (op == "Concat")
      for (int k = 0; k < n.input_size(); ++k) data.push_back(k);
    else if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Expand" || op == "Gather" || op == "Slice")
      data.push_back(0);
    bool any = false;
    for (int k = 0; k < n.input_size(); ++k) {
      if (!varies_of(n.input(k))) continue;
      any = true;
      if (std::find(data.begin(), data.end(), k) == data.end()) return all;  // moved by a varying index: all
    }
    if (!any) return none;
    // Evaluate the node once more on element identities (0, 1, 2, ... across its data inputs): each output
    // value then names the input element it was moved from.
    std::unordered_map<std::string, IntTensor> ids;
    std::vector<bool> source_varies;
    for (int k : data) {
      const std::string& name = n.input(k);
      const IntTensor* x = input(n, k);
      if (!x) return all;
      if (ids.count(name)) continue;
      IntTensor id{x->dims, {}, onnx::TensorProto::INT64};
      const std::vector<bool>* in = varies_of(name);
      for (size_t e = 0; e < x->v.size(); ++e) {
        id.v.push_back(static_cast<int64_t>(source_varies.size()));
        source_varies.push_back(in && (*in)[e]);
      }
      ids.emplace(name, std::move(id));
    }
    substitutes_ = &ids;
    std::optional<IntTensor> moved;
    try {
      moved = evaluate(n);
    } catch (const std::exception&) {
      moved.reset();
    }
    substitutes_ = nullptr;
    if (!moved || moved->v.size() != count) return all;
    std::vector<bool> out(count);
    for (size_t e = 0; e < count; ++e) {
      const int64_t source = moved->v[e];
      out[e] = source < 0 || source >= static_cast<int64_t>(source_varies.size()) || source_varies[source];
    }
    return out;
  }

  struct Known {
    int32_t elem_type = 0;
    std::optional<Shape> dims;
  };

  onnx::ModelProto& m_;
  FoldRecord* record_;
  bool strict_;
  const FoldRecord* probe_;  // the model folded at other sizes: the source of `varies` (none: not tracked)
  int64_t opset_;
  std::unordered_map<std::string, Known> types_;
  std::unordered_map<std::string, IntTensor> consts_;
  std::unordered_map<std::string, std::vector<bool>> varies_;  // folded values with a varying element
  const std::unordered_map<std::string, IntTensor>* substitutes_ = nullptr;  // inputs replaced in `variation`
};

}  // namespace

int fold_shape_arithmetic(onnx::ModelProto& model, FoldRecord* record, bool strict, const FoldRecord* probe) {
  return Folder(model, record, strict, probe).run();
}

}  // namespace teq::onnx_io::detail
