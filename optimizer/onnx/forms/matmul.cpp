// The matmul family's ONNX forms (rules/ops/matmul.h): MatMul and Gemm in; MatMul, or Gemm where a 2-d
// product has a bias or an operand transposed per run, out; with ExportOptions::batched_linear_as_gemm a
// rank-3 (or higher) product by a 2-d operand with its bias as Reshape, Gemm, Reshape.
#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/matmul.h"
#include "rules/evaluator.h"

#include <functional>
#include <map>
#include <set>
#include <string_view>

namespace teq::onnx_io::detail {

namespace {

/// A linear layer on a batched activation: add(matmul(x, w), other), either order, x of rank 3 or more, w 2-d,
/// the matmul without a fused activation. Whether `other` is a bias the Gemm can take is the caller's question.
struct BatchedLinear {
  ExprId matmul, other;
};

/// `shape_of(id)`: the shape of a node's value.
template <class ShapeOf>
std::optional<BatchedLinear> batched_linear(const Expr& g, const ShapeOf& shape_of, ExprId add) {
  const ExprNode& a = g[add];
  if (a.op != OpKind::EwAdd || a.children.size() != 2) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    const ExprNode& m = g[a.children[side]];
    if (m.op != OpKind::Matmul || m.children.size() != 2 || fused_activation(m.op, m.attrs) != Activation::None)
      continue;
    if (shape_of(m.children[0]).size() >= 3 && shape_of(m.children[1]).size() == 2)
      return BatchedLinear{a.children[side], a.children[1 - side]};
  }
  return std::nullopt;
}

/// A broadcast of a vector of `n` elements: that vector.
std::optional<ExprId> broadcast_vector(const Expr& g, const std::function<const Shape&(ExprId)>& shape_of,
                                       ExprId other, int64_t n) {
  if (g[other].op != OpKind::Broadcast || shape_of(g[other].children[0]) != Shape{n}) return std::nullopt;
  return g[other].children[0];
}

// ---- import ------------------------------------------------------------------------------------------

void import_matmul(Importer& im, const onnx::NodeProto& n) {
  ExprId a = im.in(n, 0), b = im.in(n, 1);
  if (im.shape(a).size() < 2 || im.shape(b).size() < 2) throw NotInVocabulary{"1-d operand"};
  im.set_output(n, im.add(OpKind::Matmul, {0}, {a, b}));
}

/// alpha * op(A) @ op(B) + beta * C: transposes, a matmul, scalings by smul and a broadcast add.
void import_gemm(Importer& im, const onnx::NodeProto& n) {
  ExprId a = im.in(n, 0), b = im.in(n, 1);
  if (im.shape(a).size() != 2 || im.shape(b).size() != 2) throw NotInVocabulary{"operands not 2-d"};
  if (attr_int(n, "transA", 0)) a = im.add(OpKind::Transpose, {1, 0}, {a});
  if (attr_int(n, "transB", 0)) b = im.add(OpKind::Transpose, {1, 0}, {b});
  ExprId y = im.add(OpKind::Matmul, {0}, {a, b});
  const std::string hint = n.output(0);
  if (float alpha = attr_float(n, "alpha", 1.0f); alpha != 1.0f)
    y = im.add(OpKind::Smul, {}, {y, im.scalar_weight(hint + ".alpha", alpha)});
  if (im.has_input(n, 2)) {
    ExprId c = im.in(n, 2);
    if (float beta = attr_float(n, "beta", 1.0f); beta != 1.0f)
      c = im.add(OpKind::Smul, {}, {c, im.scalar_weight(hint + ".beta", beta)});
    y = im.add(OpKind::EwAdd, {}, {y, im.broadcast_to(c, im.shape(y))});
  }
  im.set_output(n, y);
}

constexpr ImportForm kImports[] = {
    {"MatMul", 1, kLatestOpset, import_matmul},
    {"Gemm", 1, kLatestOpset, import_gemm},
};

// ---- export ------------------------------------------------------------------------------------------

/// A 2-d transpose (perm 1,0) that only this operand reads and that is computed per run: Gemm's transA/transB
/// reads the untransposed tensor instead of a copy (a weight that arrives as a graph input, say).
std::optional<ExprId> gemm_transposed_operand(const Exporter& ex, ExprId operand) {
  const ExprNode& t = ex.graph()[operand];
  if (t.op != OpKind::Transpose || t.attrs != std::vector<int64_t>{1, 0} || ex.users(operand) != 1 ||
      ex.is_written(operand) || ex.materialized(operand))
    return std::nullopt;
  return t.children[0];
}

/// Matmul `m` as a Gemm computing `result`, with C = `bias` when there is one.
std::string write_gemm(Exporter& ex, const ExprNode& m, ExprId result, const std::string& bias) {
  auto ta = gemm_transposed_operand(ex, m.children[0]), tb = gemm_transposed_operand(ex, m.children[1]);
  std::vector<std::string> inputs{ex.emit(ta.value_or(m.children[0])), ex.emit(tb.value_or(m.children[1]))};
  if (!bias.empty()) inputs.push_back(bias);
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish("Gemm", inputs, result, fused_activation(m.op, m.attrs), &n);
  if (ta) add_attr(*n, "transA", int64_t{1});
  if (tb) add_attr(*n, "transB", int64_t{1});
  return y;
}

std::string write_matmul(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  const std::vector<ExprId>& kids = node.children;
  // A 2-d product with an operand transposed per run: Gemm reads it untransposed (opset 11 makes C optional).
  if (ex.opset() >= 11 && ex.shape(kids[0]).size() == 2 && ex.shape(kids[1]).size() == 2 &&
      (gemm_transposed_operand(ex, kids[0]) || gemm_transposed_operand(ex, kids[1])))
    return write_gemm(ex, node, id, "");
  return ex.finish("MatMul", {ex.operand(id, 0), ex.operand(id, 1)}, id, ops::matmul_activation(node.attrs), nullptr);
}

/// 2-d matmul with act 0 used only by this add, plus a bias that broadcasts to its shape: Gemm.
std::optional<std::string> gemm_with_bias(Exporter& ex, ExprId id) {
  const Expr& g = ex.graph();
  const ExprNode& add = g[id];
  ExprId mm = add.children[0], other = add.children[1];
  const ExprNode& m = g[mm];
  if (m.op != OpKind::Matmul || fused_activation(m.op, m.attrs) != Activation::None || ex.users(mm) != 1 ||
      ex.is_written(mm) || ex.materialized(mm) || ex.shape(m.children[0]).size() != 2 ||
      ex.shape(m.children[1]).size() != 2)
    return std::nullopt;
  if (g[other].op == OpKind::Broadcast) other = g[other].children[0];
  return write_gemm(ex, m, id, ex.materialized(other) ? ex.compact_constant(other) : ex.emit(other));  // C broadcasts too
}

/// A batched linear layer (above) as Reshape(x, [-1, K]), Gemm(., w, b), Reshape(., leading extents of x ++ [N]):
/// onnxruntime runs it as one Gemm, where it leaves a MatMul of a symbolic rank-3 shape and its Add apart
/// (ExportOptions::batched_linear_as_gemm). The leading extents are read from x itself (Shape with start and
/// end, once per x), so the file is valid at every size x takes.
std::optional<std::string> batched_gemm_with_bias(Exporter& ex, ExprId id) {
  // onnxruntime's CPU Gemm is a float kernel; opset 15 brings Shape's start and end.
  if (!ex.options().batched_linear_as_gemm || ex.opset() < 15 || ex.elem_type(id) != onnx::TensorProto::FLOAT ||
      num_elements(ex.shape(id)) < ex.options().batched_linear_min_elements)
    return std::nullopt;
  const std::function<const Shape&(ExprId)> shape_of = [&ex](ExprId k) -> const Shape& { return ex.shape(k); };
  const std::optional<BatchedLinear> linear = batched_linear(ex.graph(), shape_of, id);
  if (!linear || ex.users(linear->matmul) != 1 || ex.is_written(linear->matmul) || ex.materialized(linear->matmul))
    return std::nullopt;
  const ExprNode& m = ex.graph()[linear->matmul];
  const int64_t k = ex.shape(m.children[1])[0], n = ex.shape(m.children[1])[1];
  // C: a vector broadcast, or a folded constant that varies along the last axis only (a bias a rule made of
  // the bias and another weight), written as the vector Gemm broadcasts over the rows.
  std::string bias;
  if (std::optional<ExprId> v = broadcast_vector(ex.graph(), shape_of, linear->other, n)) {
    bias = ex.materialized(*v) ? ex.compact_constant(*v) : ex.emit(*v);
  } else if (ex.materialized(linear->other)) {
    const std::optional<Tensor<float>>& compact = ex.compacted(linear->other);
    if (!compact || compact->size() != n || compact->shape.empty() || compact->shape.back() != n) return std::nullopt;
    bias = ex.add_initializer("bias", Tensor<float>(Shape{n}, compact->data));
  } else {
    return std::nullopt;
  }
  const std::string x = ex.emit(m.children[0]);
  const std::string rows = ex.add_simple("Reshape", {x, ex.int_constant({-1, k})});
  const std::string product = ex.add_simple("Gemm", {rows, ex.emit(m.children[1]), bias});
  std::string& leading = ex.written_once("leading extents of " + x);
  if (leading.empty()) {
    onnx::NodeProto* shape = nullptr;
    leading = ex.add_simple("Shape", {x}, &shape);
    add_attr(*shape, "start", int64_t{0});
    add_attr(*shape, "end", int64_t{-1});
  }
  std::string& target = ex.written_once("leading extents of " + x + " and " + std::to_string(n));
  if (target.empty()) {
    onnx::NodeProto* concat = nullptr;
    target = ex.add_simple("Concat", {leading, ex.int_constant({n})}, &concat);
    add_attr(*concat, "axis", int64_t{0});
  }
  return ex.finish("Reshape", {product, target}, id);
}

/// The 2-d form first (it needs no reshape), then the batched one.
std::optional<std::string> gemm_fusions(Exporter& ex, ExprId id) {
  if (std::optional<std::string> y = gemm_with_bias(ex, id)) return y;
  return batched_gemm_with_bias(ex, id);
}

constexpr ExportForm kExports[] = {
    {OpKind::Matmul, write_matmul},
};

constexpr ExportFusion kFusions[] = {
    {OpKind::EwAdd, gemm_fusions},
};

}  // namespace

FamilyForms matmul_forms() { return {kImports, kExports, kFusions}; }

}  // namespace teq::onnx_io::detail

namespace teq::onnx_io {

bool has_batched_linear(const Expr& graph, int64_t opset, const std::vector<bool>& precomputable,
                        int64_t min_elements) {
  if (opset < 15) return false;
  const std::vector<Shape> shapes = infer_shapes(graph, {});
  const std::function<const Shape&(ExprId)> shape_of = [&shapes](ExprId k) -> const Shape& { return shapes[k.value]; };
  for (size_t i = 0; i < graph.size(); ++i)
    if (const auto linear = detail::batched_linear(graph, shape_of, ExprId(i));
        linear && num_elements(shapes[i]) >= min_elements) {
      const int64_t n = shapes[linear->matmul.value].back();
      if (detail::broadcast_vector(graph, shape_of, linear->other, n) || precomputable[linear->other.value]) return true;
    }
  return false;
}

int batched_linear_extra_kernels(std::string_view model_bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) return 0;
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, std::vector<const onnx::NodeProto*>> readers;
  for (const onnx::NodeProto& n : model.graph().node()) {
    for (const std::string& out : n.output()) producer[out] = &n;
    for (const std::string& in : n.input()) readers[in].push_back(&n);
  }
  auto made_by = [&](const std::string& name, std::string_view op) -> const onnx::NodeProto* {
    auto it = producer.find(name);
    return it != producer.end() && it->second->op_type() == op ? it->second : nullptr;
  };
  int layers = 0;
  std::set<std::string> targets, extents;  // the Concats and Shapes, each written once however many layers read it
  for (const onnx::NodeProto& gemm : model.graph().node()) {
    if (gemm.op_type() != "Gemm" || gemm.input_size() < 3 || !made_by(gemm.input(0), "Reshape")) continue;
    const auto& after = readers[gemm.output(0)];
    if (after.size() != 1 || after[0]->op_type() != "Reshape" || after[0]->input_size() < 2) continue;
    const onnx::NodeProto* concat = made_by(after[0]->input(1), "Concat");
    if (!concat || concat->input_size() < 1) continue;
    const onnx::NodeProto* shape = made_by(concat->input(0), "Shape");
    if (!shape) continue;
    ++layers;
    targets.insert(concat->output(0));
    extents.insert(shape->output(0));
  }
  return layers + static_cast<int>(targets.size() + extents.size());
}

}  // namespace teq::onnx_io
