#include "synth/rulegen.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>

#include <sys/resource.h>

#include "rules/sexpr.h"
#include "synth/enumerate.h"
#include "synth/parallel.h"

namespace teq::synth {

std::vector<StageStep> default_final_stages() {
  using enum FinalStage;
  return {{FinalPass},
          {Generalize},
          {FinalPass, StageWhen::IfGeneralized},
          {RestoreDropped},
          {RestoreCandidates},
          {FinalPass, StageWhen::IfRestored},
          {RestoreDropped, StageWhen::IfRestored},
          {RestoreCandidates, StageWhen::IfRestored}};
}

nlohmann::json RulegenStats::to_json() const {
  nlohmann::json out;
#define TEQ_STAT(type, member, key, merge, summary) out[key] = member;
#include "synth/rulegen_stats.inc"
#undef TEQ_STAT
  out["phases"] = phases_json();
  return out;
}

nlohmann::json RulegenStats::phases_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const PhaseStats& p : phases)
    out.push_back({{"phase", p.phase}, {"count", p.count}, {"seconds", p.seconds}, {"peak_rss_mb", p.peak_rss_kb / 1024}});
  return out;
}

namespace {

template <StatMerge M, class T>
void combine(T& into, const T& value) {
  if constexpr (M == StatMerge::Sum) into += value;
  else if constexpr (M == StatMerge::Max) into = std::max(into, value);
}

template <StatMerge M, class T>
void read_stat(const nlohmann::json& stats, const char* key, T& into) {
  if constexpr (M != StatMerge::Own) into = stats.value(key, T{});
}

/// `words` (rulegen_stats.inc's summary column) after `value` on the summary line.
template <class T>
void add_to_summary(std::ostringstream& out, bool& first, const T& value, std::string_view words) {
  if (words.empty()) return;
  if (words.front() == '(') {
    out << " (" << value << " " << words.substr(1) << ")";
    return;
  }
  out << (first ? "" : ", ") << value << " " << words;
  first = false;
}

}  // namespace

RulegenStats& RulegenStats::operator+=(const RulegenStats& o) {
#define TEQ_STAT(type, member, key, merge, summary) combine<StatMerge::merge>(member, o.member);
#include "synth/rulegen_stats.inc"
#undef TEQ_STAT
  return *this;
}

RulegenStats RulegenStats::from_shard_json(const nlohmann::json& stats) {
  RulegenStats part;
#define TEQ_STAT(type, member, key, merge, summary) read_stat<StatMerge::merge>(stats, key, part.member);
#include "synth/rulegen_stats.inc"
#undef TEQ_STAT
  return part;
}

std::string RulegenStats::summary_line() const {
  std::ostringstream out;
  bool first = true;
#define TEQ_STAT(type, member, key, merge, summary) add_to_summary(out, first, member, summary);
#include "synth/rulegen_stats.inc"
#undef TEQ_STAT
  if (truncated) out << " (enumeration stopped by --time-limit)";
  return out.str();
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string rule_id(size_t index, const Rule& r) {
  char buf[32];  // "rg-" and up to 20 digits of a size_t
  std::snprintf(buf, sizeof buf, "rg-%04zu", index);
  std::string id = buf;
  id += "-" + std::string(op_name(r.lhs[0][r.lhs[0].root()].op));
  id += "-" + std::string(op_name(r.rhs[0][r.rhs[0].root()].op));
  if (r.is_multi()) id += "-multi";
  return id;
}

void log_line(const RulegenConfig& c, const std::string& s) {
  if (c.log) c.log(s);
}

uint64_t peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss);  // kilobytes on Linux
}

/// Records a finished phase in the stats and on the log (informational: timings decide nothing).
void mark_phase(RulegenStats& st, const RulegenConfig& c, const std::string& phase, uint64_t count, double seconds) {
  PhaseStats p{phase, count, seconds, peak_rss_kb()};
  char buf[160];
  std::snprintf(buf, sizeof buf, "rulegen: phase %s: %llu, %.1f s, peak %llu MB", phase.c_str(),
                static_cast<unsigned long long>(count), seconds, static_cast<unsigned long long>(p.peak_rss_kb / 1024));
  log_line(c, buf);
  st.phases.push_back(std::move(p));
}

/// The verdict of refute_on_third_set for each equation, in parallel (each call draws its own values from
/// the seed, so the verdicts do not depend on the thread count).
std::vector<std::optional<std::string>> refute_all(const std::vector<PatternEquation>& eqs,
                                                   const std::vector<LeafType>& types, uint64_t seed, int threads) {
  std::vector<std::optional<std::string>> out(eqs.size());
  parallel_for(eqs.size(), threads, [&](size_t i) { out[i] = refute_on_third_set(eqs[i], types, seed); });
  return out;
}

/// The phases after the proofs: `lazy_prove_s` is the part of the proving time spent inside minimization
/// (proofs are made lazily there), so the minimized phase's seconds are its saturations alone.
void mark_final_phases(RulegenStats& st, const RulegenConfig& c, double lazy_prove_s, double total_s) {
  mark_phase(st, c, "proved", st.proved, st.prove_s);
  mark_phase(st, c, "minimized", st.pruned_derivable + st.pruned_final,
             st.minimize_s - lazy_prove_s - st.generalize_s - st.restore_s);
  auto listed = [&](FinalStage s) {
    return c.minimize && std::ranges::any_of(c.final_stages, [&](const StageStep& step) { return step.stage == s; });
  };
  if (listed(FinalStage::Generalize)) mark_phase(st, c, "generalized", st.generalized, st.generalize_s);
  if (listed(FinalStage::RestoreDropped) || listed(FinalStage::RestoreCandidates))
    mark_phase(st, c, "restored", st.restored + st.restored_candidates, st.restore_s);
  mark_phase(st, c, "kept", st.kept, total_s);
}

/// Minimization's settings out of rulegen's.
MinimizeConfig minimize_config(const RulegenConfig& c) {
  return {.minimize = c.minimize,
          .threads = c.threads,
          .prove = c.prove,
          .derive = c.derive,
          .minimize_chunk = c.minimize_chunk,
          .batch_node_limit = c.batch_node_limit,
          .restore_node_limit = c.restore_node_limit,
          .prove_slice = c.prove_slice,
          .log = c.log};
}

/// What minimization's or a restore's proofs found, into rulegen's statistics and list of unproved candidates.
void add_proofs(RulegenResult& result, ProofTally proofs) {
  result.stats.proved += proofs.proved, result.stats.wrong += proofs.wrong, result.stats.unknown += proofs.unknown;
  result.stats.prove_s += proofs.prove_s;
  std::ranges::move(proofs.rejected, std::back_inserter(result.rejected));
}

/// What the stages after minimization share: the kept rules, the dropped ones they may put back, and what
/// their conditions read.
struct StageRun {
  const RulegenConfig& config;
  const MinimizeConfig& minimize;
  const std::vector<LeafType>& types;
  std::vector<Rule>& kept;
  std::vector<Rule>& derivable;  // dropped by minimization in a shared e-graph
  RulegenResult& result;
  std::vector<Rule> dropped_by_final_passes = {};
  RestoreMemo memo = {};  // the second restores reuse the first ones' verdicts where the saturation is the same
  uint64_t generalized = 0;  // by the last Generalize
  uint64_t restored = 0;     // by the restores so far
  std::optional<FinalStage> last = {};  // the stage that ran last
};

void final_pass(StageRun& run) {
  const std::string which = !run.last                             ? ""
                            : *run.last == FinalStage::Generalize ? " after generalization"
                                                                  : " after restoring";
  log_line(run.config, "rulegen: final pass" + which + " over " + std::to_string(run.kept.size()) +
                           " kept rules, largest first");
  auto start = Clock::now();
  const size_t removed = drop_derivable_from_the_rest(run.kept, run.types, run.minimize, &run.dropped_by_final_passes);
  run.result.stats.pruned_final += removed;
  log_line(run.config, "rulegen: final pass" + which + " dropped " + std::to_string(removed) + " rules in " +
                           std::to_string(static_cast<int>(since(start))) + " s");
}

void generalize(StageRun& run) {
  const RulegenConfig& config = run.config;
  RulegenStats& st = run.result.stats;
  auto start = Clock::now();
  GeneralizeConfig gc = config.generalization;
  gc.seed = config.seed;
  gc.prove = config.prove;
  GeneralizedRules generalized = generalize_rules(std::move(run.kept), run.types, gc, thread_count(config.threads));
  run.kept = std::move(generalized.rules);
  const GeneralizeStats& gs = generalized.stats;
  st.generalized = gs.generalized;
  st.pruned_instances = gs.dropped;
  st.generalize_proofs = gs.proofs;
  st.generalize_proved = gs.proved;
  st.generalize_s = since(start);
  run.generalized = gs.generalized;
  log_line(config, "rulegen: generalized " + std::to_string(gs.generalized) + " rules by splitting variables (" +
                       std::to_string(gs.proofs) + " proofs, " + std::to_string(gs.proved) + " verified), dropped " +
                       std::to_string(gs.dropped) + " instances of them, in " +
                       std::to_string(static_cast<int>(st.generalize_s)) + " s");
}

void restore_dropped(StageRun& run) {
  auto start = Clock::now();
  const size_t n = restore_underivable(run.kept, run.dropped_by_final_passes, run.types, run.minimize, &run.memo);
  run.result.stats.restored += n, run.restored += n;
  run.result.stats.restore_s += since(start);
  log_line(run.config, "rulegen: restored " + std::to_string(n) + " of the final passes' " +
                           std::to_string(run.dropped_by_final_passes.size()) +
                           " dropped rules that the rules kept do not derive, in " +
                           std::to_string(static_cast<int>(since(start))) + " s");
}

void restore_candidates(StageRun& run) {
  auto start = Clock::now();
  RestoreResult restore =
      restore_candidates_derived_only_together(run.kept, run.derivable, run.types, run.minimize, &run.memo);
  add_proofs(run.result, std::move(restore.proofs));
  const size_t n = restore.restored;
  run.result.stats.restored_candidates += n, run.restored += n;
  run.result.stats.restore_s += since(start);
  log_line(run.config, "rulegen: restored " + std::to_string(n) +
                           " candidates that derive only together with others, in " +
                           std::to_string(static_cast<int>(since(start))) + " s");
}

/// RulegenConfig::final_stages over the kept rules, each where its condition holds.
void run_final_stages(const RulegenConfig& config, const MinimizeConfig& minimize, const std::vector<LeafType>& types,
                      std::vector<Rule>& kept, std::vector<Rule>& derivable, RulegenResult& result) {
  StageRun run{config, minimize, types, kept, derivable, result};
  for (const StageStep& step : config.final_stages) {
    if ((step.when == StageWhen::IfGeneralized && run.generalized == 0) ||
        (step.when == StageWhen::IfRestored && run.restored == 0))
      continue;
    switch (step.stage) {
      case FinalStage::FinalPass: final_pass(run); break;
      case FinalStage::Generalize: generalize(run); break;
      case FinalStage::RestoreDropped: restore_dropped(run); break;
      case FinalStage::RestoreCandidates: restore_candidates(run); break;
    }
    run.last = step.stage;
  }
}

/// Pairing, renaming dedup of the whole set, minimization, ids: the part of the pipeline that needs
/// every shard's results.
void finish(std::vector<Rule> singles, std::vector<PatternEquation> unbound, const RulegenConfig& config,
            const std::vector<LeafType>& types, RulegenResult& result) {
  auto start = Clock::now();
  const uint64_t clock_stops_before = saturations_stopped_by_clock();
  // Deterministic order whatever the order of the inputs (shards, threads).
  std::sort(unbound.begin(), unbound.end(), [](const PatternEquation& a, const PatternEquation& b) {
    return std::pair(to_sexpr(a.lhs, a.lhs.root()), to_sexpr(a.rhs, a.rhs.root())) <
           std::pair(to_sexpr(b.lhs, b.lhs.root()), to_sexpr(b.rhs, b.rhs.root()));
  });
  std::vector<Rule> multis = pair_multi_rules(unbound, config.max_ops + 1);
  result.stats.multi_candidates = multis.size();
  // Two-pattern rules are proved whole, like single ones, when minimization keeps them: each pattern pair
  // holding as an equation is not enough, as the pairs may hold under different shape conditions (two
  // splits cut at one reference whose concats have different extents; ruleverify refuted such a rule).
  Pruned<OrderedCandidate> ordered = ordered_unique_candidates(std::move(singles), std::move(multis));
  result.stats.pruned_renaming += ordered.dropped;
  std::vector<OrderedCandidate>& unique = ordered.kept;
  const MinimizeConfig minimize = minimize_config(config);
  MinimizeResult minimized = minimize_candidates(unique, minimize, types);
  result.stats.pruned_derivable += minimized.pruned_derivable;
  add_proofs(result, std::move(minimized.proofs));
  std::vector<Rule>& kept = minimized.kept;
  if (config.minimize) run_final_stages(config, minimize, types, kept, minimized.derivable, result);
  for (size_t i = 0; i < kept.size(); ++i) {
    kept[i].id = rule_id(i, kept[i]);
    result.stats.kept_multi += kept[i].is_multi();
  }
  result.stats.kept = kept.size();
  result.corpus.rules = std::move(kept);
  result.stats.derivations_stopped_by_clock = saturations_stopped_by_clock() - clock_stops_before;
  result.stats.minimize_s = since(start);
}

/// Appends a single-rule candidate made from `q`, with q's sample hash beside it in `result` (a shard
/// writes them for merge, which applies --max-last-size-candidates to all shards together).
void add_single(std::vector<Rule>& singles, RulegenResult& result, Rule rule, const PatternEquation& q) {
  singles.push_back(std::move(rule));
  result.shard_rule_hashes.push_back(q.sample_hash);
}

/// Z3's verdict on each equation, in parallel, with progress on the log every 2000 proofs.
std::vector<ProofResult> prove_equations(const std::vector<PatternEquation>& eqs, const RulegenConfig& config,
                                         int threads) {
  auto start = Clock::now();
  std::vector<ProofResult> proofs(eqs.size());
  std::atomic<size_t> done{0};
  parallel_for(eqs.size(), threads, [&](size_t i) {
    proofs[i] = prove_rule(single_rule({}, eqs[i]), config.prove);
    size_t d = ++done;
    if (d % 2000 == 0) {
      const double spent = since(start);
      log_line(config, "rulegen: proved " + std::to_string(d) + "/" + std::to_string(eqs.size()) + ", " +
                           std::to_string(static_cast<int>(spent)) + " s, about " +
                           std::to_string(static_cast<int>(spent / d * (eqs.size() - d))) + " s left");
    }
  });
  return proofs;
}

/// Sorts the pruned candidates into single rules (proved lazily by minimization) and equations to prove now
/// (`eager`: unbound ones, and every one in a shard), after refuting the false ones it can on set C. A
/// refuted single rule stays in the stream with its verdict, as a shard's failed proofs do: minimization
/// then sees the same candidates in the same chunks and rounds as without the refutation (only the Z3 call
/// is saved), so the kept rules do not change. A refuted unbound equation is rejected at once (only proved
/// ones are paired). A shard that defers its proofs keeps every unbound equation, refuted or not, in
/// `result.deferred_unbound`: merge decides which pair (drop_unpaired) before the refutations, as one process.
void split_candidates(std::vector<PatternEquation> to_prove, const std::vector<LeafType>& types,
                      const RulegenConfig& config, int threads, RulegenResult& result, std::vector<Rule>& singles,
                      std::vector<PatternEquation>& eager) {
  RulegenStats& st = result.stats;
  auto refute_start = Clock::now();
  std::vector<std::optional<std::string>> refuted = refute_all(to_prove, types, config.seed, threads);
  st.refute_s = since(refute_start);
  const bool deferred = result.is_shard && config.defer_proofs;
  for (size_t i = 0; i < to_prove.size(); ++i) {
    PatternEquation& q = to_prove[i];
    if (refuted[i]) ++st.refuted_cheaply;
    if (deferred && !q.bound) {
      result.deferred_unbound.push_back({std::move(q), std::move(refuted[i])});
      continue;
    }
    if (refuted[i]) {
      const std::string reason = "refuted cheaply: " + *refuted[i];
      if (q.bound) {
        Rule r = single_rule("candidate", q);
        r.verification = Verification{"wrong", reason, 0};
        add_single(singles, result, std::move(r), q);
      } else {
        result.rejected.push_back({to_sexpr(q.lhs, q.lhs.root()), to_sexpr(q.rhs, q.rhs.root()), "wrong", reason});
      }
      continue;
    }
    if ((result.is_shard && !deferred) || !q.bound) eager.push_back(std::move(q));
    else add_single(singles, result, single_rule("candidate", q), q);
  }
  mark_phase(st, config, "refuted cheaply", st.refuted_cheaply, st.refute_s);
}

/// The enumeration's settings from rulegen's, with its progress on the log.
EnumerateConfig enumerate_config(const RulegenConfig& config) {
  EnumerateConfig ec;
  ec.max_ops = config.max_ops;
  ec.max_inputs = config.max_inputs;
  ec.threads = thread_count(config.threads);
  ec.seed = config.seed;
  ec.time_limit_s = config.time_limit_s;
  ec.shard_index = config.shard_index;
  ec.shard_count = config.shard_count;
  ec.max_shapes = config.max_shapes;
  ec.on_progress = [&config, last_t = 0.0, last_terms = uint64_t{0}](const EnumerateProgress& p) mutable {
    double rate = p.seconds > last_t ? (p.terms - last_terms) / (p.seconds - last_t) : 0;
    last_t = p.seconds, last_terms = p.terms;
    std::string line = "rulegen: size " + std::to_string(p.level) + ": " + std::to_string(p.terms) + " graphs (" +
                       std::to_string(static_cast<uint64_t>(rate)) + "/s), " + std::to_string(p.classes) +
                       " classes, " + std::to_string(p.candidates) + " candidates, " + std::to_string(p.shapes) +
                       " shapes (" + std::to_string(p.live_shapes) + " live, " + std::to_string(p.operand_pairs) +
                       " operand pairs" +
                       (p.shapes_refused ? ", " + std::to_string(p.shapes_refused) + " refused by --max-shapes" : "") +
                       "), " + std::to_string(static_cast<int>(p.seconds)) + " s";
    if (p.done > 0.01 && p.done < 1) {
      const double spent = p.level_seconds;
      line += ", " + std::to_string(static_cast<int>(100 * p.done)) + "% of the size, about " +
              std::to_string(static_cast<int>(spent / p.done - spent)) + " s left";
    }
    log_line(config, line);
  };
  return ec;
}

/// The verdicts on the equations proved before minimization: verified single rules join `singles`, verified
/// unbound equations `result.unbound`, the others are rejected (a shard keeps its single ones with their
/// verdict for merge).
void take_proofs(std::vector<PatternEquation>& eager, const std::vector<ProofResult>& proofs, RulegenResult& result,
                 std::vector<Rule>& singles) {
  RulegenStats& st = result.stats;
  for (size_t i = 0; i < eager.size(); ++i) {
    const ProofResult& p = proofs[i];
    if (p.status != "verified" && result.is_shard && eager[i].bound) {
      // Kept with its verdict: merge must see the same candidates as one whole run (they take part in
      // the same minimization rounds) and reports them as rejected without proving them again.
      (p.status == "wrong" ? st.wrong : st.unknown)++;
      Rule r = single_rule("candidate", eager[i]);
      r.verification = Verification{p.status, "z3-elementwise: " + p.reason, p.ms};
      add_single(singles, result, std::move(r), eager[i]);
      continue;
    }
    if (p.status != "verified") {
      (p.status == "wrong" ? st.wrong : st.unknown)++;
      result.rejected.push_back({to_sexpr(eager[i].lhs, eager[i].lhs.root()),
                                 to_sexpr(eager[i].rhs, eager[i].rhs.root()), p.status, p.reason});
      continue;
    }
    ++st.proved;
    if (eager[i].bound) {
      Rule r = single_rule("candidate", eager[i]);
      r.verification = Verification{"verified", "z3-elementwise", p.ms};
      r.same_shape = p.same_shape;
      r.conv_groupings = p.conv_groupings;
      add_single(singles, result, std::move(r), eager[i]);
    } else {
      result.unbound.push_back(std::move(eager[i]));
    }
  }
}

/// generator in the corpus: how it was made, and the statistics.
nlohmann::json generator_json(const RulegenConfig& config, const std::vector<std::string>& op_names,
                              const RulegenResult& result) {
  nlohmann::json gen = {{"program", "rulegen"},
                        {"ops", op_names},
                        {"max_ops", config.max_ops},
                        {"max_inputs", config.max_inputs},
                        {"seed", config.seed},
                        {"stats", result.stats.to_json()}};
  if (result.is_shard)
    gen["shard"] = {{"index", config.shard_index},
                    {"count", config.shard_count},
                    {"proofs", config.defer_proofs ? "deferred" : "made"}};
  return gen;
}

}  // namespace

RulegenResult run_rulegen(const RulegenConfig& config) {
  auto start = Clock::now();
  Vocabulary vocab = make_vocabulary(
      config.ops, config.leaf_types.empty() ? default_leaf_types(config.leaves_per_type) : config.leaf_types);
  if (config.max_inputs < 1) throw std::invalid_argument("--max-inputs must be at least 1");
  const EnumerateConfig ec = enumerate_config(config);
  Enumeration e = enumerate_terms(vocab, ec);
  RulegenResult result;
  result.is_shard = config.shard_count > 1;
  RulegenStats& st = result.stats;
  st.enumerated = e.total_terms();
  st.classes = e.classes.size();
  st.candidates = e.equations.size();
  st.shapes = e.shapes.size();
  st.shapes_refused = e.shapes_refused;
  if (e.shapes_refused > 0)
    log_line(config, "rulegen: " + std::to_string(e.shapes_refused) + " applications not enumerated: their output " +
                         "would exceed --max-shapes " + std::to_string(config.max_shapes) + " distinct shapes");
  st.truncated = e.truncated;
  for (const LevelStats& l : e.levels) st.separated_by_second_set += l.separated;
  st.enumerate_s = e.seconds;

  mark_phase(st, config, "enumerate", st.enumerated, e.seconds);
  mark_phase(st, config, "fingerprint", st.classes, 0);  // computed in enumeration's pass: its seconds are there
  auto prune_start = Clock::now();
  // Renamings and common subgraphs are dropped before proving: proofs are the expensive part.
  log_line(config, "rulegen: turning " + std::to_string(e.equations.size()) + " equations into patterns, renamings dropped");
  // A shard's cap keeps its own lowest hashes, a superset of what the cap keeps of all shards together in
  // this shard; it writes the hashes so that merge can take the lowest of all (merge_rulegen).
  const bool sampled_shard = result.is_shard && config.max_last_size_candidates > 0;
  UniqueEquations unique =
      collect_unique_equations(e, config.max_last_size_candidates, sampled_shard ? &result.last_size_hashes : nullptr);
  st.pruned_renaming += unique.renamings;
  st.candidates_capped += unique.capped;
  std::vector<PatternEquation> todo = std::move(unique.equations);
  if (sampled_shard) result.sample_cap = config.max_last_size_candidates;
  if (st.candidates_capped > 0)
    log_line(config, "rulegen: " + std::to_string(st.candidates_capped) + " distinct candidates of size " +
                         std::to_string(config.max_ops) + " left out by --max-last-size-candidates " +
                         std::to_string(config.max_last_size_candidates) + " (kept: the lowest hashes of their text)");
  e = Enumeration{};  // its classes and equations are not needed any more
  std::vector<char> common(todo.size(), 0);
  parallel_for(todo.size(), ec.threads, [&](size_t i) {
    common[i] = todo[i].bound && has_common_subgraph(todo[i], vocab.leaf_types, config.seed);
  });
  std::vector<PatternEquation> to_prove;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (common[i]) ++st.pruned_common_subgraph;
    else to_prove.push_back(std::move(todo[i]));
  }
  // A shard proves all of its candidates (the proofs are what sharding spreads over machines); one
  // whole run proves only the unbound equations here (pairing needs them proved) and leaves the single
  // rules to finish(), which proves just those that the rules kept before them do not derive.
  // Unbound equations that pair with none cannot become rules: not worth a proof. (A shard cannot
  // tell: its equations may pair with another shard's.)
  if (!result.is_shard) {
    Pruned<PatternEquation> paired = drop_unpaired(std::move(to_prove), config.max_ops + 1);
    st.pruned_unpaired += paired.dropped;
    to_prove = std::move(paired.kept);
  }
  mark_phase(st, config, "candidates", to_prove.size(), since(prune_start));
  std::vector<Rule> singles;
  std::vector<PatternEquation> eager;
  split_candidates(std::move(to_prove), vocab.leaf_types, config, ec.threads, result, singles, eager);
  log_line(config, "rulegen: " + std::to_string(singles.size() + eager.size()) + " candidates (" +
                       std::to_string(st.pruned_renaming) + " renamings and " +
                       std::to_string(st.pruned_common_subgraph) + " common-subgraph rules dropped); proving " +
                       std::to_string(eager.size()) + " now" +
                       (result.deferred_unbound.empty() ? std::string()
                                                        : " (" + std::to_string(result.deferred_unbound.size()) +
                                                              " unbound equations and the rest deferred to merge)") +
                       (singles.empty() || result.is_shard ? "" : ", the rest while minimizing"));
  auto prove_start = Clock::now();
  const std::vector<ProofResult> proofs = prove_equations(eager, config, ec.threads);
  st.prove_s = since(prove_start);
  take_proofs(eager, proofs, result, singles);
  if (result.is_shard) {
    result.shard_rules = std::move(singles);
    mark_phase(st, config, "proved", st.proved, st.prove_s);
  } else {
    std::vector<PatternEquation> unbound = std::move(result.unbound);
    result.unbound.clear();
    const double eager_prove_s = st.prove_s;
    finish(std::move(singles), std::move(unbound), config, vocab.leaf_types, result);
    mark_final_phases(st, config, st.prove_s - eager_prove_s, since(start));
  }
  st.seconds = since(start);
  result.corpus.generator = generator_json(config, vocab.op_names, result);
  return result;
}

namespace {

nlohmann::json hash_json(const std::optional<uint64_t>& h) { return h ? nlohmann::json(*h) : nlohmann::json(nullptr); }

std::optional<uint64_t> hash_at(const nlohmann::json& entry, size_t index) {
  if (entry.size() > index && entry.at(index).is_number_unsigned()) return entry.at(index).get<uint64_t>();
  return std::nullopt;
}

/// An unbound equation of a shard file: [lhs, rhs] or, with its last-size sample hash, [lhs, rhs, hash].
PatternEquation unbound_equation(const nlohmann::json& entry, size_t hash_index) {
  PatternEquation q;
  q.lhs = parse_pattern(entry.at(0).get<std::string>());
  q.rhs = parse_pattern(entry.at(1).get<std::string>());
  q.bound = false;
  q.sample_hash = hash_at(entry, hash_index);
  return q;
}

/// The last-size samples of the shards (generator.last_size_sample): together, the candidates one process's
/// --max-last-size-candidates keeps are the `cap` lowest hashes of all shards' own samples, since each
/// shard kept its own lowest.
struct UnionOfSamples {
  uint64_t cap = 0;
  uint64_t distinct = 0;  // the last size's distinct candidates in all shards, kept or capped there
  std::vector<uint64_t> hashes;

  void add(const std::filesystem::path& path, const nlohmann::json& gen) {
    if (!gen.contains("last_size_sample")) return;
    const auto& sample = gen["last_size_sample"];
    const uint64_t c = sample.at("cap").get<uint64_t>();
    if (cap != 0 && c != cap)
      throw CorpusError(path.string() + ": a shard capped at " + std::to_string(c) + " candidates, another at " +
                        std::to_string(cap));
    cap = c;
    const auto& h = sample.at("hashes");
    hashes.insert(hashes.end(), h.begin(), h.end());
    distinct += h.size() + gen.value("stats", nlohmann::json::object()).value("candidates_capped", 0ull);
  }
};

/// Drops from `items` those whose sample hash is above `threshold` (the smaller sizes have none).
template <class T, class HashOf>
void keep_sampled(std::vector<T>& items, uint64_t threshold, HashOf hash_of) {
  std::erase_if(items, [&](const T& x) {
    const std::optional<uint64_t> h = hash_of(x);
    return h && *h > threshold;
  });
}

/// The shards that deferred their proofs left their unbound equations unpaired and unproved: merge does
/// what one process does with them (drop_unpaired before the refutations, then the proofs) and appends the
/// verified ones to `unbound`. Every shard has the smaller sizes' equations, so they are made unique first.
void prove_deferred_unbound(std::vector<DeferredUnbound> deferred, const RulegenConfig& config,
                            RulegenResult& result, std::vector<PatternEquation>& unbound) {
  if (deferred.empty()) return;
  auto texts = [](const DeferredUnbound& d) {
    return std::pair(to_sexpr(d.equation.lhs, d.equation.lhs.root()), to_sexpr(d.equation.rhs, d.equation.rhs.root()));
  };
  std::sort(deferred.begin(), deferred.end(), [&](const auto& a, const auto& b) { return texts(a) < texts(b); });
  deferred.erase(std::unique(deferred.begin(), deferred.end(), [&](const auto& a, const auto& b) { return texts(a) == texts(b); }),
                 deferred.end());
  std::vector<PatternEquation> equations;
  for (const DeferredUnbound& d : deferred) equations.push_back(d.equation);
  std::vector<char> paired;
  pair_multi_rules(equations, config.max_ops + 1, &paired);
  std::vector<PatternEquation> to_prove;
  RulegenStats& st = result.stats;
  for (size_t i = 0; i < deferred.size(); ++i) {
    const PatternEquation& q = equations[i];
    if (!paired[i]) ++st.pruned_unpaired;
    else if (deferred[i].refuted)
      result.rejected.push_back(
          {to_sexpr(q.lhs, q.lhs.root()), to_sexpr(q.rhs, q.rhs.root()), "wrong", "refuted cheaply: " + *deferred[i].refuted});
    else to_prove.push_back(q);
  }
  log_line(config, "rulegen: merge: " + std::to_string(deferred.size()) + " deferred unbound equations, " +
                       std::to_string(st.pruned_unpaired) + " without a pair; proving " + std::to_string(to_prove.size()));
  auto prove_start = Clock::now();
  const std::vector<ProofResult> proofs = prove_equations(to_prove, config, thread_count(config.threads));
  st.prove_s += since(prove_start);
  for (size_t i = 0; i < to_prove.size(); ++i) {
    const ProofResult& p = proofs[i];
    if (p.status == "verified") {
      ++st.proved;
      unbound.push_back(std::move(to_prove[i]));
      continue;
    }
    (p.status == "wrong" ? st.wrong : st.unknown)++;
    result.rejected.push_back({to_sexpr(to_prove[i].lhs, to_prove[i].lhs.root()),
                               to_sexpr(to_prove[i].rhs, to_prove[i].rhs.root()), p.status, p.reason});
  }
}

/// The settings of a shard's run that decide what merge makes of it: pairing's bound (max_ops),
/// generalization's numeric test (seed) and the leaf types, which the vocabulary (ops) extends (transpose3d
/// brings rank-3 leaves: without them generalization and the restores typed ?t variables otherwise than one
/// process). Shard files of different runs cannot be merged.
struct ShardSettings {
  std::optional<std::filesystem::path> first;
  std::vector<std::string> ops;

  void adopt(const std::filesystem::path& path, const nlohmann::json& gen, RulegenConfig& config) {
    if (!gen.is_object() || !gen.contains("shard")) return;  // a finished corpus: its rules are kept as they are
    const int max_ops = gen.value("max_ops", config.max_ops);
    const uint64_t seed = gen.value("seed", config.seed);
    const auto shard_ops = gen.value("ops", std::vector<std::string>{});
    if (first && (max_ops != config.max_ops || seed != config.seed || shard_ops != ops))
      throw CorpusError(path.string() + ": a shard of another run (max_ops " + std::to_string(max_ops) + ", seed " +
                        std::to_string(seed) + ", " + std::to_string(shard_ops.size()) + " operators) than " +
                        first->string() + " (max_ops " + std::to_string(config.max_ops) + ", seed " +
                        std::to_string(config.seed) + ", " + std::to_string(ops.size()) + " operators)");
    config.max_ops = max_ops, config.seed = seed, ops = shard_ops;
    if (!first) first = path;
  }

  /// The leaf types the shards' run used: `base`, with those its vocabulary adds.
  std::vector<LeafType> leaf_types(std::vector<LeafType> base) const {
    return ops.empty() ? base : make_vocabulary(ops, std::move(base)).leaf_types;
  }
};

}  // namespace

RulegenResult merge_rulegen(const std::vector<std::filesystem::path>& inputs, const RulegenConfig& merge_config) {
  auto start = Clock::now();
  RulegenConfig config = merge_config;
  ShardSettings shard_settings;
  RulegenResult result;
  std::vector<Rule> singles;
  std::vector<PatternEquation> unbound;
  std::vector<std::optional<uint64_t>> single_hashes;  // beside `singles`
  std::vector<DeferredUnbound> deferred;
  UnionOfSamples samples;
  nlohmann::json sources = nlohmann::json::array();
  nlohmann::json first_gen;
  for (const auto& path : inputs) {
    RuleCorpus c = load_corpus(path);
    if (first_gen.is_null()) first_gen = c.generator;
    shard_settings.adopt(path, c.generator, config);
    samples.add(path, c.generator);
    sources.push_back(path.filename().string());
    const nlohmann::json no_hashes = nlohmann::json::array();
    const nlohmann::json& rule_hashes =
        c.generator.contains("last_size_sample") ? c.generator["last_size_sample"].at("rule_hashes") : no_hashes;
    for (size_t i = 0; i < c.rules.size(); ++i) {
      singles.push_back(std::move(c.rules[i]));
      single_hashes.push_back(i < rule_hashes.size() && rule_hashes[i].is_number_unsigned()
                                  ? std::optional(rule_hashes[i].get<uint64_t>())
                                  : std::nullopt);
    }
    if (c.generator.contains("unbound"))
      for (const auto& pair : c.generator["unbound"]) unbound.push_back(unbound_equation(pair, 2));
    if (c.generator.contains("unbound_deferred"))
      for (const auto& entry : c.generator["unbound_deferred"]) {
        std::optional<std::string> refuted;
        if (entry.size() > 2 && entry.at(2).is_string()) refuted = entry.at(2).get<std::string>();
        deferred.push_back({unbound_equation(entry, 3), std::move(refuted)});
      }
    if (c.generator.contains("stats")) result.stats += RulegenStats::from_shard_json(c.generator["stats"]);
  }
  if (const std::optional<uint64_t> threshold = sample_threshold(samples.hashes, samples.cap)) {
    // The cap of all shards together: what one process's --max-last-size-candidates keeps.
    std::vector<Rule> kept;
    for (size_t i = 0; i < singles.size(); ++i)
      if (!single_hashes[i] || *single_hashes[i] <= *threshold) kept.push_back(std::move(singles[i]));
    singles = std::move(kept);
    keep_sampled(unbound, *threshold, [](const PatternEquation& q) { return q.sample_hash; });
    keep_sampled(deferred, *threshold, [](const DeferredUnbound& d) { return d.equation.sample_hash; });
    result.stats.candidates_capped = samples.distinct - samples.cap;
    log_line(config, "rulegen: merge: " + std::to_string(result.stats.candidates_capped) + " distinct candidates of size " +
                         std::to_string(config.max_ops) + " left out by --max-last-size-candidates " +
                         std::to_string(samples.cap) + " over all shards (kept: the lowest hashes of their text)");
  }
  const std::vector<LeafType> types = shard_settings.leaf_types(
      config.leaf_types.empty() ? default_leaf_types(config.leaves_per_type) : config.leaf_types);
  prove_deferred_unbound(std::move(deferred), config, result, unbound);
  const double shard_prove_s = result.stats.prove_s;
  result.stats.phases.clear();
  finish(std::move(singles), std::move(unbound), config, types, result);
  mark_final_phases(result.stats, config, result.stats.prove_s - shard_prove_s, since(start));
  result.stats.seconds = since(start);
  nlohmann::json gen = first_gen.is_object() ? first_gen : nlohmann::json::object();
  gen.erase("shard");
  gen.erase("unbound");
  gen.erase("unbound_deferred");
  gen.erase("last_size_sample");
  gen["merged_from"] = sources;
  gen["stats"] = result.stats.to_json();
  result.corpus.generator = gen;
  return result;
}

void save_rulegen_output(const RulegenResult& result, const std::filesystem::path& path,
                         const std::filesystem::path& rejected_path) {
  RuleCorpus out = result.corpus;
  if (result.is_shard) {
    for (size_t i = 0; i < result.shard_rules.size(); ++i) {
      Rule r = result.shard_rules[i];
      r.id = "shard-" + std::to_string(i);
      out.rules.push_back(std::move(r));
    }
    // Sample hashes are written only where merge needs them (the cap bound or may bind in the union).
    const bool sampled = result.sample_cap > 0;
    nlohmann::json unbound = nlohmann::json::array();
    for (const PatternEquation& q : result.unbound) {
      unbound.push_back({to_sexpr(q.lhs, q.lhs.root()), to_sexpr(q.rhs, q.rhs.root())});
      if (sampled) unbound.back().push_back(hash_json(q.sample_hash));
    }
    out.generator["unbound"] = unbound;
    if (!result.deferred_unbound.empty()) {
      nlohmann::json deferred = nlohmann::json::array();
      for (const DeferredUnbound& d : result.deferred_unbound) {
        deferred.push_back({to_sexpr(d.equation.lhs, d.equation.lhs.root()),
                            to_sexpr(d.equation.rhs, d.equation.rhs.root()),
                            d.refuted ? nlohmann::json(*d.refuted) : nlohmann::json(nullptr)});
        if (sampled) deferred.back().push_back(hash_json(d.equation.sample_hash));
      }
      out.generator["unbound_deferred"] = deferred;
    }
    if (sampled) {
      nlohmann::json rule_hashes = nlohmann::json::array();
      for (const auto& h : result.shard_rule_hashes) rule_hashes.push_back(hash_json(h));
      out.generator["last_size_sample"] = {
          {"cap", result.sample_cap}, {"hashes", result.last_size_hashes}, {"rule_hashes", rule_hashes}};
    }
  }
  save_corpus(out, path);
  if (!rejected_path.empty()) {
    nlohmann::json side = nlohmann::json::array();
    for (const Rejected& r : result.rejected)
      side.push_back({{"lhs", r.lhs}, {"rhs", r.rhs}, {"status", r.status}, {"reason", r.reason}});
    std::ofstream f(rejected_path);
    if (!f) throw CorpusError(rejected_path.string() + ": cannot write file");
    f << nlohmann::json{{"unproved", side}}.dump(1) << "\n";
  }
}

}  // namespace teq::synth
