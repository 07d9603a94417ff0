// The matmul family's ONNX forms (rules/ops/matmul.h): MatMul and Gemm in; MatMul, or Gemm where a 2-d
// product has a bias or an operand transposed per run, out.
#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/matmul.h"

namespace teq::onnx_io::detail {

namespace {

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

constexpr ExportForm kExports[] = {
    {OpKind::Matmul, write_matmul},
};

constexpr ExportFusion kFusions[] = {
    {OpKind::EwAdd, gemm_with_bias},
};

}  // namespace

FamilyForms matmul_forms() { return {kImports, kExports, kFusions}; }

}  // namespace teq::onnx_io::detail
