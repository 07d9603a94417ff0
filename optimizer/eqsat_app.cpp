#include "optimizer/eqsat_app.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iomanip>
#include <optional>
#include <set>

#include "optimizer/cost/cost_models.h"
#include "optimizer/engine/extract.h"  // graph_cost
#include "optimizer/cost/measured_cost.h"
#include "optimizer/models/builtin.h"
#include "optimizer/onnx/from_expr.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/import/load_rules.h"
#include "rules/sexpr.h"

namespace teq {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

const char* method_name(ExtractMethod m) {
  switch (m) {
    case ExtractMethod::Greedy: return "greedy";
    case ExtractMethod::DagGreedy: return "dag-greedy";
    case ExtractMethod::Ilp: return "ilp";
  }
  return "?";
}

/// The rule files, in any format the programs read (load_rule_set): a file that is missing or cannot be
/// parsed is bad input, named in the message; rules an importer could not convert are noted on the log.
RuleCorpus load_rule_files(const std::vector<fs::path>& paths, std::ostream* log) {
  std::error_code ec;
  for (const fs::path& path : paths)
    if (!fs::exists(path, ec)) throw EqsatError("rule file " + path.string() + ": no such file");
  RuleSet set;
  try {
    set = load_rule_set(paths);
  } catch (const std::exception& e) {
    throw EqsatError(e.what());  // names the file, and the rule and field where there is one
  }
  for (const RuleFile& file : set.files)
    if (log && !file.rules.skipped.empty())
      *log << "eqsat-run: note: " << file.path.string() << ": " << file.rules.skipped.size() << " of "
           << file.rules.total << " rules cannot be expressed in the vocabulary and are left out (first: "
           << file.rules.skipped[0].rule_id << ": " << file.rules.skipped[0].reason << ")\n";
  return std::move(set.corpus);
}

nlohmann::json check_json(const onnx_io::CheckResult& c, const onnx_io::CheckOptions& o) {
  nlohmann::json j = {{"evaluated", c.evaluated}, {"passed", c.passed}, {"max_abs_diff", c.max_abs_diff},
                      {"max_rel_diff", c.max_rel_diff}, {"elements", c.elements}, {"rtol", o.rtol},
                      {"atol", o.atol}, {"seed", o.seed}, {"seconds", c.seconds}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.note.empty()) j["note"] = c.note;
  for (const onnx_io::SizeCheck& s : c.sizes)
    j["sizes"].push_back({{"dim", s.dim}, {"value", s.value}, {"evaluated", s.evaluated}, {"passed", s.passed},
                          {"max_abs_diff", s.max_abs_diff}, {"elements", s.elements}, {"reason", s.reason}});
  return j;
}

onnx_io::OnnxModel load_model(const EqsatConfig& config) {
  if (config.builtin.empty() == config.model.empty())
    throw EqsatError("give either a model file or --model NAME (one of " + [] {
      std::string names;
      for (const std::string& n : builtin_model_names()) names += (names.empty() ? "" : ", ") + n;
      return names;
    }() + ")");
  if (!config.builtin.empty()) {
    try {
      return onnx_io::model_from_expr(build_builtin_model(config.builtin), config.builtin, config.check_options.seed);
    } catch (const std::invalid_argument& e) {
      throw EqsatError(std::string("--model: ") + e.what());
    }
  }
  try {
    return onnx_io::import_onnx(config.model, config.import);
  } catch (const onnx_io::OnnxError& e) {
    throw EqsatError(e.what());
  }
}

/// Writes the model; returns the external data file written beside it (empty: none).
fs::path write_onnx(const onnx_io::OnnxModel& model, const Expr& graph, const fs::path& path,
                    const onnx_io::ExportOptions& options = {}) {
  try {
    return onnx_io::export_onnx(model, graph, path, options);
  } catch (const onnx_io::OnnxError& e) {
    throw EqsatError(e.what());
  }
}

void write_bytes(std::string_view bytes, const fs::path& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw EqsatError(path.string() + ": cannot open for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw EqsatError(path.string() + ": write failed");
}

std::string data_note(const fs::path& data) {
  return data.empty() ? "" : " (tensor data in " + data.string() + ")";
}

/// One node of the DB's canonical form as a model of its own: operands are graph inputs x0, x1, ..., except
/// a conv2d kernel and a rank-2 matmul right operand, which are weights (initializers) as they almost always
/// are in real models, so the runtime prepacks them as it would there.
Expr single_node_graph(const CostKey& key) {
  Expr g;
  std::vector<ExprId> kids;
  const std::optional<size_t> weight_at = weight_operand(key.op, key.inputs);
  for (size_t k = 0; k < key.inputs.size(); ++k) {
    const bool weight = weight_at == k;
    kids.push_back(g.add(ExprNode{weight ? OpKind::Weight : OpKind::Input, key.inputs[k], {}, "x" + std::to_string(k)}));
  }
  g.add_root(g.add(key.op, key.attrs, kids));
  return g;
}

void write_cost_misses(const MeasuredCostModel& cost, const fs::path& dir, std::ostream* log) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw EqsatError("--cost-misses: cannot create " + dir.string() + ": " + ec.message());
  nlohmann::json nodes = nlohmann::json::array();
  size_t skipped = 0;
  for (const CostKey& key : cost.missed()) {
    const OpWorkKind work = op_work_kind(key.op);
    if (work == OpWorkKind::Leaf || work == OpWorkKind::Constant || work == OpWorkKind::Opaque) {
      ++skipped;  // precomputed at load time, or not ours to run alone
      continue;
    }
    const std::string file = std::to_string(nodes.size()) + ".onnx";
    try {
      const Expr g = single_node_graph(key);
      write_onnx(onnx_io::model_from_expr(g, "node"), g, dir / file);
    } catch (const std::exception& e) {
      throw EqsatError("--cost-misses: cannot write a model for " + key.text + ": " + e.what(), 3);
    }
    nodes.push_back({{"file", file}, {"key", key.text}, {"streamed", key.streamed}});
  }
  std::ofstream index(dir / "index.json");
  if (!index) throw EqsatError("--cost-misses: cannot write " + (dir / "index.json").string());
  // Fused units as onnxruntime runs them: bench/ort_cost_db.py builds and times the fused kernel itself.
  nlohmann::json fused = nlohmann::json::array();
  for (const FusedUnit& unit : cost.missed_fused())
    fused.push_back({{"key", unit.key}, {"kind", ort_fusion_name(unit.kind)}, {"shapes", unit.shapes},
                     {"streamed", unit.streamed}});
  index << nlohmann::json{{"nodes", nodes}, {"fused", fused}}.dump(2) << "\n";
  if (log)
    *log << "  cost DB misses: " << nodes.size() << " one-node models in " << dir.string() << " (" << skipped
         << " constant or opaque nodes left out), " << fused.size() << " fused units\n";
}

}  // namespace

std::string bind_symbolic_dim(const std::string& d, onnx_io::ImportOptions& import) {
  size_t eq = d.find('=');
  int64_t value = 0;
  try {
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument(d);
    size_t used = 0;
    const std::string text = d.substr(eq + 1);
    value = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(d);
  } catch (const std::out_of_range&) {
    return "--dim " + d + ": the value does not fit in 64 bits";
  } catch (const std::exception&) {
    return "--dim expects NAME=VALUE or INPUT:AXIS=VALUE with an integer VALUE, got '" + d + "'";
  }
  if (value < 1) return "--dim " + d + ": a dimension must be at least 1";
  // INPUT:AXIS when the name ends in ":INTEGER" (the last colon: input names such as "x:0" keep theirs).
  const std::string name = d.substr(0, eq);
  const size_t colon = name.rfind(':');
  std::optional<int64_t> axis;
  if (colon != std::string::npos && colon > 0 && colon + 1 < name.size()) {
    const std::string a = name.substr(colon + 1);
    size_t used = 0;
    try {
      if (a.find_first_not_of("-0123456789") == std::string::npos) axis = std::stoll(a, &used);
    } catch (const std::exception&) {
      axis.reset();
    }
    if (axis && used != a.size()) axis.reset();
  }
  if (axis)
    import.axis_dims[{name.substr(0, colon), *axis}] = value;
  else
    import.dims[name] = value;
  return "";
}


fs::path find_corpus_dir() {
  std::error_code ec;
  if (fs::is_directory("corpus", ec)) return fs::absolute("corpus");
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_directory(dir / "corpus", ec)) return dir / "corpus";  // a build tree below its source tree
    // An installed tree: PREFIX/bin/eqsat-run beside PREFIX/share/tensor_eqsat/corpus (cmake --install, and
    // the Python package, which keeps the same layout inside its folder).
    if (fs::is_directory(dir / kInstalledCorpusDir, ec)) return dir / kInstalledCorpusDir;
    if (dir == dir.root_path()) break;
  }
  return {};
}

namespace {

/// The rule files eqsat-run loads: --rules, or rulegen's corpus.
std::vector<fs::path> rule_files(const EqsatConfig& config, const fs::path& corpus_dir) {
  if (!config.rules.empty()) return config.rules;
  if (corpus_dir.empty())
    throw EqsatError("no rule file given and no corpus/ folder found (looked in the current directory and above "
                     "the executable); pass --rules FILE");
  return {corpus_dir / "rules.json"};
}

std::unique_ptr<CostModel> load_cost_model(const EqsatConfig& config, const fs::path& corpus_dir,
                                           const ModelFootprint& footprint) {
  std::unique_ptr<CostModel> cost;
  try {
    cost = make_cost_model(config.cost, corpus_dir, footprint);
  } catch (const std::exception& e) {
    throw EqsatError(std::string("--cost: ") + e.what());
  }
  if (!config.cost_misses_dir.empty() && !dynamic_cast<const MeasuredCostModel*>(cost.get()))
    throw EqsatError("--cost-misses needs a measured cost model (--cost db:FILE.json), not " + cost->name());
  return cost;
}

/// Saturation (or the sequential baseline), with progress lines on the log.
OptimizeReport run_search(const EqsatConfig& config, const Expr& graph, const RuleCorpus& rules, const CostModel& cost) {
  std::ostream* log = config.log;
  if (config.search == SearchMethod::Sequential) {
    SequentialConfig sc = config.sequential;
    if (log)
      sc.on_progress = [log](const SequentialProgress& p) {
        *log << "  sequential: " << p.expanded << " graphs expanded, " << p.queued << " queued, best cost "
             << fmt("%.6g", p.best_cost) << ", " << fmt("%.3f", p.seconds) << " s\n";
      };
    return optimize_sequential(graph, rules, cost, sc);
  }
  OptimizeConfig oc = config.optimize;
  if (log)
    oc.saturation.on_iteration = [log](const IterationStats& s) {
      *log << "  iter " << s.iteration << ": " << s.enodes << " e-nodes, " << s.eclasses << " e-classes, " << s.matches
           << " matches, " << fmt("%.3f", s.seconds) << " s\n";
    };
  return optimize_graph(graph, rules, cost, oc);
}

/// Whether `optimized` is at least the fraction `min_gain` below `original` (a cost or a measured time); a
/// rounding-level difference is no gain even at --min-gain 0.
bool gains_at_least(double optimized, double original, double min_gain) {
  return optimized < original * (1 - std::max(min_gain, 1e-6));
}

/// What the run writes, decided after the search: the optimized graph's export read back and re-priced (the
/// e-graph may have priced a form the exporter writes differently), or the original when that export is not
/// cheaper or is valid at one size only (never slower under the chosen cost model, never fixed to one size),
/// or the import's canonical form, or the input file itself. The export is made once and reused by the
/// symbolic-size guard, -o and --check.
class OutputPlan {
 public:
  OutputPlan(const EqsatConfig& config, const onnx_io::OnnxModel& model, OptimizeReport& report)
      : claimed_cost(report.optimized_cost), exported_cost(report.optimized_cost), config_(config), model_(model),
        r_(report) {
    symbolic_ = config.builtin.empty() && !onnx_io::symbolic_dims(model, config.import).empty();
    // The model file again, for the checks at a second value of each symbolic dimension (none: not needed).
    original_file = symbolic_ ? onnx_io::read_original_file(config.model, config.import)
                              : onnx_io::OriginalFile{"", config.import};
  }

  /// `verdict` (optional) judges an optimized graph that survived the export's pricing: a non-empty note
  /// keeps the original (the measured end-to-end times, with node times measured on this GPU).
  void decide(const CostModel& cost, const std::function<std::string(const Expr&)>& verdict = {}) {
    original_detail = exported_detail = graph_cost_detail(model_.graph, cost);
    exported_graph = model_.graph;
    exported_shape_nodes = model_.shape_nodes_folded;
    if (!(r_.optimized == model_.graph)) price_export(cost);
    if (verdict && !(r_.optimized == model_.graph))
      if (std::string note = verdict(r_.optimized); !note.empty()) keep_original(std::move(note));
    // The import folded nodes away (a batch norm into its convolution, ...): the graph as imported, exported,
    // is the smaller file, when it is valid at every size the input is.
    if (r_.optimized == model_.graph && !model_.folded.empty()) {
      std::string canonical = onnx_io::export_onnx_bytes(model_, model_.graph, export_options());
      std::string fixed = onnx_io::fixed_size_reason(model_, original_file.bytes, canonical, original_file.import);
      if (fixed.empty()) {
        exported = std::move(canonical);
        write_canonical_ = true;
      } else {
        r_.notes.push_back("wrote the input as it is, without the import's folding: " + fixed);
      }
    }
    // Nothing to improve: the output is the input file as it was, byte for byte, rather than a re-export of
    // it (which would fix shapes the input computes from a symbolic dimension); --check then checks that file.
    write_input_as_is_ = r_.optimized == model_.graph && !write_canonical_ && config_.builtin.empty();
    if (write_input_as_is_ && symbolic_) exported = original_file.bytes;
  }

  /// Writes -o; returns the external data file written beside it (empty: none).
  fs::path write(const fs::path& path) {
    if (write_input_as_is_) return write_input(path);
    try {
      // The export already made, read back and checked; re-exported only to write external data.
      if (!exported.empty() && !model_.external_data) return onnx_io::copy_model(exported, ".", path);
    } catch (const onnx_io::OnnxError& e) {
      throw EqsatError(e.what());
    }
    return write_onnx(model_, r_.optimized, path, export_options());
  }

  /// Writes the input model to -o, unchanged: byte for byte when its tensors are all inside the file. A
  /// model with external data is written again with that data in PATH.data beside it (every tensor the
  /// same, the file itself re-serialized), so that the copy finds its data wherever it is written; the
  /// input's data files are never moved or rewritten. A built-in model is exported as built.
  fs::path write_input(const fs::path& path) {
    if (!config_.builtin.empty()) return write_onnx(model_, model_.graph, path);
    try {
      onnx_io::OriginalFile reread;  // the file again, unless the symbolic-size checks read it already
      const onnx_io::OriginalFile& input =
          symbolic_ ? original_file : (reread = onnx_io::read_original_file(config_.model, config_.import));
      if (model_.external_data) return onnx_io::copy_model(input.bytes, input.import.external_data_dir, path);
      write_bytes(input.bytes, path);
    } catch (const onnx_io::OnnxError& e) {
      throw EqsatError(e.what());
    }
    return {};
  }

  /// Whether -o gets the input file as it is anyway (nothing to improve).
  bool writes_input_as_is() const { return write_input_as_is_; }

  const double claimed_cost;  // extraction's figure
  double exported_cost;       // the export's, read back
  bool kept_original = false;
  // Both sums (fused units priced as units, every node alone) of the original and of the export read back,
  // and the shape-arithmetic nodes each file runs at ORT_DISABLE_ALL: the report's per-level predictions.
  GraphCost original_detail, exported_detail;
  int exported_shape_nodes = 0;
  Expr exported_graph;  // the export read back (the original when it was not exported)
  std::string exported;  // the file --check compares (empty: the optimized graph is exported for it)
  onnx_io::OriginalFile original_file;

 private:
  void price_export(const CostModel& cost) {
    try {
      exported = onnx_io::export_onnx_bytes(model_, r_.optimized, export_options());
      const onnx_io::OnnxModel back = onnx_io::import_onnx_bytes(exported, "the optimized model", config_.import);
      exported_detail = graph_cost_detail(back.graph, cost);
      exported_cost = exported_detail.fused;
      exported_shape_nodes = back.shape_nodes_folded;
      exported_graph = back.graph;
    } catch (const std::exception& e) {
      throw EqsatError(std::string("internal error: the optimized model does not read back: ") + e.what(), 3);
    }
    if (!gains_at_least(exported_cost, r_.original_cost, config_.min_gain)) {
      keep_original(exported_cost > r_.original_cost
                        ? "kept the original graph: the optimized one costs " + fmt("%.6g", exported_cost) +
                              " read back from its ONNX export, more than the original's " + fmt("%.6g", r_.original_cost)
                    : gains_at_least(exported_cost, r_.original_cost, 0)
                        ? "kept the original graph: the optimized one is only " +
                              fmt("%.2f", 100 * (1 - exported_cost / r_.original_cost)) +
                              "% cheaper read back from its ONNX export, less than --min-gain " +
                              fmt("%.3g", 100 * config_.min_gain) + "%"
                        : std::string("kept the original graph: no cheaper graph was found"));
    } else if (std::string fixed = onnx_io::fixed_size_reason(model_, original_file.bytes, exported, original_file.import);
               !fixed.empty()) {
      keep_original("kept the original graph: the optimized one is valid only at the size it was optimized for: " +
                    fixed);
    } else {
      r_.optimized_cost = exported_cost;
    }
  }

  void keep_original(std::string note) {
    r_.notes.push_back(std::move(note));
    r_.optimized = model_.graph;
    r_.optimized_cost = r_.original_cost;
    r_.rules_used.clear();
    kept_original = true;
    exported.clear();
  }

  /// Reshapes written so that they follow the symbolic dimensions, as the original's do. Made on the first
  /// export: it imports the original again, and an unchanged graph is not exported.
  const onnx_io::ExportOptions& export_options() {
    if (!export_options_) {
      export_options_.emplace();
      if (symbolic_)
        export_options_->reshape_targets =
            onnx_io::symbolic_reshape_targets(model_, original_file.bytes, original_file.import);
    }
    return *export_options_;
  }

  const EqsatConfig& config_;
  const onnx_io::OnnxModel& model_;
  OptimizeReport& r_;
  bool symbolic_ = false, write_canonical_ = false, write_input_as_is_ = false;
  std::optional<onnx_io::ExportOptions> export_options_;
};

struct RunFacts {  // what the report and the summary say beside the OptimizeReport
  std::string model_name, rules_text;
  std::string cost_choice;  // why this cost model, when "auto" chose it
  const CostModel& cost;
  const OutputPlan& plan;
  fs::path output_data;
  std::optional<LatencyComparison> latency;
  double total_seconds = 0;
};

nlohmann::json report_json(const EqsatConfig& config, const EqsatResult& result, const RunFacts& f) {
  const OptimizeReport& r = result.report;
  const double speedup = r.optimized_cost > 0 ? r.original_cost / r.optimized_cost : 1.0;
  nlohmann::json j = {{"model", f.model_name},
                      {"search", config.search == SearchMethod::Sequential ? "sequential" : "saturation"},
                      {"output", config.output.string()},
                      {"rules", f.rules_text},
                      {"original_cost", r.original_cost},
                      {"optimized_cost", r.optimized_cost},
                      {"speedup", speedup},
                      {"cost_model", f.cost.name()},
                      {"cost_model_choice", f.cost_choice},
                      {"weights_streamed", f.cost.streams_weights()},
                      {"saturation_cost", f.plan.claimed_cost},
                      {"exported_cost", f.plan.exported_cost},
                      {"kept_original", f.plan.kept_original},
                      {"rounds_stopped_by_clock", r.rounds_stopped_by_clock},
                      {"seconds", {{"saturate", r.saturate_seconds}, {"extract", r.extract_seconds}, {"total", f.total_seconds}}},
                      {"iterations", r.iterations},
                      {"rounds", r.rounds},
                      {"enodes", r.enodes},
                      {"eclasses", r.eclasses},
                      {"stop_reason", to_string(r.stop)},
                      {"rules_used", r.rules_used},
                      {"own_output_skipped", r.own_output_skipped},
                      {"extraction",
                       {{"method", r.extraction.method},
                        {"objective", r.extraction.objective},
                        {"bound", r.extraction.bound},
                        {"gap", r.extraction.gap},
                        {"status", r.extraction.status}}},
                      {"operators", {{"original", result.model.graph.num_ops()}, {"optimized", r.optimized.num_ops()}}},
                      {"opaque_operators", result.model.opaque.size()},
                      {"import_folded", result.model.folded},
                      {"unfused_cost", {{"original", f.plan.original_detail.unfused}, {"exported", f.plan.exported_detail.unfused}}},
                      {"fused_units", {{"original", f.plan.original_detail.units}, {"exported", f.plan.exported_detail.units}}},
                      {"ort_fusions", {{"original", count_ort_fusions(result.model.graph)},
                                       {"exported", count_ort_fusions(f.plan.exported_graph)}}},
                      {"folded_shape_nodes",
                       {{"original", result.model.shape_nodes_folded}, {"exported", f.plan.exported_shape_nodes}}}};
  if (!f.output_data.empty()) j["output_data"] = f.output_data.string();
  j["check_mode"] = config.check == CheckMode::Off ? "off" : config.check == CheckMode::Required ? "required" : "default";
  j["rejected"] = !result.rejected.empty();
  if (!result.rejected.empty()) j["rejected_reason"] = result.rejected;
  // Which model the output path got: the input unchanged (rejected, or nothing to improve) or the export.
  j["written"] = config.output.empty()                                          ? "none"
                 : !result.rejected.empty() || f.plan.writes_input_as_is() ? "input"
                                                                             : "export";
  if (result.check) j["check"] = check_json(*result.check, config.check_options);
  if (f.latency) j["latency"] = f.latency->to_json();
  if (const auto* measured = dynamic_cast<const MeasuredCostModel*>(&f.cost)) j["cost_stats"] = measured->stats().to_json();
  return j;
}

/// What the check's outcome means for the file written and the exit status.
struct Verdict {
  int exit_code = 0;
  std::string rejected;  // why the input is written instead of the optimized model; empty: not rejected
};

/// A check that found a difference rejects the optimization (exit kExitRejected); one that could not run
/// keeps the input too, since nothing vouches for the optimized model, and exits kExitCheckNotRun only when
/// --check asked for it. With nothing to improve (`input_as_is`) a check that cannot run changes nothing.
Verdict judge(const EqsatConfig& config, const std::optional<onnx_io::CheckResult>& check, bool input_as_is) {
  if (!check || (check->evaluated && check->passed)) return {};
  if (!check->evaluated) {
    const int code = config.check == CheckMode::Required ? kExitCheckNotRun : 0;
    if (input_as_is) return {code, ""};
    return {code, "the check could not run, so nothing vouches for the optimized model (--no-check writes it "
                  "unchecked): " + check->reason};
  }
  std::string where = "max abs diff " + fmt("%.3g", check->max_abs_diff) + ", max rel diff " +
                      fmt("%.3g", check->max_rel_diff) + " at the imported size";
  for (const onnx_io::SizeCheck& size : check->sizes)
    if (size.evaluated && !size.passed)
      where += "; max abs diff " + fmt("%.3g", size.max_abs_diff) + " at " + size.dim + "=" + std::to_string(size.value);
  return {kExitRejected, "the check found the optimized model computing other values (" + where + "): " + check->reason};
}

void print_check(std::ostream& log, const onnx_io::CheckResult& c, const onnx_io::CheckOptions& options) {
  if (!c.evaluated)
    log << "  check: could not run: " << c.reason << "\n";
  else
    log << "  check: " << c.elements << " output elements, max abs diff " << fmt("%.3g", c.max_abs_diff)
        << ", max rel diff " << fmt("%.3g", c.max_rel_diff) << ": "
        << (c.passed_imported_size ? "equal within tolerance" : "DIFFERENT beyond tolerance") << " (rtol "
        << fmt("%g", options.rtol) << ", atol " << fmt("%g", options.atol) << "), " << fmt("%.2f", c.seconds) << " s\n";
  if (!c.note.empty()) log << "  check: note: " << c.note << "\n";
  for (const onnx_io::SizeCheck& s : c.sizes)
    log << "  check at " << s.dim << "=" << s.value << ": "
        << (!s.evaluated ? "not checked: " + s.reason
            : s.passed   ? std::to_string(s.elements) + " output elements, equal within tolerance"
                         : "FAILED: " + s.reason)
        << "\n";
}

void print_summary(std::ostream& log, const EqsatConfig& config, const EqsatResult& result, const RunFacts& f) {
  const OptimizeReport& r = result.report;
  const double speedup = r.optimized_cost > 0 ? r.original_cost / r.optimized_cost : 1.0;
  log << "eqsat-run: cost " << fmt("%.6g", r.original_cost) << " -> " << fmt("%.6g", r.optimized_cost) << " ("
      << f.cost.name() << "), speedup " << fmt("%.3f", speedup) << "x; " << result.model.graph.num_ops() << " -> "
      << r.optimized.num_ops() << " operators\n"
      << "  e-graph: " << r.enodes << " e-nodes, " << r.eclasses << " e-classes (largest round) after "
      << r.iterations << " iterations in " << r.rounds << " round(s); stop reason: " << to_string(r.stop) << "\n"
      << "  extraction (" << (r.extraction.method.empty() ? method_name(config.optimize.extract) : r.extraction.method)
      << "): objective " << fmt("%.6g", r.extraction.objective) << ", bound " << fmt("%.6g", r.extraction.bound)
      << ", gap " << fmt("%.4f", r.extraction.gap) << "\n"
      << "  seconds: saturate " << fmt("%.3f", r.saturate_seconds) << ", extract " << fmt("%.3f", r.extract_seconds)
      << ", total " << fmt("%.3f", f.total_seconds) << "\n";
  if (std::abs(f.plan.claimed_cost - f.plan.exported_cost) > 1e-9 * std::abs(f.plan.claimed_cost))
    log << "  read back from the ONNX export the optimized graph costs " << fmt("%.6g", f.plan.exported_cost)
        << " (extraction's figure: " << fmt("%.6g", f.plan.claimed_cost) << ")\n";
  if (!r.rounds_stopped_by_clock.empty()) {
    log << "  note: the saturation's wall-clock guard (--time-limit " << fmt("%g", config.optimize.saturation.time_limit_s)
        << " s, shared by all rounds) stopped round(s)";
    for (size_t round : r.rounds_stopped_by_clock) log << " " << round;
    log << ": this result may differ on a faster or slower machine; lower --node-limit or --iter-limit so that a "
           "count decides\n";
  }
  for (const std::string& note : r.notes)
    if (note.starts_with("kept the original")) log << "  " << note << "\n";
  if (!r.own_output_skipped.empty()) {
    log << "  rules that match their own output, applied one generation deep (matches skipped):";
    for (const auto& [id, n] : r.own_output_skipped) log << " " << id << " (" << n << ")";
    log << "\n";
  }
  log << "  rules used:";
  if (r.rules_used.empty()) log << " none";
  for (const auto& [id, n] : r.rules_used) log << " " << id << " (" << n << ")";
  log << "\n";
  if (result.check) print_check(log, *result.check, config.check_options);
  if (f.latency)
    log << "  measured on " << f.latency->device << ": " << fmt("%.3f", f.latency->original.median_ms) << " ms -> "
        << fmt("%.3f", f.latency->optimized.median_ms) << " ms, speedup " << fmt("%.3f", f.latency->speedup) << "x\n";
  // A difference rejects the optimization; a check that could not run only withholds it.
  const bool not_run = result.check && !result.check->evaluated;
  if (!result.rejected.empty()) log << (not_run ? "  kept the input model: " : "  REJECTED: ") << result.rejected << "\n";
  if (!config.output.empty())
    log << "  wrote " << config.output.string() << data_note(f.output_data)
        << (result.rejected.empty() ? "" : " (the input model, unchanged)") << "\n";
  if (config.check == CheckMode::Off) log << "  not checked (--no-check)\n";
  if (!config.report.empty()) log << "  report " << config.report.string() << "\n";
}

}  // namespace

std::string latency_keeps_original(const LatencyComparison& latency, double min_gain) {
  if (gains_at_least(latency.optimized.median_ms, latency.original.median_ms, min_gain)) return "";
  return "kept the original graph: measured end to end on " + latency.device + " the optimized one takes " +
         fmt("%.4g", latency.optimized.median_ms) + " ms against the original's " +
         fmt("%.4g", latency.original.median_ms) + " ms (median of " + std::to_string(latency.optimized.repeats) +
         " runs), not --min-gain " + fmt("%.3g", 100 * min_gain) + "% faster";
}

EqsatResult optimize_model(const EqsatConfig& given) {
  const auto start = Clock::now();
  EqsatConfig config = given;  // gains the values the import gave symbolic dimensions that --dim did not
  std::ostream* log = config.log;
  EqsatResult result;

  // Cheap inputs first, so that a typo fails before a large model is read.
  const fs::path corpus_dir = config.corpus_dir.empty() ? find_corpus_dir() : config.corpus_dir;
  if (!config.corpus_dir.empty() && !fs::is_directory(config.corpus_dir))
    throw EqsatError("corpus folder " + config.corpus_dir.string() + " does not exist");
  const std::vector<fs::path> rule_paths = rule_files(config, corpus_dir);
  std::string rules_text;  // the files, for the log and the report
  for (const fs::path& p : rule_paths) rules_text += (rules_text.empty() ? "" : ", ") + p.string();
  if (!config.export_original.empty()) {
    // --export: the input model as ONNX, nothing else.
    result.model = load_model(config);
    const fs::path data = write_onnx(result.model, result.model.graph, config.export_original);
    if (log) *log << "eqsat-run: wrote " << config.export_original.string() << data_note(data) << "\n";
    return result;
  }
  RuleCorpus rules = load_rule_files(rule_paths, log);
  const size_t reversed = config.both_ways ? add_reversed_rules(rules) : 0;
  if (config.both_ways) rules_text += " (+" + std::to_string(reversed) + " reversed)";
  // Built once before the model is read, so that a wrong --cost fails before a large model is loaded, and
  // again for the model: whether its weights outgrow the cache the cost model knows of.
  if (!config.target.empty()) {
    try {
      config.cost = cost_spec_for_target(config.target, corpus_dir);
    } catch (const std::invalid_argument& e) {
      throw EqsatError(std::string("--target: ") + e.what());
    }
  }
  // "auto" (the default) becomes the cost model of the machine this runs on, once, for both builds below.
  const ResolvedCostSpec cost_choice = resolve_cost_spec(config.cost, corpus_dir);
  config.cost = cost_choice.spec;
  std::unique_ptr<CostModel> cost = load_cost_model(config, corpus_dir, {});

  result.model = load_model(config);
  const onnx_io::OnnxModel& model = result.model;
  std::string defaulted;  // "batch=1, seq=128"
  for (const auto& [name, value] : model.defaulted_dims) {
    config.import.dims.emplace(name, value);
    defaulted += (defaulted.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  }
  for (const auto& [axis, value] : model.defaulted_axes) {
    config.import.axis_dims.emplace(axis, value);
    defaulted += (defaulted.empty() ? "" : ", ") + axis.input + ":" + std::to_string(axis.axis) + "=" + std::to_string(value);
  }
  const ModelFootprint footprint{.weight_bytes = weight_bytes(model.graph)};
  if (footprint.weight_bytes > 0) cost = load_cost_model(config, corpus_dir, footprint);
  const std::string model_name = config.builtin.empty() ? config.model.string() : config.builtin;
  if (log) {
    *log << "eqsat-run: " << model_name << ": " << model.graph.num_ops() << " operators ("
         << model.opaque.size() << " opaque), " << model.weights.size() << " weights, opset " << model.opset << "; "
         << rules.rules.size() << " rules from " << rules_text << "; cost model " << cost->name()
         << (cost_choice.why.empty() ? "" : " (" + cost_choice.why + ")") << "\n";
    if (!defaulted.empty())
      *log << "  symbolic dimensions optimized at " << defaulted
           << " (no --dim given); the written file is checked at other values of each as well\n";
    for (const std::string& note : model.notes) *log << "  note: " << note << "\n";
    for (const std::string& f : model.folded) *log << "  import: " << f << "\n";
    if (cost->streams_weights())
      *log << "  cost: " << std::fixed << std::setprecision(1) << footprint.weight_bytes / 1e6 << std::defaultfloat
           << " MB of weights outgrow the cache " << cost->name()
           << " knows of: weights are priced as read from memory on every run\n";
  }

  OptimizeReport& r = result.report;
  r = run_search(config, model.graph, rules, *cost);
  OutputPlan plan(config, model, r);
  RunFacts facts{model_name, rules_text, cost_choice.why, *cost, plan, {}, std::nullopt, 0};
  auto measure = [&](const Expr& optimized, const char* what) {
    try {
      facts.latency = measure_latency(model.graph, optimized, GpuMeasureOptions{});
    } catch (const GpuUnavailableError& e) {
      throw EqsatError(what + std::string(e.what()));
    }
  };
  // Node times measured on this GPU: the two graphs' end-to-end times decide (never slower as measured).
  if (cost->name().starts_with("measured:"))
    plan.decide(*cost, [&](const Expr& optimized) {
      measure(optimized, "--cost measured: ");
      return latency_keeps_original(*facts.latency, config.min_gain);
    });
  else
    plan.decide(*cost);
  if (config.measure && !facts.latency) measure(r.optimized, "--measure: ");
  // The check before the write: what it finds decides which file the output path gets.
  if (config.check != CheckMode::Off) {
    onnx_io::CheckOptions co = config.check_options;
    if (log) co.on_progress = [log](const std::string& line) { *log << "  check: " << line << "\n"; };
    result.check = onnx_io::check_optimization(model, r.optimized, plan.original_file.bytes,
                                               plan.original_file.import, co, plan.exported);
  }
  const Verdict verdict = judge(config, result.check, plan.writes_input_as_is());
  result.exit_code = verdict.exit_code;
  result.rejected = verdict.rejected;
  if (!config.output.empty())
    facts.output_data = result.rejected.empty() ? plan.write(config.output) : plan.write_input(config.output);
  facts.total_seconds = since(start);

  result.report_json = report_json(config, result, facts);
  if (const auto* measured = dynamic_cast<const MeasuredCostModel*>(cost.get())) {
    measured->save();
    if (!config.cost_misses_dir.empty()) write_cost_misses(*measured, config.cost_misses_dir, log);
  }
  if (!config.report.empty()) {
    std::ofstream f(config.report);
    if (!f) throw EqsatError(config.report.string() + ": cannot open for writing");
    f << result.report_json.dump(2) << "\n";
  }
  if (log) print_summary(*log, config, result, facts);
  return result;
}

}  // namespace teq
