// EGraph: an egg-style e-graph over the operator vocabulary. Hash-consed e-nodes, a union-find over
// e-classes, deferred rebuilding (congruence is restored by rebuild(), once per saturation iteration),
// and an e-class analysis: the tensor shape (one per class) and whether the class depends only on weights
// and constants (precomputable at load time, so extraction charges it nothing). Matching is in pattern.h,
// the saturation loop in runner.h, extraction in extract*.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "rules/expr.h"
#include "rules/id.h"
#include "rules/shape.h"

namespace teq {

struct EClassTag;
struct ENodeTag;
struct RuleTag;
using ClassId = Id<EClassTag>;
using NodeId = Id<ENodeTag>;
/// Index of a rule in the rule list a Runner was given.
using RuleId = Id<RuleTag>;

/// An operator applied to e-classes. Input/weight leaves keep their name; their shape is in attrs
/// (as in ExprNode). Pattern variables never occur in an e-graph.
struct ENode {
  OpKind op = OpKind::Input;
  std::vector<int64_t> attrs;
  std::vector<ClassId> children;
  std::string name;

  friend bool operator==(const ENode&, const ENode&) = default;
};

struct ENodeHash {
  size_t operator()(const ENode& n) const noexcept;
};

/// The element type of a leaf (input, weight) or opaque node, by its operator, attributes and name, in ONNX's
/// TensorProto::DataType numbering (1 float32, 10 float16, 16 bfloat16; 0 unknown): how a caller that knows
/// its file's types gives them to the engine (issue 45). An operator's value has its first operand's type, a
/// cast's its target (ops::result_elem_type): the vocabulary is type-generic over the float types and rules
/// never change a type.
using LeafElemType = std::function<int32_t(OpKind op, std::span<const int64_t> attrs, const std::string& name)>;

/// The element type of each node of `graph` (indexed by ExprId) as the e-graph assigns it: leaves and opaque
/// nodes by `leaf_type` (0 when it is empty), operators their first operand's.
std::vector<int32_t> expr_elem_types(const Expr& graph, const LeafElemType& leaf_type);

/// What the e-graph knows about one e-class. `nodes` holds live, canonical e-nodes after rebuild().
struct EClass {
  std::vector<NodeId> nodes;
  std::vector<NodeId> parents;  // e-nodes that have this class as a child (may hold stale ids before rebuild)
  Shape shape;
  bool weight_only = false;  // value depends only on weights/constants
  int32_t elem_type = 0;     // LeafElemType's numbering; classes of different types never merge
};

class EGraph {
 public:
  /// Adds an e-node (children are canonicalized first) or finds the congruent one; returns its class.
  /// `origin` is the rule that creates it (kept only if the node is new; nullopt = the input graph).
  /// Throws ShapeError if the operator does not accept its children's shapes, std::invalid_argument for
  /// a pattern variable.
  ClassId add(ENode node, std::optional<RuleId> origin = std::nullopt);
  /// The class of an e-node congruent to `node`, if present (no insertion).
  std::optional<ClassId> lookup(ENode node) const;
  /// Adds every node of a graph; returns the class of each Expr node (indexed by ExprId).
  std::vector<ClassId> add_expr(const Expr& graph);

  /// The element types of the leaves and opaque nodes added from now on (default: 0, unknown, for all).
  void set_leaf_types(LeafElemType leaf_type) { leaf_type_ = std::move(leaf_type); }
  int32_t elem_type(ClassId id) const { return classes_[find(id).value].elem_type; }

  /// Canonical representative of a class.
  ClassId find(ClassId id) const;
  /// Unions two classes; returns false if they were already one. The congruence closure is repaired by
  /// the next rebuild(). Throws std::logic_error if the shapes or element types differ (an unsound rule or a
  /// shape bug).
  bool merge(ClassId a, ClassId b);
  /// Restores the invariants: canonical hash-cons, congruence closure, deduplicated class node lists,
  /// up-to-date analysis.
  void rebuild();
  bool is_clean() const { return pending_.empty() && analysis_pending_.empty(); }

  const ENode& node(NodeId id) const { return nodes_[id.value]; }
  /// Canonical class of an e-node.
  ClassId class_of(NodeId id) const { return find(node_class_[id.value]); }
  /// The rule that first created this e-node; nullopt for nodes of the input graph.
  std::optional<RuleId> origin(NodeId id) const { return origin_[id.value]; }
  bool is_live(NodeId id) const { return !dead_[id.value]; }

  /// Precondition: `id` is canonical (use find()).
  const EClass& eclass(ClassId id) const { return classes_[id.value]; }
  const Shape& shape(ClassId id) const { return classes_[find(id).value].shape; }
  bool is_weight_only(ClassId id) const { return classes_[find(id).value].weight_only; }
  /// True if the node's value is precomputable: a weight, a constant, or an operator on weight-only classes.
  bool is_precomputable(NodeId id) const;

  /// Canonical class ids (after rebuild(): exactly the live classes).
  std::vector<ClassId> class_ids() const;
  size_t num_nodes() const { return nodes_.size() - num_dead_; }  // live e-nodes
  size_t num_classes() const { return num_classes_; }            // live e-classes
  /// Upper bounds for arrays indexed by NodeId / ClassId.
  size_t node_slots() const { return nodes_.size(); }
  size_t class_slots() const { return classes_.size(); }
  /// Increases whenever a node is added or two classes merge; saturation = no change in an iteration.
  uint64_t version() const { return version_; }

 private:
  ENode canonical(ENode node) const;
  bool node_weight_only(const ENode& node) const;

  mutable std::vector<ClassId> parent_;  // union-find; find() compresses paths
  std::vector<EClass> classes_;          // indexed by ClassId; only canonical entries are meaningful
  std::vector<ENode> nodes_;             // indexed by NodeId
  std::vector<ClassId> node_class_;
  std::vector<std::optional<RuleId>> origin_;
  std::vector<bool> dead_;  // congruent duplicate of another node, dropped by rebuild()
  std::unordered_map<ENode, NodeId, ENodeHash> memo_;
  std::vector<NodeId> pending_;           // nodes whose children changed class
  std::vector<NodeId> analysis_pending_;  // nodes whose children may have become weight-only
  std::vector<ClassId> dirty_;            // classes whose node or parent lists need cleaning in rebuild()
  size_t num_classes_ = 0;
  size_t num_dead_ = 0;
  LeafElemType leaf_type_;
  uint64_t version_ = 0;
};

}  // namespace teq
