#include "optimizer/onnx/from_expr.h"

#include <cmath>
#include <random>

#include <onnx/onnx_pb.h>

#include "rules/evaluator.h"

namespace teq::onnx_io {

namespace {

void declare(onnx::ValueInfoProto* info, const std::string& name, const Shape& shape) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* dims = tensor->mutable_shape();
  for (int64_t d : shape) dims->add_dim()->set_dim_value(d);
}

Tensor<float> random_weight(const Shape& shape, std::mt19937_64& rng) {
  // Fan-in scaling keeps activations of deep models (ResNet-50, BERT) in a range where --check's
  // relative comparison is meaningful.
  const int64_t n = num_elements(shape);
  std::vector<float> values(n);
  if (shape.size() <= 1) {
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    for (float& v : values) v = u(rng);
  } else {
    const int64_t fan_in = shape.size() == 2 ? shape[0] : n / shape[0];
    const float a = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(fan_in, 1)));
    std::uniform_real_distribution<float> u(-a, a);
    for (float& v : values) v = u(rng);
  }
  return Tensor<float>(shape, std::move(values));
}

}  // namespace

OnnxModel model_from_expr(const Expr& graph, const std::string& name, uint64_t seed) {
  const std::vector<Shape> shapes = infer_shapes(graph, {});
  OnnxModel m;
  m.graph = graph;
  m.opset = 17;
  m.source = name;
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.set_producer_name("tensor-eqsat");
  proto.add_opset_import()->set_version(m.opset);
  onnx::GraphProto* g = proto.mutable_graph();
  g->set_name(name);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < graph.size(); ++i) {
    const ExprNode& n = graph.nodes()[i];
    if (n.op == OpKind::Input) {
      m.inputs.push_back(TensorInfo{n.name, onnx::TensorProto::FLOAT, shapes[i], false});
      declare(g->add_input(), n.name, shapes[i]);
    } else if (n.op == OpKind::Weight) {
      m.weights.emplace(n.name, random_weight(shapes[i], rng));
    }
  }
  for (size_t k = 0; k < graph.roots().size(); ++k) {
    const std::string out = "output" + std::to_string(k);
    const Shape& shape = shapes[graph.roots()[k].value];
    m.outputs.push_back(TensorInfo{out, onnx::TensorProto::FLOAT, shape, false});
    declare(g->add_output(), out, shape);
  }
  m.shell = proto.SerializeAsString();
  return m;
}

}  // namespace teq::onnx_io
