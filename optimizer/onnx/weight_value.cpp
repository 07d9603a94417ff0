#include <algorithm>
#include <cstring>
#include <map>
#include <span>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/elementwise.h"
#include "optimizer/onnx/model.h"
#include "rules/ops/opaque.h"

namespace teq::onnx_io {

WeightValue::WeightValue(Tensor<float> held, int32_t elem_type)
    : shape_(held.shape), held_(std::make_shared<const Tensor<float>>(std::move(held))), elem_type_(elem_type) {}

WeightValue::WeightValue(Shape shape, ExternalBytes where, int32_t elem_type)
    : shape_(std::move(shape)), external_(std::move(where)), elem_type_(elem_type) {}

std::shared_ptr<const Tensor<float>> WeightValue::values() const {
  if (held_) return held_;
  std::vector<float> v(static_cast<size_t>(num_elements(shape_)));
  const auto element = static_cast<uint64_t>(detail::float_type_bytes(elem_type_));
  if (external_->length != v.size() * element)
    throw OnnxError("'" + external_->file.string() + "' holds " + std::to_string(external_->length) +
                    " bytes for a weight of shape " + to_string(shape_));
  if (elem_type_ == onnx::TensorProto::FLOAT) {
    // Straight into the values: the file is little-endian, as ONNX says and this host is.
    detail::read_external(*external_, std::span<char>(reinterpret_cast<char*>(v.data()), external_->length));
  } else {
    // 16-bit values read into the upper half of the buffer, then widened in place from the front: element i's
    // float (bytes 4i..4i+3) never overwrites a 16-bit value not yet read (bytes 2n+2i..).
    const size_t n = v.size();
    char* base = reinterpret_cast<char*>(v.data());
    detail::read_external(*external_, std::span<char>(base + 2 * n, external_->length));
    detail::decode_float_bytes(base + 2 * n, 2 * n, elem_type_, v.data());
  }
  return std::make_shared<const Tensor<float>>(shape_, std::move(v));
}

Tensor<double> WeightValue::doubles() const {
  if (held_) return Tensor<double>(shape_, std::vector<double>(held_->data.begin(), held_->data.end()));
  const size_t n = static_cast<size_t>(num_elements(shape_));
  const auto element = static_cast<uint64_t>(detail::float_type_bytes(elem_type_));
  if (external_->length != n * element)
    throw OnnxError("'" + external_->file.string() + "' holds " + std::to_string(external_->length) +
                    " bytes for a weight of shape " + to_string(shape_));
  std::vector<double> out(n);
  constexpr size_t kChunk = size_t{1} << 22;  // elements read at a time
  std::vector<char> bytes;
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t count = std::min(kChunk, n - begin);
    bytes.resize(count * element);
    detail::read_external({external_->file, external_->offset + begin * element, count * element}, bytes);
    detail::decode_float_bytes(bytes.data(), bytes.size(), elem_type_, out.data() + begin);
  }
  return Tensor<double>(shape_, std::move(out));
}

std::vector<int32_t> expr_elem_types(const OnnxModel& model, const Expr& graph) {
  std::map<std::string, int32_t> input_types;
  for (const TensorInfo& in : model.inputs) input_types[in.name] = in.elem_type;
  std::vector<int32_t> types(graph.size(), 0);
  for (size_t i = 0; i < graph.size(); ++i) {
    const ExprNode& n = graph.nodes()[i];
    int32_t& t = types[i];
    if (n.op == OpKind::Input) {
      auto it = input_types.find(n.name);
      t = it == input_types.end() ? onnx::TensorProto::FLOAT : it->second;
    } else if (n.op == OpKind::Weight) {
      auto it = model.weights.find(n.name);
      t = it == model.weights.end() ? onnx::TensorProto::FLOAT : it->second.elem_type();
    } else if (n.op == OpKind::Opaque) {
      const ops::OpaqueAttrs a = ops::opaque_attrs(n.attrs);
      if (a.id >= 0 && static_cast<size_t>(a.id) < model.opaque.size()) {
        const auto& ot = model.opaque[static_cast<size_t>(a.id)].output_types;
        if (a.output >= 0 && static_cast<size_t>(a.output) < ot.size()) t = ot[static_cast<size_t>(a.output)];
      }
    } else if (!n.children.empty()) {
      t = ops::result_elem_type(n.op, n.attrs, types[n.children[0].value]);
      for (ExprId c : n.children)
        if (n.op != OpKind::Cast && detail::is_term_float_type(types[c.value]) && detail::is_term_float_type(t) &&
            types[c.value] != t)
          throw OnnxError(model.source + ": operator " + std::string(op_name(n.op)) + " has operands of element types " +
                          std::to_string(t) + " and " + std::to_string(types[c.value]));
    } else {
      t = onnx::TensorProto::FLOAT;
    }
  }
  return types;
}

}  // namespace teq::onnx_io
