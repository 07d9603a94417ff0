#include "synth/rulegen.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>

#include "rules/evaluator.h"
#include "rules/sexpr.h"
#include "synth/enumerate.h"
#include "synth/fingerprint.h"
#include "synth/typing.h"

namespace teq::synth {

nlohmann::json RulegenStats::to_json() const {
  return {{"graphs_enumerated", enumerated},
          {"fingerprint_classes", classes},
          {"candidates", candidates},
          {"separated_by_second_set", separated_by_second_set},
          {"pruned_renaming", pruned_renaming},
          {"pruned_common_subgraph", pruned_common_subgraph},
          {"pruned_unpaired", pruned_unpaired},
          {"proved", proved},
          {"wrong", wrong},
          {"unknown", unknown},
          {"multi_candidates", multi_candidates},
          {"pruned_derivable", pruned_derivable},
          {"pruned_final", pruned_final},
          {"kept", kept},
          {"kept_multi", kept_multi},
          {"enumerate_s", enumerate_s},
          {"prove_s", prove_s},
          {"minimize_s", minimize_s},
          {"seconds", seconds},
          {"truncated", truncated}};
}

RulegenStats& RulegenStats::operator+=(const RulegenStats& o) {
  enumerated += o.enumerated, classes += o.classes, candidates += o.candidates;
  separated_by_second_set += o.separated_by_second_set;
  pruned_renaming += o.pruned_renaming, pruned_common_subgraph += o.pruned_common_subgraph;
  pruned_unpaired += o.pruned_unpaired;
  proved += o.proved, wrong += o.wrong, unknown += o.unknown;
  enumerate_s += o.enumerate_s, prove_s += o.prove_s;
  truncated |= o.truncated;
  return *this;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int thread_count(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string patterns_text(const std::vector<Expr>& ps) {
  std::string out;
  for (const Expr& p : ps) out += (out.empty() ? "" : " ; ") + to_sexpr(p, p.root());
  return out;
}

/// Runs f(i) for i in [0, n) on `threads` threads.
template <class F>
void parallel_for(size_t n, int threads, F&& f) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  if (threads <= 1 || n < 2) {
    work();
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min<int>(threads, static_cast<int>(n)); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
}

/// Rebuilds a pattern with the subterm printed as `sub` replaced by the variable ?name.
Expr generalize(const Expr& p, const std::string& sub, const std::string& name) {
  Expr out;
  std::vector<ExprId> map(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (!is_leaf(p.nodes()[i].op) && to_sexpr(p, ExprId(i)) == sub) {
      map[i] = out.add_var(name);
      continue;
    }
    ExprNode n = p.nodes()[i];
    for (ExprId& c : n.children) c = map[c.value];
    map[i] = out.add(std::move(n));
  }
  out.add_root(map[p.root().value]);
  return out;
}

std::set<std::string> proper_operator_subterms(const Expr& p) {
  std::set<std::string> out;
  for (size_t i = 0; i < p.size(); ++i)
    if (!is_leaf(p.nodes()[i].op) && ExprId(i) != p.root()) out.insert(to_sexpr(p, ExprId(i)));
  return out;
}

/// TASO's pruning: both sides contain the same operator subterm, and the rule with that subterm replaced
/// by a fresh leaf of the same type still holds (checked on both fingerprint sets). The general rule is
/// smaller and enumerated too, so this one adds nothing.
bool has_common_subgraph(const PatternEquation& eq, const std::vector<LeafType>& types, uint64_t seed) {
  std::set<std::string> left = proper_operator_subterms(eq.lhs), right = proper_operator_subterms(eq.rhs);
  std::vector<std::string> common;
  std::set_intersection(left.begin(), left.end(), right.begin(), right.end(), std::back_inserter(common));
  if (common.empty()) return false;
  Rule probe;
  probe.lhs = {eq.lhs};
  probe.rhs = {eq.rhs};
  auto typing = assign_types(probe, types, {{ShapeChoice::SetA}, {ShapeChoice::SetB}});
  if (!typing) return false;
  for (const std::string& sub : common) {
    Expr l = generalize(eq.lhs, sub, "__g"), r = generalize(eq.rhs, sub, "__g");
    bool holds = true;
    for (ShapeChoice choice : {ShapeChoice{ShapeChoice::SetA}, ShapeChoice{ShapeChoice::SetB}}) {
      VarShapes shapes = shapes_of(*typing, types, choice);
      // Shape of the subterm: evaluate its shape inside the original left side.
      Expr s = parse_pattern(sub);
      auto sub_shapes = try_infer_shapes(s, shapes);
      if (!sub_shapes) return false;
      const Shape& sub_shape = (*sub_shapes)[s.root().value];
      bool is_leaf_type = false;
      for (const LeafType& t : types)
        is_leaf_type |= (choice.kind == ShapeChoice::SetA ? t.shape_a : t.shape_b) == sub_shape;
      if (!is_leaf_type) { holds = false; break; }
      std::mt19937_64 rng(mix64(seed ^ (choice.kind == ShapeChoice::SetA ? 11 : 23)));
      std::map<std::string, Tensor<ModInt>> leaves;
      for (const auto& [name, shape] : shapes) leaves.emplace(name, random_tensor(shape, rng));
      leaves.emplace("__g", random_tensor(sub_shape, rng));
      try {
        Arith<ModInt> ar;
        auto lv = evaluate<ModInt>(l, ar, leaves), rv = evaluate<ModInt>(r, ar, leaves);
        if (lv[0].shape != rv[0].shape || lv[0].data != rv[0].data) holds = false;
      } catch (const std::exception&) {
        holds = false;
      }
      if (!holds) break;
    }
    if (holds) return true;
  }
  return false;
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

Rule equation_rule(const PatternEquation& eq) {
  Rule r;
  r.lhs = {eq.lhs};
  r.rhs = {eq.rhs};
  return r;
}

/// Operators of a pattern written out as a tree (a shared subterm counts once per use).
int tree_ops(const Expr& p) {
  std::vector<int> ops(p.size(), 0);
  for (size_t i = 0; i < p.size(); ++i) {  // children come before their parents
    const ExprNode& n = p.nodes()[i];
    ops[i] = is_leaf(n.op) ? 0 : 1;
    for (ExprId c : n.children) ops[i] += ops[c.value];
  }
  return ops[p.root().value];
}

/// A rule's size for minimization order: operators of the larger side, counted as trees. Counted as
/// DAGs, a special case that repeats a variable ((conv (ewadd i i) k) = (ewadd (conv i k) (conv i k)))
/// would be smaller than its general law and be kept before it, then the law too.
int rule_size(const Rule& r) {
  int l = 0, rr = 0;
  for (const Expr& p : r.lhs) l += tree_ops(p);
  for (const Expr& p : r.rhs) rr += tree_ops(p);
  return std::max(l, rr);
}

std::string rule_id(size_t index, const Rule& r) {
  char buf[16];
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

/// Two-pattern rules are judged one derive_rule each, which compiles every kept rule; at size 3 there are
/// thousands of pairs, so they get a smaller budget.
DeriveLimits two_pattern_limits(DeriveLimits limits) {
  limits.iter_limit = std::min<size_t>(limits.iter_limit, 4);
  limits.time_limit_s = std::min(limits.time_limit_s, 0.3);
  return limits;
}

/// Ruler's final pass: smallest-first minimization keeps a rule whose derivation needs rules kept after it.
/// Every rule is checked against all the others in parallel (a flag), then the flagged ones, largest first,
/// one at a time against the rules still kept, so that two rules never justify each other's removal. The
/// check is derive_as_rewrites (the others rewrite each side into the other), not derive_rule: dropping a
/// rule whose sides merely meet in the middle lost 7 of Tensat's 120 rules from the coverage.
/// Removes the derivable rules from `kept`; returns how many.
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

/// A candidate rule in minimization order: smaller first, then the general one before its special cases.
struct Entry {
  int size;
  int fewer_vars;  // minus the variable count: the general rule before its special cases
  std::string key, text;
  Rule rule;
};

/// The candidates smallest first, one of each class of rules equal up to variable renaming (the others are
/// counted in stats.pruned_renaming).
std::vector<Entry> ordered_unique_candidates(std::vector<Rule> singles, std::vector<Rule> multis,
                                             RulegenStats& stats) {
  std::vector<Entry> entries;
  for (auto* list : {&singles, &multis})
    for (Rule& r : *list) {
      bool both = r.lhs.size() == 1 && [&] {
        auto a = r.lhs[0].variables(), b = r.rhs[0].variables();
        return std::set(a.begin(), a.end()) == std::set(b.begin(), b.end());
      }();
      entries.push_back({rule_size(r), -static_cast<int>(r.variables().size()), canonical_key(r.lhs, r.rhs, both),
                         patterns_text(r.lhs) + " => " + patterns_text(r.rhs), std::move(r)});
    }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.size, a.fewer_vars, a.key, a.text) < std::tie(b.size, b.fewer_vars, b.key, b.text);
  });
  std::vector<Entry> unique;
  for (Entry& e : entries) {
    if (!unique.empty() && unique.back().key == e.key && unique.back().size == e.size) {
      ++stats.pruned_renaming;
      continue;
    }
    unique.push_back(std::move(e));
  }
  return unique;
}

/// Ruler's minimization, smallest first, with proofs made lazily: a chunk of candidates shares one e-graph
/// saturated with the rules kept so far, and the candidates it derives are dropped without a proof. The rest
/// are proved a slice at a time, smallest first (in parallel); a proved one is kept unless the ones kept
/// before it in the slice already joined its sides, and its sides are joined so that the later ones see it.
/// The next round rebuilds the e-graph from what is still undecided. kept_both: the kept rules both ways;
/// kept_both_plain: those a derivation of a rule without enlarge may use (may_derive). Candidates with and
/// without enlarge get an e-graph each.
class Minimization {
 public:
  Minimization(std::vector<Entry>& unique, const RulegenConfig& config, const std::vector<LeafType>& types,
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
    std::vector<Entry>& unique = unique_;
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

  std::vector<Entry>& unique_;
  const RulegenConfig& config_;
  const std::vector<LeafType>& types_;
  RulegenResult& result_;
  const int threads_;
  const size_t slice_;
  std::vector<Rule> kept, kept_both, kept_both_plain;
};

/// Pairing, renaming dedup of the whole set, minimization, ids: the part of the pipeline that needs
/// every shard's results.
void finish(std::vector<Rule> singles, std::vector<PatternEquation> unbound, const RulegenConfig& config,
            const std::vector<LeafType>& types, RulegenResult& result) {
  auto start = Clock::now();
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
  std::vector<Entry> unique = ordered_unique_candidates(std::move(singles), std::move(multis), result.stats);
  std::vector<Rule> kept = Minimization(unique, config, types, result).run();
  if (config.minimize && config.final_pass) {
    log_line(config, "rulegen: final pass over " + std::to_string(kept.size()) + " kept rules, largest first");
    auto final_start = Clock::now();
    result.stats.pruned_final = drop_derivable_from_the_rest(kept, types, config);
    log_line(config, "rulegen: final pass dropped " + std::to_string(result.stats.pruned_final) + " rules in " +
                         std::to_string(static_cast<int>(since(final_start))) + " s");
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    kept[i].id = rule_id(i, kept[i]);
    result.stats.kept_multi += kept[i].is_multi();
  }
  result.stats.kept = kept.size();
  result.corpus.rules = std::move(kept);
  result.stats.minimize_s = since(start);
}

}  // namespace

RulegenResult run_rulegen(const RulegenConfig& config) {
  auto start = Clock::now();
  Vocabulary vocab = make_vocabulary(
      config.ops, config.leaf_types.empty() ? default_leaf_types(config.leaves_per_type) : config.leaf_types);
  if (config.max_inputs < 1) throw std::invalid_argument("--max-inputs must be at least 1");
  EnumerateConfig ec;
  ec.max_ops = config.max_ops;
  ec.max_inputs = config.max_inputs;
  ec.threads = thread_count(config.threads);
  ec.seed = config.seed;
  ec.time_limit_s = config.time_limit_s;
  ec.shard_index = config.shard_index;
  ec.shard_count = config.shard_count;
  double last_t = 0;
  uint64_t last_terms = 0;
  ec.on_progress = [&](const EnumerateProgress& p) {
    double rate = p.seconds > last_t ? (p.terms - last_terms) / (p.seconds - last_t) : 0;
    last_t = p.seconds, last_terms = p.terms;
    log_line(config, "rulegen: size " + std::to_string(p.level) + ": " + std::to_string(p.terms) + " graphs (" +
                         std::to_string(static_cast<uint64_t>(rate)) + "/s), " + std::to_string(p.classes) +
                         " classes, " + std::to_string(p.candidates) + " candidates, " +
                         std::to_string(static_cast<int>(p.seconds)) + " s");
  };
  Enumeration e = enumerate_terms(vocab, ec);
  RulegenResult result;
  result.is_shard = config.shard_count > 1;
  RulegenStats& st = result.stats;
  st.enumerated = e.total_terms();
  st.classes = e.classes.size();
  st.candidates = e.equations.size();
  st.truncated = e.truncated;
  for (const LevelStats& l : e.levels) st.separated_by_second_set += l.separated;
  st.enumerate_s = e.seconds;

  // Renamings and common subgraphs are dropped before proving: proofs are the expensive part.
  std::vector<PatternEquation> eqs = collect_equations(e);
  std::vector<PatternEquation> todo;
  std::unordered_set<std::string> seen;
  for (PatternEquation& q : eqs) {
    bool both = q.bound && [&] {
      auto a = q.lhs.variables(), b = q.rhs.variables();
      return std::set(a.begin(), a.end()) == std::set(b.begin(), b.end());
    }();
    // Types kept: which leaf type represents a rule is decided in finish(), the same way for shards.
    std::string key = (q.bound ? "B" : "U") + canonical_key({q.lhs}, {q.rhs}, both, /*keep_types=*/true);
    if (!seen.insert(key).second) {
      ++st.pruned_renaming;
      continue;
    }
    todo.push_back(std::move(q));
  }
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
  std::vector<char> pairable(to_prove.size(), 1);
  if (!result.is_shard) {
    std::vector<size_t> where;
    std::vector<PatternEquation> unbound;
    for (size_t i = 0; i < to_prove.size(); ++i)
      if (!to_prove[i].bound) where.push_back(i), unbound.push_back(to_prove[i]);
    std::vector<char> paired;
    pair_multi_rules(unbound, config.max_ops + 1, &paired);
    for (size_t k = 0; k < where.size(); ++k)
      if (!paired[k]) pairable[where[k]] = 0, ++st.pruned_unpaired;
  }
  std::vector<Rule> singles;
  std::vector<PatternEquation> eager;
  for (size_t i = 0; i < to_prove.size(); ++i) {
    PatternEquation& q = to_prove[i];
    if (!pairable[i]) continue;
    if (result.is_shard || !q.bound) {
      eager.push_back(std::move(q));
      continue;
    }
    Rule r = equation_rule(q);
    r.id = "candidate";
    singles.push_back(std::move(r));
  }
  log_line(config, "rulegen: " + std::to_string(singles.size() + eager.size()) + " candidates (" +
                       std::to_string(st.pruned_renaming) + " renamings and " +
                       std::to_string(st.pruned_common_subgraph) + " common-subgraph rules dropped); proving " +
                       std::to_string(eager.size()) + " now" +
                       (singles.empty() ? "" : ", the rest while minimizing"));
  auto prove_start = Clock::now();
  std::vector<ProofResult> proofs(eager.size());
  std::atomic<size_t> done{0};
  parallel_for(eager.size(), ec.threads, [&](size_t i) {
    proofs[i] = prove_rule(equation_rule(eager[i]), config.prove);
    size_t d = ++done;
    if (d % 2000 == 0) log_line(config, "rulegen: proved " + std::to_string(d) + "/" + std::to_string(eager.size()));
  });
  st.prove_s = since(prove_start);
  for (size_t i = 0; i < eager.size(); ++i) {
    const ProofResult& p = proofs[i];
    if (p.status != "verified" && result.is_shard && eager[i].bound) {
      // Kept with its verdict: merge must see the same candidates as one whole run (they take part in
      // the same minimization rounds) and reports them as rejected without proving them again.
      (p.status == "wrong" ? st.wrong : st.unknown)++;
      Rule r = equation_rule(eager[i]);
      r.id = "candidate";
      r.verification = Verification{p.status, "z3-elementwise: " + p.reason, p.ms};
      singles.push_back(std::move(r));
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
      Rule r = equation_rule(eager[i]);
      r.id = "candidate";
      r.verification = Verification{"verified", "z3-elementwise", p.ms};
      singles.push_back(std::move(r));
    } else {
      result.unbound.push_back(std::move(eager[i]));
    }
  }
  if (result.is_shard) {
    result.shard_rules = std::move(singles);
  } else {
    std::vector<PatternEquation> unbound = std::move(result.unbound);
    result.unbound.clear();
    finish(std::move(singles), std::move(unbound), config, vocab.leaf_types, result);
  }
  st.seconds = since(start);
  nlohmann::json gen = {{"program", "rulegen"},
                        {"ops", vocab.op_names},
                        {"max_ops", config.max_ops},
                        {"max_inputs", config.max_inputs},
                        {"seed", config.seed},
                        {"stats", st.to_json()}};
  if (result.is_shard) gen["shard"] = {{"index", config.shard_index}, {"count", config.shard_count}};
  result.corpus.generator = gen;
  return result;
}

RulegenResult merge_rulegen(const std::vector<std::filesystem::path>& inputs, const RulegenConfig& config) {
  auto start = Clock::now();
  RulegenResult result;
  std::vector<Rule> singles;
  std::vector<PatternEquation> unbound;
  nlohmann::json sources = nlohmann::json::array();
  nlohmann::json first_gen;
  for (const auto& path : inputs) {
    RuleCorpus c = load_corpus(path);
    if (first_gen.is_null()) first_gen = c.generator;
    sources.push_back(path.filename().string());
    for (Rule& r : c.rules) singles.push_back(std::move(r));
    if (c.generator.contains("unbound"))
      for (const auto& pair : c.generator["unbound"]) {
        PatternEquation q;
        q.lhs = parse_pattern(pair.at(0).get<std::string>());
        q.rhs = parse_pattern(pair.at(1).get<std::string>());
        q.bound = false;
        unbound.push_back(std::move(q));
      }
    if (c.generator.contains("stats")) {
      const auto& s = c.generator["stats"];
      RulegenStats part;
      part.enumerated = s.value("graphs_enumerated", 0ull);
      part.classes = s.value("fingerprint_classes", 0ull);
      part.candidates = s.value("candidates", 0ull);
      part.separated_by_second_set = s.value("separated_by_second_set", 0ull);
      part.pruned_renaming = s.value("pruned_renaming", 0ull);
      part.pruned_common_subgraph = s.value("pruned_common_subgraph", 0ull);
      part.proved = s.value("proved", 0ull);
      part.wrong = s.value("wrong", 0ull);
      part.unknown = s.value("unknown", 0ull);
      part.enumerate_s = s.value("enumerate_s", 0.0);
      part.prove_s = s.value("prove_s", 0.0);
      result.stats += part;
    }
  }
  std::vector<LeafType> types =
      config.leaf_types.empty() ? default_leaf_types(config.leaves_per_type) : config.leaf_types;
  finish(std::move(singles), std::move(unbound), config, types, result);
  result.stats.seconds = since(start);
  nlohmann::json gen = first_gen.is_object() ? first_gen : nlohmann::json::object();
  gen.erase("shard");
  gen.erase("unbound");
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
    nlohmann::json unbound = nlohmann::json::array();
    for (const PatternEquation& q : result.unbound)
      unbound.push_back({to_sexpr(q.lhs, q.lhs.root()), to_sexpr(q.rhs, q.rhs.root())});
    out.generator["unbound"] = unbound;
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
