#include <span>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/model.h"

namespace teq::onnx_io {

WeightValue::WeightValue(Tensor<float> held)
    : shape_(held.shape), held_(std::make_shared<const Tensor<float>>(std::move(held))) {}

WeightValue::WeightValue(Shape shape, ExternalBytes where) : shape_(std::move(shape)), external_(std::move(where)) {}

std::shared_ptr<const Tensor<float>> WeightValue::values() const {
  if (held_) return held_;
  std::vector<float> v(static_cast<size_t>(num_elements(shape_)));
  if (external_->length != v.size() * sizeof(float))
    throw OnnxError("'" + external_->file.string() + "' holds " + std::to_string(external_->length) +
                    " bytes for a weight of shape " + to_string(shape_));
  // Straight into the values: the file is little-endian, as ONNX says and this host is.
  detail::read_external(*external_, std::span<char>(reinterpret_cast<char*>(v.data()), external_->length));
  return std::make_shared<const Tensor<float>>(shape_, std::move(v));
}

}  // namespace teq::onnx_io
