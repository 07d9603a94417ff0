// float16 and bfloat16 tensors as terms (issue 45, item 2): the 16-bit conversions, import of FLOAT16/BFLOAT16
// nodes and weights into the vocabulary with their element types, export of every tensor the exporter makes in
// its term's type, the e-class type guard, the check's tolerance by type, and bytes by type in the cost models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <onnx/onnx_pb.h>

#include "optimizer/cost/analytical_cost.h"
#include "optimizer/engine/cost_model.h"
#include "optimizer/engine/egraph.h"
#include "optimizer/engine/extract.h"
#include "optimizer/onnx/check.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "optimizer/output_choice.h"
#include "rules/sexpr.h"

namespace teq::onnx_io {
namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
constexpr int32_t kF16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kBF16 = onnx::TensorProto::BFLOAT16;

/// An empty model of opset 17 whose graph `g` the caller fills.
onnx::ModelProto empty_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  m.mutable_graph()->set_name("g");
  return m;
}

/// Declares a graph input or output: its name, element type and static dimensions.
void declare(onnx::ValueInfoProto* v, const std::string& name, int32_t type, const std::vector<int64_t>& dims) {
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  for (int64_t d : dims) v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
}

/// x[2, 4] (type) -> MatMul w[4, 4] -> Add b[4] -> Relu -> y, weights of `type`, opset 17.
onnx::ModelProto block(int32_t type, int32_t bias_type) {
  onnx::ModelProto m = empty_model();
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", type, {2, 4});
  declare(g->add_output(), "y", type, {2, 4});
  std::vector<float> w(16), b(4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.125f * static_cast<float>(static_cast<int>(i % 7) - 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.5f * static_cast<float>(i);
  *g->add_initializer() = detail::make_float_tensor("w", {4, 4}, w, type);
  *g->add_initializer() = detail::make_float_tensor("b", {4}, b, bias_type);
  auto node = [&](const std::string& op_type, std::vector<std::string> in, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op_type);
    n->set_name(out);
    for (const auto& s : in) n->add_input(s);
    n->add_output(out);
  };
  node("MatMul", {"x", "w"}, "h");
  node("Add", {"h", "b"}, "hb");
  node("Relu", {"hb"}, "y");
  return m;
}

TEST(Float16, ConversionsRoundToNearestEvenAndKeepSpecials) {
  using detail::bfloat_to_float;
  using detail::float_to_bfloat;
  using detail::float_to_half;
  using detail::half_to_float;
  // Every half value reads back to itself.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    EXPECT_EQ(float_to_half(f), static_cast<uint16_t>(h)) << h;
  }
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                   // the tie above the largest rounds to infinity
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00);            // a tie rounds to the even neighbour
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);                   // half the smallest subnormal: a tie, to 0
  EXPECT_EQ(float_to_half(0x1.8p-25f), 0x0001);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_bfloat(1.0f), 0x3f80);
  EXPECT_EQ(bfloat_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat(1.0f + 0x1p-8f), 0x3f80);  // a tie, to even
  EXPECT_EQ(float_to_bfloat(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat_to_float(float_to_bfloat(std::numeric_limits<float>::quiet_NaN()))));
  const onnx::TensorProto t = detail::make_float_tensor("t", {3}, {1.0f, -2.5f, 0.1f}, kF16);
  EXPECT_EQ(t.data_type(), kF16);
  EXPECT_EQ(t.raw_data().size(), 6u);
  const std::vector<float> back = detail::tensor_floats(t);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_NEAR(back[2], 0.1f, 1e-4);
  // Straight to doubles (the check's weights): the same values, for each stored type.
  for (int32_t type : {kF16, kBF16, kF32}) {
    const onnx::TensorProto u = detail::make_float_tensor("u", {3}, {1.0f, -2.5f, 0.1f}, type);
    const std::vector<float> as_floats = detail::tensor_floats(u);
    std::vector<double> as_doubles(3);
    detail::decode_float_bytes(u.raw_data().data(), u.raw_data().size(), type, as_doubles.data());
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(as_doubles[i], static_cast<double>(as_floats[i])) << type << " " << i;
  }
}

TEST(Float16, NodesAndWeightsOfTheSixteenBitTypesAreTerms) {
  for (int32_t type : {kF16, kBF16}) {
    SCOPED_TRACE(type);
    const OnnxModel m = import_onnx_bytes(block(type, type).SerializeAsString(), "model.onnx");
    EXPECT_EQ(m.num_opaque(), 0u);
    // The same term as the float32 model's: (relu (ewadd (matmul ..) (broadcast ..))).
    EXPECT_EQ(print_graph(m.graph), print_graph(import_onnx_bytes(block(kF32, kF32).SerializeAsString(), "f32").graph));
    ASSERT_TRUE(m.weights.count("w"));
    EXPECT_EQ(m.weights.at("w").elem_type(), type);
    EXPECT_EQ(m.weights.at("w").values()->data[1], -0.25f);  // read exactly
    for (int32_t t : expr_elem_types(m, m.graph)) EXPECT_EQ(t, type);
    // Written back in its type: the weights as they were, the declared input and output unchanged.
    onnx::ModelProto p;
    ASSERT_TRUE(p.ParseFromString(export_onnx_bytes(m, m.graph)));
    for (const auto& init : p.graph().initializer()) EXPECT_EQ(init.data_type(), type) << init.name();
    EXPECT_EQ(p.graph().input(0).type().tensor_type().elem_type(), type);
    EXPECT_EQ(p.graph().output(0).type().tensor_type().elem_type(), type);
  }
}

TEST(Float16, OperandsOfDifferentFloatTypesStayOpaque) {
  // Add(float16, float) is not valid ONNX, but a file may hold it: the node is not a term.
  const OnnxModel m = import_onnx_bytes(block(kF16, kF32).SerializeAsString(), "model.onnx");
  EXPECT_EQ(m.num_opaque(), 1u);
  bool noted = false;
  for (const std::string& note : m.notes) noted = noted || note.find("has element type 1, the node's result 10") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Float16, ConstantsTheExporterMakesHaveTheirTermsType) {
  const OnnxModel m = import_onnx_bytes(block(kF16, kF16).SerializeAsString(), "model.onnx");
  // A rewritten graph: the bias doubled by a folded (weight + weight), a clip with float bounds (scalars the
  // exporter writes) and a ones constant (a generator the exporter materializes).
  const Expr optimized = parse_expr(
      "(clip 0 0 3 0 (ewadd (ewmul (matmul 0 (input x 2 4) (weight w 4 4)) (ones (input x 2 4))) "
      "(broadcast 2 4 (ewadd (weight b 4) (weight b 4)))))");
  onnx::ModelProto p;
  ASSERT_TRUE(p.ParseFromString(export_onnx_bytes(m, optimized)));
  size_t made = 0;
  for (const auto& init : p.graph().initializer()) {
    if (init.data_type() == onnx::TensorProto::INT64) continue;
    EXPECT_EQ(init.data_type(), kF16) << init.name();
    made += init.name() != "w" && init.name() != "b";
  }
  EXPECT_GE(made, 2u);  // the folded sum and the clip bound at least
  // The file reads back with the same types, and computes what the term does.
  const OnnxModel back = import_onnx_bytes(p.SerializeAsString(), "back");
  EXPECT_EQ(back.num_opaque(), 0u);
  CheckResult c = check_equivalent(m, optimized);
  EXPECT_TRUE(c.evaluated) << c.reason;
}

TEST(Float16, CastsBetweenFloatTypesAreTheVocabularysCast) {
  // x (float32) -> Cast float16 -> Relu -> Cast float32 -> Cast float32 (a no-op) -> Cast int64 -> y.
  onnx::ModelProto m = empty_model();
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", kF32, {2, 3});
  declare(g->add_output(), "y", kF32, {2, 3});
  declare(g->add_output(), "i", onnx::TensorProto::INT64, {2, 3});
  auto cast = [&](const std::string& in, const std::string& out, int64_t to) {
    auto* n = g->add_node();
    n->set_op_type("Cast");
    n->add_input(in);
    n->add_output(out);
    detail::add_attr(*n, "to", to);
  };
  cast("x", "h", kF16);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("h");
  relu->add_output("r");
  cast("r", "f", kF32);
  cast("f", "y", kF32);
  cast("f", "i", onnx::TensorProto::INT64);
  const OnnxModel model = import_onnx_bytes(m.SerializeAsString(), "model.onnx");
  const std::string text = print_graph(model.graph);
  EXPECT_NE(text.find("(cast 1 (relu (cast 10 (input x 2 3))))"), std::string::npos) << text;
  EXPECT_EQ(model.num_opaque(), 1u) << text;  // the Cast to int64 only; the float32 -> float32 one is gone
  // Each node's type: the cast's target, its readers' the same.
  const std::vector<int32_t> types = expr_elem_types(model, model.graph);
  for (size_t i = 0; i < model.graph.size(); ++i) {
    const ExprNode& n = model.graph.nodes()[i];
    if (n.op == OpKind::Relu) {
      EXPECT_EQ(types[i], kF16);
    }
    if (n.op == OpKind::Cast) {
      EXPECT_EQ(types[i], static_cast<int32_t>(n.attrs[0]));
    }
  }
  // Written back as Casts with their targets, read back as the same graph, and computing what it did.
  onnx::ModelProto p;
  ASSERT_TRUE(p.ParseFromString(export_onnx_bytes(model, model.graph)));
  std::vector<int64_t> targets;
  for (const auto& n : p.graph().node())
    if (n.op_type() == "Cast")
      for (const auto& a : n.attribute()) targets.push_back(a.i());
  std::sort(targets.begin(), targets.end());
  EXPECT_EQ(targets, (std::vector<int64_t>{kF32, onnx::TensorProto::INT64, kF16}));
  EXPECT_EQ(print_graph(import_onnx_bytes(p.SerializeAsString(), "back").graph), text);
  // A graph that rounds x to bfloat16 instead (2^-9 relative against float16's 2^-11) computes something else,
  // and the check, which evaluates each cast's rounding, says so.
  std::string bfloat = text;
  bfloat.replace(bfloat.find("(cast 10 (input x 2 3))"), 23, "(cast 16 (input x 2 3))");
  const CheckResult c = check_equivalent(model, parse_expr(bfloat));
  EXPECT_TRUE(c.evaluated) << c.reason;
  EXPECT_FALSE(c.passed) << "bfloat16's rounding exceeds the float32 tolerance; max abs diff "
                         << c.max_abs_diff << ", rtol " << c.rtol << ", atol " << c.atol << ", " << c.reason;
}

TEST(Float16, CheckToleranceFollowsTheOutputType) {
  const CheckOptions o;
  EXPECT_EQ(tolerance_for(o, kF32).rtol, o.rtol);
  EXPECT_EQ(tolerance_for(o, kF32).atol, o.atol);
  EXPECT_EQ(tolerance_for(o, kF16).rtol, 0x1p-8);
  EXPECT_EQ(tolerance_for(o, kBF16).atol, 0x1p-5);
  CheckOptions loose;
  loose.rtol = 0.1;
  EXPECT_EQ(tolerance_for(loose, kF16).rtol, 0.1);  // a looser --rtol still applies
}

TEST(Float16, TheEGraphNeverMergesClassesOfDifferentTypes) {
  EGraph g;
  g.set_leaf_types([](OpKind, std::span<const int64_t>, const std::string& name) { return name == "h" ? kF16 : kF32; });
  const ClassId a = g.add(ENode{OpKind::Input, {2, 2}, {}, "h"});
  const ClassId b = g.add(ENode{OpKind::Input, {2, 2}, {}, "f"});
  const ClassId r = g.add(ENode{OpKind::Relu, {}, {a}, ""});
  EXPECT_EQ(g.elem_type(a), kF16);
  EXPECT_EQ(g.elem_type(r), kF16);  // an operator has its operand's type
  EXPECT_EQ(g.elem_type(b), kF32);
  EXPECT_THROW(g.merge(a, b), std::logic_error);
  EXPECT_NO_THROW(g.merge(r, a));
}

TEST(Float16, CostModelsCountTwoBytesAnElement) {
  const Shape s{1024, 1024};
  const Shape in[] = {s, s};
  const FlopCostModel flops;
  const double f32 = flops.node_cost(NodeContext{OpKind::EwAdd, {}, in, s, {}, kF32});
  const double f16 = flops.node_cost(NodeContext{OpKind::EwAdd, {}, in, s, {}, kF16});
  EXPECT_EQ(flops.node_cost(NodeContext{OpKind::EwAdd, {}, in, s, {}, 0}), f32);  // unknown: priced as float32
  EXPECT_LT(f16, f32);
  const Expr g = parse_expr("(matmul 0 (input x 4 8) (weight w 8 16))");
  EXPECT_EQ(weight_bytes(g), 4.0 * 128);
  EXPECT_EQ(weight_bytes(g, [](OpKind, std::span<const int64_t>, const std::string&) { return kBF16; }), 2.0 * 128);
  // An imported fp16 model is priced lower than the same model in float32 (bytes moved).
  const OnnxModel m16 = import_onnx_bytes(block(kF16, kF16).SerializeAsString(), "m16");
  const OnnxModel m32 = import_onnx_bytes(block(kF32, kF32).SerializeAsString(), "m32");
  EXPECT_LT(graph_cost(m16.graph, flops, leaf_elem_types(m16)), graph_cost(m32.graph, flops, leaf_elem_types(m32)));
  EXPECT_EQ(graph_cost(m32.graph, flops, leaf_elem_types(m32)), graph_cost(m32.graph, flops));
}

TEST(Float16, ACastReadsItsOperandsTypeAndWritesItsOwn) {
  // float16 -> float32 and float32 -> float16 move the same bytes (2 read + 4 written, or 4 + 2 an element):
  // the same cost either way, between an all-float16 and an all-float32 element-wise copy. Priced at the
  // result's type alone, the widening cast would cost what a float32 copy does and the narrowing one half.
  const std::filesystem::path devices = std::filesystem::path(TEQ_SOURCE_DIR) / "corpus" / "devices";
  const AnalyticalCostModel h200(load_device_profile(devices / "h200.json"), Precision::Fp32);
  const FlopCostModel flops;
  const Shape s{4096, 4096};
  const Shape in[] = {s};
  const std::vector<int64_t> to32{kF32}, to16{kF16};
  for (const CostModel* m : {static_cast<const CostModel*>(&h200), static_cast<const CostModel*>(&flops)}) {
    const double widen = m->node_cost(NodeContext{OpKind::Cast, to32, in, s, {}, kF32, kF16});
    const double narrow = m->node_cost(NodeContext{OpKind::Cast, to16, in, s, {}, kF16, kF32});
    EXPECT_DOUBLE_EQ(widen, narrow) << m->name();
    EXPECT_LT(widen, m->node_cost(NodeContext{OpKind::Relu, {}, in, s, {}, kF32})) << m->name();
    EXPECT_GT(widen, m->node_cost(NodeContext{OpKind::Relu, {}, in, s, {}, kF16})) << m->name();
  }
}

TEST(Float16, TheAnalyticalModelUsesTheDevicesSixteenBitRates) {
  const std::filesystem::path devices = std::filesystem::path(TEQ_SOURCE_DIR) / "corpus" / "devices";
  const AnalyticalCostModel h200(load_device_profile(devices / "h200.json"), Precision::Fp32);
  const Shape a{4096, 4096};
  const Shape in[] = {a, a};
  const std::vector<int64_t> no_act{0};
  const double f32 = h200.node_cost(NodeContext{OpKind::Matmul, no_act, in, a, {}, kF32});
  const double f16 = h200.node_cost(NodeContext{OpKind::Matmul, no_act, in, a, {}, kF16});
  EXPECT_EQ(h200.node_cost(NodeContext{OpKind::Matmul, no_act, in, a, {}, 0}), f32);
  EXPECT_LT(f16, f32 / 4);  // compute-bound: fp16 tensor cores against the FP32 rate
  // A profile without an fp16 rate (onnxruntime on a CPU) prices only the bytes.
  const AnalyticalCostModel cpu(load_device_profile(devices / "cpu-ort.json"), Precision::Fp32);
  EXPECT_EQ(cpu.node_cost(NodeContext{OpKind::Matmul, no_act, in, a, {}, kF16}),
            cpu.node_cost(NodeContext{OpKind::Matmul, no_act, in, a, {}, kF32}));
}

}  // namespace
}  // namespace teq::onnx_io
