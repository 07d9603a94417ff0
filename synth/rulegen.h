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
  bool final_pass = true;  // then drop kept rules derivable from all the other kept rules (largest first)
  bool restore_candidates = true;  // then restore dropped candidates the kept rules do not derive alone
  // Then split repeated variables apart where the prover allows (generalize.h) and drop the special rules
  // the generalizations cover.
  bool generalize = true;
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

struct RulegenStats {
  uint64_t enumerated = 0, classes = 0, candidates = 0, separated_by_second_set = 0;
  uint64_t shapes = 0;          // distinct (set A, set B) shapes interned by the enumeration
  uint64_t shapes_refused = 0;  // applications not enumerated because RulegenConfig::max_shapes was reached
  uint64_t candidates_capped = 0;  // last-size candidates left out by RulegenConfig::max_last_size_candidates
  uint64_t pruned_renaming = 0, pruned_common_subgraph = 0;
  uint64_t pruned_unpaired = 0;  // unbound equations no other equation pairs with
  uint64_t refuted_cheaply = 0;  // false on fingerprint set C (refute_on_third_set): never sent to Z3
  uint64_t proved = 0, wrong = 0, unknown = 0;  // Z3's verdicts (wrong: not counting refuted_cheaply)
  uint64_t multi_candidates = 0, pruned_derivable = 0, kept = 0, kept_multi = 0;
  uint64_t pruned_final = 0;  // dropped by the final passes: derivable from the rules kept after them
  uint64_t restored = 0;      // of those, put back: the rules finally kept do not derive them (restore_underivable)
  uint64_t restored_candidates = 0;  // dropped by minimization, put back (restore_candidates_derived_only_together)
  uint64_t generalized = 0;           // kept rules replaced by a proved generalization (generalize.h)
  uint64_t pruned_instances = 0;      // kept rules dropped as instances of a generalized rule
  uint64_t generalize_proofs = 0, generalize_proved = 0;  // prover calls on split candidates, verified ones
  double generalize_s = 0;
  double restore_s = 0;  // both restores (step 9), each time they run, with their proofs
  uint64_t derivations_stopped_by_clock = 0;  // saturations DeriveLimits::time_limit_s cut (load-dependent)
  double enumerate_s = 0, refute_s = 0, prove_s = 0, minimize_s = 0, seconds = 0;
  bool truncated = false;
  std::vector<PhaseStats> phases;  // in pipeline order (enumerate, fingerprint, candidates, ...), logged too
  nlohmann::json to_json() const;
  nlohmann::json phases_json() const;
  RulegenStats& operator+=(const RulegenStats& o);
};

/// A candidate that did not make it into the corpus because it was not proved.
struct Rejected {
  std::string lhs, rhs;  // pattern texts (" ; " between patterns)
  std::string status, reason;
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
