// eqsat-run: optimize an ONNX model by equality saturation (docs/eqsat-run.md).
//   eqsat-run MODEL.onnx -o OUT.onnx [--rules FILE] [--cost SPEC] [--extract greedy|ilp] [--check] ...
//   eqsat-run --model resnet50 [--search sequential] [--measure] [--export FILE.onnx] ...
// Options -> EqsatConfig -> optimize_model() -> exit code (docs/errors.md):
//   0 done: OUT is the optimized model, checked numerically against the input (unless --no-check), or the
//     input unchanged (nothing cheaper found, or, without --check, a check that could not run);
//   2 bad input (file, model, opset, shapes, rules, cost model, options); 3 internal error (a bug);
//   4 --check was given and could not run (an operator it cannot evaluate): OUT is the input unchanged;
//   5 rejected: the check found the optimized model computing other values: OUT is the input unchanged.
// The check runs by default; --no-check writes the optimized model unchecked. Exit 1 is no longer used
// (it was "the check found a difference", with the wrong model written).
#include <cstdlib>
#include <iostream>
#include <limits>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <map>
#include <optional>

#include <CLI/CLI.hpp>

#include "tools/cli_checks.h"

#include "optimizer/eqsat_app.h"
#include "optimizer/models/builtin.h"

using teq::cli::kNonNegative;
using teq::cli::kPositive;

namespace {

// The command-line values that do not go straight into EqsatConfig: they are checked or translated
// once parsing is done (apply_cli_options). CLI11 keeps references to them, so they outlive the parse.
struct CliValues {
  std::string model, output, report, exported, extract = "ilp", search = "saturation", cost_misses;
  std::vector<std::string> dims, rules;
  bool quiet = false, list_models = false, check = false, no_check = false;
};

// The options are declared group by group in the order --help lists them; the order is part of the help text.

// What to optimize, where the result goes, and which rules rewrite it. Returns --export, which
// finish_cli excludes from the optimization's options.
CLI::Option* add_model_options(CLI::App& app, teq::EqsatConfig& c, CliValues& v) {
  app.add_option("model", v.model, "ONNX model to optimize (or use --model NAME)");
  app.add_option("--model", c.builtin, "optimize a built-in benchmark model instead (see --list-models)");
  app.add_flag("--list-models", v.list_models, "print the built-in model names and exit");
  auto* export_opt = app.add_option("--export", v.exported, "write the input model as ONNX to this file and exit");
  app.add_option("-o,--output", v.output,
                 "where to write the result: the optimized ONNX model once the check passes; the input model "
                 "unchanged when the check finds a difference (exit 5) or cannot run (exit 0, or 4 with --check)");
  app.add_option("--rules", v.rules,
                 "rule corpus JSON, repeatable: the files are used together (default: corpus/rules.json, "
                 "rulegen's)");
  app.add_flag("--both-ways,!--one-way", c.both_ways,
               "apply each single-pattern rule also right to left where it can be (a right side that is not a bare "
               "variable and binds every variable), the default: rulegen writes each equality in one direction; "
               "--one-way: as written only");
  return export_opt;
}

// The cost model: the target it describes and the gain a result must have to be written.
void add_cost_options(CLI::App& app, teq::EqsatConfig& c, CliValues& v) {
  auto* target_opt = app.add_option("--target", c.target,
                                    "where the model will run, which the cost model describes: auto (this machine: "
                                    "onnxruntime on this CPU without a GPU, the GPU's profile with one), cpu "
                                    "(onnxruntime's CPU provider), cuda (onnxruntime's CUDA provider on this "
                                    "machine's GPU), or a GPU: h200, a100, v100, t4");
  auto* cost_opt = app.add_option("--cost", c.cost,
                 "cost model: auto (the machine it runs on: onnxruntime on this CPU without a GPU, the GPU's "
                 "profile with one), analytical[:DEVICE][:tf32|:fp16], flops, measured[:CACHE.json] (GPU), "
                 "db:FILE.json")
      ->capture_default_str();
  target_opt->excludes(cost_opt);
  app.add_option("--cost-misses", v.cost_misses,
                 "with --cost db:FILE: write each node the DB lacks as a one-node ONNX model into this folder "
                 "(index.json lists them) for bench/ort_cost_db.py to time");
  app.add_option("--min-gain", c.min_gain,
                 "write the optimized graph only if its export is at least this fraction cheaper than the original "
                 "(0.005: 0.5%; 0: any gain)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
}

// The search (saturation or the sequential baseline), its limits, and the extraction with the ILP's limits.
void add_search_options(CLI::App& app, teq::EqsatConfig& c, CliValues& v) {
  app.add_option("--search", v.search, "saturation, or sequential (TASO-style backtracking baseline)")
      ->check(CLI::IsMember({"saturation", "sequential"}))
      ->capture_default_str();
  app.add_option("--alpha", c.sequential.alpha, "sequential: cost relaxation")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--budget", c.sequential.budget, "sequential: graphs to expand")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--max-graphs", c.sequential.max_graphs, "sequential: stop after generating this many distinct graphs")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--extract", v.extract, "extraction: greedy, dag-greedy or ilp")
      ->check(CLI::IsMember({"greedy", "dag-greedy", "ilp"}))
      ->capture_default_str();
  app.add_option("--node-limit", c.optimize.saturation.node_limit, "stop saturating beyond this many e-nodes")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--iter-limit", c.optimize.saturation.iter_limit, "stop after this many iterations")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--time-limit", c.optimize.saturation.time_limit_s, "stop saturating after this many seconds")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--ilp-time-limit", c.optimize.ilp_time_limit_s,
                 "the ILP solver's wall-clock guard in seconds, a last resort (the two limits below decide)")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--ilp-node-limit", c.optimize.ilp_max_nodes, "ILP: branch-and-bound nodes per extraction")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--ilp-lp-iterations", c.optimize.ilp_max_lp_iterations,
                 "ILP: simplex iterations of the root LP relaxation per extraction (beyond: greedy's answer)")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--k-multi", c.optimize.saturation.k_multi, "apply multi-pattern rules in the first K iterations")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--rounds", c.optimize.rounds,
                 "rounds of saturation + extraction, each from the last round's graph, while the cost falls")
      ->check(kPositive)
      ->capture_default_str();
}

// The report, the GPU timing, and the numerical check with its inputs and tolerances.
void add_check_options(CLI::App& app, teq::EqsatConfig& c, CliValues& v) {
  app.add_option("--report", v.report, "write a JSON report here");
  app.add_flag("--measure", c.measure, "time original and optimized end to end on the GPU (needs one)");
  auto* check_opt = app.add_flag(
      "--check", v.check,
      "the numerical check (on by default) is required: exit 4 when it cannot run (an operator it cannot "
      "evaluate) instead of 0; either way OUT is then the input model unchanged");
  app.add_flag("--no-check", v.no_check,
               "do not compare original and optimized before writing: write the optimized model unchecked")
      ->excludes(check_opt);
  app.add_option("--seed", c.check_options.seed, "random seed of the check's inputs")->capture_default_str();
  app.add_option("--rtol", c.check_options.rtol, "the check's tolerance relative to each element: |optimized - original| <= rtol * |original| + atol * "
                 "max(1, largest |original| in that output)")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--atol", c.check_options.atol, "the check's tolerance relative to each output tensor's scale (its largest |value|, at least 1): "
                 "float32 rounds a sum relative to the values summed")
      ->check(kNonNegative)
      ->capture_default_str();
}

// The last options, the footer, and the options --export excludes.
void finish_cli(CLI::App& app, CliValues& v, CLI::Option* export_opt) {
  app.add_option("--dim", v.dims,
                 "value a symbolic input dimension is optimized at: NAME=VALUE for a named one (dim_param), "
                 "INPUT:AXIS=VALUE for dimension AXIS of graph input INPUT, named or not (repeatable). Without it: 1 "
                 "for a batch, 128 for any other; the written file is checked at other values as well");
  app.add_flag("-q,--quiet", v.quiet, "no progress or summary on stderr");
  app.footer(
      "Exit status: 0 done (OUT is the checked optimized model, or the input unchanged); 2 bad input or options; "
      "3 internal error; 4 --check could not run (OUT is the input); 5 rejected: the check found a difference "
      "(OUT is the input). docs/eqsat-run.md, docs/errors.md.");
  // --export writes the input model and stops: options of the optimization make no sense with it.
  for (const char* name : {"--output", "--report", "--check", "--no-check", "--measure", "--search"})
    export_opt->excludes(app.get_option(name));
}

// Moves the parsed values into the config. Returns false (after saying why) when a --dim is malformed.
bool apply_cli_values(const CliValues& v, teq::EqsatConfig& c) {
  c.model = v.model;
  c.check = v.no_check ? teq::CheckMode::Off : v.check ? teq::CheckMode::Required : teq::CheckMode::Default;
  c.export_original = v.exported;
  c.search = v.search == "sequential" ? teq::SearchMethod::Sequential : teq::SearchMethod::Saturation;
  c.sequential.time_limit_s = c.optimize.saturation.time_limit_s;
  c.output = v.output;
  c.rules.assign(v.rules.begin(), v.rules.end());
  c.report = v.report;
  c.cost_misses_dir = v.cost_misses;
  c.optimize.extract = v.extract == "greedy"       ? teq::ExtractMethod::Greedy
                       : v.extract == "dag-greedy" ? teq::ExtractMethod::DagGreedy
                                                   : teq::ExtractMethod::Ilp;
  for (const std::string& d : v.dims)
    if (std::string error = teq::bind_symbolic_dim(d, c.import); !error.empty()) {
      std::cerr << "eqsat-run: error: " << error << "\n";
      return false;
    }
  if (v.quiet) c.log = nullptr;
  return true;
}

// Runs the optimization and turns its outcome or error into the exit code (docs/errors.md).
int run_optimization(const teq::EqsatConfig& c) {
  try {
    const teq::EqsatResult r = teq::optimize_model(c);
    if (r.exit_code == teq::kExitCheckNotRun)
      std::cerr << "eqsat-run: error: --check could not run: " << r.check->reason
                << (c.output.empty() ? "" : "; wrote the input model unchanged") << "\n";
    else if (r.exit_code == teq::kExitRejected)
      std::cerr << "eqsat-run: error: optimization rejected: " << r.rejected
                << (c.output.empty() ? "" : "; wrote the input model unchanged") << "\n";
    return r.exit_code;
  } catch (const teq::EqsatError& e) {
    std::cerr << "eqsat-run: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "eqsat-run: internal error: " << e.what() << "\n";
    return 3;
  }
}

// Large blocks stay with the process once freed. The check widens each weight of a model to doubles at every
// size it evaluates and frees it after its last reader (hundreds of MB a layer for an LLM), and the export
// copies tensors a chunk at a time; glibc would map and unmap each such block, and every page of the next one
// then costs a page fault and a clearing (the 2-layer LLaMA-7B-shaped fp16 model's check: 34 s, 30 s of it
// system time, against 22 s). Freed blocks are reused by the next ones, which have the same sizes layer after
// layer, so the peak resident memory stays what it was (1.10 GB on that model).
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  teq::EqsatConfig c;
  c.log = &std::cerr;
  CliValues v;

  CLI::App app{"eqsat-run: optimize an ONNX model by equality saturation with a verified rule corpus"};
  CLI::Option* export_opt = add_model_options(app, c, v);
  add_cost_options(app, c, v);
  add_search_options(app, c, v);
  add_check_options(app, c, v);
  finish_cli(app, v, export_opt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  if (v.list_models) {
    for (const std::string& name : teq::builtin_model_names()) std::cout << name << "\n";
    return 0;
  }
  if (!apply_cli_values(v, c)) return 2;
  return run_optimization(c);
}
