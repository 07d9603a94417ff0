// ONNX import of valid models that the ONNX library linked (schemas up to opset 17) cannot read as they are:
// opsets 18 to 21 (nodes adapted to their opset-17 form, exported at the original opset), external tensor
// data (loaded from beside the model, written back beside the output), and dimensions given by input and
// axis; and the operators of real PyTorch exports (Sqrt, Erf, Clip, ReduceMean, Pad and its folds into
// AveragePool/Conv, Pow with a constant exponent, LayerNormalization). Models are built here with protobuf,
// so these tests need no Python.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/check.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/arith.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq::onnx_io {
namespace {

namespace fs = std::filesystem;

/// A model builder: declared float inputs/outputs and nodes, at a given opset.
struct ModelBuilder {
  onnx::ModelProto m;
  explicit ModelBuilder(int64_t opset, int64_t ir = 8) {
    m.set_ir_version(ir);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    m.mutable_graph()->set_name("g");
  }
  onnx::ValueInfoProto* value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
                              const std::vector<int64_t>& dims) {
    auto* v = list->Add();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d > 0) dim->set_dim_value(d);  // 0: a dimension with neither a value nor a name
    }
    return v;
  }
  void input(const std::string& name, const std::vector<int64_t>& dims) { value(m.mutable_graph()->mutable_input(), name, dims); }
  void output(const std::string& name) { m.mutable_graph()->add_output()->set_name(name); }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(out.at(0));
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return *n;
  }
  void ints(const std::string& name, const std::vector<int64_t>& v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
  }
  onnx::TensorProto& floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    return *t;
  }
  std::string bytes() const { return m.SerializeAsString(); }
};

void set_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

std::string error_of(const std::string& bytes, const ImportOptions& options = {}) {
  try {
    import_onnx_bytes(bytes, "model.onnx", options);
  } catch (const OnnxError& e) {
    return e.what();
  }
  return "";
}

onnx::ModelProto exported(const OnnxModel& m) {
  onnx::ModelProto p;
  EXPECT_TRUE(p.ParseFromString(export_onnx_bytes(m, m.graph)));
  return p;
}

size_t count_ops(const Expr& g, OpKind op) {
  size_t n = 0;
  for (const ExprNode& node : g.nodes()) n += node.op == op;
  return n;
}

const onnx::NodeProto* find_node(const onnx::ModelProto& p, const std::string& op) {
  for (const auto& n : p.graph().node())
    if (n.op_type() == op) return &n;
  return nullptr;
}

TEST(OnnxOpset18, ReduceAxesInputIsReadAndExportedAsTheModelHadIt) {
  for (int64_t opset : {18, 19, 20, 21}) {
    ModelBuilder b(opset, opset >= 21 ? 10 : 9);
    b.input("x", {2, 3, 4});
    b.ints("axes", {1});
    set_attr(b.node("ReduceMax", {"x", "axes"}, {"m"}), "keepdims", 1);
    b.node("Relu", {"m"}, {"y"});
    b.output("y");
    OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
    EXPECT_EQ(m.opset, opset);
    ASSERT_EQ(m.opaque.size(), 1u);
    // The opset-17 form's shape (axes as an attribute) reached the graph: [2,1,4].
    EXPECT_EQ(print_graph(m.graph).find("(opaque 0 0 2 1 4 (input x 2 3 4))") != std::string::npos, true)
        << print_graph(m.graph);
    // Export: the opaque node as the model had it (axes an input), at the model's opset and IR version.
    onnx::ModelProto p = exported(m);
    EXPECT_EQ(p.opset_import(0).version(), opset);
    EXPECT_EQ(p.ir_version(), opset >= 21 ? 10 : 9);
    const onnx::NodeProto* r = find_node(p, "ReduceMax");
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->input_size(), 2);
    EXPECT_EQ(r->input(1), "axes");
    bool axes_initializer = false;
    for (const auto& t : p.graph().initializer()) axes_initializer |= t.name() == "axes";
    EXPECT_TRUE(axes_initializer);
    for (const auto& a : r->attribute()) EXPECT_NE(a.name(), "axes");
  }
}

TEST(OnnxCanonicalImport, BatchNormNotAfterAConvFoldsEpsilonIntoANewVarianceWeight) {
  // After a Relu (or a conv whose output is read twice) the batch norm stays; its epsilon goes into the
  // variance, since the vocabulary's batchnorm has none.
  for (bool conv_read_twice : {false, true}) {
    ModelBuilder b(13);
    b.input("x", {1, 2, 3, 3});
    b.floats("w", {2, 2, 1, 1}, {1, 2, 3, 4});
    for (const char* p : {"s", "b", "m"}) b.floats(p, {2}, {0.5f, 0.25f});
    b.floats("v", {2}, {1.0f, 2.0f});
    b.node("Conv", {"x", "w"}, {"c"});
    b.node(conv_read_twice ? "Identity" : "Relu", {"c"}, {"r"});
    auto& bn = b.node("BatchNormalization", {conv_read_twice ? "c" : "r", "s", "b", "m", "v"}, {"y"});
    auto* eps = bn.add_attribute();
    eps->set_name("epsilon");
    eps->set_type(onnx::AttributeProto::FLOAT);
    eps->set_f(0.125f);
    b.output("y");
    if (conv_read_twice) b.output("r");
    OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
    EXPECT_TRUE(m.folded.empty());
    const std::string g = print_graph(m.graph);
    EXPECT_NE(g.find("(batchnorm "), std::string::npos) << g;
    ASSERT_TRUE(m.weights.count("v+eps")) << g;
    EXPECT_EQ(m.weights.at("v+eps").values()->data, (std::vector<float>{1.125f, 2.125f}));
  }
}

TEST(OnnxCanonicalImport, IdentityArithmeticIsRemoved) {
  ModelBuilder b(13);
  b.input("x", {2, 3});
  b.floats("one", {1}, {1});
  b.floats("zero", {2, 3}, std::vector<float>(6, 0));
  b.floats("half", {1}, {0.5f});
  b.node("Mul", {"one", "x"}, {"a"});
  b.node("Sub", {"a", "zero"}, {"c"});
  b.node("Div", {"c", "one"}, {"d"});
  b.node("Mul", {"d", "half"}, {"e"});  // not an identity: stays
  b.node("Relu", {"e"}, {"y"});
  b.output("y");
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
  EXPECT_EQ(m.folded.size(), 3u);
  EXPECT_EQ(count_ops(m.graph, OpKind::EwMul) + count_ops(m.graph, OpKind::Smul), 1u) << print_graph(m.graph);
  EXPECT_EQ(count_ops(m.graph, OpKind::EwSub) + count_ops(m.graph, OpKind::EwDiv), 0u) << print_graph(m.graph);
}

TEST(OnnxOpset18, ReduceMeanIsTheVocabularysAndExportedWithAnAxesInput) {
  for (int64_t opset : {18, 21}) {
    ModelBuilder b(opset, opset >= 21 ? 10 : 9);
    b.input("x", {2, 3, 4});
    b.ints("axes", {-1, 0});
    set_attr(b.node("ReduceMean", {"x", "axes"}, {"y"}), "keepdims", 0);
    b.output("y");
    OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
    EXPECT_TRUE(m.opaque.empty());
    // Axes made non-negative and sorted.
    EXPECT_EQ(print_graph(m.graph), "(reduce_mean 0 0 2 (input x 2 3 4))\n");
    const onnx::ModelProto p = exported(m);
    const onnx::NodeProto* r = find_node(p, "ReduceMean");
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->input_size(), 2);  // opset 18 takes axes as an input
    for (const auto& a : r->attribute()) EXPECT_NE(a.name(), "axes");
    EXPECT_EQ(print_graph(import_onnx_bytes(p.SerializeAsString(), "again").graph), print_graph(m.graph));
  }
}

TEST(OnnxOpset18, NoopWithEmptyAxesIsTheInput) {
  ModelBuilder b(18);
  b.input("x", {2, 3});
  set_attr(b.node("ReduceMax", {"x"}, {"m"}), "noop_with_empty_axes", 1);
  b.node("Relu", {"m"}, {"y"});
  b.output("y");
  EXPECT_EQ(print_graph(import_onnx_bytes(b.bytes(), "model.onnx").graph), "(relu (input x 2 3))\n");
  // Without noop_with_empty_axes no axes means every axis, as at opset 13.
  ModelBuilder c(18);
  c.input("x", {2, 3});
  c.node("ReduceMax", {"x"}, {"y"});
  c.output("y");
  EXPECT_NE(print_graph(import_onnx_bytes(c.bytes(), "model.onnx").graph).find("(opaque 0 0 1 1 "), std::string::npos);
}

TEST(OnnxOpset18, SplitWithNumOutputs) {
  ModelBuilder b(18);
  b.input("x", {2, 6});
  auto& s = b.node("Split", {"x"}, {"a", "c"});
  set_attr(s, "axis", 1);
  set_attr(s, "num_outputs", 2);
  b.node("Add", {"a", "c"}, {"y"});
  b.output("y");
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
  EXPECT_EQ(print_graph(m.graph), "(ewadd (slice 1 0 3 (input x 2 6)) (slice 1 3 6 (input x 2 6)))\n");
  // Written back as the one Split the file had (num_outputs, no sizes), not as two Slices.
  onnx::ModelProto p = exported(m);
  EXPECT_EQ(p.opset_import(0).version(), 18);
  const onnx::NodeProto* split = find_node(p, "Split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->input_size(), 1);
  EXPECT_EQ(split->output_size(), 2);
  EXPECT_EQ(find_node(p, "Slice"), nullptr);
  EXPECT_EQ(print_graph(import_onnx_bytes(p.SerializeAsString(), "model.onnx").graph), print_graph(m.graph));
}

/// Slices that tile an axis are written as one Split, with their sizes where the parts differ (an input from
/// opset 13, the attribute before), without them where they are equal; slices that leave a gap stay slices.
TEST(OnnxExportSplit, SlicesTilingAnAxisAreOneSplitAtEveryOpset) {
  for (int64_t opset : {11, 13, 17, 18}) {
    for (bool equal : {true, false}) {
      ModelBuilder b(opset);
      b.input("x", {2, 6});
      auto& s = b.node("Split", {"x"}, {"a", "c"});
      set_attr(s, "axis", 1);
      if (!equal && opset >= 13) {
        b.ints("sizes", {2, 4});
        s.add_input("sizes");
      } else if (!equal) {
        set_attr(s, "split", std::vector<int64_t>{2, 4});
      } else if (opset >= 18) {
        set_attr(s, "num_outputs", 2);
      }
      b.node("Relu", {"a"}, {"y"});
      b.node("Neg", {"c"}, {"z"});
      b.output("y");
      b.output("z");
      OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
      onnx::ModelProto p = exported(m);
      SCOPED_TRACE("opset " + std::to_string(opset) + (equal ? " equal" : " 2+4"));
      const onnx::NodeProto* split = find_node(p, "Split");
      ASSERT_NE(split, nullptr);
      EXPECT_EQ(find_node(p, "Slice"), nullptr);
      EXPECT_EQ(split->input_size(), !equal && opset >= 13 ? 2 : 1);
      bool has_split_attr = false;
      for (const auto& a : split->attribute()) has_split_attr |= a.name() == "split";
      EXPECT_EQ(has_split_attr, !equal && opset < 13);
      // Read back, the file computes the same slices.
      EXPECT_EQ(print_graph(import_onnx_bytes(p.SerializeAsString(), "model.onnx").graph), print_graph(m.graph));
    }
  }
  ModelBuilder gap(13);
  gap.input("x", {2, 6});
  for (auto [out, begin, end] : {std::tuple{"a", 0, 2}, std::tuple{"c", 3, 6}}) {
    gap.ints(std::string(out) + "_b", {begin});
    gap.ints(std::string(out) + "_e", {end});
    gap.ints(std::string(out) + "_x", {1});
    gap.node("Slice", {"x", std::string(out) + "_b", std::string(out) + "_e", std::string(out) + "_x"}, {out});
    gap.output(out);
  }
  onnx::ModelProto p = exported(import_onnx_bytes(gap.bytes(), "model.onnx"));
  EXPECT_EQ(find_node(p, "Split"), nullptr);
  EXPECT_NE(find_node(p, "Slice"), nullptr);
}

TEST(OnnxOpset18, SplitWithNumOutputsThatDoNotDivide) {
  // Split-18: parts of ceil(5 / 2) = 3, the last one smaller; the extent comes from a bound symbolic dimension.
  ModelBuilder b(18);
  b.input("x", {2, 0});
  b.m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_param("n");
  auto& s = b.node("Split", {"x"}, {"a", "c"});
  set_attr(s, "axis", -1);
  set_attr(s, "num_outputs", 2);
  b.node("Relu", {"a"}, {"y"});
  b.node("Relu", {"c"}, {"z"});
  b.output("y");
  b.output("z");
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx", {.dims = {{"n", 5}}});
  EXPECT_EQ(print_graph(m.graph), "(relu (slice 1 0 3 (input x 2 5)))\n(relu (slice 1 3 5 (input x 2 5)))\n");
  // Written back as one Split with its sizes (uneven parts: the read-back's opset adaptation could not always
  // give num_outputs its extent); it reads back as the same slices.
  onnx::ModelProto p = exported(m);
  const onnx::NodeProto* split = find_node(p, "Split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->input_size(), 2);
  EXPECT_EQ(print_graph(import_onnx_bytes(p.SerializeAsString(), "model.onnx", {.dims = {{"n", 5}}}).graph),
            print_graph(m.graph));
  // Four parts of 5 would leave the last one empty: not a valid Split-18.
  ModelBuilder c(18);
  c.input("x", {2, 5});
  auto& t = c.node("Split", {"x"}, {"p", "q", "r", "s"});
  set_attr(t, "axis", 1);
  set_attr(t, "num_outputs", 4);
  for (const char* o : {"p", "q", "r", "s"}) c.output(o);
  std::string e = error_of(c.bytes());
  EXPECT_NE(e.find("node 'p' (Split): 4 outputs of a split of 5 leave the last one empty"), std::string::npos) << e;
}

TEST(OnnxOpset18, NewShapePreservingOperatorsStayOpaqueWithEveryInput) {
  // GroupNormalization's stand-in reads only X; its scale, computed by another opaque node, must still be
  // computed in the export.
  ModelBuilder b(18);
  b.input("x", {1, 4, 2, 2});
  b.floats("s0", {2}, {1.0f, -2.0f});
  b.floats("b0", {2}, {0.5f, 0.25f});
  b.node("Abs", {"s0"}, {"s"});
  set_attr(b.node("GroupNormalization", {"x", "s", "b0"}, {"y"}), "num_groups", 2);
  b.output("y");
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
  ASSERT_EQ(m.opaque.size(), 2u);
  onnx::ModelProto p = exported(m);
  const onnx::NodeProto* abs = find_node(p, "Abs");
  const onnx::NodeProto* gn = find_node(p, "GroupNormalization");
  ASSERT_NE(abs, nullptr);
  ASSERT_NE(gn, nullptr);
  ASSERT_EQ(gn->input_size(), 3);
  EXPECT_EQ(gn->input(1), abs->output(0));
  EXPECT_EQ(find_node(p, "Identity"), nullptr);
}

TEST(OnnxOpset18, PadWithAxesIsSpreadOverEveryAxis) {
  ModelBuilder b(18);
  b.input("x", {2, 3});
  b.node("Relu", {"x"}, {"r"});  // the rank comes from shape inference, not from a declaration
  b.ints("pads", {1, 2});
  b.ints("axes", {-1});
  set_attr(b.node("Pad", {"r", "pads", "", "axes"}, {"y"}), "mode", std::string("reflect"));  // stays opaque
  b.output("y");
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
  EXPECT_EQ(print_graph(m.graph), "(opaque 0 0 2 6 (relu (input x 2 3)))\n");
  // In constant mode it is the vocabulary's pad over every axis.
  ModelBuilder z(18);
  z.input("x", {2, 3});
  z.ints("pads", {1, 2});
  z.ints("axes", {-1});
  z.node("Pad", {"x", "pads", "", "axes"}, {"y"});
  z.output("y");
  EXPECT_EQ(print_graph(import_onnx_bytes(z.bytes(), "model.onnx").graph), "(pad 0 1 0 2 (input x 2 3))\n");
  // Exported as the model had it: axes and pads as inputs.
  const onnx::ModelProto p = exported(m);
  const onnx::NodeProto* pad = find_node(p, "Pad");
  ASSERT_NE(pad, nullptr);
  ASSERT_EQ(pad->input_size(), 4);
  EXPECT_EQ(pad->input(1), "pads");
  EXPECT_EQ(pad->input(3), "axes");
  // Axes computed at run time cannot be spread.
  ModelBuilder c(18);
  c.input("x", {2, 3});
  c.input("axes", {1});
  c.m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  c.ints("pads", {1, 2});
  c.node("Pad", {"x", "pads", "", "axes"}, {"y"});
  c.output("y");
  std::string e = error_of(c.bytes());
  EXPECT_NE(e.find("node 'y' (Pad): its pads or axes are computed at run time"), std::string::npos) << e;
}

TEST(OnnxOpset18, RefusedByNodeWhenThereIsNoOpset17Form) {
  {
    ModelBuilder b(18);  // axes computed at run time
    b.input("x", {2, 3});
    b.input("axes", {1});
    b.m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    b.node("ReduceMean", {"x", "axes"}, {"y"});
    b.output("y");
    std::string e = error_of(b.bytes());
    EXPECT_NE(e.find("model.onnx: node 'y' (ReduceMean): its axes ('axes') are computed at run time"), std::string::npos) << e;
  }
  {
    ModelBuilder b(19);
    b.input("x", {1, 1, 8, 8});
    auto& n = b.node("AveragePool", {"x"}, {"y"});
    set_attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(n, "dilations", std::vector<int64_t>{2, 2});
    b.output("y");
    std::string e = error_of(b.bytes());
    EXPECT_NE(e.find("node 'y' (AveragePool): AveragePool dilations other than 1 (opset 19)"), std::string::npos) << e;
  }
  {
    ModelBuilder b(18);  // an operator new in 18 with no meaning the importer can carry
    b.input("x", {2, 3});
    b.node("BitwiseNot", {"x"}, {"y"});
    b.output("y");
    std::string e = error_of(b.bytes());
    EXPECT_NE(e.find("node 'y' (BitwiseNot): 'BitwiseNot' changed in opset 18, after opset 17"), std::string::npos) << e;
  }
  {
    ModelBuilder b(17);  // at 17 the schemas are the library's own: BitwiseNot is unknown there
    b.input("x", {2, 3});
    b.node("BitwiseNot", {"x"}, {"y"});
    b.output("y");
    EXPECT_NE(error_of(b.bytes()).find("is not an operator of ONNX opset 17"), std::string::npos);
  }
}

TEST(OnnxOpset20, GeluIsTheVocabularysGeluAndItsTanhFormItsGeluTanh) {
  ModelBuilder b(20, 9);
  b.input("x", {2, 3});
  b.node("Gelu", {"x"}, {"g"});
  set_attr(b.node("Gelu", {"g"}, {"y"}), "approximate", "tanh");
  b.output("y");
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
  EXPECT_EQ(print_graph(m.graph), "(gelu_tanh (gelu (input x 2 3)))\n");
  EXPECT_TRUE(m.opaque.empty());
  EXPECT_TRUE(m.notes.empty()) << m.notes[0];
  // Export at opset 20: the exact form as Gelu, the tanh form as the nine nodes onnxruntime fuses into one
  // FastGelu (Pow 3 ... Tanh ... Mul), and nothing is an Identity.
  onnx::ModelProto p = exported(m);
  std::map<std::string, int> ops;
  for (const auto& n : p.graph().node()) ++ops[n.op_type()];
  EXPECT_EQ(ops["Gelu"], 1);
  EXPECT_EQ(ops["Pow"], 1);
  EXPECT_EQ(ops["Tanh"], 1);
  EXPECT_EQ(ops["Identity"], 0);
  // The export reads back to the same graph.
  EXPECT_EQ(print_graph(import_onnx_bytes(p.SerializeAsString(), "back").graph), print_graph(m.graph));
}

TEST(OnnxOpset20, AGeluOfAnotherApproximationStaysOpaque) {
  ModelBuilder b(20, 9);
  b.input("x", {2, 3});
  set_attr(b.node("Gelu", {"x"}, {"y"}), "approximate", "sigmoid");
  b.output("y");
  try {
    OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
    ASSERT_EQ(m.opaque.size(), 1u);
    ASSERT_FALSE(m.notes.empty());
    EXPECT_NE(m.notes[0].find("neither the vocabulary's gelu"), std::string::npos) << m.notes[0];
  } catch (const OnnxError& e) {
    // ONNX's own checker may refuse the attribute value first: a clear error, never another meaning.
    EXPECT_NE(std::string(e.what()).find("approximate"), std::string::npos) << e.what();
  }
}

// ---- external data -----------------------------------------------------------------------------------

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("teq_external_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

/// x [2,300] + w, with w [2,300] (2400 bytes) in `location` at `offset`.
ModelBuilder external_model(const std::string& location, int64_t offset, int64_t length) {
  ModelBuilder b(13);
  b.input("x", {2, 300});
  std::vector<float> w(600);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f;
  onnx::TensorProto& t = b.floats("w", {2, 300}, w);
  t.clear_raw_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&t](const std::string& k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
  b.node("Add", {"x", "w"}, {"y"});
  b.output("y");
  return b;
}

std::string weight_bytes(size_t pad) {
  std::string bytes(pad, 'p');
  for (int i = 0; i < 600; ++i) {
    float v = static_cast<float>(i) * 0.5f;
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return bytes;
}

TEST(OnnxExternalData, LoadsFromBesideTheModelAndWritesBackTheSameWay) {
  TempDir dir;
  fs::create_directories(dir.path / "sub");
  write_file(dir.path / "sub" / "w.bin", weight_bytes(16));
  write_file(dir.path / "model.onnx", external_model("sub/w.bin", 16, 2400).bytes());
  OnnxModel m = import_onnx(dir.path / "model.onnx");
  EXPECT_TRUE(m.external_data);
  ASSERT_EQ(m.weights.count("w"), 1u);
  // Left in its file (issue 45): read on request, referred to by the export, copied over when written.
  ASSERT_TRUE(m.weights.at("w").external().has_value());
  EXPECT_EQ(m.weights.at("w").external()->file, dir.path / "sub" / "w.bin");
  EXPECT_EQ(m.weights.at("w").values()->data[0], 0.0f);
  EXPECT_EQ(m.weights.at("w").values()->data[599], 299.5f);

  const fs::path out = dir.path / "out.onnx";
  const fs::path data = export_onnx(m, m.graph, out);
  EXPECT_EQ(data, dir.path / "out.onnx.data");
  EXPECT_EQ(read_file(data), weight_bytes(0));  // the one large initializer, and nothing else
  onnx::ModelProto p;
  ASSERT_TRUE(p.ParseFromString(read_file(out)));
  bool external = false;
  for (const auto& t : p.graph().initializer())
    if (t.name() == "w") {
      external = t.data_location() == onnx::TensorProto::EXTERNAL && !t.has_raw_data();
      ASSERT_GE(t.external_data_size(), 1);
      EXPECT_EQ(t.external_data(0).value(), "out.onnx.data");
    }
  EXPECT_TRUE(external);
  // It reads back with the same values; an inline model stays inline unless asked.
  OnnxModel back = import_onnx(out);
  EXPECT_EQ(back.weights.at("w").values()->data, m.weights.at("w").values()->data);
  EXPECT_EQ(export_onnx(back, back.graph, dir.path / "inline.onnx", {.external_data = false}), fs::path());
  EXPECT_FALSE(fs::exists(dir.path / "inline.onnx.data"));
}

TEST(OnnxExternalData, BadLocationsAreRefusedByName) {
  TempDir dir;
  fs::create_directories(dir.path / "m");
  write_file(dir.path / "w.bin", weight_bytes(0));
  auto error = [&](const ModelBuilder& b) {
    write_file(dir.path / "m" / "model.onnx", b.bytes());
    try {
      import_onnx(dir.path / "m" / "model.onnx");
    } catch (const OnnxError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error(external_model("../w.bin", 0, 2400));
  EXPECT_NE(e.find("tensor 'w' keeps its data in '../w.bin', outside the model's folder"), std::string::npos) << e;
  e = error(external_model((dir.path / "w.bin").string(), 0, 2400));
  EXPECT_NE(e.find("outside the model's folder"), std::string::npos) << e;
  fs::create_symlink(dir.path / "w.bin", dir.path / "m" / "link.bin");
  e = error(external_model("link.bin", 0, 2400));
  EXPECT_NE(e.find("resolves outside the model's folder"), std::string::npos) << e;
  e = error(external_model("missing.bin", 0, 2400));
  EXPECT_NE(e.find("which is not a readable file"), std::string::npos) << e;
  write_file(dir.path / "m" / "short.bin", weight_bytes(0).substr(0, 100));
  e = error(external_model("short.bin", 0, -1));
  EXPECT_NE(e.find("needs 2400 bytes at offset 0 of"), std::string::npos) << e;
  EXPECT_NE(e.find("holds only 100 bytes (too short)"), std::string::npos) << e;
  write_file(dir.path / "m" / "w.bin", weight_bytes(0));
  e = error(external_model("w.bin", 8, 2400));  // 8 + 2400 > 2400
  EXPECT_NE(e.find("too short"), std::string::npos) << e;
  e = error(external_model("w.bin", 0, 1200));
  EXPECT_NE(e.find("has an external length of 1200 bytes, but its shape needs 2400"), std::string::npos) << e;
  // From bytes there is no folder to look in.
  e = error_of(external_model("w.bin", 0, 2400).bytes());
  EXPECT_NE(e.find("can be read only when the model is imported from its file"), std::string::npos) << e;
}

// ---- dimensions by input and axis ----------------------------------------------------------------------

TEST(OnnxAxisDims, AnUnnamedDimensionIsGivenByInputAndAxis) {
  ModelBuilder b(13);
  b.input("x", {0, 3});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  std::string e = error_of(b.bytes());
  EXPECT_NE(e.find("graph input 'x' has an unnamed symbolic dimension (axis 0); give it a value (eqsat-run --dim x:0=VALUE)"),
            std::string::npos)
      << e;
  EXPECT_EQ(print_graph(import_onnx_bytes(b.bytes(), "m", {.axis_dims = {{{"x", 0}, 5}}}).graph), "(relu (input x 5 3))\n");
  EXPECT_EQ(print_graph(import_onnx_bytes(b.bytes(), "m", {.axis_dims = {{{"x", -2}, 2}}}).graph), "(relu (input x 2 3))\n");
  // A fixed dimension may be given its own value, not another.
  EXPECT_NO_THROW(import_onnx_bytes(b.bytes(), "m", {.axis_dims = {{{"x", 0}, 5}, {{"x", 1}, 3}}}));
  e = error_of(b.bytes(), {.axis_dims = {{{"x", 0}, 5}, {{"x", 1}, 4}}});
  EXPECT_NE(e.find("--dim x:1=4: dimension 1 of graph input 'x' is fixed at 3"), std::string::npos) << e;
  e = error_of(b.bytes(), {.axis_dims = {{{"nope", 0}, 5}}});
  EXPECT_NE(e.find("--dim nope:0=5: the model has no graph input 'nope' (its inputs: x)"), std::string::npos) << e;
  e = error_of(b.bytes(), {.axis_dims = {{{"x", 2}, 5}}});
  EXPECT_NE(e.find("--dim x:2=5: graph input 'x' has 2 dimensions, so the axis must be in -2..1"), std::string::npos) << e;
}

// ---- the operators of real PyTorch exports: sqrt, erf, clip, reduce_mean, pad, Pow, LayerNormalization ----

/// A 0-d float Constant node (how PyTorch writes clip bounds and exponents).
void scalar_constant(ModelBuilder& b, const std::string& name, float v) {
  auto& n = b.node("Constant", {}, {name});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->set_raw_data(std::string(reinterpret_cast<const char*>(&v), sizeof v));
}

/// Import, then export and import again: the same graph (the export writes every new operator back).
OnnxModel import_round_trip(const ModelBuilder& b) {
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
  EXPECT_EQ(print_graph(import_onnx_bytes(exported(m).SerializeAsString(), "again").graph), print_graph(m.graph));
  return m;
}

TEST(OnnxTorchOps, SqrtErfAndPowWithAConstantExponent) {
  ModelBuilder b(13);
  b.input("x", {2, 3});
  b.node("Sqrt", {"x"}, {"s"});
  b.node("Erf", {"s"}, {"e"});
  scalar_constant(b, "two", 2.0f);
  scalar_constant(b, "half", 0.5f);
  scalar_constant(b, "one", 1.0f);
  scalar_constant(b, "three", 3.0f);
  b.node("Pow", {"e", "two"}, {"p2"});
  b.node("Pow", {"p2", "half"}, {"p5"});
  b.node("Pow", {"p5", "one"}, {"p1"});
  b.node("Pow", {"p1", "three"}, {"y"});
  b.output("y");
  OnnxModel m = import_round_trip(b);
  // Exponent 2 is x*x, 0.5 sqrt, 1 nothing; 3 stays opaque, with a note.
  const std::string g = print_graph(m.graph);
  EXPECT_NE(g.find("(let t0 (erf (sqrt (input x 2 3))))\n(opaque 0 0 2 3 (sqrt (ewmul t0 t0))"), std::string::npos) << g;
  EXPECT_EQ(m.opaque.size(), 1u);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("exponent 3"), std::string::npos) << m.notes[0];
}

TEST(OnnxTorchOps, ClipWithConstantBounds) {
  auto clip = [](float lo, std::optional<float> hi) {
    ModelBuilder b(13);
    b.input("x", {4});
    scalar_constant(b, "lo", lo);
    if (hi) scalar_constant(b, "hi", *hi);
    b.node("Clip", hi ? std::vector<std::string>{"x", "lo", "hi"} : std::vector<std::string>{"x", "lo"}, {"y"});
    b.output("y");
    OnnxModel m = import_round_trip(b);
    return print_graph(m.graph);
  };
  EXPECT_EQ(clip(0, 6), "(clip 0 0 6 0 (input x 4))\n");             // ReLU6
  EXPECT_EQ(clip(0, std::nullopt), "(relu (input x 4))\n");           // canonical relu
  EXPECT_EQ(clip(-0.75f, 1.5f), "(clip -3 2 3 1 (input x 4))\n");      // num / 2^exp, lowest terms
  EXPECT_EQ(clip(-2, std::nullopt), "(clip -2 0 0 -1 (input x 4))\n"); // no upper bound
  // 0.1f is 13421773 / 2^27 exactly.
  EXPECT_EQ(clip(0.1f, 6), "(clip 13421773 27 6 0 (input x 4))\n");
  EXPECT_EQ(clip(-INFINITY, 6), "(clip 0 -1 6 0 (input x 4))\n");
  // Below 2^-62 a bound has no exact attribute form: opaque.
  EXPECT_NE(clip(1e-30f, 6).find("(opaque 0 0 4"), std::string::npos);
  EXPECT_NE(clip(6, 0).find("(opaque 0 0 4"), std::string::npos);  // min above max
}

TEST(OnnxTorchOps, ReduceMeanAtOpset13) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 4});
  set_attr(b.node("ReduceMean", {"x"}, {"m"}), "axes", std::vector<int64_t>{-1});
  auto& all = b.node("ReduceMean", {"m"}, {"y"});  // no axes: every axis
  set_attr(all, "keepdims", 0);
  b.output("y");
  EXPECT_EQ(print_graph(import_round_trip(b).graph), "(reduce_mean 0 0 1 2 (reduce_mean 1 2 (input x 2 3 4)))\n");
}

TEST(OnnxTorchOps, ZeroPadIsFoldedIntoAveragePoolAndConvPadding) {
  // PyTorch's avg_pool2d(x, 3, 1, padding=1) (count_include_pad=True): a Pad, then an unpadded AveragePool.
  auto pooled = [](const std::vector<int64_t>& pads, const std::string& op, int64_t include_pad,
                   const std::vector<int64_t>& own_pads) {
    ModelBuilder b(13);
    b.input("x", {1, 2, 5, 5});
    b.ints("pads", pads);
    b.node("Pad", {"x", "pads"}, {"p"});
    if (op == "Conv") {
      b.floats("w", {2, 2, 3, 3}, std::vector<float>(36, 0.5f));
      set_attr(b.node("Conv", {"p", "w"}, {"y"}), "pads", own_pads);
    } else {
      auto& n = b.node(op, {"p"}, {"y"});
      set_attr(n, "kernel_shape", std::vector<int64_t>{3, 3});
      set_attr(n, "pads", own_pads);
      if (op == "AveragePool") set_attr(n, "count_include_pad", include_pad);
    }
    b.output("y");
    return print_graph(import_round_trip(b).graph);
  };
  const std::vector<int64_t> spatial{0, 0, 1, 1, 0, 0, 1, 1}, none{0, 0, 0, 0};
  EXPECT_EQ(pooled(spatial, "AveragePool", 0, none), "(avgpool 3 3 1 1 -1 -1 1 (input x 1 2 5 5))\n");
  EXPECT_EQ(pooled(spatial, "AveragePool", 1, {1, 1, 1, 1}), "(avgpool 3 3 1 1 2 2 1 (input x 1 2 5 5))\n");
  // The pooling's own pads are not counted: the divisor differs at the borders, the Pad stays.
  EXPECT_EQ(pooled(spatial, "AveragePool", 0, {1, 1, 1, 1}),
            "(avgpool 3 3 1 1 -1 -1 0 (pad 0 0 1 1 0 0 1 1 (input x 1 2 5 5)))\n");
  // A padded 0 could win a max: never folded into MaxPool.
  EXPECT_EQ(pooled(spatial, "MaxPool", 0, none), "(maxpool 3 3 1 1 0 0 (pad 0 0 1 1 0 0 1 1 (input x 1 2 5 5)))\n");
  EXPECT_EQ(pooled(spatial, "Conv", 0, none), "(conv2d 1 1 -1 -1 0 (input x 1 2 5 5) (weight w 2 2 3 3))\n");
  // Asymmetric (one row before only): not our padding; a Pad over the channels: not a window's.
  EXPECT_EQ(pooled({0, 0, 1, 0, 0, 0, 0, 0}, "Conv", 0, none),
            "(conv2d 1 1 0 0 0 (pad 0 0 1 0 0 0 0 0 (input x 1 2 5 5)) (weight w 2 2 3 3))\n");
  EXPECT_EQ(pooled({0, 1, 1, 1, 0, 1, 1, 1}, "AveragePool", 0, none),
            "(avgpool 3 3 1 1 0 0 0 (pad 0 1 1 1 0 1 1 1 (input x 1 2 5 5)))\n");
}

TEST(OnnxTorchOps, PadThatIsNotZeroConstantPaddingStaysOpaque) {
  ModelBuilder b(13);
  b.input("x", {2, 3});
  b.ints("pads", {0, 1, 0, -1});  // cropping
  b.node("Pad", {"x", "pads"}, {"y"});
  b.output("y");
  OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");
  EXPECT_EQ(m.opaque.size(), 1u);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("negative pads"), std::string::npos) << m.notes[0];
}

TEST(OnnxTorchOps, LayerNormalizationIsItsDecomposition) {
  ModelBuilder b(17);
  b.input("x", {2, 3, 4});
  const std::vector<float> scale{1.0f, 2.0f, -1.0f, 0.5f}, bias{0.1f, 0.2f, 0.3f, 0.4f};
  b.floats("scale", {4}, scale);
  b.floats("bias", {4}, bias);
  auto& n = b.node("LayerNormalization", {"x", "scale", "bias"}, {"y"});
  set_attr(n, "axis", -1);
  b.output("y");
  OnnxModel m = import_round_trip(b);
  EXPECT_TRUE(m.opaque.empty());
  const std::string g = print_graph(m.graph);
  EXPECT_NE(g.find("(reduce_mean 1 2 (input x 2 3 4))"), std::string::npos) << g;
  EXPECT_NE(g.find("(sqrt "), std::string::npos) << g;
  // The value against the formula, on x = 0, 1, 2, ... (epsilon 1e-5).
  std::map<std::string, Tensor<double>> leaves;
  std::vector<double> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i * i % 7);
  leaves.emplace("x", Tensor<double>({2, 3, 4}, x));
  for (const auto& [name, w] : m.weights)
    leaves.emplace(name, Tensor<double>(w.shape(), std::vector<double>(w.values()->data.begin(), w.values()->data.end())));
  const Tensor<double> y = evaluate<double>(m.graph, Arith<double>{}, leaves).at(0);
  ASSERT_EQ(y.shape, (Shape{2, 3, 4}));
  for (size_t row = 0; row < 6; ++row) {
    double mean = 0, var = 0;
    for (size_t k = 0; k < 4; ++k) mean += x[row * 4 + k] / 4;
    for (size_t k = 0; k < 4; ++k) var += (x[row * 4 + k] - mean) * (x[row * 4 + k] - mean) / 4;
    for (size_t k = 0; k < 4; ++k) {
      const double want = (x[row * 4 + k] - mean) / std::sqrt(var + double(1e-5f)) * scale[k] + double(bias[k]);
      EXPECT_NEAR(y.data[row * 4 + k], want, 1e-9) << "row " << row << " k " << k;
    }
  }
}

TEST(OnnxTorchOps, PyTorchsErfGeluIsTheVocabularysGelu) {
  // x * (1 + erf(x / sqrt 2)) * 0.5 as PyTorch writes it, and with every product and sum commuted.
  auto gelu = [](bool commuted, bool erf_read_twice) {
    ModelBuilder b(13);
    b.input("x", {2, 3});
    b.node("Relu", {"x"}, {"r"});
    scalar_constant(b, "sqrt2", 1.4142135f);
    scalar_constant(b, "one", 1.0f);
    scalar_constant(b, "half", 0.5f);
    b.node("Div", {"r", "sqrt2"}, {"d"});
    b.node("Erf", {"d"}, {"e"});
    b.node("Add", commuted ? std::vector<std::string>{"one", "e"} : std::vector<std::string>{"e", "one"}, {"a"});
    if (commuted) {
      b.node("Mul", {"half", "r"}, {"m"});
      b.node("Mul", {"a", "m"}, {"y"});
    } else {
      b.node("Mul", {"r", "a"}, {"m"});
      b.node("Mul", {"m", "half"}, {"y"});
    }
    b.output("y");
    if (erf_read_twice) {
      b.node("Relu", {"e"}, {"z"});
      b.output("z");
    }
    return print_graph(import_round_trip(b).graph);
  };
  EXPECT_EQ(gelu(false, false), "(gelu (relu (input x 2 3)))\n");
  EXPECT_EQ(gelu(true, false), "(gelu (relu (input x 2 3)))\n");
  // An intermediate value that something else reads: the nodes stay as they are.
  EXPECT_EQ(gelu(false, true).find("(gelu "), std::string::npos);
  EXPECT_NE(gelu(false, true).find("(erf "), std::string::npos);
}

TEST(OnnxTorchOps, PyTorchsTanhGeluIsTheVocabularysGeluTanh) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) as the dynamo exporter and GPT-2's gelu_new write it
  // (Pow 3; Mul(x, 0.5) times the sum) and as the TorchScript exporter does (x * (x * x); 0.5 * (x * sum)),
  // every operand order commuted in the second.
  enum class Form { Dynamo, TorchScript, TanhReadTwice, OtherCoefficient };
  auto gelu = [](Form form) {
    ModelBuilder b(form == Form::Dynamo ? 18 : 17);
    b.input("x", {2, 3});
    b.node("Relu", {"x"}, {"r"});
    scalar_constant(b, "three", 3.0f);
    scalar_constant(b, "c", form == Form::OtherCoefficient ? 0.045f : 0.044715f);
    scalar_constant(b, "k", 0.7978845608f);
    scalar_constant(b, "one", 1.0f);
    scalar_constant(b, "half", 0.5f);
    if (form == Form::TorchScript) {
      b.node("Mul", {"r", "r"}, {"sq"});
      b.node("Mul", {"r", "sq"}, {"cube"});
      b.node("Mul", {"c", "cube"}, {"ccube"});
      b.node("Add", {"ccube", "r"}, {"sum"});
      b.node("Mul", {"k", "sum"}, {"inner"});
    } else {
      b.node("Pow", {"r", "three"}, {"cube"});
      b.node("Mul", {"cube", "c"}, {"ccube"});
      b.node("Add", {"r", "ccube"}, {"sum"});
      b.node("Mul", {"sum", "k"}, {"inner"});
    }
    b.node("Tanh", {"inner"}, {"t"});
    if (form == Form::TorchScript) {
      b.node("Add", {"one", "t"}, {"a"});
      b.node("Mul", {"r", "a"}, {"m"});
      b.node("Mul", {"half", "m"}, {"y"});
    } else {
      b.node("Add", {"t", "one"}, {"a"});
      b.node("Mul", {"r", "half"}, {"m"});
      b.node("Mul", {"m", "a"}, {"y"});
    }
    b.output("y");
    if (form == Form::TanhReadTwice) {
      b.node("Relu", {"t"}, {"z"});
      b.output("z");
    }
    return import_round_trip(b);
  };
  EXPECT_EQ(print_graph(gelu(Form::Dynamo).graph), "(gelu_tanh (relu (input x 2 3)))\n");
  // The Pow 3 was read as an opaque node before the last Mul took it in: neither it nor its note is left.
  EXPECT_TRUE(gelu(Form::Dynamo).opaque.empty());
  EXPECT_TRUE(gelu(Form::Dynamo).notes.empty()) << gelu(Form::Dynamo).notes[0];
  EXPECT_EQ(print_graph(gelu(Form::TorchScript).graph), "(gelu_tanh (relu (input x 2 3)))\n");
  // An intermediate value that something else reads, or another coefficient: the nodes stay as they are.
  for (Form form : {Form::TanhReadTwice, Form::OtherCoefficient}) {
    const OnnxModel m = gelu(form);
    EXPECT_EQ(print_graph(m.graph).find("(gelu_tanh "), std::string::npos) << print_graph(m.graph);
    EXPECT_NE(print_graph(m.graph).find("(tanh "), std::string::npos) << print_graph(m.graph);
    if (form == Form::OtherCoefficient) {
      ASSERT_EQ(m.notes.size(), 1u);  // the Pow 3 that stays opaque says so
      EXPECT_NE(m.notes[0].find("exponent 3"), std::string::npos) << m.notes[0];
    }
  }
}

TEST(OnnxTorchOps, WhereIsNaNOfASoftmaxIsTheVocabularysNanToZero) {
  // Where(IsNaN(s), 0, s) after a softmax, as PyTorch's exporters write scaled_dot_product_attention with a
  // mask, is one nan_to_zero; the IsNaN (a boolean result, read as an opaque node first) goes with its note.
  // Another zero, another value kept, or an IsNaN with a second reader: the nodes stay as they are.
  enum class Form { Attention, NotZero, OtherValue, IsNaNReadTwice };
  auto where = [](Form form, int64_t opset) {
    ModelBuilder b(opset);
    b.input("x", {2, 3});
    b.node("Softmax", {"x"}, {"s"});
    b.node("IsNaN", {"s"}, {"nan"});
    scalar_constant(b, "zero", form == Form::NotZero ? 1.0f : 0.0f);
    b.node("Where", {"nan", "zero", form == Form::OtherValue ? "x" : "s"}, {"y"});
    b.output("y");
    if (form == Form::IsNaNReadTwice) {
      b.node("Not", {"nan"}, {"finite"});
      b.output("finite");
    }
    return import_round_trip(b);
  };
  for (int64_t opset : {13, 17, 20}) {
    const OnnxModel m = where(Form::Attention, opset);
    EXPECT_EQ(print_graph(m.graph), "(nan_to_zero (softmax 1 (input x 2 3)))\n") << opset;
    EXPECT_TRUE(m.opaque.empty()) << opset;
    EXPECT_TRUE(m.notes.empty()) << m.notes[0];
    // Written back as IsNaN and Where with a zero of the value's type.
    const onnx::ModelProto p = exported(m);
    ASSERT_NE(find_node(p, "IsNaN"), nullptr);
    const onnx::NodeProto* w = find_node(p, "Where");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->input(0), find_node(p, "IsNaN")->output(0));
    EXPECT_EQ(w->input(2), find_node(p, "IsNaN")->input(0));
  }
  for (Form form : {Form::NotZero, Form::OtherValue, Form::IsNaNReadTwice}) {
    const OnnxModel m = where(form, 17);
    EXPECT_EQ(print_graph(m.graph).find("nan_to_zero"), std::string::npos) << print_graph(m.graph);
    EXPECT_GE(m.opaque.size(), 2u);  // the IsNaN and the Where
    const bool said = std::any_of(m.notes.begin(), m.notes.end(), [](const std::string& n) {
      return n.find("only Where(IsNaN(x), 0, x) is in the vocabulary") != std::string::npos;
    });
    EXPECT_TRUE(said) << static_cast<int>(form);
  }
}

TEST(OnnxTorchOps, RotaryCosAndSinAreTheVocabularys) {
  // LLaMA's rotary embedding, in small: q * cos(a) + rotate(q) * sin(a), the angles a computed (here a weight
  // times the input). Cos and Sin are the vocabulary's cos and sin, written back as Cos and Sin; the file
  // written computes what the original does.
  ModelBuilder b(17);
  b.input("q", {2, 4});
  b.node("Cos", {"q"}, {"c"});
  b.node("Sin", {"q"}, {"s"});
  b.node("Mul", {"q", "c"}, {"qc"});
  b.node("Neg", {"s"}, {"ns"});
  b.node("Mul", {"q", "ns"}, {"qs"});
  b.node("Add", {"qc", "qs"}, {"y"});
  b.output("y");
  const OnnxModel m = import_round_trip(b);
  EXPECT_TRUE(m.opaque.empty()) << print_graph(m.graph);
  EXPECT_NE(print_graph(m.graph).find("(cos (input q 2 4))"), std::string::npos) << print_graph(m.graph);
  EXPECT_NE(print_graph(m.graph).find("(sin (input q 2 4))"), std::string::npos) << print_graph(m.graph);
  const onnx::ModelProto p = exported(m);
  ASSERT_NE(find_node(p, "Cos"), nullptr);
  ASSERT_NE(find_node(p, "Sin"), nullptr);
  const OnnxModel back = import_onnx_bytes(p.SerializeAsString(), "back.onnx", {});
  std::vector<double> q = {-3.0, -1.5, -0.25, 0.0, 0.5, 1.0, 2.0, 6.5};
  const auto got = evaluate_model(back, {{"q", Tensor<double>({2, 4}, q)}});
  ASSERT_EQ(got.size(), 1u);
  for (size_t i = 0; i < q.size(); ++i)
    EXPECT_NEAR(got[0].data[i], q[i] * std::cos(q[i]) - q[i] * std::sin(q[i]), 1e-12) << q[i];
}

TEST(OnnxTorchOps, AnRmsNormsReciprocalIsWrittenAsADivision) {
  // LLaMA's and T5's RMS norm as PyTorch writes it: x * rsqrt(mean(x^2) + eps) * w with rsqrt as Sqrt then
  // Reciprocal. Written back as x / sqrt(...) (onnxruntime fuses that form into one SimplifiedLayerNormalization,
  // the Reciprocal form stays seven kernels); the file computes the formula. A reciprocal of a weight is folded
  // at export and stays a multiplication by the constant.
  ModelBuilder b(18);
  b.input("x", {2, 4});
  b.floats("w", {4}, {1.0f, -2.0f, 0.5f, 3.0f});
  b.floats("d", {4}, {2.0f, 4.0f, -8.0f, 0.5f});
  scalar_constant(b, "two", 2.0f);
  scalar_constant(b, "eps", 1e-6f);
  b.ints("axes", {-1});
  b.node("Pow", {"x", "two"}, {"sq"});
  b.node("ReduceMean", {"sq", "axes"}, {"ms"});
  b.node("Add", {"ms", "eps"}, {"v"});
  b.node("Sqrt", {"v"}, {"sd"});
  b.node("Reciprocal", {"sd"}, {"r"});
  b.node("Mul", {"x", "r"}, {"n"});
  b.node("Mul", {"w", "n"}, {"y"});
  b.node("Reciprocal", {"d"}, {"rd"});
  b.node("Mul", {"x", "rd"}, {"z"});
  b.output("y");
  b.output("z");
  const OnnxModel m = import_onnx_bytes(b.bytes(), "model.onnx");  // read back, the division is an ewdiv
  EXPECT_TRUE(m.opaque.empty()) << print_graph(m.graph);
  EXPECT_NE(print_graph(m.graph).find("(reciprocal (sqrt "), std::string::npos) << print_graph(m.graph);
  const onnx::ModelProto p = exported(m);
  std::map<std::string, int> ops;
  for (const auto& n : p.graph().node()) ++ops[n.op_type()];
  EXPECT_EQ(ops["Reciprocal"], 0);
  EXPECT_EQ(ops["Div"], 1);
  EXPECT_EQ(ops["Mul"], 2);  // * w, and x times the folded 1 / d
  const onnx::NodeProto* div = find_node(p, "Div");
  ASSERT_NE(div, nullptr);
  EXPECT_EQ(div->input(0), "x");
  const OnnxModel back = import_onnx_bytes(p.SerializeAsString(), "back.onnx", {});
  const std::vector<double> x = {-3.0, -1.5, -0.25, 0.0, 0.5, 1.0, 2.0, 6.5}, w = {1.0, -2.0, 0.5, 3.0},
                            d = {2.0, 4.0, -8.0, 0.5};
  const auto got = evaluate_model(back, {{"x", Tensor<double>({2, 4}, x)}});
  ASSERT_EQ(got.size(), 2u);
  for (size_t row = 0; row < 2; ++row) {
    double ms = 0;
    for (size_t k = 0; k < 4; ++k) ms += x[row * 4 + k] * x[row * 4 + k] / 4;
    for (size_t k = 0; k < 4; ++k) {
      const size_t i = row * 4 + k;
      EXPECT_NEAR(got[0].data[i], x[i] / std::sqrt(ms + double(1e-6f)) * w[k], 1e-6) << i;
      EXPECT_NEAR(got[1].data[i], x[i] / d[k], 1e-12) << i;
    }
  }
}

TEST(OnnxTorchOps, TheTanhGeluImportedEvaluatesAsItsNodes) {
  // The vocabulary's gelu_tanh against the nine ONNX nodes evaluated one by one (float32 constants):
  // the two meanings may differ only by the constants' rounding.
  const FloatArith<double> arith;
  for (double x : {-6.0, -2.5, -1.0, -0.3, 0.0, 0.2, 0.9, 1.7, 3.0, 8.0}) {
    const double c = static_cast<double>(0.044715f), k = static_cast<double>(0.7978845608f);
    const double nodes = x * 0.5 * (1.0 + std::tanh((x + std::pow(x, 3.0) * c) * k));
    EXPECT_NEAR(arith.unary(UnaryFn::GeluTanh, x), nodes, 1e-7 * std::max(1.0, std::fabs(x))) << x;
    // ... and it is not the exact GELU (they differ by up to about 1e-3).
    if (std::fabs(x) > 0.5 && std::fabs(x) < 4) {
      EXPECT_GT(std::fabs(arith.unary(UnaryFn::GeluTanh, x) - arith.unary(UnaryFn::Gelu, x)), 1e-6) << x;
    }
  }
}

TEST(OnnxTorchOps, ClipAndPadAttributesBeforeOpset11) {
  // Before opset 11 Clip's bounds and Pad's amounts are attributes: read so, and written back so.
  ModelBuilder b(10);
  b.input("x", {2, 3});
  auto& clip = b.node("Clip", {"x"}, {"c"});
  auto* lo = clip.add_attribute();
  lo->set_name("min");
  lo->set_type(onnx::AttributeProto::FLOAT);
  lo->set_f(-0.5f);
  auto* hi = clip.add_attribute();
  hi->set_name("max");
  hi->set_type(onnx::AttributeProto::FLOAT);
  hi->set_f(6.0f);
  set_attr(b.node("Pad", {"c"}, {"y"}), "pads", std::vector<int64_t>{0, 1, 1, 0});
  b.output("y");
  OnnxModel m = import_round_trip(b);
  EXPECT_EQ(print_graph(m.graph), "(pad 0 1 1 0 (clip -1 1 6 0 (input x 2 3)))\n");
  const onnx::ModelProto p = exported(m);
  const onnx::NodeProto* c = find_node(p, "Clip");
  const onnx::NodeProto* pad = find_node(p, "Pad");
  ASSERT_NE(c, nullptr);
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ(c->input_size(), 1);
  EXPECT_EQ(c->attribute_size(), 2);
  EXPECT_EQ(pad->input_size(), 1);
  EXPECT_EQ(pad->attribute(0).name(), "pads");
}

/// A zero Pad before an AveragePool whose windows would run past the padded input (a 1-wide input padded (1, 0)
/// under a 3-wide kernel) is not the pooling's symmetric padding: onnxruntime averages such a window over the
/// elements there are, so pads (1, 1) with count_include_pad divide by another count (random campaign seed
/// 202772, written wrong before). The Pad stays its own node.
TEST(OnnxPoolPads, PadWhoseWindowsRunPastTheInputIsNotFoldedIntoTheAverage) {
  ModelBuilder b(13);
  b.input("x", {1, 1, 2, 1});
  b.ints("p", {0, 0, 2, 1, 0, 0, 1, 0});
  b.node("Pad", {"x", "p"}, {"t"});
  auto& pool = b.node("AveragePool", {"t"}, {"y"});
  set_attr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
  set_attr(pool, "strides", std::vector<int64_t>{2, 2});
  b.output("y");
  onnx::ModelProto p = exported(import_onnx_bytes(b.bytes(), "model.onnx"));
  EXPECT_NE(find_node(p, "Pad"), nullptr);
}

}  // namespace
}  // namespace teq::onnx_io
