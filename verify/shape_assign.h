// Shape search for rules: concrete shapes for a rule's ?variables under which every pattern of the rule
// is well-shaped, with small, distinct dimensions so that a confused axis shows. Used by the element-wise
// prover (verify/elementwise.h) and by rulegen to instantiate candidate patterns. Knows only how each
// operator constrains ranks (matmul >= 2, conv 4, smul's scalar 0, ...); dimensions are found by search,
// checked with the shared shape functions (rules/semantics.h infer_shape).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/corpus.h"
#include "rules/evaluator.h"

namespace teq {

/// Which convolutions the search may produce. A conv's group count comes from the shapes (C / w.dim(1)),
/// and many textbook conv rules (concat of convs on concatenated weights) hold only for ungrouped ones,
/// as TASO's issue #62 found; so by default every conv whose weight is a pattern variable is ungrouped
/// (convs on computed weights, e.g. (concat 0 ?w1 ?w2) or (pool_kernel ..), get the groups their operands
/// imply), and `Grouped` asks for groups >= 2 on those convs to test a rule on grouped convs.
enum class ConvGroups { Ungrouped, Any, Grouped };

struct ShapeSearchOptions {
  /// How many different assignments to return (different ranks where the patterns allow, different dims).
  int max_assignments = 3;
  /// Candidate dimensions in order of preference; 1 is tried last because a 1 hides broadcasting bugs.
  std::vector<int64_t> dims = {2, 3, 4, 5, 6, 7, 8, 9, 1};
  /// No variable and no intermediate tensor may have more elements (keeps Z3 terms small).
  int64_t max_elements = 600;
  /// Require lhs[i] and rhs[i] to have equal shapes (set false to look for a shape mismatch).
  bool equal_roots = true;
  ConvGroups conv_groups = ConvGroups::Ungrouped;
  /// An exact grouping to find (rules/rule_scope.h): per pattern passed to the search, one letter 'u' or 'g'
  /// for each of its scoped_convs(); empty strings, or an empty vector, leave convolutions to conv_groups.
  std::vector<std::string> pattern_groupings;
  /// Give each variable distinct sizes on its own axes wherever its domains allow (a 3x2 kernel, not 3x3):
  /// equal extents within one tensor make laws true that are not true in general (an explicit one-pixel
  /// padding is SAME padding on a 3x3 kernel, an enlarge to 3x3 is the identity there). rulegen's
  /// minimization derives at such shapes, so that it drops only rules that follow in general.
  bool distinct_within_variable = false;
  /// Upper bound on shape checks per rank configuration (each candidate tuple of a variable is one check):
  /// the budget that decides, the same on any machine.
  int64_t max_checks = 30'000;
  /// Wall-clock guard for the whole search (all assignments), in milliseconds: a last resort, reported
  /// through ShapeAssignments::stopped_by_clock, because what it cuts off depends on the machine.
  int64_t max_ms = 30'000;
};

struct ShapeAssignments {
  std::vector<VarShapes> assignments;  // distinct; empty when none was found
  std::string failure;                 // why none was found (rank conflict, budget, ...); empty on success
  bool stopped_by_clock = false;       // the max_ms guard cut the search short (the result depends on the machine)
};

/// Shapes for the variables of `patterns` (all share one variable namespace: a rule's lhs patterns
/// followed by its rhs patterns) such that try_infer_shapes succeeds on each pattern. With
/// `equal_roots`, pattern i and pattern i + n/2 must also have equal root shapes. Deterministic. Example:
///   std::vector<const Expr*> ps = {&lhs, &rhs};
///   auto r = find_shape_assignments(ps);  // (matmul 0 ?a ?b): {a:[2,3], b:[3,4]}, {a:[2,3,4], b:[2,4,5]}, ...
ShapeAssignments find_shape_assignments(std::span<const Expr* const> patterns, const ShapeSearchOptions& options = {});

/// The patterns of `rule` for the shape search: its lhs patterns, an `(ewadd ?a ?b)` for each pair of a shape
/// condition (Rule::same_shape: ewadd requires equal shapes), its rhs patterns, then the conditions again, so
/// that pattern i still pairs with pattern i + n/2 and every assignment found satisfies the conditions.
/// `storage` holds the condition patterns the result points to.
std::vector<const Expr*> rule_patterns(const Rule& rule, std::vector<Expr>& storage);

/// ShapeSearchOptions::pattern_groupings for rule_patterns(rule): the grouping `grouping` of the rule
/// (rules/rule_scope.h text, e.g. "g|uu") spread over its patterns, the condition patterns unconstrained.
std::vector<std::string> rule_pattern_groupings(const Rule& rule, std::string_view grouping);

}  // namespace teq
