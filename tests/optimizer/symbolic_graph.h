// Small ONNX models with symbolic dimensions for the import, export and check tests: SymbolicGraph builds one node by
// node as PyTorch's exporters write shape arithmetic; batch_seq binds its two dimensions.
#pragma once

#include <onnx/onnx_pb.h>

#include <cctype>
#include <string>
#include <vector>

#include "optimizer/onnx/onnx_import.h"

namespace teq::onnx_io {

/// A float model with symbolic dimensions, built node by node as PyTorch's exporters write shape arithmetic.
struct SymbolicGraph {
  onnx::ModelProto m;
  onnx::GraphProto& g;
  int64_t opset;
  explicit SymbolicGraph(int64_t opset_version) : g(*m.mutable_graph()), opset(opset_version) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    g.set_name("symbolic");
  }
  /// dims: a number, or a dim_param.
  static void value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::string>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (const std::string& d : dims) {
      auto* dim = t->mutable_shape()->add_dim();
      if (std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
      else dim->set_dim_param(d);
    }
  }
  void input(const std::string& name, const std::vector<std::string>& dims) { value(g.add_input(), name, dims); }
  void output(const std::string& name, const std::vector<std::string>& dims) { value(g.add_output(), name, dims); }
  void ints(const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto& t = *g.add_initializer();
    t.set_name(name), t.set_data_type(onnx::TensorProto::INT64), t.add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t.add_int64_data(v);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    onnx::NodeProto& n = *g.add_node();
    n.set_op_type(op), n.set_name("node_" + out), n.add_output(out);
    for (const std::string& i : in) n.add_input(i);
    return n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(name);
    if (v.size() == 1 && name != "perm" && name != "axes") {
      a.set_type(onnx::AttributeProto::INT), a.set_i(v[0]);
    } else {
      a.set_type(onnx::AttributeProto::INTS);
      for (int64_t e : v) a.add_ints(e);
    }
  }
  /// Tensor t's extent at `axis` (a constant `index` of it names the axis before opset 15), as the exporters
  /// write it.
  void extent(const std::string& t, int64_t axis, const std::string& index, const std::string& out) {
    if (opset >= 15) {
      onnx::NodeProto& n = node("Shape", {t}, out);
      attr(n, "start", {axis}), attr(n, "end", {axis + 1});
    } else {
      node("Shape", {t}, out + "_shape");
      attr(node("Gather", {out + "_shape", index}, out), "axis", {0});
    }
  }
  std::string bytes() const { return m.SerializeAsString(); }
};

/// Import options binding the symbolic dimensions `batch` and `seq`.
inline ImportOptions batch_seq(int64_t batch, int64_t seq) {
  ImportOptions o;
  o.dims["batch"] = batch;
  o.dims["seq"] = seq;
  return o;
}

}  // namespace teq::onnx_io
