#include "optimizer/onnx/onnx_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/fold_shapes.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/merge_duplicates.h"
#include "optimizer/onnx/detail/opset_adapt.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/opaque.h"
#include "rules/semantics.h"

namespace teq::onnx_io {

namespace detail {

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

/// Whether a graph input (not an initializer) has a dimension without a value.
bool has_symbolic_dims(const onnx::ModelProto& proto) {
  std::unordered_set<std::string> inits;
  for (const auto& t : proto.graph().initializer()) inits.insert(t.name());
  for (const auto& in : proto.graph().input()) {
    if (inits.count(in.name()) || !in.type().tensor_type().has_shape()) continue;
    for (const auto& d : in.type().tensor_type().shape().dim())
      if (!d.has_dim_value()) return true;
  }
  return false;
}

/// A copy of `proto` whose initializers other than integer and boolean ones are graph inputs of their type
/// and shape instead: what shape inference and shape folding read, without a second copy of the weights. (An
/// initializer with dims but no data is not an option: libonnx's data propagation reads it and crashes.)
onnx::ModelProto without_float_data(onnx::ModelProto& proto) {
  google::protobuf::RepeatedPtrField<onnx::TensorProto> inits;
  inits.Swap(proto.mutable_graph()->mutable_initializer());
  onnx::ModelProto copy = proto;
  inits.Swap(proto.mutable_graph()->mutable_initializer());
  std::unordered_set<std::string> declared;
  for (const auto& in : proto.graph().input()) declared.insert(in.name());
  for (const auto& t : proto.graph().initializer()) {
    const int32_t type = t.data_type();
    if (type == onnx::TensorProto::INT64 || type == onnx::TensorProto::INT32 || type == onnx::TensorProto::BOOL) {
      *copy.mutable_graph()->add_initializer() = t;
      continue;
    }
    if (declared.count(t.name())) continue;
    onnx::ValueInfoProto* in = copy.mutable_graph()->add_input();
    in->set_name(t.name());
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  }
  return copy;
}

std::string describe(const onnx::NodeProto& n) {
  return "node '" + (n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name()) + "' (" +
         n.op_type() + ")";
}

OnnxModel Importer::run() {
  check_header();
  make_shell();
  m_.file_nodes = proto_.graph().node_size();
  // Each computation once (exporters repeat shape computations per use): every later stage sees it once.
  if (const int merged = merge_duplicate_nodes(*proto_.mutable_graph()); merged > 0)
    m_.folded.push_back(std::to_string(merged) + " duplicate node" + (merged == 1 ? "" : "s") +
                        " merged into an earlier one with the same operator, attributes and inputs");
  // The graph before its dimensions are bound, without float data (shapes and integers are what folding
  // reads): bound at the probe values, it shows which folded values follow the symbolic dimensions.
  std::optional<onnx::ModelProto> unbound;
  if (has_symbolic_dims(proto_)) unbound = without_float_data(proto_);
  for (const auto& n : proto_.graph().node())
    for (const auto& a : n.attribute())
      if ((a.has_g() || a.graphs_size() > 0) && n.output_size() > 0) control_flow_[n.output(0)] = n.SerializeAsString();
  // Floating-point tensors stay in their file (read when the import folds one, or when --check evaluates):
  // a model's weights are never all in memory (issue 45).
  m_.external_data = load_external_data(proto_, dir_, m_.source, ExternalLoad::LeaveFloats);
  if (m_.external_data) m_.external_data_dir = dir_;
  bind_symbolic_dims(proto_, false);
  // Opsets 18..21 are read through the library's opset-17 schemas: nodes in their opset-17 form from here
  // on (m_.opset stays the model's, for export; opaque nodes export their original protos). After the
  // dimensions are bound: an uneven Split-18 needs its input's extent.
  if (m_.opset > kLibraryOpset) adapted_ = adapt_to_library_opset(proto_, m_.source);
  check_nodes();
  // Integer shape arithmetic of fixed shapes -> Constant nodes.
  if (unbound) fold_at_probe_sizes(std::move(*unbound));
  m_.shape_nodes_folded = fold_shape_arithmetic(proto_, &folded_, false, unbound ? &probe_folded_ : nullptr);
  if (unbound) find_size_dependent();
  m_.shape_nodes_folded -= static_cast<int>(size_dependent_.size());  // those stay nodes
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

void Importer::check_header() {
  if (!proto_.has_graph() || proto_.ir_version() <= 0 || proto_.opset_import_size() == 0)
    fail("not an ONNX model (no graph, IR version or opset import)");
  m_.opset = default_opset(proto_);
  if (m_.opset == 0) fail("the model imports no version of the default ONNX domain");
  if (m_.opset < kMinOpset || m_.opset > kMaxOpset)
    fail("unsupported opset " + std::to_string(m_.opset) + " (supported: " + std::to_string(kMinOpset) + " to " +
         std::to_string(kMaxOpset) + ")");
  // Control flow (If, Loop, Scan) stays opaque with its subgraphs (import_opaque), not optimized inside.
}

void Importer::make_shell() {
  onnx::ModelProto shell = proto_;
  shell.mutable_graph()->clear_node();
  shell.mutable_graph()->clear_initializer();
  shell.mutable_graph()->clear_value_info();
  m_.shell = shell.SerializeAsString();
}

int Importer::bind_symbolic_dims(onnx::ModelProto& proto, bool probe) {
  int symbolic = 0;
  onnx::GraphProto& g = *proto.mutable_graph();
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
        if (!d.has_dim_value()) {
          ++symbolic;
          symbol_values_.emplace(it->second, probe_dim_value(it->second));
        }
        d.set_dim_value(probe && !d.has_dim_value() ? probe_dim_value(it->second) : it->second);
        continue;
      }
      if (d.has_dim_value()) continue;
      ++symbolic;
      std::string sym = d.has_dim_param() ? d.dim_param() : std::string();
      auto it = options_.dims.find(sym);
      int64_t value = it != options_.dims.end() ? it->second : symbolic_dim_value(options_, sym, k);
      if (value > 0 && it == options_.dims.end() && !probe) {
        // Not given: the default, recorded so that the caller checks the other values of the same dimension.
        if (sym.empty())
          m_.defaulted_axes[InputAxis{in.name(), k}] = value;
        else
          m_.defaulted_dims[sym] = value;
      }
      if (value <= 0) {
        // An unnamed dimension has no NAME to give: it is given by input and axis.
        if (sym.empty())
          fail("graph input '" + in.name() + "' has an unnamed symbolic dimension (axis " + std::to_string(k) +
               "); give it a value (eqsat-run --dim " + in.name() + ":" + std::to_string(k) + "=VALUE)");
        fail("graph input '" + in.name() + "' has a symbolic dimension '" + sym + "'; give it a value (eqsat-run --dim " +
             sym + "=VALUE)");
      }
      symbol_values_.emplace(value, probe_dim_value(value));
      d.set_dim_value(probe ? probe_dim_value(value) : value);
    }
  }
  // Declared intermediate shapes may hold the symbols just bound; inference recomputes them.
  g.clear_value_info();
  return symbolic;
}

void Importer::fold_at_probe_sizes(onnx::ModelProto unbound) {
  try {
    bind_symbolic_dims(unbound, true);
    if (m_.opset > kLibraryOpset) adapt_to_library_opset(unbound, m_.source);
    // A model whose shapes do not fit at the probe sizes (a sequence longer than its position table) stops
    // folding there, and what did not fold counts as size-dependent.
    fold_shape_arithmetic(unbound, &probe_folded_);
    record_probe_expand_inputs(unbound);
  } catch (const std::exception&) {
    probe_folded_.clear();  // the model does not fold at the probe sizes: every folded value counts as size-dependent
    probe_shapes_.clear();
  }
}

void Importer::record_probe_expand_inputs(onnx::ModelProto& probe) {
  std::set<std::string> wanted;
  for (const auto& n : probe.graph().node())
    if (n.op_type() == "Expand" && n.input_size() == 2) wanted.insert(n.input(0));
  if (wanted.empty()) return;
  try {
    onnx::shape_inference::InferShapes(probe, onnx::OpSchemaRegistry::Instance(), inference_options(false));
  } catch (const std::exception&) {
    return;  // no probe shapes: no Expand follows the sizes
  }
  const auto& g = probe.graph();
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list) {
      if (!wanted.count(vi.name()) || !vi.type().tensor_type().has_shape()) continue;
      Shape dims;
      for (const auto& d : vi.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) break;
        dims.push_back(d.dim_value());
      }
      if (static_cast<int>(dims.size()) == vi.type().tensor_type().shape().dim_size()) probe_shapes_[vi.name()] = dims;
    }
}

void Importer::find_size_dependent() {
  for (const auto& [name, value] : folded_) {
    auto it = probe_folded_.find(name);
    // Traced from a varying Shape element, or (belt and braces) different at the probe.
    if (value.any_varies() || it == probe_folded_.end() || !(it->second == value)) size_dependent_.insert(name);
  }
}

std::optional<std::string> Importer::size_dependent_input(const onnx::NodeProto& n) const {
  for (const auto& in : n.input())
    if (size_dependent_.count(in)) return in;
  return std::nullopt;
}

bool Importer::reshape_follows_sizes(const onnx::NodeProto& n) const {
  // A Reshape whose target changes with the sizes can still be the vocabulary's reshape: the export writes
  // each dimension that changes as 0 (the input's extent at that axis) or -1 (inferred, once), and the
  // driver's checks at other sizes vouch for the file. Here: at most one changing dimension (a -1 of the
  // file's target counts as one) that is not an extent of the input, at the same axis (written as 0) or at
  // another (a symbolic dimension moved, written through a Shape of the graph input that has it:
  // symbolic_reshape_targets finds which at every size; the export's second-size guard refuses the rest).
  if (n.op_type() != "Reshape" || n.input_size() < 2 || size_dependent_input(n) != n.input(1)) return false;
  auto b = folded_.find(n.input(1)), p = probe_folded_.find(n.input(1));
  if (b == folded_.end() || p == probe_folded_.end() || b->second.values.size() != p->second.values.size() ||
      b->second.varies.size() != b->second.values.size())
    return false;
  // PyTorch's dynamo exporter writes every view with allowzero=1 (a 0 is a zero extent, not a copy). Its targets
  // are the input's own sizes and constants, none 0 at the bound sizes: then allowzero changes nothing, and the
  // export's Reshape (allowzero 0, copies written as 0) computes the same shape at every size where the file's
  // does. A 0 in the target at the bound sizes is a zero extent there: not followed.
  if (attr_int(n, "allowzero", 0) != 0 &&
      std::find(b->second.values.begin(), b->second.values.end(), int64_t{0}) != b->second.values.end())
    return false;
  auto x = types_.find(n.input(0));
  if (x == types_.end() || !x->second.shape) return false;
  const Shape& in = *x->second.shape;
  // A -1 in the file's own target may stand for a dimension that changes too: it takes the one -1.
  int inferred = std::count(b->second.values.begin(), b->second.values.end(), int64_t{-1}) > 0 ? 1 : 0;
  for (size_t k = 0; k < b->second.values.size(); ++k) {
    const int64_t base = b->second.values[k];
    if (!b->second.varies[k] || base == 0 || base == -1) continue;
    if (k < in.size() && in[k] == base) continue;  // written as 0 (checked at the other sizes)
    if (std::find(in.begin(), in.end(), base) != in.end()) continue;  // another axis's: a symbolic dimension?
    // A symbolic dimension's value at the bound and at the probe sizes (GPT-2's [batch, seq, 2304] after its
    // [batch * seq, 2304] addmm, whose input has neither extent): read from the graph input that has it.
    if (symbol_values_.count({base, p->second.values[k]})) continue;
    ++inferred;
  }
  return inferred <= 1;
}

bool Importer::expand_follows_sizes(const onnx::NodeProto& n) const {
  // An Expand whose target changes with the sizes only where it equals the input's own extent at that axis
  // (grouped-query attention's repeat of the key/value heads: [batch, kv, 1, seq, d] to [batch, kv, rep, seq,
  // d]) is the vocabulary's broadcast: the export writes 1 there (Expand keeps the input's extent) and the
  // constant extents elsewhere, which holds at every size; the driver's checks at other sizes vouch for it.
  if (n.op_type() != "Expand" || n.input_size() != 2 || size_dependent_.count(n.input(0)) ||
      size_dependent_input(n) != n.input(1))
    return false;
  auto b = folded_.find(n.input(1)), p = probe_folded_.find(n.input(1));
  if (b == folded_.end() || p == probe_folded_.end() || b->second.values.size() != p->second.values.size() ||
      b->second.varies.size() != b->second.values.size())
    return false;
  auto x = types_.find(n.input(0));
  auto px = probe_shapes_.find(n.input(0));
  if (x == types_.end() || !x->second.shape || px == probe_shapes_.end() || px->second.size() != x->second.shape->size())
    return false;
  // At the bound sizes and at the probe sizes alike (an input extent of 1 at a batch of 1 is no copy of the
  // batch unless it is 2 where the batch is).
  const Shape& in = *x->second.shape;
  const Shape& probe_in = px->second;
  const size_t rank = b->second.values.size();
  for (size_t k = 0; k < rank; ++k) {
    if (!b->second.varies[k]) continue;
    if (k + in.size() < rank) return false;  // a leading axis the input lacks: its extent would be fixed
    const size_t axis = k + in.size() - rank;
    if (in[axis] != b->second.values[k] || probe_in[axis] != p->second.values[k]) return false;
  }
  return true;
}

void Importer::check_nodes() {
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

void Importer::infer_shapes() {
  // Strict inference (errors of any node throw) when every node has an ONNX schema, so that a real shape
  // mismatch is reported; with custom-domain operators, whose outputs ONNX cannot type, node errors are
  // left to the checks below (shape_of says which tensor has no shape).
  bool all_known = true;
  for (const auto& n : proto_.graph().node()) all_known &= is_default_domain(n.domain());
  auto infer = [&] {
    try {
      onnx::shape_inference::InferShapes(proto_, onnx::OpSchemaRegistry::Instance(),
                                         inference_options(all_known));
    } catch (const std::exception& e) {
      std::string what = e.what();
      while (!what.empty() && what.back() == '\n') what.pop_back();
      fail("ONNX shape inference failed: " + what);
    }
  };
  const auto declared_outputs = proto_.graph().output();  // inference fills their dimensions in
  infer();
  // The pools' true extents; undone where the file itself declares the counted one downstream (a graph
  // output's shape, say), which strict inference then rejects: those stay as before (a check that cannot
  // run through them says so).
  const auto adapted_before = adapted_;
  const size_t notes_before = m_.notes.size();
  if (std::vector<std::pair<int, onnx::NodeProto>> replaced = adapt_ceil_mode_pools(); !replaced.empty()) {
    const auto value_info = proto_.graph().value_info();
    const auto outputs = proto_.graph().output();
    proto_.mutable_graph()->clear_value_info();
    *proto_.mutable_graph()->mutable_output() = declared_outputs;
    try {
      infer();
    } catch (const OnnxError&) {
      // ONNX's counted extent stays for inference, but not as a shape the term trusts: such a pooling's outputs
      // are read as shapes that depend on values (OpaqueNode::dynamic_outputs), which --check takes from its
      // evaluation (onnxruntime's extent).
      for (const auto& [index, node] : replaced)
        for (const auto& out : node.output()) counted_extent_.insert(out);
      for (auto& [index, node] : replaced) *proto_.mutable_graph()->mutable_node(index) = std::move(node);
      *proto_.mutable_graph()->mutable_value_info() = value_info;
      *proto_.mutable_graph()->mutable_output() = outputs;
      adapted_ = adapted_before;
      m_.notes.resize(notes_before);
    }
  }
  if (infer_loop_carried_shapes()) infer();
  const onnx::GraphProto& g = proto_.graph();
  for (const auto& t : g.initializer()) types_[t.name()] = {t.data_type(), tensor_dims(t)};
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list) {
      if (!types_.count(vi.name()) || !types_[vi.name()].shape) types_[vi.name()] = value_type(vi.type());
      const ValueType& v = types_[vi.name()];
      if (!v.shape && vi.type().tensor_type().has_shape()) {
        Shape partial;
        for (const auto& d : vi.type().tensor_type().shape().dim())
          partial.push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value() : 1);
        partial_shapes_[vi.name()] = std::move(partial);
      }
      if (v.shape && num_elements(*v.shape) > kMaxElements)
        fail("tensor '" + vi.name() + "' of shape " + to_string(*v.shape) +
             " has more than 2^40 elements, the largest tensor tensor-eqsat handles");
    }
}

bool Importer::infer_loop_carried_shapes() {
  // ONNX 1.12 gives a Loop's loop-carried outputs no shape (a shape may change from one iteration to the next).
  // Where the body, given the initial values' types, computes each carried value in the very shape it got, that
  // shape is the output's: the body is inferred as a graph of its own (its outer reads as inputs) and the
  // shapes found are declared on the Loop's outputs for the next inference. Scan outputs stay as they are.
  onnx::GraphProto& g = *proto_.mutable_graph();
  auto static_shape = [](const onnx::TypeProto& t) { return value_type(t).shape.has_value(); };
  std::unordered_map<std::string, const onnx::TypeProto*> known;  // static shapes only (an output may say "N")
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list)
      if (static_shape(vi.type())) known[vi.name()] = &vi.type();
  std::unordered_map<std::string, onnx::TypeProto> initializer_types;
  for (const auto& t : g.initializer()) {
    onnx::TypeProto& type = initializer_types[t.name()];
    type.mutable_tensor_type()->set_elem_type(t.data_type());
    auto* shape = type.mutable_tensor_type()->mutable_shape();
    for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  }
  auto type_of = [&](const std::string& name) -> const onnx::TypeProto* {
    if (auto it = known.find(name); it != known.end()) return it->second;
    if (auto it = initializer_types.find(name); it != initializer_types.end()) return &it->second;
    return nullptr;
  };
  std::vector<onnx::ValueInfoProto> found;
  for (const auto& n : g.node()) {
    if (!is_default_domain(n.domain()) || n.op_type() != "Loop") continue;
    const onnx::GraphProto* body = nullptr;
    for (const auto& a : n.attribute())
      if (a.name() == "body" && a.has_g()) body = &a.g();
    const int carried = n.input_size() - 2;
    if (!body || carried < 1 || body->input_size() != carried + 2 || body->output_size() < carried + 1) continue;
    bool pending = false;
    for (int k = 0; k < carried; ++k) pending |= !n.output(k).empty() && !known.count(n.output(k));
    if (!pending) continue;
    onnx::ModelProto alone;
    alone.set_ir_version(proto_.ir_version());
    *alone.mutable_opset_import() = proto_.opset_import();
    onnx::GraphProto& bg = *alone.mutable_graph();
    bg = *body;
    bg.clear_value_info();
    bool typed = true;
    for (int k = 0; k < carried; ++k) {
      const onnx::TypeProto* t = type_of(n.input(k + 2));
      if (!t || !static_shape(*t)) typed = false;
      else *bg.mutable_input(k + 2)->mutable_type() = *t;
    }
    if (!typed) continue;
    for (const std::string& name : outer_references(n)) {
      const onnx::TypeProto* t = type_of(name);
      if (!t) {
        typed = false;
        break;
      }
      onnx::ValueInfoProto* in = bg.add_input();
      in->set_name(name);
      *in->mutable_type() = *t;
    }
    if (!typed) continue;
    try {
      onnx::shape_inference::InferShapes(alone, onnx::OpSchemaRegistry::Instance(), inference_options(false));
    } catch (const std::exception&) {
      continue;
    }
    std::unordered_map<std::string, const onnx::TypeProto*> inner;
    for (const auto* list : {&bg.value_info(), &bg.output(), &bg.input()})
      for (const auto& vi : *list) inner.emplace(vi.name(), &vi.type());
    for (int k = 0; k < carried; ++k) {
      if (n.output(k).empty() || known.count(n.output(k))) continue;
      auto it = inner.find(bg.output(k + 1).name());
      const onnx::TypeProto& start = bg.input(k + 2).type();
      if (it == inner.end() || !static_shape(*it->second)) continue;
      if (it->second->tensor_type().shape().SerializeAsString() != start.tensor_type().shape().SerializeAsString())
        continue;  // the shape changes in the loop: left unknown
      onnx::ValueInfoProto vi;
      vi.set_name(n.output(k));
      *vi.mutable_type() = start;
      found.push_back(std::move(vi));
    }
  }
  for (auto& vi : found) *g.add_value_info() = std::move(vi);
  return !found.empty();
}

std::vector<std::pair<int, onnx::NodeProto>> Importer::adapt_ceil_mode_pools() {
  // ONNX's shape inference counts a ceil_mode window that would start in the end padding; onnxruntime (and
  // ONNX's reference implementation, PyTorch) drop it, so the extent the file computes is one less. Such a pooling gets, for inference only,
  // the end padding that gives the true extent, and stays opaque with the node as the file has it (its
  // values are onnxruntime's; the vocabulary's pooling has no ceil_mode).
  std::unordered_map<std::string, Shape> dims;
  const onnx::GraphProto& g = proto_.graph();
  for (const auto* list : {&g.input(), &g.value_info()})
    for (const auto& vi : *list)
      if (auto v = value_type(vi.type()); v.shape) dims[vi.name()] = *v.shape;
  for (const auto& t : g.initializer()) dims[t.name()] = tensor_dims(t);
  std::vector<std::pair<int, onnx::NodeProto>> replaced;
  for (int index = 0; index < proto_.graph().node_size(); ++index) {
    onnx::NodeProto& n = *proto_.mutable_graph()->mutable_node(index);
    const std::string& op = n.op_type();
    if (!is_default_domain(n.domain()) || (op != "MaxPool" && op != "AveragePool" && op != "LpPool")) continue;
    if (attr_int(n, "ceil_mode", 0) == 0 || attr_string(n, "auto_pad", "NOTSET") != "NOTSET" || n.input_size() < 1)
      continue;
    auto x = dims.find(n.input(0));
    auto kernel = attr_ints(n, "kernel_shape");
    if (x == dims.end() || x->second.size() < 3 || !kernel || kernel->size() != x->second.size() - 2) continue;
    const size_t spatial = kernel->size();
    const std::vector<int64_t> ones(spatial, 1);
    const std::vector<int64_t> strides = attr_ints(n, "strides").value_or(ones), dil = attr_ints(n, "dilations").value_or(ones);
    std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
    if (strides.size() != spatial || dil.size() != spatial || pads.size() != 2 * spatial) continue;
    // The stand-in floors (ceil_mode 0) with the end padding that gives each axis its true extent.
    bool adjust = false, expressible = true;
    for (size_t k = 0; k < spatial; ++k) {
      const int64_t in = x->second[k + 2], s = strides[k], ext = ((*kernel)[k] - 1) * dil[k] + 1;
      const int64_t begin = pads[k], end = pads[k + spatial];
      if (s < 1 || in + begin + end < ext) {
        expressible = false;
        continue;
      }
      const int64_t extent = pool_extent(in, (*kernel)[k], s, dil[k], begin, end, true);
      adjust |= extent != pool_extent(in, (*kernel)[k], s, dil[k], begin, end, true, false);
      const int64_t end_pad = std::max<int64_t>(0, (extent - 1) * s - (in + begin - ext));
      if (pool_extent(in, (*kernel)[k], s, dil[k], begin, end_pad, false) != extent) expressible = false;
      pads[k + spatial] = end_pad;
    }
    if (adjust && !expressible) {
      // No floor-mode stand-in gives the true extent (a window larger than the padded input on another axis):
      // ONNX's counted extent stays for inference, and the outputs are read as shapes that depend on values.
      for (const auto& out : n.output()) counted_extent_.insert(out);
      continue;
    }
    if (!adjust || !expressible || n.output_size() == 0) continue;
    replaced.emplace_back(index, n);
    AdaptedNode& a = adapted_[n.output(0)];
    if (a.original.empty()) a.original = n.SerializeAsString();
    a.stand_in = true;
    for (auto& attr : *n.mutable_attribute()) {
      if (attr.name() == "pads") attr.clear_ints();
      if (attr.name() == "ceil_mode") attr.set_i(0);
    }
    onnx::AttributeProto* p = nullptr;
    for (auto& attr : *n.mutable_attribute())
      if (attr.name() == "pads") p = &attr;
    if (!p) {
      p = n.add_attribute();
      p->set_name("pads");
      p->set_type(onnx::AttributeProto::INTS);
    }
    for (int64_t v : pads) p->add_ints(v);
    m_.notes.push_back(describe(n) + " stays opaque: ceil_mode drops a last window that starts in the end padding");
  }
  return replaced;
}

void Importer::collect_used(const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) used_.insert(in), ++readers_[in];
    for (const auto& in : outer_references(n)) used_.insert(in), ++readers_[in];  // read inside its subgraphs
    for (const auto& out : n.output()) producer_[out] = &n;
  }
  for (const auto& out : g.output()) used_.insert(out.name()), ++readers_[out.name()];
  // A size-dependent value is imported as the node it was folded from, which reads its own inputs.
  for (const std::string& name : size_dependent_) {
    onnx::NodeProto original;
    if (original.ParseFromString(folded_.at(name).original_node))
      for (const auto& in : original.input()) used_.insert(in);
  }
  // An adapted node that stays opaque is exported with its original inputs (GroupNormalization's scale,
  // say, which its opset-17 stand-in does not read): those are used too.
  for (const auto& [_, a] : adapted_) {
    onnx::NodeProto original;
    if (original.ParseFromString(a.original))
      for (const auto& in : original.input()) used_.insert(in);
  }
}

const Shape& Importer::shape_of(const std::string& name, const onnx::NodeProto* producer) {
  auto it = types_.find(name);
  if (it == types_.end() || !it->second.shape)
    fail("cannot infer the shape of '" + name + "'" + (producer ? " (output of " + describe(*producer) + ")" : "") +
         "; ONNX shape inference left it unknown");
  return *it->second.shape;
}

int32_t Importer::elem_type(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? 0 : it->second.elem_type;
}

ExprId Importer::add_leaf(OpKind op, const std::string& name, const Shape& dims) {
  ExprId id = m_.graph.add(ExprNode{op, dims, {}, name});
  record_shape(id, dims);
  return id;
}

ExprId Importer::add(OpKind op, std::vector<int64_t> attrs, std::vector<ExprId> kids) {
  std::vector<Shape> in;
  for (ExprId k : kids) in.push_back(shapes_[k.value]);
  Shape s = infer_shape(op, attrs, in);
  ExprId id = m_.graph.add(op, std::move(attrs), std::move(kids));
  record_shape(id, s);
  return id;
}

void Importer::record_shape(ExprId id, const Shape& s) {
  if (id.value == shapes_.size()) shapes_.push_back(s);
}

ExprId Importer::weight(const std::string& name, Tensor<float> value) { return weight(name, std::move(value), node_type_); }

ExprId Importer::weight(const std::string& name, Tensor<float> value, int32_t type) {
  Shape dims = value.shape;
  m_.weights.insert_or_assign(name, WeightValue(std::move(value), type));
  return add_leaf(OpKind::Weight, name, dims);
}

ExprId Importer::scalar_weight(const std::string& hint, float v) {
  std::string name = unique_name(hint);
  return weight(name, Tensor<float>(Shape{}, std::vector<float>{v}));
}

std::string Importer::unique_name(const std::string& hint) {
  std::string name = hint;
  for (int k = 1; types_.count(name) || m_.weights.count(name) || new_names_.count(name); ++k)
    name = hint + "_" + std::to_string(k);
  new_names_.insert(name);
  return name;
}

void Importer::add_initializer(const onnx::TensorProto& t) {
  Shape dims = tensor_dims(t);
  constants_[t.name()] = &t;
  bool zero_size = num_elements(dims) == 0;
  if (is_term_float_type(t.data_type()) && !zero_size) {
    try {
      if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        m_.weights.insert_or_assign(t.name(), WeightValue(dims, external_bytes(t, dir_, m_.source), t.data_type()));
        values_[t.name()] = add_leaf(OpKind::Weight, t.name(), dims);
        return;
      }
      values_[t.name()] = weight(t.name(), Tensor<float>(dims, tensor_floats(t)), t.data_type());
    } catch (const OnnxError& e) {
      fail(e.what());
    }
  } else {
    m_.passthrough[t.name()] = t.SerializeAsString();
  }
}

void Importer::add_graph_input(const onnx::ValueInfoProto& in) {
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

void Importer::add_graph_output(const onnx::ValueInfoProto& out) {
  const std::optional<ExprId> id = opaque_operand(out.name());  // a value, or an opaque output of dynamic shape
  if (!id) fail("graph output '" + out.name() + "' is not computed by the graph (or is a non-float initializer)");
  m_.outputs.push_back({out.name(), elem_type(out.name()), shapes_[id->value], false});
  m_.graph.add_root(*id);
}

void Importer::compact() {
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
        const int64_t old_id = ops::opaque_attrs(copy.attrs).id;
        auto [it, fresh] = opaque_ids.emplace(old_id, static_cast<int64_t>(opaque.size()));
        if (fresh) opaque.push_back(m_.opaque[old_id]);
        ops::set_opaque_id(copy.attrs, it->second);
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
  // The notes on opaque nodes that nothing reaches any more (a later node's form took them in) go too.
  std::vector<bool> stale(m_.notes.size(), false);
  for (const auto& [note, old_id] : opaque_notes_)
    if (note < stale.size() && !opaque_ids.contains(old_id)) stale[note] = true;
  size_t i = 0;
  std::erase_if(m_.notes, [&](const std::string&) { return stale[i++]; });
  opaque_notes_.clear();
}

}  // namespace detail

namespace {

using detail::Importer;

OnnxModel import_from(std::string_view bytes, const std::string& origin, const ImportOptions& options,
                      const std::filesystem::path& dir) {
  onnx::ModelProto proto;
  if (bytes.empty()) throw OnnxError(origin + ": empty file, not an ONNX model");
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw OnnxError(origin + ": not an ONNX model (protobuf parsing failed: the file is truncated or not a model)");
  return Importer(proto, origin, options, dir).run();
}

}  // namespace

int64_t symbolic_dim_value(const ImportOptions& options, const std::string& name, int64_t axis) {
  if (options.default_dim > 0) return options.default_dim;
  if (!options.default_dims) return 0;
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool batch = lower.find("batch") != std::string::npos || lower == "n" || lower == "b" || lower == "bs" ||
                     (name.empty() && axis == 0);
  return batch ? kDefaultBatch : kDefaultExtent;
}

int64_t probe_dim_value(int64_t value) { return value <= 2 ? value + 1 : value / 2 + 1; }

OnnxModel import_onnx_bytes(std::string_view bytes, const std::string& origin, const ImportOptions& options) {
  return import_from(bytes, origin, options, options.external_data_dir);
}

int graph_node_count(std::string_view model_bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) return 0;
  return model.graph().node_size();
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
