// What eqsat-run writes, decided as a value once the search is done. decide_output() reads the search's report
// (never changes it) and the policy (--min-gain, the symbolic-size guard, a measured verdict) and returns an
// OutputChoice: which file -o gets (the optimized export, the import's canonical form, or the input as it is),
// the graph that file holds and its cost read back from the export, and why the original was kept. The
// writers then write that choice; nothing decides twice.
// Usage:
//   OutputContext context(config, model);
//   OutputChoice choice = decide_output(context, search_report, cost);
//   write_output(context, choice, "out.onnx");   // or write_input(context, path) when a check rejects it
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/engine/extract.h"  // GraphCost
#include "optimizer/onnx/check.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/optimize.h"

namespace teq {

struct EqsatConfig;

/// Whether `optimized` is at least the fraction `min_gain` below `original` (a cost or a measured time); a
/// rounding-level difference is no gain even at --min-gain 0.
bool gains_at_least(double optimized, double original, double min_gain);

/// What the decision and the writers need of the run: the imported model, the input file again when the model
/// has symbolic dimensions (for the size guard and the checks at other sizes), the export options.
/// The fewest output elements of a linear layer for which writing it as Reshape, Gemm, Reshape pays under
/// `cost`: the bias add it saves (a pass over the output) costs more than the kernels the form adds, about three
/// launches (two reshapes and the share of their targets' Shape and Concat), each priced as the smallest node.
int64_t batched_linear_min_elements(const CostModel& cost);

class OutputContext {
 public:
  /// `batched_linear_as_gemm`: the cost model's runtime runs a rank-3 linear layer with its bias as one Gemm only
  /// when written as Reshape, Gemm, Reshape (CostModelHandle::batched_linear_as_gemm); the export does so when
  /// the model has symbolic dimensions.
  /// `batched_linear_min_elements`: ExportOptions::batched_linear_min_elements (batched_linear_min_elements below).
  OutputContext(const EqsatConfig& config, const onnx_io::OnnxModel& model, bool batched_linear_as_gemm = false,
                int64_t batched_linear_min_elements = 0);
  const EqsatConfig& config() const { return config_; }
  const onnx_io::OnnxModel& model() const { return model_; }
  /// The model file read again (bytes empty when the model has no symbolic dimension: not needed).
  const onnx_io::OriginalFile& original_file() const { return original_file_; }
  bool symbolic() const { return symbolic_; }
  /// Reshapes written so that they follow the symbolic dimensions, as the original's do. Made on first use:
  /// it imports the original again, and an unchanged graph is not exported.
  const onnx_io::ExportOptions& export_options() const;

 private:
  const EqsatConfig& config_;
  const onnx_io::OnnxModel& model_;
  bool symbolic_ = false;
  bool batched_linear_as_gemm_ = false;
  int64_t batched_linear_min_elements_ = 0;
  onnx_io::OriginalFile original_file_;
  mutable std::optional<onnx_io::ExportOptions> export_options_;
};

enum class OutputFile {
  Export,     // the written graph exported (the optimized one, or a built-in model as built)
  Canonical,  // the import's folded form of an unchanged graph (a batch norm folded into its convolution, ...)
  Input,      // the input file as it is, byte for byte: nothing to improve
};

struct OutputChoice {
  OutputFile file = OutputFile::Input;
  Expr graph;                 // the graph the written file holds: the optimized one, or the original's when kept
  double cost = 0;            // its cost: the export's read back, the original's when kept, else the search's
  double claimed_cost = 0;    // extraction's figure for the optimized graph
  double exported_cost = 0;   // the optimized graph's export read back (claimed_cost when it was not exported)
  bool kept_original = false; // the search's graph is not written; `notes` say why ("kept the original graph: ...")
  std::vector<std::string> notes;
  // Both sums (fused units priced as units, every node alone) of the original and of the export read back,
  // and the shape-arithmetic nodes each file runs at ORT_DISABLE_ALL: the report's per-level predictions.
  GraphCost original_detail, exported_detail;
  int exported_shape_nodes = 0;
  Expr exported_graph;        // the export read back (the original when it was not exported)
  std::string exported;       // the file --check compares and -o gets (empty: exported when written)
  /// Whether -o gets the input file as it is anyway (nothing to improve).
  bool writes_input_as_is() const { return file == OutputFile::Input; }
};

/// The element types of `model`'s leaves (graph inputs and weights by name) and opaque outputs, for the engine
/// (OptimizeConfig::leaf_types, graph_cost): FLOAT, FLOAT16 and BFLOAT16 terms are priced and kept apart by type.
LeafElemType leaf_elem_types(const onnx_io::OnnxModel& model);

/// A measured verdict on an optimized graph (end-to-end times on this GPU): a note keeps the original; empty: fine.
using OutputVerdict = std::function<std::string(const Expr& optimized)>;

/// The choice for the search's result: its export read back and re-priced (the e-graph may price a form the
/// exporter writes differently); the original when that export is not --min-gain cheaper, is valid at one size
/// only, or `verdict` says so; the import's canonical form of an unchanged graph when it is valid at every size;
/// else the input file itself. Throws EqsatError (exit 3) when the optimized export does not read back.
OutputChoice decide_output(const OutputContext& context, const OptimizeReport& search, const CostModel& cost,
                           const OutputVerdict& verdict = {});

/// Writes the choice to `path`; returns the external data file written beside it (empty: none).
std::filesystem::path write_output(const OutputContext& context, const OutputChoice& choice,
                                   const std::filesystem::path& path);

/// Writes the input model to `path`, unchanged: byte for byte when its tensors are all inside the file. A model
/// with external data is written again with that data in PATH.data beside it (every tensor the same, the file
/// itself re-serialized), so that the copy finds its data wherever it is written; the input's data files are
/// never moved or rewritten. A built-in model is exported as built.
std::filesystem::path write_input(const OutputContext& context, const std::filesystem::path& path);

/// Exports `graph` of `model` to `path` (EqsatError for what cannot be written); returns the external data file.
std::filesystem::path write_onnx(const onnx_io::OnnxModel& model, const Expr& graph, const std::filesystem::path& path,
                                 const onnx_io::ExportOptions& options = {});

}  // namespace teq
