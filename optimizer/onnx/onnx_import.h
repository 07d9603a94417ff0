// ONNX import: reads a .onnx file with libonnx/protobuf, runs ONNX's own shape inference, and maps each
// node onto the operator vocabulary (docs/eqsat-run.md lists the mapping). Nodes that do not map become
// opaque operators that keep their NodeProto for export. Does not optimize or write anything.
// Usage:
//   OnnxModel m = import_onnx("corpus/models/mlp.onnx");
//   // m.graph: (input ...)/(weight ...) leaves, roots = graph outputs; m.weights: initializer values
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "optimizer/onnx/model.h"

namespace teq::onnx_io {

/// Opset range of the default domain that import accepts. The ONNX library's schemas end at opset 17;
/// models of opsets 18..21 are read through them (detail/opset_adapt.h) and exported at their own opset.
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;

/// One dimension of one graph input, by position: how a dimension without a name is given a value.
struct InputAxis {
  std::string input;
  int64_t axis = 0;  // negative: counted from the last dimension
  auto operator<=>(const InputAxis&) const = default;
};

struct ImportOptions {
  /// Values for symbolic input dimensions (dim_param), e.g. {"batch", 1}. A symbolic dimension without
  /// a value here is an error unless default_dim > 0.
  std::map<std::string, int64_t> dims = {};
  /// Values for dimensions by input and axis (eqsat-run --dim INPUT:AXIS=VALUE), named or not; they take
  /// precedence over `dims`. An unknown input, an axis out of range, or a fixed dimension given another
  /// value is an error.
  std::map<InputAxis, int64_t> axis_dims = {};
  int64_t default_dim = 0;
  /// Folder that external tensor data locations are relative to. import_onnx: the model file's folder when
  /// empty; import_onnx_bytes: external data is an error when empty.
  std::filesystem::path external_data_dir = {};
};

/// Imports a model file. Throws OnnxError (message starts with the file name) for a missing or
/// unreadable file, a file that is not an ONNX model (or is truncated), an opset outside
/// [kMinOpset, kMaxOpset], a node of opset 18..21 with no opset-17 form of the same meaning, unbound
/// symbolic dimensions, control-flow operators, tensors whose shapes ONNX shape inference cannot
/// determine, and external tensor data that is missing, too short or outside the model's folder.
OnnxModel import_onnx(const std::filesystem::path& path, const ImportOptions& options = {});
/// As import_onnx, from the serialized bytes of a ModelProto; `origin` names it in messages.
OnnxModel import_onnx_bytes(std::string_view bytes, const std::string& origin, const ImportOptions& options = {});

}  // namespace teq::onnx_io
