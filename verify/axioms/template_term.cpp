#include "verify/axioms/template_term.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "rules/corpus.h"

namespace teq::axioms {
namespace {

class TemplateParser {
 public:
  explicit TemplateParser(std::string_view text) : text_(text) {}

  TemplateTerm parse() {
    TemplateTerm t = term();
    if (!next().empty()) fail("one term expected");
    return t;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("axiom template '" + std::string(text_) + "': " + what);
  }

  /// The next token: "(", ")", or an atom; empty at the end.
  std::string_view next() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    const size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '(' || text_[pos_] == ')')) return text_.substr(pos_++, 1);
    while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) && text_[pos_] != '(' &&
           text_[pos_] != ')')
      ++pos_;
    return text_.substr(start, pos_ - start);
  }
  std::string_view peek() {
    const size_t at = pos_;
    std::string_view t = next();
    pos_ = at;
    return t;
  }

  TemplateTerm term() {
    const std::string_view tok = next();
    TemplateTerm t;
    if (tok.size() > 1 && tok[0] == '?') {
      t.var = std::string(tok.substr(1));
      return t;
    }
    if (tok != "(") fail("a term expected, got '" + std::string(tok) + "'");
    const std::optional<OpKind> op = op_from_name(next());
    if (!op || *op == OpKind::Var) fail("unknown operator");
    t.op = *op;
    for (std::string_view a = peek(); a != "(" && a != ")" && !a.empty() && a[0] != '?'; a = peek()) {
      next();
      if (a.size() == 3 && a[0] == '{' && a[2] == '}')
        t.attrs.emplace_back(a[1]);
      else
        t.attrs.emplace_back(static_cast<int64_t>(std::stoll(std::string(a))));
    }
    while (peek() != ")") {
      if (peek().empty()) fail("unclosed '('");
      t.children.push_back(term());
    }
    next();
    return t;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

ExprId build(const TemplateTerm& t, const Pick& pick, const std::vector<std::string>& nonneg, Expr& out) {
  if (t.op == OpKind::Var) {
    const ExprId v = out.add_var(t.var);
    return std::ranges::find(nonneg, t.var) == nonneg.end() ? v : out.add(OpKind::Relu, {}, {v});
  }
  ExprNode node;
  node.op = t.op;
  for (const std::variant<int64_t, char>& a : t.attrs) {
    if (const int64_t* value = std::get_if<int64_t>(&a)) {
      node.attrs.push_back(*value);
      continue;
    }
    const std::vector<int64_t>& values = pick.at(std::get<char>(a));
    node.attrs.insert(node.attrs.end(), values.begin(), values.end());
  }
  for (const TemplateTerm& c : t.children) node.children.push_back(build(c, pick, nonneg, out));
  const OpInfo& info = op_info(t.op);
  const int n = static_cast<int>(node.children.size());
  if (n < info.min_children || (info.max_children != kVariadic && n > info.max_children) ||
      !attr_count_fits(info, node.attrs.size()))
    throw CorpusError("axiom template: " + std::string(info.name) + " with a wrong number of attributes or operands");
  return out.add(std::move(node));
}

}  // namespace

TemplateTerm parse_template(std::string_view text) { return TemplateParser(text).parse(); }

void add_placeholders(const TemplateTerm& t, std::string& out) {
  for (const std::variant<int64_t, char>& a : t.attrs)
    if (const char* c = std::get_if<char>(&a); c && out.find(*c) == std::string::npos) out += *c;
  for (const TemplateTerm& c : t.children) add_placeholders(c, out);
}

Expr instantiate(const TemplateTerm& t, const Pick& pick, const std::vector<std::string>& nonneg) {
  Expr e;
  e.add_root(build(t, pick, nonneg, e));
  return e;
}

}  // namespace teq::axioms
