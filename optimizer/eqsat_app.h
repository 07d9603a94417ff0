// optimize_model: what eqsat-run does, as a library call (import an ONNX model, optimize it with a rule
// corpus under a cost model, export it, optionally check it numerically, write a JSON report). The
// program itself (tools/eqsat_run.cpp) only parses options into an EqsatConfig and maps errors to exit
// codes. The numerical check runs unless it is turned off, and decides what is written: a model it finds
// different, or cannot vouch for, is not handed over; the output path gets the input model instead.
// Usage:
//   EqsatConfig c{.model = "corpus/models/mlp.onnx", .output = "mlp.opt.onnx"};
//   EqsatResult r = optimize_model(c);  // r.exit_code: 0 ok, kExitRejected, kExitCheckNotRun (with --check)
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimizer/onnx/check.h"
#include "optimizer/onnx/onnx_import.h"
#include "optimizer/optimize.h"
#include "optimizer/output_choice.h"
#include "optimizer/sequential.h"

namespace teq {

enum class SearchMethod { Saturation, Sequential };

/// Whether the optimized model is compared numerically with the original before it is written
/// (docs/eqsat-run.md, "--check"). In both checking modes a model the check finds different, or cannot
/// evaluate, is not written: the output path gets the input model unchanged.
enum class CheckMode {
  Default,   // check; a check that cannot run keeps the input and exits 0 (a note says why)
  Required,  // --check: the same, except that a check that cannot run exits kExitCheckNotRun
  Off,       // --no-check: write the optimized model unchecked
};

struct EqsatConfig {
  std::filesystem::path model;            // the .onnx file to optimize, or
  std::string builtin;                    // a built-in benchmark model (optimizer/models/builtin.h)
  std::filesystem::path export_original;  // write the input model as ONNX here and stop (no optimization)
  std::filesystem::path output;           // the optimized .onnx to write; empty: write nothing
  /// Rule files, used together (rules of later files follow; an id seen before gets "<file stem>/" in
  /// front). Empty: <corpus>/rules.json (find_corpus_dir), rulegen's corpus.
  std::vector<std::filesystem::path> rules;
  /// The corpus folder (rules.json, devices/): empty: find_corpus_dir(). The Python module sets it, since
  /// the running executable there is the Python interpreter.
  std::filesystem::path corpus_dir;
  std::filesystem::path report;           // JSON report to write; empty: none
  std::string cost = "auto";   // cost model spec (cost_models.h); auto: this machine's (resolve_cost_spec)
  /// Where the model will run (cost_spec_for_target: auto, cpu, h200, a100, ...); non-empty: sets `cost`.
  std::string target;
  /// The optimized graph is written only if its export, read back, is at least this fraction cheaper than
  /// the original: a cost model does not resolve a 0.02% difference (a measured DB's per-node times scatter
  /// by more, and neither sees the runtime's own cross-node fusions, which a tiny rewrite can break).
  double min_gain = 0.005;
  SearchMethod search = SearchMethod::Saturation;
  // Limits and extraction; saturation.on_iteration is set by the app.
  OptimizeConfig optimize{.saturation = {.iter_limit = kDefaultIterationsPerRound}, .rounds = kDefaultRounds};
  SequentialConfig sequential;            // TASO-style baseline (--search sequential)
  bool measure = false;                   // time original and optimized end to end on the GPU
  CheckMode check = CheckMode::Default;   // compare original and optimized numerically before writing
  /// Also apply each rule right to left where it can be (rules/corpus.h reversed_rule): rulegen writes each
  /// equality once, in the direction its enumeration found it, so a rewrite such as zero-padding a 1x1
  /// kernel to 3x3 (Tensat's enlarge) is in the generated corpus only as its inverse. On by default
  /// (eqsat-run --one-way turns it off).
  bool both_ways = true;
  onnx_io::CheckOptions check_options;
  /// Symbolic dimensions that --dim does not give are bound to symbolic_dim_value's defaults (batch 1,
  /// anything else 128), and the written file is checked at other values of each.
  onnx_io::ImportOptions import{.default_dims = true};
  /// With a db: cost model: write every node the DB lacked as a one-node ONNX model into this folder, with
  /// index.json ({"nodes": [{"file", "key"}]}), for bench/ort_cost_db.py to time; empty: nothing written.
  std::filesystem::path cost_misses_dir;
  std::ostream* log = nullptr;            // progress and summary (eqsat-run: stderr); nullptr: quiet
};

struct LatencyComparison;  // optimizer/cost/measured_cost.h

/// With a cost model measured on this GPU (--cost measured), the graphs' measured end-to-end times decide,
/// not the sum of node times (the runtime fuses and overlaps what a node table cannot see): the note that
/// keeps the original unless the optimized graph ran at least `min_gain` faster; empty: write the optimized.
std::string latency_keeps_original(const LatencyComparison& latency, double min_gain);

/// Exit code of eqsat-run when --check was asked for and could not run (an operator without a reference
/// implementation, say): the output path gets the input model unchanged, since nothing vouches for the
/// optimized one. Without --check (CheckMode::Default) the same run exits 0, with a note.
inline constexpr int kExitCheckNotRun = 4;
/// Exit code of eqsat-run when the check found the optimized model computing other values (at the imported
/// size or at the second value of a symbolic dimension): the optimization is rejected and the output path
/// gets the input model unchanged; the summary and the report say where and by how much it differed.
/// (Until issue 42 this was exit 1, with the wrong model written.)
inline constexpr int kExitRejected = 5;

struct EqsatResult {
  /// 0: done (the optimized model, or the input when nothing was gained or the check could not run by
  /// default); kExitRejected; kExitCheckNotRun (CheckMode::Required only).
  int exit_code = 0;
  /// Why the optimized model was not written and the input was (the check's difference, or why it could not
  /// run); empty when the optimized model (or the input as it is, with nothing to improve) was written.
  std::string rejected;
  onnx_io::OnnxModel model;
  OptimizeReport report;  // the search's own, as it found it
  /// What was decided to write: the graph and its cost read back, or the original kept and why
  /// (optimizer/output_choice.h). `output.cost` is the written graph's cost, `report.optimized_cost` the search's.
  OutputChoice output;
  std::optional<onnx_io::CheckResult> check;
  nlohmann::json report_json;  // what --report writes
};

/// Bad input: the message says what and where; eqsat-run exits with `exit_code` (2).
class EqsatError : public std::runtime_error {
 public:
  explicit EqsatError(const std::string& what, int exit_code = 2) : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// Runs the whole pipeline. Throws EqsatError for a missing/unreadable/non-ONNX/truncated model, an
/// unknown built-in model, an unsupported opset, shapes that cannot be inferred, a missing or malformed
/// rule file, an unknown cost model, --cost measured or --measure without a GPU, or an output file that
/// cannot be written.
EqsatResult optimize_model(const EqsatConfig& config);

/// Where `cmake --install` puts the corpus, relative to the prefix (and the Python package, relative to
/// its folder).
inline constexpr const char* kInstalledCorpusDir = "share/tensor_eqsat/corpus";

/// The corpus folder: ./corpus when it exists, else the first corpus/ or share/tensor_eqsat/corpus beside an
/// ancestor of the running executable (so a build tree finds its source tree's corpus, an installed program
/// its prefix's). Empty when there is none.
std::filesystem::path find_corpus_dir();

/// One symbolic-dimension binding, `NAME=VALUE` (a dim_param) or `INPUT:AXIS=VALUE` (an axis of a graph
/// input), into the import options (eqsat-run --dim, the Python module's `dims`). Returns the error message
/// (empty when it was bound): a malformed assignment, a value below 1 or beyond 64 bits.
std::string bind_symbolic_dim(const std::string& assignment, onnx_io::ImportOptions& import);

}  // namespace teq
