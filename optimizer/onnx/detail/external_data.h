// Private to ONNX import/export: tensor data kept outside the model file (TensorProto data_location
// EXTERNAL, as onnx.save(..., save_as_external_data=True) writes it), so that models over protobuf's 2 GB
// limit, and large ones generally, load and are written back the same way.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

namespace teq::onnx_io::detail {

/// Reads every external initializer and Constant-node tensor of `model` into its raw_data (the rest of the
/// import then sees inline tensors). Locations are relative to `dir`. Returns whether there was any. Throws
/// OnnxError("<origin>: tensor 'NAME' ...") for a location that is absolute or leaves `dir`, a missing or
/// unreadable file, an offset/length beyond the file's end, a length that does not fit the tensor's shape,
/// or (with an empty `dir`: bytes without a file) any external tensor.
bool load_external_data(onnx::ModelProto& model, const std::filesystem::path& dir, const std::string& origin);

/// Moves every initializer whose raw_data holds at least `threshold` bytes into `data_file`, one after
/// the other, and points it there (location = data_file's name: the file lies beside the model). Returns
/// the number of tensors moved; writes no file when that is 0. Throws OnnxError when it cannot write.
size_t move_to_external_data(onnx::ModelProto& model, const std::filesystem::path& data_file, size_t threshold);

/// Tensors below this many bytes stay in the model file (onnx.save's default size_threshold).
inline constexpr size_t kExternalDataThreshold = 1024;

}  // namespace teq::onnx_io::detail
