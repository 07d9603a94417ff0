#include "verify/axioms/instances.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>

#include "rules/sexpr.h"
#include "verify/axioms.h"
#include "verify/axioms/laws.h"
#include "verify/axioms/placeholders.h"
#include "verify/axioms/ranks.h"
#include "verify/axioms/table.h"
#include "verify/axioms/template_term.h"
#include "verify/batches.h"

namespace teq::axioms {
namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

std::set<OpKind> ops_of(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  std::set<OpKind> ops;
  for (const auto* side : {&a, &b})
    for (const Expr& e : *side)
      for (const ExprNode& n : e.nodes())
        if (n.op != OpKind::Var) ops.insert(n.op);
  return ops;
}

/// A template of the table, parsed once.
struct ParsedTemplate {
  const AxiomTemplate* source;
  TemplateTerm lhs, rhs;
  std::string used;                 // the placeholders it uses, in kPlaceholders order
  std::vector<std::string> nonneg;  // AxiomTemplate::nonneg
};

const std::vector<ParsedTemplate>& parsed_templates() {
  static const std::vector<ParsedTemplate> parsed = [] {
    std::vector<ParsedTemplate> out;
    for (const AxiomTemplate& t : axiom_templates()) {
      ParsedTemplate p{&t, parse_template(t.lhs), parse_template(t.rhs), "", words(t.nonneg)};
      std::string present;
      add_placeholders(p.lhs, present);
      add_placeholders(p.rhs, present);
      for (char c : kPlaceholders)
        if (present.find(c) != std::string::npos) p.used += c;
      out.push_back(std::move(p));
    }
    return out;
  }();
  return parsed;
}

/// The law `t` states under `pick`, with its lhs and rhs built from the template (`nonneg` as (relu ?v)).
Rule law(const std::string& id, const ParsedTemplate& t, const Pick& pick, const std::vector<std::string>& nonneg) {
  Rule rule;
  rule.id = id;
  rule.lhs.push_back(instantiate(t.lhs, pick, nonneg));
  rule.rhs.push_back(instantiate(t.rhs, pick, nonneg));
  validate_rule(rule);
  return rule;
}

/// The instance of `t` under `pick`: its id names the values ("split-concat-0[X=1]").
Instance make_instance(const ParsedTemplate& t, const Pick& pick) {
  std::string id = t.source->id;
  for (size_t k = 0; k < t.used.size(); ++k)
    id += (k ? "," : "[") + std::string(1, t.used[k]) + "=" + join(pick.at(t.used[k]));
  if (!t.used.empty()) id += "]";
  return Instance{id, law(id, t, pick, {}), parse_guard(t.source->guard, pick), t.nonneg, law(id, t, pick, t.nonneg)};
}

/// Every instance of every template (of those about non-negativity only, if asked) whose operators are all
/// in `rule_ops`, placeholders from `rule`: the Cartesian product of the values of the placeholders each
/// template uses, but for {X} and {Y} equal.
std::vector<Instance> instantiate_over(const Rule& rule, const std::set<OpKind>& rule_ops, bool nonnegativity_only) {
  PlaceholderValues values = placeholder_values(rule);
  std::vector<Instance> out;
  for (const ParsedTemplate& t : parsed_templates()) {
    if (nonnegativity_only && !about_nonnegativity(*t.source)) continue;
    std::vector<std::vector<std::vector<int64_t>>> choices;
    bool empty = false;
    for (char c : t.used) {
      choices.emplace_back(values[c].begin(), values[c].end());
      empty |= choices.back().empty();
    }
    if (empty) continue;
    std::vector<size_t> pos(t.used.size(), 0);
    while (true) {
      Pick pick;
      for (size_t k = 0; k < t.used.size(); ++k) pick[t.used[k]] = choices[k][pos[k]];
      const bool skip = pick.contains('X') && pick.contains('Y') && pick['X'] == pick['Y'];
      if (!skip) {
        try {
          Instance inst = make_instance(t, pick);
          std::set<OpKind> ops = ops_of(inst.rule.lhs, inst.rule.rhs);
          if (std::includes(rule_ops.begin(), rule_ops.end(), ops.begin(), ops.end())) out.push_back(std::move(inst));
        } catch (const CorpusError&) {
          // A placeholder value that makes no pattern (cannot happen with the templates of the table).
        }
      }
      size_t k = 0;
      while (k < t.used.size() && ++pos[k] == choices[k].size()) pos[k++] = 0;
      if (k == t.used.size()) break;
    }
  }
  return out;
}

std::string instance_key(const Instance& inst) {
  return to_sexpr(inst.checked.lhs[0], inst.checked.lhs[0].root()) + " = " +
         to_sexpr(inst.checked.rhs[0], inst.checked.rhs[0].root());
}

/// The element-wise proof of one instance, in the caller's context.
InstanceVerdict prove_instance(const Instance& inst, z3::context& ctx, const ElementwiseOptions& opt) {
  ElementwiseOptions o = opt;
  o.grouped_conv = false;
  o.z3_assignments = 1;  // the other assignments are probed in double (ElementwiseOptions::z3_assignments)
  // A split law is a conditional statement (the cut equals the first part's extent); the shape search
  // with equal roots finds exactly the shapes that satisfy the condition.
  o.shape_mismatch_is_wrong = inst.guard.empty();
  ElementwiseResult r = prove_elementwise(inst.checked, ctx, o);
  InstanceVerdict v;
  v.holds = r.status == VerifyStatus::Verified;
  v.shapes = r.shapes;
  // An equation between terms whose shape facts differ lets Z3 derive anything: the guard must make them
  // agree, from the side that triggers the law.
  if (!v.holds) return v;
  auto directions = [&] {
    for (int side : {0, 1}) v.from[side] = law_shape_disagreement(inst.rule, inst.guard, v.shapes, ctx, side).empty();
    return v.from[0] || v.from[1];
  };
  if (directions()) return v;
  // Stated for every rank from the lowest up, the shapes may disagree where they agree at the lowest
  // ranks (matmul-concat-right on axis 1: the columns at rank 2, the rows at rank 3): keep those only.
  v.shapes = lowest_rank_assignments(v.shapes);
  v.holds = !v.shapes.empty() && directions();
  return v;
}

/// Verdicts shared by all threads, by instance_key.
std::mutex instance_mu;
std::map<std::string, InstanceVerdict> instance_verdicts;

}  // namespace

std::vector<Instance> instantiate(const Rule& rule) {
  std::set<OpKind> ops = ops_of(rule.lhs, rule.rhs);
  std::vector<Instance> out = instantiate_over(rule, ops, false);
  if (ops.contains(OpKind::Relu) || std::ranges::none_of(out, [](const Instance& i) { return !i.nonneg.empty(); }))
    return out;
  ops.insert(OpKind::Relu);
  for (Instance& extra : instantiate_over(rule, ops, true))
    if (std::ranges::none_of(out, [&](const Instance& i) { return i.id == extra.id; })) out.push_back(std::move(extra));
  return out;
}

InstanceVerdict check_instance(const Instance& inst, const ElementwiseOptions& opt) {
  const std::string key = instance_key(inst);
  {
    std::lock_guard lock(instance_mu);
    if (auto it = instance_verdicts.find(key); it != instance_verdicts.end()) return it->second;
  }
  z3::context ctx;
  InstanceVerdict v = prove_instance(inst, ctx, opt);
  std::lock_guard lock(instance_mu);
  instance_verdicts[key] = v;
  return v;
}

}  // namespace teq::axioms

namespace teq {

void prepare_axiom_instances(std::span<const Rule> rules, const ElementwiseOptions& options, int jobs) {
  // Sorted by key and proved in fixed batches: each verdict depends on the rule list only.
  std::map<std::string, axioms::Instance> todo;
  for (const Rule& rule : rules)
    for (axioms::Instance& inst : axioms::instantiate(rule)) {
      std::string key = axioms::instance_key(inst);
      std::lock_guard lock(axioms::instance_mu);
      if (!axioms::instance_verdicts.contains(key)) todo.emplace(std::move(key), std::move(inst));
    }
  std::vector<const std::pair<const std::string, axioms::Instance>*> order;
  for (const auto& entry : todo) order.push_back(&entry);
  for_each_in_batches(order.size(), jobs, [&](size_t i, z3::context& ctx) {
    axioms::InstanceVerdict v = axioms::prove_instance(order[i]->second, ctx, options);
    std::lock_guard lock(axioms::instance_mu);
    axioms::instance_verdicts.emplace(order[i]->first, std::move(v));
  });
}

}  // namespace teq
