// Private to ONNX import/export: tensor data kept outside the model file (TensorProto data_location
// EXTERNAL, as onnx.save(..., save_as_external_data=True) writes it), so that models over protobuf's 2 GB
// limit, and large ones generally, load and are written back the same way.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/model.h"

namespace teq::onnx_io::detail {

/// What load_external_data reads into memory.
enum class ExternalLoad {
  All,          // every external tensor (the rest of the code sees inline tensors)
  LeaveFloats,  // all but floating-point initializers, which are validated and left in their file (read on
                // request: WeightValue, load_tensor_data), so that a model's weights are not all in memory
};

/// Reads the external initializers and Constant-node tensors of `model` into their raw_data (as `mode`
/// says). Locations are relative to `dir`. Returns whether there was any. Throws
/// OnnxError("<origin>: tensor 'NAME' ...") for a location that is absolute or leaves `dir`, a missing or
/// unreadable file, an offset/length beyond the file's end, a length that does not fit the tensor's shape,
/// or (with an empty `dir`: bytes without a file) any external tensor.
bool load_external_data(onnx::ModelProto& model, const std::filesystem::path& dir, const std::string& origin,
                        ExternalLoad mode = ExternalLoad::All);

/// Where an external tensor's bytes lie (validated as load_external_data validates).
ExternalBytes external_bytes(const onnx::TensorProto& t, const std::filesystem::path& dir, const std::string& origin);

/// Reads one tensor's external data into its raw_data (nothing when it is inline).
void load_tensor_data(onnx::TensorProto& t, const std::filesystem::path& dir, const std::string& origin);

/// A FLOAT (or `type`: FLOAT16, BFLOAT16) initializer whose bytes stay at `where`, referred to relative to
/// `dir` (the folder the exported bytes are read back with: the model's external_data_dir).
onnx::TensorProto external_float_tensor(const std::string& name, const Shape& dims, const ExternalBytes& where,
                                        const std::filesystem::path& dir, int32_t type = onnx::TensorProto::FLOAT);

/// The bytes at `where`, into `into` (of where.length bytes) or returned. Throw OnnxError when they cannot be read.
void read_external(const ExternalBytes& where, std::span<char> into);
std::string read_external_bytes(const ExternalBytes& where);

/// Moves every initializer whose raw_data holds at least `threshold` bytes into `data_file`, one after the
/// other, and points it there (location = data_file's name: the file lies beside the model); an initializer
/// still in an external file (relative to `source_dir`) is copied over a chunk at a time. Returns the number of
/// tensors moved; writes no file when that is 0. Throws OnnxError when it cannot read or write, or when
/// `data_file` is the source's own data file.
size_t move_to_external_data(onnx::ModelProto& model, const std::filesystem::path& data_file, size_t threshold,
                             const std::filesystem::path& source_dir = {});

/// Tensors below this many bytes stay in the model file (onnx.save's default size_threshold).
inline constexpr size_t kExternalDataThreshold = 1024;

}  // namespace teq::onnx_io::detail
