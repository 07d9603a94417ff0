#include "optimizer/sequential.h"

#include "rules/rule_scope.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>

#include "optimizer/engine/egraph.h"   // is_constant_op
#include "optimizer/engine/extract.h"  // graph_cost
#include "rules/evaluator.h"

namespace teq {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int32_t kUnbound = -1;
constexpr int32_t kInProgress = -2;
// Bound on the combined matches of one multi-pattern rule in one graph (pairs grow quadratically).
constexpr size_t kMaxCombosPerRule = 20'000;

/// One candidate graph in canonical form: only what the roots reach, nodes in depth-first post-order
/// from the roots, so equal graphs have equal node lists (and hashes). Shapes and per-node costs ride
/// along so a rewrite recomputes them only for the nodes it creates.
struct Graph {
  Expr expr;
  std::vector<Shape> shapes;
  std::vector<double> node_cost;    // the cost model's figure in the node's context (0 for leaves)
  std::vector<bool> precomputable;  // depends only on weights and constants: free at run time
  std::vector<NodeMarks> marks;     // what the cost model said of the node's output (CostModel::marks)
  double cost = 0;
  uint64_t hash = 0;
  std::vector<uint32_t> history;    // rules applied on the way from the input
};

/// What a node of `g` is as an operand, for the cost model.
OperandFacts facts(const Graph& g, ExprId i) { return {g.precomputable[i.value], g.marks[i.value]}; }

bool precomputable_node(const ExprNode& n, const std::vector<bool>& pre) {
  if (n.op == OpKind::Weight || is_constant_op(n.op)) return true;
  if (is_leaf(n.op) || n.op == OpKind::Opaque || n.children.empty()) return false;
  for (ExprId c : n.children)
    if (!pre[c.value]) return false;
  return true;
}

/// A rule's patterns with each ?variable numbered, so a binding is a small vector.
struct CompiledRule {
  uint32_t index = 0;
  const Rule* rule = nullptr;
  size_t num_vars = 0;
  std::vector<std::vector<int>> lhs_var;  // per lhs pattern, per pattern node: variable number or -1
  std::vector<std::vector<int>> rhs_var;
  std::vector<std::vector<int>> same_shape;  // Rule::same_shape as variable numbers
  std::map<std::string, int> numbers;         // variable name -> number
  bool scoped = false;                        // has_scoped_convs(*rule): matches need a scope check
};

CompiledRule compile(const Rule& rule, uint32_t index) {
  CompiledRule c{index, &rule, 0, {}, {}, {}, {}, has_scoped_convs(rule)};
  std::map<std::string, int> number;
  for (const std::string& v : rule.variables()) number.emplace(v, static_cast<int>(number.size()));
  c.num_vars = number.size();
  auto numbering = [&](const Expr& pattern) {
    std::vector<int> out;
    for (const ExprNode& n : pattern.nodes()) out.push_back(n.op == OpKind::Var ? number.at(n.name) : -1);
    return out;
  };
  for (const Expr& p : rule.lhs) c.lhs_var.push_back(numbering(p));
  for (const Expr& p : rule.rhs) c.rhs_var.push_back(numbering(p));
  for (const std::vector<std::string>& group : rule.same_shape) {
    c.same_shape.emplace_back();
    for (const std::string& v : group) c.same_shape.back().push_back(number.at(v));
  }
  c.numbers = number;
  return c;
}

using Binding = std::vector<int32_t>;  // variable number -> graph node, or kUnbound

bool match_at(const Expr& pat, const std::vector<int>& var, ExprId p, const Expr& g, ExprId n, Binding& b) {
  const ExprNode& pn = pat[p];
  if (pn.op == OpKind::Var) {
    int32_t& slot = b[var[p.value]];
    if (slot == kUnbound) slot = static_cast<int32_t>(n.value);
    return slot == static_cast<int32_t>(n.value);
  }
  const ExprNode& gn = g[n];
  if (gn.op != pn.op || gn.attrs != pn.attrs || gn.children.size() != pn.children.size()) return false;
  for (size_t i = 0; i < pn.children.size(); ++i)
    if (!match_at(pat, var, pn.children[i], g, gn.children[i], b)) return false;
  return true;
}

/// One way to apply a rule: the graph nodes its lhs patterns matched and the variable binding.
struct Site {
  std::vector<ExprId> roots;
  Binding binding;
};

std::vector<Site> find_sites(const CompiledRule& rule, const Graph& g,
                             const std::vector<std::vector<ExprId>>& nodes_by_op) {
  std::vector<Site> sites;
  for (size_t j = 0; j < rule.rule->lhs.size(); ++j) {
    const Expr& pat = rule.rule->lhs[j];
    std::vector<Site> matches;
    for (ExprId n : nodes_by_op[static_cast<size_t>(pat[pat.root()].op)]) {
      Binding b(rule.num_vars, kUnbound);
      if (match_at(pat, rule.lhs_var[j], pat.root(), g.expr, n, b)) matches.push_back({{n}, std::move(b)});
    }
    if (j == 0) {
      sites = std::move(matches);
      continue;
    }
    std::vector<Site> joined;  // join on shared variables; distinct roots only
    for (const Site& s : sites) {
      if (joined.size() >= kMaxCombosPerRule) break;
      for (const Site& m : matches) {
        if (std::find(s.roots.begin(), s.roots.end(), m.roots[0]) != s.roots.end()) continue;
        Site merged = s;
        bool ok = true;
        for (size_t v = 0; v < rule.num_vars && ok; ++v) {
          if (m.binding[v] == kUnbound) continue;
          if (merged.binding[v] == kUnbound) merged.binding[v] = m.binding[v];
          else ok = merged.binding[v] == m.binding[v];
        }
        if (!ok) continue;
        merged.roots.push_back(m.roots[0]);
        joined.push_back(std::move(merged));
        if (joined.size() >= kMaxCombosPerRule) break;
      }
    }
    sites = std::move(joined);
    if (sites.empty()) break;
  }
  // The rule's shape conditions (Rule::same_shape), then its scope (rules/rule_scope.h): the grouping of its
  // convolutions, left side as matched and right side as it would be built, must be one it was verified at.
  std::erase_if(sites, [&](const Site& s) {
    for (const std::vector<int>& group : rule.same_shape)
      for (size_t k = 1; k < group.size(); ++k)
        if (g.shapes[s.binding[group[k]]] != g.shapes[s.binding[group[0]]]) return true;
    if (!rule.scoped) return false;
    VarShapes shapes;
    for (const auto& [name, v] : rule.numbers) shapes[name] = g.shapes[s.binding[v]];
    std::optional<std::string> grouping = instance_grouping(*rule.rule, shapes);
    return !grouping || !scope_admits(*rule.rule, *grouping);
  });
  return sites;
}

/// Copies a graph into canonical form, replacing the matched roots of one rule application by the
/// instantiated right sides. Fails (returns false) when a right side is ill-shaped, changes a shape, or
/// the replacement would make the graph cyclic (a right side that reaches its own matched root).
class Rewriter {
 public:
  Rewriter(const Graph& src, const CostModel& cost) : src_(src), cost_(cost), mapped_(src.expr.size(), kUnbound) {}

  /// One use per Rewriter. rule and site null: a plain canonical copy.
  std::optional<Graph> run(const CompiledRule* rule, const Site* site) {
    rule_ = rule;
    site_ = site;
    if (rule)
      for (const Expr& rhs : rule->rule->rhs) rhs_memo_.emplace_back(rhs.size(), kUnbound);
    for (ExprId r : src_.expr.roots()) {
      ExprId id = copy(r);
      if (failed_) return std::nullopt;
      out_.expr.add_root(id);
    }
    double total = 0;
    uint64_t h = 0;
    ExprNodeHash node_hash;
    for (size_t i = 0; i < out_.expr.size(); ++i) {
      if (!out_.precomputable[i]) total += out_.node_cost[i];
      h = h * 1'000'003 ^ node_hash(out_.expr.nodes()[i]);
    }
    for (ExprId r : out_.expr.roots()) h = h * 1'000'003 ^ r.value;
    out_.cost = total;
    out_.hash = h;
    out_.history = src_.history;
    if (rule) out_.history.push_back(rule->index);
    return std::move(out_);
  }

 private:
  ExprId add(ExprNode node, const Shape& shape, std::optional<double> known_cost) {
    const size_t before = out_.expr.size();
    ExprId id = out_.expr.add(std::move(node));
    if (out_.expr.size() == before) return id;  // an equal node exists already (shared subterm)
    const ExprNode& n = out_.expr[id];
    std::vector<OperandFacts> operands;
    std::vector<Shape> in;
    for (ExprId ch : n.children) {
      operands.push_back(facts(out_, ch));
      in.push_back(out_.shapes[ch.value]);
    }
    const NodeContext context{n.op, n.attrs, in, shape, operands};
    double c = 0;
    if (known_cost && !std::isnan(*known_cost)) c = *known_cost;
    else if (!is_leaf(n.op)) c = node_cost_in_context(cost_, context);
    out_.shapes.push_back(shape);
    out_.node_cost.push_back(c);
    out_.precomputable.push_back(precomputable_node(n, out_.precomputable));
    out_.marks.push_back(is_leaf(n.op) ? 0 : cost_.marks(context));
    return id;
  }

  ExprId copy(ExprId i) {
    int32_t& state = mapped_[i.value];
    if (state >= 0) return ExprId(static_cast<uint32_t>(state));
    if (state == kInProgress) {  // the rewrite reaches its own root: a cycle
      failed_ = true;
      return ExprId(0);
    }
    state = kInProgress;
    ExprId result(0);
    if (int j = replaced_index(i); j >= 0) {
      result = instantiate(j, rule_->rule->rhs[j].root());
      if (!failed_ && out_.shapes[result.value] != src_.shapes[i.value]) failed_ = true;
    } else {
      ExprNode n = src_.expr[i];
      // Its cost is known when its operands are what they were: a cost depends on the node and their facts.
      bool same_operands = true;
      for (size_t k = 0; k < n.children.size() && !failed_; ++k) {
        const ExprId before = n.children[k];
        n.children[k] = copy(before);
        same_operands = same_operands && !failed_ && facts(out_, n.children[k]) == facts(src_, before);
      }
      if (!failed_)
        result = add(std::move(n), src_.shapes[i.value],
                     same_operands ? std::optional<double>(src_.node_cost[i.value]) : std::nullopt);
    }
    mapped_[i.value] = failed_ ? kInProgress : static_cast<int32_t>(result.value);
    return result;
  }

  int replaced_index(ExprId i) const {
    if (!site_) return -1;
    for (size_t j = 0; j < site_->roots.size(); ++j)
      if (site_->roots[j] == i) return static_cast<int>(j);
    return -1;
  }

  ExprId instantiate(int j, ExprId p) {
    const Expr& pat = rule_->rule->rhs[j];
    std::vector<int32_t>& memo = rhs_memo_[j];  // shared subterms of a right side are built once
    if (memo[p.value] >= 0) return ExprId(static_cast<uint32_t>(memo[p.value]));
    const ExprNode& pn = pat[p];
    ExprId result(0);
    if (pn.op == OpKind::Var) {
      result = copy(ExprId(static_cast<uint32_t>(site_->binding[rule_->rhs_var[j][p.value]])));
    } else {
      ExprNode n{pn.op, pn.attrs, {}, {}};
      std::vector<Shape> in;
      for (ExprId c : pn.children) {
        ExprId id = instantiate(j, c);
        if (failed_) return result;
        n.children.push_back(id);
        in.push_back(out_.shapes[id.value]);
      }
      std::optional<Shape> shape = try_infer_shape(n.op, n.attrs, in);
      if (!shape) {  // the right side does not fit these shapes: not applicable here
        failed_ = true;
        return result;
      }
      result = add(std::move(n), *shape, std::nullopt);
    }
    if (!failed_) memo[p.value] = static_cast<int32_t>(result.value);
    return result;
  }

  const Graph& src_;
  const CostModel& cost_;
  const CompiledRule* rule_ = nullptr;
  const Site* site_ = nullptr;
  std::vector<int32_t> mapped_;
  std::vector<std::vector<int32_t>> rhs_memo_;  // per right side, per pattern node
  Graph out_;
  bool failed_ = false;
};

/// The input graph with shapes and costs, in canonical form.
Graph canonical_input(const Expr& graph, const CostModel& cost) {
  Graph g;
  g.expr = graph;
  g.shapes = infer_shapes(graph, {});
  for (size_t i = 0; i < graph.size(); ++i) {
    // Not priced yet: the canonical copy prices each node with its operands' facts.
    g.node_cost.push_back(std::numeric_limits<double>::quiet_NaN());
    g.precomputable.push_back(false);  // these two are recomputed by the canonical copy
    g.marks.push_back(0);
  }
  return *Rewriter(g, cost).run(nullptr, nullptr);
}

}  // namespace

OptimizeReport optimize_sequential(const Expr& graph, const RuleCorpus& rules, const CostModel& cost,
                                   const SequentialConfig& config) {
  for (const ExprNode& n : graph.nodes())
    if (n.op == OpKind::Var) throw ShapeError("optimize_sequential: the graph has a pattern variable ?" + n.name);
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };

  std::vector<CompiledRule> compiled;
  for (size_t i = 0; i < rules.rules.size(); ++i) compiled.push_back(compile(rules.rules[i], static_cast<uint32_t>(i)));

  auto start = std::make_shared<const Graph>(canonical_input(graph, cost));
  std::shared_ptr<const Graph> best = start;
  std::multimap<double, std::shared_ptr<const Graph>> queue;  // cheapest first
  std::unordered_set<uint64_t> seen{start->hash};
  queue.emplace(start->cost, start);

  OptimizeReport report;
  report.stop.reason = SearchStop::Reason::QueueEmpty;
  size_t expanded = 0;
  bool out_of_time = false, out_of_graphs = false;
  while (!queue.empty() && !out_of_time && !out_of_graphs) {
    if (expanded >= config.budget) {
      report.stop.reason = SearchStop::Reason::Budget;
      break;
    }
    std::shared_ptr<const Graph> g = queue.begin()->second;
    queue.erase(queue.begin());
    ++expanded;
    std::vector<std::vector<ExprId>> nodes_by_op(all_ops().size());
    for (size_t i = 0; i < g->expr.size(); ++i)
      nodes_by_op[static_cast<size_t>(g->expr.nodes()[i].op)].push_back(ExprId(static_cast<uint32_t>(i)));
    for (const CompiledRule& rule : compiled) {
      for (const Site& site : find_sites(rule, *g, nodes_by_op)) {
        if (elapsed() > config.time_limit_s) {
          out_of_time = true;
          break;
        }
        std::optional<Graph> next = Rewriter(*g, cost).run(&rule, &site);
        if (!next || !seen.insert(next->hash).second) continue;
        out_of_graphs = seen.size() - 1 >= config.max_graphs;
        auto candidate = std::make_shared<const Graph>(std::move(*next));
        if (candidate->cost < best->cost) best = candidate;
        if (candidate->cost < config.alpha * best->cost) {
          queue.emplace(candidate->cost, candidate);
          if (queue.size() > config.max_queue) queue.erase(std::prev(queue.end()));
        }
        if (out_of_graphs) break;
      }
      if (out_of_time || out_of_graphs) break;
    }
    if (config.on_progress)
      config.on_progress({expanded, seen.size() - 1, queue.size(), best->cost, elapsed()});
  }
  if (out_of_graphs) report.stop.reason = SearchStop::Reason::GraphLimit;
  if (out_of_time) report.stop.reason = SearchStop::Reason::TimeLimit;

  report.original_cost = graph_cost(graph, cost);
  report.optimized = best->expr;
  report.optimized_cost = graph_cost(best->expr, cost);
  if (report.optimized_cost > report.original_cost) {  // cannot happen: best starts as the input
    report.optimized = graph;
    report.optimized_cost = report.original_cost;
  }
  report.saturate_seconds = elapsed();
  report.iterations = expanded;
  report.enodes = seen.size() - 1;
  for (uint32_t r : best->history) ++report.rules_used[rules.rules[r].id];
  // No lower bound is known: bound 0, gap 1 (0 for a free graph).
  report.extraction = ExtractionStats{"sequential", report.optimized_cost, 0, report.optimized_cost > 0 ? 1.0 : 0.0, ""};
  return report;
}

}  // namespace teq
