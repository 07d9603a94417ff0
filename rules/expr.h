// Expr: a term DAG over the operator vocabulary, stored egg-style as a vector of nodes whose children
// come earlier (a RecExpr). It is both a graph (inputs and weights as leaves, several roots allowed) and
// a pattern (?variables as leaves). Nodes are hash-consed, so equal subterms are stored once.
// Parsing and printing live in sexpr.h; shapes and values in evaluator.h.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "rules/id.h"
#include "rules/op.h"

namespace teq {

struct ExprTag;
using ExprId = Id<ExprTag>;

struct ExprNode {
  OpKind op = OpKind::Var;
  std::vector<int64_t> attrs;     // integer attributes; for input/weight leaves, the shape
  std::vector<ExprId> children;   // each child precedes this node in its Expr
  std::string name;               // variable name without '?', or input/weight name; empty otherwise

  friend bool operator==(const ExprNode&, const ExprNode&) = default;
};

struct ExprNodeHash {
  size_t operator()(const ExprNode& n) const noexcept;
};

class Expr {
 public:
  /// Adds a node (or finds the equal one already present) and returns its id.
  /// Precondition: every child id is already in this Expr.
  ExprId add(ExprNode node);
  /// Convenience: an operator node.
  ExprId add(OpKind op, std::vector<int64_t> attrs, std::vector<ExprId> children);
  ExprId add_var(std::string name);

  const ExprNode& operator[](ExprId id) const { return nodes_[id.value]; }
  size_t size() const { return nodes_.size(); }
  const std::vector<ExprNode>& nodes() const { return nodes_; }

  /// Outputs of a graph / the root of a pattern, in order.
  const std::vector<ExprId>& roots() const { return roots_; }
  void add_root(ExprId id) { roots_.push_back(id); }
  ExprId root() const { return roots_.at(0); }

  /// Copies the subterm at `id` of `other` into this Expr; returns its id here.
  ExprId import(const Expr& other, ExprId id);
  /// Names of the ?variables, in first-occurrence order.
  std::vector<std::string> variables() const;
  /// Number of operator (non-leaf) nodes.
  size_t num_ops() const;

  friend bool operator==(const Expr& a, const Expr& b) { return a.nodes_ == b.nodes_ && a.roots_ == b.roots_; }

 private:
  std::vector<ExprNode> nodes_;
  std::vector<ExprId> roots_;
  std::unordered_map<ExprNode, ExprId, ExprNodeHash> memo_;
};

/// Which nodes `root` reaches (itself included), indexed by ExprId up to `root`: children precede parents in an
/// Expr, so one backward pass decides.
std::vector<bool> reached_from(const Expr& expr, ExprId root);

}  // namespace teq
