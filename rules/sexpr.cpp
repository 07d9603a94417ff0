#include "rules/sexpr.h"

#include <charconv>
#include <unordered_map>

namespace teq {
namespace {

struct Token {
  enum Kind { LParen, RParen, Atom, End } kind;
  std::string text;
  bool quoted = false;
  int line = 1, column = 1;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Token next() {
    skip_space_and_comments();
    Token t{Token::End, "", false, line_, column_};
    if (pos_ >= text_.size()) return t;
    char c = text_[pos_];
    if (c == '(' || c == ')') {
      t.kind = c == '(' ? Token::LParen : Token::RParen;
      t.text = std::string(1, c);
      advance();
      return t;
    }
    t.kind = Token::Atom;
    if (c == '"') {
      t.quoted = true;
      advance();
      while (true) {
        if (pos_ >= text_.size()) throw ParseError(t.line, t.column, "unterminated string");
        char d = text_[pos_];
        if (d == '"') break;
        if (d == '\\' && pos_ + 1 < text_.size()) {
          advance();
          d = text_[pos_];
        }
        t.text += d;
        advance();
      }
      advance();
      return t;
    }
    while (pos_ < text_.size() && !is_delimiter(text_[pos_])) {
      t.text += text_[pos_];
      advance();
    }
    return t;
  }

 private:
  static bool is_delimiter(char c) {
    return c == '(' || c == ')' || c == '"' || c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
  void skip_space_and_comments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else {
        break;
      }
    }
  }
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

std::optional<int64_t> as_integer(const Token& t) {
  if (t.kind != Token::Atom || t.quoted || t.text.empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc() || end != t.text.data() + t.text.size()) return std::nullopt;
  return v;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : lexer_(text) { look_ = lexer_.next(); }

  Expr parse_graph() {
    while (look_.kind != Token::End) {
      if (look_.kind == Token::LParen) {
        Token open = take();
        if (look_.kind == Token::Atom && !look_.quoted && look_.text == "let") {
          take();
          parse_let(open);
          continue;
        }
        expr_.add_root(parse_operator(open));
      } else {
        expr_.add_root(parse_term());
      }
    }
    if (expr_.roots().empty()) throw ParseError(look_.line, look_.column, "expected at least one term");
    return std::move(expr_);
  }

 private:
  Token take() {
    Token t = look_;
    look_ = lexer_.next();
    return t;
  }
  [[noreturn]] void fail(const Token& at, const std::string& what) { throw ParseError(at.line, at.column, what); }
  void expect_close(const Token& open, const std::string& context) {
    if (look_.kind == Token::End) fail(open, "unclosed '(' of " + context);
    if (look_.kind != Token::RParen) fail(look_, "expected ')' to close " + context + ", got '" + look_.text + "'");
    take();
  }
  std::string expect_name(const std::string& context) {
    if (look_.kind != Token::Atom || as_integer(look_)) fail(look_, "expected a name after " + context);
    return take().text;
  }

  void parse_let(const Token& open) {
    Token name_tok = look_;
    std::string name = expect_name("let");
    if (!name_tok.quoted && name.starts_with("?")) fail(name_tok, "let cannot bind a ?variable");
    ExprId value = parse_term();
    expect_close(open, "let");
    if (!bindings_.emplace(name, value).second) fail(name_tok, "name '" + name + "' is bound twice");
  }

  ExprId parse_term() {
    Token t = take();
    switch (t.kind) {
      case Token::End: fail(t, "unexpected end of input, expected a term");
      case Token::RParen: fail(t, "unexpected ')'");
      case Token::LParen: return parse_operator(t);
      case Token::Atom: break;
    }
    if (as_integer(t)) fail(t, "unexpected integer " + t.text + " where a term is expected");
    if (!t.quoted && t.text.starts_with("?")) {
      if (t.text.size() == 1) fail(t, "empty variable name '?'");
      return expr_.add_var(t.text.substr(1));
    }
    auto it = bindings_.find(t.text);
    if (it == bindings_.end()) fail(t, "unknown name '" + t.text + "' (not bound by an earlier let)");
    return it->second;
  }

  ExprId parse_operator(const Token& open) {
    Token op_tok = look_;
    if (look_.kind != Token::Atom || look_.quoted || as_integer(look_)) fail(look_, "expected an operator name");
    take();
    auto kind = op_from_name(op_tok.text);
    if (!kind || *kind == OpKind::Var) fail(op_tok, "unknown operator '" + op_tok.text + "'");
    const OpInfo& info = op_info(*kind);
    ExprNode node;
    node.op = *kind;
    if (*kind == OpKind::Input || *kind == OpKind::Weight) node.name = expect_name(op_tok.text);
    // A fixed attribute count stops here, so a stray integer is reported at its own position.
    while (auto v = as_integer(look_)) {
      if (info.num_attrs != kVariadic && static_cast<int>(node.attrs.size()) == info.num_attrs + info.optional_attrs)
        break;
      node.attrs.push_back(*v);
      take();
    }
    while (look_.kind != Token::RParen && look_.kind != Token::End) node.children.push_back(parse_term());
    expect_close(open, op_tok.text);
    const int n = static_cast<int>(node.children.size());
    if (n < info.min_children || (info.max_children != kVariadic && n > info.max_children))
      fail(op_tok, std::string(info.name) + " expects " + std::to_string(info.min_children) +
                       (info.max_children == kVariadic ? " or more" : "") + " operands, got " + std::to_string(n));
    if (!attr_count_fits(info, node.attrs.size()))
      fail(op_tok, std::string(info.name) + " expects " + attr_count_text(info) +
                       " integer attributes, got " + std::to_string(node.attrs.size()));
    if (*kind == OpKind::Input || *kind == OpKind::Weight)
      for (int64_t d : node.attrs)
        if (d < 1) fail(op_tok, std::string(info.name) + " '" + node.name + "': dimensions must be >= 1");
    return expr_.add(std::move(node));
  }

  Lexer lexer_;
  Token look_;
  Expr expr_;
  std::unordered_map<std::string, ExprId> bindings_;
};

std::string quote_name(const std::string& name) {
  bool plain = !name.empty() && name[0] != '?' && !as_integer(Token{Token::Atom, name});
  for (char c : name)
    if (c == '(' || c == ')' || c == '"' || c == ';' || c == '\\' || std::isspace(static_cast<unsigned char>(c)))
      plain = false;
  if (plain) return name;
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void print_node(const Expr& e, ExprId id, const std::unordered_map<uint32_t, std::string>& names, bool top,
                std::string& out) {
  if (!top)
    if (auto it = names.find(id.value); it != names.end()) {
      out += it->second;
      return;
    }
  const ExprNode& n = e[id];
  if (n.op == OpKind::Var) {
    out += "?" + n.name;
    return;
  }
  out += "(";
  out += op_name(n.op);
  if (n.op == OpKind::Input || n.op == OpKind::Weight) out += " " + quote_name(n.name);
  for (int64_t a : n.attrs) out += " " + std::to_string(a);
  for (ExprId c : n.children) {
    out += " ";
    print_node(e, c, names, false, out);
  }
  out += ")";
}

}  // namespace

Expr parse_expr(std::string_view text) { return Parser(text).parse_graph(); }

Expr parse_pattern(std::string_view text) {
  Expr e = parse_expr(text);
  if (e.roots().size() != 1)
    throw ParseError(1, 1, "expected exactly one term, got " + std::to_string(e.roots().size()));
  return e;
}

std::string to_sexpr(const Expr& expr, ExprId id) {
  std::string out;
  print_node(expr, id, {}, true, out);
  return out;
}

std::string print_graph(const Expr& expr) {
  // Count uses among nodes reachable from the roots; an operator node used twice gets a let.
  std::vector<int> uses(expr.size(), 0);
  std::vector<bool> reachable(expr.size(), false);
  for (ExprId r : expr.roots()) reachable[r.value] = true;
  for (size_t i = expr.size(); i-- > 0;)
    if (reachable[i])
      for (ExprId c : expr.nodes()[i].children) {
        reachable[c.value] = true;
        ++uses[c.value];
      }
  for (ExprId r : expr.roots()) ++uses[r.value];
  std::unordered_map<uint32_t, std::string> names;
  std::string out;
  for (size_t i = 0; i < expr.size(); ++i) {
    if (!reachable[i] || uses[i] < 2 || is_leaf(expr.nodes()[i].op)) continue;
    std::string name = "t" + std::to_string(names.size());
    out += "(let " + name + " ";
    print_node(expr, ExprId(i), names, true, out);
    out += ")\n";
    names.emplace(static_cast<uint32_t>(i), name);
  }
  for (ExprId r : expr.roots()) {
    print_node(expr, r, names, false, out);
    out += "\n";
  }
  return out;
}

}  // namespace teq
