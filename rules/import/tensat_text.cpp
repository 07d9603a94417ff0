#include "rules/import/tensat_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>
#include <optional>

#include "rules/import/detail/source_rule.h"

namespace teq {
namespace {

using import_detail::SkipRule;
using import_detail::SourceNode;
using import_detail::SourceRule;

// A Tensat s-expression: an atom or a list.
struct Sx {
  std::string atom;  // non-empty for atoms
  std::vector<Sx> list;
  bool is_atom() const { return !atom.empty(); }
};

class SxParser {
 public:
  explicit SxParser(std::string_view text) : text_(text) {}

  Sx parse_all() {
    Sx sx = parse();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the term");
    return sx;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw SkipRule("parse error at column " + std::to_string(pos_ + 1) + ": " + what);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Sx parse(int depth = 0) {
    if (depth > kMaxDepth) fail("terms nested deeper than " + std::to_string(kMaxDepth));
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of term");
    if (text_[pos_] == ')') fail("unexpected ')'");
    Sx sx;
    if (text_[pos_] == '(') {
      ++pos_;
      for (;;) {
        skip_space();
        if (pos_ >= text_.size()) fail("missing ')'");
        if (text_[pos_] == ')') break;
        sx.list.push_back(parse(depth + 1));
      }
      ++pos_;
      if (sx.list.empty()) fail("empty list");
      return sx;
    }
    size_t start = pos_;
    while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) && text_[pos_] != '(' &&
           text_[pos_] != ')')
      ++pos_;
    sx.atom = std::string(text_.substr(start, pos_ - start));
    return sx;
  }

  static constexpr int kMaxDepth = 256;
  std::string_view text_;
  size_t pos_ = 0;
};

std::string show(const Sx& sx) {
  if (sx.is_atom()) return sx.atom;
  std::string out = "(";
  for (size_t i = 0; i < sx.list.size(); ++i) out += (i ? " " : "") + show(sx.list[i]);
  return out + ")";
}

// Converts Tensat terms into a SourceRule (our operators, cuts and constants still open).
class TensatConverter {
 public:
  explicit TensatConverter(SourceRule& rule) : rule_(rule) {}

  int convert(const Sx& sx) {
    if (sx.is_atom()) {
      if (sx.atom.size() > 1 && sx.atom[0] == '?' &&
          std::all_of(sx.atom.begin() + 1, sx.atom.end(),
                      [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
        return rule_.var(sx.atom.substr(1));
      throw SkipRule("expected a term or ?variable, got '" + sx.atom + "'");
    }
    const std::string& op = head(sx);
    if (op == "conv2d") {
      expect_arity(sx, 4, 2);
      int64_t pad = integer(sx, 3);
      if (pad != 0 && pad != 1) throw SkipRule("conv2d: pad code must be 0 (SAME) or 1 (VALID): " + show(sx));
      int64_t p = pad == 0 ? -1 : 0;
      return node(OpKind::Conv2d, {integer(sx, 1), integer(sx, 2), p, p, activation(sx, 4)}, sx, 5);
    }
    if (op == "matmul") {
      expect_arity(sx, 1, 2);
      return node(OpKind::Matmul, {activation(sx, 1)}, sx, 2);
    }
    if (op == "concat") {
      expect_arity(sx, 2, 2);
      int64_t ndim = integer(sx, 2);
      if (ndim < 1 || ndim > 16) throw SkipRule("concat: ndim must be 1..16: " + show(sx));
      int id = node(OpKind::Concat, {integer(sx, 1)}, sx, 3);
      rule_.nodes[id].rank_hint = static_cast<int>(ndim);
      return id;
    }
    if (op == "ewadd" || op == "ewmul") {
      expect_arity(sx, 0, 2);
      return node(op == "ewadd" ? OpKind::EwAdd : OpKind::EwMul, {}, sx, 1);
    }
    if (op == "relu" || op == "tanh" || op == "sigmoid") {
      expect_arity(sx, 0, 1);
      return node(op == "relu" ? OpKind::Relu : op == "tanh" ? OpKind::Tanh : OpKind::Sigmoid, {}, sx, 1);
    }
    if (op == "split_0" || op == "split_1") {
      expect_arity(sx, 0, 1);
      const Sx& inner = sx.list[1];
      if (inner.is_atom() || head(inner) != "split")
        throw SkipRule(op + " must project a (split axis t): " + show(sx));
      expect_arity(inner, 1, 1);
      return node(OpKind::Split, {integer(inner, 1), op == "split_0" ? 0 : 1}, inner, 2);
    }
    if (op == "split") throw SkipRule("(split axis t) used without split_0/split_1: " + show(sx));
    throw SkipRule("unsupported Tensat operator '" + op + "'");
  }

 private:
  static const std::string& head(const Sx& sx) {
    if (!sx.list[0].is_atom()) throw SkipRule("operator name expected at the head of " + show(sx));
    return sx.list[0].atom;
  }
  static void expect_arity(const Sx& sx, size_t ints, size_t terms) {
    if (sx.list.size() != 1 + ints + terms)
      throw SkipRule(sx.list[0].atom + " takes " + std::to_string(ints) + " integer(s) and " +
                     std::to_string(terms) + " operand(s): " + show(sx));
  }
  static int64_t integer(const Sx& sx, size_t i) {
    const Sx& a = sx.list[i];
    int64_t v = 0;
    if (a.is_atom()) {
      auto [p, ec] = std::from_chars(a.atom.data(), a.atom.data() + a.atom.size(), v);
      if (ec == std::errc() && p == a.atom.data() + a.atom.size()) return v;
    }
    throw SkipRule(sx.list[0].atom + ": argument " + std::to_string(i) + " must be an integer: " + show(sx));
  }
  static int64_t activation(const Sx& sx, size_t i) {
    int64_t a = integer(sx, i);
    if (a < 0 || a > 3) throw SkipRule(sx.list[0].atom + ": activation code must be 0..3: " + show(sx));
    return a;
  }
  // An operator node whose operands are sx.list[first..].
  int node(OpKind op, std::vector<int64_t> attrs, const Sx& sx, size_t first) {
    SourceNode n;
    n.op = op;
    n.attrs = std::move(attrs);
    for (size_t i = first; i < sx.list.size(); ++i) n.children.push_back(convert(sx.list[i]));
    return rule_.add(std::move(n));
  }

  SourceRule& rule_;
};

struct Line {
  size_t number;  // 1-based
  std::string_view text;
};

std::vector<Line> rule_lines(std::string_view text) {
  std::vector<Line> out;
  size_t number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    if (!line.empty()) out.push_back({number, line});
  }
  return out;
}

// Adds one rule made of `lines` (1 for a single rule, 2 for a multi rule) to `result`.
void import_rule(const std::string& id, const std::string& source, const std::vector<Line>& lines,
                 ImportResult& result) {
  ++result.total;
  try {
    SourceRule src;
    TensatConverter conv(src);
    for (const Line& line : lines) {
      size_t arrow = line.text.find("=>");
      if (arrow == std::string_view::npos || line.text.find("=>", arrow + 2) != std::string_view::npos)
        throw SkipRule("line " + std::to_string(line.number) + ": expected exactly one 'lhs=>rhs'");
      src.lhs.push_back(conv.convert(SxParser(line.text.substr(0, arrow)).parse_all()));
      src.rhs.push_back(conv.convert(SxParser(line.text.substr(arrow + 2)).parse_all()));
    }
    import_detail::BuiltPatterns pats = import_detail::build_patterns(src);
    Rule rule;
    rule.id = id;
    rule.lhs = std::move(pats.lhs);
    rule.rhs = std::move(pats.rhs);
    rule.source = source;
    validate_rule(rule);
    result.corpus.rules.push_back(std::move(rule));
  } catch (const SkipRule& e) {
    result.skipped.push_back({id, e.what()});
  } catch (const CorpusError& e) {
    result.skipped.push_back({id, e.what()});
  }
}

}  // namespace

ImportResult import_tensat_rules(std::string_view single_text, std::string_view multi_text,
                                 const std::string& origin) {
  ImportResult result;
  result.corpus.generator = {{"imported_from", origin}, {"format", "tensat-text"}};
  for (const Line& line : rule_lines(single_text))
    import_rule("tensat-" + std::to_string(line.number), origin + ":" + std::to_string(line.number), {line},
                result);
  const std::string multi_origin = single_text.empty() ? origin : origin + "-multi";
  std::vector<Line> lines = rule_lines(multi_text);
  for (size_t k = 0; k < lines.size(); k += 2) {
    std::string id = "tensat-multi-" + std::to_string(k / 2 + 1);
    std::string source = multi_origin + ":" + std::to_string(lines[k].number);
    if (k + 1 == lines.size()) {
      ++result.total;
      result.skipped.push_back({id, "line " + std::to_string(lines[k].number) +
                                        ": a multi-pattern rule needs two lines, this one has no partner"});
      break;
    }
    import_rule(id, source, {lines[k], lines[k + 1]}, result);
  }
  return result;
}

}  // namespace teq
