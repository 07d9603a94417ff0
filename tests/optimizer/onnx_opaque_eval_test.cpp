// --check through opaque ONNX operators: the node evaluator (optimizer/onnx/detail/onnx_node_eval.h) on
// hand-computed values for the forms that are easy to get wrong, and check_equivalent / check_models /
// check_optimization on small models whose operators stay opaque. tests/python/test_onnx_node_eval.py runs the
// evaluator over ONNX's node test cases and onnxruntime's outputs.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/check.h"
#include "optimizer/onnx/detail/onnx_node_eval.h"
#include "optimizer/onnx/onnx_import.h"
#include "tests/optimizer/symbolic_graph.h"

namespace teq::onnx_io {
namespace {

using detail::OnnxValue;
using TP = onnx::TensorProto;

OnnxValue val(Shape s, std::vector<double> v, int32_t type = TP::FLOAT) { return {Tensor<double>(std::move(s), std::move(v)), type}; }

onnx::NodeProto node(const std::string& op, int inputs, int outputs = 1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (int k = 0; k < inputs; ++k) n.add_input("i" + std::to_string(k));
  for (int k = 0; k < outputs; ++k) n.add_output("o" + std::to_string(k));
  return n;
}
void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

std::vector<OnnxValue> eval(const onnx::NodeProto& n, std::vector<const OnnxValue*> in, int64_t opset = 17) {
  return detail::evaluate_onnx_node(n, in, opset);
}

void expect_values(const OnnxValue& got, const Shape& shape, const std::vector<double>& want, int32_t type) {
  EXPECT_EQ(got.type, type);
  ASSERT_EQ(got.t.shape, shape);
  ASSERT_EQ(got.t.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.t.data[i], want[i], 1e-6) << "element " << i;
}

TEST(OnnxNodeEval, GatherNegativeIndices) {
  const OnnxValue x = val({3, 2}, {1, 2, 3, 4, 5, 6}), i = val({2}, {-1, 0}, TP::INT64);
  expect_values(eval(node("Gather", 2), {&x, &i})[0], {2, 2}, {5, 6, 1, 2}, TP::FLOAT);
  onnx::NodeProto n = node("Gather", 2);
  attr(n, "axis", 1);
  const OnnxValue j = val({}, {-2}, TP::INT64);
  expect_values(eval(n, {&x, &j})[0], {3}, {1, 3, 5}, TP::FLOAT);
}

TEST(OnnxNodeEval, ExpandBroadcastsBothWays) {
  const OnnxValue x = val({2, 1}, {1, 2}), s = val({3}, {2, 1, 3}, TP::INT64);
  expect_values(eval(node("Expand", 2), {&x, &s})[0], {2, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}, TP::FLOAT);
}

TEST(OnnxNodeEval, CastTruncatesTowardZeroAndBoolIsNonZero) {
  const OnnxValue x = val({5}, {-2.7, -0.5, 0, 0.4, 2.9});
  onnx::NodeProto to_int = node("Cast", 1), to_bool = node("Cast", 1);
  attr(to_int, "to", TP::INT64);
  attr(to_bool, "to", TP::BOOL);
  expect_values(eval(to_int, {&x})[0], {5}, {-2, 0, 0, 0, 2}, TP::INT64);
  expect_values(eval(to_bool, {&x})[0], {5}, {1, 1, 0, 1, 1}, TP::BOOL);
  const OnnxValue a = val({4}, {7, -7, 7, -7}, TP::INT64), b = val({4}, {2, 2, -2, -2}, TP::INT64);
  expect_values(eval(node("Div", 2), {&a, &b})[0], {4}, {3, -3, -3, 3}, TP::INT64);  // integer Div truncates
}

TEST(OnnxNodeEval, CumSumExclusiveAndReverse) {
  const OnnxValue x = val({4}, {1, 2, 3, 4}), axis = val({}, {0}, TP::INT64);
  onnx::NodeProto n = node("CumSum", 2);
  expect_values(eval(n, {&x, &axis})[0], {4}, {1, 3, 6, 10}, TP::FLOAT);
  attr(n, "exclusive", 1);
  expect_values(eval(n, {&x, &axis})[0], {4}, {0, 1, 3, 6}, TP::FLOAT);
  attr(n, "reverse", 1);
  expect_values(eval(n, {&x, &axis})[0], {4}, {9, 7, 4, 0}, TP::FLOAT);
}

TEST(OnnxNodeEval, SliceNegativeSteps) {
  const OnnxValue x = val({6}, {0, 1, 2, 3, 4, 5});
  const OnnxValue s = val({1}, {-1}, TP::INT64), e = val({1}, {-1000}, TP::INT64), a = val({1}, {0}, TP::INT64),
                  t = val({1}, {-2}, TP::INT64);
  expect_values(eval(node("Slice", 5), {&x, &s, &e, &a, &t})[0], {3}, {5, 3, 1}, TP::FLOAT);
  const OnnxValue s2 = val({1}, {4}, TP::INT64), e2 = val({1}, {1}, TP::INT64), t2 = val({1}, {-3}, TP::INT64);
  expect_values(eval(node("Slice", 5), {&x, &s2, &e2, &a, &t2})[0], {1}, {4}, TP::FLOAT);
}

TEST(OnnxNodeEval, WhereBroadcastsAndTakesXsType) {
  const OnnxValue c = val({2, 1}, {1, 0}, TP::BOOL), x = val({3}, {1, 2, 3}, TP::INT64), y = val({}, {-1}, TP::INT64);
  expect_values(eval(node("Where", 3), {&c, &x, &y})[0], {2, 3}, {1, 2, 3, -1, -1, -1}, TP::INT64);
}

TEST(OnnxNodeEval, ShapesFromValues) {
  // NonZero: one row of indices per axis, in row-major order of the hits; none -> [rank, 0].
  const OnnxValue x = val({2, 3}, {0, 1, 0, 2, 0, 3});
  expect_values(eval(node("NonZero", 1), {&x})[0], {2, 3}, {0, 1, 1, 1, 0, 2}, TP::INT64);
  const OnnxValue zeros = val({2, 2}, {0, 0, 0, 0});
  expect_values(eval(node("NonZero", 1), {&zeros})[0], {2, 0}, {}, TP::INT64);
  // Compress: along an axis, or flattened without one; a condition shorter than the axis.
  const OnnxValue cond = val({2}, {0, 1}, TP::BOOL);
  onnx::NodeProto c = node("Compress", 2);
  attr(c, "axis", 1);
  expect_values(eval(c, {&x, &cond})[0], {2, 1}, {1, 0}, TP::FLOAT);
  expect_values(eval(node("Compress", 2), {&x, &cond})[0], {1}, {1}, TP::FLOAT);
  // TopK: k from its input, largest first, ties by the lower index; smallest with largest=0.
  const OnnxValue t = val({1, 4}, {3, 1, 3, 2}), k = val({1}, {3}, TP::INT64);
  std::vector<OnnxValue> top = eval(node("TopK", 2, 2), {&t, &k});
  expect_values(top[0], {1, 3}, {3, 3, 2}, TP::FLOAT);
  expect_values(top[1], {1, 3}, {0, 2, 3}, TP::INT64);
  onnx::NodeProto small = node("TopK", 2, 2);
  attr(small, "largest", 0);
  expect_values(eval(small, {&t, &k})[1], {1, 3}, {1, 3, 0}, TP::INT64);
  // Unique, sorted and in order of first occurrence: values, first indices, inverse indices, counts.
  const OnnxValue u = val({6}, {2, 1, 1, 3, 4, 3});
  std::vector<OnnxValue> sorted = eval(node("Unique", 1, 4), {&u});
  expect_values(sorted[0], {4}, {1, 2, 3, 4}, TP::FLOAT);
  expect_values(sorted[1], {4}, {1, 0, 3, 4}, TP::INT64);
  expect_values(sorted[2], {6}, {1, 0, 0, 2, 3, 2}, TP::INT64);
  expect_values(sorted[3], {4}, {2, 1, 2, 1}, TP::INT64);
  onnx::NodeProto first = node("Unique", 1, 4);
  attr(first, "sorted", 0);
  expect_values(eval(first, {&u})[0], {4}, {2, 1, 3, 4}, TP::FLOAT);
}

TEST(OnnxNodeEval, ScanRunsTheBodyPerSlice) {
  // state s [2], scan input x [3, 2] read in reverse: s <- s + row, each step's s stacked.
  onnx::NodeProto n = node("Scan", 2, 2);
  attr(n, "num_scan_inputs", 1);
  attr(n, "scan_input_directions", std::vector<int64_t>{1});
  onnx::AttributeProto* body = n.add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& g = *body->mutable_g();
  for (const char* name : {"s_in", "row"}) g.add_input()->set_name(name);
  onnx::NodeProto& add = *g.add_node();
  add.set_op_type("Add");
  add.add_input("s_in");
  add.add_input("row");
  add.add_output("s_out");
  onnx::NodeProto& id = *g.add_node();
  id.set_op_type("Identity");
  id.add_input("s_out");
  id.add_output("step");
  g.add_output()->set_name("s_out");
  g.add_output()->set_name("step");
  const OnnxValue s = val({2}, {0, 0}), x = val({3, 2}, {1, 2, 3, 4, 5, 6});
  std::vector<OnnxValue> out = eval(n, {&s, &x});
  expect_values(out[0], {2}, {9, 12}, TP::FLOAT);
  expect_values(out[1], {3, 2}, {5, 6, 8, 10, 9, 12}, TP::FLOAT);
}

TEST(OnnxNodeEval, Conv1dWithPadsAndGroups) {
  // Two groups of one channel each, kernel [1, -1] for output 0 and [2] ... per group: w[0] = [1, -1], w[1] = [0, 2].
  const OnnxValue x = val({1, 2, 3}, {1, 2, 3, 10, 20, 30}), w = val({2, 1, 2}, {1, -1, 0, 2}), b = val({2}, {0.5, 0});
  onnx::NodeProto n = node("Conv", 3);
  attr(n, "group", 2);
  attr(n, "pads", std::vector<int64_t>{1, 0});
  // Group 0 on x0 padded [0,1,2,3]: windows (0,1) (1,2) (2,3) -> -1, -1, -1, plus 0.5. Group 1 on [0,10,20,30]:
  // 2 * right element -> 20, 40, 60.
  expect_values(eval(n, {&x, &w, &b})[0], {1, 2, 3}, {-0.5, -0.5, -0.5, 20, 40, 60}, TP::FLOAT);
}

TEST(OnnxNodeEval, LayerNormalizationOverTheLastAxis) {
  const OnnxValue x = val({2, 2}, {1, 3, 2, 2}), scale = val({2}, {2, 1}), bias = val({2}, {0, 1});
  onnx::NodeProto n = node("LayerNormalization", 3, 3);
  attr_f(n, "epsilon", 0);
  const auto out = eval(n, {&x, &scale, &bias});
  // Row 0: mean 2, variance 1 -> [-1, 1] -> [-2, 2]; row 1: variance 0 -> 0/0 is NaN with epsilon 0, so use row 0.
  EXPECT_NEAR(out[0].t.data[0], -2, 1e-12);
  EXPECT_NEAR(out[0].t.data[1], 2, 1e-12);
  expect_values(out[1], {2, 1}, {2, 2}, TP::FLOAT);
  EXPECT_NEAR(out[2].t.data[0], 1, 1e-12);
}

TEST(OnnxNodeEval, RangeCountsUpOrDown) {
  const OnnxValue a = val({}, {10}, TP::INT64), b = val({}, {-3}, TP::INT64), d = val({}, {-4}, TP::INT64);
  expect_values(eval(node("Range", 3), {&a, &b, &d})[0], {4}, {10, 6, 2, -2}, TP::INT64);
}

TEST(OnnxNodeEval, UnsqueezeAxesFromAttributeOrInput) {
  const OnnxValue x = val({2}, {1, 2}), axes = val({2}, {0, -1}, TP::INT64);
  onnx::NodeProto old = node("Unsqueeze", 1);
  attr(old, "axes", std::vector<int64_t>{0, -1});
  expect_values(eval(old, {&x}, 11)[0], {1, 2, 1}, {1, 2}, TP::FLOAT);
  expect_values(eval(node("Unsqueeze", 2), {&x, &axes})[0], {1, 2, 1}, {1, 2}, TP::FLOAT);
}

TEST(OnnxNodeEval, OperatorsNotCoveredAreNamed) {
  const OnnxValue x = val({1}, {1});
  EXPECT_FALSE(detail::onnx_node_evaluable(node("Resize", 1)));
  try {
    eval(node("Resize", 1), {&x});
    FAIL() << "Resize evaluated";
  } catch (const detail::NotEvaluable& e) {
    EXPECT_NE(std::string(e.what()).find("Resize"), std::string::npos) << e.what();
  }
}

// A model with a symbolic batch and sequence: ids [batch, seq] int64 -> Gather from a float table (opaque: a
// non-float index) -> LeakyRelu (opaque) -> Where(ids == 1, ., 0) -> y [batch, seq, 2].
std::string masked_model(float alpha, bool inverted = false) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("masked");
  auto add_io = [](onnx::ValueInfoProto* v, const std::string& name, int32_t type, std::vector<std::string> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (const std::string& d : dims) {
      auto* dim = t->mutable_shape()->add_dim();
      if (d[0] >= '0' && d[0] <= '9') dim->set_dim_value(std::stoll(d));
      else dim->set_dim_param(d);
    }
  };
  add_io(g->add_input(), "ids", TP::INT64, {"batch", "seq"});
  add_io(g->add_output(), "y", TP::FLOAT, {"batch", "seq", "2"});
  auto* table = g->add_initializer();
  table->set_name("table");
  table->set_data_type(TP::FLOAT);
  table->add_dims(3);
  table->add_dims(2);
  for (float v : {0.5f, -1.0f, 2.0f, -3.0f, 0.25f, 4.0f}) table->add_float_data(v);
  auto* one = g->add_initializer();
  one->set_name("one");
  one->set_data_type(TP::INT64);
  one->add_int64_data(1);
  auto* zero = g->add_initializer();
  zero->set_name("zero");
  zero->set_data_type(TP::FLOAT);
  zero->add_float_data(0);
  auto* axes = g->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(TP::INT64);
  axes->add_dims(1);
  axes->add_int64_data(-1);
  auto add = [&](const std::string& type, std::vector<std::string> in, std::string out) {
    auto* n = g->add_node();
    n->set_op_type(type);
    n->set_name(out);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  add("Gather", {"table", "ids"}, "e");
  attr_f(*add("LeakyRelu", {"e"}, "l"), "alpha", alpha);
  add("Equal", {"ids", "one"}, "is1");
  add("Unsqueeze", {"is1", "axes"}, "m");
  if (inverted) {  // the same values: where(not m, 0, l)
    add("Not", {"m"}, "not_m");
    add("Where", {"not_m", "zero", "l"}, "y");
  } else {
    add("Where", {"m", "l", "zero"}, "y");
  }
  return m.SerializeAsString();
}

TEST(OnnxOpaqueCheck, EvaluatesThroughOpaqueOperators) {
  const std::string bytes = masked_model(0.1f);
  const OnnxModel m = import_onnx_bytes(bytes, "masked", batch_seq(1, 3));
  ASSERT_GE(m.num_opaque(), 3u);
  // ids [[2, 1, 0]]: only the middle token is 1 -> table row 1 = [2, -3] -> LeakyRelu -> [2, -0.3].
  const auto out = evaluate_model(m, {{"ids", Tensor<double>({1, 3}, {2, 1, 0})}});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape, (Shape{1, 3, 2}));
  const std::vector<double> want = {0, 0, 2, -0.3, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[0].data[i], want[i], 1e-6) << i;

  CheckResult same = check_equivalent(m, m.graph);
  ASSERT_TRUE(same.evaluated) << same.reason;
  EXPECT_TRUE(same.passed) << same.reason;
  // Another alpha inside the opaque LeakyRelu: the check sees the difference (random ids are 0 or 1, so some
  // rows are kept; table row 1 has a negative element).
  CheckResult differ = check_models(import_onnx_bytes(bytes, "masked", batch_seq(4, 8)),
                                    import_onnx_bytes(masked_model(0.2f), "masked 0.2", batch_seq(4, 8)));
  ASSERT_TRUE(differ.evaluated) << differ.reason;
  EXPECT_FALSE(differ.passed);
}

TEST(OnnxOpaqueCheck, SecondSizesOfEachDimensionAndAllAtOnce) {
  const std::string bytes = masked_model(0.1f);
  const OnnxModel m = import_onnx_bytes(bytes, "masked", batch_seq(1, 8));
  CheckResult c = check_optimization(m, m.graph, bytes, batch_seq(1, 8));
  ASSERT_TRUE(c.evaluated) << c.reason;
  EXPECT_TRUE(c.passed) << c.reason;
  ASSERT_EQ(c.sizes.size(), 3u);
  EXPECT_EQ(c.sizes[0].at, "batch=2");
  EXPECT_EQ(c.sizes[1].at, "seq=4");
  EXPECT_EQ(c.sizes[2].at, "batch=2, seq=4");
  EXPECT_EQ(c.sizes[2].dim + "=" + std::to_string(c.sizes[2].value), "batch=2, seq=4");
  for (const SizeCheck& s : c.sizes) {
    EXPECT_TRUE(s.evaluated) << s.at << ": " << s.reason;
    EXPECT_TRUE(s.passed) << s.at << ": " << s.reason;
    EXPECT_TRUE(s.identical) << s.at;  // the graph against itself: passed without evaluating
  }
  // An equal graph of another form, at the all-at-once size: evaluated through the opaque nodes.
  const CheckResult other = check_models(import_onnx_bytes(bytes, "masked", batch_seq(2, 4)),
                                         import_onnx_bytes(masked_model(0.1f, true), "inverted", batch_seq(2, 4)));
  ASSERT_TRUE(other.evaluated) << other.reason;
  EXPECT_FALSE(other.identical);
  EXPECT_TRUE(other.passed) << other.reason;
  EXPECT_EQ(other.elements, 2u * 4u * 2u);
}

}  // namespace
}  // namespace teq::onnx_io
