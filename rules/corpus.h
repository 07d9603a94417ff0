// Rules and the rule corpus JSON format (docs/corpus-format.md): load, validate, save.
//
//   { "format": "tensor-eqsat-rules", "version": 1, "generator": {...},
//     "rules": [ { "id": "matmul-assoc", "lhs": ["(matmul 0 ?a (matmul 0 ?b ?c))"],
//                  "rhs": ["(matmul 0 (matmul 0 ?a ?b) ?c)"], "verification": {...} } ] }
//
// A multi-pattern rule has several lhs and as many rhs patterns: the i-th matched e-class is merged
// with the i-th instantiated rhs. Every error names the file, the rule id and the field.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rules/expr.h"

namespace teq {

struct Verification {
  std::string status;  // "verified", "wrong", "unknown"
  std::string method;  // e.g. "z3-elementwise", "axioms"
  double ms = 0;
};

struct Rule {
  std::string id;
  std::vector<Expr> lhs;  // each holds one pattern (one root)
  std::vector<Expr> rhs;  // same count as lhs
  std::optional<Verification> verification;
  std::string source;     // provenance, e.g. "tensat converted.txt:12"; empty when unknown
  /// Shape conditions: each group names lhs variables (without '?') that must have equal shapes where the
  /// rule applies. The one condition a rule needs beyond its right side being well-shaped: batching two
  /// convolutions into one grouped convolution is right only when the batched inputs and kernels have equal
  /// shapes (Tensat's and TASO's grouped merges; docs/corpus-format.md). A rule with conditions is verified
  /// on grouped convolutions too, at the groupings conv_groupings lists.
  std::vector<std::vector<std::string>> same_shape;
  /// The rule's scope: the groupings of its convolutions on weights of free shape at which it is verified and
  /// applied, e.g. {"g|uu", "g|gg"} for a grouped merge (rules/rule_scope.h defines the text). Empty: the
  /// all-ungrouped grouping only. Rewriters apply the rule nowhere else; ruleverify proves each.
  std::vector<std::string> conv_groupings;

  bool is_multi() const { return lhs.size() > 1; }
  /// Variables of all lhs patterns, in first-occurrence order.
  std::vector<std::string> variables() const;
};

struct RuleCorpus {
  nlohmann::json generator = nlohmann::json::object();  // how the corpus was made (free-form)
  std::vector<Rule> rules;

  const Rule* find(std::string_view id) const;
};

class CorpusError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Checks one rule: equal, non-zero numbers of lhs and rhs patterns; each a single pattern over
/// ?variables only (no inputs or weights); no lhs that is a bare variable; every rhs variable bound
/// by the lhs. Throws CorpusError("rule '<id>': <field>: <problem>").
void validate_rule(const Rule& rule);

/// The rule right to left, for a rewriter that applies rules both ways (eqsat-run --both-ways): its patterns
/// swapped and its id with "~rev" appended. Only where the swap is itself a rule a rewriter can apply and
/// that adds no more than the rule did: one pattern a side, a right side that is not a bare variable (it
/// would match everything), and every left-side variable on the right (else the reversal cannot instantiate
/// them); nullopt otherwise. Equality is symmetric, so a verified rule's reversal holds in the same scope
/// (rules/rule_scope.h guards the convolutions of whichever side is written).
std::optional<Rule> reversed_rule(const Rule& rule);
/// Whether reversed_rule(rule) exists: the rule is usable right to left as well.
bool is_reversible(const Rule& rule);
/// Whether the rule's reversal would build an operator with one variable as two of its operands, a copy of a
/// tensor (`(conv2d 1 1 -1 -1 2 (concat 1 ?i1 ?i1) (concat 0 ?a1 ?a2)) => (conv2d 1 1 -1 -1 2 ?i1 (concat 0 ?a1
/// ?a2))` backwards makes a grouped convolution of a copied input out of every convolution of a merged kernel).
bool reversal_copies_an_operand(const Rule& rule);
/// Appends each rule's reversal (reversed_rule) after the rules, unless the corpus holds that rule already
/// (the same sides, in any id) or the reversal copies an operand (reversal_copies_an_operand: the copy costs
/// what the term it came from saved, and on SqueezeNet those of one grouped-convolution rule made the
/// extraction's ILP 18 times slower for the same result); returns how many were added.
size_t add_reversed_rules(RuleCorpus& corpus);

/// Builds a rule from pattern texts (parse + validate). Throws CorpusError naming id and field.
/// `same_shape` groups name variables with or without their '?'; `conv_groupings` as Rule::conv_groupings.
Rule make_rule(std::string id, const std::vector<std::string>& lhs, const std::vector<std::string>& rhs,
               const std::vector<std::vector<std::string>>& same_shape = {},
               const std::vector<std::string>& conv_groupings = {});

/// Parses corpus JSON; `origin` (a file name) prefixes error messages. Ids must be unique.
RuleCorpus parse_corpus(std::string_view json_text, const std::string& origin = "<corpus>");
RuleCorpus load_corpus(const std::filesystem::path& path);
std::string dump_corpus(const RuleCorpus& corpus);
void save_corpus(const RuleCorpus& corpus, const std::filesystem::path& path);

nlohmann::json rule_to_json(const Rule& rule);
/// One "lhs  =>  rhs" line per pattern pair, for messages that show a rule (ruleverify, rulegen derive).
std::vector<std::string> rule_lines(const Rule& rule);

}  // namespace teq
