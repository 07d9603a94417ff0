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

struct ImportOptions {
  /// Values for symbolic input dimensions (dim_param), e.g. {"batch", 1}. A symbolic dimension without
  /// a value here is an error unless default_dim > 0.
  std::map<std::string, int64_t> dims = {};
  /// Values for dimensions by input and axis (eqsat-run --dim INPUT:AXIS=VALUE), named or not; they take
  /// precedence over `dims`. An unknown input, an axis out of range, or a fixed dimension given another
  /// value is an error.
  std::map<InputAxis, int64_t> axis_dims = {};
  int64_t default_dim = 0;
  /// A symbolic dimension that neither `axis_dims` nor `dims` gives a value (and default_dim is 0) gets
  /// symbolic_dim_value's: eqsat-run imports so when --dim does not say. Off: such a dimension is an error.
  bool default_dims = false;
  /// Folder that external tensor data locations are relative to. import_onnx: the model file's folder when
  /// empty; import_onnx_bytes: external data is an error when empty.
  std::filesystem::path external_data_dir = {};
};

/// What a symbolic dimension without a given value is bound to: options.default_dim when set; with
/// options.default_dims, kDefaultBatch for a dimension named like a batch ("batch" in its name, N, B, bs; an
/// unnamed axis 0) and kDefaultExtent for any other (a sequence, an image side); else 0 (an error).
inline constexpr int64_t kDefaultBatch = 1;
inline constexpr int64_t kDefaultExtent = 128;
int64_t symbolic_dim_value(const ImportOptions& options, const std::string& name, int64_t axis);
/// The value each symbolic dimension is bound to a second time at import to see which folded shape values
/// follow the dimensions: v + 1 up to 2, else v / 2 + 1 (smaller, since models bound lengths from above, e.g.
/// by a position table; and unlike the check's second value v / 2, and the products of the first values).
int64_t probe_dim_value(int64_t value);

/// Imports a model file. Throws OnnxError (message starts with the file name) for a missing or
/// unreadable file, a file that is not an ONNX model (or is truncated), an opset outside
/// [kMinOpset, kMaxOpset], a node of opset 18..21 with no opset-17 form of the same meaning, unbound
/// symbolic dimensions, control-flow operators, tensors whose shapes ONNX shape inference cannot
/// determine, and external tensor data that is missing, too short or outside the model's folder.
OnnxModel import_onnx(const std::filesystem::path& path, const ImportOptions& options = {});
/// As import_onnx, from the serialized bytes of a ModelProto; `origin` names it in messages.
OnnxModel import_onnx_bytes(std::string_view bytes, const std::string& origin, const ImportOptions& options = {});
/// The number of nodes in the main graph of a serialized ModelProto (0 when it does not parse).
int graph_node_count(std::string_view model_bytes);

}  // namespace teq::onnx_io
