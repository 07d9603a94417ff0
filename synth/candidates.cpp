#include "synth/candidates.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "rules/evaluator.h"
#include "rules/renamed_term.h"
#include "rules/sexpr.h"
#include "synth/fingerprint.h"
#include "synth/typing.h"
#include "verify/elementwise.h"

namespace teq::synth {

int pattern_size(const Expr& p) { return static_cast<int>(p.num_ops()); }

namespace {

std::set<std::string> var_set(const Expr& p) {
  auto v = p.variables();
  return {v.begin(), v.end()};
}

bool subset(const std::set<std::string>& a, const std::set<std::string>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

bool g_keep_types = false;  // set by canonical_key for the duration of one call

/// Prints a pattern with variables renamed through `names` (assigning v0, v1, ... on first sight;
/// with types kept, a variable's leading letters stay: x1 -> xv0).
void print_renamed(const Expr& p, ExprId id, std::map<std::string, std::string>& names, std::string& out) {
  auto var_name = [&](const ExprNode& var) -> const std::string& {
    auto it = names.find(var.name);
    if (it == names.end()) {
      std::string type;
      if (g_keep_types)
        for (char c : var.name) {
          if (std::isdigit(static_cast<unsigned char>(c))) break;
          type += c;
        }
      it = names.emplace(var.name, type + "v" + std::to_string(names.size())).first;
    }
    return it->second;
  };
  print_renamed_term(id, [&](ExprId i) -> const ExprNode& { return p[i]; }, var_name, out);
}

std::string key_of(const std::vector<const Expr*>& lhs, const std::vector<const Expr*>& rhs) {
  std::map<std::string, std::string> names;
  std::string out;
  for (const Expr* p : lhs) print_renamed(*p, p->root(), names, out), out += " ; ";
  out += "=>";
  for (const Expr* p : rhs) out += " ; ", print_renamed(*p, p->root(), names, out);
  return out;
}

}  // namespace

namespace {

/// The oriented pattern equations of one enumerated equation (0 to 2), appended to `out`.
void equations_of(const Enumeration& e, const Equation& q, std::vector<PatternEquation>& out) {
  Expr t = e.term_pattern(q.member);
  Expr r = e.class_pattern(q.cls);
  const bool r_leaf = e.classes[q.cls].rep.variant == kLeafVariant;
  auto vt = var_set(t), vr = var_set(r);
  int size = std::max(pattern_size(t), pattern_size(r));
  if (vt == vr) {
    out.push_back({std::move(t), std::move(r), true, size, std::nullopt});
  } else if (subset(vr, vt)) {
    if (!r_leaf) out.push_back({r, t, false, size, std::nullopt});
    out.push_back({std::move(t), std::move(r), true, size, std::nullopt});
  } else if (subset(vt, vr)) {
    out.push_back({t, r, false, size, std::nullopt});
    if (!r_leaf) out.push_back({std::move(r), std::move(t), true, size, std::nullopt});
  }
}

/// drop_renamings' key: equal for equations equal up to variable renaming (leaf types kept apart).
std::string renaming_key(const PatternEquation& q) {
  const bool both = q.bound && var_set(q.lhs) == var_set(q.rhs);
  return (q.bound ? "B" : "U") + canonical_key({q.lhs}, {q.rhs}, both, /*keep_types=*/true);
}

/// FNV-1a: a hash fixed by its definition (std::hash may differ between standard libraries).
uint64_t stable_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return mix64(h);
}

}  // namespace

std::vector<PatternEquation> collect_equations(const Enumeration& e) {
  std::vector<PatternEquation> out;
  for (const Equation& q : e.equations) equations_of(e, q, out);
  return out;
}

std::optional<uint64_t> sample_threshold(std::vector<uint64_t> hashes, uint64_t cap) {
  if (cap == 0 || hashes.size() <= cap) return std::nullopt;
  const auto nth = hashes.begin() + static_cast<std::ptrdiff_t>(cap - 1);
  std::nth_element(hashes.begin(), nth, hashes.end());
  return *nth;
}

UniqueEquations collect_unique_equations(const Enumeration& e, uint64_t max_last_level,
                                         std::vector<uint64_t>* last_level_hashes) {
  UniqueEquations out;
  const int last_level = e.levels.empty() ? 0 : e.levels.back().level;
  // Pass 1: which of each equation's (at most two) pattern equations are new up to renaming; only keys
  // are held, not the patterns.
  std::vector<uint8_t> keep(e.equations.size(), 0);
  struct Last {
    uint64_t hash;
    uint32_t equation;
    uint8_t part;
    auto operator<=>(const Last&) const = default;
  };
  std::vector<Last> last;
  {
    std::unordered_set<std::string> seen;
    std::vector<PatternEquation> parts;
    for (size_t i = 0; i < e.equations.size(); ++i) {
      parts.clear();
      equations_of(e, e.equations[i], parts);
      for (size_t k = 0; k < parts.size(); ++k) {
        std::string key = renaming_key(parts[k]);
        const uint64_t h = e.equations[i].size == last_level ? stable_hash(key) : 0;
        if (!seen.insert(std::move(key)).second) {
          ++out.renamings;
          continue;
        }
        keep[i] |= static_cast<uint8_t>(1u << k);
        if (e.equations[i].size == last_level) last.push_back({h, static_cast<uint32_t>(i), static_cast<uint8_t>(k)});
      }
    }
  }
  if (max_last_level > 0 && last.size() > max_last_level) {
    std::nth_element(last.begin(), last.begin() + static_cast<std::ptrdiff_t>(max_last_level), last.end());
    for (auto it = last.begin() + static_cast<std::ptrdiff_t>(max_last_level); it != last.end(); ++it)
      keep[it->equation] &= static_cast<uint8_t>(~(1u << it->part));
    out.capped += last.size() - max_last_level;
    last.resize(max_last_level);
  }
  if (last_level_hashes) {
    last_level_hashes->clear();
    for (const Last& l : last) last_level_hashes->push_back(l.hash);
    std::sort(last_level_hashes->begin(), last_level_hashes->end());
    // In pass 2's order, so that each kept last-level equation finds its hash by walking along.
    std::sort(last.begin(), last.end(), [](const Last& a, const Last& b) {
      return std::pair(a.equation, a.part) < std::pair(b.equation, b.part);
    });
  } else {
    last = {};
  }
  // Pass 2: the patterns of the kept ones, in the enumeration's order.
  std::vector<PatternEquation> parts;
  auto next_last = last.begin();
  for (size_t i = 0; i < e.equations.size(); ++i) {
    if (!keep[i]) continue;
    parts.clear();
    equations_of(e, e.equations[i], parts);
    for (size_t k = 0; k < parts.size(); ++k) {
      if (!(keep[i] & (1u << k))) continue;
      if (next_last != last.end() && next_last->equation == i && next_last->part == k)
        parts[k].sample_hash = (next_last++)->hash;
      out.equations.push_back(std::move(parts[k]));
    }
  }
  return out;
}

std::string canonical_key(const std::vector<Expr>& lhs, const std::vector<Expr>& rhs, bool both_ways,
                          bool keep_types) {
  g_keep_types = keep_types;
  std::vector<const Expr*> l, r;
  for (const Expr& p : lhs) l.push_back(&p);
  for (const Expr& p : rhs) r.push_back(&p);
  std::string best = key_of(l, r);
  if (l.size() == 2) {  // a two-pattern rule is the same rule with its pairs swapped
    std::swap(l[0], l[1]);
    std::swap(r[0], r[1]);
    best = std::min(best, key_of(l, r));
  }
  if (both_ways) {
    std::vector<Expr> none;
    best = std::min(best, canonical_key(rhs, lhs, false, keep_types));
  }
  return best;
}

Rule single_rule(const std::string& id, const PatternEquation& eq) {
  Rule r;
  r.id = id;
  r.lhs.push_back(eq.lhs);
  r.rhs.push_back(eq.rhs);
  return r;
}

std::vector<Rule> pair_multi_rules(const std::vector<PatternEquation>& unbound, int max_rhs_ops,
                                   std::vector<char>* paired) {
  if (paired) paired->assign(unbound.size(), 0);
  struct Info {
    std::set<std::string> vl, vr;
    std::string lhs_text;
  };
  std::vector<Info> info;
  std::unordered_map<std::string, std::vector<size_t>> by_subterm;
  for (size_t i = 0; i < unbound.size(); ++i) {
    const PatternEquation& q = unbound[i];
    info.push_back({var_set(q.lhs), var_set(q.rhs), to_sexpr(q.lhs, q.lhs.root())});
    std::set<std::string> extra;
    for (const std::string& v : info[i].vr)
      if (!info[i].vl.contains(v)) extra.insert(v);
    // The two right sides must be two outputs of one operator (the parts of one split, as in TASO's
    // two-output graphs and Tensat's multi-pattern rules): the same operator over the same operands,
    // different attributes. Keying on the root's operands keeps the groups small; keying on any shared
    // subterm pairs every equation with every other (millions at size 3).
    const ExprNode& root = q.rhs[q.rhs.root()];
    if (is_leaf(root.op)) continue;
    std::string key(op_name(root.op));
    bool has_extra = false;
    for (ExprId c : root.children) {
      Expr sub;
      sub.add_root(sub.import(q.rhs, c));
      for (const std::string& v : sub.variables()) has_extra |= extra.contains(v);
      key += " " + to_sexpr(sub, sub.root());
    }
    if (has_extra) by_subterm[key].push_back(i);
  }
  std::vector<Rule> out;
  std::set<std::pair<size_t, size_t>> done;
  std::vector<std::string> keys;
  for (auto& [text, members] : by_subterm) keys.push_back(text);
  std::sort(keys.begin(), keys.end());  // deterministic output order
  for (const std::string& text : keys) {
    const auto& members = by_subterm[text];
    for (size_t x = 0; x < members.size(); ++x)
      for (size_t y = x + 1; y < members.size(); ++y) {
        size_t i = members[x], j = members[y];
        if (!done.insert({i, j}).second) continue;
        if (info[i].lhs_text == info[j].lhs_text) continue;
        if (unbound[i].rhs[unbound[i].rhs.root()].attrs == unbound[j].rhs[unbound[j].rhs.root()].attrs) continue;
        std::set<std::string> bound = info[i].vl;
        bound.insert(info[j].vl.begin(), info[j].vl.end());
        if (!subset(info[i].vr, bound) || !subset(info[j].vr, bound)) continue;
        Expr joint;
        joint.add_root(joint.import(unbound[i].rhs, unbound[i].rhs.root()));
        joint.add_root(joint.import(unbound[j].rhs, unbound[j].rhs.root()));
        if (static_cast<int>(joint.num_ops()) > max_rhs_ops) continue;
        if (paired) (*paired)[i] = (*paired)[j] = 1;
        Rule r;
        r.lhs = {unbound[i].lhs, unbound[j].lhs};
        r.rhs = {unbound[i].rhs, unbound[j].rhs};
        out.push_back(std::move(r));
      }
  }
  return out;
}

namespace {

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

}  // namespace

Pruned<PatternEquation> drop_renamings(std::vector<PatternEquation> equations) {
  Pruned<PatternEquation> out;
  std::unordered_set<std::string> seen;
  for (PatternEquation& q : equations) {
    // Types kept: which leaf type represents a rule is decided after pairing, the same way for shards.
    if (!seen.insert(renaming_key(q)).second) {
      ++out.dropped;
      continue;
    }
    out.kept.push_back(std::move(q));
  }
  return out;
}

Pruned<PatternEquation> drop_unpaired(std::vector<PatternEquation> equations, int max_rhs_ops) {
  std::vector<PatternEquation> unbound;
  for (const PatternEquation& q : equations)
    if (!q.bound) unbound.push_back(q);
  std::vector<char> paired;
  pair_multi_rules(unbound, max_rhs_ops, &paired);
  Pruned<PatternEquation> out;
  size_t k = 0;  // index among the unbound
  for (PatternEquation& q : equations) {
    if (!q.bound && !paired[k++]) {
      ++out.dropped;
      continue;
    }
    out.kept.push_back(std::move(q));
  }
  return out;
}

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

Tensor<double> random_double_tensor(const Shape& shape, std::mt19937_64& rng, double negative) {
  std::uniform_int_distribution<int64_t> dist(1, 9);
  std::bernoulli_distribution sign(1 - negative);
  std::vector<double> data(static_cast<size_t>(num_elements(shape)));
  for (double& v : data) v = static_cast<double>(sign(rng) ? dist(rng) : -dist(rng));
  return Tensor<double>(shape, std::move(data));
}

std::optional<std::string> refute_on_third_set(const PatternEquation& eq, const std::vector<LeafType>& types,
                                               uint64_t seed) {
  for (const LeafType& t : types)
    if (!t.shape_c) return std::nullopt;
  Rule probe = single_rule({}, eq);
  // The fingerprints' typing (sets A and B) names each variable's type; C gives that type other dimensions.
  auto typing = assign_types(probe, types, {{ShapeChoice::SetA}, {ShapeChoice::SetB}});
  if (!typing) return std::nullopt;
  VarShapes shapes = shapes_of(*typing, types, {ShapeChoice::SetC});
  // Ill-shaped under C proves nothing: the rule may hold wherever it is well-shaped (a split of a concat
  // cut at a leaf whose extent no longer matches), and the prover's shape search decides those.
  auto ls = try_infer_shapes(eq.lhs, shapes), rs = try_infer_shapes(eq.rhs, shapes);
  if (!ls || !rs) return std::nullopt;
  const Shape& lshape = (*ls)[eq.lhs.root().value];
  const Shape& rshape = (*rs)[eq.rhs.root().value];
  if (lshape != rshape)
    return "fingerprint set C: sides have shapes " + to_string(lshape) + " and " + to_string(rshape);
  // Three draws: balanced signs, then mostly negative and mostly positive values, which expose relu and max
  // laws that hold unless a whole pooling window (or a scalar factor) is negative.
  std::mt19937_64 rng(mix64(seed ^ 37));
  for (double negative : {0.5, 0.9, 0.1}) {
    std::map<std::string, Tensor<double>> leaves;
    for (const auto& [name, shape] : shapes) leaves.emplace(name, random_double_tensor(shape, rng, negative));
    try {
      if (auto d = find_difference(probe, leaves))  // the prover's comparison (verify/elementwise.h)
        return "fingerprint set C: element " + to_string(d->index) + " is " + std::to_string(d->lhs) + " and " +
               std::to_string(d->rhs) + " at shape " + to_string(lshape);
    } catch (const std::exception&) {
      return std::nullopt;  // an evaluation the shape rules let through but the semantics reject: no verdict
    }
  }
  return std::nullopt;
}

int rule_size(const Rule& r) {
  int l = 0, rr = 0;
  for (const Expr& p : r.lhs) l += tree_ops(p);
  for (const Expr& p : r.rhs) rr += tree_ops(p);
  return std::max(l, rr);
}

std::string patterns_text(const std::vector<Expr>& patterns) {
  std::string out;
  for (const Expr& p : patterns) out += (out.empty() ? "" : " ; ") + to_sexpr(p, p.root());
  return out;
}

Pruned<OrderedCandidate> ordered_unique_candidates(std::vector<Rule> singles, std::vector<Rule> multis) {
  std::vector<OrderedCandidate> entries;
  for (auto* list : {&singles, &multis})
    for (Rule& r : *list) {
      const bool both = r.lhs.size() == 1 && var_set(r.lhs[0]) == var_set(r.rhs[0]);
      entries.push_back({rule_size(r), -static_cast<int>(r.variables().size()), canonical_key(r.lhs, r.rhs, both),
                         patterns_text(r.lhs) + " => " + patterns_text(r.rhs), std::move(r)});
    }
  std::sort(entries.begin(), entries.end(), [](const OrderedCandidate& a, const OrderedCandidate& b) {
    return std::tie(a.size, a.fewer_vars, a.key, a.text) < std::tie(b.size, b.fewer_vars, b.key, b.text);
  });
  Pruned<OrderedCandidate> unique;
  for (OrderedCandidate& e : entries) {
    if (!unique.kept.empty() && unique.kept.back().key == e.key && unique.kept.back().size == e.size) {
      ++unique.dropped;
      continue;
    }
    unique.kept.push_back(std::move(e));
  }
  return unique;
}

}  // namespace teq::synth
