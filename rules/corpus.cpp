#include "rules/corpus.h"

#include <fstream>
#include <set>
#include <sstream>

#include "rules/rule_scope.h"
#include "rules/sexpr.h"

namespace teq {

std::vector<std::string> Rule::variables() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Expr& p : lhs)
    for (const std::string& v : p.variables())
      if (seen.insert(v).second) out.push_back(v);
  return out;
}

const Rule* RuleCorpus::find(std::string_view id) const {
  for (const Rule& r : rules)
    if (r.id == id) return &r;
  return nullptr;
}

namespace {
[[noreturn]] void fail(const std::string& id, const std::string& field, const std::string& what) {
  throw CorpusError("rule '" + id + "': " + field + ": " + what);
}
}  // namespace

void validate_rule(const Rule& rule) {
  if (rule.id.empty()) throw CorpusError("rule with an empty id");
  if (rule.lhs.empty()) fail(rule.id, "lhs", "no patterns");
  if (rule.lhs.size() != rule.rhs.size())
    fail(rule.id, "rhs", std::to_string(rule.rhs.size()) + " patterns for " + std::to_string(rule.lhs.size()) +
                             " lhs patterns");
  std::set<std::string> bound;
  for (const Expr& p : rule.lhs)
    for (const std::string& v : p.variables()) bound.insert(v);
  for (int side = 0; side < 2; ++side) {
    const auto& pats = side == 0 ? rule.lhs : rule.rhs;
    for (size_t i = 0; i < pats.size(); ++i) {
      std::string field = std::string(side == 0 ? "lhs[" : "rhs[") + std::to_string(i) + "]";
      const Expr& p = pats[i];
      if (p.roots().size() != 1) fail(rule.id, field, "must be exactly one pattern");
      for (const ExprNode& n : p.nodes()) {
        if (n.op == OpKind::Input || n.op == OpKind::Weight)
          fail(rule.id, field, "patterns use ?variables, not " + std::string(op_name(n.op)) + " leaves");
        if (side == 1 && n.op == OpKind::Var && !bound.contains(n.name))
          fail(rule.id, field, "variable ?" + n.name + " is not bound by the lhs");
      }
      if (side == 0 && p[p.root()].op == OpKind::Var) fail(rule.id, field, "a bare variable matches everything");
    }
  }
  for (size_t g = 0; g < rule.same_shape.size(); ++g) {
    const std::string field = "same_shape[" + std::to_string(g) + "]";
    const std::vector<std::string>& group = rule.same_shape[g];
    if (group.size() < 2) fail(rule.id, field, "a group needs at least two variables");
    std::set<std::string> seen;
    for (const std::string& v : group) {
      if (!bound.contains(v)) fail(rule.id, field, "variable ?" + v + " is not bound by the lhs");
      if (!seen.insert(v).second) fail(rule.id, field, "variable ?" + v + " named twice");
    }
  }
  std::set<std::string> groupings;
  for (size_t g = 0; g < rule.conv_groupings.size(); ++g) {
    const std::string field = "conv_groupings[" + std::to_string(g) + "]";
    if (std::string problem = grouping_problem(rule, rule.conv_groupings[g]); !problem.empty())
      fail(rule.id, field, problem);
    if (!groupings.insert(rule.conv_groupings[g]).second) fail(rule.id, field, "grouping listed twice");
  }
}

bool is_reversible(const Rule& rule) {
  if (rule.lhs.size() != 1 || rule.rhs.size() != 1) return false;
  const Expr& rhs = rule.rhs[0];
  if (rhs[rhs.root()].op == OpKind::Var) return false;
  const std::vector<std::string> on_right = rhs.variables();
  const std::set<std::string> right(on_right.begin(), on_right.end());
  for (const std::string& v : rule.lhs[0].variables())
    if (!right.contains(v)) return false;
  return true;
}

std::optional<Rule> reversed_rule(const Rule& rule) {
  if (!is_reversible(rule)) return std::nullopt;
  Rule out;
  out.id = rule.id + "~rev";
  out.lhs = rule.rhs;
  out.rhs = rule.lhs;
  out.verification = rule.verification;
  out.source = rule.source;
  out.same_shape = rule.same_shape;  // every variable is on both sides of a reversible rule
  // The same scope: a grouping names the rule's convolutions side by side, so the sides swap.
  for (const std::string& g : rule.conv_groupings) out.conv_groupings.push_back(reversed_grouping(g));
  return out;
}

bool reversal_copies_an_operand(const Rule& rule) {
  if (rule.lhs.size() != 1 || rule.rhs.size() != 1) return false;
  // The reversal builds the rule's left side: a node of it with one variable as two operands is a copy.
  const Expr& built = rule.lhs[0];
  for (const ExprNode& n : built.nodes()) {
    std::set<std::string> operands;
    for (ExprId c : n.children)
      if (built[c].op == OpKind::Var && !operands.insert(built[c].name).second) return true;
  }
  return false;
}

size_t add_reversed_rules(RuleCorpus& corpus) {
  auto text = [](const Rule& r) {
    return to_sexpr(r.lhs[0], r.lhs[0].root()) + "=>" + to_sexpr(r.rhs[0], r.rhs[0].root()) +
           (r.same_shape.empty() ? "" : nlohmann::json(r.same_shape).dump()) +
           (r.conv_groupings.empty() ? "" : nlohmann::json(r.conv_groupings).dump());
  };
  std::set<std::string> present;
  for (const Rule& r : corpus.rules)
    if (!r.is_multi()) present.insert(text(r));
  const size_t before = corpus.rules.size();
  for (size_t i = 0; i < before; ++i) {
    if (reversal_copies_an_operand(corpus.rules[i])) continue;
    if (std::optional<Rule> rev = reversed_rule(corpus.rules[i]); rev && present.insert(text(*rev)).second)
      corpus.rules.push_back(std::move(*rev));
  }
  return corpus.rules.size() - before;
}

Rule make_rule(std::string id, const std::vector<std::string>& lhs, const std::vector<std::string>& rhs,
               const std::vector<std::vector<std::string>>& same_shape,
               const std::vector<std::string>& conv_groupings) {
  Rule rule;
  rule.id = std::move(id);
  auto parse_side = [&](const std::vector<std::string>& texts, const char* side, std::vector<Expr>& out) {
    for (size_t i = 0; i < texts.size(); ++i) {
      try {
        out.push_back(parse_pattern(texts[i]));
      } catch (const std::exception& e) {
        fail(rule.id, std::string(side) + "[" + std::to_string(i) + "]", e.what());
      }
    }
  };
  parse_side(lhs, "lhs", rule.lhs);
  parse_side(rhs, "rhs", rule.rhs);
  for (const std::vector<std::string>& group : same_shape) {
    rule.same_shape.emplace_back();
    for (const std::string& v : group) rule.same_shape.back().push_back(v.starts_with('?') ? v.substr(1) : v);
  }
  rule.conv_groupings = conv_groupings;
  validate_rule(rule);
  return rule;
}

std::vector<std::string> rule_lines(const Rule& rule) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < rule.lhs.size(); ++i)
    lines.push_back(to_sexpr(rule.lhs[i], rule.lhs[i].root()) + "  =>  " + to_sexpr(rule.rhs[i], rule.rhs[i].root()));
  return lines;
}

nlohmann::json rule_to_json(const Rule& rule) {
  nlohmann::json j;
  j["id"] = rule.id;
  for (const Expr& p : rule.lhs) j["lhs"].push_back(to_sexpr(p, p.root()));
  for (const Expr& p : rule.rhs) j["rhs"].push_back(to_sexpr(p, p.root()));
  for (const std::vector<std::string>& group : rule.same_shape) {
    nlohmann::json names = nlohmann::json::array();
    for (const std::string& v : group) names.push_back("?" + v);
    j["same_shape"].push_back(std::move(names));
  }
  if (!rule.conv_groupings.empty()) j["conv_groupings"] = rule.conv_groupings;
  if (!rule.source.empty()) j["source"] = rule.source;
  if (rule.verification)
    j["verification"] = {{"status", rule.verification->status},
                         {"method", rule.verification->method},
                         {"ms", rule.verification->ms}};
  return j;
}

RuleCorpus parse_corpus(std::string_view text, const std::string& origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw CorpusError(origin + ": empty file, not a JSON rule corpus");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    throw CorpusError(origin + ": not valid JSON: " + e.what());
  }
  auto top_fail = [&](const std::string& what) { throw CorpusError(origin + ": " + what); };
  if (!j.is_object()) top_fail("top level must be a JSON object");
  if (!j.contains("format") || j["format"] != "tensor-eqsat-rules")
    top_fail("field 'format' must be \"tensor-eqsat-rules\"");
  if (!j.contains("version") || j["version"] != 1) top_fail("field 'version' must be 1");
  if (!j.contains("rules") || !j["rules"].is_array()) top_fail("field 'rules' must be an array");
  RuleCorpus corpus;
  if (j.contains("generator")) corpus.generator = j["generator"];
  std::set<std::string> ids;
  for (size_t k = 0; k < j["rules"].size(); ++k) {
    const nlohmann::json& r = j["rules"][k];
    std::string label = "rule #" + std::to_string(k);
    try {
      if (!r.is_object()) throw CorpusError(label + ": must be an object");
      if (!r.contains("id") || !r["id"].is_string() || r["id"].get<std::string>().empty())
        throw CorpusError(label + ": field 'id' must be a non-empty string");
      std::string id = r["id"];
      auto strings = [&](const char* field) {
        if (!r.contains(field) || !r[field].is_array()) fail(id, field, "must be an array of pattern strings");
        std::vector<std::string> out;
        for (const auto& s : r[field]) {
          if (!s.is_string()) fail(id, field, "must be an array of pattern strings");
          out.push_back(s);
        }
        return out;
      };
      std::vector<std::vector<std::string>> same_shape;
      if (r.contains("same_shape")) {
        const auto& groups = r["same_shape"];
        auto bad = [&] { fail(id, "same_shape", "must be an array of arrays of ?variable names"); };
        if (!groups.is_array()) bad();
        for (const auto& g : groups) {
          if (!g.is_array()) bad();
          same_shape.emplace_back();
          for (const auto& v : g) {
            if (!v.is_string() || !v.get<std::string>().starts_with('?')) bad();
            same_shape.back().push_back(v);
          }
        }
      }
      std::vector<std::string> conv_groupings;
      if (r.contains("conv_groupings")) {
        const auto& gs = r["conv_groupings"];
        auto bad = [&] { fail(id, "conv_groupings", "must be an array of grouping strings such as \"g|uu\""); };
        if (!gs.is_array()) bad();
        for (const auto& g : gs) {
          if (!g.is_string()) bad();
          conv_groupings.push_back(g);
        }
      }
      Rule rule = make_rule(id, strings("lhs"), strings("rhs"), same_shape, conv_groupings);
      if (r.contains("source")) {
        if (!r["source"].is_string()) fail(id, "source", "must be a string");
        rule.source = r["source"];
      }
      if (r.contains("verification")) {
        const auto& v = r["verification"];
        if (!v.is_object() || !v.contains("status") || !v["status"].is_string())
          fail(id, "verification", "must be an object with a string 'status'");
        std::string status = v["status"];
        if (status != "verified" && status != "wrong" && status != "unknown")
          fail(id, "verification.status", "must be verified, wrong or unknown, got '" + status + "'");
        if (v.contains("method") && !v["method"].is_string()) fail(id, "verification.method", "must be a string");
        if (v.contains("ms") && !v["ms"].is_number()) fail(id, "verification.ms", "must be a number");
        rule.verification = Verification{status, v.value("method", ""), v.value("ms", 0.0)};
      }
      if (!ids.insert(id).second) fail(id, "id", "duplicate id");
      corpus.rules.push_back(std::move(rule));
    } catch (const CorpusError& e) {
      throw CorpusError(origin + ": " + e.what());
    }
  }
  return corpus;
}

RuleCorpus load_corpus(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw CorpusError(path.string() + ": cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_corpus(buf.str(), path.string());
}

std::string dump_corpus(const RuleCorpus& corpus) {
  // One rule per line keeps the file diffable.
  std::string out = "{\n  \"format\": \"tensor-eqsat-rules\",\n  \"version\": 1,\n  \"generator\": " +
                    corpus.generator.dump() + ",\n  \"rules\": [\n";
  for (size_t i = 0; i < corpus.rules.size(); ++i)
    out += "    " + rule_to_json(corpus.rules[i]).dump() + (i + 1 < corpus.rules.size() ? ",\n" : "\n");
  return out + "  ]\n}\n";
}

void save_corpus(const RuleCorpus& corpus, const std::filesystem::path& path) {
  std::ofstream out(path);
  if (!out) throw CorpusError(path.string() + ": cannot write file");
  out << dump_corpus(corpus);
  if (!out) throw CorpusError(path.string() + ": write failed");
}

}  // namespace teq
