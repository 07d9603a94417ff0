// The import's common-subexpression elimination (optimizer/onnx/detail/merge_duplicates.h): repeated shape
// computations and literals merge into their first occurrence, reads (in subgraphs too) follow the rename, and
// what is not a pure function of its inputs, or computes a graph output, stays.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "optimizer/onnx/detail/merge_duplicates.h"
#include "optimizer/onnx/onnx_import.h"

namespace teq::onnx_io::detail {
namespace {

onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(out.empty() ? op : out[0]);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

void add_int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

/// A Constant int64 tensor, 1-d, or 0-d (one value) when `scalar`.
void add_int_constant(onnx::GraphProto& g, const std::string& out, std::vector<int64_t> v, bool scalar = false) {
  auto* a = add_node(g, "Constant", {}, {out})->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) a->mutable_t()->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) a->mutable_t()->add_int64_data(x);
}

void add_float_input(onnx::GraphProto& g, const std::string& name, std::vector<std::string> dims) {
  auto* t = g.add_input();
  t->set_name(name);
  auto* tt = t->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (const auto& d : dims) {
    if (d.find_first_not_of("0123456789") == std::string::npos)
      tt->mutable_shape()->add_dim()->set_dim_value(std::stoll(d));
    else
      tt->mutable_shape()->add_dim()->set_dim_param(d);
  }
}

std::vector<std::string> op_types(const onnx::GraphProto& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.node()) ops.push_back(n.op_type());
  return ops;
}

// x[batch, 8] reshaped twice to [batch, 2, 4] with the target computed from Shape(x) each time, as the
// TorchScript exporter writes one chain per use.
onnx::ModelProto twice_reshaped() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("g");
  add_float_input(g, "x", {"batch", "8"});
  for (const std::string s : {"a", "b"}) {
    add_node(g, "Shape", {"x"}, {"shape_" + s});
    add_int_constant(g, "zero_" + s, {0}, true);
    add_node(g, "Gather", {"shape_" + s, "zero_" + s}, {"batch_" + s});
    add_int_constant(g, "axes_" + s, {0});
    add_node(g, "Unsqueeze", {"batch_" + s, "axes_" + s}, {"batch1_" + s});
    add_int_constant(g, "rest_" + s, {2, 4});
    add_int_attr(add_node(g, "Concat", {"batch1_" + s, "rest_" + s}, {"target_" + s}), "axis", 0);
    add_node(g, "Reshape", {"x", "target_" + s}, {"y_" + s});
  }
  add_node(g, "Add", {"y_a", "y_b"}, {"sum"});
  auto* out = g.add_output();
  out->set_name("sum");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* out_shape = out->mutable_type()->mutable_tensor_type()->mutable_shape();
  out_shape->add_dim()->set_dim_param("batch");
  out_shape->add_dim()->set_dim_value(2);
  out_shape->add_dim()->set_dim_value(4);
  return m;
}

TEST(MergeDuplicates, RepeatedShapeChainsMergeAndReadsFollow) {
  onnx::ModelProto m = twice_reshaped();
  const int before = m.graph().node_size();
  EXPECT_EQ(merge_duplicate_nodes(*m.mutable_graph()), 8);  // the second chain, Reshape included
  EXPECT_EQ(m.graph().node_size(), before - 8);
  const onnx::NodeProto& add = m.graph().node(m.graph().node_size() - 1);
  EXPECT_EQ(add.op_type(), "Add");
  EXPECT_EQ(add.input(0), "y_a");
  EXPECT_EQ(add.input(1), "y_a");
  EXPECT_NO_THROW(onnx::checker::check_model(m));
}

TEST(MergeDuplicates, AGraphWithoutDuplicatesIsLeftAsItIs) {
  onnx::ModelProto m = twice_reshaped();
  ASSERT_GT(merge_duplicate_nodes(*m.mutable_graph()), 0);
  const std::string once = m.SerializeAsString();
  EXPECT_EQ(merge_duplicate_nodes(*m.mutable_graph()), 0);
  EXPECT_EQ(m.SerializeAsString(), once);
}

TEST(MergeDuplicates, MergedModelImportsWithTheSameGraphOutputShape) {
  const onnx::ModelProto m = twice_reshaped();
  ImportOptions options;
  options.dims["batch"] = 3;
  const OnnxModel merged = import_onnx_bytes(m.SerializeAsString(), "twice_reshaped", options);
  ASSERT_EQ(merged.outputs.size(), 1u);
  EXPECT_EQ(merged.outputs[0].shape, (Shape{3, 2, 4}));
  ASSERT_FALSE(merged.folded.empty());
  EXPECT_NE(merged.folded.front().find("8 duplicate nodes merged"), std::string::npos) << merged.folded.front();
}

TEST(MergeDuplicates, DifferentAttributesRandomOperatorsAndGraphOutputsStay) {
  onnx::GraphProto g;
  add_float_input(g, "x", {"4"});
  add_int_attr(add_node(g, "Softmax", {"x"}, {"s0"}), "axis", 0);
  add_int_attr(add_node(g, "Softmax", {"x"}, {"s1"}), "axis", -1);  // other attribute: stays
  add_node(g, "RandomNormalLike", {"x"}, {"r0"});
  add_node(g, "RandomNormalLike", {"x"}, {"r1"});  // not a function of its inputs: stays
  add_node(g, "Relu", {"x"}, {"out0"});
  add_node(g, "Relu", {"x"}, {"out1"});  // computes a graph output: stays
  auto* custom0 = add_node(g, "Sample", {"x"}, {"c0"});
  custom0->set_domain("com.example");
  auto* custom1 = add_node(g, "Sample", {"x"}, {"c1"});  // another domain: determinism unknown, stays
  custom1->set_domain("com.example");
  g.add_output()->set_name("out0");
  g.add_output()->set_name("out1");
  EXPECT_EQ(merge_duplicate_nodes(g), 0);
  EXPECT_EQ(g.node_size(), 8);
}

TEST(MergeDuplicates, AnOptionalOutputTheFirstLeavesUnnamedIsNotMerged) {
  onnx::GraphProto g;
  add_float_input(g, "x", {"4"});
  add_node(g, "TopK", {"x", "k"}, {"v0", ""});
  add_node(g, "TopK", {"x", "k"}, {"v1", "i1"});  // its indices are read: the first cannot stand for it
  add_node(g, "TopK", {"x", "k"}, {"v2", ""});    // merges into the first
  add_node(g, "Cast", {"i1"}, {"f"});
  add_node(g, "Sum", {"v0", "v1", "v2", "f"}, {"out"});
  g.add_output()->set_name("out");
  EXPECT_EQ(merge_duplicate_nodes(g), 1);
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"TopK", "TopK", "Cast", "Sum"}));
  EXPECT_EQ(g.node(3).input(2), "v0");
}

TEST(MergeDuplicates, ReadsInsideSubgraphsFollowTheRename) {
  onnx::GraphProto g;
  add_float_input(g, "x", {"4"});
  add_node(g, "Neg", {"x"}, {"n0"});
  add_node(g, "Neg", {"x"}, {"n1"});
  auto* cond = add_node(g, "ReduceSum", {"x"}, {"cond"});
  (void)cond;
  auto* branch = add_node(g, "If", {"cond"}, {"out"});
  for (const std::string name : {"then_branch", "else_branch"}) {
    auto* a = branch->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto& body = *a->mutable_g();
    body.set_name(name);
    add_node(body, "Identity", {name == "then_branch" ? "n1" : "n0"}, {name + "_y"});
    body.add_output()->set_name(name + "_y");
  }
  g.add_output()->set_name("out");
  EXPECT_EQ(merge_duplicate_nodes(g), 1);
  const onnx::NodeProto& merged_if = g.node(g.node_size() - 1);
  ASSERT_EQ(merged_if.op_type(), "If");
  for (const auto& a : merged_if.attribute()) EXPECT_EQ(a.g().node(0).input(0), "n0") << a.name();
}

}  // namespace
}  // namespace teq::onnx_io::detail
