// An axiom template's pattern as a term (placeholder substitution): parsed once from the table's text, then
// instantiated node by node with the attributes a Pick gives its placeholders. No text is rewritten.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rules/expr.h"
#include "verify/axioms/placeholders.h"

namespace teq::axioms {

/// A ?variable, or an operator with its attributes (each an integer, or a placeholder letter that stands for
/// all of the attributes its value lists) and its operands.
struct TemplateTerm {
  OpKind op = OpKind::Var;
  std::string var;  // a variable's name, without '?'
  std::vector<std::variant<int64_t, char>> attrs;
  std::vector<TemplateTerm> children;
};

/// The term of a template pattern ("(concat {X} (relu ?x) ?y)"). Throws std::invalid_argument on text that
/// is not one.
TemplateTerm parse_template(std::string_view text);

/// The placeholder letters `t` uses, added to `out`.
void add_placeholders(const TemplateTerm& t, std::string& out);

/// The pattern `t` stands for under `pick`, each variable named in `nonneg` as (relu ?v). Nodes are added
/// children first, left to right, as parse_pattern adds them, so the Expr is the one the same pattern's text
/// parses to. Throws CorpusError when an operator gets a wrong number of attributes or operands.
Expr instantiate(const TemplateTerm& t, const Pick& pick, const std::vector<std::string>& nonneg = {});

}  // namespace teq::axioms
