#include "verify/shape_assign.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "rules/ops/leaves.h"
#include "rules/rank_signature.h"
#include "rules/rule_scope.h"
#include "rules/sexpr.h"
#include "rules/symbolic_dims.h"

namespace teq {
namespace {

/// Union-find over slots 0..n-1 (path halving); a join keeps its first argument's root, so the solvers
/// below merge their per-class facts into it.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n = 0) { reset(n); }
  void reset(size_t n) {
    parent_.resize(n);
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  size_t size() const { return parent_.size(); }
  size_t find(size_t a) {
    while (parent_[a] != a) a = parent_[a] = parent_[parent_[a]];
    return a;
  }
  /// Merges the classes of a and b: their roots (kept, absorbed), or nothing when they are one class.
  std::optional<std::pair<size_t, size_t>> join(size_t a, size_t b) {
    a = find(a), b = find(b);
    if (a == b) return std::nullopt;
    parent_[b] = a;
    return std::pair{a, b};
  }

 private:
  std::vector<size_t> parent_;
};

// ---- ranks -------------------------------------------------------------------------------------------
// Every node of every pattern gets a rank slot; a variable's nodes share its slot. Operators add hard
// constraints (equal ranks, fixed ranks, lower bounds) and soft ones (matmul operands like their output),
// applied only where they do not conflict.
class RankSolver {
 public:
  explicit RankSolver(size_t slots) : sets_(slots), fixed_(slots, -1), min_(slots, 0) {}
  size_t find(size_t a) { return sets_.find(a); }
  void equal(size_t a, size_t b) {
    const auto roots = sets_.join(a, b);
    if (!roots) return;
    std::tie(a, b) = *roots;
    if (fixed_[a] < 0) fixed_[a] = fixed_[b];
    else if (fixed_[b] >= 0 && fixed_[b] != fixed_[a]) conflict("rank " + std::to_string(fixed_[a]) + " vs " + std::to_string(fixed_[b]));
    min_[a] = std::max(min_[a], min_[b]);
  }
  bool compatible(size_t a, size_t b) {
    a = find(a), b = find(b);
    int fa = fixed_[a], fb = fixed_[b];
    if (fa >= 0 && fb >= 0) return fa == fb;
    int f = std::max(fa, fb), m = std::max(min_[a], min_[b]);
    return f < 0 || f >= m;
  }
  void fix(size_t a, int r) {
    a = find(a);
    if (fixed_[a] >= 0 && fixed_[a] != r) conflict("rank " + std::to_string(fixed_[a]) + " vs " + std::to_string(r));
    fixed_[a] = r;
  }
  void at_least(size_t a, int r) { a = find(a), min_[a] = std::max(min_[a], r); }
  int fixed(size_t a) { return fixed_[find(a)]; }
  int min(size_t a) { return min_[find(a)]; }
  void conflict(std::string what) {
    if (error.empty()) error = "rank conflict: " + std::move(what);
  }
  void check_bounds() {
    for (size_t a = 0; a < sets_.size(); ++a)
      if (find(a) == a && fixed_[a] >= 0 && fixed_[a] < min_[a])
        conflict("rank " + std::to_string(fixed_[a]) + " below required " + std::to_string(min_[a]));
  }
  std::string error;

 private:
  DisjointSets sets_;
  std::vector<int> fixed_, min_;
};

// Preferred sizes per dimension class, from the conv/pool axes in it (higher wins when they meet).
enum class AxisRole { None, Batch, Spatial, Kernel };

// Preferred values per axis for variables with a recognisable role, so conv rules get small images and
// kernels of the sizes conv rules are about.
enum class Role { None, ConvInput, ConvKernel };

struct Problem {
  std::vector<const Expr*> patterns;
  std::vector<size_t> offset;               // first global node index of each pattern
  size_t num_nodes = 0;
  std::vector<std::string> vars;            // in first-occurrence order
  std::map<std::string, size_t> var_index;
  std::vector<int> node_var;                // var index of a Var node, else -1
  std::vector<Role> role;                   // per variable

  const ExprNode& node(size_t g) const {
    size_t p = std::upper_bound(offset.begin(), offset.end(), g) - offset.begin() - 1;
    return (*patterns[p])[ExprId(g - offset[p])];
  }
  size_t global(size_t p, ExprId id) const { return offset[p] + id.value; }
  size_t root(size_t p) const { return global(p, patterns[p]->root()); }
};

Problem make_problem(std::span<const Expr* const> patterns) {
  Problem pr;
  pr.patterns.assign(patterns.begin(), patterns.end());
  for (const Expr* e : patterns) {
    pr.offset.push_back(pr.num_nodes);
    pr.num_nodes += e->size();
  }
  pr.node_var.assign(pr.num_nodes, -1);
  for (size_t p = 0; p < patterns.size(); ++p)
    for (size_t i = 0; i < patterns[p]->size(); ++i) {
      const ExprNode& n = patterns[p]->nodes()[i];
      if (n.op != OpKind::Var) continue;
      auto [it, added] = pr.var_index.emplace(n.name, pr.vars.size());
      if (added) pr.vars.push_back(n.name);
      pr.node_var[pr.offset[p] + i] = static_cast<int>(it->second);
    }
  pr.role.assign(pr.vars.size(), Role::None);
  for (size_t g = 0; g < pr.num_nodes; ++g) {
    const ExprNode& n = pr.node(g);
    size_t p = std::upper_bound(pr.offset.begin(), pr.offset.end(), g) - pr.offset.begin() - 1;
    auto child_var = [&](size_t k) { return pr.node_var[pr.global(p, n.children[k])]; };
    auto set_role = [&](int v, Role r) {
      if (v >= 0 && pr.role[v] == Role::None) pr.role[v] = r;
    };
    if (n.op == OpKind::Conv2d) {
      set_role(child_var(0), Role::ConvInput);
      set_role(child_var(1), Role::ConvKernel);
    } else if (n.op == OpKind::MaxPool || n.op == OpKind::AvgPool) {
      set_role(child_var(0), Role::ConvInput);
    } else if (n.op == OpKind::Enlarge || n.op == OpKind::Merge) {
      set_role(child_var(0), Role::ConvKernel);
    }
  }
  return pr;
}

/// Rank constraints of every operator node (slots: nodes, then variables), from each operator's rank
/// signature (rules/rank_signature.h: read off its shape rule): fixed ranks, lower bounds, operands of equal
/// rank, the output's rank; where the output's rank is some operand's in some cases only (a matmul's, a
/// broadcast's), a soft constraint.
void constrain_ranks(const Problem& pr, RankSolver& rs, bool equal_roots,
                     std::vector<std::pair<size_t, size_t>>& soft) {
  const size_t var_slot0 = pr.num_nodes;
  for (size_t p = 0; p < pr.patterns.size(); ++p) {
    const Expr& e = *pr.patterns[p];
    for (size_t i = 0; i < e.size(); ++i) {
      const ExprNode& n = e.nodes()[i];
      const size_t g = pr.offset[p] + i;
      auto c = [&](size_t k) { return pr.global(p, n.children[k]); };
      if (n.op == OpKind::Var) {
        rs.equal(g, var_slot0 + pr.node_var[g]);
        continue;
      }
      if (is_leaf(n.op)) {  // a named input or weight: its attributes are its shape
        rs.fix(g, static_cast<int>(n.attrs.size()));
        continue;
      }
      const RankSignature& sig = rank_signature(n.op, n.attrs, n.children.size());
      if (!sig.accepts) {
        rs.conflict(std::string(op_name(n.op)) + " accepts no operand ranks with attributes " + to_string(n.attrs));
        continue;
      }
      for (size_t k = 0; k < n.children.size(); ++k) {
        if (sig.operands[k].fixed) rs.fix(c(k), *sig.operands[k].fixed);
        else rs.at_least(c(k), sig.operands[k].at_least);
      }
      for (auto [a, b] : sig.equal_operands) rs.equal(c(a), c(b));
      if (sig.output_fixed) rs.fix(g, *sig.output_fixed);
      if (sig.output_equals) rs.equal(g, c(*sig.output_equals));
      rs.at_least(g, sig.output_at_least);
      for (size_t k : sig.output_may_equal) soft.emplace_back(c(k), g);
    }
  }
  if (equal_roots) {
    size_t half = pr.patterns.size() / 2;
    for (size_t p = 0; p < half; ++p) rs.equal(pr.root(p), pr.root(p + half));
  }
}

// ---- dimensions --------------------------------------------------------------------------------------
// Before searching, dimensions that the operators force equal (ewadd operands, matmul's inner dims, the
// off-axis dims of a concat, ...) are unified into classes, so the search picks one value per class
// instead of discovering each equality by failing. The unification only guides: every candidate is still
// checked with the real shape functions, and if it is too strict (a conflict) the search runs without it.
class DimClasses {
 public:
  DimClasses(const Problem& pr, const std::vector<int>& var_rank, ConvGroups groups, bool equal_roots) : pr_(pr) {
    // Slots: every variable's axes, then every operator node's axes.
    base_.assign(pr.num_nodes, 0);
    rank_.assign(pr.num_nodes, 0);
    size_t next = 0;
    std::vector<size_t> var_base(pr.vars.size());
    for (size_t v = 0; v < pr.vars.size(); ++v) var_base[v] = next, next += var_rank[v];
    for (size_t g = 0; g < pr.num_nodes; ++g) {
      int v = pr.node_var[g];
      if (v >= 0) {
        base_[g] = var_base[v], rank_[g] = var_rank[v];
        continue;
      }
      rank_[g] = node_rank(g);
      base_[g] = next, next += std::max(rank_[g], 0);
    }
    var_base_ = var_base;
    sets_.reset(next);
    value_.assign(next, 0);
    for (size_t g = 0; g < pr.num_nodes; ++g)
      if (pr.node_var[g] < 0) constrain(g, groups);
    if (equal_roots) {
      size_t half = pr.patterns.size() / 2;
      for (size_t p = 0; p < half; ++p) {
        size_t a = pr.root(p), b = pr.root(p + half);
        if (rank_[a] != rank_[b]) conflict = true;
        else
          for (int d = 0; d < rank_[a]; ++d) unite(slot(a, d), slot(b, d));
      }
    }
  }

  size_t class_of_var_axis(size_t v, size_t axis) { return find(var_base_[v] + axis); }
  int64_t constant(size_t cls) { return value_[find(cls)]; }
  /// The role of a class: a kernel axis anywhere in it wins (small sizes), then a spatial or batch axis.
  AxisRole role(size_t cls) {
    AxisRole best = AxisRole::None;
    for (const auto& [slot, r] : roles_)
      if (find(slot) == find(cls) && static_cast<int>(r) > static_cast<int>(best)) best = r;
    return best;
  }
  size_t num_slots() const { return sets_.size(); }
  bool conflict = false;

 private:
  /// The rank the node's shape rule gives its operands' ranks (0 where it refuses them: the search fails there).
  int node_rank(size_t g) {
    const ExprNode& n = pr_.node(g);
    if (is_leaf(n.op)) return static_cast<int>(n.attrs.size());
    size_t p = pattern_of(g);
    std::vector<size_t> ranks;
    for (ExprId ch : n.children) ranks.push_back(static_cast<size_t>(std::max(rank_[pr_.global(p, ch)], 0)));
    return static_cast<int>(symbolic_rank(n.op, n.attrs, ranks).value_or(0));
  }
  size_t pattern_of(size_t g) const {
    return std::upper_bound(pr_.offset.begin(), pr_.offset.end(), g) - pr_.offset.begin() - 1;
  }
  size_t slot(size_t g, int axis) const { return base_[g] + axis; }
  size_t find(size_t a) { return sets_.find(a); }
  void unite(size_t a, size_t b) {
    const auto roots = sets_.join(a, b);
    if (!roots) return;
    std::tie(a, b) = *roots;
    if (value_[a] && value_[b] && value_[a] != value_[b]) conflict = true;
    if (!value_[a]) value_[a] = value_[b];
  }
  void pin(size_t a, int64_t v) {
    a = find(a);
    if (value_[a] && value_[a] != v) conflict = true;
    value_[a] = v;
  }
  // Same dims, all axes (ranks permitting).
  void same(size_t g, size_t h) {
    if (rank_[g] != rank_[h]) return;
    for (int d = 0; d < rank_[g]; ++d) unite(slot(g, d), slot(h, d));
  }
  void same_except(size_t g, size_t h, int64_t axis) {
    if (rank_[g] != rank_[h]) return;
    if (axis < 0) axis += rank_[g];
    for (int d = 0; d < rank_[g]; ++d)
      if (d != axis) unite(slot(g, d), slot(h, d));
  }

  /// The classes the node's shape rule (over dimension terms, rules/symbolic_dims.h) forces: an output
  /// dimension that is an operand's, or a constant; the equalities it requires of its operands' dimensions,
  /// and of a disjunction (a matmul's batch dimensions: equal, or one of them 1) its first alternative,
  /// preferring equal to broadcasting; a selection between dimensions (the larger batch dimension) joins them.
  /// Then the search hints of convolutions and pools: the roles of their axes, and, ungrouped, equal channels.
  void constrain(size_t g, ConvGroups groups) {
    const ExprNode& n = pr_.node(g);
    size_t p = pattern_of(g);
    auto c = [&](size_t k) { return pr_.global(p, n.children[k]); };
    if (is_leaf(n.op)) {  // a named input or weight: its attributes are its dimensions
      const AttrSpan dims = ops::leaf_dims(n.attrs);
      for (int d = 0; d < rank_[g] && d < static_cast<int>(dims.size()); ++d) pin(slot(g, d), dims[d]);
      return;
    }
    std::vector<size_t> ranks;
    for (size_t k = 0; k < n.children.size(); ++k) ranks.push_back(static_cast<size_t>(rank_[c(k)]));
    SymbolicArena arena;
    const std::optional<SymbolicShape> sym = symbolic_shape(arena, n.op, n.attrs, ranks);
    if (!sym || static_cast<int>(sym->dims.size()) != rank_[g]) return;
    auto operand_slot = [&](uint32_t id) -> std::optional<size_t> {
      const SymNode& t = arena[id];
      if (t.op != SymOp::Operand) return std::nullopt;
      return slot(c(static_cast<size_t>(t.value)), static_cast<int>(t.axis));
    };
    // x = y, x = constant: join or pin; a conjunction, each part; a disjunction, its first alternative when
    // that joins two dimensions (a broadcast's first, x = 1, would pin every operand to the trivial case).
    auto require = [&](auto& self, uint32_t id, bool pins) -> void {
      const SymNode& t = arena[id];
      if (t.op == SymOp::And) return self(self, t.a, pins), self(self, t.b, pins);
      if (t.op == SymOp::Or) return self(self, t.a, false);
      if (t.op != SymOp::Eq) return;
      const auto x = operand_slot(t.a), y = operand_slot(t.b);
      const auto kx = arena.constant_value(t.a), ky = arena.constant_value(t.b);
      if (x && y) unite(*x, *y);
      else if (pins && x && ky) pin(*x, *ky);
      else if (pins && y && kx) pin(*y, *kx);
    };
    for (const SymCond& cond : sym->conditions) require(require, cond.id, true);
    for (int d = 0; d < rank_[g]; ++d) {
      const uint32_t id = sym->dims[d].id;
      if (const auto from = operand_slot(id)) unite(slot(g, d), *from);
      else if (const auto k = arena.constant_value(id)) pin(slot(g, d), *k);
      else if (arena[id].op == SymOp::Select)
        for (uint32_t branch : {arena[id].b, arena[id].c})
          if (const auto from = operand_slot(branch)) unite(slot(g, d), *from);
    }
    if (n.op == OpKind::Conv2d || n.op == OpKind::MaxPool || n.op == OpKind::AvgPool) {
      const size_t x = c(0);
      roles_[slot(x, 0)] = AxisRole::Batch;
      roles_[slot(x, 2)] = roles_[slot(x, 3)] = AxisRole::Spatial;
    }
    if (n.op == OpKind::Conv2d) {
      const size_t x = c(0), w = c(1);
      roles_[slot(w, 2)] = roles_[slot(w, 3)] = AxisRole::Kernel;
      if (groups == ConvGroups::Ungrouped && pr_.node_var[w] >= 0) unite(slot(x, 1), slot(w, 1));
    }
  }

  const Problem& pr_;
  std::vector<size_t> base_, var_base_;
  std::vector<int> rank_;
  DisjointSets sets_;
  std::vector<int64_t> value_;  // 0 = not pinned
  std::map<size_t, AxisRole> roles_;
};

class DimSearch {
 public:
  /// Group counts that earlier grouped assignments gave each convolution node (on a variable weight).
  using UsedGroups = std::map<size_t, std::set<int64_t>>;

  DimSearch(const Problem& pr, const ShapeSearchOptions& opt, std::vector<int> ranks,
            const std::vector<VarShapes>& previous, const UsedGroups& used_groups, bool unify,
            std::chrono::steady_clock::time_point deadline)
      : pr_(pr), opt_(opt), ranks_(std::move(ranks)), previous_(previous), used_groups_(used_groups),
        deadline_(deadline) {
    // The grouping asked for (ShapeSearchOptions::pattern_groupings): each scoped conv's letter at its node.
    expected_grouping_.assign(pr.num_nodes, 0);
    for (size_t p = 0; p < opt.pattern_groupings.size() && p < pr.patterns.size(); ++p) {
      const std::vector<ExprId> convs = scoped_convs(*pr.patterns[p]);
      for (size_t k = 0; k < convs.size() && k < opt.pattern_groupings[p].size(); ++k)
        expected_grouping_[pr.global(p, convs[k])] = opt.pattern_groupings[p][k];
    }
    // A node is checked as soon as the last variable it depends on is assigned.
    std::vector<int> dep(pr.num_nodes, -1);
    nodes_at_.resize(pr.vars.size());
    pairs_at_.resize(pr.vars.size());
    for (size_t p = 0; p < pr.patterns.size(); ++p)
      for (size_t i = 0; i < pr.patterns[p]->size(); ++i) {
        size_t g = pr.offset[p] + i;
        const ExprNode& n = pr.patterns[p]->nodes()[i];
        if (n.op == OpKind::Var) {
          dep[g] = pr.node_var[g];
          continue;
        }
        for (ExprId ch : n.children) dep[g] = std::max(dep[g], dep[pr.global(p, ch)]);
        if (dep[g] < 0) unconditional_.push_back(g);
        else nodes_at_[dep[g]].push_back(g);
      }
    if (opt.equal_roots) {
      size_t half = pr.patterns.size() / 2;
      for (size_t p = 0; p < half; ++p) {
        int d = std::max(dep[pr.root(p)], dep[pr.root(p + half)]);
        if (d >= 0) pairs_at_[d].emplace_back(pr.root(p), pr.root(p + half));
      }
    }
    shapes_.resize(pr.num_nodes);
    var_shapes_.resize(pr.vars.size());
    // Dimension classes: without unification every variable axis is its own class.
    DimClasses dc(pr, ranks_, opt.conv_groups, opt.equal_roots);
    unified_ = unify && !dc.conflict;
    size_t next_own = dc.num_slots();
    axis_class_.resize(pr.vars.size());
    for (size_t v = 0; v < pr.vars.size(); ++v)
      for (int a = 0; a < ranks_[v]; ++a) {
        size_t cls = unified_ ? dc.class_of_var_axis(v, a) : next_own++;
        axis_class_[v].push_back(cls);
        if (unified_ && dc.constant(cls)) pinned_[cls] = dc.constant(cls);
        if (unified_) class_role_[cls] = dc.role(cls);
      }
  }

  bool unified() const { return unified_; }
  bool stopped_by_clock() const { return stopped_by_clock_; }

  /// After a successful run: the group count of every convolution node on a variable weight.
  void record_groups(UsedGroups& used) const {
    for (size_t g = 0; g < pr_.num_nodes; ++g)
      if (const int64_t groups = var_weight_conv_groups(g); groups > 0) used[g].insert(groups);
  }

  std::optional<VarShapes> run(std::string& failure) {
    for (size_t g : unconditional_)
      if (!check_node(g)) {
        failure = "a pattern without variables is ill-shaped";
        return std::nullopt;
      }
    if (!dfs(0)) {
      failure = stopped_by_clock_            ? "shape search stopped by its wall-clock guard"
                : checks_ > opt_.max_checks ? "shape search budget exhausted"
                                            : "no well-shaped assignment";
      return std::nullopt;
    }
    VarShapes out;
    for (size_t v = 0; v < pr_.vars.size(); ++v) out[pr_.vars[v]] = var_shapes_[v];
    return out;
  }

 private:
  std::vector<int64_t> domain(size_t v, size_t axis) const {
    if (auto it = class_role_.find(axis_class_[v][axis]); it != class_role_.end()) {
      switch (it->second) {
        case AxisRole::Kernel: return {3, 1, 5, 2};
        case AxisRole::Spatial: return {4, 5, 3, 6, 7};
        case AxisRole::Batch: return {1, 2};
        case AxisRole::None: break;
      }
    }
    const Role r = pr_.role[v];
    if (r == Role::ConvInput && axis == 0) return {1, 2};
    if (r == Role::ConvInput && axis >= 2) return {4, 5, 3, 6, 7};
    if (r == Role::ConvKernel && axis >= 2) return {3, 1, 5, 2};
    return opt_.dims;
  }

  /// Candidate shapes for variable v, best first: axes whose class already has a value take it; the
  /// others range over their domain, preferring sizes no other class uses.
  std::vector<Shape> candidates(size_t v) {
    const size_t rank = static_cast<size_t>(ranks_[v]);
    std::map<int64_t, size_t> used;  // value -> a class holding it
    for (const auto& [cls, val] : assigned_) used.emplace(val, cls);
    std::vector<std::vector<int64_t>> doms(rank);
    std::vector<int> copy_of(rank, -1);  // an earlier axis of the same (free) class
    for (size_t a = 0; a < rank; ++a) {
      size_t cls = axis_class_[v][a];
      if (auto it = assigned_.find(cls); it != assigned_.end()) doms[a] = {it->second};
      else if (auto pt = pinned_.find(cls); pt != pinned_.end()) doms[a] = {pt->second};
      else {
        for (size_t b = 0; b < a; ++b)
          if (axis_class_[v][b] == cls) copy_of[a] = static_cast<int>(b);
        doms[a] = copy_of[a] >= 0 ? std::vector<int64_t>{0} : domain(v, a);
      }
    }
    std::vector<std::pair<int, Shape>> scored;
    Shape t(rank);
    std::vector<size_t> pos(rank, 0);
    while (true) {
      int score = 0;
      int64_t elems = 1;
      for (size_t a = 0; a < rank; ++a) {
        t[a] = copy_of[a] >= 0 ? t[copy_of[a]] : doms[a][pos[a]];
        elems *= t[a];
        if (doms[a].size() <= 1) continue;  // forced
        score += static_cast<int>(pos[a]);
        // Reusing a size costs more than any preference step: distinct sizes expose axis mix-ups.
        bool reused = used.contains(t[a]);
        for (size_t b = 0; b < a; ++b) {
          if (t[b] != t[a] || axis_class_[v][b] == axis_class_[v][a]) continue;
          reused = true;
          // Two free axes of this variable with one size (a square kernel).
          if (opt_.distinct_within_variable && doms[b].size() > 1) score += 100;
        }
        if (reused) score += 4;
        for (const VarShapes& prev : previous_) {
          auto it = prev.find(pr_.vars[v]);
          if (it != prev.end() && it->second.size() == rank && it->second[a] == t[a]) score += 3;
        }
      }
      ++checks_;  // generating a candidate costs about as much as checking one
      if (elems <= opt_.max_elements) scored.emplace_back(score, t);
      size_t a = rank;  // last axis fastest, so [2,3] comes before [3,2]
      while (a > 0 && ++pos[a - 1] == doms[a - 1].size()) pos[--a] = 0;
      if (a == 0) break;
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<Shape> out;
    out.reserve(scored.size());
    for (auto& [s, shape] : scored) out.push_back(std::move(shape));
    return out;
  }

  const Shape& shape_of(size_t g) const {
    int v = pr_.node_var[g];
    return v >= 0 ? var_shapes_[v] : shapes_[g];
  }

  bool check_node(size_t g) {
    const ExprNode& n = pr_.node(g);
    size_t p = std::upper_bound(pr_.offset.begin(), pr_.offset.end(), g) - pr_.offset.begin() - 1;
    if (n.op == OpKind::Input || n.op == OpKind::Weight) {
      shapes_[g] = n.attrs;
      return true;
    }
    std::vector<Shape> in;
    in.reserve(n.children.size());
    for (ExprId c : n.children) in.push_back(shape_of(pr_.global(p, c)));
    // The search meets the same operand shapes at a node again and again: each outcome is remembered.
    auto [it, added] = inferred_.try_emplace(std::pair{g, in});
    if (added) it->second = try_infer_shape(n.op, n.attrs, in);
    if (!it->second) return false;
    shapes_[g] = *it->second;
    if (num_elements(shapes_[g]) > opt_.max_elements) return false;
    if (n.op == OpKind::Conv2d && opt_.conv_groups != ConvGroups::Any && pr_.node_var[pr_.global(p, n.children[1])] >= 0) {
      bool grouped = in[0][1] != in[1][1];
      if (grouped != (opt_.conv_groups == ConvGroups::Grouped)) return false;
      // Each grouped assignment gives the conv a group count the earlier ones did not, so that a rule
      // that holds for one group count only (Tensat's merge rules) meets another.
      if (grouped) {
        auto it = used_groups_.find(g);
        if (it != used_groups_.end() && it->second.contains(in[0][1] / in[1][1])) return false;
      }
    }
    if (const char want = expected_grouping_[g]; want != 0 && (want == 'u') != is_ungrouped_conv(in[0], in[1]))
      return false;
    return true;
  }

  int64_t var_weight_conv_groups(size_t g) const {
    const ExprNode& n = pr_.node(g);
    if (n.op != OpKind::Conv2d || opt_.conv_groups != ConvGroups::Grouped) return 0;
    size_t p = std::upper_bound(pr_.offset.begin(), pr_.offset.end(), g) - pr_.offset.begin() - 1;
    const size_t x = pr_.global(p, n.children[0]), w = pr_.global(p, n.children[1]);
    if (pr_.node_var[w] < 0) return 0;
    return shape_of(x)[1] / shape_of(w)[1];
  }

  bool out_of_budget() {
    if (checks_ > opt_.max_checks) return true;
    if ((checks_ & 1023) == 0 && std::chrono::steady_clock::now() > deadline_) {
      stopped_by_clock_ = true;
      checks_ = opt_.max_checks + 1;
    }
    return checks_ > opt_.max_checks;
  }

  bool dfs(size_t v) {
    if (v == pr_.vars.size()) return true;
    if (out_of_budget()) return false;
    for (Shape& cand : candidates(v)) {
      ++checks_;
      if (out_of_budget()) return false;
      var_shapes_[v] = std::move(cand);
      bool ok = true;
      for (size_t g : nodes_at_[v])
        if (!(ok = check_node(g))) break;
      for (size_t k = 0; ok && k < pairs_at_[v].size(); ++k)
        ok = shape_of(pairs_at_[v][k].first) == shape_of(pairs_at_[v][k].second);
      if (ok) {
        std::vector<size_t> added;
        for (size_t a = 0; a < var_shapes_[v].size(); ++a)
          if (assigned_.emplace(axis_class_[v][a], var_shapes_[v][a]).second) added.push_back(axis_class_[v][a]);
        bool done = dfs(v + 1);
        for (size_t cls : added) assigned_.erase(cls);
        if (done) return true;
      }
      if (out_of_budget()) return false;
    }
    return false;
  }

  const Problem& pr_;
  const ShapeSearchOptions& opt_;
  std::vector<int> ranks_;
  const std::vector<VarShapes>& previous_;
  const UsedGroups& used_groups_;
  std::vector<std::vector<size_t>> nodes_at_;
  std::vector<std::vector<std::pair<size_t, size_t>>> pairs_at_;
  std::vector<size_t> unconditional_;
  std::vector<char> expected_grouping_;  // per node: 'u' or 'g' where a grouping is asked for, else 0
  std::vector<Shape> shapes_;
  std::vector<Shape> var_shapes_;
  std::vector<std::vector<size_t>> axis_class_;
  std::map<size_t, int64_t> pinned_, assigned_;
  std::map<size_t, AxisRole> class_role_;
  bool unified_ = false;
  std::map<std::pair<size_t, std::vector<Shape>>, std::optional<Shape>> inferred_;  // node, operands -> shape
  int64_t checks_ = 0;
  bool stopped_by_clock_ = false;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace

ShapeAssignments find_shape_assignments(std::span<const Expr* const> patterns, const ShapeSearchOptions& options) {
  ShapeAssignments result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.max_ms);
  Problem pr = make_problem(patterns);
  RankSolver rs(pr.num_nodes + pr.vars.size());
  std::vector<std::pair<size_t, size_t>> soft;
  constrain_ranks(pr, rs, options.equal_roots, soft);
  for (auto [a, b] : soft)
    if (rs.compatible(a, b)) rs.equal(a, b);
  rs.check_bounds();
  if (!rs.error.empty()) {
    result.failure = rs.error;
    return result;
  }
  // Variables whose rank no operator fixes get a preferred rank (2, or the lower bound), then one more.
  const int deltas[] = {0, 1, 0, 2, 1, 0};
  const size_t var_slot0 = pr.num_nodes;
  bool has_free = false;
  for (size_t v = 0; v < pr.vars.size(); ++v) has_free |= rs.fixed(var_slot0 + v) < 0;
  const int attempts = options.max_assignments * 2;
  std::string last_failure;
  DimSearch::UsedGroups used_groups;
  for (int k = 0; k < attempts && static_cast<int>(result.assignments.size()) < options.max_assignments; ++k) {
    if (!has_free && k >= options.max_assignments + 1) break;
    std::vector<int> ranks(pr.vars.size());
    for (size_t v = 0; v < pr.vars.size(); ++v) {
      size_t s = var_slot0 + v;
      // Free rank classes of one rule move together, so operands of a batched matmul stay aligned.
      ranks[v] = rs.fixed(s) >= 0 ? rs.fixed(s) : std::min(std::max(rs.min(s), 2) + deltas[k % 6], 4);
    }
    std::string failure;
    std::optional<VarShapes> found;
    // Guided by unified dimension classes first; if that finds nothing, search unguided.
    for (bool unify : {true, false}) {
      DimSearch search(pr, options, ranks, result.assignments, used_groups, unify, deadline);
      if (!unify && !result.assignments.empty()) break;
      found = search.run(failure);
      result.stopped_by_clock |= search.stopped_by_clock();
      if (found) search.record_groups(used_groups);
      if (found || !search.unified()) break;
    }
    if (!found) {
      last_failure = failure;
      if (std::chrono::steady_clock::now() > deadline) {
        result.stopped_by_clock = true;
        break;
      }
      continue;
    }
    if (std::find(result.assignments.begin(), result.assignments.end(), *found) == result.assignments.end())
      result.assignments.push_back(std::move(*found));
  }
  if (result.assignments.empty()) result.failure = last_failure.empty() ? "no well-shaped assignment" : last_failure;
  return result;
}

std::vector<const Expr*> rule_patterns(const Rule& rule, std::vector<Expr>& storage) {
  storage.clear();
  for (const std::vector<std::string>& group : rule.same_shape)
    for (size_t k = 1; k < group.size(); ++k) storage.push_back(parse_pattern("(ewadd ?" + group[0] + " ?" + group[k] + ")"));
  std::vector<const Expr*> out;
  for (const Expr& e : rule.lhs) out.push_back(&e);
  for (const Expr& e : storage) out.push_back(&e);
  for (const Expr& e : rule.rhs) out.push_back(&e);
  for (const Expr& e : storage) out.push_back(&e);
  return out;
}

}  // namespace teq

namespace teq {

std::vector<std::string> rule_pattern_groupings(const Rule& rule, std::string_view grouping) {
  const SidedGrouping sides = split_grouping(grouping);
  size_t conditions = 0;
  for (const std::vector<std::string>& group : rule.same_shape) conditions += group.size() - 1;
  std::vector<std::string> out(sides.lhs);
  out.resize(out.size() + conditions);
  out.insert(out.end(), sides.rhs.begin(), sides.rhs.end());
  out.resize(out.size() + conditions);
  return out;
}

}  // namespace teq
