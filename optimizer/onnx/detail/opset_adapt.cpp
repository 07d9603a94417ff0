#include "optimizer/onnx/detail/opset_adapt.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/model.h"

namespace teq::onnx_io::detail {

namespace {

/// Default-domain operators that changed (or arrived) in opsets 18 to 21, with the versions they changed
/// in (from ONNX's changelog). An operator absent here has the same schema at 18..21 as at 17.
const std::map<std::string, std::vector<int64_t>>& changes_after_17() {
  static const std::map<std::string, std::vector<int64_t>> table = [] {
    std::map<std::string, std::vector<int64_t>> t;
    const std::pair<int64_t, std::vector<const char*>> by_version[] = {
        {18, {"BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "CenterCropPad", "Col2Im", "GroupNormalization",
              "LpPool", "Mish", "OptionalGetElement", "OptionalHasElement", "Pad", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
              "ReduceSumSquare", "Resize", "ScatterElements", "ScatterND", "Split"}},
        {19, {"AveragePool", "Cast", "CastLike", "Constant", "DeformConv", "DequantizeLinear", "Equal", "Identity", "If",
              "Loop", "Pad", "QuantizeLinear", "Reshape", "Resize", "Scan", "Shape", "Size"}},
        {20, {"AffineGrid", "ConstantOfShape", "DFT", "Gelu", "GridSample", "ImageDecoder", "IsInf", "IsNaN",
              "ReduceMax", "ReduceMin", "RegexFullMatch", "StringConcat", "StringSplit"}},
        {21, {"Cast", "CastLike", "Constant", "ConstantOfShape", "DequantizeLinear", "Flatten", "GroupNormalization",
              "Identity", "If", "Loop", "Pad", "QLinearMatMul", "QuantizeLinear", "Reshape", "Scan", "Shape", "Size",
              "Squeeze", "Transpose", "Unsqueeze"}},
    };
    for (const auto& [version, ops] : by_version)
      for (const char* op : ops) t[op].push_back(version);
    return t;
  }();
  return table;
}

/// Changed after 17 only by gaining element types (int4, float8, bfloat16, ...): the opset-17 schema means
/// the same for the types it knows, and shape inference rejects the others by name.
const std::set<std::string> kTypesOnly = {"Constant", "ConstantOfShape", "Equal", "Identity", "Reshape", "Shape",
                                          "Size", "Flatten", "Squeeze", "Transpose", "Unsqueeze", "IsInf", "IsNaN",
                                          "QLinearMatMul", "OptionalGetElement", "OptionalHasElement"};
/// Gained only a reduction mode (max/min) that leaves shapes alone: kept for inference, exported as they were.
const std::set<std::string> kNewModesOnly = {"ScatterElements", "ScatterND", "GridSample"};
/// Opset 18 moved `axes` from an attribute to an input (ReduceSum did so at 13).
const std::set<std::string> kReduceAxesInput = {"ReduceL1",   "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp",
                                                "ReduceMax",  "ReduceMean", "ReduceMin",    "ReduceProd",
                                                "ReduceSumSquare"};
/// New after 17, output shaped like input 0: opaque, with an opset-17 Identity carrying the shape.
const std::set<std::string> kShapePreservingNew = {"Mish", "GroupNormalization"};

std::string describe(const onnx::NodeProto& n) {
  return "node '" + (n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name()) + "' (" +
         n.op_type() + ")";
}

void remove_attr(onnx::NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int k = attrs->size(); k-- > 0;)
    if (attrs->Get(k).name() == name) attrs->DeleteSubrange(k, 1);
}

void truncate_inputs(onnx::NodeProto& n, int count) {
  while (n.input_size() > count) n.mutable_input()->RemoveLast();
}

class Adapter {
 public:
  Adapter(onnx::ModelProto& model, const std::string& origin) : model_(model), origin_(origin) {
    const onnx::GraphProto& g = model.graph();
    std::set<std::string> inputs;
    for (const auto& in : g.input()) inputs.insert(in.name());
    // Constants for axes inputs: initializers that are not graph inputs (those can be overridden at run
    // time) and Constant nodes.
    for (const auto& t : g.initializer())
      if (!inputs.count(t.name())) constants_[t.name()] = &t;
    for (const auto& n : g.node())
      if (n.op_type() == "Constant" && n.output_size() == 1)
        if (const auto* v = find_attr(n, "value"); v && v->has_t()) constants_[n.output(0)] = &v->t();
  }

  std::unordered_map<std::string, AdaptedNode> run() {
    const int64_t opset = default_opset(model_);
    for (auto& n : *model_.mutable_graph()->mutable_node()) {
      if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
      auto it = changes_after_17().find(n.op_type());
      if (it == changes_after_17().end()) continue;
      std::optional<int64_t> version;
      for (int64_t v : it->second)
        if (v <= opset) version = v;
      if (!version) continue;
      const std::string original = n.SerializeAsString();
      AdaptedNode a{original, false, std::nullopt};
      adapt(n, *version, a);
      // Recorded even when unchanged so far: shape_dependent may still rewrite it.
      adapted_[n.output_size() ? n.output(0) : ""] = a;
    }
    for (auto& op : *model_.mutable_opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") op.set_version(kLibraryOpset);
    // The library reads IR versions up to 8; opsets 18..21 bring no graph feature it would miss.
    if (model_.ir_version() > 8) model_.set_ir_version(8);
    shape_dependent();
    return std::move(adapted_);
  }

 private:
  [[noreturn]] void refuse(const onnx::NodeProto& n, const std::string& why) const {
    throw OnnxError(origin_ + ": " + describe(n) + ": " + why);
  }
  [[noreturn]] void too_new(const onnx::NodeProto& n, int64_t version) const {
    refuse(n, "'" + n.op_type() + "' changed in opset " + std::to_string(version) +
                  ", after opset 17, the newest the linked ONNX library knows, and has no opset-17 form of the same "
                  "meaning; it cannot be imported");
  }

  std::optional<std::vector<int64_t>> constant_ints(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end()) return std::nullopt;
    try {
      return tensor_ints(*it->second);
    } catch (const OnnxError& e) {
      throw OnnxError(origin_ + ": " + e.what());
    }
  }

  /// The node as a stand-in of its shapes: Identity of input 0, no attributes.
  static void make_identity(onnx::NodeProto& n) {
    n.set_op_type("Identity");
    n.clear_attribute();
    truncate_inputs(n, 1);
  }

  void adapt(onnx::NodeProto& n, int64_t version, AdaptedNode& a) {
    const std::string& op = n.op_type();
    if (kTypesOnly.count(op)) return;
    if (kNewModesOnly.count(op)) {
      a.stand_in = true;  // its opset-17 form computes something else for the new modes: never map it
      return;
    }
    if (op == "Cast" || op == "CastLike") {
      remove_attr(n, "saturate");  // only float8 targets saturate, and opset 17 has no float8 types
      return;
    }
    if (op == "QuantizeLinear" || op == "DequantizeLinear") {
      if (attr_int(n, "block_size", 0) != 0) refuse(n, "blocked quantization (block_size, opset 21) cannot be imported");
      if (attr_int(n, "output_dtype", 0) != 0) refuse(n, "'output_dtype' (opset 21) cannot be imported");
      for (const char* name : {"saturate", "block_size", "output_dtype"}) remove_attr(n, name);
      return;
    }
    if (kReduceAxesInput.count(op)) return adapt_reduce(n);
    if (op == "Split") {
      // Split-18 with num_outputs and no split input: the opset-13 form splits into as many equal parts as
      // it has outputs. Split-18 also allows a last part that is smaller: split_unevenly gives those their sizes.
      if (find_attr(n, "num_outputs") && (n.input_size() < 2 || n.input(1).empty())) pending_splits_.push_back(&n);
      remove_attr(n, "num_outputs");
      return;
    }
    if (op == "Pad") {
      // Pads of the listed axes only: spread over every axis once the input's rank is known (shape_dependent).
      if (n.input_size() > 3 && !n.input(3).empty()) pending_pads_.push_back(&n);
      else truncate_inputs(n, std::min(n.input_size(), 3));
      if (attr_string(n, "mode", "constant") == "wrap") a.stand_in = true;  // opset 19's mode, kept opaque
      return;
    }
    if (op == "AveragePool") {
      if (auto d = attr_ints(n, "dilations"))
        for (int64_t v : *d)
          if (v != 1) refuse(n, "AveragePool dilations other than 1 (opset 19) cannot be imported");
      remove_attr(n, "dilations");
      return;
    }
    if (op == "LpPool") {
      if (attr_int(n, "ceil_mode", 0) != 0) refuse(n, "LpPool ceil_mode (opset 18) cannot be imported");
      remove_attr(n, "ceil_mode");
      return;
    }
    if (op == "Resize") {
      if (find_attr(n, "axes")) refuse(n, "Resize with 'axes' (opset 18) cannot be imported");
      if (attr_int(n, "antialias", 0) != 0) refuse(n, "Resize with antialias (opset 18) cannot be imported");
      if (attr_string(n, "keep_aspect_ratio_policy", "stretch") != "stretch")
        refuse(n, "Resize keep_aspect_ratio_policy other than stretch (opset 18) cannot be imported");
      for (const char* name : {"axes", "antialias", "keep_aspect_ratio_policy"}) remove_attr(n, name);
      a.stand_in = true;  // half_pixel_symmetric (opset 19) has no opset-17 meaning; exported as it was
      return;
    }
    if (op == "Gelu") {
      // The exact erf form is the vocabulary's gelu, the tanh approximation its gelu_tanh
      // (rules/ops/elementwise.h); any other value stays opaque.
      const std::string approximate = attr_string(n, "approximate", "none");
      if (approximate == "none") a.gelu = OpKind::Gelu;
      if (approximate == "tanh") a.gelu = OpKind::GeluTanh;
      a.stand_in = true;
      make_identity(n);
      return;
    }
    if (kShapePreservingNew.count(op)) {
      a.stand_in = true;
      make_identity(n);
      return;
    }
    too_new(n, version);
  }

  /// The model as adapted so far with the shapes lenient ONNX shape inference finds (node errors leave
  /// outputs unknown); false when inference itself fails (the importer's own inference reports it).
  bool inferred_copy(onnx::ModelProto& copy) const {
    copy = model_;
    try {
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                         inference_options(false));
    } catch (const std::exception&) {
      return false;
    }
    return true;
  }

  /// Adaptations that need an input's shape: Split-18 by num_outputs over an axis that does not divide
  /// evenly (parts of ceil(d / n), the last one smaller, given as the opset-13 split input), and Pad-18 with
  /// an axes input (pads spread over every axis of the input's rank). Shapes are inferred (leniently, on a
  /// copy) until every such node's input is known or nothing more becomes known; a Pad whose input's rank
  /// stays unknown is refused.
  void shape_dependent() {
    while (!pending_pads_.empty()) {
      onnx::ModelProto copy;
      if (!inferred_copy(copy)) break;
      std::map<std::string, int64_t> ranks;
      for (const auto* list : {&copy.graph().input(), &copy.graph().value_info(), &copy.graph().output()})
        for (const auto& v : *list)
          if (v.type().tensor_type().has_shape()) ranks[v.name()] = v.type().tensor_type().shape().dim_size();
      for (const auto& t : copy.graph().initializer()) ranks[t.name()] = t.dims_size();
      std::vector<onnx::NodeProto*> unknown;
      for (onnx::NodeProto* n : pending_pads_) {
        auto it = ranks.find(n->input(0));
        if (it == ranks.end()) unknown.push_back(n);
        else spread_pads(*n, it->second);
      }
      if (unknown.size() == pending_pads_.size()) break;  // nothing more becomes known
      pending_pads_ = std::move(unknown);
    }
    if (!pending_pads_.empty())
      refuse(*pending_pads_.front(), "its input's rank is unknown, so its 'axes' (opset 18) cannot be spread over every axis");
    split_unevenly();
  }

  /// Pad-18 with constant pads and axes -> the opset-13 form: pads for every axis of a rank-`rank` input.
  void spread_pads(onnx::NodeProto& n, int64_t rank) {
    auto axes = constant_ints(n.input(3));
    auto pads = constant_ints(n.input(1));
    if (!axes || !pads)
      refuse(n, "its pads or axes are computed at run time; opset 18's axes input can be imported only with constant "
                "pads and axes");
    const size_t k = axes->size();
    if (pads->size() != 2 * k)
      refuse(n, std::to_string(pads->size()) + " pads for " + std::to_string(k) + " axes; it needs " + std::to_string(2 * k));
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    std::set<int64_t> seen;
    for (size_t i = 0; i < k; ++i) {
      int64_t a = (*axes)[i];
      if (a < -rank || a >= rank) refuse(n, "axis " + std::to_string(a) + " is out of range for a rank-" + std::to_string(rank) + " input");
      if (a < 0) a += rank;
      if (!seen.insert(a).second) refuse(n, "axis " + std::to_string(a) + " is listed twice");
      full[static_cast<size_t>(a)] = (*pads)[i];
      full[static_cast<size_t>(a + rank)] = (*pads)[i + k];
    }
    const std::string name = n.output(0) + ".pads";
    *model_.mutable_graph()->add_initializer() = make_int_tensor(name, {2 * rank}, full);
    n.set_input(1, name);
    truncate_inputs(n, 3);
  }

  void split_unevenly() {
    while (!pending_splits_.empty()) {
      onnx::ModelProto copy;
      if (!inferred_copy(copy)) return;
      std::map<std::string, std::vector<int64_t>> dims;  // known shapes
      auto note = [&dims](const onnx::ValueInfoProto& v) {
        if (!v.type().tensor_type().has_shape()) return;
        std::vector<int64_t> d;
        for (const auto& x : v.type().tensor_type().shape().dim()) {
          if (!x.has_dim_value()) return;
          d.push_back(x.dim_value());
        }
        dims[v.name()] = d;
      };
      for (const auto* list : {&copy.graph().input(), &copy.graph().value_info(), &copy.graph().output()})
        for (const auto& v : *list) note(v);
      for (const auto& t : copy.graph().initializer()) dims[t.name()] = {t.dims().begin(), t.dims().end()};
      std::vector<onnx::NodeProto*> unknown;
      for (onnx::NodeProto* n : pending_splits_) {
        auto it = dims.find(n->input(0));
        if (it == dims.end()) {
          unknown.push_back(n);
          continue;
        }
        const int64_t rank = static_cast<int64_t>(it->second.size());
        int64_t axis = attr_int(*n, "axis", 0);
        if (axis < -rank || axis >= rank) continue;  // shape inference reports it
        const int64_t extent = it->second[axis < 0 ? axis + rank : axis], parts = n->output_size();
        if (parts < 1 || extent < 1 || extent % parts == 0) continue;  // even: the opset-13 form as it is
        const int64_t chunk = extent / parts + 1;  // ceil, as extent % parts != 0
        if (chunk * (parts - 1) >= extent)
          refuse(*n, std::to_string(parts) + " outputs of a split of " + std::to_string(extent) + " leave the last one empty");
        std::vector<int64_t> sizes(parts, chunk);
        sizes.back() = extent - chunk * (parts - 1);
        const std::string name = n->output(0) + ".split_sizes";
        onnx::TensorProto& t = *model_.mutable_graph()->add_initializer();
        t = make_int_tensor(name, {parts}, sizes);
        if (n->input_size() < 2) n->add_input(name);
        else n->set_input(1, name);
      }
      if (unknown.size() == pending_splits_.size()) return;  // nothing more becomes known
      pending_splits_ = std::move(unknown);
    }
  }

  /// Reduce*-18: axes input (constant) -> attribute; noop_with_empty_axes with no axes -> Identity.
  void adapt_reduce(onnx::NodeProto& n) {
    std::vector<int64_t> axes;
    if (n.input_size() > 1 && !n.input(1).empty()) {
      auto values = constant_ints(n.input(1));
      if (!values)
        refuse(n, "its axes ('" + n.input(1) +
                      "') are computed at run time; opset 18's axes input can be imported only as a constant "
                      "(an initializer or a Constant node)");
      axes = *values;
    }
    const bool noop = attr_int(n, "noop_with_empty_axes", 0) != 0;
    remove_attr(n, "noop_with_empty_axes");
    truncate_inputs(n, 1);
    if (axes.empty() && noop) return make_identity(n);  // no axes and noop: the input itself
    if (!axes.empty()) add_attr(n, "axes", axes);        // no axes: every axis, as at opset 13
  }

  onnx::ModelProto& model_;
  const std::string& origin_;
  std::map<std::string, const onnx::TensorProto*> constants_;
  std::unordered_map<std::string, AdaptedNode> adapted_;
  std::vector<onnx::NodeProto*> pending_splits_;  // Split-18 by num_outputs, for split_unevenly
  std::vector<onnx::NodeProto*> pending_pads_;    // Pad-18 with axes, for shape_dependent
};

}  // namespace

std::unordered_map<std::string, AdaptedNode> adapt_to_library_opset(onnx::ModelProto& model, const std::string& origin) {
  return Adapter(model, origin).run();
}

}  // namespace teq::onnx_io::detail
