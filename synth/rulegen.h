// rulegen's pipeline: enumerate -> candidate equations -> drop renamings and common-subgraph rules ->
// prove (prove.h) -> pair unbound equations into two-pattern rules -> minimize by derivability
// (minimize.h) -> generalize repeated variables (generalize.h) -> corpus. A sharded run stops before pairing and minimizing and writes its verified
// equations; `merge` unions shard files (or corpora) and finishes the pipeline, so that shards merged
// give what one run gives. tools/rulegen.cpp is the command line over this header.
// Usage:
//   RulegenResult r = run_rulegen({.ops = {"matmul", "ewadd"}, .max_ops = 2});
//   save_rulegen_output(r, "out.json");   // r.stats.kept rules, every one verified
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rules/corpus.h"
#include "synth/candidates.h"
#include "synth/generalize.h"
#include "synth/minimize.h"
#include "synth/prove.h"

namespace teq::synth {

/// The default cap on distinct shapes the enumeration interns (a count: EnumerateConfig::max_shapes).
inline constexpr uint64_t kDefaultMaxShapes = 0;
/// The default of RulegenConfig::max_last_size_candidates: above all of size 3's distinct candidates (78,910),
/// so size 3 is whole; at size 4 it keeps 200 k of 2.33 M.
inline constexpr uint64_t kDefaultMaxLastSizeCandidates = 200'000;

/// A stage after minimization (RulegenConfig::final_stages).
enum class FinalStage {
  FinalPass,          // drop kept rules derivable from all the other kept rules, largest first
  Generalize,         // split repeated variables apart where the prover allows (generalize.h), drop the instances
  RestoreDropped,     // put back the final passes' drops that the rules kept do not derive (restore_underivable)
  RestoreCandidates,  // put back candidates minimization dropped that derive only together with others
};
/// When a listed stage runs.
enum class StageWhen {
  Always,
  IfGeneralized,  // the last Generalize before it generalized a rule
  IfRestored,     // the restores before it put a rule back
};
struct StageStep {
  FinalStage stage;
  StageWhen when = StageWhen::Always;
};
/// minimize -> final pass -> generalize -> final pass (if it generalized a rule) -> both restores -> final pass
/// and both restores again (if they restored a rule): a generalized or restored rule can make kept ones
/// derivable, and the rules a final pass drops can make dropped ones underivable.
std::vector<StageStep> default_final_stages();

struct RulegenConfig {
  std::vector<std::string> ops = default_op_names();
  int max_ops = 3;
  int max_inputs = 4;
  int threads = 0;  // 0 = all cores
  uint64_t seed = 7;
  double time_limit_s = 0;  // enumeration budget; 0 = none
  int shard_index = 0, shard_count = 1;
  // A shard that defers its proofs proves nothing: it writes its candidates after the cheap refutation, and
  // its unbound equations with their refutations before drop_unpaired, so that `merge` pairs, proves and
  // minimizes exactly what one process would and proves only what that process proves (lazily). Without it
  // a shard proves every candidate, which spreads the proofs but makes many more of them (size 3: about 25x).
  bool defer_proofs = false;
  uint64_t max_shapes = kDefaultMaxShapes;  // EnumerateConfig::max_shapes (0 = no cap)
  // At most this many distinct candidate equations (up to renaming) from the last size, max_ops: a sample
  // fixed by the hash of their text (collect_unique_equations, candidates.h); 0 = all. Per process with shards.
  uint64_t max_last_size_candidates = kDefaultMaxLastSizeCandidates;
  int leaves_per_type = 3;
  std::vector<LeafType> leaf_types;  // empty = default_leaf_types(leaves_per_type)
  bool minimize = true;  // drop rules derivable from the smaller rules kept before them
  // Then these stages, in order (with minimize only). Generalization is placed after both minimization
  // passes so that only the rules kept are tried (a few hundred), and each generalization replaces rules the
  // corpus would otherwise keep as special cases.
  std::vector<StageStep> final_stages = default_final_stages();
  GeneralizeConfig generalization;
  ProveConfig prove;
  // Minimization derives at generic shapes, not at the leaf types' (DeriveLimits::Typing).
  DeriveLimits derive{.typing = DeriveLimits::Typing::Generic};
  size_t minimize_chunk = 256;          // candidates sharing one e-graph during minimization
  size_t batch_node_limit = 60'000;     // e-nodes of that e-graph
  size_t restore_node_limit = 30'000;  // a dropped rule restored unless derivable alone within this (rulegen derive's default)
  // Candidates proved per minimization round. A count of its own, not 16 per thread as before (32 at
  // --threads 2, the corpus's setting): the rounds, and so the kept rules, do not depend on the threads.
  size_t prove_slice = 32;
  std::function<void(const std::string&)> log;  // progress lines (stderr in the CLI); may be empty
};

/// One pipeline phase's figures: what it produced (or dropped), its seconds and the process's peak resident
/// memory when it ended (getrusage; a peak so far, not the phase's own). Informational: nothing is decided by
/// seconds or memory.
struct PhaseStats {
  std::string phase;
  uint64_t count = 0;
  double seconds = 0;
  uint64_t peak_rss_kb = 0;
};

/// How `rulegen merge` combines a figure of the shard files (rulegen_stats.inc).
enum class StatMerge { Sum, Max, Own };

/// The run's figures, one member per line of rulegen_stats.inc (the list says what each counts).
struct RulegenStats {
#define TEQ_STAT(type, member, key, merge, summary) type member = type{};
#include "synth/rulegen_stats.inc"
#undef TEQ_STAT
  std::vector<PhaseStats> phases;  // in pipeline order (enumerate, fingerprint, candidates, ...), logged too
  nlohmann::json to_json() const;
  nlohmann::json phases_json() const;
  /// A shard file's generator.stats: the figures `merge` combines (StatMerge Sum and Max), the others zero.
  static RulegenStats from_shard_json(const nlohmann::json& stats);
  /// Adds a shard's figures: Sum ones added, Max ones the largest; Own ones unchanged.
  RulegenStats& operator+=(const RulegenStats& o);
  /// The figures with summary words, in the list's order ("10161 graphs enumerated, ..., 23.5 s"), and the
  /// truncation if any: the summary line rulegen prints.
  std::string summary_line() const;
};

/// An unbound equation of a shard that defers its proofs, with the cheap refutation's reason when refuted.
struct DeferredUnbound {
  PatternEquation equation;
  std::optional<std::string> refuted;
};

struct RulegenResult {
  RuleCorpus corpus;                      // finished corpus (empty rules for a shard)
  std::vector<Rule> shard_rules;          // a shard's single rules (proved, or unproved with defer_proofs)
  std::vector<PatternEquation> unbound;   // a shard's verified unbound equations
  std::vector<DeferredUnbound> deferred_unbound;  // a shard's unbound equations when it defers its proofs
  // A shard's sample of its last size (RulegenConfig::max_last_size_candidates, `sample_cap`; 0 = none):
  // the hashes of every last-size equation it kept, ascending, and each shard rule's hash (nullopt for the
  // smaller sizes), so that merge keeps the `sample_cap` lowest of all shards together, as one process does.
  uint64_t sample_cap = 0;
  std::vector<uint64_t> last_size_hashes;
  std::vector<std::optional<uint64_t>> shard_rule_hashes;
  std::vector<Rejected> rejected;
  RulegenStats stats;
  bool is_shard = false;
};

/// Runs the pipeline. Throws VocabularyError for unknown operators, std::invalid_argument for bad
/// numbers (max_ops outside 1..5, shard outside 0 <= i < n).
RulegenResult run_rulegen(const RulegenConfig& config);

/// Unions shard files and/or corpora written by rulegen and finishes the pipeline (pairing,
/// minimization) with `config`'s limits; the generation settings that decide the result (max_ops, seed)
/// are the shard files' own. Throws CorpusError for unreadable inputs and for shard files of different
/// runs (their max_ops or seed differ).
RulegenResult merge_rulegen(const std::vector<std::filesystem::path>& inputs, const RulegenConfig& config);

/// Writes the corpus (or a shard file: the corpus format plus "shard" and "unbound" fields) and, when
/// `rejected_path` is non-empty, the side file of unproved candidates.
void save_rulegen_output(const RulegenResult& result, const std::filesystem::path& path,
                         const std::filesystem::path& rejected_path = {});

}  // namespace teq::synth
