#include "optimizer/engine/runner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "optimizer/engine/cycles.h"
#include "rules/rule_growth.h"
#include "rules/rule_scope.h"

namespace teq {

std::string to_string(const IterationStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "iter %zu: %zu e-nodes, %zu e-classes, %zu matches, %.3f s", s.iteration,
                s.enodes, s.eclasses, s.matches, s.seconds);
  return buf;
}

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::Saturated: return "saturated";
    case StopReason::NodeLimit: return "node-limit";
    case StopReason::IterLimit: return "iter-limit";
    case StopReason::TimeLimit: return "time-limit";
  }
  return "unknown";
}

struct CompiledRules::Entry {
  RuleId id;
  VarTable vars;
  std::vector<Pattern> lhs, rhs;
  std::vector<std::vector<uint32_t>> same_shape;  // Rule::same_shape as variable slots
  /// The rule's scope (rules/rule_scope.h) restricted to the patterns this entry uses: each admitted grouping
  /// as its sides' per-pattern groupings. Empty when the rule has no convolution on a weight of free shape.
  std::vector<SidedGrouping> scope;
  /// For a rule that feeds itself (rules/rule_growth.h): each variable it grows, as a slot, and the operator
  /// of the term it grows it into. Empty for every other rule.
  std::vector<std::pair<uint32_t, OpKind>> grows;

  /// Whether `subst` binds a grown variable to a class holding the term this rule itself created there: the
  /// match is of the rule's own output, and applying it would start the next generation.
  bool matches_own_output(const EGraph& egraph, const Subst& subst) const {
    for (const auto& [slot, op] : grows)
      for (NodeId n : egraph.eclass(egraph.find(subst[slot])).nodes)
        if (egraph.node(n).op == op && egraph.origin(n) == id) return true;
    return false;
  }

  /// Whether the match `subst` is inside the rule's scope: the grouping of its convolutions, left side as
  /// matched and right side as it would be instantiated, is one the rule was verified at. Both sides count: a
  /// rule used right to left, or a left side whose convolution is grouped, is outside the proof all the same.
  /// `rhs_shapes`: instantiated_shapes of each right side, which the caller has computed already.
  bool in_scope(const EGraph& egraph, const Subst& subst, std::span<const std::vector<Shape>> rhs_shapes) const {
    if (scope.empty()) return true;
    SidedGrouping g;
    for (const Pattern& p : lhs) {
      auto shapes = instantiated_shapes(egraph, p, subst);  // the matched shapes
      if (!shapes) return false;
      g.lhs.push_back(pattern_grouping(p, *shapes));
    }
    for (size_t k = 0; k < rhs.size(); ++k) g.rhs.push_back(pattern_grouping(rhs[k], rhs_shapes[k]));
    return std::find(scope.begin(), scope.end(), g) != scope.end();
  }

  /// Whether the rule's shape conditions hold under `subst`.
  bool conditions_hold(const EGraph& egraph, const Subst& subst) const {
    for (const std::vector<uint32_t>& group : same_shape)
      for (size_t k = 1; k < group.size(); ++k)
        if (egraph.shape(subst[group[k]]) != egraph.shape(subst[group[0]])) return false;
    return true;
  }
};

struct Runner::Iteration {
  size_t index = 0;
  ClassIndex classes;
  size_t num_matches = 0;
  bool any_banned = false;
  std::vector<std::pair<const Compiled*, std::vector<Match>>> found;  // single-pattern matches
  struct Joined {
    const Compiled* rule;
    std::vector<std::pair<std::array<ClassId, 2>, Subst>> apps;  // the two roots, the joined substitution
  };
  std::vector<Joined> joined;  // multi-pattern applications
  std::map<uint32_t, size_t> own_output_matches;  // per rule that feeds itself: matches of its own output skipped
};

namespace {

std::set<uint32_t> slots_of(const Pattern& p) { return {p.var_slots().begin(), p.var_slots().end()}; }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

CompiledRules::CompiledRules(std::span<const Rule> rules, bool cross_product_multi)
    : cross_product_multi_(cross_product_multi) {
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& rule = rules[i];
    ids_.push_back(rule.id);
    const RuleId id(i);
    auto compile = [&](std::vector<size_t> parts) {
      Entry c{id, {}, {}, {}, {}, {}, {}};
      for (size_t k : parts) c.lhs.emplace_back(rule.lhs[k], c.vars);
      for (size_t k : parts) c.rhs.emplace_back(rule.rhs[k], c.vars);
      if (has_scoped_convs(rule))
        for (const std::string& text : scope_groupings(rule)) {
          const SidedGrouping full = split_grouping(text);
          SidedGrouping part;
          for (size_t k : parts) part.lhs.push_back(full.lhs.at(k)), part.rhs.push_back(full.rhs.at(k));
          if (std::find(c.scope.begin(), c.scope.end(), part) == c.scope.end()) c.scope.push_back(std::move(part));
        }
      if (parts.size() == 1)
        for (const GrowingVar& g : self_feeding_vars(rule.lhs[parts[0]], rule.rhs[parts[0]]))
          c.grows.emplace_back(*c.vars.find(g.var), g.image_op);
      for (const std::vector<std::string>& group : rule.same_shape) {
        c.same_shape.emplace_back();
        for (const std::string& v : group) {
          std::optional<uint32_t> slot = c.vars.find(v);
          // A two-pattern rule used as two single ones: a condition across them cannot be checked.
          if (!slot) throw std::runtime_error("shape condition on ?" + v + ", a variable of the other pattern");
          c.same_shape.back().push_back(*slot);
        }
      }
      return c;
    };
    try {
      if (!rule.is_multi()) {
        single_.push_back(compile({0}));
      } else if (rule.lhs.size() > 2) {
        notes_.push_back("rule '" + rule.id + "': multi-pattern rules with more than two patterns are not used");
      } else {
        Entry c = compile({0, 1});
        std::set<uint32_t> a = slots_of(c.lhs[0]), b = slots_of(c.lhs[1]);
        bool shared = std::any_of(a.begin(), a.end(), [&](uint32_t s) { return b.contains(s); });
        if (shared || cross_product_multi) {
          multi_.push_back(std::move(c));
          continue;
        }
        // No shared variable: a cross product of unrelated matches. Usable only as two single rules.
        std::set<uint32_t> r0 = slots_of(c.rhs[0]), r1 = slots_of(c.rhs[1]);
        if (std::includes(a.begin(), a.end(), r0.begin(), r0.end()) &&
            std::includes(b.begin(), b.end(), r1.begin(), r1.end())) {
          single_.push_back(compile({0}));
          single_.push_back(compile({1}));
        } else {
          notes_.push_back("rule '" + rule.id +
                           "': patterns share no variable but a right side uses the other side's variables");
        }
      }
    } catch (const std::exception& e) {
      notes_.push_back("rule '" + rule.id + "': " + e.what());
    }
  }
}

CompiledRules::~CompiledRules() = default;
CompiledRules::CompiledRules(CompiledRules&&) noexcept = default;

Runner::Runner(std::span<const Rule> rules, RunnerConfig config)
    : Runner(std::make_shared<const CompiledRules>(rules, config.cross_product_multi), config) {}

Runner::Runner(std::shared_ptr<const CompiledRules> rules, RunnerConfig config, std::span<const char> enabled)
    : rules_(std::move(rules)), config_(std::move(config)) {
  if (rules_->cross_product_multi() != config_.cross_product_multi)
    throw std::invalid_argument("Runner: rules compiled with another cross_product_multi than the config's");
  if (!enabled.empty() && enabled.size() != rules_->size())
    throw std::invalid_argument("Runner: the enabled mask has " + std::to_string(enabled.size()) +
                                " entries for " + std::to_string(rules_->size()) + " rules");
  auto on = [&](const Compiled& c) { return enabled.empty() || enabled[c.id.value]; };
  for (const Compiled& c : rules_->single_)
    if (on(c)) single_.push_back(&c);
  for (const Compiled& c : rules_->multi_)
    if (on(c)) multi_.push_back(&c);
}

Runner::~Runner() = default;
Runner::Runner(Runner&&) noexcept = default;

bool Runner::over_time() const {
  return seconds_since(started_) > config_.time_limit_s;
}

// Adds the rule's right side `side` under `subst` and merges it with `root`, if well-shaped.
bool Runner::apply(EGraph& egraph, const Compiled& r, size_t side, ClassId root, const Subst& subst,
                   RunReport& report) const {
  // A two-pattern rule's conditions and scope were checked for both sides together (apply_multi).
  const bool single = r.lhs.size() == 1;
  if (single && !r.conditions_hold(egraph, subst)) {
    ++report.rejected_shape;
    return false;
  }
  auto shapes = instantiated_shapes(egraph, r.rhs[side], subst);
  if (!shapes || shapes->back() != egraph.shape(root) || (single && !r.in_scope(egraph, subst, {&*shapes, 1}))) {
    ++report.rejected_shape;
    return false;
  }
  ClassId c = instantiate(egraph, r.rhs[side], subst, r.id);
  egraph.merge(root, c);
  ++report.applied;
  return true;
}

std::vector<Match> Runner::search_rule(const EGraph& egraph, Iteration& it, size_t k) {
  if (!scheduler_.can_search(k, it.index)) {
    it.any_banned = true;
    return {};
  }
  const size_t threshold = scheduler_.match_threshold(k);
  const Compiled& r = *single_[k];
  std::vector<Match> ms = search(egraph, it.classes, r.lhs[0], r.vars.names.size(),
                                 threshold == SIZE_MAX ? SIZE_MAX : threshold + 1);
  if (config_.self_feeding_once && !r.grows.empty()) {
    // One generation deep: a rule that feeds itself would otherwise match its own output in every iteration.
    const size_t before = ms.size();
    std::erase_if(ms, [&](const Match& m) { return r.matches_own_output(egraph, m.subst); });
    it.own_output_matches[r.id.value] += before - ms.size();
  }
  it.num_matches += ms.size();
  if (scheduler_.record(k, it.index, ms.size())) {
    it.any_banned = true;
    return {};
  }
  return ms;
}

// Every single-pattern rule against the same clean snapshot, through the backoff scheduler.
void Runner::search_single(const EGraph& egraph, Iteration& it) {
  for (size_t k = 0; k < single_.size(); ++k) {
    std::vector<Match> ms = search_rule(egraph, it, k);
    if (!ms.empty()) it.found.emplace_back(single_[k], std::move(ms));
    if (over_time()) break;
  }
}

// search_lazily: rule k searched on `snapshot` (the e-graph as the iteration began) and its matches applied to
// `egraph` at once; what apply_single would do with search_single's matches, rule by rule.
void Runner::search_and_apply_single(const EGraph& snapshot, EGraph& egraph, Iteration& it, RunReport& report) {
  for (size_t k = 0; k < single_.size(); ++k) {
    if (over_nodes(egraph) || over_time()) return;
    if (config_.stop_applying && config_.stop_applying()) return;
    const std::vector<Match> ms = search_rule(snapshot, it, k);
    for (const Match& m : ms) {
      if (over_nodes(egraph)) return;
      apply(egraph, *single_[k], 0, m.root, m.subst, report);
    }
  }
}

// Multi-pattern rules (Tensat): each distinct source pattern is matched once, then each rule joins the
// matches of its two patterns on their shared variables (a hash join).
void Runner::join_multi(const EGraph& egraph, Iteration& it) const {
  std::unordered_map<std::string, std::vector<Match>> by_key;  // substs in canonical var order
  auto matches_of = [&](const Pattern& p, size_t num_slots) -> const std::vector<Match>& {
    std::string key = p.canonical_key();
    auto found = by_key.find(key);
    if (found != by_key.end()) return found->second;
    std::vector<uint32_t> order = p.canonical_vars();
    std::vector<Match> ms = search(egraph, it.classes, p, num_slots);
    for (Match& m : ms) {
      Subst canon;
      for (uint32_t s : order) canon.push_back(m.subst[s]);
      m.subst = std::move(canon);
    }
    return by_key.emplace(std::move(key), std::move(ms)).first->second;
  };
  for (const Compiled* rule : multi_) {
    const Compiled& r = *rule;
    const std::vector<Match>& m0 = matches_of(r.lhs[0], r.vars.names.size());
    const std::vector<Match>& m1 = matches_of(r.lhs[1], r.vars.names.size());
    const bool symmetric = &m0 == &m1;
    const std::vector<uint32_t> o0 = r.lhs[0].canonical_vars(), o1 = r.lhs[1].canonical_vars();
    // Shared variables: position in each side's canonical order.
    std::vector<std::pair<size_t, size_t>> shared;
    for (size_t i = 0; i < o0.size(); ++i)
      for (size_t j = 0; j < o1.size(); ++j)
        if (o0[i] == o1[j]) shared.emplace_back(i, j);
    std::unordered_map<std::string, std::vector<size_t>> buckets;
    auto key_of = [&](const Subst& s, bool first) {
      std::string k;
      for (auto [i, j] : shared) k += std::to_string(s[first ? i : j].value) + ",";
      return k;
    };
    for (size_t b = 0; b < m1.size(); ++b) buckets[key_of(m1[b].subst, false)].push_back(b);
    Iteration::Joined out{&r, {}};
    for (size_t a = 0; a < m0.size() && out.apps.size() < config_.multi_limit; ++a) {
      auto bucket = buckets.find(key_of(m0[a].subst, true));
      if (bucket == buckets.end()) continue;
      for (size_t b : bucket->second) {
        // Unordered pairs, once; but a rule whose patterns share no variable (cross_product_multi)
        // builds different terms for (a, b) and (b, a), e.g. concat(x, y) and concat(y, x).
        if (symmetric && (shared.empty() ? b == a : b <= a)) continue;
        if (m0[a].root == m1[b].root) continue;
        Subst s(r.vars.names.size(), ClassId(kUnbound));
        for (size_t i = 0; i < o0.size(); ++i) s[o0[i]] = m0[a].subst[i];
        for (size_t j = 0; j < o1.size(); ++j) s[o1[j]] = m1[b].subst[j];
        out.apps.push_back({{m0[a].root, m1[b].root}, std::move(s)});
        if (out.apps.size() >= config_.multi_limit) break;
      }
    }
    it.num_matches += out.apps.size();
    if (!out.apps.empty()) it.joined.push_back(std::move(out));
  }
}

// The joined multi-pattern applications. The cycle pre-filter sees the e-graph before this iteration's
// changes; cycles formed by several applications together are left to blacklist_cycles() before extraction.
void Runner::apply_multi(EGraph& egraph, Iteration& it, RunReport& report) const {
  if (it.joined.empty()) return;
  const ReachabilityIndex reach(egraph);
  for (const Iteration::Joined& j : it.joined) {
    if (config_.stop_applying && config_.stop_applying()) return;
    const Compiled& r = *j.rule;
    std::set<uint32_t> rhs_vars = slots_of(r.rhs[0]);
    for (uint32_t s : r.rhs[1].var_slots()) rhs_vars.insert(s);
    for (const auto& [roots, subst] : j.apps) {
      if (over_nodes(egraph)) return;
      bool cyclic = false;
      for (uint32_t v : rhs_vars)
        for (ClassId root : roots) cyclic = cyclic || reach.reaches(subst[v], root);
      if (cyclic) {
        ++report.rejected_cycle;
        continue;
      }
      // Both sides must be well-shaped before either is added.
      bool ok = r.conditions_hold(egraph, subst);
      std::vector<std::vector<Shape>> rhs_shapes;
      for (size_t k = 0; k < 2 && ok; ++k) {
        auto shapes = instantiated_shapes(egraph, r.rhs[k], subst);
        ok = shapes && shapes->back() == egraph.shape(roots[k]);
        if (ok) rhs_shapes.push_back(std::move(*shapes));
      }
      ok = ok && r.in_scope(egraph, subst, rhs_shapes);
      if (!ok) {
        ++report.rejected_shape;
        continue;
      }
      for (size_t k = 0; k < 2; ++k) apply(egraph, r, k, roots[k], subst, report);
    }
  }
}

void Runner::apply_single(EGraph& egraph, Iteration& it, RunReport& report) const {
  for (auto& [r, ms] : it.found) {
    if (over_nodes(egraph) || over_time()) return;
    if (config_.stop_applying && config_.stop_applying()) return;
    for (const Match& m : ms) {
      if (over_nodes(egraph)) return;
      apply(egraph, *r, 0, m.root, m.subst, report);
    }
  }
}

RunReport Runner::run(EGraph& egraph) {
  started_ = Clock::now();
  RunReport report;
  report.notes = rules_->notes();
  std::map<uint32_t, size_t> own_output_skipped;
  scheduler_ = BackoffScheduler(single_.size(), config_.backoff, config_.match_limit, config_.ban_length);
  egraph.rebuild();
  bool stopped = false;
  for (size_t iter = 0; iter < config_.iter_limit && !stopped; ++iter) {
    const uint64_t version_before = egraph.version();
    Iteration it{iter, ClassIndex(egraph), 0, false, {}, {}, {}};
    const bool lazily = config_.search_lazily && !config_.backoff && !single_.empty();
    std::optional<EGraph> snapshot;
    if (lazily) snapshot.emplace(egraph);  // the clean e-graph every rule of this iteration is searched on
    else search_single(egraph, it);
    if (static_cast<int64_t>(iter) < config_.k_multi && !multi_.empty()) join_multi(egraph, it);
    apply_multi(egraph, it, report);
    if (lazily) search_and_apply_single(*snapshot, egraph, it, report);
    else apply_single(egraph, it, report);
    egraph.rebuild();
    for (const auto& [rule, n] : it.own_output_matches) own_output_skipped[rule] += n;

    IterationStats stats{iter, egraph.num_nodes(), egraph.num_classes(), it.num_matches, seconds_since(started_)};
    report.per_iteration.push_back(stats);
    report.iterations = iter + 1;
    if (config_.on_iteration) config_.on_iteration(stats);

    if (over_nodes(egraph)) {
      report.stop = StopReason::NodeLimit;
      stopped = true;
    } else if (over_time()) {
      report.stop = StopReason::TimeLimit;
      stopped = true;
    } else if (egraph.version() == version_before) {
      // Nothing changed. Banned rules may still have work (egg: unban them and go on); multi-pattern
      // rules that ran this iteration will not run again, so they do not keep the loop going.
      if (!it.any_banned) {
        report.stop = StopReason::Saturated;
        stopped = true;
      } else {
        scheduler_.unban_all();
      }
    }
  }
  if (!stopped) report.stop = StopReason::IterLimit;
  for (const auto& [rule, n] : own_output_skipped)
    if (n > 0) report.own_output_skipped[rules_->rule_ids()[rule]] += n;
  report.seconds = seconds_since(started_);
  return report;
}

}  // namespace teq
