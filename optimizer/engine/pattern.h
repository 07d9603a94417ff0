// Pattern: a rule side compiled for e-matching (a tree of operator nodes and variable slots), the
// backtracking e-matcher over e-classes indexed by operator, and instantiation of a right side with a
// well-shapedness check done before anything is added. Rule scheduling and multi-patterns are in runner.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "optimizer/engine/egraph.h"
#include "rules/expr.h"

namespace teq {

/// Variable name -> slot, shared by all patterns of one rule so that substitutions line up.
struct VarTable {
  std::vector<std::string> names;
  /// Slot of `name`, adding it if new.
  uint32_t slot(const std::string& name);
  std::optional<uint32_t> find(const std::string& name) const;
};

/// A substitution: the class bound to each variable slot (kUnbound if none).
inline constexpr uint32_t kUnbound = UINT32_MAX;
using Subst = std::vector<ClassId>;

struct PatternNode {
  OpKind op = OpKind::Var;
  std::vector<int64_t> attrs;
  std::vector<uint32_t> children;  // indices into Pattern::nodes (children precede parents)
  uint32_t var = kUnbound;         // slot, for op == Var
};

class Pattern {
 public:
  Pattern() = default;
  /// Compiles the pattern `expr` (one root; ?variables as leaves); variables get slots in `vars`.
  /// Throws std::invalid_argument for input/weight leaves.
  Pattern(const Expr& expr, VarTable& vars);

  const std::vector<PatternNode>& nodes() const { return nodes_; }
  uint32_t root() const { return static_cast<uint32_t>(nodes_.size() - 1); }
  OpKind root_op() const { return nodes_.back().op; }
  /// Variable slots used, in first-occurrence order.
  const std::vector<uint32_t>& var_slots() const { return var_slots_; }
  /// The pattern with variables numbered by first occurrence: equal keys = same pattern up to renaming.
  std::string canonical_key() const;
  /// Variable slots in the order canonical_key() numbers them (?0, ?1, ...).
  std::vector<uint32_t> canonical_vars() const;

 private:
  std::vector<PatternNode> nodes_;
  std::vector<uint32_t> var_slots_;
};

/// The e-classes containing at least one e-node of each operator; built once per iteration (after
/// rebuild) so that a pattern rooted at `matmul` visits only matmul classes.
class ClassIndex {
 public:
  explicit ClassIndex(const EGraph& egraph);
  const std::vector<ClassId>& classes_with(OpKind op) const { return by_op_[static_cast<size_t>(op)]; }

 private:
  std::vector<std::vector<ClassId>> by_op_;  // indexed by OpKind
};

struct Match {
  ClassId root;
  Subst subst;  // indexed by variable slot
};

/// All matches of `pattern` in a clean e-graph, at most `limit` (the search stops there).
/// `num_slots` is the size of the substitutions (the rule's VarTable size).
std::vector<Match> search(const EGraph& egraph, const ClassIndex& index, const Pattern& pattern, size_t num_slots,
                          size_t limit = SIZE_MAX);
/// Matches of `pattern` rooted at the one class `root` (for tests and single queries).
std::vector<Match> search_class(const EGraph& egraph, ClassId root, const Pattern& pattern, size_t num_slots);

/// Shape of every node of `pattern` under `subst` (variables take their class's shape); nullopt if any
/// operator rejects its operands' shapes, i.e. the instantiation would be ill-shaped.
std::optional<std::vector<Shape>> instantiated_shapes(const EGraph& egraph, const Pattern& pattern,
                                                      const Subst& subst);
/// The pattern's grouping (rules/rule_scope.h): 'u' or 'g' for each conv2d on a weight of free shape, in node
/// order, from the shapes of its nodes (instantiated_shapes). The same list as scoped_convs() of its Expr.
std::string pattern_grouping(const Pattern& pattern, const std::vector<Shape>& shapes);
/// Adds the instantiation of `pattern` under `subst`; returns the class of its root. Precondition:
/// instantiated_shapes() accepted it (otherwise ShapeError propagates after a partial insertion).
ClassId instantiate(EGraph& egraph, const Pattern& pattern, const Subst& subst, std::optional<RuleId> origin);

}  // namespace teq
