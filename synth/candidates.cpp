#include "synth/candidates.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

#include "rules/sexpr.h"

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
  const ExprNode& n = p[id];
  if (n.op == OpKind::Var) {
    auto it = names.find(n.name);
    if (it == names.end()) {
      std::string type;
      if (g_keep_types)
        for (char c : n.name) {
          if (std::isdigit(static_cast<unsigned char>(c))) break;
          type += c;
        }
      it = names.emplace(n.name, type + "v" + std::to_string(names.size())).first;
    }
    out += "?" + it->second;
    return;
  }
  out += "(";
  out += op_name(n.op);
  for (int64_t a : n.attrs) out += " " + std::to_string(a);
  for (ExprId c : n.children) {
    out += " ";
    print_renamed(p, c, names, out);
  }
  out += ")";
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

std::vector<PatternEquation> collect_equations(const Enumeration& e) {
  std::vector<PatternEquation> out;
  for (const Equation& q : e.equations) {
    Expr t = e.term_pattern(q.member);
    Expr r = e.class_pattern(q.cls);
    const bool r_leaf = e.classes[q.cls].rep.variant == kLeafVariant;
    auto vt = var_set(t), vr = var_set(r);
    int size = std::max(pattern_size(t), pattern_size(r));
    if (vt == vr) {
      out.push_back({std::move(t), std::move(r), true, size});
    } else if (subset(vr, vt)) {
      if (!r_leaf) out.push_back({r, t, false, size});
      out.push_back({std::move(t), std::move(r), true, size});
    } else if (subset(vt, vr)) {
      out.push_back({t, r, false, size});
      if (!r_leaf) out.push_back({std::move(r), std::move(t), true, size});
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

}  // namespace teq::synth
