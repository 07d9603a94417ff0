#include "optimizer/onnx/onnx_import.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/fold_shapes.h"
#include "optimizer/onnx/detail/opset_adapt.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/semantics.h"

namespace teq::onnx_io {

namespace {

using namespace detail;

/// Thrown inside a node mapper when the node does not fit the vocabulary; the node becomes opaque.
struct NotInVocabulary {
  std::string reason;
};

struct ValueType {
  int32_t elem_type = 0;
  std::optional<Shape> shape;  // nullopt when some dimension is unknown
};

ValueType value_type(const onnx::TypeProto& t) {
  ValueType v;
  if (!t.has_tensor_type()) return v;
  v.elem_type = t.tensor_type().elem_type();
  if (!t.tensor_type().has_shape()) return v;
  Shape s;
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return v;
    s.push_back(d.dim_value());
  }
  v.shape = s;
  return v;
}

std::string describe(const onnx::NodeProto& n) {
  return "node '" + (n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name()) + "' (" +
         n.op_type() + ")";
}

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

class Importer {
 public:
  Importer(onnx::ModelProto& proto, std::string origin, const ImportOptions& options, std::filesystem::path dir)
      : proto_(proto), options_(options), dir_(std::move(dir)) {
    m_.source = std::move(origin);
  }

  OnnxModel run() {
    check_header();
    make_shell();
    m_.external_data = load_external_data(proto_, dir_, m_.source);
    bind_symbolic_dims();
    // Opsets 18..21 are read through the library's opset-17 schemas: nodes in their opset-17 form from here
    // on (m_.opset stays the model's, for export; opaque nodes export their original protos). After the
    // dimensions are bound: an uneven Split-18 needs its input's extent.
    if (m_.opset > kLibraryOpset) adapted_ = adapt_to_library_opset(proto_, m_.source);
    check_nodes();
    fold_shape_arithmetic(proto_);  // integer shape arithmetic of fixed shapes -> Constant nodes
    infer_shapes();
    onnx::GraphProto& g = *proto_.mutable_graph();
    collect_used(g);
    for (const auto& init : g.initializer()) add_initializer(init);
    for (const auto& in : g.input()) add_graph_input(in);
    for (const auto& node : g.node()) import_node(node);
    for (const auto& out : g.output()) add_graph_output(out);
    compact();
    return std::move(m_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw OnnxError(m_.source + ": " + what); }

  void check_header() {
    if (!proto_.has_graph() || proto_.ir_version() <= 0 || proto_.opset_import_size() == 0)
      fail("not an ONNX model (no graph, IR version or opset import)");
    m_.opset = default_opset(proto_);
    if (m_.opset == 0) fail("the model imports no version of the default ONNX domain");
    if (m_.opset < kMinOpset || m_.opset > kMaxOpset)
      fail("unsupported opset " + std::to_string(m_.opset) + " (supported: " + std::to_string(kMinOpset) + " to " +
           std::to_string(kMaxOpset) + ")");
    for (const auto& node : proto_.graph().node())
      for (const auto& a : node.attribute())
        if (a.has_g() || a.graphs_size() > 0)
          fail(describe(node) + " has a subgraph; control flow (If, Loop, Scan) is not supported");
  }

  void make_shell() {
    onnx::ModelProto shell = proto_;
    shell.mutable_graph()->clear_node();
    shell.mutable_graph()->clear_initializer();
    shell.mutable_graph()->clear_value_info();
    m_.shell = shell.SerializeAsString();
  }

  void bind_symbolic_dims() {
    onnx::GraphProto& g = *proto_.mutable_graph();
    std::unordered_set<std::string> inits;
    for (const auto& t : g.initializer()) inits.insert(t.name());
    // Dimensions given by input and axis (--dim INPUT:AXIS=VALUE), with the axis made non-negative.
    std::map<std::pair<std::string, int64_t>, int64_t> by_axis;
    for (const auto& [key, value] : options_.axis_dims) {
      const std::string option = "--dim " + key.input + ":" + std::to_string(key.axis) + "=" + std::to_string(value);
      const onnx::ValueInfoProto* input = nullptr;
      std::string names;
      for (const auto& in : g.input()) {
        if (inits.count(in.name())) continue;
        names += (names.empty() ? "" : ", ") + in.name();
        if (in.name() == key.input) input = &in;
      }
      if (!input) fail(option + ": the model has no graph input '" + key.input + "' (its inputs: " + names + ")");
      const int64_t rank = input->type().tensor_type().has_shape() ? input->type().tensor_type().shape().dim_size() : -1;
      if (rank < 0) fail(option + ": graph input '" + key.input + "' declares no shape");
      if (key.axis < -rank || key.axis >= rank)
        fail(option + ": graph input '" + key.input + "' has " + std::to_string(rank) + " dimensions, so the axis must be in " +
             std::to_string(-rank) + ".." + std::to_string(rank - 1));
      by_axis[{key.input, key.axis < 0 ? key.axis + rank : key.axis}] = value;
    }
    for (auto& in : *g.mutable_input()) {
      if (inits.count(in.name())) continue;
      if (!in.type().has_tensor_type()) fail("graph input '" + in.name() + "' is not a tensor");
      if (!in.type().tensor_type().has_shape()) fail("graph input '" + in.name() + "' has no shape");
      auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
      for (int64_t k = 0; k < shape->dim_size(); ++k) {
        auto& d = *shape->mutable_dim(static_cast<int>(k));
        if (auto it = by_axis.find({in.name(), k}); it != by_axis.end()) {
          if (d.has_dim_value() && d.dim_value() != it->second)
            fail("--dim " + in.name() + ":" + std::to_string(k) + "=" + std::to_string(it->second) + ": dimension " +
                 std::to_string(k) + " of graph input '" + in.name() + "' is fixed at " + std::to_string(d.dim_value()));
          d.set_dim_value(it->second);
          continue;
        }
        if (d.has_dim_value()) continue;
        std::string sym = d.has_dim_param() ? d.dim_param() : std::string();
        auto it = options_.dims.find(sym);
        int64_t value = it != options_.dims.end() ? it->second : options_.default_dim;
        if (value <= 0) {
          // An unnamed dimension has no NAME to give: it is given by input and axis.
          if (sym.empty())
            fail("graph input '" + in.name() + "' has an unnamed symbolic dimension (axis " + std::to_string(k) +
                 "); give it a value (eqsat-run --dim " + in.name() + ":" + std::to_string(k) + "=VALUE)");
          fail("graph input '" + in.name() + "' has a symbolic dimension '" + sym + "'; give it a value (eqsat-run --dim " +
               sym + "=VALUE)");
        }
        d.set_dim_value(value);
      }
    }
    // Declared intermediate shapes may hold the symbols just bound; inference recomputes them.
    g.clear_value_info();
  }

  /// Before shape inference: nodes in topological order (which also rules out cycles), and every node of the
  /// default domain an operator of the model's opset with inputs, outputs and attributes its schema allows.
  void check_nodes() {
    const onnx::GraphProto& g = proto_.graph();
    const int64_t schema_opset = default_opset(proto_);  // kLibraryOpset for a model of a newer opset
    std::unordered_set<std::string> defined;
    std::unordered_map<std::string, const onnx::NodeProto*> producer;
    for (const auto& t : g.initializer()) defined.insert(t.name());
    for (const auto& in : g.input()) defined.insert(in.name());
    for (const auto& n : g.node())
      for (const auto& out : n.output()) producer.emplace(out, &n);
    for (const auto& n : g.node()) {
      for (const auto& in : n.input()) {
        if (in.empty() || defined.count(in)) continue;
        auto it = producer.find(in);
        if (it == producer.end())
          fail(describe(n) + " reads '" + in + "', which no node, input or initializer defines");
        fail(describe(n) + " reads '" + in + "' before " + describe(*it->second) +
             " computes it: the graph has a cycle or is not in topological order");
      }
      for (const auto& out : n.output()) defined.insert(out);
      if (!is_default_domain(n.domain())) continue;
      const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(schema_opset), "");
      if (!schema)
        fail(describe(n) + ": '" + n.op_type() + "' is not an operator of ONNX opset " + std::to_string(m_.opset) +
             " (custom operators need their own domain)");
      try {
        schema->Verify(n);
      } catch (const std::exception& e) {
        fail(describe(n) + " does not fit its ONNX schema: " + e.what());
      }
      // Window sizes ONNX's schemas do not bound (its shape inference would compute negative extents).
      for (const auto& a : n.attribute()) {
        if (a.name() != "strides" && a.name() != "kernel_shape" && a.name() != "dilations") continue;
        for (int64_t v : a.ints())
          if (v < 1) fail(describe(n) + ": attribute '" + a.name() + "' holds " + std::to_string(v) + "; it must be >= 1");
      }
    }
  }

  void infer_shapes() {
    // Strict inference (errors of any node throw) when every node has an ONNX schema, so that a real shape
    // mismatch is reported; with custom-domain operators, whose outputs ONNX cannot type, node errors are
    // left to the checks below (shape_of says which tensor has no shape).
    bool all_known = true;
    for (const auto& n : proto_.graph().node()) all_known &= is_default_domain(n.domain());
    try {
      onnx::shape_inference::InferShapes(proto_, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, all_known ? 1 : 0, true));
    } catch (const std::exception& e) {
      std::string what = e.what();
      while (!what.empty() && what.back() == '\n') what.pop_back();
      fail("ONNX shape inference failed: " + what);
    }
    const onnx::GraphProto& g = proto_.graph();
    for (const auto& t : g.initializer()) types_[t.name()] = {t.data_type(), tensor_dims(t)};
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
      for (const auto& vi : *list) {
        if (!types_.count(vi.name()) || !types_[vi.name()].shape) types_[vi.name()] = value_type(vi.type());
        const ValueType& v = types_[vi.name()];
        if (v.shape && num_elements(*v.shape) > kMaxElements)
          fail("tensor '" + vi.name() + "' of shape " + to_string(*v.shape) +
               " has more than 2^40 elements, the largest tensor tensor-eqsat handles");
      }
  }

  void collect_used(const onnx::GraphProto& g) {
    for (const auto& n : g.node()) {
      for (const auto& in : n.input()) used_.insert(in), ++readers_[in];
      for (const auto& out : n.output()) producer_[out] = &n;
    }
    for (const auto& out : g.output()) used_.insert(out.name()), ++readers_[out.name()];
    // An adapted node that stays opaque is exported with its original inputs (GroupNormalization's scale,
    // say, which its opset-17 stand-in does not read): those are used too.
    for (const auto& [_, a] : adapted_) {
      onnx::NodeProto original;
      if (original.ParseFromString(a.original))
        for (const auto& in : original.input()) used_.insert(in);
    }
  }

  /// Shape of a tensor the import needs; error when inference could not determine it.
  const Shape& shape_of(const std::string& name, const onnx::NodeProto* producer) {
    auto it = types_.find(name);
    if (it == types_.end() || !it->second.shape)
      fail("cannot infer the shape of '" + name + "'" + (producer ? " (output of " + describe(*producer) + ")" : "") +
           "; ONNX shape inference left it unknown");
    return *it->second.shape;
  }
  int32_t elem_type(const std::string& name) const {
    auto it = types_.find(name);
    return it == types_.end() ? 0 : it->second.elem_type;
  }

  // ---- Expr building -------------------------------------------------------------------------------

  ExprId add_leaf(OpKind op, const std::string& name, const Shape& dims) {
    ExprId id = m_.graph.add(ExprNode{op, dims, {}, name});
    record_shape(id, dims);
    return id;
  }
  /// Adds an operator node; ShapeError (the mapping does not fit) propagates to the caller.
  ExprId add(OpKind op, std::vector<int64_t> attrs, std::vector<ExprId> kids) {
    std::vector<Shape> in;
    for (ExprId k : kids) in.push_back(shapes_[k.value]);
    Shape s = infer_shape(op, attrs, in);
    ExprId id = m_.graph.add(op, std::move(attrs), std::move(kids));
    record_shape(id, s);
    return id;
  }
  void record_shape(ExprId id, const Shape& s) {
    if (id.value == shapes_.size()) shapes_.push_back(s);
  }
  ExprId weight(const std::string& name, Tensor<float> value) {
    Shape dims = value.shape;
    m_.weights.insert_or_assign(name, std::move(value));
    return add_leaf(OpKind::Weight, name, dims);
  }
  /// A new 0-d weight holding `v`, named uniquely after `hint`.
  ExprId scalar_weight(const std::string& hint, float v) {
    std::string name = unique_name(hint);
    return weight(name, Tensor<float>(Shape{}, std::vector<float>{v}));
  }
  std::string unique_name(const std::string& hint) {
    std::string name = hint;
    for (int k = 1; types_.count(name) || m_.weights.count(name) || new_names_.count(name); ++k)
      name = hint + "_" + std::to_string(k);
    new_names_.insert(name);
    return name;
  }

  // ---- initializers, inputs, outputs ---------------------------------------------------------------

  void add_initializer(const onnx::TensorProto& t) {
    Shape dims = tensor_dims(t);
    constants_[t.name()] = &t;
    bool zero_size = num_elements(dims) == 0;
    if (t.data_type() == onnx::TensorProto::FLOAT && !zero_size) {
      try {
        values_[t.name()] = weight(t.name(), Tensor<float>(dims, tensor_floats(t)));
      } catch (const OnnxError& e) {
        fail(e.what());
      }
    } else {
      m_.passthrough[t.name()] = t.SerializeAsString();
    }
  }

  void add_graph_input(const onnx::ValueInfoProto& in) {
    TensorInfo info{in.name(), elem_type(in.name()), {}, false};
    if (constants_.count(in.name())) {
      // Weights may be declared as graph inputs too (old exporters); they stay weights and stay declared.
      info.is_weight = true;
      info.shape = tensor_dims(*constants_[in.name()]);
      constants_.erase(in.name());  // overridable at run time: not a constant for shape arguments
    } else {
      info.shape = shape_of(in.name(), nullptr);
      if (num_elements(info.shape) == 0) fail("graph input '" + in.name() + "' has a zero-size dimension");
      values_[in.name()] = add_leaf(OpKind::Input, in.name(), info.shape);
    }
    m_.inputs.push_back(info);
  }

  void add_graph_output(const onnx::ValueInfoProto& out) {
    auto it = values_.find(out.name());
    if (it == values_.end())
      fail("graph output '" + out.name() + "' is not computed by the graph (or is a non-float initializer)");
    m_.outputs.push_back({out.name(), elem_type(out.name()), shapes_[it->second.value], false});
    m_.graph.add_root(it->second);
  }

  // ---- nodes ---------------------------------------------------------------------------------------

  void import_node(const onnx::NodeProto& n) {
    for (const auto& in : n.input())
      if (!in.empty() && !values_.count(in) && !m_.passthrough.count(in))
        fail(describe(n) + " reads '" + in + "', which no earlier node, input or initializer defines");
    const AdaptedNode* adapted = adapted_node(n);
    if (adapted && adapted->stand_in) {
      // An operator newer than opset 17 whose working node only carries its shapes: named as the model has it.
      onnx::NodeProto original;
      original.ParseFromString(adapted->original);
      try {
        if (adapted->gelu && import_gelu(n)) return;
        if (original.op_type() == "Gelu")
          note_opaque(original, "approximate='" + attr_string(original, "approximate", "none") +
                                    "' is not the vocabulary's gelu (the exact erf form)");
      } catch (const NotInVocabulary& e) {
        note_opaque(original, e.reason);
      } catch (const ShapeError& e) {
        note_opaque(original, std::string("shape mismatch: ") + e.what());
      }
    } else if (is_default_domain(n.domain())) {
      try {
        if (import_vocabulary(n)) return;
        note_opaque(n, "");
      } catch (const NotInVocabulary& e) {
        note_opaque(n, e.reason);
      } catch (const ShapeError& e) {
        note_opaque(n, std::string("shape mismatch: ") + e.what());
      } catch (const OnnxError& e) {
        note_opaque(n, e.what());
      }
    } else {
      note_opaque(n, "");
    }
    import_opaque(n);
  }

  void note_opaque(const onnx::NodeProto& n, const std::string& reason) {
    if (!reason.empty()) m_.notes.push_back(describe(n) + " stays opaque: " + reason);
  }

  /// The Expr value of input k, which the mapping needs as a float tensor.
  ExprId in(const onnx::NodeProto& n, int k) {
    if (k >= n.input_size() || n.input(k).empty()) throw NotInVocabulary{"input " + std::to_string(k) + " missing"};
    const std::string& name = n.input(k);
    auto it = values_.find(name);
    if (it == values_.end() || elem_type(name) != onnx::TensorProto::FLOAT)
      throw NotInVocabulary{"input '" + name + "' is not a float tensor"};
    return it->second;
  }
  bool has_input(const onnx::NodeProto& n, int k) const { return k < n.input_size() && !n.input(k).empty(); }
  /// Values of a constant input (initializer or Constant), or nullopt.
  std::optional<std::vector<double>> const_input(const onnx::NodeProto& n, int k) {
    if (!has_input(n, k)) return std::nullopt;
    auto it = constants_.find(n.input(k));
    if (it == constants_.end()) return std::nullopt;
    return tensor_numbers(*it->second);
  }
  const Shape& out_shape(const onnx::NodeProto& n, int k = 0) { return shape_of(n.output(k), &n); }
  void set_output(const onnx::NodeProto& n, ExprId id, int k = 0) {
    const Shape& expected = out_shape(n, k);
    if (shapes_[id.value] != expected)
      throw NotInVocabulary{"mapped shape " + to_string(shapes_[id.value]) + " differs from ONNX's " +
                            to_string(expected)};
    pending_.emplace_back(n.output(k), id);
  }
  ExprId broadcast_to(ExprId x, const Shape& target) {
    if (shapes_[x.value] == target) return x;
    std::vector<int64_t> attrs(target.begin(), target.end());
    return add(OpKind::Broadcast, attrs, {x});
  }
  /// Only output 0 may be used (optional extra outputs such as MaxPool's indices make it opaque).
  void require_single_output(const onnx::NodeProto& n) {
    for (int k = 1; k < n.output_size(); ++k)
      if (!n.output(k).empty() && used_.count(n.output(k)))
        throw NotInVocabulary{"optional output '" + n.output(k) + "' is used"};
  }

  /// One spatial axis of a window op: ONNX (pad_begin, pad_end) -> our padding attribute (-1 = SAME).
  /// `conv`: a convolution, whose rules are written with SAME wherever SAME is what it computes, also
  /// where SAME pads nothing (a 1x1 kernel); pooling rules keep an explicit 0 there (optimizer/models).
  std::optional<int64_t> map_padding(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool conv) {
    // Canonical form first: explicit pads that are SAME padding (PyTorch's padding=k//2 at stride 1) become
    // SAME, the form the rules are written in, so one rule matches every encoding of the same convolution.
    int64_t out_same = (in + s - 1) / s, total = std::max<int64_t>((out_same - 1) * s + k - in, 0);
    if (pb == total / 2 && pe == total - total / 2 && (total > 0 || conv)) return -1;
    if (pb == pe) return pb;
    // Asymmetric padding that produces as many outputs as symmetric pb places every window identically.
    if (in + 2 * pb >= k && (in + pb + pe - k) / s == (in + 2 * pb - k) / s) return pb;
    return std::nullopt;
  }

  /// Our (stride h, stride w, pad h, pad w, dilation h, dilation w) of Conv/MaxPool/AveragePool on a
  /// [N,C,H,W] input; only a Conv may be dilated (the pools of the vocabulary are not).
  /// `extra`: zero padding (ONNX order h_begin, w_begin, h_end, w_end) of a Pad folded into the window.
  std::array<int64_t, 6> window_attrs(const onnx::NodeProto& n, const Shape& x, int64_t kh, int64_t kw,
                                      bool dilation_allowed = false,
                                      const std::array<int64_t, 4>& extra = {0, 0, 0, 0}) {
    std::vector<int64_t> dilations = attr_ints(n, "dilations").value_or(std::vector<int64_t>{1, 1});
    if (dilations.size() != 2) throw NotInVocabulary{"dilations are not 2-d"};
    if (!dilation_allowed && (dilations[0] != 1 || dilations[1] != 1)) throw NotInVocabulary{"dilations other than 1"};
    std::vector<int64_t> strides = attr_ints(n, "strides").value_or(std::vector<int64_t>{1, 1});
    std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
    if (strides.size() != 2 || pads.size() != 4) throw NotInVocabulary{"strides/pads are not 2-d"};
    const int64_t kernel[2] = {ops::dilated_extent(kh, dilations[0]), ops::dilated_extent(kw, dilations[1])};
    std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
    if (extra != std::array<int64_t, 4>{0, 0, 0, 0}) {
      if (auto_pad != "NOTSET") throw NotInVocabulary{"a Pad before auto_pad " + auto_pad};
      for (int k = 0; k < 4; ++k) pads[k] += extra[k];
    }
    std::array<int64_t, 6> out{strides[0], strides[1], 0, 0, dilations[0], dilations[1]};
    for (int a = 0; a < 2; ++a) {
      int64_t in = x[2 + a], s = strides[a], pb = pads[a], pe = pads[a + 2];
      if (auto_pad == "VALID") {
        pb = pe = 0;
      } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        int64_t total = std::max<int64_t>(((in + s - 1) / s - 1) * s + kernel[a] - in, 0);
        pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe = total - pb;
      } else if (auto_pad != "NOTSET") {
        throw NotInVocabulary{"auto_pad " + auto_pad};
      }
      auto p = map_padding(in, kernel[a], s, pb, pe, n.op_type() == "Conv");
      if (!p) throw NotInVocabulary{"asymmetric padding"};
      out[2 + a] = *p;
    }
    return out;
  }

  /// Maps a default-domain node onto the vocabulary; false when the operator is outside it.
  bool import_vocabulary(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    pending_.clear();
    if (op == "Constant") return import_constant(n);
    for (const auto& out : n.output())
      if (!out.empty() && elem_type(out) != onnx::TensorProto::FLOAT && used_.count(out))
        throw NotInVocabulary{"output '" + out + "' is not a float tensor"};
    if (op == "Identity" || op == "Dropout") {
      require_single_output(n);
      if (op == "Dropout" && has_input(n, 2)) {
        auto training = const_input(n, 2);
        if (!training || (!training->empty() && (*training)[0] != 0)) throw NotInVocabulary{"training mode"};
      }
      alias(n, in(n, 0));
    } else if (op == "Relu" || op == "Sigmoid" || op == "Tanh") {
      OpKind k = op == "Relu" ? OpKind::Relu : op == "Sigmoid" ? OpKind::Sigmoid : OpKind::Tanh;
      set_output(n, add(k, {}, {in(n, 0)}));
    } else if (op == "Clip") {
      double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
      if (m_.opset < 11) {
        lo = attr_float(n, "min", -FLT_MAX);
        hi = attr_float(n, "max", FLT_MAX);
      } else {
        for (int k : {1, 2}) {
          if (!has_input(n, k)) continue;
          auto v = const_input(n, k);
          if (!v || v->size() != 1) throw NotInVocabulary{"non-constant clip bounds"};
          (k == 1 ? lo : hi) = (*v)[0];
        }
      }
      import_clip(n, lo, hi);
    } else if (op == "Mul" && import_erf_gelu(n)) {
      // PyTorch's exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)): the vocabulary's gelu
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
      import_binary(n);
    } else if (op == "MatMul") {
      ExprId a = in(n, 0), b = in(n, 1);
      if (shapes_[a.value].size() < 2 || shapes_[b.value].size() < 2) throw NotInVocabulary{"1-d operand"};
      set_output(n, add(OpKind::Matmul, {0}, {a, b}));
    } else if (op == "Gemm") {
      import_gemm(n);
    } else if (op == "Conv") {
      import_conv(n);
    } else if (op == "MaxPool" || op == "AveragePool") {
      require_single_output(n);
      ExprId x = in(n, 0);
      const Shape& xs = shapes_[x.value];
      auto kernel = attr_ints(n, "kernel_shape");
      if (xs.size() != 4 || !kernel || kernel->size() != 2) throw NotInVocabulary{"not a 2-d pooling"};
      if (attr_int(n, "storage_order", 0) != 0) throw NotInVocabulary{"storage_order"};
      int64_t include_pad = attr_int(n, "count_include_pad", 0) != 0 ? 1 : 0;
      std::optional<std::array<int64_t, 6>> w;
      if (op == "AveragePool") {
        // A zero Pad of the spatial axes before it (PyTorch's avg_pool2d(padding=p) with count_include_pad)
        // is the pooling's own padding counted in the divisor: every window then holds kh*kw elements,
        // real or padded, so it divides by kh*kw. That needs the pooling's own pads to be counted as well
        // (count_include_pad=1) or absent.
        auto own = attr_ints(n, "pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
        const bool no_own = std::all_of(own.begin(), own.end(), [](int64_t p) { return p == 0; });
        if (auto f = foldable_pad(x); f && (include_pad || no_own)) {
          try {
            w = window_attrs(n, shapes_[f->x.value], (*kernel)[0], (*kernel)[1], /*dilation_allowed=*/false, f->pads);
            x = f->x;
            include_pad = 1;
          } catch (const NotInVocabulary&) {
            // not expressible as our symmetric or SAME padding: the Pad stays a node of its own
          }
        }
      }
      if (!w) w = window_attrs(n, xs, (*kernel)[0], (*kernel)[1]);
      std::vector<int64_t> attrs{(*kernel)[0], (*kernel)[1], (*w)[0], (*w)[1], (*w)[2], (*w)[3]};
      if (op == "AveragePool") attrs.push_back(include_pad);
      set_output(n, add(op == "MaxPool" ? OpKind::MaxPool : OpKind::AvgPool, attrs, {x}));
    } else if (op == "GlobalAveragePool") {
      ExprId x = in(n, 0);
      if (shapes_[x.value].size() != 4) throw NotInVocabulary{"not 2-d"};
      set_output(n, add(OpKind::GlobalAvgPool, {}, {x}));
    } else if (op == "Concat") {
      std::vector<ExprId> kids;
      for (int k = 0; k < n.input_size(); ++k) kids.push_back(in(n, k));
      auto axis = find_attr(n, "axis");
      if (!axis) throw NotInVocabulary{"no axis"};
      set_output(n, kids.size() == 1 ? kids[0] : add(OpKind::Concat, {axis->i()}, kids));
    } else if (op == "Split") {
      ExprId x = in(n, 0);
      const Shape xs = shapes_[x.value];  // a copy: add() below grows shapes_
      int64_t axis = normalize_axis(attr_int(n, "axis", 0), xs.size(), "Split", {});
      int64_t begin = 0;
      for (int k = 0; k < n.output_size(); ++k) {
        int64_t size = out_shape(n, k)[axis];
        set_output(n, size == xs[axis] ? x : add(OpKind::Slice, {axis, begin, begin + size}, {x}), k);
        begin += size;
      }
    } else if (op == "Slice") {
      import_slice(n);
    } else if (op == "Transpose") {
      ExprId x = in(n, 0);
      size_t rank = shapes_[x.value].size();
      std::vector<int64_t> perm;
      for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
      perm = attr_ints(n, "perm").value_or(perm);
      bool identity = true;
      for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
      set_output(n, identity ? x : add(OpKind::Transpose, perm, {x}));
    } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
      // ONNX shape inference already resolved -1, 0 and the axes: the output shape is the reshape.
      ExprId x = in(n, 0);
      const Shape& s = out_shape(n);
      if (s == shapes_[x.value]) {
        set_output(n, x);
      } else {
        set_output(n, add(OpKind::Reshape, std::vector<int64_t>(s.begin(), s.end()), {x}));
        m_.reshapes.push_back({n.output(0), shapes_[x.value], s});
      }
    } else if (op == "Sqrt" || op == "Erf") {
      set_output(n, add(op == "Sqrt" ? OpKind::Sqrt : OpKind::Erf, {}, {in(n, 0)}));
    } else if (op == "Pow") {
      import_pow(n);
    } else if (op == "ReduceMean") {
      import_reduce_mean(n);
    } else if (op == "Pad") {
      import_pad(n);
    } else if (op == "LayerNormalization") {
      import_layernorm(n);
    } else if (op == "BatchNormalization") {
      import_batchnorm(n);
    } else if (op == "Softmax") {
      ExprId x = in(n, 0);
      size_t rank = shapes_[x.value].size();
      int64_t axis = normalize_axis(attr_int(n, "axis", m_.opset >= 13 ? -1 : 1), rank, "Softmax", {});
      // Before opset 13 Softmax flattens to 2-d at `axis`: the same as ours only on the last axis.
      if (m_.opset < 13 && axis != static_cast<int64_t>(rank) - 1)
        throw NotInVocabulary{"opset < 13 softmax over more than the last axis"};
      set_output(n, add(OpKind::Softmax, {axis}, {x}));
    } else {
      return false;
    }
    for (const auto& [name, id] : pending_) values_[name] = id;
    return true;
  }

  void alias(const onnx::NodeProto& n, ExprId x) { pending_.emplace_back(n.output(0), x); }

  bool import_constant(const onnx::NodeProto& n) {
    const auto* value = find_attr(n, "value");
    if (!value || !value->has_t()) throw NotInVocabulary{"Constant without a tensor 'value'"};
    onnx::TensorProto t = value->t();
    t.set_name(n.output(0));
    Shape dims = tensor_dims(t);
    constant_storage_.push_back(std::make_unique<onnx::TensorProto>(t));
    constants_[t.name()] = constant_storage_.back().get();
    if (t.data_type() == onnx::TensorProto::FLOAT && num_elements(dims) > 0)
      values_[t.name()] = weight(t.name(), Tensor<float>(dims, tensor_floats(t)));
    else
      m_.passthrough[t.name()] = t.SerializeAsString();
    return true;
  }

  /// Whether input k is a constant whose every element is `v`.
  bool constant_all(const onnx::NodeProto& n, int k, double v) {
    auto values = const_input(n, k);
    return values && !values->empty() && std::all_of(values->begin(), values->end(), [v](double x) { return x == v; });
  }

  void import_binary(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    ExprId a = in(n, 0), b = in(n, 1);
    const Shape& out = out_shape(n);
    // Canonical form: x*1, 1*x, x/1, x+0, 0+x and x-0 are x (when x already has the output's shape).
    const bool mul_or_div = op == "Mul" || op == "Div", add_or_sub = op == "Add" || op == "Sub";
    for (int k : {1, 0}) {
      if (k == 0 && (op == "Div" || op == "Sub")) continue;
      ExprId keep = k == 1 ? a : b;
      if (shapes_[keep.value] == out && ((mul_or_div && constant_all(n, k, 1)) || (add_or_sub && constant_all(n, k, 0)))) {
        m_.folded.push_back(describe(n) + ": " + (mul_or_div ? "a factor of one" : "a term of zero") + " removed");
        return alias(n, keep);
      }
    }
    if (op == "Mul" && shapes_[b.value].empty() && shapes_[a.value] == out) return set_output(n, add(OpKind::Smul, {}, {a, b}));
    if (op == "Mul" && shapes_[a.value].empty() && shapes_[b.value] == out) return set_output(n, add(OpKind::Smul, {}, {b, a}));
    OpKind k = op == "Add" ? OpKind::EwAdd : op == "Sub" ? OpKind::EwSub : op == "Mul" ? OpKind::EwMul : OpKind::EwDiv;
    set_output(n, add(k, {}, {broadcast_to(a, out), broadcast_to(b, out)}));
  }

  void import_gemm(const onnx::NodeProto& n) {
    ExprId a = in(n, 0), b = in(n, 1);
    if (shapes_[a.value].size() != 2 || shapes_[b.value].size() != 2) throw NotInVocabulary{"operands not 2-d"};
    if (attr_int(n, "transA", 0)) a = add(OpKind::Transpose, {1, 0}, {a});
    if (attr_int(n, "transB", 0)) b = add(OpKind::Transpose, {1, 0}, {b});
    ExprId y = add(OpKind::Matmul, {0}, {a, b});
    const std::string hint = n.output(0);
    if (float alpha = attr_float(n, "alpha", 1.0f); alpha != 1.0f) y = add(OpKind::Smul, {}, {y, scalar_weight(hint + ".alpha", alpha)});
    if (has_input(n, 2)) {
      ExprId c = in(n, 2);
      if (float beta = attr_float(n, "beta", 1.0f); beta != 1.0f) c = add(OpKind::Smul, {}, {c, scalar_weight(hint + ".beta", beta)});
      y = add(OpKind::EwAdd, {}, {y, broadcast_to(c, shapes_[y.value])});
    }
    set_output(n, y);
  }

  void import_conv(const onnx::NodeProto& n) {
    ExprId x = in(n, 0), w = in(n, 1);
    const Shape xs = shapes_[x.value], ws = shapes_[w.value];  // copies: add() grows shapes_
    if (xs.size() != 4 || ws.size() != 4) throw NotInVocabulary{"not a 2-d convolution"};
    std::optional<std::array<int64_t, 6>> folded;
    if (auto f = foldable_pad(x)) {
      // A zero Pad of the spatial axes is the convolution's own zero padding.
      try {
        folded = window_attrs(n, shapes_[f->x.value], ws[2], ws[3], /*dilation_allowed=*/true, f->pads);
        x = f->x;
      } catch (const NotInVocabulary&) {
        // not expressible as our padding: the Pad stays a node of its own
      }
    }
    auto a = folded ? *folded : window_attrs(n, xs, ws[2], ws[3], /*dilation_allowed=*/true);
    ExprId y = add(OpKind::Conv2d, ops::conv2d_attr_list({a[0], a[1], a[2], a[3], Activation::None, a[4], a[5]}), {x, w});
    if (has_input(n, 2)) {
      // Bias [O] -> [O,1,1], broadcast over N, H, W.
      ExprId bias = add(OpKind::Reshape, {ws[0], 1, 1}, {in(n, 2)});
      y = add(OpKind::EwAdd, {}, {y, broadcast_to(bias, shapes_[y.value])});
    }
    set_output(n, y);
  }

  void import_slice(const onnx::NodeProto& n) {
    ExprId x = in(n, 0);
    const Shape xs = shapes_[x.value];
    std::vector<double> starts, ends, axes, steps;
    if (m_.opset < 10) {
      auto s = attr_ints(n, "starts"), e = attr_ints(n, "ends");
      if (!s || !e) throw NotInVocabulary{"no starts/ends"};
      starts.assign(s->begin(), s->end());
      ends.assign(e->begin(), e->end());
      if (auto ax = attr_ints(n, "axes")) axes.assign(ax->begin(), ax->end());
    } else {
      auto s = const_input(n, 1), e = const_input(n, 2);
      if (!s || !e) throw NotInVocabulary{"non-constant starts/ends"};
      starts = *s;
      ends = *e;
      if (has_input(n, 3)) {
        auto ax = const_input(n, 3);
        if (!ax) throw NotInVocabulary{"non-constant axes"};
        axes = *ax;
      }
      if (has_input(n, 4)) {
        auto st = const_input(n, 4);
        if (!st) throw NotInVocabulary{"non-constant steps"};
        steps = *st;
      }
    }
    if (axes.empty())
      for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<double>(d));
    ExprId y = x;
    for (size_t k = 0; k < starts.size(); ++k) {
      if (!steps.empty() && steps[k] != 1) throw NotInVocabulary{"step other than 1"};
      int64_t axis = normalize_axis(static_cast<int64_t>(axes[k]), xs.size(), "Slice", {});
      double extent = static_cast<double>(xs[axis]);
      auto clamp = [&](double v) { return std::clamp(v < 0 ? v + extent : v, 0.0, extent); };
      int64_t b = static_cast<int64_t>(clamp(starts[k])), e = static_cast<int64_t>(clamp(ends[k]));
      if (b >= e) throw NotInVocabulary{"empty slice"};
      if (b == 0 && e == xs[axis]) continue;
      y = add(OpKind::Slice, {axis, b, e}, {y});
    }
    set_output(n, y);
  }

  /// The value of a weight leaf, or nullptr.
  const Tensor<float>* weight_value(ExprId id) const {
    const ExprNode& node = m_.graph[id];
    if (node.op != OpKind::Weight) return nullptr;
    auto it = m_.weights.find(node.name);
    return it == m_.weights.end() ? nullptr : &it->second;
  }

  /// Canonical form of Conv -> BatchNormalization (inference) with constant weights, as runtimes run it:
  /// one convolution with w' = w * k and bias' = (bias - mean) * k + beta per output channel, where
  /// k = scale / sqrt(var + epsilon). nullopt when the pattern or its constants are not there.
  std::optional<ExprId> fold_batchnorm_into_conv(const onnx::NodeProto& n, ExprId x, float eps) {
    if (auto r = readers_.find(n.input(0)); r == readers_.end() || r->second != 1) return std::nullopt;  // the convolution's output is read elsewhere too
    const Tensor<float>* bn[4];
    for (int k = 1; k <= 4; ++k) {
      auto it = values_.find(n.input(k));
      if (it == values_.end() || !(bn[k - 1] = weight_value(it->second))) return std::nullopt;
    }
    // x is conv2d(input, w) or ewadd(conv2d(input, w), broadcast(reshape(b))), as import_conv builds it.
    ExprId conv = x;
    const Tensor<float>* conv_bias = nullptr;
    if (m_.graph[x].op == OpKind::EwAdd) {
      conv = m_.graph[x].children[0];
      ExprId bc = m_.graph[x].children[1];
      if (m_.graph[bc].op != OpKind::Broadcast || m_.graph[m_.graph[bc].children[0]].op != OpKind::Reshape) return std::nullopt;
      conv_bias = weight_value(m_.graph[m_.graph[bc].children[0]].children[0]);
      if (!conv_bias) return std::nullopt;
    }
    const ExprNode conv_node = m_.graph[conv];  // a copy: add() below grows the graph
    if (conv_node.op != OpKind::Conv2d || conv_node.attrs[4] != 0) return std::nullopt;
    const Tensor<float>* w = weight_value(conv_node.children[1]);
    if (!w) return std::nullopt;
    const int64_t out_channels = w->shape[0];
    for (const Tensor<float>* t : bn)
      if (t->shape != Shape{out_channels}) return std::nullopt;
    if (conv_bias && conv_bias->shape != Shape{out_channels}) return std::nullopt;
    const auto& [scale, beta, mean, var] = bn;
    Tensor<float> folded_w = *w;
    std::vector<float> folded_b(static_cast<size_t>(out_channels));
    const size_t per_channel = folded_w.data.size() / static_cast<size_t>(out_channels);
    for (size_t o = 0; o < static_cast<size_t>(out_channels); ++o) {
      const double k = scale->data[o] / std::sqrt(static_cast<double>(var->data[o]) + eps);
      for (size_t i = 0; i < per_channel; ++i) folded_w.data[o * per_channel + i] = static_cast<float>(folded_w.data[o * per_channel + i] * k);
      folded_b[o] = static_cast<float>(((conv_bias ? conv_bias->data[o] : 0.0f) - mean->data[o]) * k + beta->data[o]);
    }
    const std::string w_name = m_.graph[conv_node.children[1]].name;
    ExprId new_w = weight(unique_name(w_name + ".bn"), std::move(folded_w));
    ExprId y = add(OpKind::Conv2d, conv_node.attrs, {conv_node.children[0], new_w});
    ExprId b = weight(unique_name(w_name + ".bn_bias"), Tensor<float>(Shape{out_channels}, std::move(folded_b)));
    ExprId bias = add(OpKind::Reshape, {out_channels, 1, 1}, {b});
    m_.folded.push_back(describe(n) + ": folded into the convolution before it");
    return add(OpKind::EwAdd, {}, {y, broadcast_to(bias, shapes_[y.value])});
  }

  /// The node computing `name` when it has that type and this is its only reader (so that folding it away
  /// removes it), else nullptr.
  const onnx::NodeProto* sole_producer(const std::string& name, const std::string& op_type) const {
    auto it = producer_.find(name);
    if (it == producer_.end() || it->second->op_type() != op_type || !is_default_domain(it->second->domain()))
      return nullptr;
    auto r = readers_.find(name);
    return r != readers_.end() && r->second == 1 ? it->second : nullptr;
  }
  /// Whether `name` is a constant scalar within 1e-6 of `v`.
  bool is_constant(const std::string& name, double v) {
    auto it = constants_.find(name);
    if (it == constants_.end()) return false;
    auto x = tensor_numbers(*it->second);
    return x && x->size() == 1 && std::fabs((*x)[0] - v) <= 1e-6;
  }

  /// A Mul that ends PyTorch's exact GELU, x * (1 + erf(x / sqrt 2)) * 0.5 with the products grouped and the
  /// operands of each Mul and Add in any order (x / sqrt 2 also as x * (1 / sqrt 2)), whose intermediate
  /// values have no other reader: its output becomes (gelu x), the vocabulary's (UnaryFn::Gelu is
  /// 0.5 x (1 + erf(x / sqrt 2))). False when the node is not such a Mul.
  bool import_erf_gelu(const onnx::NodeProto& n) {
    if (n.input_size() != 2) return false;
    // The three factors of the two nested products.
    for (int k = 0; k < 2; ++k) {
      const onnx::NodeProto* inner = sole_producer(n.input(k), "Mul");
      if (!inner || inner->input_size() != 2) continue;
      const std::string factors[3] = {n.input(1 - k), inner->input(0), inner->input(1)};
      for (int half = 0; half < 3; ++half) {
        if (!is_constant(factors[half], 0.5)) continue;
        for (int x = 0; x < 3; ++x) {
          if (x == half) continue;
          const std::string& one_plus = factors[3 - half - x];
          auto y = erf_gelu_input(one_plus);
          if (!y || *y != factors[x]) continue;
          auto v = values_.find(*y);
          if (v == values_.end() || elem_type(*y) != onnx::TensorProto::FLOAT) return false;
          set_output(n, add(OpKind::Gelu, {}, {v->second}));
          return true;
        }
      }
    }
    return false;
  }
  /// x when `name` is 1 + erf(x / sqrt 2) computed by nodes that nothing else reads.
  std::optional<std::string> erf_gelu_input(const std::string& name) {
    const onnx::NodeProto* add1 = sole_producer(name, "Add");
    if (!add1 || add1->input_size() != 2) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      if (!is_constant(add1->input(1 - k), 1.0)) continue;
      const onnx::NodeProto* erf = sole_producer(add1->input(k), "Erf");
      if (!erf) continue;
      if (const onnx::NodeProto* div = sole_producer(erf->input(0), "Div");
          div && div->input_size() == 2 && is_constant(div->input(1), std::sqrt(2.0)))
        return div->input(0);
      if (const onnx::NodeProto* mul = sole_producer(erf->input(0), "Mul"); mul && mul->input_size() == 2)
        for (int j = 0; j < 2; ++j)
          if (is_constant(mul->input(1 - j), std::sqrt(0.5))) return mul->input(j);
    }
    return std::nullopt;
  }

  /// A float32 value as num / 2^exp with the smallest exp in 0..62 (clip's bound attributes); nullopt when
  /// it is not finite, not a float32 value, or needs a larger numerator or exponent.
  static std::optional<std::array<int64_t, 2>> dyadic(double v) {
    if (!std::isfinite(v) || static_cast<double>(static_cast<float>(v)) != v) return std::nullopt;
    int64_t exp = 0;
    for (; v != std::floor(v); v *= 2)  // exact: doubling a double only changes its exponent
      if (++exp > 62) return std::nullopt;
    if (std::fabs(v) >= 0x1p62) return std::nullopt;
    return std::array<int64_t, 2>{static_cast<int64_t>(v), exp};
  }

  /// Clip with constant bounds (infinite or +-FLT_MAX: no bound): relu for [0, none) (the canonical form),
  /// the node's input for no bounds at all, else the vocabulary's clip.
  void import_clip(const onnx::NodeProto& n, double lo, double hi) {
    ExprId x = in(n, 0);
    if (std::isnan(lo) || std::isnan(hi)) throw NotInVocabulary{"NaN clip bound"};
    const bool has_lo = lo > -FLT_MAX, has_hi = hi < FLT_MAX;
    if (lo == 0 && !has_hi) return set_output(n, add(OpKind::Relu, {}, {x}));
    if (!has_lo && !has_hi) return set_output(n, x);
    std::vector<int64_t> attrs{0, ops::kNoBound, 0, ops::kNoBound};
    for (int b = 0; b < 2; ++b) {
      if (!(b == 0 ? has_lo : has_hi)) continue;
      auto d = dyadic(b == 0 ? lo : hi);
      if (!d) throw NotInVocabulary{"clip bound " + std::to_string(b == 0 ? lo : hi) + " is not num / 2^k with k <= 62"};
      attrs[2 * b] = (*d)[0];
      attrs[2 * b + 1] = (*d)[1];
    }
    if (has_lo && has_hi && lo > hi) throw NotInVocabulary{"clip with min above max"};
    set_output(n, add(OpKind::Clip, attrs, {x}));
  }

  /// Pow with a constant scalar exponent: 2 is x*x (the canonical form), 0.5 sqrt, 1 the base itself.
  void import_pow(const onnx::NodeProto& n) {
    ExprId x = in(n, 0);
    auto e = const_input(n, 1);
    if (!e || e->size() != 1) throw NotInVocabulary{"exponent is not a constant scalar"};
    const double p = (*e)[0];
    if (p == 2) return set_output(n, add(OpKind::EwMul, {}, {x, x}));
    if (p == 0.5) return set_output(n, add(OpKind::Sqrt, {}, {x}));
    if (p == 1) return set_output(n, x);
    std::ostringstream what;
    what << "exponent " << p << " (the vocabulary has 2 as ewmul x x, 0.5 as sqrt and 1)";
    throw NotInVocabulary{what.str()};
  }

  /// ReduceMean (axes as an attribute: opset 18's axes input was made one by adapt_to_library_opset).
  void import_reduce_mean(const onnx::NodeProto& n) {
    ExprId x = in(n, 0);
    const Shape xs = shapes_[x.value];
    if (xs.empty()) throw NotInVocabulary{"0-d input"};
    std::vector<int64_t> axes;
    if (auto a = attr_ints(n, "axes")) {
      for (int64_t v : *a) axes.push_back(normalize_axis(v, xs.size(), "ReduceMean", {}));
      std::sort(axes.begin(), axes.end());
      if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw NotInVocabulary{"repeated axis"};
    }
    if (axes.empty())  // no axes: every axis
      for (size_t d = 0; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    std::vector<int64_t> attrs{attr_int(n, "keepdims", 1) != 0 ? 1 : 0};
    attrs.insert(attrs.end(), axes.begin(), axes.end());
    set_output(n, add(OpKind::ReduceMean, attrs, {x}));
  }

  /// Pad in constant mode with value 0 and constant, non-negative pads (ONNX order: begins, then ends).
  void import_pad(const onnx::NodeProto& n) {
    ExprId x = in(n, 0);
    const Shape xs = shapes_[x.value];
    const std::string mode = attr_string(n, "mode", "constant");
    if (mode != "constant") throw NotInVocabulary{"mode '" + mode + "'"};
    std::vector<double> pads;
    double value = 0;
    if (m_.opset < 11) {
      auto p = attr_ints(n, "pads");
      if (!p) throw NotInVocabulary{"no pads"};
      pads.assign(p->begin(), p->end());
      value = attr_float(n, "value", 0.0f);
    } else {
      auto p = const_input(n, 1);
      if (!p) throw NotInVocabulary{"non-constant pads"};
      pads = *p;
      if (has_input(n, 2)) {
        auto v = const_input(n, 2);
        if (!v || v->size() > 1) throw NotInVocabulary{"non-constant pad value"};
        if (!v->empty()) value = (*v)[0];
      }
    }
    if (value != 0) throw NotInVocabulary{"pad value other than 0"};
    if (pads.size() != 2 * xs.size()) throw NotInVocabulary{"pads do not cover every axis"};
    std::vector<int64_t> attrs;
    for (double p : pads) {
      if (p < 0) throw NotInVocabulary{"negative pads (cropping)"};
      attrs.push_back(static_cast<int64_t>(p));
    }
    if (std::all_of(attrs.begin(), attrs.end(), [](int64_t p) { return p == 0; })) return set_output(n, x);
    set_output(n, add(OpKind::Pad, attrs, {x}));
  }

  /// A pad node of a 4-d tensor that pads only the spatial axes (H, W): its operand and the pads in ONNX's
  /// (h_begin, w_begin, h_end, w_end) order, for folding into the Conv or AveragePool that reads it.
  struct FoldablePad {
    ExprId x;
    std::array<int64_t, 4> pads;
  };
  std::optional<FoldablePad> foldable_pad(ExprId id) const {
    const ExprNode& p = m_.graph[id];
    if (p.op != OpKind::Pad || p.attrs.size() != 8) return std::nullopt;
    const auto& a = p.attrs;
    if (a[0] || a[1] || a[4] || a[5]) return std::nullopt;
    return FoldablePad{p.children[0], {a[2], a[3], a[6], a[7]}};
  }

  /// LayerNormalization (opset 17) as its decomposition: mean and variance over axes axis..rank-1,
  /// (x - mean) / sqrt(var + epsilon) * scale + bias.
  void import_layernorm(const onnx::NodeProto& n) {
    require_single_output(n);
    ExprId x = in(n, 0);
    const Shape xs = shapes_[x.value];
    if (xs.empty()) throw NotInVocabulary{"0-d input"};
    if (attr_int(n, "stash_type", 1) != 1) throw NotInVocabulary{"stash_type other than float"};
    const int64_t axis = normalize_axis(attr_int(n, "axis", -1), xs.size(), "LayerNormalization", {});
    std::vector<int64_t> attrs{1};
    for (int64_t d = axis; d < static_cast<int64_t>(xs.size()); ++d) attrs.push_back(d);
    const float eps = attr_float(n, "epsilon", 1e-5f);
    ExprId mean = add(OpKind::ReduceMean, attrs, {x});
    ExprId d = add(OpKind::EwSub, {}, {x, broadcast_to(mean, xs)});
    ExprId var = add(OpKind::ReduceMean, attrs, {add(OpKind::EwMul, {}, {d, d})});
    const Shape vs = shapes_[var.value];
    ExprId sd = add(OpKind::Sqrt, {}, {add(OpKind::EwAdd, {}, {var, broadcast_to(scalar_weight(n.output(0) + ".epsilon", eps), vs)})});
    ExprId y = add(OpKind::EwDiv, {}, {d, broadcast_to(sd, xs)});
    y = add(OpKind::EwMul, {}, {y, broadcast_to(in(n, 1), xs)});
    if (has_input(n, 2)) y = add(OpKind::EwAdd, {}, {y, broadcast_to(in(n, 2), xs)});
    set_output(n, y);
  }

  void import_batchnorm(const onnx::NodeProto& n) {
    require_single_output(n);
    if (attr_int(n, "training_mode", 0) != 0) throw NotInVocabulary{"training mode"};
    if (m_.opset < 9 && attr_int(n, "spatial", 1) != 1) throw NotInVocabulary{"spatial = 0"};
    float eps = attr_float(n, "epsilon", 1e-5f);
    if (auto folded = fold_batchnorm_into_conv(n, in(n, 0), eps)) return set_output(n, *folded);
    ExprId x = in(n, 0), scale = in(n, 1), bias = in(n, 2), mean = in(n, 3), var = in(n, 4);
    if (eps != 0) {
      // Our batchnorm has no epsilon: fold it into the variance (a new weight when var is one).
      const ExprNode& v = m_.graph[var];
      if (v.op == OpKind::Weight) {
        std::string key = v.name + "\x1f" + std::to_string(eps);
        auto it = folded_var_.find(key);
        if (it == folded_var_.end()) {
          Tensor<float> t = m_.weights.at(v.name);
          for (float& e : t.data) e += eps;
          it = folded_var_.emplace(key, weight(unique_name(v.name + "+eps"), std::move(t))).first;
        }
        var = it->second;
      } else {
        ExprId e = scalar_weight(n.output(0) + ".epsilon", eps);
        var = add(OpKind::EwAdd, {}, {var, broadcast_to(e, shapes_[var.value])});
      }
    }
    set_output(n, add(OpKind::BatchNorm, {}, {x, scale, bias, mean, var}));
  }

  const AdaptedNode* adapted_node(const onnx::NodeProto& n) const {
    if (adapted_.empty() || n.output_size() == 0) return nullptr;
    auto it = adapted_.find(n.output(0));
    return it == adapted_.end() ? nullptr : &it->second;
  }

  /// Gelu (opset 20, exact erf form) -> the vocabulary's gelu.
  bool import_gelu(const onnx::NodeProto& n) {
    pending_.clear();
    if (elem_type(n.output(0)) != onnx::TensorProto::FLOAT) throw NotInVocabulary{"not a float tensor"};
    set_output(n, add(OpKind::Gelu, {}, {in(n, 0)}));
    for (const auto& [name, id] : pending_) values_[name] = id;
    return true;
  }

  void import_opaque(const onnx::NodeProto& working) {
    // A node adapted to opset 17 is exported as the model had it, with its original inputs.
    onnx::NodeProto original;
    const AdaptedNode* adapted = adapted_node(working);
    if (adapted && !original.ParseFromString(adapted->original)) fail(describe(working) + ": adapted node is corrupt");
    const onnx::NodeProto& n = adapted ? original : working;
    OpaqueNode node{n.op_type(), n.domain(), n.name(), n.SerializeAsString(), {}, {}};
    std::vector<ExprId> kids;
    for (const auto& name : n.input()) {
      auto it = values_.find(name);
      if (name.empty() || it == values_.end()) {
        node.input_child.push_back(-1);  // optional input left out, or a passed-through initializer
        continue;
      }
      node.input_child.push_back(static_cast<int>(kids.size()));
      kids.push_back(it->second);
    }
    const int64_t id = static_cast<int64_t>(m_.opaque.size());
    for (int k = 0; k < n.output_size(); ++k) {
      const std::string& out = n.output(k);
      node.output_types.push_back(out.empty() ? 0 : elem_type(out));
      if (out.empty() || !used_.count(out)) continue;
      const Shape& s = shape_of(out, &n);
      for (int64_t d : s)
        if (d < 1) fail(describe(n) + " produces '" + out + "' with a zero-size dimension, which is not supported");
      std::vector<int64_t> attrs{id, k};
      attrs.insert(attrs.end(), s.begin(), s.end());
      values_[out] = add(OpKind::Opaque, std::move(attrs), kids);
    }
    m_.opaque.push_back(std::move(node));
  }

  /// Keeps only what the outputs reach, in depth-first post-order from the roots, and renumbers opaque
  /// ids in first-use order, so that import(export(import(f))) == import(f).
  void compact() {
    Expr out;
    std::vector<std::optional<ExprId>> mapped(m_.graph.size());
    std::map<int64_t, int64_t> opaque_ids;
    std::vector<OpaqueNode> opaque;
    // Iterative post-order: (node, next child index).
    for (ExprId root : m_.graph.roots()) {
      std::vector<std::pair<ExprId, size_t>> stack{{root, 0}};
      while (!stack.empty()) {
        auto& [id, next] = stack.back();
        const ExprNode& node = m_.graph[id];
        if (mapped[id.value]) {
          stack.pop_back();
          continue;
        }
        if (next < node.children.size()) {
          ExprId c = node.children[next++];
          if (!mapped[c.value]) stack.emplace_back(c, 0);
          continue;
        }
        ExprNode copy = node;
        for (ExprId& c : copy.children) c = *mapped[c.value];
        if (copy.op == OpKind::Opaque) {
          auto [it, fresh] = opaque_ids.emplace(copy.attrs[0], static_cast<int64_t>(opaque.size()));
          if (fresh) opaque.push_back(m_.opaque[copy.attrs[0]]);
          copy.attrs[0] = it->second;
        }
        mapped[id.value] = out.add(std::move(copy));
        stack.pop_back();
      }
    }
    for (ExprId root : m_.graph.roots()) out.add_root(*mapped[root.value]);
    // Weights that nothing reaches any more (folded variances' originals, unused initializers) go.
    std::set<std::string> live;
    for (const ExprNode& node : out.nodes())
      if (node.op == OpKind::Weight) live.insert(node.name);
    for (const TensorInfo& info : m_.inputs)
      if (info.is_weight) live.insert(info.name);
    std::erase_if(m_.weights, [&](const auto& kv) { return !live.count(kv.first); });
    m_.graph = std::move(out);
    m_.opaque = std::move(opaque);
  }

  onnx::ModelProto& proto_;
  const ImportOptions& options_;
  std::filesystem::path dir_;  // where external tensor data is looked up; empty: bytes without a file
  std::unordered_map<std::string, AdaptedNode> adapted_;  // nodes of opsets 18..21 rewritten to opset 17
  OnnxModel m_;
  std::unordered_map<std::string, ValueType> types_;
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;
  std::vector<std::unique_ptr<onnx::TensorProto>> constant_storage_;
  std::unordered_map<std::string, ExprId> values_;
  std::unordered_set<std::string> used_, new_names_;
  std::unordered_map<std::string, const onnx::NodeProto*> producer_;  // the node computing each tensor
  std::unordered_map<std::string, size_t> readers_;  // node inputs and graph outputs naming each tensor
  std::map<std::string, ExprId> folded_var_;
  std::vector<Shape> shapes_;
  std::vector<std::pair<std::string, ExprId>> pending_;  // outputs of the node being mapped
};

OnnxModel import_from(std::string_view bytes, const std::string& origin, const ImportOptions& options,
                      const std::filesystem::path& dir) {
  onnx::ModelProto proto;
  if (bytes.empty()) throw OnnxError(origin + ": empty file, not an ONNX model");
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw OnnxError(origin + ": not an ONNX model (protobuf parsing failed: the file is truncated or not a model)");
  return Importer(proto, origin, options, dir).run();
}

}  // namespace

OnnxModel import_onnx_bytes(std::string_view bytes, const std::string& origin, const ImportOptions& options) {
  return import_from(bytes, origin, options, options.external_data_dir);
}

OnnxModel import_onnx(const std::filesystem::path& path, const ImportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw OnnxError(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw OnnxError(path.string() + ": is a directory, not a model file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw OnnxError(path.string() + ": cannot open for reading");
  std::ostringstream buf;
  buf << f.rdbuf();
  // External tensor data lies beside the model file, unless the caller says where.
  std::filesystem::path dir = options.external_data_dir;
  if (dir.empty()) dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  return import_from(buf.str(), path.string(), options, dir);
}

}  // namespace teq::onnx_io
