#include "verify/axioms/guard.h"

#include <sstream>

#include "verify/axioms/encoder.h"

namespace teq::axioms {
namespace {

/// `{X}` (its one value) or `{K}[i]` (its value i), else nullopt.
std::optional<int64_t> placeholder_value(std::string_view text, const Pick& pick) {
  if (text.size() < 3 || text[0] != '{' || text[2] != '}') return std::nullopt;
  const std::vector<int64_t>& values = pick.at(text[1]);
  if (text.size() == 3) return values.at(0);
  return values.at(std::stoul(std::string(text.substr(4, text.size() - 5))));
}

GuardOperand parse_operand(std::string_view text, const Pick& pick) {
  if (std::optional<int64_t> v = placeholder_value(text, pick)) return *v;
  if (text.empty() || text[0] != '?') return static_cast<int64_t>(std::stoi(std::string(text)));
  const size_t dot = text.find('.');
  const std::string_view axis = text.substr(dot + 1);
  const std::optional<int64_t> from_pick = placeholder_value(axis, pick);
  return GuardExtent{std::string(text.substr(1, dot - 1)), from_pick ? *from_pick : std::stoll(std::string(axis))};
}

}  // namespace

Guard parse_guard(std::string_view text, const Pick& pick) {
  Guard out;
  std::istringstream conjuncts{std::string(text)};
  for (std::string conjunct; std::getline(conjuncts, conjunct, ';');) {
    std::istringstream in(conjunct);
    std::string a, rel, b;
    if (!(in >> a >> rel >> b)) continue;
    const GuardRelation r = rel == "=" ? GuardRelation::Equal
                            : rel == "<" ? GuardRelation::Less
                                         : GuardRelation::LessEqual;
    out.push_back({parse_operand(a, pick), r, parse_operand(b, pick)});
  }
  return out;
}

z3::expr encode_guard(const Guard& guard, Encoder& enc, const Scope& scope) {
  z3::context& ctx = enc.context();
  auto operand = [&](const GuardOperand& o) -> z3::expr {
    if (const int64_t* v = std::get_if<int64_t>(&o)) return ctx.int_val(static_cast<int>(*v));
    const GuardExtent& x = std::get<GuardExtent>(o);
    // A variable used only as a split's reference: its cut.
    if (auto it = scope.vars.find(x.var + "." + std::to_string(x.axis)); it != scope.vars.end()) return it->second;
    return enc.dim(scope.vars.at(x.var), x.axis);
  };
  z3::expr out = ctx.bool_val(true);
  for (const GuardComparison& c : guard) {
    const z3::expr x = operand(c.lhs), y = operand(c.rhs);
    out = out && (c.relation == GuardRelation::Equal ? x == y : c.relation == GuardRelation::Less ? x < y : x <= y);
  }
  return out;
}

}  // namespace teq::axioms
