#include "optimizer/onnx/onnx_export.h"

#include <fstream>

#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/fast_eval.h"
#include "rules/evaluator.h"
#include "rules/ops/opaque.h"

namespace teq::onnx_io {

namespace detail {

namespace {

/// Sets the type the exporter writes constants in for one node's form, and restores the enclosing one.
class WritingType {
 public:
  WritingType(int32_t& slot, int32_t type) : slot_(slot), saved_(slot) {
    if (is_term_float_type(type)) slot = type;
  }
  ~WritingType() { slot_ = saved_; }
  WritingType(const WritingType&) = delete;
  WritingType& operator=(const WritingType&) = delete;

 private:
  int32_t& slot_;
  int32_t saved_;
};

/// `v` with every axis along which all its slices are equal cut to extent 1 and the leading 1s dropped
/// (numpy broadcasting restores it exactly); nullopt when no axis repeats.
std::optional<Tensor<float>> repeated_axes_removed(const Tensor<float>& v) {
  const size_t rank = v.shape.size();
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * v.shape[d];
  Shape kept = v.shape;
  for (size_t d = 0; d < rank; ++d) {
    if (v.shape[d] == 1) continue;
    bool repeats = true;
    for (int64_t i = 0; i < v.size() && repeats; ++i)
      repeats = v.data[i] == v.data[i - (i / stride[d] % v.shape[d]) * stride[d]];  // == its slice 0 along d
    if (repeats) kept[d] = 1;
  }
  if (kept == v.shape) return std::nullopt;
  // Kept strides index the small tensor; a cut axis reads slice 0 of the large one.
  std::vector<float> data(num_elements(kept));
  for (int64_t j = 0; j < static_cast<int64_t>(data.size()); ++j) {
    int64_t rest = j, from = 0;
    for (size_t d = rank; d-- > 0;) {
      from += (rest % kept[d]) * stride[d];
      rest /= kept[d];
    }
    data[j] = v.data[from];
  }
  size_t lead = 0;
  while (lead < kept.size() && kept[lead] == 1) ++lead;
  return Tensor<float>(Shape(kept.begin() + static_cast<std::ptrdiff_t>(lead), kept.end()), std::move(data));
}

}  // namespace

onnx::ModelProto Exporter::run() {
  if (!proto_.ParseFromString(m_.shell)) throw OnnxError(m_.source + ": the imported model's shell is corrupt");
  if (g_.roots().size() != m_.outputs.size())
    throw OnnxError("export: the graph has " + std::to_string(g_.roots().size()) + " roots but the model " +
                    std::to_string(m_.outputs.size()) + " outputs");
  shapes_ = infer_shapes(g_, {});
  analyze();
  reserve_names();
  graph_ = proto_.mutable_graph();
  for (size_t k = 0; k < g_.roots().size(); ++k) {
    const std::string& out = m_.outputs[k].name;
    std::string name = emit(g_.roots()[k]);
    if (name != out) add_node("Identity", {name}, {out});
  }
  for (const TensorInfo& in : m_.inputs)
    if (in.is_weight) need_initializer(in.name);
  return std::move(proto_);
}

// ---- analysis and names ------------------------------------------------------------------------------

void Exporter::analyze() {
  const size_t n = g_.size();
  users_.assign(n, 0);
  readers_.assign(n, {});
  is_const_.assign(n, false);
  types_ = expr_elem_types(m_, g_);
  for (size_t i = 0; i < n; ++i) {
    const ExprNode& node = g_.nodes()[i];
    if (node.op == OpKind::Var) throw OnnxError("export: the graph holds a pattern variable ?" + node.name);
    if (node.op == OpKind::Opaque && static_cast<size_t>(ops::opaque_attrs(node.attrs).id) >= m_.opaque.size())
      throw OnnxError("export: opaque node #" + std::to_string(ops::opaque_attrs(node.attrs).id) +
                      " is not in the model");
    for (ExprId c : node.children) {
      ++users_[c.value];
      if (readers_[c.value].empty() || readers_[c.value].back() != ExprId(i)) readers_[c.value].push_back(ExprId(i));
    }
    if (node.op == OpKind::Weight || is_constant_op(node.op)) {
      is_const_[i] = true;
    } else if (node.op != OpKind::Input && node.op != OpKind::Opaque) {
      bool all = true;
      for (ExprId c : node.children) all = all && is_const_[c.value];
      is_const_[i] = all;
    }
    if (node.op == OpKind::Opaque) {
      opaque_group_[{ops::opaque_attrs(node.attrs).id, node.children}].push_back(ExprId(i));
    }
  }
  for (ExprId r : g_.roots()) ++users_[r.value];
}

void Exporter::reserve_names() {
  for (const TensorInfo& t : m_.inputs) taken_.insert(t.name);
  for (const TensorInfo& t : m_.outputs) taken_.insert(t.name);
  for (const auto& [name, _] : m_.weights) taken_.insert(name);
  for (const auto& [name, _] : m_.passthrough) taken_.insert(name);
  for (const OpaqueNode& op : m_.opaque) {
    onnx::NodeProto n;
    if (!n.ParseFromString(op.proto)) throw OnnxError("export: opaque node proto is corrupt");
    for (const auto& s : n.input()) taken_.insert(s);
    for (const auto& s : n.output()) taken_.insert(s);
    if (!n.name().empty()) node_names_.insert(n.name());
  }
  // The node computing output k is named after it (the first time a node appears among the roots).
  for (size_t k = 0; k < g_.roots().size(); ++k) {
    ExprId r = g_.roots()[k];
    const ExprNode& node = g_[r];
    if (is_leaf(node.op) || materialized(r) || preferred_.count(r.value)) continue;
    preferred_[r.value] = m_.outputs[k].name;
    claimed_.insert(m_.outputs[k].name);
  }
}

std::string Exporter::fresh(const std::string& hint) {
  std::string name;
  do name = hint + "_" + std::to_string(counter_++);
  while (taken_.count(name));
  taken_.insert(name);
  return name;
}

std::string Exporter::out_name(ExprId id) {
  auto it = preferred_.find(id.value);
  return it != preferred_.end() ? it->second : fresh();
}

bool Exporter::materialized(ExprId id) const {
  const ExprNode& node = g_[id];
  return is_const_[id.value] && node.op != OpKind::Weight && (options_.fold_constants || is_constant_op(node.op));
}

const Tensor<float>* Exporter::find_weight(const std::string& name) const {
  auto it = m_.weights.find(name);
  if (it == m_.weights.end()) return nullptr;
  return read_weights_.emplace(name, it->second.values()).first->second.get();  // held while exporting
}

// ---- nodes and initializers --------------------------------------------------------------------------

onnx::NodeProto& Exporter::add_node(const std::string& op, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs) {
  onnx::NodeProto& n = *graph_->add_node();
  n.set_op_type(op);
  std::string name;
  do name = op + "_" + std::to_string(node_counter_++);
  while (node_names_.count(name));
  node_names_.insert(name);
  n.set_name(name);
  for (const auto& s : inputs) n.add_input(s);
  for (const auto& s : outputs) n.add_output(s);
  return n;
}

std::string Exporter::add_simple(const std::string& op, const std::vector<std::string>& inputs,
                                 onnx::NodeProto** node) {
  std::string out = fresh();
  onnx::NodeProto& n = add_node(op, inputs, {out});
  if (node) *node = &n;
  return out;
}

std::string Exporter::finish(const std::string& op, const std::vector<std::string>& inputs, ExprId id,
                             Activation act, onnx::NodeProto** node) {
  if (act == Activation::None) {
    onnx::NodeProto& n = add_node(op, inputs, {out_name(id)});
    if (node) *node = &n;
    return n.output(0);
  }
  std::string y = add_simple(op, inputs, node);
  // The fused activation after it, as its own node (ONNX types by TASO's activation numbering).
  static const char* kOps[] = {"", "Sigmoid", "Relu", "Tanh"};
  add_node(kOps[static_cast<int64_t>(act)], {y}, {out_name(id)});
  return names_[id.value] = graph_->node(graph_->node_size() - 1).output(0);
}

std::vector<std::string> Exporter::finish_outputs(const std::string& op, const std::vector<std::string>& inputs,
                                                  const std::vector<ExprId>& ids, onnx::NodeProto** node) {
  std::vector<std::string> outputs;
  for (ExprId id : ids) outputs.push_back(out_name(id));
  onnx::NodeProto& n = add_node(op, inputs, outputs);
  for (size_t k = 0; k < ids.size(); ++k) names_[ids[k].value] = outputs[k];
  if (node) *node = &n;
  return outputs;
}

void Exporter::need_initializer(const std::string& name) {
  if (!initializers_.insert(name).second) return;
  if (auto it = m_.weights.find(name); it != m_.weights.end()) {
    const int32_t type = it->second.elem_type();
    if (const auto& where = it->second.external())  // still in the input's file: referred to, not copied
      *graph_->add_initializer() = external_float_tensor(name, it->second.shape(), *where, m_.external_data_dir, type);
    else
      *graph_->add_initializer() = make_float_tensor(name, it->second.shape(), it->second.values()->data, type);
  } else if (auto pt = m_.passthrough.find(name); pt != m_.passthrough.end()) {
    if (!graph_->add_initializer()->ParseFromString(pt->second))
      throw OnnxError("export: passed-through initializer '" + name + "' is corrupt");
  } else {
    throw OnnxError("export: the graph uses weight '" + name + "', which the model does not hold");
  }
}

std::string Exporter::add_initializer(const std::string& hint, const Tensor<float>& v) {
  std::string name = fresh(hint);
  *graph_->add_initializer() = make_float_tensor(name, v.shape, v.data, writing_type_);
  return name;
}

std::string Exporter::int_constant(const std::vector<int64_t>& values) {
  auto it = int_constants_.find(values);
  if (it != int_constants_.end()) return it->second;
  std::string name = fresh("teq_shape");
  *graph_->add_initializer() = make_int_tensor(name, {static_cast<int64_t>(values.size())}, values);
  return int_constants_[values] = name;
}

std::string Exporter::input_extent(const InputAxis& at) {
  std::string& written = written_once("extent " + at.input + ":" + std::to_string(at.axis));
  if (!written.empty()) return written;
  onnx::NodeProto* shape = nullptr;
  if (m_.opset >= 15) {
    written = add_simple("Shape", {at.input}, &shape);
    add_attr(*shape, "start", at.axis);
    add_attr(*shape, "end", at.axis + 1);
    return written;
  }
  onnx::NodeProto* gather = nullptr;
  written = add_simple("Gather", {add_simple("Shape", {at.input}), int_constant({at.axis})}, &gather);
  add_attr(*gather, "axis", int64_t{0});
  return written;
}

std::string Exporter::float_scalar(float v) {
  auto it = float_scalars_.find({writing_type_, v});
  if (it != float_scalars_.end()) return it->second;
  std::string name = fresh("teq_scalar");
  *graph_->add_initializer() = make_float_tensor(name, {}, {v}, writing_type_);
  return float_scalars_[{writing_type_, v}] = name;
}

const Tensor<float>& Exporter::const_value(ExprId id) {
  if (auto it = const_values_.find(id.value); it != const_values_.end()) return it->second;
  const ExprNode& node = g_[id];
  if (node.op == OpKind::Weight) {
    const Tensor<float>* w = find_weight(node.name);
    if (!w) throw OnnxError("export: the graph uses weight '" + node.name + "', which the model does not hold");
    return *w;
  }
  std::vector<const Tensor<float>*> args;
  if (!is_constant_op(node.op))  // generators read only their reference's shape
    for (ExprId c : node.children) args.push_back(&const_value(c));
  // On BLAS where it can be: a folded product of two weight matrices (a rule that reassociates a matmul
  // chain) took the reference loops 80 s on BERT.
  Tensor<float> v = evaluate_op_fast<float>(node.op, node.attrs, args, shapes_[id.value]);
  return const_values_.emplace(id.value, std::move(v)).first->second;
}

const std::optional<Tensor<float>>& Exporter::compacted(ExprId c) {
  auto it = compacted_.find(c.value);
  if (it == compacted_.end()) it = compacted_.emplace(c.value, repeated_axes_removed(const_value(c))).first;
  return it->second;
}

std::string Exporter::compact_constant(ExprId c) {
  if (auto it = compact_names_.find(c.value); it != compact_names_.end()) return it->second;
  const std::optional<Tensor<float>>& small = compacted(c);
  if (!small) return emit(c);
  const WritingType as_c(writing_type_, types_[c.value]);
  std::string name = add_initializer("teq_const", *small);
  return compact_names_[c.value] = name;
}

std::string Exporter::slice(const std::string& x, int64_t axis, int64_t begin, int64_t end, ExprId id) {
  if (m_.opset >= 10)
    return finish("Slice", {x, int_constant({begin}), int_constant({end}), int_constant({axis})}, id);
  onnx::NodeProto* n = nullptr;
  std::string y = finish("Slice", {x}, id, Activation::None, &n);
  add_attr(*n, "starts", std::vector<int64_t>{begin});
  add_attr(*n, "ends", std::vector<int64_t>{end});
  add_attr(*n, "axes", std::vector<int64_t>{axis});
  return y;
}

std::string Exporter::zero_pad(const std::string& x, const std::vector<int64_t>& pads, ExprId id) {
  if (m_.opset >= 11) return finish("Pad", {x, int_constant(pads)}, id);
  onnx::NodeProto* n = nullptr;
  std::string y = finish("Pad", {x}, id, Activation::None, &n);
  add_attr(*n, "pads", pads);
  return y;
}

// ---- the walk ----------------------------------------------------------------------------------------

std::string Exporter::emit(ExprId id) {
  if (auto it = names_.find(id.value); it != names_.end()) return it->second;
  const ExprNode& node = g_[id];
  std::string name;
  if (node.op == OpKind::Input) {
    name = node.name;
  } else if (node.op == OpKind::Weight) {
    name = node.name;
    need_initializer(name);
  } else if (materialized(id)) {
    const Tensor<float>& v = const_value(id);
    const WritingType as_id(writing_type_, types_[id.value]);
    name = add_initializer("teq_const", v);
  } else if (node.op == OpKind::Opaque) {
    name = emit_opaque(id);
  } else {
    name = emit_operator(id);
  }
  names_[id.value] = name;
  return name;
}

std::string Exporter::emit_opaque(ExprId id) {
  const ExprNode& node = g_[id];
  const int64_t op_id = ops::opaque_attrs(node.attrs).id;
  const OpaqueNode& op = m_.opaque[op_id];
  onnx::NodeProto proto;
  proto.ParseFromString(op.proto);
  for (int k = 0; k < proto.input_size(); ++k) {
    int child = k < static_cast<int>(op.input_child.size()) ? op.input_child[k] : -1;
    if (child >= 0) {
      if (static_cast<size_t>(child) >= node.children.size())
        throw OnnxError("export: opaque node #" + std::to_string(op_id) + " lost an operand");
      proto.set_input(k, emit(node.children[child]));
    } else if (!proto.input(k).empty() && m_.passthrough.count(proto.input(k))) {
      need_initializer(proto.input(k));
    }
  }
  // What its subgraphs read from outside, renamed to where the optimized graph computes it.
  for (const auto& [outer, child] : op.implicit_inputs) {
    if (child < 0) {
      need_initializer(outer);
      continue;
    }
    if (static_cast<size_t>(child) >= node.children.size())
      throw OnnxError("export: opaque node #" + std::to_string(op_id) + " lost an operand");
    const std::string name = emit(node.children[static_cast<size_t>(child)]);
    if (name != outer) rename_outer_reference(proto, outer, name);
  }
  // Every Expr node of this operator with these operands shares the one ONNX node.
  const auto& group = opaque_group_.at({op_id, node.children});
  bool copy = !emitted_opaque_.insert(op_id).second;  // the same operator again with other operands
  for (int k = 0; k < proto.output_size(); ++k) {
    if (proto.output(k).empty()) continue;
    std::optional<std::string> name;
    for (ExprId e : group)
      if (ops::opaque_attrs(g_[e].attrs).output == k && preferred_.count(e.value)) name = preferred_[e.value];
    if (!name) name = copy || claimed_.count(proto.output(k)) ? fresh() : proto.output(k);
    proto.set_output(k, *name);
    for (ExprId e : group)
      if (ops::opaque_attrs(g_[e].attrs).output == k) names_[e.value] = *name;
  }
  if (proto.name().empty() || copy) proto.set_name(fresh("teq_opaque"));
  *graph_->add_node() = proto;
  return names_.at(id.value);
}

std::string Exporter::emit_operator(ExprId id) {
  const OpKind op = g_[id].op;
  const WritingType as_id(writing_type_, types_[id.value]);  // the constants its form writes
  for (const ExportFusion* fusion : export_fusions(op))
    if (std::optional<std::string> y = fusion->try_write(*this, id)) return *y;
  if (const ExportForm* form = find_export_form(op)) return form->write(*this, id);
  throw OnnxError("export: operator " + std::string(op_name(op)) + " has no ONNX form");
}

}  // namespace detail

std::string export_onnx_bytes(const OnnxModel& model, const Expr& graph, const ExportOptions& options) {
  return detail::Exporter(model, graph, options).run().SerializeAsString();
}

namespace {

/// Writes `proto` to `path`, its large initializers to PATH.data when `external`; returns that data file or
/// empty. Initializers still in the input's data files (relative to `source_dir`) are copied over a chunk at a
/// time, or read in when the file is written without external data.
std::filesystem::path write_model(onnx::ModelProto& proto, const std::filesystem::path& path, bool external,
                                  const std::filesystem::path& source_dir) {
  std::filesystem::path data;
  if (external) {
    // Named after the model file, beside it: the location recorded in the model is that name alone.
    data = path;
    data += ".data";
    if (detail::move_to_external_data(proto, data, detail::kExternalDataThreshold, source_dir) == 0) data.clear();
  } else {
    for (auto& t : *proto.mutable_graph()->mutable_initializer())
      detail::load_tensor_data(t, source_dir, "the input model");
  }
  std::string bytes = proto.SerializeAsString();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw OnnxError(path.string() + ": cannot open for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw OnnxError(path.string() + ": write failed");
  return data;
}

}  // namespace

std::filesystem::path export_onnx(const OnnxModel& model, const Expr& graph, const std::filesystem::path& path,
                                  const ExportOptions& options) {
  onnx::ModelProto proto = detail::Exporter(model, graph, options).run();
  return write_model(proto, path, options.external_data.value_or(model.external_data), model.external_data_dir);
}

std::filesystem::path copy_model(std::string_view bytes, const std::filesystem::path& source_dir,
                                 const std::filesystem::path& path) {
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw OnnxError(path.string() + ": the input model no longer parses");
  // Floating-point tensors stay in the input's data file until they are copied, a chunk at a time.
  const bool external = detail::load_external_data(proto, source_dir, "the input model", detail::ExternalLoad::LeaveFloats);
  return write_model(proto, path, external, source_dir);
}

}  // namespace teq::onnx_io
