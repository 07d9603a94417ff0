#include "verify/elementwise.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <span>

#include "rules/rule_scope.h"
#include "verify/normal_form.h"
#include "verify/z3_arith.h"

namespace teq {
namespace {

using Clock = std::chrono::steady_clock;

/// The last-resort wall-clock bound of one rule (ElementwiseOptions::timeout_ms).
class WallClockGuard {
 public:
  explicit WallClockGuard(unsigned ms) : ms_(ms), deadline_(Clock::now() + std::chrono::milliseconds(ms)) {}
  bool hit() const { return ms_ != 0 && Clock::now() > deadline_; }
  std::string detail(const std::string& while_doing) const {
    return "wall-clock guard of " + std::to_string(ms_) + " ms hit while " + while_doing +
           " (a verdict that depends on the machine)";
  }

 private:
  unsigned ms_;
  Clock::time_point deadline_;
};

std::vector<int64_t> index_of(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx;
  unravel(flat, shape, idx);
  return idx;
}

/// One real constant per input element, named after the variable and the element's index.
std::map<std::string, Tensor<z3::expr>> symbolic_leaves(z3::context& ctx, const VarShapes& shapes) {
  std::map<std::string, Tensor<z3::expr>> out;
  for (const auto& [name, shape] : shapes) {
    std::vector<z3::expr> data;
    for (int64_t flat = 0; flat < num_elements(shape); ++flat) {
      std::string n = name;
      for (int64_t i : index_of(flat, shape)) n += "_" + std::to_string(i);
      data.push_back(ctx.real_const(n.c_str()));
    }
    out.emplace(name, Tensor<z3::expr>(shape, std::move(data)));
  }
  return out;
}

/// Exact text of a model value: "3", "-1/2", or a decimal approximation ending in '?' for algebraic numbers.
std::string numeral_text(const z3::expr& v) {
  if (v.is_algebraic()) return v.get_decimal_string(12);
  if (v.is_numeral()) return Z3_get_numeral_string(v.ctx(), v);
  return v.to_string();
}

double numeral_value(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '?') t.pop_back();
  size_t slash = t.find('/');
  try {
    if (slash == std::string::npos) return std::stod(t);
    return std::stod(t.substr(0, slash)) / std::stod(t.substr(slash + 1));
  } catch (const std::exception&) {
    return std::nan("");
  }
}

Shape root_shape(const Expr& e, const VarShapes& shapes) { return infer_shapes(e, shapes)[e.root().value]; }

bool is_zero(const z3::expr& e) { return e.is_numeral() && numeral_text(e) == "0"; }

/// A counterexample in `shapes` found by `source`, its inputs still to be set.
Counterexample empty_counterexample(const VarShapes& shapes, std::string source) {
  Counterexample cex;
  cex.shapes = shapes;
  cex.source = std::move(source);
  return cex;
}

/// Sets input `name` of `cex` to the exact element values `text` (row-major in `shape`) and their doubles.
void set_exact_input(Counterexample& cex, const std::string& name, const Shape& shape, std::vector<std::string> text) {
  std::vector<double> data;
  data.reserve(text.size());
  for (const std::string& t : text) data.push_back(numeral_value(t));
  cex.inputs.emplace(name, Tensor<double>(shape, std::move(data)));
  cex.exact.emplace(name, std::move(text));
}

/// Counterexample from a random probe: values are small integers, so their text is exact. The inputs are
/// drawn as doubles and written as text only for a difference found: the neighbour probe runs thousands of
/// probes that find none.
std::optional<Counterexample> random_probe(const Rule& rule, const VarShapes& shapes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(-3, 3);
  for (int trial = 0; trial < 2; ++trial) {
    std::map<std::string, Tensor<double>> inputs;
    for (const auto& [name, shape] : shapes) {
      std::vector<double> data(static_cast<size_t>(num_elements(shape)));
      for (double& v : data) v = pick(rng);
      inputs.emplace(name, Tensor<double>(shape, std::move(data)));
    }
    auto d = find_difference(rule, inputs);
    if (!d) continue;
    Counterexample cex = empty_counterexample(shapes, "random probe");
    for (const auto& [name, t] : inputs) {
      std::vector<std::string> text;
      text.reserve(t.data.size());
      for (double v : t.data) text.push_back(std::to_string(static_cast<int>(v)));
      set_exact_input(cex, name, t.shape, std::move(text));
    }
    cex.output = d->output;
    cex.index = d->index;
    auto fmt = [](double x) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.10g", x);
      return std::string(buf);
    };
    cex.lhs_value = fmt(d->lhs);
    cex.rhs_value = fmt(d->rhs);
    return cex;
  }
  return std::nullopt;
}

/// lhs/rhs with their input constants renamed k0, k1, ... in order of first occurrence, so that equal
/// structures over different inputs become the same (hash-consed) Z3 terms.
struct Canonical {
  z3::expr lhs, rhs;
  z3::expr_vector from, to;
};

void collect_inputs(const z3::expr& e, std::set<unsigned>& seen, z3::expr_vector& out) {
  if (!seen.insert(Z3_get_ast_id(e.ctx(), e)).second) return;
  if (e.is_app() && e.num_args() == 0) {
    if (!e.is_numeral() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED) out.push_back(e);
    return;
  }
  if (e.is_app())
    for (unsigned i = 0; i < e.num_args(); ++i) collect_inputs(e.arg(i), seen, out);
}

Canonical canonicalize(z3::context& ctx, const z3::expr& lhs, const z3::expr& rhs) {
  std::set<unsigned> seen;
  z3::expr_vector from(ctx), to(ctx);
  collect_inputs(lhs, seen, from);
  collect_inputs(rhs, seen, from);
  for (unsigned k = 0; k < from.size(); ++k) to.push_back(ctx.real_const(("k!" + std::to_string(k)).c_str()));
  z3::expr l = lhs, r = rhs;
  return {l.substitute(from, to), r.substitute(from, to), from, to};
}

/// No product of two non-constant terms (uninterpreted functions are fine: the SMT core handles them).
bool is_linear(const z3::expr& e, std::set<unsigned>& seen) {
  if (!seen.insert(Z3_get_ast_id(e.ctx(), e)).second || !e.is_app()) return true;
  Z3_decl_kind k = e.decl().decl_kind();
  if (k == Z3_OP_MUL) {
    int symbolic = 0;
    for (unsigned i = 0; i < e.num_args(); ++i) symbolic += !e.arg(i).is_numeral();
    if (symbolic > 1) return false;
  }
  if (k == Z3_OP_DIV && !e.arg(1).is_numeral()) return false;
  for (unsigned i = 0; i < e.num_args(); ++i)
    if (!is_linear(e.arg(i), seen)) return false;
  return true;
}
bool is_linear(const z3::expr& e) {
  std::set<unsigned> seen;
  return is_linear(e, seen);
}

struct Pending {
  size_t output;
  int64_t element;
  Canonical renamed;   // the element pair with renamed inputs (the cache key)
  z3::expr lhs, rhs;   // renamed.lhs/rhs simplified: what Z3 is asked
};

/// Outcome of one shape assignment.
struct AssignmentOutcome {
  VerifyStatus status;
  std::optional<Counterexample> cex;
  std::string detail;
  bool used_solver = false;
};

/// Element pairs already proved equal, by the AST ids of their renamed forms (see Canonical). The terms
/// are kept alive with their ids: Z3 reuses the id of a freed term, which would make a stale entry prove
/// an unrelated pair.
class ProvedCache {
 public:
  explicit ProvedCache(z3::context& ctx) : alive_(ctx) {}
  bool contains(const z3::expr& lhs, const z3::expr& rhs) const { return proved_.contains(key(lhs, rhs)); }
  void insert(const z3::expr& lhs, const z3::expr& rhs) {
    if (!proved_.insert(key(lhs, rhs)).second) return;
    alive_.push_back(lhs);
    alive_.push_back(rhs);
  }

 private:
  static std::pair<unsigned, unsigned> key(const z3::expr& lhs, const z3::expr& rhs) {
    return {Z3_get_ast_id(lhs.ctx(), lhs), Z3_get_ast_id(rhs.ctx(), rhs)};
  }
  std::set<std::pair<unsigned, unsigned>> proved_;
  z3::expr_vector alive_;
};

/// Z3's default strategy for non-linear real arithmetic (qfnra) runs nlsat under a 5 s timer first and
/// falls back to other engines when the timer fires: the same query and rlimit then got "verified" idle and
/// "unknown" under load (Z3Prover/z3 issue #216). The idle path, without the timer: nlsat with inlined
/// variables after the same preprocessing. nlsat answers "incomplete" on what it cannot take (uninterpreted
/// tanh, sigmoid, exp): `fail-if-undecided` turns that into a failure, and the SMT core gets the query. Only
/// the rlimit bounds either.
z3::solver nonlinear_solver(z3::context& ctx) {
  z3::params inline_vars(ctx);
  inline_vars.set("inline_vars", true);
  const z3::tactic nlsat = z3::tactic(ctx, "simplify") & z3::tactic(ctx, "propagate-values") &
                           z3::with(z3::tactic(ctx, "qfnra-nlsat"), inline_vars) &
                           z3::tactic(ctx, "fail-if-undecided");
  return (nlsat | z3::tactic(ctx, "smt")).mk_solver();
}

AssignmentOutcome check_assignment(const Rule& rule, z3::context& ctx, const VarShapes& shapes,
                                   const WallClockGuard& guard, unsigned rlimit, ProvedCache& cache) {
  Arith<z3::expr> ar(ctx);
  auto leaves = symbolic_leaves(ctx, shapes);
  const z3::params sp = sum_of_monomials(ctx);
  NormalForm normal(ctx);
  std::vector<Pending> pending;
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    Tensor<z3::expr> l = evaluate<z3::expr>(rule.lhs[i], ar, leaves)[0];
    Tensor<z3::expr> r = evaluate<z3::expr>(rule.rhs[i], ar, leaves)[0];
    if (l.shape != r.shape)  // the shape search normally rules this out
      return {VerifyStatus::Wrong, std::nullopt,
              "output " + std::to_string(i) + ": lhs shape " + to_string(l.shape) + " but rhs shape " +
                  to_string(r.shape)};
    for (int64_t e = 0; e < l.size(); ++e) {
      // Inputs are renamed before anything else, so that elements equal up to renaming (the windows of a
      // convolution or pooling, on every shape assignment) become the same Z3 terms and are decided once.
      Canonical c = canonicalize(ctx, l.data[e], r.data[e]);
      if (cache.contains(c.lhs, c.rhs)) continue;
      z3::expr a = c.lhs.simplify(sp), b = c.rhs.simplify(sp);
      if (z3::eq(a, b) || is_zero((a - b).simplify(sp)) || z3::eq(normal.of(c.lhs), normal.of(c.rhs))) {
        cache.insert(c.lhs, c.rhs);
        continue;
      }
      pending.push_back({i, e, std::move(c), a, b});
      if ((e & 63) == 63 && guard.hit()) return {VerifyStatus::Unknown, std::nullopt, guard.detail("simplifying terms")};
    }
    if (guard.hit()) return {VerifyStatus::Unknown, std::nullopt, guard.detail("building terms")};
  }
  if (pending.empty()) return {VerifyStatus::Verified, std::nullopt, ""};

  // One query per differing element: many small problems are far easier for Z3 than one disjunction
  // (nested max/relu terms of a pooling window, for example). Elements equal up to a renaming of their
  // inputs (the interior of a convolution, say) are proved once: each query is put in a canonical form.
  for (const Pending& d : pending) {
    const Canonical& c = d.renamed;
    if (cache.contains(c.lhs, c.rhs)) continue;
    if (guard.hit()) return {VerifyStatus::Unknown, std::nullopt, guard.detail("proving elements"), true};
    // A fresh solver (not push/pop): only then does Z3 pick its complete engine for non-linear terms.
    // Linear problems (relu, max, pooling) go to the SMT core directly, which is much faster on them.
    z3::solver solver = is_linear(d.lhs) && is_linear(d.rhs) ? z3::tactic(ctx, "smt").mk_solver() : nonlinear_solver(ctx);
    // Never a Z3 timeout: the rlimit bounds the query deterministically (and Z3's timer threads have
    // deadlocked under several proving threads, libz3 4.8).
    if (rlimit != 0) {
      z3::params p(ctx);
      p.set("rlimit", rlimit);
      solver.set(p);
    }
    solver.add(d.lhs != d.rhs);
    z3::check_result res = solver.check();
    if (res == z3::unknown)
      return {VerifyStatus::Unknown, std::nullopt,
              "z3: " + solver.reason_unknown() + " (rlimit " + std::to_string(rlimit) + " per query)", true};
    if (res == z3::unsat) {
      cache.insert(c.lhs, c.rhs);
      continue;
    }
    // Map the model of the canonical query back to the inputs; inputs this element does not read are 0.
    z3::model m = solver.get_model();
    std::map<std::string, std::string> value;
    for (unsigned k = 0; k < c.from.size(); ++k) value[c.from[k].decl().name().str()] = numeral_text(m.eval(c.to[k], true));
    Counterexample cex = empty_counterexample(shapes, "z3 model");
    for (const auto& [name, t] : leaves) {
      std::vector<std::string> text;
      for (const z3::expr& leaf : t.data) {
        auto it = value.find(leaf.decl().name().str());
        text.push_back(it == value.end() ? "0" : it->second);
      }
      set_exact_input(cex, name, t.shape, std::move(text));
    }
    cex.output = d.output;
    cex.index = index_of(d.element, root_shape(rule.lhs[d.output], shapes));
    cex.lhs_value = numeral_text(m.eval(d.lhs, true).simplify());
    cex.rhs_value = numeral_text(m.eval(d.rhs, true).simplify());
    return {VerifyStatus::Wrong, std::move(cex), "", true};
  }
  return {VerifyStatus::Verified, std::nullopt, "", true};
}


/// A counterexample from shapes alone: sides that are well-shaped together but with different shapes.
std::optional<Counterexample> shape_mismatch(const Rule& rule, const VarShapes& s) {
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    Shape l = root_shape(rule.lhs[i], s), r = root_shape(rule.rhs[i], s);
    if (l == r) continue;
    Counterexample cex;
    cex.shapes = s;
    cex.source = "shape search";
    cex.note = "output " + std::to_string(i) + ": lhs has shape " + to_string(l) + " but rhs has shape " + to_string(r);
    return cex;
  }
  return std::nullopt;
}

/// The wide probe (ElementwiseOptions::wide_probe): a random-probe difference on larger dimensions where
/// both sides have equal shapes. Values only: a rule whose sides disagree in shape on large extents but not
/// on the small ones (`(enlarge 3 3 ?k) => ?k`, true of 3x3 kernels) is kept, since the optimizer applies a
/// rule only where its right side has the left side's shape. Bounded by counts like the other searches.
std::optional<Counterexample> wide_counterexample(const Rule& rule, std::span<const Expr* const> patterns,
                                                  const ElementwiseOptions& options) {
  ShapeSearchOptions wide = options.shapes;
  wide.dims = options.wide_dims;
  wide.max_elements = options.wide_max_elements;
  wide.max_assignments = 1;
  for (const VarShapes& s : find_shape_assignments(patterns, wide).assignments)
    if (auto cex = random_probe(rule, s, 0x51de)) return cex;
  return std::nullopt;
}

/// The grouping of the patterns' convolutions on weights of free shape under `s` (rules/rule_scope.h, one
/// pattern after another), or nullopt when a pattern is ill-shaped there, a tensor exceeds `max_elements`, or
/// two paired roots differ in shape. The optimizer applies a rule only where its right side has the left
/// side's shape and the grouping is in the rule's scope, so probes near a proved assignment keep its grouping.
/// With `paired_roots_may_differ`, only the grouping is asked for (the coincidence check compares the roots).
std::optional<std::string> conv_grouping(std::span<const Expr* const> patterns, const VarShapes& s,
                                         int64_t max_elements, bool paired_roots_may_differ = false) {
  std::string grouping;
  std::vector<Shape> roots;
  for (const Expr* p : patterns) {
    auto shapes = try_infer_shapes(*p, s);
    if (!shapes) return std::nullopt;
    for (const Shape& shape : *shapes)
      if (num_elements(shape) > max_elements) return std::nullopt;
    grouping += pattern_grouping(*p, *shapes) + ",";
    roots.push_back((*shapes)[p->root().value]);
  }
  if (paired_roots_may_differ) return grouping;
  const size_t half = roots.size() / 2;
  for (size_t i = 0; i < half; ++i)
    if (roots[i] != roots[i + half]) return std::nullopt;
  return grouping;
}

/// The neighbour probe (ElementwiseOptions::neighbor_probe): a random-probe difference on assignments near
/// those the proof uses. Each dimension of each variable is set to every size from 1 to `max_size`, alone and
/// together with every other dimension of the same size (a class the operators tie together); an assignment
/// where the rule can apply (conv_grouping) and that the proof does not cover is probed. The search prefers
/// distinct sizes but can still tie a dimension to another: a split cut at a leaf's extent that happens to
/// equal the first operand's (`(split 1 1 1 (concat 1 (conv ?i ?w) ?j) ?x) => (split 1 1 1 (concat 1 ?i ?j)
/// ?x)`, true only where ?x's channels are ?i's) is caught with ?x's channels at 1; pool idempotence that
/// holds on extents up to 2 only is caught on a larger image. Bounded by `max_probes` assignments, a count,
/// so the verdict does not depend on the machine.
std::optional<Counterexample> neighbor_counterexample(const Rule& rule, std::span<const Expr* const> patterns,
                                                      const std::vector<VarShapes>& proved, int64_t max_elements,
                                                      int64_t max_size, int max_probes) {
  std::set<VarShapes> seen(proved.begin(), proved.end());
  int probes = 0;
  auto try_one = [&](VarShapes s) -> std::optional<Counterexample> {
    if (probes >= max_probes || !seen.insert(s).second) return std::nullopt;
    ++probes;
    return random_probe(rule, s, 0x4e1b + probes);
  };
  for (const VarShapes& base : proved) {
    const auto base_grouping = conv_grouping(patterns, base, max_elements);
    for (const auto& [name, shape] : base)
      for (size_t axis = 0; axis < shape.size(); ++axis) {
        const int64_t d = shape[axis];
        for (int64_t moved = 1; moved <= max_size; ++moved) {
          if (moved == d) continue;
          VarShapes alone = base, tied = base;
          alone[name][axis] = moved;
          for (auto& [other, other_shape] : tied)
            for (int64_t& x : other_shape)
              if (x == d) x = moved;
          for (VarShapes* s : {&alone, &tied}) {
            if (conv_grouping(patterns, *s, max_elements) != base_grouping) continue;
            if (auto cex = try_one(std::move(*s))) return cex;
          }
          if (probes >= max_probes) return std::nullopt;
        }
      }
  }
  return std::nullopt;
}

/// The coincidence check (ElementwiseOptions::coincidence_is_wrong): an assignment one dimension away from a
/// proof's (that dimension alone set to each size from 1 to `max_size`), with the convolutions grouped as
/// there, under which every pattern is well-shaped but paired roots differ in shape. Such a rule holds only
/// where unrelated extents agree (`(split 1 0 0 (conv2d .. ?i ?a) ?d) => (split 1 0 1 (conv2d .. ?i ?a) ?i)`
/// cuts at ?d's output count on one side and at ?i's channels on the other): sound where the optimizer
/// applies it, which is where the shapes agree, but of no general use. Shape inference only, so cheap.
std::optional<Counterexample> coincidence_counterexample(const Rule& rule, std::span<const Expr* const> patterns,
                                                         const std::vector<VarShapes>& proved, int64_t max_elements,
                                                         int64_t max_size) {
  for (const VarShapes& base : proved) {
    const auto base_grouping = conv_grouping(patterns, base, max_elements, /*paired_roots_may_differ=*/true);
    if (!base_grouping) continue;
    for (const auto& [name, shape] : base)
      for (size_t axis = 0; axis < shape.size(); ++axis)
        for (int64_t moved = 1; moved <= max_size; ++moved) {
          if (moved == shape[axis]) continue;
          VarShapes s = base;
          s[name][axis] = moved;
          if (conv_grouping(patterns, s, max_elements, /*paired_roots_may_differ=*/true) != base_grouping) continue;
          if (auto cex = shape_mismatch(rule, s)) {
            cex->note += " (the rule holds only where unrelated extents agree)";
            return cex;
          }
        }
  }
  return std::nullopt;
}

ElementwiseResult wrong_by(Counterexample cex, ElementwiseResult result) {
  result.status = VerifyStatus::Wrong;
  result.detail = cex.note;
  result.shapes.push_back(cex.shapes);
  result.counterexample = std::move(cex);
  return result;
}

}  // namespace

ElementwiseResult refute_elementwise(const Rule& rule, const ElementwiseOptions& options) {
  ElementwiseResult result;
  std::vector<Expr> conditions;
  std::vector<const Expr*> patterns = rule_patterns(rule, conditions);

  // Sides that are well-shaped together but with different shapes make a wrong rule by themselves.
  ShapeSearchOptions loose = options.shapes;
  loose.equal_roots = false;
  loose.max_assignments = 1;
  ShapeAssignments any;
  if (options.shape_mismatch_is_wrong) any = find_shape_assignments(patterns, loose);
  for (const VarShapes& s : any.assignments)
    if (auto cex = shape_mismatch(rule, s)) return wrong_by(std::move(*cex), std::move(result));

  // A rewriter applies the rule only inside its scope (rules/rule_scope.h): at each of Rule::conv_groupings,
  // or at the all-ungrouped grouping of its convolutions on weights of free shape where it lists none. Each of
  // these groupings is searched for and proved, so that no grouping a rewriter admits goes unchecked.
  ShapeAssignments found;
  bool stopped_by_clock = any.stopped_by_clock;
  for (const std::string& grouping : scope_groupings(rule)) {
    const bool ungrouped = grouping.find('g') == std::string::npos;
    ShapeSearchOptions scoped = options.shapes;
    scoped.pattern_groupings = rule_pattern_groupings(rule, grouping);
    if (!ungrouped) scoped.conv_groups = ConvGroups::Any;
    ShapeAssignments part = find_shape_assignments(patterns, scoped);
    stopped_by_clock |= part.stopped_by_clock;
    // Every grouping the scope declares must be met and proved; the default one may have no instance at all.
    if (part.assignments.empty() && !rule.conv_groupings.empty() && !stopped_by_clock) {
      result.detail = "no shape assignment at the declared grouping " + grouping + " (" + part.failure + ")";
      return result;
    }
    if (found.failure.empty()) found.failure = part.failure;
    for (VarShapes& s : part.assignments) found.assignments.push_back(std::move(s));
  }
  // --grouped-conv: an assignment with grouped convolutions too, beyond the scope (is the rule true there?).
  if (options.grouped_conv) {
    ShapeSearchOptions grouped = options.shapes;
    grouped.conv_groups = ConvGroups::Grouped;
    grouped.max_assignments = 1;
    ShapeAssignments extra = find_shape_assignments(patterns, grouped);
    stopped_by_clock |= extra.stopped_by_clock;
    for (VarShapes& s : extra.assignments) found.assignments.push_back(std::move(s));
  }
  if (stopped_by_clock) {
    result.detail = "wall-clock guard of " + std::to_string(options.shapes.max_ms) +
                    " ms stopped the shape search (a verdict that depends on the machine)";
    return result;
  }
  // No instance in the default scope: a rule that is false wherever it is well-shaped (Tensat's merges as
  // stated) still gets its counterexample, from an assignment at any grouping; else it is unknown.
  if (found.assignments.empty() && rule.conv_groupings.empty() && options.random_probe) {
    for (ConvGroups groups : {ConvGroups::Grouped, ConvGroups::Any}) {
      ShapeSearchOptions any_grouping = options.shapes;
      any_grouping.conv_groups = groups;
      for (const VarShapes& s : find_shape_assignments(patterns, any_grouping).assignments)
        if (auto cex = random_probe(rule, s, 0x9e0)) {
          cex->note += " (at a grouping outside the rule's scope, where it is never applied)";
          return wrong_by(std::move(*cex), std::move(result));
        }
    }
  }
  if (found.assignments.empty()) {
    result.detail = std::string(kNoAssignmentInScope) + " makes every pattern well-shaped (" + found.failure +
                    "; convolutions on weights of free shape are ungrouped unless the rule lists conv_groupings)";
    return result;
  }
  result.shapes = found.assignments;
  if (options.coincidence_is_wrong)
    if (auto cex = coincidence_counterexample(rule, patterns, found.assignments, options.shapes.max_elements,
                                              options.neighbor_max_size))
      return wrong_by(std::move(*cex), std::move(result));
  std::optional<Counterexample> probed;
  if (options.random_probe)
    for (size_t k = 0; k < found.assignments.size() && !probed; ++k)
      probed = random_probe(rule, found.assignments[k], 0x5eed + k);
  if (options.random_probe && options.wide_probe && !probed) probed = wide_counterexample(rule, patterns, options);
  if (options.random_probe && options.neighbor_probe && !probed)
    probed = neighbor_counterexample(rule, patterns, found.assignments, options.shapes.max_elements,
                                     options.neighbor_max_size, options.neighbor_max_probes);
  if (probed) {
    result.status = VerifyStatus::Wrong;
    result.counterexample = std::move(probed);
    return result;
  }
  result.awaiting_proof = true;
  return result;
}

ElementwiseResult prove_unrefuted(const Rule& rule, z3::context& ctx, const ElementwiseOptions& options,
                                        ElementwiseResult result) {
  if (!result.awaiting_proof) return result;
  const WallClockGuard guard(options.timeout_ms);
  ProvedCache cache(ctx);
  const size_t proved_by_z3 = options.z3_assignments > 0
                                  ? std::min(result.shapes.size(), static_cast<size_t>(options.z3_assignments))
                                  : result.shapes.size();
  for (const VarShapes& shapes : std::span(result.shapes).first(proved_by_z3)) {
    AssignmentOutcome out = check_assignment(rule, ctx, shapes, guard, options.rlimit, cache);
    result.solver_calls += out.used_solver;
    if (out.status == VerifyStatus::Verified) continue;
    result.status = out.status;
    result.detail = out.detail;
    result.counterexample = std::move(out.cex);
    return result;
  }
  result.status = VerifyStatus::Verified;
  return result;
}

ElementwiseResult prove_elementwise(const Rule& rule, z3::context& ctx, const ElementwiseOptions& options) {
  return prove_unrefuted(rule, ctx, options, refute_elementwise(rule, options));
}

std::optional<Difference> find_difference(const Rule& rule, const std::map<std::string, Tensor<double>>& inputs,
                                          double tol) {
  Arith<double> ar;
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    Tensor<double> l = evaluate<double>(rule.lhs[i], ar, inputs)[0];
    Tensor<double> r = evaluate<double>(rule.rhs[i], ar, inputs)[0];
    if (l.shape != r.shape) return Difference{i, {}, std::nan(""), std::nan("")};
    for (int64_t e = 0; e < l.size(); ++e) {
      double a = l.data[e], b = r.data[e];
      if (std::abs(a - b) > tol * (1 + std::abs(a) + std::abs(b)) || std::isnan(a) != std::isnan(b))
        return Difference{i, index_of(e, l.shape), a, b};
    }
  }
  return std::nullopt;
}

}  // namespace teq
