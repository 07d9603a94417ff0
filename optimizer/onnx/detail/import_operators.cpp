// The node mapping of the ONNX importer (detail/importer.h): each ONNX node onto the vocabulary through its
// operator family's import form (detail/onnx_forms.h), in the canonical form the rules are written for
// (docs/eqsat-run.md lists the mapping), or kept opaque; and what the forms build terms with.
#include <algorithm>
#include <cmath>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/fold_shapes.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/opset_adapt.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/semantics.h"

namespace teq::onnx_io::detail {

void Importer::import_node(const onnx::NodeProto& n) {
  for (const auto& in : n.input())
    if (!in.empty() && !values_.count(in) && !dynamic_.count(in) && !m_.passthrough.count(in))
      fail(describe(n) + " reads '" + in + "', which no earlier node, input or initializer defines");
  // A value computed from the symbolic dimensions stays the computation the file has: the node as it was
  // before folding, opaque; so does a node that reads such a value (its result would otherwise hold one size).
  if (n.op_type() == "Constant" && n.output_size() == 1 && size_dependent_.count(n.output(0))) {
    onnx::NodeProto original;
    if (!original.ParseFromString(folded_.at(n.output(0)).original_node)) fail(describe(n) + ": folded node is corrupt");
    return import_opaque(original);
  }
  if (auto dependent = size_dependent_input(n); dependent && !reshape_follows_sizes(n) && !expand_follows_sizes(n)) {
    note_opaque(n, "reads '" + *dependent + "', which is computed from the symbolic input dimensions");
    return import_opaque(n);
  }
  const AdaptedNode* adapted = adapted_node(n);
  if (adapted && adapted->stand_in) {
    // An operator newer than opset 17 whose working node only carries its shapes: named as the model has it.
    onnx::NodeProto original;
    original.ParseFromString(adapted->original);
    try {
      if (adapted->gelu && import_gelu(n, *adapted->gelu)) return;
      if (original.op_type() == "Gelu")
        note_opaque(original, "approximate='" + attr_string(original, "approximate", "none") +
                                  "' is neither the vocabulary's gelu (exact) nor its gelu_tanh");
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

void Importer::note_opaque(const onnx::NodeProto& n, const std::string& reason) {
  if (reason.empty()) return;
  m_.notes.push_back(describe(n) + " stays opaque: " + reason);
  opaque_notes_.emplace_back(m_.notes.size() - 1, static_cast<int64_t>(m_.opaque.size()));  // import_opaque's id
}

ExprId Importer::in_any_float(const onnx::NodeProto& n, int k) {
  if (k >= n.input_size() || n.input(k).empty()) throw NotInVocabulary{"input " + std::to_string(k) + " missing"};
  const std::string& name = n.input(k);
  auto it = values_.find(name);
  if (it == values_.end() && dynamic_.count(name))
    throw NotInVocabulary{"input '" + name + "' has a shape that depends on tensor values"};
  if (it == values_.end() || !is_term_float_type(elem_type(name)))
    throw NotInVocabulary{"input '" + name + "' is not a float tensor (FLOAT, FLOAT16 or BFLOAT16)"};
  return it->second;
}

ExprId Importer::in(const onnx::NodeProto& n, int k) {
  const ExprId id = in_any_float(n, k);
  if (const int32_t type = elem_type(n.input(k)); type != node_type_)
    throw NotInVocabulary{"input '" + n.input(k) + "' has element type " + std::to_string(type) +
                          ", the node's result " + std::to_string(node_type_)};
  return id;
}

std::optional<std::vector<double>> Importer::const_input(const onnx::NodeProto& n, int k) {
  if (!has_input(n, k)) return std::nullopt;
  auto it = constants_.find(n.input(k));
  if (it == constants_.end()) return std::nullopt;
  return tensor_numbers(*it->second);
}

void Importer::set_output(const onnx::NodeProto& n, ExprId id, int k) {
  const Shape& expected = out_shape(n, k);
  if (shapes_[id.value] != expected)
    throw NotInVocabulary{"mapped shape " + to_string(shapes_[id.value]) + " differs from ONNX's " +
                          to_string(expected)};
  pending_.emplace_back(n.output(k), id);
}

ExprId Importer::broadcast_to(ExprId x, const Shape& target) {
  if (shapes_[x.value] == target) return x;
  std::vector<int64_t> attrs(target.begin(), target.end());
  return add(OpKind::Broadcast, attrs, {x});
}

void Importer::require_single_output(const onnx::NodeProto& n) {
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty() && used_.count(n.output(k)))
      throw NotInVocabulary{"optional output '" + n.output(k) + "' is used"};
}

bool Importer::import_vocabulary(const onnx::NodeProto& n) {
  pending_.clear();
  if (n.op_type() == "Constant") return import_constant(n);
  // A term's type is its operands' (rules are type-generic): every used output has the node's one float type.
  node_type_ = n.output_size() > 0 ? elem_type(n.output(0)) : 0;
  for (const auto& out : n.output())
    if (!out.empty() && used_.count(out) && (!is_term_float_type(elem_type(out)) || elem_type(out) != node_type_))
      throw NotInVocabulary{"output '" + out + "' is not a float tensor (FLOAT, FLOAT16 or BFLOAT16)"};
  const ImportForm* form = find_import_form(n.op_type(), m_.opset);
  if (!form) return false;
  form->map(*this, n);
  for (const auto& [name, id] : pending_) values_[name] = id;
  return true;
}

bool Importer::import_constant(const onnx::NodeProto& n) {
  const auto* value = find_attr(n, "value");
  if (!value || !value->has_t()) throw NotInVocabulary{"Constant without a tensor 'value'"};
  onnx::TensorProto t = value->t();
  t.set_name(n.output(0));
  Shape dims = tensor_dims(t);
  constant_storage_.push_back(std::make_unique<onnx::TensorProto>(t));
  constants_[t.name()] = constant_storage_.back().get();
  if (is_term_float_type(t.data_type()) && num_elements(dims) > 0)
    values_[t.name()] = weight(t.name(), Tensor<float>(dims, tensor_floats(t)), t.data_type());
  else
    m_.passthrough[t.name()] = t.SerializeAsString();
  return true;
}

bool Importer::constant_all(const onnx::NodeProto& n, int k, double v) {
  auto values = const_input(n, k);
  return values && !values->empty() && std::all_of(values->begin(), values->end(), [v](double x) { return x == v; });
}

const Tensor<float>* Importer::weight_value(ExprId id) const {
  const ExprNode& node = m_.graph[id];
  if (node.op != OpKind::Weight) return nullptr;
  auto it = m_.weights.find(node.name);
  if (it == m_.weights.end()) return nullptr;
  // Held for the rest of the import: a weight in an external file is read only when a fold asks for it.
  return read_weights_.emplace(node.name, it->second.values()).first->second.get();
}

std::optional<ExprId> Importer::value(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::nullopt : std::optional<ExprId>(it->second);
}

size_t Importer::readers(const std::string& name) const {
  auto it = readers_.find(name);
  return it == readers_.end() ? 0 : it->second;
}

ExprId Importer::derived_weight(const std::string& key, const std::function<ExprId()>& make) {
  auto it = derived_weights_.find(key);
  if (it == derived_weights_.end()) it = derived_weights_.emplace(key, make()).first;
  return it->second;
}

const onnx::NodeProto* Importer::sole_producer(const std::string& name, const std::string& op_type) const {
  auto it = producer_.find(name);
  if (it == producer_.end() || it->second->op_type() != op_type || !is_default_domain(it->second->domain()))
    return nullptr;
  auto r = readers_.find(name);
  return r != readers_.end() && r->second == 1 ? it->second : nullptr;
}

bool Importer::is_constant(const std::string& name, double v) {
  auto it = constants_.find(name);
  if (it == constants_.end()) return false;
  auto x = tensor_numbers(*it->second);
  return x && x->size() == 1 && std::fabs((*x)[0] - v) <= 1e-6;
}

const AdaptedNode* Importer::adapted_node(const onnx::NodeProto& n) const {
  if (adapted_.empty() || n.output_size() == 0) return nullptr;
  auto it = adapted_.find(n.output(0));
  return it == adapted_.end() ? nullptr : &it->second;
}

bool Importer::import_gelu(const onnx::NodeProto& n, OpKind gelu) {
  pending_.clear();
  node_type_ = elem_type(n.output(0));
  if (!is_term_float_type(node_type_)) throw NotInVocabulary{"not a float tensor (FLOAT, FLOAT16 or BFLOAT16)"};
  set_output(n, add(gelu, {}, {in(n, 0)}));
  for (const auto& [name, id] : pending_) values_[name] = id;
  return true;
}

void Importer::import_opaque(const onnx::NodeProto& working) {
  // A node adapted to opset 17 is exported as the model had it, with its original inputs.
  onnx::NodeProto original;
  const AdaptedNode* adapted = adapted_node(working);
  if (adapted && !original.ParseFromString(adapted->original)) fail(describe(working) + ": adapted node is corrupt");
  const onnx::NodeProto& n = adapted ? original : working;
  OpaqueNode node{n.op_type(), n.domain(), n.name(), n.SerializeAsString(), {}, {}, {}, {}};
  // Control flow is written as the file has it, without the sizes shape inference put into its subgraphs.
  if (auto cf = n.output_size() > 0 ? control_flow_.find(n.output(0)) : control_flow_.end(); cf != control_flow_.end())
    node.proto = cf->second;
  std::vector<ExprId> kids;
  for (const auto& name : n.input()) {
    const std::optional<ExprId> operand = name.empty() ? std::nullopt : opaque_operand(name);
    if (!operand) {
      node.input_child.push_back(-1);  // optional input left out, or a passed-through initializer
      continue;
    }
    node.input_child.push_back(static_cast<int>(kids.size()));
    kids.push_back(*operand);
  }
  for (const auto& name : outer_references(n)) {
    const std::optional<ExprId> operand = opaque_operand(name);
    if (!operand) {
      if (!m_.passthrough.count(name))
        fail(describe(n) + " reads '" + name + "' in a subgraph, which no earlier node, input or initializer defines");
      node.implicit_inputs.emplace_back(name, -1);
      continue;
    }
    node.implicit_inputs.emplace_back(name, static_cast<int>(kids.size()));
    kids.push_back(*operand);
  }
  // ONNX's shapes downstream of a counted ceil_mode extent are counted from it too: not trusted either.
  bool after_counted = false;
  for (const auto& name : n.input()) after_counted |= counted_extent_.count(name) > 0;
  for (const auto& [name, _] : node.implicit_inputs) after_counted |= counted_extent_.count(name) > 0;
  if (after_counted)
    for (const auto& out : n.output())
      if (!out.empty()) counted_extent_.insert(out);
  const int64_t id = static_cast<int64_t>(m_.opaque.size());
  node.dynamic_outputs.assign(static_cast<size_t>(n.output_size()), false);
  for (int k = 0; k < n.output_size(); ++k) {
    const std::string& out = n.output(k);
    node.output_types.push_back(out.empty() ? 0 : elem_type(out));
    if (out.empty() || !used_.count(out)) continue;
    // A shape that depends on tensor values (inference left it unknown), or a zero-size one: the output is an
    // operand of opaque readers only, with a stand-in shape (OpaqueNode::dynamic_outputs).
    auto t = types_.find(out);
    const bool known = t != types_.end() && t->second.shape && num_elements(*t->second.shape) > 0 &&
                       !counted_extent_.count(out);
    const Shape s = known ? *t->second.shape : stand_in_shape(out);
    std::vector<int64_t> attrs{id, k};
    attrs.insert(attrs.end(), s.begin(), s.end());
    const ExprId e = add(OpKind::Opaque, std::move(attrs), kids);
    if (known) {
      values_[out] = e;
      continue;
    }
    node.dynamic_outputs[static_cast<size_t>(k)] = true;
    dynamic_[out] = e;
    const bool counted = counted_extent_.count(out) > 0;
    const bool zero_size = !counted && t != types_.end() && t->second.shape;
    const std::string why = counted     ? "ONNX infers from a ceil_mode pooling's last window, which onnxruntime drops"
                            : zero_size ? "has a zero-size dimension"
                            : is_default_domain(n.domain()) ? "depends on tensor values"
                                                            : "ONNX cannot infer (an operator of domain '" + n.domain() + "')";
    m_.notes.push_back(describe(n) + " computes '" + out + "', whose shape " + why +
                       ": it and its readers stay as the file has them");
    opaque_notes_.emplace_back(m_.notes.size() - 1, id);
  }
  m_.opaque.push_back(std::move(node));
}

std::optional<ExprId> Importer::opaque_operand(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (auto it = dynamic_.find(name); it != dynamic_.end()) return it->second;
  return std::nullopt;
}

Shape Importer::stand_in_shape(const std::string& name) const {
  Shape s{1};
  if (auto t = types_.find(name); t != types_.end() && t->second.shape) s = *t->second.shape;
  else if (auto p = partial_shapes_.find(name); p != partial_shapes_.end()) s = p->second;
  for (int64_t& d : s) d = std::max<int64_t>(d, 1);
  return s;
}

}  // namespace teq::onnx_io::detail
