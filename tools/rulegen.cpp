// rulegen: discovers rewrite rules by enumeration and fingerprints, proves them, prunes them
// (synth/rulegen.h); `merge` joins shard outputs; `derive` measures coverage of another rule set.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "rules/import/load_rules.h"
#include "synth/coverage.h"
#include "synth/rulegen.h"
#include "tools/cli_checks.h"

using namespace teq;
using namespace teq::synth;

namespace {

using teq::cli::split_list;

void print_summary(const RulegenStats& s) {
  std::cerr << "rulegen: summary: " << s.summary_line() << "\n";
  // Where the time went and the memory peak (generator.stats.phases holds the same).
  std::cerr << "rulegen: summary of phases:";
  uint64_t peak_kb = 0;
  for (const PhaseStats& p : s.phases) {
    if (p.phase == "kept") continue;  // the whole run's seconds, said above
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s %.1f s,", p.phase.c_str(), p.seconds);
    std::cerr << buf;
    peak_kb = std::max(peak_kb, p.peak_rss_kb);
  }
  std::cerr << " peak " << peak_kb / 1024 << " MB\n";
}

// The values of the options that are not RulegenConfig's own; CLI11 keeps references to them.
struct GenerateValues {
  std::string out, ops, shard, rejected;
};
struct MergeValues {
  std::vector<std::string> inputs;
  std::string out, rejected;
};
struct DeriveValues {
  std::string using_path, target_path;
  DeriveLimits coverage = coverage_limits();
  bool generic_shapes = false;
};

// The top-level options drive generation (run_generate). Declared in the order --help lists them.
void add_generate_options(CLI::App& app, RulegenConfig& config, GenerateValues& g) {
  app.add_option("--out", g.out, "output corpus (JSON)");
  app.add_option("--ops", g.ops, "comma-separated operators (default: the TASO generator vocabulary)");
  app.add_option("--max-ops", config.max_ops, "operators per graph")->check(CLI::Range(1, 5));
  app.add_option("--max-inputs", config.max_inputs, "distinct input tensors per graph")->check(CLI::Range(1, 32));
  app.add_option("--threads", config.threads, "worker threads (default: all cores)")->check(CLI::Range(0, 1024));
  app.add_option("--seed", config.seed, "seed of the fingerprint inputs");
  app.add_option("--time-limit", config.time_limit_s, "enumeration time limit in seconds (0 = none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-shapes", config.max_shapes,
                 "at most this many distinct shapes in the enumeration (0 = no cap); applications beyond it are "
                 "not enumerated, counted in generator.stats.shapes_refused")
      ->capture_default_str();
  app.add_option("--max-last-size-candidates", config.max_last_size_candidates,
                 "at most this many distinct candidate equations of the largest size (--max-ops), a sample fixed by "
                 "the hash of their text (0 = all); the rest are counted in generator.stats.candidates_capped")
      ->capture_default_str();
  app.add_option("--shard", g.shard, "i/n: this process's part of the last enumeration level");
  app.add_flag("--defer-proofs", config.defer_proofs,
               "with --shard: prove nothing here and leave the proofs to merge, which then proves what one process "
               "would (without it a shard proves all its candidates)");
  app.add_option("--rejected", g.rejected, "side file for unproved candidates (default: OUT.rejected.json)");
  app.add_flag("!--no-minimize", config.minimize, "keep rules derivable from smaller ones");
  app.add_flag("--strict-shapes", config.prove.reject_coincidences,
               "refuse rules that hold only where unrelated extents agree (ruleverify --strict-shapes)");
}

CLI::App* add_merge_command(CLI::App& app, RulegenConfig& config, MergeValues& m) {
  auto* merge = app.add_subcommand("merge", "join shard outputs or corpora and finish the pipeline");
  merge->add_option("inputs", m.inputs, "shard files or corpora")->required()->check(CLI::ExistingFile);
  merge->add_option("--out", m.out, "output corpus")->required();
  merge->add_option("--threads", config.threads, "worker threads");
  merge->add_option("--rejected", m.rejected, "side file for the candidates merge found unproved (default: none)");
  return merge;
}

CLI::App* add_derive_command(CLI::App& app, RulegenConfig& config, DeriveValues& d) {
  auto* derive = app.add_subcommand("derive", "which rules of TARGET follow from USING by saturation");
  derive->add_option("--using", d.using_path, "the rules to derive with: a JSON corpus, Tensat rule text or a TASO .pb")->required()->check(CLI::ExistingFile);
  derive->add_option("--target", d.target_path, "rules to derive: JSON, Tensat text or TASO .pb")
      ->required()
      ->check(CLI::ExistingFile);
  derive->add_option("--node-limit", d.coverage.node_limit, "e-graph node limit per rule")->capture_default_str();
  derive->add_option("--iter-limit", d.coverage.iter_limit, "saturation iterations per rule")->capture_default_str();
  derive->add_option("--time-limit", d.coverage.time_limit_s, "seconds per rule")->capture_default_str();
  derive->add_option("--threads", config.threads, "worker threads");
  derive->add_flag("--generic-shapes", d.generic_shapes,
                   "type each target's variables as minimization does (distinct extents from the shape search), not "
                   "with the leaf types: what rulegen's minimization found derivable");
  return derive;
}

// The top-level options drive generation; merge and derive have their own, so a generation option given
// with a subcommand would be silently ignored. Returns false (after saying so) when one was given.
bool no_generation_option_with(const CLI::App& app, const CLI::App* sub) {
  if (sub)
    for (const char* name : {"--out", "--ops", "--max-ops", "--max-inputs", "--seed", "--time-limit", "--shard", "--max-shapes", "--max-last-size-candidates",
                             "--rejected", "--no-minimize", "--defer-proofs"})
      if (app.count(name) > 0) {
        std::cerr << "rulegen: " << name << " is a generation option; it cannot be combined with '" << sub->get_name()
                  << "' (put the subcommand's own options after it)\n";
        return false;
      }
  return true;
}

int run_derive(const RulegenConfig& config, DeriveValues& d) {
  RuleCorpus base = load_rule_set({d.using_path}).corpus;  // any rule format, as --target
  ImportResult target = load_rules_file(d.target_path);
  // The default types and the rank-3 leaves of transpose3d: target rules on 3-d tensors (the seed's
  // transposes) then have shapes to be checked at.
  std::vector<LeafType> types = default_leaf_types(config.leaves_per_type);
  types.push_back(rank3_leaf_type());
  if (d.generic_shapes) d.coverage.typing = DeriveLimits::Typing::Generic;
  CoverageReport r = derive_coverage(base, target, types, d.coverage,
                                     config.threads > 0 ? config.threads : std::thread::hardware_concurrency());
  std::cout << format_coverage(r, d.target_path);
  return 0;
}

int run_merge(const RulegenConfig& config, const MergeValues& m) {
  RulegenResult r = merge_rulegen({m.inputs.begin(), m.inputs.end()}, config);
  save_rulegen_output(r, m.out, m.rejected);
  print_summary(r.stats);
  return 0;
}

// Generation: checks --out, --ops, --shard and --defer-proofs, runs, and records the command line in the corpus.
int run_generate(RulegenConfig& config, const GenerateValues& g, int argc, char** argv) {
  if (g.out.empty()) {
    std::cerr << "rulegen: --out is required\n";
    return 2;
  }
  if (!g.ops.empty()) config.ops = split_list(g.ops);
  if (!g.shard.empty()) {
    int i = -1, n = -1;
    char slash = 0;
    std::istringstream in(g.shard);
    if (!(in >> i >> slash >> n) || slash != '/' || !in.eof() || n < 1 || i < 0 || i >= n) {
      std::cerr << "rulegen: --shard must be i/n with 0 <= i < n, got '" << g.shard << "'\n";
      return 2;
    }
    config.shard_index = i, config.shard_count = n;
  }
  if (config.defer_proofs && config.shard_count < 2) {
    std::cerr << "rulegen: --defer-proofs needs --shard i/n with n >= 2 (one whole run proves lazily already)\n";
    return 2;
  }
  RulegenResult r = run_rulegen(config);
  std::string command = "rulegen";
  for (int k = 1; k < argc; ++k) command += std::string(" ") + argv[k];
  r.corpus.generator["command"] = command;  // how to regenerate this file
  save_rulegen_output(r, g.out, g.rejected.empty() ? g.out + ".rejected.json" : g.rejected);
  print_summary(r.stats);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rulegen: discover, prove and minimize tensor rewrite rules"};
  app.require_subcommand(0, 1);
  RulegenConfig config;
  config.log = [](const std::string& line) { std::cerr << line << "\n"; };
  GenerateValues generate;
  MergeValues merge_values;
  DeriveValues derive_values;
  add_generate_options(app, config, generate);
  CLI::App* merge = add_merge_command(app, config, merge_values);
  CLI::App* derive = add_derive_command(app, config, derive_values);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!no_generation_option_with(app, *merge ? merge : *derive ? derive : nullptr)) return 2;
  try {
    if (*derive) return run_derive(config, derive_values);
    if (*merge) return run_merge(config, merge_values);
    return run_generate(config, generate, argc, argv);
  } catch (const CorpusError& e) {
    std::cerr << "rulegen: " << e.what() << "\n";  // an unreadable or malformed input file
    return 2;
  } catch (const VocabularyError& e) {
    std::cerr << "rulegen: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "rulegen: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rulegen: " << e.what() << "\n";
    return 1;
  }
}
