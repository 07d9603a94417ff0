#include "synth/minimize.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "optimizer/engine/egraph.h"
#include "optimizer/engine/runner.h"
#include "synth/detail/derivation.h"
#include "synth/parallel.h"
#include "synth/prove.h"
#include "synth/typing.h"
#include "verify/shape_assign.h"

namespace teq::synth {

using namespace detail;

std::vector<Rule> both_directions(const std::vector<Rule>& rules) {
  std::vector<Rule> out;
  for (const Rule& r : rules) {
    out.push_back(r);
    Rule rev;
    rev.id = r.id + "~rev";
    rev.lhs = r.rhs;
    rev.rhs = r.lhs;
    try {
      validate_rule(rev);
      out.push_back(std::move(rev));
    } catch (const CorpusError&) {
      // Not a valid rule backwards (unbound variables or a bare-variable side): one way only.
    }
  }
  return out;
}

namespace {

/// Replaces ?variables by input leaves carrying their shapes, so the pattern becomes a graph.
Expr as_graph(const Expr& pattern, const VarShapes& shapes) {
  Expr g;
  std::vector<ExprId> map(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    ExprNode n = pattern.nodes()[i];
    if (n.op == OpKind::Var) {
      n.op = OpKind::Input;
      n.attrs = shapes.at(n.name);
    }
    for (ExprId& c : n.children) c = map[c.value];
    map[i] = g.add(std::move(n));
  }
  g.add_root(map[pattern.root().value]);
  return g;
}

}  // namespace

struct EGraphHolder {
  EGraph egraph;
};

struct EquationBatch::Equation {
  struct Side {
    ClassId lhs;
    std::optional<ClassId> rhs;  // added right side
    Expr rhs_graph;              // looked-up right side (when rhs is empty)
  };
  std::vector<Side> sides;
};

EquationBatch::EquationBatch(std::vector<LeafType> types, DeriveLimits::Typing typing)
    : types_(std::move(types)), typing_(typing), graph_(std::make_unique<EGraphHolder>()) {}

namespace {

/// The smallest distinct extents under which every pattern of `rule` is well-shaped with paired roots of
/// equal shape (verify's shape search, its first assignment); empty when there is none.
VarShapes generic_shapes(const Rule& rule) {
  std::vector<Expr> conditions;
  std::vector<const Expr*> patterns = rule_patterns(rule, conditions);
  ShapeSearchOptions options;
  options.max_assignments = 1;
  options.distinct_within_variable = true;
  ShapeAssignments found = find_shape_assignments(patterns, options);
  return found.assignments.empty() ? VarShapes{} : std::move(found.assignments.front());
}

}  // namespace

EquationBatch::~EquationBatch() = default;

size_t EquationBatch::num_nodes() const { return graph_->egraph.num_nodes(); }


std::vector<uint64_t> EquationBatch::node_keys() const {
  const EGraph& egraph = graph_->egraph;
  std::vector<uint64_t> keys;
  keys.reserve(egraph.node_slots());
  for (size_t i = 0; i < egraph.node_slots(); ++i) {  // dead e-nodes too: each has a live twin anyway
    const ENode& n = egraph.node(NodeId(i));
    keys.push_back(node_key(n.op, n.attrs, n.children.size()));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::optional<size_t> EquationBatch::add(const Rule& target, std::string* why_not, bool look_up_rhs) {
  VarShapes shapes;
  if (typing_ == DeriveLimits::Typing::Generic) shapes = generic_shapes(target);
  if (shapes.empty()) {
    auto typing = assign_types(target, types_, {ShapeChoice{ShapeChoice::SetA}});
    if (!typing) {
      if (why_not) *why_not = "no leaf-type shapes make the rule well-shaped";
      return std::nullopt;
    }
    shapes = shapes_of(*typing, types_, {ShapeChoice::SetA});
  }
  EGraph& egraph = graph_->egraph;
  Equation eq;
  try {
    for (size_t i = 0; i < target.lhs.size(); ++i) {
      Expr l = as_graph(target.lhs[i], shapes), r = as_graph(target.rhs[i], shapes);
      Equation::Side side{egraph.add_expr(l)[l.root().value], std::nullopt, {}};
      auto lv = target.lhs[i].variables(), rv = target.rhs[i].variables();
      if (!look_up_rhs && std::set(lv.begin(), lv.end()) == std::set(rv.begin(), rv.end()))
        side.rhs = egraph.add_expr(r)[r.root().value];
      else
        side.rhs_graph = std::move(r);
      eq.sides.push_back(std::move(side));
    }
  } catch (const std::exception& e) {
    if (why_not) *why_not = std::string("cannot build the rule's graphs: ") + e.what();
    return std::nullopt;
  }
  egraph.rebuild();
  equations_.push_back(std::move(eq));
  return equations_.size() - 1;
}

namespace {

std::optional<ClassId> lookup_graph(const EGraph& egraph, const Expr& g) {
  std::vector<ClassId> ids(g.size());
  for (size_t k = 0; k < g.size(); ++k) {
    const ExprNode& n = g.nodes()[k];
    ENode e{n.op, n.attrs, {}, n.name};
    for (ExprId c : n.children) e.children.push_back(ids[c.value]);
    auto found = egraph.lookup(std::move(e));
    if (!found) return std::nullopt;
    ids[k] = *found;
  }
  return ids[g.root().value];
}

}  // namespace

bool EquationBatch::equal(size_t i) const {
  const EGraph& egraph = graph_->egraph;
  for (const Equation::Side& s : equations_.at(i).sides) {
    std::optional<ClassId> r = s.rhs ? s.rhs : lookup_graph(egraph, s.rhs_graph);
    if (!r || egraph.find(*r) != egraph.find(s.lhs)) return false;
  }
  return true;
}

void EquationBatch::assert_equal(size_t i) {
  EGraph& egraph = graph_->egraph;
  for (Equation::Side& s : equations_.at(i).sides) {
    if (!s.rhs) s.rhs = egraph.add_expr(s.rhs_graph)[s.rhs_graph.root().value];
    egraph.merge(s.lhs, *s.rhs);
  }
  egraph.rebuild();
}

namespace {
std::atomic<uint64_t> clock_stops{0};
std::atomic<uint64_t> count_saturations{0}, count_iterations{0}, count_enodes{0}, count_max_enodes{0};

void count_saturation(size_t iterations, size_t enodes) {
  count_saturations.fetch_add(1, std::memory_order_relaxed);
  count_iterations.fetch_add(iterations, std::memory_order_relaxed);
  count_enodes.fetch_add(enodes, std::memory_order_relaxed);
  uint64_t seen = count_max_enodes.load(std::memory_order_relaxed);
  while (enodes > seen && !count_max_enodes.compare_exchange_weak(seen, enodes, std::memory_order_relaxed)) {
  }
}
}  // namespace

namespace {

/// The two runners of a saturation (with multi-pattern rules for the first k_multi iterations, without
/// after), each built when first needed (many saturations end within the first iterations).
struct LazyRunners {
  const RuleSubset& rules;
  RunnerConfig config;
  int k_multi;
  std::optional<Runner> with_multi, single_only;

  Runner& for_iteration(size_t iter) {
    const bool multi = iter < static_cast<size_t>(k_multi);
    std::optional<Runner>& r = multi ? with_multi : single_only;
    if (!r) {
      config.k_multi = multi ? 1 : 0;
      r.emplace(rules.rules, config, rules.enabled);
    }
    return *r;
  }
};

}  // namespace

uint64_t saturations_stopped_by_clock() { return clock_stops.load(std::memory_order_relaxed); }

SaturationCounts saturation_counts() {
  return {count_saturations.load(std::memory_order_relaxed), count_iterations.load(std::memory_order_relaxed),
          count_enodes.load(std::memory_order_relaxed), count_max_enodes.load(std::memory_order_relaxed)};
}

std::shared_ptr<const CompiledRules> compile_for_derivation(const std::vector<Rule>& rules) {
  return std::make_shared<const CompiledRules>(rules, /*cross_product_multi=*/true);
}

std::string EquationBatch::saturate(const std::vector<Rule>& rules, const DeriveLimits& limits,
                                    const std::vector<size_t>& watch) {
  return saturate(RuleSubset{compile_for_derivation(rules)}, limits, watch);
}

std::string EquationBatch::saturate(const RuleSubset& rules, const DeriveLimits& limits,
                                    const std::vector<size_t>& watch) {
  EGraph& egraph = graph_->egraph;
  auto all_equal = [&] {
    if (watch.empty()) {
      for (size_t i = 0; i < equations_.size(); ++i)
        if (!equal(i)) return false;
    } else {
      for (size_t i : watch)
        if (!equal(i)) return false;
    }
    return true;
  };
  if (all_equal()) return "equal before saturation";
  RunnerConfig config;
  // The runner's node count can read high transiently (dead nodes during rebuild), which stopped it after one
  // iteration on tiny e-graphs at the limit itself; the limit is enforced here, between iterations, and the
  // runner stops applying at `growth` times it (a count, so the verdict does not depend on the machine).
  config.node_limit = limits.node_limit * std::max<size_t>(limits.growth, 1);
  config.iter_limit = 1;
  config.time_limit_s = limits.time_limit_s;
  config.backoff = false;  // every rule every iteration: the limits below bound the work
  // Each rule searched when its turn to apply comes (the same matches): an iteration that stops at the node
  // limit or at the derivation does not search the rules after that point, nor hold all their matches.
  config.search_lazily = true;
  config.cross_product_multi = true;  // relu-batch-like rules: the e-graphs here are small (compile_for_derivation)
  // A check of one or two equations stops applying at its derivation, inside the iteration: what the iteration
  // would have applied after it only adds to an e-graph whose sides are already equal, so the verdict is the
  // one the whole iteration gives (the union-find says so before the rebuild; a looked-up side is found after
  // it, at the iteration's end). A chunk's batch, where all its equations are rarely equal, does not ask.
  if ((watch.empty() ? equations_.size() : watch.size()) <= 2) config.stop_applying = all_equal;
  LazyRunners runners{rules, config, limits.k_multi, std::nullopt, std::nullopt};
  auto start = std::chrono::steady_clock::now();
  StopReason stop = StopReason::IterLimit;
  size_t iterations = 0;
  for (size_t iter = 0; iter < limits.iter_limit; ++iter) {
    if (egraph.num_nodes() > limits.node_limit) {
      stop = StopReason::NodeLimit;
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limits.time_limit_s) {
      stop = StopReason::TimeLimit;
      clock_stops.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    uint64_t before = egraph.version();
    runners.for_iteration(iter).run(egraph);
    ++iterations;
    if (all_equal()) {
      count_saturation(iterations, egraph.num_nodes());
      return "equal";
    }
    if (egraph.version() == before) {
      stop = StopReason::Saturated;
      break;
    }
  }
  count_saturation(iterations, egraph.num_nodes());
  return std::string(to_string(stop)) + ", " + std::to_string(egraph.num_nodes()) + " e-nodes, " +
         std::to_string(iterations) + " iterations";
}

DeriveResult derive_rule(const Rule& target, const std::vector<Rule>& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits) {
  return derive_rule(target, RuleSubset{compile_for_derivation(rules)}, types, limits);
}

DeriveResult derive_rule(const Rule& target, const RuleSubset& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits) {
  EquationBatch batch(types, limits.typing);
  std::string why_not;
  auto index = batch.add(target, &why_not);
  if (!index) return {false, why_not};
  if (batch.equal(*index)) return {true, ""};
  std::string stop = batch.saturate(rules, limits);
  if (batch.equal(*index)) return {true, ""};
  return {false, "not equal after saturation (" + stop + ")"};
}

DeriveResult derive_as_rewrites(const Rule& target, const std::vector<Rule>& rules,
                                const std::vector<LeafType>& types, const DeriveLimits& limits) {
  return derive_as_rewrites(target, RuleSubset{compile_for_derivation(rules)}, types, limits);
}

DeriveResult derive_as_rewrites(const Rule& target, const RuleSubset& rules, const std::vector<LeafType>& types,
                                const DeriveLimits& limits) {
  auto one_way = [&](const Rule& r) -> DeriveResult {
    EquationBatch batch(types, limits.typing);
    std::string why_not;
    auto index = batch.add(r, &why_not, /*look_up_rhs=*/true);
    if (!index) return {false, why_not};
    if (batch.equal(*index)) return {true, ""};
    std::string stop = batch.saturate(rules, limits);
    if (batch.equal(*index)) return {true, ""};
    return {false, "right side not built from the left (" + stop + ")"};
  };
  DeriveResult forward = one_way(target);
  if (!forward.derived) return forward;
  std::vector<Rule> directions = both_directions({target});
  if (directions.size() < 2) return forward;  // not a rule backwards: nothing more to rewrite
  DeriveResult backward = one_way(directions[1]);
  if (!backward.derived) backward.reason = "backwards: " + backward.reason;
  return backward;
}

namespace {

/// ", about N s left" at the rate so far (an estimate for the log; candidates are checked smallest first, so
/// it tends to be low), or nothing before a tenth of the work.
std::string time_left(size_t done, size_t total, double seconds) {
  if (total == 0 || done * 10 < total || done >= total) return "";
  const double left = seconds / static_cast<double>(done) * static_cast<double>(total - done);
  return ", about " + std::to_string(static_cast<int64_t>(left)) + " s left";
}

/// minimize_candidates (minimize.h), as rounds over the undecided candidates. kept_both: the kept rules both
/// ways; kept_both_plain: those a derivation of a rule without enlarge may use (may_derive).
class Minimization {
 public:
  Minimization(std::vector<OrderedCandidate>& unique, const MinimizeConfig& config, const std::vector<LeafType>& types)
      : unique_(unique), config_(config), types_(types), threads_(thread_count(config.threads)),
        slice_(std::max<size_t>(1, config.prove_slice)) {}

  /// Every candidate, chunk by chunk: the kept rules, the single-pattern candidates found derivable in a
  /// shared e-graph (in candidate order), and what the proofs found.
  MinimizeResult run() {
    const auto start = Clock::now();
    const size_t chunk = std::max<size_t>(1, config_.minimize_chunk);
    size_t next_log = 0;
    auto last_log = Clock::now();
    for (size_t begin = 0; begin < unique_.size(); begin += chunk) {
      const size_t end = std::min(unique_.size(), begin + chunk);
      std::vector<size_t> pending(end - begin);
      for (size_t i = 0; i < pending.size(); ++i) pending[i] = begin + i;
      for (bool first = true; !pending.empty(); first = false) {
        pending = round(pending, first);
        if (since(last_log) > 30) {
          last_log = Clock::now();
          log_progress(begin + (end - begin - pending.size()), start);
        }
      }
      if (end >= next_log) {
        log_progress(end, start);
        next_log = end + unique_.size() / 20 + 1;
      }
    }
    log_line(config_, "rulegen: minimization proved " + std::to_string(spare_made_.load()) +
                          " candidates ahead on otherwise idle threads, " + std::to_string(spare_used_.load()) +
                          " of them needed");
    std::sort(derivable_.begin(), derivable_.end());
    for (size_t c : derivable_) result_.derivable.push_back(unique_[c].rule);
    result_.kept = std::move(kept);
    return std::move(result_);
  }

 private:
  /// `list` compiled, from `cache` while the list has not grown since (kept rules are only appended).
  static RuleSubset compiled(const std::vector<Rule>& list, std::shared_ptr<const CompiledRules>& cache) {
    if (!cache || cache->size() != list.size()) cache = compile_for_derivation(list);
    return RuleSubset(cache);
  }
  RuleSubset compiled_rules_for(const Rule& r) {
    return uses_enlarge(r) ? compiled(kept_both, compiled_both_) : compiled(kept_both_plain, compiled_plain_);
  }

  void log_progress(size_t checked, Clock::time_point start) const {
    log_line(config_, "rulegen: minimizing: " + std::to_string(checked) + "/" + std::to_string(unique_.size()) +
                          " checked, " + std::to_string(kept.size()) + " kept, " +
                          std::to_string(result_.pruned_derivable) + " derivable, " +
                          std::to_string(result_.proofs.wrong + result_.proofs.unknown) + " unproved, " +
                          std::to_string(static_cast<int>(since(start))) + " s" +
                          time_left(checked, unique_.size(), since(start)));
  }

  /// One round over `pending` (indices into the candidates): the derivable ones dropped, the first slice of
  /// the others proved and kept or dropped; returns the rest, still undecided. In a chunk's later rounds
  /// the pending candidates are those the rules kept before did not derive, worth proving ahead while the
  /// round saturates; in its first round most are derivable, and a proof ahead would mostly be wasted.
  std::vector<size_t> round(const std::vector<size_t>& pending, bool first_of_chunk) {
    const MinimizeConfig& config = config_;
    const std::vector<LeafType>& types = types_;
    MinimizeResult& result = result_;
    std::vector<OrderedCandidate>& unique = unique_;
    const size_t slice = slice_;
    // batches[0]: candidates without enlarge, saturated with kept_both_plain; batches[1]: the others.
    std::array<EquationBatch, 2> batches{EquationBatch(types, config.derive.typing),
                                         EquationBatch(types, config.derive.typing)};
    std::vector<uint8_t> batch_of(pending.size(), 0);
    std::vector<std::optional<size_t>> index(pending.size());
    // Two-pattern rules are judged alone (derive_rule): in a shared e-graph another candidate's terms
    // could supply the joint right side that such a rule exists to build.
    for (size_t k = 0; k < pending.size(); ++k) {
      const Rule& r = unique[pending[k]].rule;
      batch_of[k] = uses_enlarge(r);
      if (config.minimize && !r.is_multi()) index[k] = batches[batch_of[k]].add(r);
    }
    // The two saturations and the two-pattern rules' derivations are independent jobs, run in parallel;
    // a thread left without one proves undecided candidates ahead (spare proofs).
    const DeriveLimits multi_limits = two_pattern_limits(config.derive);
    std::vector<char> multi_derived(pending.size(), 0);
    std::vector<size_t> multi_at;
    for (size_t k = 0; k < pending.size(); ++k)
      if (config.minimize && unique[pending[k]].rule.is_multi()) multi_at.push_back(k);
    const RuleSubset both = compiled(kept_both, compiled_both_), plain = compiled(kept_both_plain, compiled_plain_);
    run_with_spare_proofs(2 + multi_at.size(), [&](size_t job) {
      if (job < 2) return saturate_batch(batches[job], job == 1 ? both : plain);
      const size_t k = multi_at[job - 2];
      const Rule& r = unique[pending[k]].rule;
      multi_derived[k] = derive_rule(r, uses_enlarge(r) ? both : plain, types, multi_limits).derived;
    }, first_of_chunk ? std::vector<size_t>{} : pending);
    const size_t kept_before_round = kept.size();
    std::vector<size_t> undecided;
    for (size_t k = 0; k < pending.size(); ++k) {
      if (index[k] ? batches[batch_of[k]].equal(*index[k]) : multi_derived[k]) {
        ++result.pruned_derivable;
        if (index[k]) derivable_.push_back(pending[k]);
        continue;
      }
      undecided.push_back(k);
    }
    // Prove the first `slice` undecided candidates (those not proved already, e.g. by a shard); a thread
    // left without one proves the next undecided ones ahead.
    const size_t take = std::min(slice, undecided.size());
    std::vector<size_t> spare;
    for (size_t j = take; j < undecided.size(); ++j) spare.push_back(pending[undecided[j]]);
    std::vector<ProofResult> proofs(take);
    auto prove_start = Clock::now();
    run_with_spare_proofs(take, [&](size_t j) { proofs[j] = proof_of(pending[undecided[j]]); }, spare);
    result.proofs.prove_s += since(prove_start);
    for (size_t j = 0; j < take; ++j) {
      const size_t k = undecided[j];
      Rule& r = unique[pending[k]].rule;
      const bool had_verdict = r.verification.has_value();  // proved by a shard: counted there
      if (proofs[j].status != "verified") {
        if (!had_verdict) (proofs[j].status == "wrong" ? result.proofs.wrong : result.proofs.unknown)++;
        result.proofs.rejected.push_back(
            {patterns_text(r.lhs), patterns_text(r.rhs), proofs[j].status, proofs[j].reason});
        continue;
      }
      if (!had_verdict) {
        ++result.proofs.proved;
        r.verification = Verification{"verified", "z3-elementwise", proofs[j].ms};
        r.same_shape = proofs[j].same_shape;
        r.conv_groupings = proofs[j].conv_groupings;
      }
      // A two-pattern rule is checked again only if rules were kept since its parallel check.
      if (index[k] ? batches[batch_of[k]].equal(*index[k])
                   : config.minimize && r.is_multi() && kept.size() > kept_before_round &&
                         derive_rule(r, compiled_rules_for(r), types, multi_limits).derived) {
        ++result.pruned_derivable;
        if (index[k]) derivable_.push_back(pending[k]);
        continue;
      }
      std::vector<Rule> directions = both_directions({r});
      // A rule true under shape conditions only is not asserted in the batch, whose shapes need not meet them.
      if (index[k] && r.same_shape.empty() && r.conv_groupings.empty()) batches[batch_of[k]].assert_equal(*index[k]);
      const bool plain = !uses_enlarge(r);
      kept.push_back(r);
      for (Rule& d : directions) {
        if (plain) kept_both_plain.push_back(d);
        kept_both.push_back(std::move(d));
      }
    }
    std::vector<size_t> rest;
    for (size_t j = take; j < undecided.size(); ++j) rest.push_back(pending[undecided[j]]);
    return rest;
  }

  void saturate_batch(EquationBatch& batch, const RuleSubset& rules) const {
    if (!config_.minimize || rules.rules->size() == 0 || batch.num_nodes() == 0) return;
    DeriveLimits limits = config_.derive;
    limits.node_limit = std::min<size_t>(config_.batch_node_limit, limits.node_limit + 20 * batch.num_nodes());
    batch.saturate(rules, limits);
  }

  /// Candidate c's verdict: a shard's, a spare proof's, or proved now. A pure function of the candidate
  /// (Z3 is bounded by its resource limit), so a verdict proved ahead is the one proving it now would give.
  ProofResult proof_of(size_t c) {
    const Rule& r = unique_[c].rule;
    if (r.verification) return {r.verification->status, r.verification->method, r.verification->ms, r.same_shape, r.conv_groupings};
    if (spare_proofs_[c]) return ++spare_used_, *spare_proofs_[c];
    return prove_rule(r, config_.prove);
  }

  /// Runs jobs 0..jobs-1 on the threads and, on a thread that finds no job left while others still run,
  /// proves `ahead` candidates in order into spare_proofs_ (otherwise that core would wait). Proving ahead
  /// decides nothing: a verdict is used, and counted, only when the candidate's turn to be proved comes
  /// (a candidate found derivable first is never proved), so the kept rules and the counts are those of
  /// proving each candidate at its turn. A proof that starts just before the jobs end is waited for.
  template <class Job>
  void run_with_spare_proofs(size_t jobs, Job&& job, const std::vector<size_t>& ahead) {
    std::atomic<size_t> jobs_left{jobs};
    parallel_for(jobs + ahead.size(), threads_, [&](size_t i) {
      if (i < jobs) {
        job(i);
        --jobs_left;
        return;
      }
      const size_t c = ahead[i - jobs];
      if (jobs_left.load() == 0 || unique_[c].rule.verification || spare_proofs_[c]) return;
      spare_proofs_[c] = prove_rule(unique_[c].rule, config_.prove);
      ++spare_made_;
    });
  }

  std::vector<OrderedCandidate>& unique_;
  const MinimizeConfig& config_;
  const std::vector<LeafType>& types_;
  MinimizeResult result_;
  const int threads_;
  const size_t slice_;
  std::vector<Rule> kept, kept_both, kept_both_plain;
  std::vector<size_t> derivable_;  // candidates dropped as derivable in a shared e-graph (single-pattern)
  std::shared_ptr<const CompiledRules> compiled_both_, compiled_plain_;  // caches of compiled()
  std::vector<std::optional<ProofResult>> spare_proofs_ = std::vector<std::optional<ProofResult>>(unique_.size());
  std::atomic<size_t> spare_made_{0}, spare_used_{0};  // for the log
};

}  // namespace

MinimizeResult minimize_candidates(std::vector<OrderedCandidate>& candidates, const MinimizeConfig& config,
                                   const std::vector<LeafType>& types) {
  return Minimization(candidates, config, types).run();
}

namespace {

/// The final pass's question for one kept rule (derive_as_rewrites against the others), with every kept
/// rule's directions (both_directions) compiled once into one list; each check enables a subset of it.
class FinalPassCheck {
 public:
  FinalPassCheck(const std::vector<Rule>& kept, const std::vector<LeafType>& types, const DeriveLimits& limits)
      : kept_(kept), types_(types), limits_(limits), multi_limits_(two_pattern_limits(limits)) {
    std::vector<Rule> directions;
    for (size_t j = 0; j < kept.size(); ++j)
      for (Rule& d : both_directions({kept[j]})) {
        directions.push_back(std::move(d));
        owner_.push_back(j);
      }
    compiled_ = compile_for_derivation(directions);
  }

  /// Whether kept[i] follows, as rewrites, from the kept rules other than itself and those `dropped`.
  bool derivable(size_t i, const std::vector<char>& dropped) const {
    const Rule& target = kept_[i];
    std::vector<char> enabled(owner_.size());
    for (size_t k = 0; k < owner_.size(); ++k) {
      const size_t j = owner_[k];
      enabled[k] = j != i && !dropped[j] && may_derive(kept_[j], target);
    }
    return derive_as_rewrites(target, RuleSubset{compiled_, enabled}, types_,
                              target.is_multi() ? multi_limits_ : limits_)
        .derived;
  }

 private:
  const std::vector<Rule>& kept_;
  const std::vector<LeafType>& types_;
  const DeriveLimits limits_, multi_limits_;
  std::vector<size_t> owner_;  // owner_[k]: the kept rule whose direction compiled_ rule k is
  std::shared_ptr<const CompiledRules> compiled_;
};

/// The confirmation stage of the final pass: `order[k]` is dropped when derivable from the rules not
/// dropped before it, one after the other. Speculatively parallel with the same verdicts: a window of
/// `threads` flagged rules is checked at once, the j-th assuming the j-1 before it in the window are
/// dropped (most flagged rules are). The verdicts are taken in order up to and including the first rule
/// kept, whose successors assumed the wrong set and are checked again in the next window; every verdict
/// taken was computed with exactly the sequential pass's set of dropped rules.
size_t confirm_in_order(const FinalPassCheck& check, const std::vector<size_t>& order, std::vector<char>& dropped,
                        int threads, const std::function<void(size_t, size_t)>& progress) {
  size_t removed = 0;
  const size_t window = static_cast<size_t>(std::max(threads, 1));
  for (size_t k = 0; k < order.size();) {
    const size_t n = std::min(window, order.size() - k);
    std::vector<char> verdict(n, 0);
    parallel_for(n, threads, [&](size_t j) {
      std::vector<char> assumed = dropped;
      for (size_t a = 0; a < j; ++a) assumed[order[k + a]] = 1;
      verdict[j] = check.derivable(order[k + j], assumed);
    });
    for (size_t j = 0; j < n; ++j) {
      ++k;
      if (!verdict[j]) break;  // kept: the later verdicts assumed it dropped
      dropped[order[k - 1]] = 1, ++removed;
    }
    progress(removed, k);
  }
  return removed;
}

}  // namespace

size_t drop_derivable_from_the_rest(std::vector<Rule>& kept, const std::vector<LeafType>& types,
                                    const MinimizeConfig& config, std::vector<Rule>* dropped_rules) {
  const int threads = thread_count(config.threads);
  const auto start = Clock::now();
  auto last_log = start;
  std::mutex log_mutex;
  auto progress = [&](const std::string& stage, size_t done, size_t total) {
    std::lock_guard lock(log_mutex);
    if (since(last_log) < 30) return;
    last_log = Clock::now();
    log_line(config, "rulegen: final pass: " + stage + " " + std::to_string(done) + "/" + std::to_string(total) +
                         ", " + std::to_string(static_cast<int>(since(start))) + " s" +
                         (stage == "flagged" ? time_left(done, total, since(start)) : ""));
  };
  if (kept.size() < 2) return 0;
  const FinalPassCheck check(kept, types, config.derive);
  std::vector<char> flagged(kept.size(), 0), dropped(kept.size(), 0);
  std::atomic<size_t> checked{0};
  parallel_for(kept.size(), threads, [&](size_t i) {
    flagged[i] = check.derivable(i, dropped);
    progress("flagged", ++checked, kept.size());
  });
  std::vector<size_t> order;
  for (size_t i = 0; i < kept.size(); ++i)
    if (flagged[i]) order.push_back(i);
  const double flag_s = since(start);
  log_line(config, "rulegen: final pass: " + std::to_string(order.size()) + " of " + std::to_string(kept.size()) +
                       " flagged in " + std::to_string(static_cast<int>(flag_s)) + " s");
  // Largest first; among equals the one kept last (the most special) first.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(rule_size(kept[a]), a) > std::pair(rule_size(kept[b]), b);
  });
  const size_t removed = confirm_in_order(check, order, dropped, threads, [&](size_t removed_so_far, size_t done) {
    progress("confirmed " + std::to_string(removed_so_far) + " of the flagged, checked", done, order.size());
  });
  log_line(config, "rulegen: final pass: confirmed " + std::to_string(removed) + " of the flagged in " +
                       std::to_string(static_cast<int>(since(start) - flag_s)) + " s");
  std::vector<Rule> rest;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (!dropped[i]) rest.push_back(std::move(kept[i]));
    else if (dropped_rules) dropped_rules->push_back(std::move(kept[i]));
  }
  kept = std::move(rest);
  return removed;
}

}  // namespace teq::synth
