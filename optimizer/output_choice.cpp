#include "optimizer/output_choice.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <memory>
#include <span>

#include "optimizer/detail/text.h"
#include "optimizer/engine/extract.h"
#include "optimizer/eqsat_app.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/ops/opaque.h"

namespace teq {

namespace fs = std::filesystem;
using detail::fmt;

bool gains_at_least(double optimized, double original, double min_gain) {
  return optimized < original * (1 - std::max(min_gain, 1e-6));
}

namespace {

/// What `cost` charges for an add of two vectors of `elements`; of 1 element, a kernel launch.
double add_cost(const CostModel& cost, int64_t elements) {
  const Shape shape{elements};
  const std::array<Shape, 2> operands{shape, shape};
  return cost.node_cost(NodeContext{OpKind::EwAdd, {}, operands, shape});
}

}  // namespace

int64_t batched_linear_min_elements(const CostModel& cost) {
  const double launch = add_cost(cost, 1);
  constexpr double kAddedKernels = 3;
  int64_t elements = 1;
  while (elements < (int64_t{1} << 40) && add_cost(cost, elements) < (1 + kAddedKernels) * launch) elements *= 2;
  return elements;
}

OutputContext::OutputContext(const EqsatConfig& config, const onnx_io::OnnxModel& model, bool batched_linear_as_gemm,
                             int64_t batched_linear_min_elements)
    : config_(config), model_(model), batched_linear_min_elements_(batched_linear_min_elements) {
  symbolic_ = config.builtin.empty() && !onnx_io::symbolic_dims(model, config.import).empty();
  // At a concrete shape onnxruntime makes the Gemm itself; the cost models price a rank-3 matmul's add apart
  // either way, so the form is written only where it changes what runs.
  batched_linear_as_gemm_ = batched_linear_as_gemm && symbolic_;
  // The model file again, for the checks at a second value of each symbolic dimension (none: not needed).
  original_file_ = symbolic_ ? onnx_io::read_original_file(config.model, config.import)
                             : onnx_io::OriginalFile{"", config.import};
  // An export refers to the weights it leaves unchanged in the input's data file: read back from there.
  if (original_file_.import.external_data_dir.empty()) original_file_.import.external_data_dir = model.external_data_dir;
}

const onnx_io::ExportOptions& OutputContext::export_options() const {
  if (!export_options_) {
    export_options_.emplace();
    if (symbolic_)
      export_options_->reshape_targets =
          onnx_io::symbolic_reshape_targets(model_, original_file_.bytes, original_file_.import);
    export_options_->batched_linear_as_gemm = batched_linear_as_gemm_;
    export_options_->batched_linear_min_elements = batched_linear_min_elements_;
  }
  return *export_options_;
}

LeafElemType leaf_elem_types(const onnx_io::OnnxModel& model) {
  auto named = std::make_shared<std::map<std::string, int32_t>>();
  for (const onnx_io::TensorInfo& in : model.inputs) (*named)[in.name] = in.elem_type;
  for (const auto& [name, w] : model.weights) (*named)[name] = w.elem_type();
  auto opaque = std::make_shared<std::vector<std::vector<int32_t>>>();
  for (const onnx_io::OpaqueNode& op : model.opaque) opaque->push_back(op.output_types);
  return [named, opaque](OpKind op, std::span<const int64_t> attrs, const std::string& name) -> int32_t {
    if (op == OpKind::Opaque) {
      const ops::OpaqueAttrs a = ops::opaque_attrs(attrs);
      if (a.id < 0 || static_cast<size_t>(a.id) >= opaque->size()) return 0;
      const std::vector<int32_t>& types = (*opaque)[static_cast<size_t>(a.id)];
      return a.output >= 0 && static_cast<size_t>(a.output) < types.size() ? types[static_cast<size_t>(a.output)] : 0;
    }
    auto it = named->find(name);
    return it == named->end() ? 0 : it->second;
  };
}

namespace {

/// The original is written instead of the search's graph; `exported_*` keep the figures of the export that
/// lost, for the report.
void keep_original(OutputChoice& choice, const Expr& original, double original_cost, std::string note) {
  choice.notes.push_back(std::move(note));
  choice.graph = original;
  choice.cost = original_cost;
  choice.kept_original = true;
  choice.exported.clear();
}

/// Exports the optimized graph, reads it back and prices it; keeps the original when that export is not
/// --min-gain cheaper or is valid only at the size it was optimized for.
void price_export(const OutputContext& context, const OptimizeReport& search, const CostModel& cost,
                  OutputChoice& choice) {
  const onnx_io::OnnxModel& model = context.model();
  const EqsatConfig& config = context.config();
  try {
    choice.exported = onnx_io::export_onnx_bytes(model, search.optimized, context.export_options());
    // Read with the input's data folder: the export refers to the weights it did not change where they lie.
    const onnx_io::OnnxModel back =
        onnx_io::import_onnx_bytes(choice.exported, "the optimized model", context.original_file().import);
    choice.exported_detail = graph_cost_detail(back.graph, cost, leaf_elem_types(back));
    choice.exported_cost = choice.exported_detail.fused;
    if (context.export_options().batched_linear_as_gemm)
      if (const int kernels = onnx_io::batched_linear_extra_kernels(choice.exported); kernels > 0) {
        // Each kernel the Gemm form adds (its reshapes, the Shape and Concat of their targets) costs what the
        // smallest node costs: a launch. A bias add is worth that form only where its pass costs more.
        const double launch = add_cost(cost, 1);
        choice.exported_cost += kernels * launch;
        choice.exported_detail.fused += kernels * launch;
      }
    choice.exported_shape_nodes = back.shape_nodes_folded;
    choice.exported_graph = back.graph;
  } catch (const std::exception& e) {
    throw EqsatError(std::string("internal error: the optimized model does not read back: ") + e.what(), 3);
  }
  const double original = search.original_cost, exported = choice.exported_cost;
  if (!gains_at_least(exported, original, config.min_gain)) {
    keep_original(choice, model.graph, original,
                  exported > original
                      ? "kept the original graph: the optimized one costs " + fmt("%.6g", exported) +
                            " read back from its ONNX export, more than the original's " + fmt("%.6g", original)
                  : gains_at_least(exported, original, 0)
                      ? "kept the original graph: the optimized one is only " + fmt("%.2f", 100 * (1 - exported / original)) +
                            "% cheaper read back from its ONNX export, less than --min-gain " +
                            fmt("%.3g", 100 * config.min_gain) + "%"
                      : std::string("kept the original graph: no cheaper graph was found"));
  } else if (std::string fixed = onnx_io::fixed_size_reason(model, context.original_file().bytes, choice.exported,
                                                             context.original_file().import);
             !fixed.empty()) {
    keep_original(choice, model.graph, original,
                  "kept the original graph: the optimized one is valid only at the size it was optimized for: " + fixed);
  } else {
    choice.cost = exported;
  }
}

void write_bytes(std::string_view bytes, const fs::path& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw EqsatError(path.string() + ": cannot open for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw EqsatError(path.string() + ": write failed");
}

}  // namespace

OutputChoice decide_output(const OutputContext& context, const OptimizeReport& search, const CostModel& cost,
                           const OutputVerdict& verdict) {
  const onnx_io::OnnxModel& model = context.model();
  OutputChoice choice;
  choice.graph = search.optimized;
  choice.cost = choice.claimed_cost = choice.exported_cost = search.optimized_cost;
  choice.original_detail = choice.exported_detail = graph_cost_detail(model.graph, cost, leaf_elem_types(model));
  choice.exported_graph = model.graph;
  choice.exported_shape_nodes = model.shape_nodes_folded;
  // Even an unchanged graph is exported differently from the input when it has linear layers the export writes
  // as Gemm (ExportOptions::batched_linear_as_gemm): that export is priced read back like any other, and
  // written when it is --min-gain cheaper.
  const bool changed = !(choice.graph == model.graph);
  const bool form_differs = !changed && context.export_options().batched_linear_as_gemm &&
                            onnx_io::has_batched_linear(model.graph, model.opset, precomputable_nodes(model.graph),
                                                        context.export_options().batched_linear_min_elements);
  if (changed || form_differs) price_export(context, search, cost, choice);
  if (form_differs) {
    if (choice.kept_original) choice.kept_original = false;  // the search found nothing to drop; the note says why
    else
      choice.notes.push_back("the graph is the input's, written with its linear layers of a symbolic shape as "
                             "Reshape, Gemm, Reshape: onnxruntime fuses a MatMul and its bias Add into one Gemm "
                             "only at a concrete shape");
  }
  bool form_written = form_differs && !choice.exported.empty();
  if (verdict && ((changed && !(choice.graph == model.graph)) || form_written))
    if (std::string note = verdict(choice.graph); !note.empty()) {
      keep_original(choice, model.graph, search.original_cost, std::move(note));
      form_written = false;
    }
  choice.file = OutputFile::Export;
  const bool unchanged = choice.graph == model.graph && !form_written;
  // The import folded nodes away (a batch norm into its convolution, duplicates, shape arithmetic of fixed
  // sizes): the graph as imported, exported, is written when it is the smaller file (an operator the exporter
  // writes as several nodes can outweigh what was folded) and valid at every size the input is.
  if (unchanged && (!model.folded.empty() || model.shape_nodes_folded > 0)) {
    std::string canonical = onnx_io::export_onnx_bytes(model, model.graph, context.export_options());
    const onnx_io::OriginalFile& original = context.original_file();
    const int canonical_nodes = onnx_io::graph_node_count(canonical);
    if (canonical_nodes >= model.file_nodes) {
      choice.notes.push_back("wrote the input as it is: the graph as imported is no smaller (" +
                             std::to_string(canonical_nodes) + " nodes written against the input's " +
                             std::to_string(model.file_nodes) + ")");
    } else if (std::string fixed = onnx_io::fixed_size_reason(model, original.bytes, canonical, original.import);
               fixed.empty()) {
      choice.exported = std::move(canonical);
      choice.file = OutputFile::Canonical;
    } else {
      choice.notes.push_back("wrote the input as it is, without the import's folding: " + fixed);
    }
  }
  // Nothing to improve: the output is the input file as it was, byte for byte, rather than a re-export of it
  // (which would fix shapes the input computes from a symbolic dimension); there is nothing for --check to
  // compare then.
  if (unchanged && choice.file != OutputFile::Canonical && context.config().builtin.empty()) {
    choice.file = OutputFile::Input;
    if (context.symbolic()) choice.exported = context.original_file().bytes;
  }
  return choice;
}

fs::path write_onnx(const onnx_io::OnnxModel& model, const Expr& graph, const fs::path& path,
                    const onnx_io::ExportOptions& options) {
  try {
    return onnx_io::export_onnx(model, graph, path, options);
  } catch (const onnx_io::OnnxError& e) {
    throw EqsatError(e.what());
  }
}

fs::path write_output(const OutputContext& context, const OutputChoice& choice, const fs::path& path) {
  if (choice.file == OutputFile::Input) return write_input(context, path);
  try {
    // The export already made, read back and checked; re-exported only to write external data.
    if (!choice.exported.empty() && !context.model().external_data) return onnx_io::copy_model(choice.exported, ".", path);
  } catch (const onnx_io::OnnxError& e) {
    throw EqsatError(e.what());
  }
  return write_onnx(context.model(), choice.graph, path, context.export_options());
}

fs::path write_input(const OutputContext& context, const fs::path& path) {
  const EqsatConfig& config = context.config();
  if (!config.builtin.empty()) return write_onnx(context.model(), context.model().graph, path);
  try {
    onnx_io::OriginalFile reread;  // the file again, unless the symbolic-size checks read it already
    const onnx_io::OriginalFile& input =
        context.symbolic() ? context.original_file() : (reread = onnx_io::read_original_file(config.model, config.import));
    if (context.model().external_data) return onnx_io::copy_model(input.bytes, input.import.external_data_dir, path);
    write_bytes(input.bytes, path);
  } catch (const onnx_io::OnnxError& e) {
    throw EqsatError(e.what());
  }
  return {};
}

}  // namespace teq
