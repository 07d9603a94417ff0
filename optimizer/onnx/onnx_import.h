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

/// Opset range of the default domain that import accepts (the ONNX library's schemas end at kMaxOpset).
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 17;

struct ImportOptions {
  /// Values for symbolic input dimensions (dim_param), e.g. {"batch", 1}. A symbolic dimension without
  /// a value here is an error unless default_dim > 0.
  std::map<std::string, int64_t> dims;
  int64_t default_dim = 0;
};

/// Imports a model file. Throws OnnxError (message starts with the file name) for a missing or
/// unreadable file, a file that is not an ONNX model (or is truncated), an opset outside
/// [kMinOpset, kMaxOpset], unbound symbolic dimensions, control-flow operators, and tensors whose
/// shapes ONNX shape inference cannot determine.
OnnxModel import_onnx(const std::filesystem::path& path, const ImportOptions& options = {});
/// As import_onnx, from the serialized bytes of a ModelProto; `origin` names it in messages.
OnnxModel import_onnx_bytes(std::string_view bytes, const std::string& origin, const ImportOptions& options = {});

}  // namespace teq::onnx_io
