#include "rules/import/tensat_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>
#include <optional>
#include <set>
#include <utility>

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

// Tensat's language (its src/model.rs) and how each operator maps onto ours: docs/importers.md. Tensat
// writes integer parameters first except for poolmax/poolavg (input first), transpose and reshape (a
// name such as 1_0 after the input), enlarge (a reference kernel) and merge (a count after the weight).
class TensatConverter {
 public:
  explicit TensatConverter(SourceRule& rule) : rule_(rule) {}

  /// The line being converted, for the messages that refuse an operator.
  void set_line(size_t line) { line_ = line; }

  int convert(const Sx& sx) {
    if (sx.is_atom()) {
      if (sx.atom.size() > 1 && sx.atom[0] == '?' &&
          std::all_of(sx.atom.begin() + 1, sx.atom.end(),
                      [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
        return rule_.var(sx.atom.substr(1));
      // Tensat's nullary constants, written bare as egg allows.
      if (sx.atom == "Imatmul" || sx.atom == "Iewmul") return constant(sx.atom);
      throw SkipRule("expected a term or ?variable, got '" + sx.atom + "'");
    }
    const std::string& op = head(sx);
    if (op == "conv2d") {
      expect_arity(sx, 4, 2);
      int64_t p = padding(sx, 3);
      return node(OpKind::Conv2d, {integer(sx, 1), integer(sx, 2), p, p, activation(sx, 4)}, sx, 5);
    }
    if (op == "matmul") {
      expect_arity(sx, 1, 2);
      return node(OpKind::Matmul, {activation(sx, 1)}, sx, 2);
    }
    if (op == "concat" || op == "concat3" || op == "concat4" || op == "concat5") {
      // concat, concat3, ..: the same operator with 2, 3, .. operands; ndim only fixes ranks.
      expect_arity(sx, 2, op == "concat" ? 2 : static_cast<size_t>(op.back() - '0'));
      int64_t ndim = integer(sx, 2);
      if (ndim < 1 || ndim > 16) throw SkipRule(op + ": ndim must be 1..16: " + show(sx));
      int id = node(OpKind::Concat, {integer(sx, 1)}, sx, 3);
      rule_.nodes[id].rank_hint = static_cast<int>(ndim);
      return id;
    }
    if (op == "ewadd" || op == "ewmul" || op == "smul") {
      expect_arity(sx, 0, 2);
      return node(op == "ewadd" ? OpKind::EwAdd : op == "ewmul" ? OpKind::EwMul : OpKind::Smul, {}, sx, 1);
    }
    if (op == "relu" || op == "tanh" || op == "sigmoid") {
      expect_arity(sx, 0, 1);
      return node(op == "relu" ? OpKind::Relu : op == "tanh" ? OpKind::Tanh : OpKind::Sigmoid, {}, sx, 1);
    }
    if (op == "dropout") {
      // TASO builds dropout as a no-op for inference (core/noop.cc), so it is its operand.
      expect_arity(sx, 0, 1);
      return convert(sx.list[1]);
    }
    if (op == "poolmax" || op == "poolavg") return pool(sx);
    if (op == "enlarge") return enlarge(sx);
    if (op == "transpose") {
      expect_operand_then(sx, "a permutation such as 1_0 and the shuffle flag 0/1", 2);
      std::vector<int64_t> perm = dims(sx, 2, "permutation");
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i)
        if (sorted[i] != static_cast<int64_t>(i)) throw SkipRule("transpose: not a permutation: " + show(sx));
      // SHUFFLE only asks TASO to lay the result out physically; the values are the same.
      if (int64_t s = integer(sx, 3); s != 0 && s != 1)
        throw SkipRule("transpose: shuffle must be 0 or 1: " + show(sx));
      return operand_node(OpKind::Transpose, std::move(perm), sx);
    }
    if (op == "reshape") {
      expect_operand_then(sx, "a shape such as 2_6", 1);
      std::vector<int64_t> shape = dims(sx, 2, "shape");
      for (int64_t d : shape)
        if (d < 1) throw SkipRule("reshape: dimensions must be >= 1: " + show(sx));
      return operand_node(OpKind::Reshape, std::move(shape), sx);
    }
    if (op == "noop") {
      expect_arity(sx, 0, 2);
      return node(OpKind::Noop, {}, sx, 1);
    }
    if (op == "batchnorm") {
      // Same operand order as ours (input, scale, bias, mean, var); TASO's epsilon: docs/importers.md.
      expect_arity(sx, 0, 5);
      return node(OpKind::BatchNorm, {}, sx, 1);
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
    if (op == "Cpool" || op == "Iconv") {
      expect_arity(sx, 2, 0);
      return node(op == "Cpool" ? OpKind::PoolKernel : OpKind::IConv, {integer(sx, 1), integer(sx, 2)}, sx, 3);
    }
    if (op == "Imatmul" || op == "Iewmul") {
      expect_arity(sx, 0, 0);
      return constant(op);
    }
    if (op == "input" || op == "weight")
      refuse(op, "a graph leaf (name@dims); rule patterns use ?variables, never graph tensors");
    if (op == "merge") {
      // (merge w count): TASO's merge_gconv; ours is (merge count w), upstream TASO's layout.
      expect_operand_then(sx, "the group count", 1);
      int64_t count = integer(sx, 2);
      if (count < 1) throw SkipRule("merge: count must be >= 1: " + show(sx));
      return operand_node(OpKind::Merge, {count}, sx);
    }
    throw SkipRule("unsupported Tensat operator '" + op + "' (line " + std::to_string(line_) + ")");
  }

 private:
  [[noreturn]] void refuse(const std::string& op, const std::string& why) const {
    throw SkipRule("Tensat operator '" + op + "' (line " + std::to_string(line_) + ") is not imported: " + why);
  }
  static const std::string& head(const Sx& sx) {
    if (!sx.list[0].is_atom()) throw SkipRule("operator name expected at the head of " + show(sx));
    return sx.list[0].atom;
  }
  static void expect_arity(const Sx& sx, size_t ints, size_t terms) {
    if (sx.list.size() != 1 + ints + terms)
      throw SkipRule(sx.list[0].atom + " takes " + std::to_string(ints) + " integer(s) and " +
                     std::to_string(terms) + " operand(s): " + show(sx));
  }
  // Operators written (op input params...): one operand first, then `params` parameters.
  static void expect_operand_then(const Sx& sx, const std::string& what, size_t params) {
    if (sx.list.size() != 2 + params)
      throw SkipRule(sx.list[0].atom + " takes its input, then " + what + ": " + show(sx));
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
  // Tensat's ACTNONE 0, ACTSIGMOID 1, ACTRELU 2, ACTTANH 3 are our numbering too.
  static int64_t activation(const Sx& sx, size_t i) {
    int64_t a = integer(sx, i);
    if (a < 0 || a > 3) throw SkipRule(sx.list[0].atom + ": activation code must be 0..3: " + show(sx));
    return a;
  }
  // Tensat's PSAME 0 is our SAME (-1 on both axes), PVALID 1 is no padding.
  static int64_t padding(const Sx& sx, size_t i) {
    int64_t pad = integer(sx, i);
    if (pad != 0 && pad != 1)
      throw SkipRule(sx.list[0].atom + ": pad code must be 0 (SAME) or 1 (VALID): " + show(sx));
    return pad == 0 ? -1 : 0;
  }
  // A name of the form d1_d2_..._dn (Tensat's permutations and shapes).
  static std::vector<int64_t> dims(const Sx& sx, size_t i, const std::string& what) {
    const Sx& a = sx.list[i];
    std::vector<int64_t> out;
    if (a.is_atom() && a.atom[0] != '?') {
      std::string_view rest = a.atom;
      while (true) {
        size_t us = rest.find('_');
        std::string_view part = rest.substr(0, us);
        int64_t v = 0;
        auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (part.empty() || ec != std::errc() || p != part.data() + part.size()) {
          out.clear();
          break;
        }
        out.push_back(v);
        if (us == std::string_view::npos) break;
        rest.remove_prefix(us + 1);
      }
    }
    if (out.empty() || out.size() > 16)
      throw SkipRule(sx.list[0].atom + ": the " + what + " must be written out as d1_d2_.. (at most 16): " + show(sx));
    return out;
  }
  // (poolmax input kh kw sh sw pad act): TASO's pooling with its fused activation, which we write as an
  // activation around the pool. TASO's average excludes the padding (cuDNN and DNNL alike).
  int pool(const Sx& sx) {
    const bool max = sx.list[0].atom == "poolmax";
    expect_operand_then(sx, "kernel h/w, stride h/w, pad code and activation", 6);
    int64_t p = padding(sx, 6);
    std::vector<int64_t> attrs = {integer(sx, 2), integer(sx, 3), integer(sx, 4), integer(sx, 5), p, p};
    if (!max) attrs.push_back(0);
    int64_t act = activation(sx, 7);
    int id = operand_node(max ? OpKind::MaxPool : OpKind::AvgPool, std::move(attrs), sx);
    if (act == 0) return id;
    SourceNode n;
    n.op = act == 1 ? OpKind::Sigmoid : act == 2 ? OpKind::Relu : OpKind::Tanh;
    n.children = {id};
    return rule_.add(std::move(n));
  }
  // (enlarge w ref): w zero-padded to ref's kernel size. Ours states the size, so it is taken from ref
  // where the text fixes it (Iconv, Cpool, another enlarge) and is 3x3 otherwise, the one size TASO's
  // generator enlarges to: the rule then covers 3x3 references (docs/importers.md).
  int enlarge(const Sx& sx) {
    expect_arity(sx, 0, 2);
    auto [kh, kw] = kernel_size(sx.list[2]);
    return operand_node(OpKind::Enlarge, {kh, kw}, sx);
  }
  static std::pair<int64_t, int64_t> kernel_size(const Sx& ref) {
    if (!ref.is_atom() && ref.list[0].is_atom()) {
      const std::string& op = ref.list[0].atom;
      if ((op == "Iconv" || op == "Cpool") && ref.list.size() == 3) return {integer(ref, 1), integer(ref, 2)};
      if (op == "enlarge" && ref.list.size() == 3) return kernel_size(ref.list[2]);
    }
    return {3, 3};
  }
  // A constant whose size build_patterns derives from the surrounding term (like TASO's).
  int constant(const std::string& op) {
    SourceNode n;
    n.op = op == "Imatmul" ? OpKind::Eye : OpKind::Ones;
    return rule_.add(std::move(n));
  }
  // An operator node whose operands are sx.list[first..].
  int node(OpKind op, std::vector<int64_t> attrs, const Sx& sx, size_t first) {
    SourceNode n;
    n.op = op;
    n.attrs = std::move(attrs);
    for (size_t i = first; i < sx.list.size(); ++i) n.children.push_back(convert(sx.list[i]));
    return rule_.add(std::move(n));
  }
  // An operator node whose one operand is sx.list[1] (written before the parameters).
  int operand_node(OpKind op, std::vector<int64_t> attrs, const Sx& sx) {
    SourceNode n;
    n.op = op;
    n.attrs = std::move(attrs);
    n.children.push_back(convert(sx.list[1]));
    return rule_.add(std::move(n));
  }

  SourceRule& rule_;
  size_t line_ = 0;
};

// The ?variables of a Tensat term, as written (an enlarge's reference kernel is dropped from our pattern,
// so the check that the rhs uses only lhs variables must happen on the text: egg requires it too).
void collect_vars(const Sx& sx, std::set<std::string>& out) {
  if (sx.is_atom()) {
    if (sx.atom[0] == '?') out.insert(sx.atom);
    return;
  }
  for (const Sx& c : sx.list) collect_vars(c, out);
}

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
    std::set<std::string> lhs_vars, rhs_vars;
    for (const Line& line : lines) {
      size_t arrow = line.text.find("=>");
      if (arrow == std::string_view::npos || line.text.find("=>", arrow + 2) != std::string_view::npos)
        throw SkipRule("line " + std::to_string(line.number) + ": expected exactly one 'lhs=>rhs'");
      Sx lhs = SxParser(line.text.substr(0, arrow)).parse_all();
      Sx rhs = SxParser(line.text.substr(arrow + 2)).parse_all();
      collect_vars(lhs, lhs_vars);
      collect_vars(rhs, rhs_vars);
      conv.set_line(line.number);
      src.lhs.push_back(conv.convert(lhs));
      src.rhs.push_back(conv.convert(rhs));
      // validate_rule would say "a bare variable matches everything", which hides where it came from.
      if (src.nodes[src.lhs.back()].op == OpKind::Var && !lhs.is_atom())
        throw SkipRule("line " + std::to_string(line.number) + ": the lhs " + show(lhs) +
                       " is a variable here (TASO's dropout is the identity at inference) and would match every term");
    }
    for (const std::string& v : rhs_vars)
      if (!lhs_vars.contains(v)) throw SkipRule("variable " + v + " is not bound by the lhs");
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
