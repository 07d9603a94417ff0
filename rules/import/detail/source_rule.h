// SourceRule: a foreign rule (Tensat text, TASO protobuf) translated operator by operator into our
// vocabulary, with the two things those formats leave implicit still open: where a split cuts (TASO and
// Tensat tensors remember the concat they came from) and which tensor sizes a constant (ones, eye, iconv,
// pool_kernel). build_patterns() closes both from the surrounding term and yields our patterns.
// Internal to rules/import; the importers' public API is in tensat_text.h, taso_pb.h and load_rules.h.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "rules/expr.h"

namespace teq::import_detail {

/// Thrown while converting one rule; the importer reports that rule as skipped with this message.
class SkipRule : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One operator of a foreign rule. `attrs` is our attribute list (rules/op_list.inc), except:
///   split:              {axis, part}; build_patterns appends ref_axis and the `ref` operand
///   ones, eye:          {};           build_patterns adds the `like` operand
///   iconv, pool_kernel: {kh, kw};     likewise
struct SourceNode {
  OpKind op = OpKind::Var;
  std::vector<int64_t> attrs;
  std::vector<int> children;  // indices into SourceRule::nodes
  std::string var;            // variable name (without '?') when op == Var
  int rank_hint = -1;         // a rank the source format states (concat NUMDIM/ndim), -1 if none
};

struct SourceRule {
  std::vector<SourceNode> nodes;
  std::vector<int> lhs, rhs;             // pattern roots, pairwise
  std::map<std::string, int> var_ranks;  // ranks known up front (TASO's generator inputs)

  int add(SourceNode node);
  /// The node of variable `name` (one node per name, so all its uses share a rank).
  int var(const std::string& name);

 private:
  std::map<std::string, int> var_nodes_;
};

struct BuiltPatterns {
  std::vector<Expr> lhs, rhs;
};

/// Converts every root to a pattern (one Expr each). Split cuts and constant references are derived as
/// documented in docs/importers.md; when one cannot be derived, throws SkipRule with the reason.
BuiltPatterns build_patterns(const SourceRule& rule);

}  // namespace teq::import_detail
