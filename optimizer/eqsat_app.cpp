#include "optimizer/eqsat_app.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <optional>
#include <set>

#include "optimizer/cost/cost_models.h"
#include "optimizer/cost/measured_cost.h"
#include "optimizer/detail/text.h"
#include "optimizer/eqsat_report.h"
#include "optimizer/models/builtin.h"
#include "optimizer/onnx/from_expr.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/import/load_rules.h"
#include "rules/ops/opaque.h"
#include "rules/sexpr.h"

namespace teq {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
using detail::data_note;
using detail::fmt;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

void write_cost_misses(const CostMisses& misses, const fs::path& dir, std::ostream* log) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw EqsatError("--cost-misses: cannot create " + dir.string() + ": " + ec.message());
  nlohmann::json nodes = nlohmann::json::array();
  size_t skipped = 0;
  for (const CostKey& key : misses.nodes) {
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
  for (const FusedUnit& unit : misses.fused)
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

CostModelHandle load_cost_model(const EqsatConfig& config, const fs::path& corpus_dir, const ModelFootprint& footprint) {
  CostModelHandle cost;
  try {
    cost = make_cost_model(config.cost, corpus_dir, footprint);
  } catch (const std::exception& e) {
    throw EqsatError(std::string("--cost: ") + e.what());
  }
  if (!config.cost_misses_dir.empty() && !cost.misses)
    throw EqsatError("--cost-misses needs a measured cost model (--cost db:FILE.json), not " + cost->name());
  return cost;
}

/// What engine/reshape_free.h needs to know of `model`'s opaque nodes: which only reshape their data operand (a
/// Reshape, Flatten, Squeeze or Unsqueeze the import kept opaque because its target follows the input's
/// dimensions), and which are element-wise (ONNX operators of one output element per input element, every
/// input a term).
OpaqueFacts opaque_facts(const onnx_io::OnnxModel& model) {
  static const std::set<std::string> kReshapes{"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  static const std::set<std::string> kElementwise{"Pow", "Neg", "Reciprocal", "Abs", "Exp", "Log", "Sin", "Cos",
                                                  "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid",
                                                  "HardSwish", "Mish", "Max", "Min"};
  auto operand = std::make_shared<std::vector<std::optional<size_t>>>(model.opaque.size());
  auto elementwise = std::make_shared<std::vector<bool>>(model.opaque.size(), false);
  for (size_t i = 0; i < model.opaque.size(); ++i) {
    const onnx_io::OpaqueNode& op = model.opaque[i];
    // Control flow, other domains and outputs of a stand-in shape (their shape depends on tensor values) are
    // neither: the pass compares shapes.
    const bool dynamic = std::find(op.dynamic_outputs.begin(), op.dynamic_outputs.end(), true) != op.dynamic_outputs.end();
    if (!op.domain.empty() || !op.implicit_inputs.empty() || dynamic) continue;
    const bool all_terms = std::all_of(op.input_child.begin(), op.input_child.end(), [](int c) { return c >= 0; });
    if (kReshapes.count(op.op_type) && !op.input_child.empty() && op.input_child[0] >= 0)
      (*operand)[i] = static_cast<size_t>(op.input_child[0]);
    (*elementwise)[i] = kElementwise.count(op.op_type) && !op.input_child.empty() && all_terms;
  }
  auto entry = [](const ExprNode& node, size_t n) -> std::optional<size_t> {
    const ops::OpaqueAttrs a = ops::opaque_attrs(node.attrs);
    if (a.output != 0 || a.id < 0 || static_cast<size_t>(a.id) >= n) return std::nullopt;
    return static_cast<size_t>(a.id);
  };
  return {.reshape_operand = [operand, entry](const ExprNode& node) -> std::optional<size_t> {
            const auto i = entry(node, operand->size());
            return i ? (*operand)[*i] : std::nullopt;
          },
          .elementwise = [elementwise, entry](const ExprNode& node) {
            const auto i = entry(node, elementwise->size());
            return i && (*elementwise)[*i];
          }};
}

/// Saturation (or the sequential baseline), with progress lines on the log.
OptimizeReport run_search(const EqsatConfig& config, const Expr& graph, const RuleCorpus& rules, const CostModel& cost,
                          const LeafElemType& leaf_types, OpaqueFacts opaque = {}) {
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
  oc.opaque = std::move(opaque);
  oc.leaf_types = leaf_types;
  if (log)
    oc.saturation.on_iteration = [log](const IterationStats& s) {
      *log << "  iter " << s.iteration << ": " << s.enodes << " e-nodes, " << s.eclasses << " e-classes, " << s.matches
           << " matches, " << fmt("%.3f", s.seconds) << " s\n";
    };
  return optimize_graph(graph, rules, cost, oc);
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

/// The rule files named one after another, for the log and the report.
std::string describe_rule_files(const std::vector<fs::path>& paths) {
  std::string text;
  for (const fs::path& p : paths) text += (text.empty() ? "" : ", ") + p.string();
  return text;
}

/// The cost model's spec, written into config.cost: --target's, and "auto" (the default) resolved to the
/// cost model of the machine this runs on, once, for both builds in optimize_model.
ResolvedCostSpec choose_cost_spec(EqsatConfig& config, const fs::path& corpus_dir) {
  if (!config.target.empty()) {
    try {
      config.cost = cost_spec_for_target(config.target, corpus_dir);
    } catch (const std::invalid_argument& e) {
      throw EqsatError(std::string("--target: ") + e.what());
    }
  }
  const ResolvedCostSpec cost_choice = resolve_cost_spec(config.cost, corpus_dir);
  config.cost = cost_choice.spec;
  return cost_choice;
}

/// Keeps in config.import the values the import gave symbolic dimensions that --dim did not, and returns
/// them for the log ("batch=1, seq=128"; empty: none).
std::string adopt_defaulted_dims(EqsatConfig& config, const onnx_io::OnnxModel& model) {
  std::string defaulted;
  for (const auto& [name, value] : model.defaulted_dims) {
    config.import.dims.emplace(name, value);
    defaulted += (defaulted.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  }
  for (const auto& [axis, value] : model.defaulted_axes) {
    config.import.axis_dims.emplace(axis, value);
    defaulted += (defaulted.empty() ? "" : ", ") + axis.input + ":" + std::to_string(axis.axis) + "=" + std::to_string(value);
  }
  return defaulted;
}

/// The log's account of what the search starts from: the model, the rules, the cost model, and what the
/// import did to the model.
void log_inputs(std::ostream& log, const RunFacts& facts, const onnx_io::OnnxModel& model, const RuleCorpus& rules,
                const std::string& defaulted, const ModelFootprint& footprint) {
  const CostModelHandle& cost = facts.cost;
  log << "eqsat-run: " << facts.model_name << ": " << model.graph.num_ops() << " operators ("
      << model.opaque.size() << " opaque), " << model.weights.size() << " weights, opset " << model.opset << "; "
      << rules.rules.size() << " rules from " << facts.rules_text << "; cost model " << cost->name()
      << (facts.cost_choice.empty() ? "" : " (" + facts.cost_choice + ")") << "\n";
  if (!defaulted.empty())
    log << "  symbolic dimensions optimized at " << defaulted
        << " (no --dim given); the written file is checked at other values of each as well\n";
  for (const std::string& note : model.notes) log << "  note: " << note << "\n";
  for (const std::string& f : model.folded) log << "  import: " << f << "\n";
  if (cost.streams_weights)
    log << "  cost: " << std::fixed << std::setprecision(1) << footprint.weight_bytes / 1e6 << std::defaultfloat
        << " MB of weights outgrow the cache " << cost->name()
        << " knows of: weights are priced as read from memory on every run\n";
}

/// Both graphs timed end to end on the GPU; without one, bad input for the option (`what`) that asked.
LatencyComparison measure_end_to_end(const Expr& original, const Expr& optimized, const char* what) {
  try {
    return measure_latency(original, optimized, GpuMeasureOptions{});
  } catch (const GpuUnavailableError& e) {
    throw EqsatError(what + std::string(e.what()));
  }
}

/// The numerical check of what is to be written (none with --no-check); it runs before the write, since
/// what it finds decides which file the output path gets.
std::optional<onnx_io::CheckResult> check_output(const EqsatConfig& config, const onnx_io::OnnxModel& model,
                                                 const OutputContext& output, const OutputChoice& choice) {
  if (config.check == CheckMode::Off) return std::nullopt;
  if (choice.writes_input_as_is()) {
    // Nothing to compare: on an LLM, evaluating the model against itself at four sizes took 12 minutes.
    std::optional<onnx_io::CheckResult> check;
    check.emplace();
    check->evaluated = check->passed = check->passed_imported_size = true;
    check->not_needed = "the file written is the input model, unchanged";
    return check;
  }
  onnx_io::CheckOptions co = config.check_options;
  if (std::ostream* log = config.log) co.on_progress = [log](const std::string& line) { *log << "  check: " << line << "\n"; };
  return onnx_io::check_optimization(model, choice.graph, output.original_file().bytes, output.original_file().import,
                                     co, choice.exported);
}

/// What the run leaves besides the output: the cost model's cache, the nodes a cost DB lacked, the report.
void write_side_files(const EqsatConfig& config, const EqsatResult& result, const CostModelHandle& cost) {
  if (cost.save) cost.save();
  if (!config.cost_misses_dir.empty()) write_cost_misses(cost.misses(), config.cost_misses_dir, config.log);
  if (!config.report.empty()) {
    std::ofstream f(config.report);
    if (!f) throw EqsatError(config.report.string() + ": cannot open for writing");
    f << result.report_json.dump(2) << "\n";
  }
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
  std::string rules_text = describe_rule_files(rule_paths);  // for the log and the report
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
  const ResolvedCostSpec cost_choice = choose_cost_spec(config, corpus_dir);
  CostModelHandle cost = load_cost_model(config, corpus_dir, {});

  const auto import_start = Clock::now();
  result.model = load_model(config);
  const double import_seconds = since(import_start);
  const onnx_io::OnnxModel& model = result.model;
  const std::string defaulted = adopt_defaulted_dims(config, model);
  const LeafElemType leaf_types = leaf_elem_types(model);
  const ModelFootprint footprint{.weight_bytes = weight_bytes(model.graph, leaf_types)};
  if (footprint.weight_bytes > 0) cost = load_cost_model(config, corpus_dir, footprint);
  const std::string model_name = config.builtin.empty() ? config.model.string() : config.builtin;
  RunFacts facts{model_name, rules_text, cost_choice.why, cost, {}, std::nullopt};
  facts.import_seconds = import_seconds;
  if (log) log_inputs(*log, facts, model, rules, defaulted, footprint);

  const OptimizeReport& r = result.report = run_search(config, model.graph, rules, *cost, leaf_types, opaque_facts(model));
  const OutputContext output(config, model, cost.batched_linear_as_gemm,
                             cost.batched_linear_as_gemm ? batched_linear_min_elements(*cost) : 0);
  auto phase_start = Clock::now();
  // Node times measured on this GPU: the two graphs' end-to-end times decide (never slower as measured).
  OutputVerdict measured_verdict;
  if (cost.measured_here)
    measured_verdict = [&](const Expr& optimized) {
      facts.latency = measure_end_to_end(model.graph, optimized, "--cost measured: ");
      return latency_keeps_original(*facts.latency, config.min_gain);
    };
  result.output = decide_output(output, r, *cost, measured_verdict);
  const OutputChoice& choice = result.output;
  facts.decide_seconds = since(phase_start);
  if (config.measure && !facts.latency) facts.latency = measure_end_to_end(model.graph, choice.graph, "--measure: ");
  phase_start = Clock::now();
  result.check = check_output(config, model, output, choice);
  facts.check_seconds = since(phase_start);
  const Verdict verdict = judge(config, result.check, choice.writes_input_as_is());
  result.exit_code = verdict.exit_code;
  result.rejected = verdict.rejected;
  phase_start = Clock::now();
  if (!config.output.empty())
    facts.output_data = result.rejected.empty() ? write_output(output, choice, config.output)
                                                : write_input(output, config.output);
  facts.write_seconds = since(phase_start);
  facts.total_seconds = since(start);

  result.report_json = report_json(config, result, facts);
  write_side_files(config, result, cost);
  if (log) print_summary(*log, config, result, facts);
  return result;
}

}  // namespace teq
