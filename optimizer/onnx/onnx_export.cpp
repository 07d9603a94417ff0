#include "optimizer/onnx/onnx_export.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/fast_eval.h"
#include "rules/evaluator.h"
#include "rules/ops/conv.h"
#include "rules/ops/elementwise.h"
#include "rules/ops/layout.h"
#include "rules/ops/matmul.h"
#include "rules/ops/norm.h"
#include "rules/ops/opaque.h"
#include "rules/ops/pool.h"
#include "rules/ops/reduce.h"

namespace teq::onnx_io {

namespace {

using namespace detail;

bool is_constant_generator(OpKind op) { return is_constant_op(op); }

/// ONNX (pad_begin, pad_end) of one spatial axis for our padding attribute (-1 = SAME, extra at the end).
std::pair<int64_t, int64_t> onnx_pads(int64_t in, int64_t k, int64_t s, int64_t p) {
  if (p >= 0) return {p, p};
  int64_t out = (in + s - 1) / s, total = std::max<int64_t>((out - 1) * s + k - in, 0);
  return {total / 2, total - total / 2};
}

class Exporter {
 public:
  Exporter(const OnnxModel& model, const Expr& graph, const ExportOptions& options)
      : m_(model), g_(graph), options_(options) {}

  onnx::ModelProto run() {
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

 private:
  // ---- analysis and names ----------------------------------------------------------------------------


  void analyze() {
    const size_t n = g_.size();
    users_.assign(n, 0);
    is_const_.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      const ExprNode& node = g_.nodes()[i];
      if (node.op == OpKind::Var) throw OnnxError("export: the graph holds a pattern variable ?" + node.name);
      if (node.op == OpKind::Opaque && static_cast<size_t>(ops::opaque_attrs(node.attrs).id) >= m_.opaque.size())
        throw OnnxError("export: opaque node #" + std::to_string(ops::opaque_attrs(node.attrs).id) +
                        " is not in the model");
      for (ExprId c : node.children) ++users_[c.value];
      if (node.op == OpKind::Weight || is_constant_generator(node.op)) {
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

  void reserve_names() {
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

  std::string fresh(const std::string& hint = "teq") {
    std::string name;
    do name = hint + "_" + std::to_string(counter_++);
    while (taken_.count(name));
    taken_.insert(name);
    return name;
  }
  std::string out_name(ExprId id) {
    auto it = preferred_.find(id.value);
    return it != preferred_.end() ? it->second : fresh();
  }
  bool materialized(ExprId id) const {
    const ExprNode& node = g_[id];
    return is_const_[id.value] && node.op != OpKind::Weight && (options_.fold_constants || is_constant_generator(node.op));
  }

  // ---- nodes and initializers ------------------------------------------------------------------------

  onnx::NodeProto& add_node(const std::string& op, const std::vector<std::string>& inputs,
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
  /// One node with a fresh output name; returns that name.
  std::string add_simple(const std::string& op, const std::vector<std::string>& inputs, onnx::NodeProto** node = nullptr) {
    std::string out = fresh();
    onnx::NodeProto& n = add_node(op, inputs, {out});
    if (node) *node = &n;
    return out;
  }

  void need_initializer(const std::string& name) {
    if (!initializers_.insert(name).second) return;
    if (auto it = m_.weights.find(name); it != m_.weights.end()) {
      if (const auto& where = it->second.external())  // still in the input's file: referred to, not copied
        *graph_->add_initializer() = external_float_tensor(name, it->second.shape(), *where, m_.external_data_dir);
      else
        *graph_->add_initializer() = make_float_tensor(name, it->second.shape(), it->second.values()->data);
    } else if (auto pt = m_.passthrough.find(name); pt != m_.passthrough.end()) {
      if (!graph_->add_initializer()->ParseFromString(pt->second))
        throw OnnxError("export: passed-through initializer '" + name + "' is corrupt");
    } else {
      throw OnnxError("export: the graph uses weight '" + name + "', which the model does not hold");
    }
  }
  std::string int_constant(const std::vector<int64_t>& values) {
    auto it = int_constants_.find(values);
    if (it != int_constants_.end()) return it->second;
    std::string name = fresh("teq_shape");
    *graph_->add_initializer() = make_int_tensor(name, {static_cast<int64_t>(values.size())}, values);
    return int_constants_[values] = name;
  }
  std::string float_scalar(float v) {
    auto it = float_scalars_.find(v);
    if (it != float_scalars_.end()) return it->second;
    std::string name = fresh("teq_scalar");
    *graph_->add_initializer() = make_float_tensor(name, {}, {v});
    return float_scalars_[v] = name;
  }

  const Tensor<float>& const_value(ExprId id) {
    if (auto it = const_values_.find(id.value); it != const_values_.end()) return it->second;
    const ExprNode& node = g_[id];
    if (node.op == OpKind::Weight) {
      auto it = m_.weights.find(node.name);
      if (it == m_.weights.end()) throw OnnxError("export: the graph uses weight '" + node.name + "', which the model does not hold");
      return *read_weights_.emplace(node.name, it->second.values()).first->second;  // held while folding
    }
    std::vector<const Tensor<float>*> args;
    if (!is_constant_generator(node.op))  // generators read only their reference's shape
      for (ExprId c : node.children) args.push_back(&const_value(c));
    // On BLAS where it can be: a folded product of two weight matrices (a rule that reassociates a matmul
    // chain) took the reference loops 80 s on BERT.
    Tensor<float> v = evaluate_op_fast<float>(node.op, node.attrs, args, shapes_[id.value]);
    return const_values_.emplace(id.value, std::move(v)).first->second;
  }

  /// Name of the tensor holding node `id`'s value, emitting what computes it on first use.
  std::string emit(ExprId id) {
    if (auto it = names_.find(id.value); it != names_.end()) return it->second;
    const ExprNode& node = g_[id];
    std::string name;
    if (node.op == OpKind::Input) {
      name = node.name;
    } else if (node.op == OpKind::Weight) {
      name = node.name;
      need_initializer(name);
    } else if (materialized(id)) {
      name = fresh("teq_const");
      const Tensor<float>& v = const_value(id);
      *graph_->add_initializer() = make_float_tensor(name, v.shape, v.data);
    } else if (node.op == OpKind::Opaque) {
      name = emit_opaque(id);
    } else {
      name = emit_operator(id);
    }
    names_[id.value] = name;
    return name;
  }

  std::string emit_opaque(ExprId id) {
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

  /// Appends activation `act` after `x` (fused activations of conv2d and matmul).
  std::string activation(int64_t act, const std::string& x, ExprId id) {
    static const char* kOps[] = {"", "Sigmoid", "Relu", "Tanh"};
    add_node(kOps[act], {x}, {out_name(id)});
    return names_[id.value] = graph_->node(graph_->node_size() - 1).output(0);
  }
  /// A node whose output is `id`'s value, followed by its fused activation when there is one.
  std::string finish(const std::string& op, const std::vector<std::string>& inputs, ExprId id, int64_t act,
                     onnx::NodeProto** node) {
    if (act == 0) {
      onnx::NodeProto& n = add_node(op, inputs, {out_name(id)});
      if (node) *node = &n;
      return n.output(0);
    }
    std::string y = add_simple(op, inputs, node);
    return activation(act, y, id);
  }

  std::string slice(const std::string& x, int64_t axis, int64_t begin, int64_t end, ExprId id) {
    onnx::NodeProto* n = nullptr;
    if (m_.opset >= 10) return finish("Slice", {x, int_constant({begin}), int_constant({end}), int_constant({axis})}, id, 0, &n);
    std::string y = finish("Slice", {x}, id, 0, &n);
    add_attr(*n, "starts", std::vector<int64_t>{begin});
    add_attr(*n, "ends", std::vector<int64_t>{end});
    add_attr(*n, "axes", std::vector<int64_t>{axis});
    return y;
  }

  /// A zero Pad (ONNX order: begins, then ends): pads as an input from opset 11, an attribute before.
  std::string pad(const std::string& x, const std::vector<int64_t>& pads, ExprId id) {
    onnx::NodeProto* n = nullptr;
    if (m_.opset >= 11) return finish("Pad", {x, int_constant(pads)}, id, 0, &n);
    std::string y = finish("Pad", {x}, id, 0, &n);
    add_attr(*n, "pads", pads);
    return y;
  }

  /// How an operand of a binary element-wise node is written: at its term's shape, as the operand of its
  /// broadcast (ONNX broadcasts it again), or as a constant cut to the axes along which it varies.
  enum class Lean { Full, Unbroadcast, Compact };
  struct OperandForm {
    Lean lean = Lean::Full;
    Shape shape;  // the shape it has in the file
  };

  /// The operands of the binary element-wise node `id`, each in its lean form (operand_form) as long as
  /// ONNX's broadcasting still gives the node the shape of its term; else the first is written at its full
  /// shape. Each lean form is chosen against the other operand's term, not against what is written for it, so
  /// two lean operands can shrink the result: a constant compacted to 0-d divided by a broadcast 0-d input is
  /// a 0-d Div where the term has rank 3, and every node downstream has the wrong rank (a Concat axis out of
  /// range, issue 42). Checking the pair keeps the invariant the exporter relies on: each node's output has
  /// exactly its term's shape.
  std::pair<std::string, std::string> binary_operands(ExprId id) {
    const std::vector<ExprId>& kids = g_[id].children;
    OperandForm x = operand_form(kids[0], kids[1]);
    const OperandForm y = operand_form(kids[1], kids[0]);
    if (broadcast_of(x.shape, y.shape) != shapes_[id.value]) x = {Lean::Full, shapes_[kids[0].value]};
    std::string xn = write_operand(kids[0], x.lean);  // in this order: the node numbering stays as it was
    return {xn, write_operand(kids[1], y.lean)};
  }
  /// numpy's broadcast of two shapes (both are forms of one shape here, so their extents agree or are 1).
  static Shape broadcast_of(const Shape& a, const Shape& b) {
    Shape out(std::max(a.size(), b.size()), 1);
    for (size_t k = 1; k <= out.size(); ++k) {
      const int64_t da = k <= a.size() ? a[a.size() - k] : 1, db = k <= b.size() ? b[b.size() - k] : 1;
      out[out.size() - k] = da == 1 ? db : da;
    }
    return out;
  }

  /// Operand `c` of a binary element-wise node whose other operand is `other`: a broadcast is left to
  /// ONNX's own numpy broadcasting when the other operand already has the full shape.
  /// So is a folded constant that repeats along some axes (a bias the optimizer moved through a matmul,
  /// `broadcast(beta) @ W + broadcast(b)`): it is written at the smallest shape that broadcasts back to it.
  /// Written at full shape it stops onnxruntime's MatMul+Add fusion (which wants a bias of the last axis) and
  /// fixes the batch dimension into the file. Whether two lean forms together still give the full shape is
  /// binary_operands' business.
  OperandForm operand_form(ExprId c, ExprId other) {
    if (g_[c].op == OpKind::Broadcast && g_[other].op != OpKind::Broadcast)
      return {Lean::Unbroadcast, shapes_[g_[c].children[0].value]};
    if (materialized(c) && !materialized(other) && shapes_[other.value] == shapes_[c.value])
      if (const std::optional<Tensor<float>>& small = compacted(c)) return {Lean::Compact, small->shape};
    return {Lean::Full, shapes_[c.value]};
  }
  std::string write_operand(ExprId c, Lean lean) {
    switch (lean) {
      case Lean::Unbroadcast: return emit(g_[c].children[0]);
      case Lean::Compact: return compact_constant(c);
      case Lean::Full: break;
    }
    return emit(c);
  }
  /// Constant `c` cut to the axes along which it varies (repeated_axes_removed), computed once; nullopt
  /// when no axis repeats.
  const std::optional<Tensor<float>>& compacted(ExprId c) {
    auto it = compacted_.find(c.value);
    if (it == compacted_.end()) it = compacted_.emplace(c.value, repeated_axes_removed(const_value(c))).first;
    return it->second;
  }
  std::string compact_constant(ExprId c) {
    if (auto it = compact_names_.find(c.value); it != compact_names_.end()) return it->second;
    const std::optional<Tensor<float>>& small = compacted(c);
    if (!small) return emit(c);
    std::string name = fresh("teq_const");
    *graph_->add_initializer() = make_float_tensor(name, small->shape, small->data);
    return compact_names_[c.value] = name;
  }
  /// `v` with every axis along which all its slices are equal cut to extent 1 and the leading 1s dropped
  /// (numpy broadcasting restores it exactly); nullopt when no axis repeats.
  static std::optional<Tensor<float>> repeated_axes_removed(const Tensor<float>& v) {
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

  /// Conv2d with act 0 used only by this add, plus a bias [O] reshaped to [O,1,1] and broadcast: ONNX
  /// Conv's own bias input.
  std::optional<std::string> conv_with_bias(ExprId id) {
    const ExprNode& add = g_[id];
    for (int k = 0; k < 2; ++k) {
      ExprId conv = add.children[k], other = add.children[1 - k];
      const ExprNode& c = g_[conv];
      if (c.op != OpKind::Conv2d || fused_activation(c.op, c.attrs) != Activation::None || users_[conv.value] != 1 ||
          names_.count(conv.value) || materialized(conv) || g_[other].op != OpKind::Broadcast)
        continue;
      ExprId reshape = g_[other].children[0];
      const ExprNode& r = g_[reshape];
      const int64_t O = shapes_[conv.value][1];
      if (r.op != OpKind::Reshape || r.attrs != std::vector<int64_t>{O, 1, 1} ||
          shapes_[r.children[0].value] != Shape{O})
        continue;
      return emit_conv(conv, id, emit(r.children[0]));
    }
    return std::nullopt;
  }

  /// 2-d matmul with act 0 used only by this add, plus a bias that broadcasts to its shape: Gemm.
  std::optional<std::string> gemm_with_bias(ExprId id) {
    const ExprNode& add = g_[id];
    ExprId mm = add.children[0], other = add.children[1];
    const ExprNode& m = g_[mm];
    if (m.op != OpKind::Matmul || fused_activation(m.op, m.attrs) != Activation::None || users_[mm.value] != 1 ||
        names_.count(mm.value) || materialized(mm) || shapes_[m.children[0].value].size() != 2 ||
        shapes_[m.children[1].value].size() != 2)
      return std::nullopt;
    if (g_[other].op == OpKind::Broadcast) other = g_[other].children[0];
    return gemm(m, id, materialized(other) ? compact_constant(other) : emit(other));  // C broadcasts too
  }

  /// A 2-d transpose (perm 1,0) that only this operand reads and that is computed per run: Gemm's transA/transB
  /// reads the untransposed tensor instead of a copy (a weight that arrives as a graph input, say).
  std::optional<ExprId> gemm_transposed_operand(ExprId operand) const {
    const ExprNode& t = g_[operand];
    if (t.op != OpKind::Transpose || t.attrs != std::vector<int64_t>{1, 0} || users_[operand.value] != 1 ||
        names_.count(operand.value) || materialized(operand))
      return std::nullopt;
    return t.children[0];
  }

  std::string gemm(const ExprNode& m, ExprId result, const std::string& bias) {
    auto ta = gemm_transposed_operand(m.children[0]), tb = gemm_transposed_operand(m.children[1]);
    std::vector<std::string> inputs{emit(ta.value_or(m.children[0])), emit(tb.value_or(m.children[1]))};
    if (!bias.empty()) inputs.push_back(bias);
    onnx::NodeProto* n = nullptr;
    std::string y = finish("Gemm", inputs, result, fused_act(m), &n);
    if (ta) add_attr(*n, "transA", int64_t{1});
    if (tb) add_attr(*n, "transB", int64_t{1});
    return y;
  }
  static int64_t fused_act(const ExprNode& node) { return static_cast<int64_t>(fused_activation(node.op, node.attrs)); }

  std::string emit_conv(ExprId conv, ExprId result, const std::string& bias) {
    const ExprNode& node = g_[conv];
    const Shape &x = shapes_[node.children[0].value], &w = shapes_[node.children[1].value];
    std::vector<std::string> inputs{emit(node.children[0]), emit(node.children[1])};
    if (!bias.empty()) inputs.push_back(bias);
    const ops::ConvAttrs c = ops::conv_attrs(node.attrs);
    auto [hb, he] = onnx_pads(x[2], ops::dilated_extent(w[2], c.dh), c.sh, c.ph);
    auto [wb, we] = onnx_pads(x[3], ops::dilated_extent(w[3], c.dw), c.sw, c.pw);
    onnx::NodeProto* n = nullptr;
    std::string y = finish("Conv", inputs, result, static_cast<int64_t>(c.act), &n);
    add_attr(*n, "kernel_shape", std::vector<int64_t>{w[2], w[3]});
    add_attr(*n, "strides", std::vector<int64_t>{c.sh, c.sw});
    if (c.dh != 1 || c.dw != 1) add_attr(*n, "dilations", std::vector<int64_t>{c.dh, c.dw});
    add_attr(*n, "pads", std::vector<int64_t>{hb, wb, he, we});
    add_attr(*n, "group", x[1] / w[1]);
    return y;
  }

  /// Node `id` as an emit_* function reads it; arg(k) emits child k (with what it needs) and names it.
  struct Operands {
    const ExprNode& node;
    const std::vector<ExprId>& kids;
    const std::vector<int64_t>& a;
    std::function<std::string(size_t)> arg;
  };
  Operands operands(ExprId id) {
    const ExprNode& node = g_[id];
    return {node, node.children, node.attrs, [this, &kids = node.children](size_t k) { return emit(kids[k]); }};
  }

  std::string emit_gelu(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    // Gelu itself (its default, approximate='none', is the exact erf form) from opset 20; before it
    // 0.5 * x * (1 + erf(x / sqrt 2)).
    if (m_.opset >= 20) return finish("Gelu", {arg(0)}, id, 0, &n);
    if (m_.opset < 9) throw OnnxError("export: gelu needs Erf, which opset " + std::to_string(m_.opset) + " lacks");
    std::string x = arg(0);
    // x / sqrt 2 (not x * 0.7071): the form onnxruntime's Gelu fusion matches, as PyTorch writes it.
    std::string e = add_simple("Erf", {add_simple("Div", {x, float_scalar(1.41421356237309505f)})});
    std::string h = add_simple("Mul", {x, add_simple("Add", {e, float_scalar(1.0f)})});
    return finish("Mul", {h, float_scalar(0.5f)}, id, 0, &n);
  }

  std::string emit_clip(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    // Bounds num / 2^exp (exp -1: none) as float32, exact for every bound the importer writes.
    const ops::ClipAttrs c = ops::clip_attrs(a);
    auto value = [](const ops::ClipBound& b) {
      return static_cast<float>(std::ldexp(static_cast<double>(b.num), -static_cast<int>(b.exp)));
    };
    const bool has_lo = c.lo.present(), has_hi = c.hi.present();
    if (m_.opset >= 11) {
      std::vector<std::string> inputs{arg(0), has_lo ? float_scalar(value(c.lo)) : std::string()};
      if (has_hi) inputs.push_back(float_scalar(value(c.hi)));
      return finish("Clip", inputs, id, 0, &n);
    }
    std::string y = finish("Clip", {arg(0)}, id, 0, &n);
    if (has_lo) add_attr(*n, "min", value(c.lo));
    if (has_hi) add_attr(*n, "max", value(c.hi));
    return y;
  }

  std::string emit_reduce_mean(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    const ops::ReduceMeanAttrs r = ops::reduce_mean_attrs(node.attrs);
    const std::vector<int64_t>& axes = r.axes;
    // Opset 18 made axes an input.
    std::string y = m_.opset >= 18 ? finish("ReduceMean", {arg(0), int_constant(axes)}, id, 0, &n)
                                   : finish("ReduceMean", {arg(0)}, id, 0, &n);
    if (m_.opset < 18) add_attr(*n, "axes", axes);
    add_attr(*n, "keepdims", int64_t{r.keepdims});
    return y;
  }

  std::string emit_merge(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    // Tile the kernel `count` times along its input channels, then keep each output channel's own
    // block: the mask is merge itself applied to ones (rules/ops/conv.h has the one layout).
    if (m_.opset < 7) throw OnnxError("export: merge needs Tile with a repeats input and a broadcasting Mul, which opset " + std::to_string(m_.opset) + " lacks");
    const Shape& w = shapes_[kids[0].value];
    const Tensor<float> ones({w[0], w[1], 1, 1}, 1.0f);
    const Tensor<float>* ones_arg[] = {&ones};
    const int64_t count = ops::merge_count(a);
    const Tensor<float> mask =
        evaluate_op<float>(Arith<float>{}, OpKind::Merge, a, ones_arg, {w[0], w[1] * count, 1, 1});
    std::string name = fresh("teq_merge_mask");
    *graph_->add_initializer() = make_float_tensor(name, mask.shape, mask.data);
    std::string tiled = add_simple("Tile", {arg(0), int_constant({1, count, 1, 1})});
    return finish("Mul", {tiled, name}, id, 0, &n);
  }

  std::string emit_pool(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    const Shape& x = shapes_[kids[0].value];
    const ops::PoolAttrs p = ops::pool_attrs(a);
    auto [hb, he] = onnx_pads(x[2], p.kh, p.sh, p.ph);
    auto [wb, we] = onnx_pads(x[3], p.kw, p.sw, p.pw);
    std::string y = finish(node.op == OpKind::MaxPool ? "MaxPool" : "AveragePool", {arg(0)}, id, 0, &n);
    add_attr(*n, "kernel_shape", std::vector<int64_t>{p.kh, p.kw});
    add_attr(*n, "strides", std::vector<int64_t>{p.sh, p.sw});
    add_attr(*n, "pads", std::vector<int64_t>{hb, wb, he, we});
    if (node.op == OpKind::AvgPool) add_attr(*n, "count_include_pad", int64_t{p.include_pad});
    return y;
  }

  std::string emit_reshape(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    // A reshape the original has is written the way the original's follows the symbolic dimensions
    // (ExportOptions::reshape_targets); another keeps its leading dimensions as 0 ("copy from the input"), so
    // that a symbolic batch bound at import (a Flatten to [1, 2048], say) still follows the input.
    std::vector<int64_t> target(a.begin(), a.end());
    const Shape& x = shapes_[kids[0].value];
    if (auto known = options_.reshape_targets.find({x, Shape(a.begin(), a.end())});
        known != options_.reshape_targets.end()) {
      target = known->second;  // how the original's reshape follows a symbolic dimension
    } else {
      for (size_t d = 0; d < target.size() && d < x.size() && target[d] == x[d]; ++d) target[d] = 0;
    }
    return finish("Reshape", {arg(0), int_constant(target)}, id, 0, &n);
  }

  std::string emit_softmax(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    const int64_t rank = static_cast<int64_t>(shapes_[kids[0].value].size());
    const int64_t axis = ops::softmax_axis(a) < 0 ? ops::softmax_axis(a) + rank : ops::softmax_axis(a);
    if (m_.opset >= 13 || axis == rank - 1) {
      std::string y = finish("Softmax", {arg(0)}, id, 0, &n);
      add_attr(*n, "axis", m_.opset >= 13 ? axis : rank - 1);
      return y;
    }
    // Before opset 13 Softmax works on the last axis only (flattened): swap the axis there and back.
    std::vector<int64_t> perm(rank);
    for (int64_t d = 0; d < rank; ++d) perm[d] = d;
    std::swap(perm[axis], perm[rank - 1]);
    onnx::NodeProto* t = nullptr;
    std::string moved = add_simple("Transpose", {arg(0)}, &t);
    add_attr(*t, "perm", perm);
    std::string soft = add_simple("Softmax", {moved}, &t);
    add_attr(*t, "axis", rank - 1);
    std::string y = finish("Transpose", {soft}, id, 0, &n);
    add_attr(*n, "perm", perm);
    return y;
  }

  /// `id` under its broadcasts: what a broadcast operand is before numpy broadcasting.
  ExprId unbroadcast(ExprId id) const {
    while (g_[id].op == OpKind::Broadcast) id = g_[id].children[0];
    return id;
  }

  /// The import's decomposition of LayerNormalization, still whole in the optimized term, written back as
  /// the operator (opset 17 on), as the input had it: (x - mean) / sqrt(var + eps) * scale [+ bias], the means
  /// over the trailing axes, eps a scalar weight, scale and bias of the normalized axes' shape. Any other form
  /// (a rule rewrote part of it) is written node by node.
  std::optional<std::string> layer_norm(ExprId id) {
    if (m_.opset < 17) return std::nullopt;
    auto is = [&](ExprId e, OpKind op) { return g_[e].op == op; };
    // Of a binary node: its operand that is `op` and the other (either order), or nothing.
    auto split = [&](ExprId e, OpKind op) -> std::optional<std::pair<ExprId, ExprId>> {
      const auto& k = g_[e].children;
      if (k.size() != 2) return std::nullopt;
      if (is(k[0], op)) return std::pair{k[0], k[1]};
      if (is(k[1], op)) return std::pair{k[1], k[0]};
      return std::nullopt;
    };
    ExprId scaled = id;
    std::optional<ExprId> bias;
    if (is(id, OpKind::EwAdd)) {
      auto p = split(id, OpKind::EwMul);
      if (!p) return std::nullopt;
      scaled = p->first;
      bias = unbroadcast(p->second);
    } else if (!is(id, OpKind::EwMul)) {
      return std::nullopt;
    }
    auto q = split(scaled, OpKind::EwDiv);
    if (!q) return std::nullopt;
    const ExprId normed = q->first, scale = unbroadcast(q->second);
    const auto& div = g_[normed].children;
    const ExprId d = div[0], sd = unbroadcast(div[1]);
    if (!is(d, OpKind::EwSub) || !is(sd, OpKind::Sqrt)) return std::nullopt;
    const ExprId x = g_[d].children[0], mean = unbroadcast(g_[d].children[1]);
    const ExprId var_eps = g_[sd].children[0];
    if (!is(var_eps, OpKind::EwAdd) || !is(mean, OpKind::ReduceMean) || g_[mean].children[0] != x) return std::nullopt;
    auto r = split(var_eps, OpKind::ReduceMean);
    if (!r) return std::nullopt;
    const ExprId var = r->first, eps = unbroadcast(r->second);
    const ExprId sq = g_[var].children[0];
    if (!is(sq, OpKind::EwMul) || g_[sq].children[0] != d || g_[sq].children[1] != d) return std::nullopt;
    if (g_[var].attrs != g_[mean].attrs || !is(eps, OpKind::Weight)) return std::nullopt;
    const ops::ReduceMeanAttrs rm = ops::reduce_mean_attrs(g_[mean].attrs);
    const Shape& xs = shapes_[x.value];
    const int64_t rank = static_cast<int64_t>(xs.size());
    if (!rm.keepdims || rm.axes.empty()) return std::nullopt;
    const int64_t axis = rm.axes.front();
    for (size_t k = 0; k < rm.axes.size(); ++k)
      if (rm.axes[k] != axis + static_cast<int64_t>(k) || (k + 1 == rm.axes.size() && rm.axes[k] != rank - 1))
        return std::nullopt;
    const Shape normalized(xs.begin() + axis, xs.end());
    if (shapes_[scale.value] != normalized || (bias && shapes_[bias->value] != normalized)) return std::nullopt;
    auto e = m_.weights.find(g_[eps].name);
    if (e == m_.weights.end() || num_elements(e->second.shape()) != 1) return std::nullopt;
    std::vector<std::string> inputs{emit(x), emit(scale)};
    if (bias) inputs.push_back(emit(*bias));
    onnx::NodeProto* n = nullptr;
    std::string y = finish("LayerNormalization", inputs, id, 0, &n);
    add_attr(*n, "axis", axis);
    add_attr(*n, "epsilon", e->second.values()->data[0]);
    return y;
  }

  std::string emit_operator(ExprId id) {
    auto [node, kids, a, arg] = operands(id);
    onnx::NodeProto* n = nullptr;
    if (node.op == OpKind::EwAdd || node.op == OpKind::EwMul)
      if (auto y = layer_norm(id)) return *y;
    switch (node.op) {
      case OpKind::EwAdd:
        if (auto y = conv_with_bias(id)) return *y;
        if (auto y = gemm_with_bias(id)) return *y;
        [[fallthrough]];
      case OpKind::EwSub:
      case OpKind::EwMul:
      case OpKind::EwDiv: {
        static const std::map<OpKind, std::string> kOps{
            {OpKind::EwAdd, "Add"}, {OpKind::EwSub, "Sub"}, {OpKind::EwMul, "Mul"}, {OpKind::EwDiv, "Div"}};
        const auto [x, y] = binary_operands(id);
        // x * x as Pow(x, 2), the form onnxruntime's LayerNormalization fusion matches (the import reads it back
        // as x * x): written as Mul, an exported layer norm stays nine kernels at ORT_ENABLE_ALL.
        if (node.op == OpKind::EwMul && kids[0] == kids[1]) return finish("Pow", {x, float_scalar(2.0f)}, id, 0, &n);
        return finish(kOps.at(node.op), {x, y}, id, 0, &n);
      }
      case OpKind::Smul: return finish("Mul", {arg(0), arg(1)}, id, 0, &n);
      case OpKind::Relu: return finish("Relu", {arg(0)}, id, 0, &n);
      case OpKind::Tanh: return finish("Tanh", {arg(0)}, id, 0, &n);
      case OpKind::Sigmoid: return finish("Sigmoid", {arg(0)}, id, 0, &n);
      case OpKind::Gelu: return emit_gelu(id);
      case OpKind::Broadcast:
        if (m_.opset < 8) throw OnnxError("export: broadcast needs Expand, which opset " + std::to_string(m_.opset) + " lacks");
        return finish("Expand", {arg(0), int_constant(a)}, id, 0, &n);
      case OpKind::Noop: return finish("Identity", {arg(0)}, id, 0, &n);
      case OpKind::Matmul:
        // A 2-d product with an operand transposed per run: Gemm reads it untransposed (opset 11 makes C optional).
        if (m_.opset >= 11 && shapes_[kids[0].value].size() == 2 && shapes_[kids[1].value].size() == 2 &&
            (gemm_transposed_operand(kids[0]) || gemm_transposed_operand(kids[1])))
          return gemm(node, id, "");
        return finish("MatMul", {arg(0), arg(1)}, id, static_cast<int64_t>(ops::matmul_activation(a)), &n);
      case OpKind::Conv2d: return emit_conv(id, id, "");
      case OpKind::Enlarge: {
        const Shape& w = shapes_[kids[0].value];
        const ops::EnlargeAttrs e = ops::enlarge_attrs(a);
        int64_t dy = (e.kh - w[2]) / 2, dx = (e.kw - w[3]) / 2;
        return pad(arg(0), {0, 0, dy, dx, 0, 0, e.kh - w[2] - dy, e.kw - w[3] - dx}, id);
      }
      case OpKind::Pad: return pad(arg(0), a, id);
      case OpKind::Sqrt: return finish("Sqrt", {arg(0)}, id, 0, &n);
      case OpKind::Erf:
        if (m_.opset < 9) throw OnnxError("export: erf needs Erf, which opset " + std::to_string(m_.opset) + " lacks");
        return finish("Erf", {arg(0)}, id, 0, &n);
      case OpKind::Clip: return emit_clip(id);
      case OpKind::ReduceMean: return emit_reduce_mean(id);
      case OpKind::Merge: return emit_merge(id);
      case OpKind::MaxPool:
      case OpKind::AvgPool: return emit_pool(id);
      case OpKind::GlobalAvgPool: return finish("GlobalAveragePool", {arg(0)}, id, 0, &n);
      case OpKind::Concat: {
        std::vector<std::string> inputs;
        for (size_t k = 0; k < kids.size(); ++k) inputs.push_back(arg(k));
        std::string y = finish("Concat", inputs, id, 0, &n);
        add_attr(*n, "axis", ops::concat_axis(a));
        return y;
      }
      case OpKind::Split: {
        ops::SplitRange r = ops::split_range(a, shapes_[kids[0].value], shapes_[kids[1].value]);
        return slice(arg(0), r.axis, r.begin, r.end, id);
      }
      case OpKind::Slice: {
        const ops::SliceAttrs sl = ops::slice_attrs(a);
        int64_t axis = sl.axis < 0 ? sl.axis + static_cast<int64_t>(shapes_[kids[0].value].size()) : sl.axis;
        return slice(arg(0), axis, sl.begin, sl.end, id);
      }
      case OpKind::Transpose: {
        std::string y = finish("Transpose", {arg(0)}, id, 0, &n);
        add_attr(*n, "perm", a);
        return y;
      }
      case OpKind::Reshape: return emit_reshape(id);
      case OpKind::BatchNorm: {
        std::string y = finish("BatchNormalization", {arg(0), arg(1), arg(2), arg(3), arg(4)}, id, 0, &n);
        add_attr(*n, "epsilon", 0.0f);  // the importer folded epsilon into the variance
        return y;
      }
      case OpKind::Softmax: return emit_softmax(id);
      default: break;
    }
    throw OnnxError("export: operator " + std::string(op_name(node.op)) + " has no ONNX form");
  }

  const OnnxModel& m_;
  const Expr& g_;
  const ExportOptions& options_;
  onnx::ModelProto proto_;
  onnx::GraphProto* graph_ = nullptr;
  std::vector<Shape> shapes_;
  std::vector<size_t> users_;
  std::vector<bool> is_const_;
  std::map<std::pair<int64_t, std::vector<ExprId>>, std::vector<ExprId>> opaque_group_;
  std::set<int64_t> emitted_opaque_;
  std::unordered_map<uint32_t, std::string> names_, preferred_, compact_names_;
  std::unordered_map<uint32_t, std::optional<Tensor<float>>> compacted_;
  std::unordered_map<uint32_t, Tensor<float>> const_values_;
  std::map<std::string, std::shared_ptr<const Tensor<float>>> read_weights_;  // weights const_value read
  std::set<std::string> taken_, claimed_, node_names_, initializers_;
  std::map<std::vector<int64_t>, std::string> int_constants_;
  std::map<float, std::string> float_scalars_;
  size_t counter_ = 0, node_counter_ = 0;
};

}  // namespace

std::string export_onnx_bytes(const OnnxModel& model, const Expr& graph, const ExportOptions& options) {
  return Exporter(model, graph, options).run().SerializeAsString();
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
  onnx::ModelProto proto = Exporter(model, graph, options).run();
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
