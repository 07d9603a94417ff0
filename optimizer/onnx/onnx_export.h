// ONNX export: writes an optimized graph (an Expr with the same leaves and roots as the imported model's)
// as a valid ONNX model with the original graph inputs, outputs, opset imports and metadata. Vocabulary
// operators become standard ONNX operators of the model's opset; opaque operators are written back as they
// were imported; work that depends only on weights is precomputed into initializers.
// Usage:
//   OnnxModel m = import_onnx("in.onnx");
//   export_onnx(m, optimize_graph(m.graph, corpus, cost, {}).optimized, "out.onnx");
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "optimizer/onnx/model.h"

namespace teq::onnx_io {

struct ExportOptions {
  /// Precompute operators whose inputs are all weights (concat of weights, enlarge, ...) into new
  /// initializers. Constant generators (ones, eye, iconv, pool_kernel) are always precomputed.
  bool fold_constants = true;
  /// export_onnx only: write initializers of at least detail::kExternalDataThreshold (1 KiB) bytes to
  /// PATH.data beside the model file (ONNX external data). nullopt: when the imported model did.
  std::optional<bool> external_data = std::nullopt;
  /// Targets to write for reshapes, by (input shape, output shape) as in the graph: with 0 (copy), -1
  /// (infer) or another axis's extent where a symbolic dimension flows, so the export keeps working at every
  /// size (symbolic_reshape_targets in check.h). A reshape not listed keeps its leading copied dimensions as 0.
  ReshapeTargets reshape_targets = {};
  /// Write a matmul of a rank-3 (or higher) activation by a 2-d operand, plus a bias that is a broadcast
  /// vector, as Reshape to [-1, K], Gemm with the bias as C, and Reshape back to the activation's leading
  /// extents (Shape with start and end, and a Concat: valid at every size), from opset 15. For a runtime
  /// that fuses such a MatMul and Add only at a concrete shape (onnxruntime), in a model with symbolic
  /// dimensions (RuntimePolicy::batched_linear_as_gemm).
  bool batched_linear_as_gemm = false;
  /// ... for a layer whose output has at least this many elements: below, the bias add it saves costs less than
  /// the kernels the form adds (batched_linear_extra_kernels; output_choice.h, batched_linear_min_elements).
  int64_t batched_linear_min_elements = 0;
};

/// Whether `graph` has a matmul and bias add that the export writes as Reshape, Gemm, Reshape under
/// options.batched_linear_as_gemm (at the model's opset): then exporting even an unchanged graph changes the file.
/// `precomputable`: per node, whether it depends on weights only (precomputable_nodes in engine/extract.h), so
/// that the export folds it into a bias.
bool has_batched_linear(const Expr& graph, int64_t opset, const std::vector<bool>& precomputable,
                        int64_t min_elements = 0);
/// The kernels a model file (serialized bytes) runs for its linear layers written as Reshape, Gemm, Reshape
/// (options.batched_linear_as_gemm) beyond the MatMul and Add each replaces: per layer two Reshapes less the Add,
/// and each Shape and Concat computing their targets. The import folds that shape arithmetic and the reshapes
/// are views, so a graph's cost does not see them; onnxruntime runs each as a kernel.
int batched_linear_extra_kernels(std::string_view model_bytes);

/// The serialized onnx::ModelProto of `graph`. Throws OnnxError when `graph` does not fit `model` (a leaf
/// or opaque id it does not know, another number of roots) or when an operator has no ONNX form in the
/// model's opset; ShapeError when `graph` is ill-shaped.
std::string export_onnx_bytes(const OnnxModel& model, const Expr& graph, const ExportOptions& options = {});
/// As export_onnx_bytes, written to `path`; with external data (options.external_data) the large
/// initializers go to `path` + ".data" beside it. Returns that data file, or an empty path when none was written.
std::filesystem::path export_onnx(const OnnxModel& model, const Expr& graph, const std::filesystem::path& path,
                 const ExportOptions& options = {});
/// Writes the model file `bytes` (read from a file in `source_dir`) to `path` as it is, except that tensor data
/// it keeps in external files moves to `path` + ".data" (as export_onnx writes it). Returns that data file, or
/// an empty path. For a graph the optimizer left unchanged: the user gets their own file back, not a re-export.
std::filesystem::path copy_model(std::string_view bytes, const std::filesystem::path& source_dir,
                                 const std::filesystem::path& path);

}  // namespace teq::onnx_io
