#include "synth/minimize.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>

#include "optimizer/engine/egraph.h"
#include "optimizer/engine/runner.h"
#include "synth/parallel.h"
#include "synth/prove.h"
#include "synth/rulegen.h"
#include "synth/typing.h"

namespace teq::synth {

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

EquationBatch::EquationBatch(std::vector<LeafType> types)
    : types_(std::move(types)), graph_(std::make_unique<EGraphHolder>()) {}

EquationBatch::~EquationBatch() = default;

size_t EquationBatch::num_nodes() const { return graph_->egraph.num_nodes(); }

std::optional<size_t> EquationBatch::add(const Rule& target, std::string* why_not, bool look_up_rhs) {
  auto typing = assign_types(target, types_, {ShapeChoice{ShapeChoice::SetA}});
  if (!typing) {
    if (why_not) *why_not = "no leaf-type shapes make the rule well-shaped";
    return std::nullopt;
  }
  VarShapes shapes = shapes_of(*typing, types_, {ShapeChoice::SetA});
  EGraph& egraph = graph_->egraph;
  Equation eq;
  try {
    for (size_t i = 0; i < target.lhs.size(); ++i) {
      Expr l = as_graph(target.lhs[i], shapes), r = as_graph(target.rhs[i], shapes);
      Equation::Side side{egraph.add_expr(l)[l.root().value], std::nullopt, {}};
      auto lv = target.lhs[i].variables(), rv = target.rhs[i].variables();
      if (!look_up_rhs && std::set(lv.begin(), lv.end()) == std::set(rv.begin(), rv.end()) && !target.is_multi())
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
}  // namespace

uint64_t saturations_stopped_by_clock() { return clock_stops.load(std::memory_order_relaxed); }

std::string EquationBatch::saturate(const std::vector<Rule>& rules, const DeriveLimits& limits,
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
  config.cross_product_multi = true;  // relu-batch-like rules: the e-graphs here are small
  config.k_multi = 1;
  Runner with_multi(rules, config);
  config.k_multi = 0;
  Runner single_only(rules, config);
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
    (iter < static_cast<size_t>(limits.k_multi) ? with_multi : single_only).run(egraph);
    ++iterations;
    if (all_equal()) return "equal";
    if (egraph.version() == before) {
      stop = StopReason::Saturated;
      break;
    }
  }
  return std::string(to_string(stop)) + ", " + std::to_string(egraph.num_nodes()) + " e-nodes, " +
         std::to_string(iterations) + " iterations";
}

DeriveResult derive_rule(const Rule& target, const std::vector<Rule>& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits) {
  EquationBatch batch(types);
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
  auto one_way = [&](const Rule& r) -> DeriveResult {
    EquationBatch batch(types);
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

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void log_line(const RulegenConfig& c, const std::string& s) {
  if (c.log) c.log(s);
}

/// Whether a derivation may use `rule` for `target`. `enlarge` exists only for kernels up to its target
/// size: a derivation through it holds for the 1x3 kernels of the fingerprint shapes but not for a 5x5
/// kernel, so a rule without enlarge is never dropped on the strength of rules with it (the general
/// SAME-padding conv batching rules were, leaving 5x5 kernels without them).
bool uses_enlarge(const Rule& r) {
  for (const auto* side : {&r.lhs, &r.rhs})
    for (const Expr& p : *side)
      for (const ExprNode& n : p.nodes())
        if (n.op == OpKind::Enlarge) return true;
  return false;
}
bool may_derive(const Rule& rule, const Rule& target) {
  return !uses_enlarge(rule) || uses_enlarge(target);
}

/// Two-pattern rules are judged one derive_rule each, which compiles every kept rule; at size 3 there are
/// thousands of pairs, so they get a smaller budget.
DeriveLimits two_pattern_limits(DeriveLimits limits) {
  limits.iter_limit = std::min<size_t>(limits.iter_limit, 4);
  limits.time_limit_s = std::min(limits.time_limit_s, 5.0);
  return limits;
}

/// minimize_candidates (minimize.h), as rounds over the undecided candidates. kept_both: the kept rules both
/// ways; kept_both_plain: those a derivation of a rule without enlarge may use (may_derive).
class Minimization {
 public:
  Minimization(std::vector<OrderedCandidate>& unique, const RulegenConfig& config, const std::vector<LeafType>& types,
               RulegenResult& result)
      : unique_(unique), config_(config), types_(types), result_(result), threads_(thread_count(config.threads)),
        slice_(static_cast<size_t>(threads_) * 16) {}

  /// Every candidate, chunk by chunk; returns the kept rules.
  std::vector<Rule> run() {
    const auto start = Clock::now();
    const size_t chunk = std::max<size_t>(1, config_.minimize_chunk);
    size_t next_log = 0;
    auto last_log = Clock::now();
    for (size_t begin = 0; begin < unique_.size(); begin += chunk) {
      const size_t end = std::min(unique_.size(), begin + chunk);
      std::vector<size_t> pending(end - begin);
      for (size_t i = 0; i < pending.size(); ++i) pending[i] = begin + i;
      while (!pending.empty()) {
        pending = round(pending);
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
    return std::move(kept);
  }

 private:
  const std::vector<Rule>& rules_for(const Rule& r) const { return uses_enlarge(r) ? kept_both : kept_both_plain; }

  void log_progress(size_t checked, Clock::time_point start) const {
    log_line(config_, "rulegen: minimizing: " + std::to_string(checked) + "/" + std::to_string(unique_.size()) +
                          " checked, " + std::to_string(kept.size()) + " kept, " +
                          std::to_string(result_.stats.pruned_derivable) + " derivable, " +
                          std::to_string(result_.stats.wrong + result_.stats.unknown) + " unproved, " +
                          std::to_string(static_cast<int>(since(start))) + " s");
  }

  /// One round over `pending` (indices into the candidates): the derivable ones dropped, the first slice of
  /// the others proved and kept or dropped; returns the rest, still undecided.
  std::vector<size_t> round(const std::vector<size_t>& pending) {
    const RulegenConfig& config = config_;
    const std::vector<LeafType>& types = types_;
    RulegenResult& result = result_;
    std::vector<OrderedCandidate>& unique = unique_;
    const int threads = threads_;
    const size_t slice = slice_;
    // batches[0]: candidates without enlarge, saturated with kept_both_plain; batches[1]: the others.
    std::array<EquationBatch, 2> batches{EquationBatch(types), EquationBatch(types)};
    std::vector<uint8_t> batch_of(pending.size(), 0);
    std::vector<std::optional<size_t>> index(pending.size());
    // Two-pattern rules are judged alone (derive_rule): in a shared e-graph another candidate's terms
    // could supply the joint right side that such a rule exists to build.
    for (size_t k = 0; k < pending.size(); ++k) {
      const Rule& r = unique[pending[k]].rule;
      batch_of[k] = uses_enlarge(r);
      if (config.minimize && !r.is_multi()) index[k] = batches[batch_of[k]].add(r);
    }
    for (int b = 0; b < 2; ++b) {
      const std::vector<Rule>& rules = b == 1 ? kept_both : kept_both_plain;
      if (!config.minimize || rules.empty() || batches[b].num_nodes() == 0) continue;
      DeriveLimits limits = config.derive;
      limits.node_limit = std::min<size_t>(config.batch_node_limit, limits.node_limit + 20 * batches[b].num_nodes());
      batches[b].saturate(rules, limits);
    }
    // Two-pattern rules: one derive_rule each, in parallel, with a smaller budget.
    const DeriveLimits multi_limits = two_pattern_limits(config.derive);
    std::vector<char> multi_derived(pending.size(), 0);
    if (config.minimize)
      parallel_for(pending.size(), threads, [&](size_t k) {
        const Rule& r = unique[pending[k]].rule;
        if (r.is_multi()) multi_derived[k] = derive_rule(r, rules_for(r), types, multi_limits).derived;
      });
    const size_t kept_before_round = kept.size();
    std::vector<size_t> undecided;
    for (size_t k = 0; k < pending.size(); ++k) {
      if (index[k] ? batches[batch_of[k]].equal(*index[k]) : multi_derived[k]) {
        ++result.stats.pruned_derivable;
        continue;
      }
      undecided.push_back(k);
    }
    // Prove the first `slice` undecided candidates (those not proved already, e.g. by a shard).
    const size_t take = std::min(slice, undecided.size());
    std::vector<ProofResult> proofs(take);
    auto prove_start = Clock::now();
    parallel_for(take, threads, [&](size_t j) {
      const Rule& r = unique[pending[undecided[j]]].rule;
      if (r.verification) proofs[j] = {r.verification->status, r.verification->method, r.verification->ms};
      else proofs[j] = prove_rule(r, config.prove);
    });
    result.stats.prove_s += since(prove_start);
    for (size_t j = 0; j < take; ++j) {
      const size_t k = undecided[j];
      Rule& r = unique[pending[k]].rule;
      const bool had_verdict = r.verification.has_value();  // proved by a shard: counted there
      if (proofs[j].status != "verified") {
        if (!had_verdict) (proofs[j].status == "wrong" ? result.stats.wrong : result.stats.unknown)++;
        result.rejected.push_back({patterns_text(r.lhs), patterns_text(r.rhs), proofs[j].status, proofs[j].reason});
        continue;
      }
      if (!had_verdict) {
        ++result.stats.proved;
        r.verification = Verification{"verified", "z3-elementwise", proofs[j].ms};
      }
      // A two-pattern rule is checked again only if rules were kept since its parallel check.
      if (index[k] ? batches[batch_of[k]].equal(*index[k])
                   : config.minimize && r.is_multi() && kept.size() > kept_before_round &&
                         derive_rule(r, rules_for(r), types, multi_limits).derived) {
        ++result.stats.pruned_derivable;
        continue;
      }
      std::vector<Rule> directions = both_directions({r});
      if (index[k]) batches[batch_of[k]].assert_equal(*index[k]);
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

  std::vector<OrderedCandidate>& unique_;
  const RulegenConfig& config_;
  const std::vector<LeafType>& types_;
  RulegenResult& result_;
  const int threads_;
  const size_t slice_;
  std::vector<Rule> kept, kept_both, kept_both_plain;
};

}  // namespace

std::vector<Rule> minimize_candidates(std::vector<OrderedCandidate>& candidates, const RulegenConfig& config,
                                      const std::vector<LeafType>& types, RulegenResult& result) {
  return Minimization(candidates, config, types, result).run();
}

size_t drop_derivable_from_the_rest(std::vector<Rule>& kept, const std::vector<LeafType>& types,
                                    const RulegenConfig& config) {
  const DeriveLimits& limits = config.derive;
  const int threads = thread_count(config.threads);
  const auto start = Clock::now();
  auto last_log = start;
  std::mutex log_mutex;
  auto progress = [&](const std::string& stage, size_t done, size_t total) {
    std::lock_guard lock(log_mutex);
    if (since(last_log) < 30) return;
    last_log = Clock::now();
    log_line(config, "rulegen: final pass: " + stage + " " + std::to_string(done) + "/" + std::to_string(total) +
                         ", " + std::to_string(static_cast<int>(since(start))) + " s");
  };
  if (kept.size() < 2) return 0;
  const DeriveLimits multi_limits = two_pattern_limits(limits);
  auto derivable_from_others = [&](size_t i, const std::vector<char>& dropped) {
    std::vector<Rule> others;
    for (size_t j = 0; j < kept.size(); ++j)
      if (j != i && !dropped[j] && may_derive(kept[j], kept[i])) others.push_back(kept[j]);
    return derive_as_rewrites(kept[i], both_directions(others), types, kept[i].is_multi() ? multi_limits : limits)
        .derived;
  };
  std::vector<char> flagged(kept.size(), 0), dropped(kept.size(), 0);
  std::atomic<size_t> checked{0};
  parallel_for(kept.size(), threads, [&](size_t i) {
    flagged[i] = derivable_from_others(i, dropped);
    progress("flagged", ++checked, kept.size());
  });
  std::vector<size_t> order;
  for (size_t i = 0; i < kept.size(); ++i)
    if (flagged[i]) order.push_back(i);
  // Largest first; among equals the one kept last (the most special) first.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(rule_size(kept[a]), a) > std::pair(rule_size(kept[b]), b);
  });
  size_t removed = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (derivable_from_others(order[k], dropped)) dropped[order[k]] = 1, ++removed;
    progress("confirmed " + std::to_string(removed) + " of the flagged, checked", k + 1, order.size());
  }
  std::vector<Rule> rest;
  for (size_t i = 0; i < kept.size(); ++i)
    if (!dropped[i]) rest.push_back(std::move(kept[i]));
  kept = std::move(rest);
  return removed;
}

}  // namespace teq::synth
