#include "synth/generalize.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <map>
#include <random>
#include <set>
#include <string>

#include "rules/evaluator.h"
#include "rules/sexpr.h"
#include "synth/candidates.h"
#include "synth/fingerprint.h"
#include "synth/parallel.h"
#include "synth/typing.h"
#include "verify/elementwise.h"

namespace teq::synth {

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// One occurrence of a variable in a rule's pattern texts (lhs patterns first, then rhs).
struct Occurrence {
  size_t text;  // index into the texts (lhs then rhs)
  size_t pos;   // of the name, after '?'
  size_t len;
};

std::map<std::string, std::vector<Occurrence>> occurrences(const std::vector<std::string>& texts,
                                                            std::vector<std::string>& order) {
  std::map<std::string, std::vector<Occurrence>> out;
  for (size_t t = 0; t < texts.size(); ++t) {
    const std::string& s = texts[t];
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '?') continue;
      size_t j = i + 1;
      while (j < s.size() && is_name_char(s[j])) ++j;
      std::string name = s.substr(i + 1, j - i - 1);
      auto [it, fresh] = out.try_emplace(name);
      if (fresh) order.push_back(name);
      it->second.push_back({t, i + 1, j - i - 1});
      i = j - 1;
    }
  }
  return out;
}

/// Distinct operator subterms over all patterns: fewer means more sharing (a two-pattern rule whose right
/// sides are two parts of one joint term).
size_t distinct_subterms(const Rule& r) {
  std::set<std::string> seen;
  for (const auto* side : {&r.lhs, &r.rhs})
    for (const Expr& p : *side)
      for (size_t i = 0; i < p.size(); ++i)
        if (p[ExprId{static_cast<uint32_t>(i)}].op != OpKind::Var) seen.insert(to_sexpr(p, ExprId{static_cast<uint32_t>(i)}));
  return seen.size();
}

/// Not refuted on the fingerprint shapes (sets A, B and, where the types have it, C) at random small
/// integers, and evaluated on at least one of them. A false split is almost always refuted here, so the
/// prover sees few candidates.
bool survives_numeric_test(const Rule& rule, const std::vector<LeafType>& types, uint64_t seed) {
  auto typing = assign_types(rule, types, {{ShapeChoice::SetA}, {ShapeChoice::SetB}});
  if (!typing) return false;
  bool have_c = true;
  for (const LeafType& t : types) have_c = have_c && t.shape_c.has_value();
  std::vector<ShapeChoice> choices = {{ShapeChoice::SetA}, {ShapeChoice::SetB}};
  if (have_c) choices.push_back({ShapeChoice::SetC});
  std::mt19937_64 rng(mix64(seed ^ 41));
  int evaluated = 0;
  for (const ShapeChoice& choice : choices) {
    VarShapes shapes = shapes_of(*typing, types, choice);
    bool well_shaped = true;
    for (size_t i = 0; i < rule.lhs.size() && well_shaped; ++i) {
      auto ls = try_infer_shapes(rule.lhs[i], shapes), rs = try_infer_shapes(rule.rhs[i], shapes);
      if (!ls || !rs) {
        well_shaped = false;
        break;
      }
      if ((*ls)[rule.lhs[i].root().value] != (*rs)[rule.rhs[i].root().value]) return false;
    }
    if (!well_shaped) continue;
    bool decided = true;
    for (double negative : {0.5, 0.9, 0.1}) {
      std::map<std::string, Tensor<double>> leaves;
      for (const auto& [name, shape] : shapes) leaves.emplace(name, random_double_tensor(shape, rng, negative));
      try {
        if (find_difference(rule, leaves)) return false;
      } catch (const std::exception&) {
        decided = false;
        break;
      }
    }
    evaluated += decided;
  }
  return evaluated > 0;
}

std::string type_prefix(const std::string& name) {
  size_t n = 0;
  while (n < name.size() && !std::isdigit(static_cast<unsigned char>(name[n]))) ++n;
  return name.substr(0, n);
}

bool match(const Expr& g, ExprId gi, const Expr& s, ExprId si, std::map<std::string, std::string>& subst) {
  const ExprNode& gn = g[gi];
  if (gn.op == OpKind::Var) {
    std::string text = to_sexpr(s, si);
    auto [it, fresh] = subst.try_emplace(gn.name, text);
    return fresh || it->second == text;
  }
  const ExprNode& sn = s[si];
  if (sn.op != gn.op || sn.attrs != gn.attrs || sn.children.size() != gn.children.size() || sn.name != gn.name)
    return false;
  for (size_t k = 0; k < gn.children.size(); ++k)
    if (!match(g, gn.children[k], s, sn.children[k], subst)) return false;
  return true;
}

/// One substitution maps general's patterns (gl[perm], gr[perm]) onto special's (sl, sr).
bool match_all(const std::vector<Expr>& gl, const std::vector<Expr>& gr, const std::vector<Expr>& sl,
               const std::vector<Expr>& sr, const std::vector<size_t>& perm) {
  std::map<std::string, std::string> subst;
  for (size_t i = 0; i < sl.size(); ++i) {
    const Expr &g1 = gl[perm[i]], &g2 = gr[perm[i]];
    if (!match(g1, g1.root(), sl[i], sl[i].root(), subst)) return false;
    if (!match(g2, g2.root(), sr[i], sr[i].root(), subst)) return false;
  }
  return true;
}

bool has_repeated_lhs_variable(const Rule& r) {
  std::vector<std::string> texts, order;
  for (const Expr& p : r.lhs) texts.push_back(to_sexpr(p, p.root()));
  auto occ = occurrences(texts, order);
  for (const auto& [name, list] : occ)
    if (list.size() > 1) return true;
  return false;
}

}  // namespace

std::vector<Rule> variable_splits(const Rule& rule, const std::vector<LeafType>& types, const GeneralizeConfig& config) {
  std::vector<std::string> texts;
  for (const Expr& p : rule.lhs) texts.push_back(to_sexpr(p, p.root()));
  for (const Expr& p : rule.rhs) texts.push_back(to_sexpr(p, p.root()));
  const size_t nl = rule.lhs.size();
  std::vector<std::string> order;
  const auto occ = occurrences(texts, order);
  const bool both_ways = is_reversible(rule);

  struct Entry {
    size_t sharing;
    int renamed;
    size_t var_index;
    uint64_t value;
    Rule rule;
  };
  std::vector<Entry> entries;
  for (size_t vi = 0; vi < order.size(); ++vi) {
    const std::string& v = order[vi];
    const std::vector<Occurrence>& list = occ.at(v);
    size_t lhs_count = 0;
    for (const Occurrence& o : list) lhs_count += o.text < nl;
    if (lhs_count < 2) continue;  // the fresh variable must be bound on the left, and so must v
    const size_t m = list.size() - 1;  // the first (left) occurrence keeps v: a split and its mirror are one rule
    if (m > 12) continue;  // 2^m splits: a bound on the work per variable (size 3 needs m <= 7)
    std::string fresh;
    for (int k = 1;; ++k) {
      fresh = type_prefix(v) + std::to_string(k);
      if (!occ.count(fresh)) break;
    }
    for (uint64_t mask = 1; mask < (uint64_t{1} << m); ++mask) {
      bool lhs_renamed = false, rhs_v = false, rhs_fresh = false;
      uint64_t value = 0;
      for (size_t i = 1; i <= m; ++i) {
        const bool r = mask >> (i - 1) & 1;
        if (r) value |= uint64_t{1} << (m - i);  // later occurrences renamed first
        if (list[i].text < nl) lhs_renamed |= r;
        else (r ? rhs_fresh : rhs_v) = true;
      }
      if (!lhs_renamed) continue;
      if (both_ways && (!rhs_v || !rhs_fresh)) continue;  // keep a two-way rule two-way
      std::vector<std::string> t = texts;
      // Replace from the back so that earlier positions stay valid.
      for (size_t i = m; i >= 1; --i)
        if (mask >> (i - 1) & 1) t[list[i].text].replace(list[i].pos, list[i].len, fresh);
      Rule r;
      try {
        // make_rule validates (rules/corpus.h validate_rule), which wants an id: pair_multi_rules leaves it empty.
        r = make_rule(rule.id.empty() ? "split" : rule.id, std::vector<std::string>(t.begin(), t.begin() + nl),
                      std::vector<std::string>(t.begin() + nl, t.end()));
      } catch (const std::exception&) {
        continue;
      }
      if (both_ways && !is_reversible(r)) continue;
      r.id = rule.id;
      entries.push_back({distinct_subterms(r), std::popcount(mask), vi, value, std::move(r)});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.sharing, a.renamed, a.var_index, a.value) < std::tie(b.sharing, b.renamed, b.var_index, b.value);
  });
  if (entries.size() > config.max_candidates) entries.resize(config.max_candidates);
  std::vector<Rule> out;
  for (Entry& e : entries)
    if (survives_numeric_test(e.rule, types, config.seed)) out.push_back(std::move(e.rule));
  return out;
}

Generalization generalize_rule(const Rule& rule, const std::vector<LeafType>& types, const GeneralizeConfig& config) {
  Generalization result;
  std::optional<Rule>& best = result.rule;
  const Rule* current = &rule;
  for (int step = 0; step < config.max_steps; ++step) {
    std::vector<Rule> splits = variable_splits(*current, types, config);
    std::optional<Rule> found;
    for (size_t i = 0; i < splits.size() && i < config.max_proofs; ++i) {
      ++result.proofs;
      ProofResult p = prove_rule(splits[i], config.prove);
      // Verified only under shape conditions (a conv batching proved again with its variables' shapes tied)
      // is no generalization of a rule that holds without them: four such splits, kept without their
      // conditions, were rules ruleverify refutes.
      if (p.status != "verified" || !p.same_shape.empty() || !p.conv_groupings.empty()) continue;
      ++result.proved;
      splits[i].verification = Verification{"verified", "z3-elementwise", p.ms};
      found = std::move(splits[i]);
      break;
    }
    if (!found) break;
    best = std::move(found);
    current = &*best;
  }
  return result;
}

bool is_instance_of(const Rule& special, const Rule& general) {
  if (special.lhs.size() != general.lhs.size()) return false;
  const bool special_two_way = is_reversible(special), general_two_way = is_reversible(general);
  if (special_two_way && !general_two_way) return false;
  std::vector<size_t> perm(special.lhs.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  do {
    if (match_all(general.lhs, general.rhs, special.lhs, special.rhs, perm)) return true;
  } while (perm.size() <= 2 && std::next_permutation(perm.begin(), perm.end()));
  if (special_two_way && general_two_way)
    return match_all(general.rhs, general.lhs, special.lhs, special.rhs, {0});
  return false;
}

GeneralizedRules generalize_rules(std::vector<Rule> rules, const std::vector<LeafType>& types,
                                  const GeneralizeConfig& config, int threads) {
  GeneralizeStats stats;
  const size_t n = rules.size();
  std::vector<Generalization> general(n);
  parallel_for(n, threads, [&](size_t i) {
    // A rule with shape conditions stays as proved: splitting its variables would have to split them too.
    if (rules[i].same_shape.empty() && rules[i].conv_groupings.empty() && has_repeated_lhs_variable(rules[i]))
      general[i] = generalize_rule(rules[i], types, config);
  });
  std::vector<char> is_general(n, 0);
  for (size_t i = 0; i < n; ++i) {
    stats.proofs += general[i].proofs, stats.proved += general[i].proved;
    if (!general[i].rule) continue;
    std::string id = rules[i].id;
    rules[i] = std::move(*general[i].rule);
    rules[i].id = std::move(id);
    is_general[i] = 1;
    ++stats.generalized;
  }
  // Drop the rules a generalized rule covers; of rules that are instances of each other (renamings), the
  // first stays. "Instance of" is transitive, so what remains covers what is dropped.
  std::vector<char> drop(n, 0);
  parallel_for(n, threads, [&](size_t i) {
    for (size_t j = 0; j < n && !drop[i]; ++j) {
      if (j == i || !(is_general[i] || is_general[j])) continue;
      if (is_instance_of(rules[i], rules[j]) && (j < i || !is_instance_of(rules[j], rules[i]))) drop[i] = 1;
    }
  });
  GeneralizedRules out;
  for (size_t i = 0; i < n; ++i) {
    if (drop[i]) ++stats.dropped;
    else out.rules.push_back(std::move(rules[i]));
  }
  out.stats = stats;
  return out;
}

}  // namespace teq::synth
