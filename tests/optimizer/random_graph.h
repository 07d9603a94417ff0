// What the random-graph property tests share: a builder that grows an Expr one operator at a time, keeping the
// shape of every node it made, and seeded random values for a graph's leaves.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rules/evaluator.h"
#include "rules/expr.h"
#include "rules/semantics.h"

namespace teq::test {

/// The bookkeeping of a random graph generator: leaves, operators that are well-shaped, their shapes.
class RandomGraphBuilder {
 protected:
  explicit RandomGraphBuilder(std::mt19937& rng) : rng_(rng) {}

  void reset() {
    g_ = Expr();
    pool_.clear();
    ops_.clear();
    leaves_ = 0;
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  /// A new input (or weight) leaf of `shape`.
  ExprId leaf(Shape shape, bool weight) {
    std::string name = (weight ? "w" : "x") + std::to_string(leaves_++);
    ExprId id = g_.add(ExprNode{weight ? OpKind::Weight : OpKind::Input, shape, {}, name});
    pool_.push_back({id, std::move(shape)});
    return id;
  }
  const Shape& shape_of(ExprId id) const {
    for (const auto& [e, s] : pool_)
      if (e == id) return s;
    throw std::logic_error("unknown node");
  }
  /// Adds the operator if it is well-shaped.
  std::optional<ExprId> add_op(OpKind op, std::vector<int64_t> attrs, std::vector<ExprId> children) {
    std::vector<Shape> in;
    for (ExprId c : children) in.push_back(shape_of(c));
    try {
      Shape out = infer_shape(op, attrs, in);
      ExprId id = g_.add(op, std::move(attrs), std::move(children));
      pool_.push_back({id, std::move(out)});
      ops_.push_back(id);
      return id;
    } catch (const ShapeError&) {
      return std::nullopt;
    }
  }

  std::mt19937& rng_;
  Expr g_;
  std::vector<std::pair<ExprId, Shape>> pool_;  // every node made, with its shape
  std::vector<ExprId> ops_;                     // the operators, in order
  int leaves_ = 0;
};

/// Values uniform in [-1, 1] for every input and weight of `g`.
inline std::map<std::string, Tensor<double>> random_leaves(const Expr& g, std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-1, 1);
  std::map<std::string, Tensor<double>> out;
  for (const ExprNode& n : g.nodes()) {
    if (n.op != OpKind::Input && n.op != OpKind::Weight) continue;
    Tensor<double> t(n.attrs, 0.0);
    for (double& v : t.data) v = value(rng);
    out.emplace(n.name, std::move(t));
  }
  return out;
}

}  // namespace teq::test
