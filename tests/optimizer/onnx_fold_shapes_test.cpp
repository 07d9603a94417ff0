// ONNX import folds integer shape arithmetic (optimizer/onnx/detail/fold_shapes.h): Shape, Gather, Add, Div,
// Unsqueeze, Concat ... feeding Slice and Reshape, as PyTorch writes them, become constants; the PyTorch
// exports in corpus/models/torch/ import without opaque shape nodes and round-trip.
#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/check.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq::onnx_io {
namespace {

struct GraphBuilder {
  onnx::ModelProto m;
  onnx::GraphProto* g;

  explicit GraphBuilder(int64_t opset) {
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    g = m.mutable_graph();
    g->set_name("g");
  }
  void input(const std::string& name, const std::string& batch, std::initializer_list<int64_t> rest) {
    auto* t = g->add_input();
    t->set_name(name);
    auto* tt = t->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param(batch);
    for (int64_t d : rest) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  /// A Constant int64 tensor; `scalar` makes it 0-d (one value).
  void ints(const std::string& out, std::vector<int64_t> v, bool scalar = false) {
    auto* a = node("Constant", {}, out)->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
  }
  void output(const std::string& name) { g->add_output()->set_name(name); }
};

/// x[batch, 16, 12] -> Slice of the last axis to (12 + 2) / 3 = 4 -> Reshape to [batch, -1] -> relu, with every
/// bound computed from Shape(x) the way PyTorch's exporter writes it.
onnx::ModelProto pytorch_style_model() {
  GraphBuilder b(13);
  b.input("x", "batch", {16, 12});
  b.node("Shape", {"x"}, "shape");
  b.ints("minus1", {-1});
  b.node("Gather", {"shape", "minus1"}, "last");  // [12]
  b.ints("two", {2});
  b.node("Add", {"last", "two"}, "plus2");  // [14]
  b.ints("three", {3});
  b.node("Div", {"plus2", "three"}, "third");  // [4]
  b.ints("zero", {0});
  b.node("Slice", {"x", "zero", "third", "minus1"}, "sliced");  // [batch, 16, 4]
  b.ints("zero_scalar", {0}, true);
  b.node("Gather", {"shape", "zero_scalar"}, "batch");  // batch, 0-d
  b.node("Unsqueeze", {"batch", "zero"}, "batch1");     // [batch]
  auto* axis = b.node("Concat", {"batch1", "minus1"}, "target")->add_attribute();  // [batch, -1]
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  b.node("Reshape", {"sliced", "target"}, "flat");  // [batch, 64]
  b.node("Relu", {"flat"}, "y");
  b.output("y");
  return b.m;
}

TEST(OnnxFoldShapes, PytorchStyleShapeArithmeticFolds) {
  OnnxModel m = import_onnx_bytes(pytorch_style_model().SerializeAsString(), "model.onnx", {.dims = {{"batch", 2}}});
  EXPECT_TRUE(m.opaque.empty()) << m.opaque[0].op_type;
  EXPECT_EQ(print_graph(m.graph), "(relu (reshape 2 64 (slice 2 0 4 (input x 2 16 12))))\n");
  // The same graph with another batch folds to other constants.
  OnnxModel m3 = import_onnx_bytes(pytorch_style_model().SerializeAsString(), "model.onnx", {.dims = {{"batch", 3}}});
  EXPECT_EQ(print_graph(m3.graph), "(relu (reshape 3 64 (slice 2 0 4 (input x 3 16 12))))\n");
}

TEST(OnnxFoldShapes, ArithmeticOnOverridableInitializersStays) {
  // Shape arithmetic reading an initializer that is also a graph input (overridable at run time) must not
  // fold: the Slice's bound is unknown, so its output's shape depends on a tensor's value. It stays an opaque
  // region (the Slice and what reads it, as the file has them), and the export imports again.
  onnx::ModelProto m = pytorch_style_model();
  auto* g = m.mutable_graph();
  for (auto& n : *g->mutable_node())
    if (n.output(0) == "two") {
      n.set_op_type("Identity");
      n.clear_attribute();
      n.add_input("two_init");
    }
  auto* init = g->add_initializer();
  init->set_name("two_init");
  init->set_data_type(onnx::TensorProto::INT64);
  init->add_dims(1);
  init->add_int64_data(2);
  auto* in = g->add_input();
  in->set_name("two_init");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::INT64);
  tt->mutable_shape()->add_dim()->set_dim_value(1);
  const OnnxModel imported = import_onnx_bytes(m.SerializeAsString(), "model.onnx", {.dims = {{"batch", 2}}});
  bool slice_dynamic = false;
  for (const OpaqueNode& op : imported.opaque)
    if (op.op_type == "Slice") slice_dynamic = !op.dynamic_outputs.empty() && op.dynamic_outputs[0];
  EXPECT_TRUE(slice_dynamic) << print_graph(imported.graph);
  const OnnxModel again = import_onnx_bytes(export_onnx_bytes(imported, imported.graph), "again", {.dims = {{"batch", 2}}});
  EXPECT_EQ(again.opaque.size(), imported.opaque.size());
}

// A ceil_mode pooling whose last window would start in the end padding: ONNX's shape inference counts that
// window, onnxruntime drops it (8 rows, stride 2: 4 windows, not 5). A shape read from its output must not fold
// to the counted extent (random_models.py seed 1040 of a campaign: an If on `extent > 4` took the wrong branch in
// the written file). x[batch, 1, rows, 4] pooled, then Where(Shape(pool)[2] > 4, pool, 0): zeros at 8 rows.
onnx::ModelProto ceil_pool_condition(int64_t rows) {
  GraphBuilder b(13);
  b.input("x", "batch", {1, rows, 4});
  auto* pool = b.node("MaxPool", {"x"}, "pool");
  for (auto [name, v] : {std::pair{"kernel_shape", std::vector<int64_t>{1, 1}}, std::pair{"strides", std::vector<int64_t>{2, 2}}}) {
    auto* a = pool->add_attribute();
    a->set_name(name), a->set_type(onnx::AttributeProto::INTS);
    for (int64_t e : v) a->add_ints(e);
  }
  auto* ceil = pool->add_attribute();
  ceil->set_name("ceil_mode"), ceil->set_type(onnx::AttributeProto::INT), ceil->set_i(1);
  b.node("Shape", {"pool"}, "pool_shape");
  b.ints("two", {2}, true);
  b.node("Gather", {"pool_shape", "two"}, "extent");
  b.ints("four", {4}, true);
  b.node("Greater", {"extent", "four"}, "wide");
  auto* zero = b.g->add_initializer();
  zero->set_name("zero"), zero->set_data_type(onnx::TensorProto::FLOAT), zero->add_float_data(0.0f);
  b.node("Where", {"wide", "pool", "zero"}, "y");
  b.output("y");
  return b.m;
}

TEST(OnnxFoldShapes, AShapeOfACeilModePoolThatDropsAWindowIsNotFoldedToTheCountedExtent) {
  for (int64_t rows : {8, 9}) {  // 8: the fifth window is dropped (4 > 4 is false); 9: it is not (5 > 4)
    SCOPED_TRACE("rows " + std::to_string(rows));
    const OnnxModel m = import_onnx_bytes(ceil_pool_condition(rows).SerializeAsString(), "pool.onnx",
                                          {.dims = {{"batch", 1}}});
    std::vector<double> x(static_cast<size_t>(rows * 4));
    for (size_t k = 0; k < x.size(); ++k) x[k] = 1.0 + static_cast<double>(k);
    const auto y = evaluate_model(m, {{"x", Tensor<double>({1, 1, rows, 4}, x)}});
    ASSERT_EQ(y.size(), 1u);
    const int64_t windows = rows == 8 ? 4 : 5;
    ASSERT_EQ(y[0].shape, (Shape{1, 1, windows, 2}));
    // Rows 0, 2, 4, ... and columns 0 and 2 of x where the condition holds, zeros where it does not.
    for (int64_t r = 0; r < windows; ++r)
      for (int64_t c = 0; c < 2; ++c)
        EXPECT_EQ(y[0].data[static_cast<size_t>(r * 2 + c)], rows == 8 ? 0.0 : x[static_cast<size_t>(2 * r * 4 + 2 * c)]);
  }
}

TEST(OnnxFoldShapes, MalformedConstantsAreNotFolded) {
  // A Constant whose values do not fill its dims (5 declared, 1 given) is not read past its end (the
  // sanitizer build checks it): it does not fold, and the import fails with a message or maps what it can.
  onnx::ModelProto m = pytorch_style_model();
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.output(0) == "minus1") n.mutable_attribute(0)->mutable_t()->set_dims(0, 5);
  try {
    import_onnx_bytes(m.SerializeAsString(), "model.onnx", {.dims = {{"batch", 2}}});
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find("model.onnx"), std::string::npos) << e.what();
  }
}

TEST(OnnxFoldShapes, TorchExportsImportAndRoundTrip) {
  const auto dir = std::filesystem::path(TEQ_SOURCE_DIR) / "corpus" / "models" / "torch";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".onnx") continue;
    ++seen;
    SCOPED_TRACE(entry.path().string());
    OnnxModel m = import_onnx(entry.path());
    for (const OpaqueNode& op : m.opaque)
      EXPECT_TRUE(op.op_type != "Shape" && op.op_type != "Gather" && op.op_type != "Slice") << op.op_type;
    OnnxModel again = import_onnx_bytes(export_onnx_bytes(m, m.graph, {.fold_constants = false}), "again");
    EXPECT_EQ(print_graph(again.graph), print_graph(m.graph));
  }
  EXPECT_GE(seen, 5);
}

TEST(OnnxFoldShapes, FoldedShapeNodesAreCountedForWhatTheRuntimeRunsUnfolded) {
  // onnxruntime at ORT_DISABLE_ALL runs each of these nodes on every inference; the export writes their values
  // as constants. The count is what the report gives that level's prediction (folded_shape_nodes).
  const auto encoder = std::filesystem::path(TEQ_SOURCE_DIR) / "corpus" / "models" / "torch" / "bert_encoder.onnx";
  const OnnxModel m = import_onnx(encoder);
  EXPECT_EQ(m.shape_nodes_folded, 14);  // per attention layer: Shape, Gather, Add, Div and three Mul
  const OnnxModel again = import_onnx_bytes(export_onnx_bytes(m, m.graph), "again");
  EXPECT_EQ(again.shape_nodes_folded, 0);
}

}  // namespace
}  // namespace teq::onnx_io
