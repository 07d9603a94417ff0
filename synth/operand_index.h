// Second-operand index: for a binary operator variant, which shapes may follow a given first operand's shape,
// without trying every pair (the enumerator's operand table was quadratic in its live shapes; at size 4
// they are tens of thousands). What must match is read off the operator's one shape rule (rules/ops, through
// the symbolic policy of rules/symbolic_dims.h), never restated per operator: for each pair of operand
// ranks the rule accepts, the recorded conditions "dimension i of operand 0 = dimension j of operand 1"
// (an element-wise operator's every axis, matmul's inner one, a concat's off-axis ones). Shapes are then
// grouped by their dimensions at those j, and a first operand looks up its dimensions at those i. The
// index only narrows: every shape it returns must still be checked with try_infer_shape (the enumerator's
// `fit`), and every shape that check accepts is returned (tests/synth/operand_index_test.cpp compares it
// with the brute-force pairs).
// Usage:
//   SecondOperandIndex index(variant, shapes, live);      // shapes: vector of (set A, set B); live: ids offered
//   std::vector<uint32_t> seconds;
//   index.candidates(shapes[s1], seconds);                // ascending ids, a superset of the fitting ones
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rules/shape.h"
#include "synth/vocabulary.h"

namespace teq::synth {

/// One shape of each fingerprint input set (an enumerated term has one in set A and one in set B).
struct ShapePair {
  Shape a, b;
};

/// The (axis of operand 0, axis of operand 1) pairs whose extents `v`'s shape rule requires to be equal on
/// operands of ranks r0 and r1 (top-level conjuncts of its recorded conditions), or nullopt when the rule
/// refuses these ranks outright.
std::optional<std::vector<std::pair<uint32_t, uint32_t>>> operand_equalities(const OpVariant& v, size_t r0,
                                                                              size_t r1);

class SecondOperandIndex {
 public:
  /// Indexes `offered` (ids into `shapes`, ascending) as second operands of `v` (a binary variant). `shapes`
  /// must outlive the index; it may grow meanwhile (the enumerator interns output shapes between lookups).
  SecondOperandIndex(const OpVariant& v, const std::vector<ShapePair>& shapes, std::span<const uint32_t> offered);

  /// Appends to `out` (cleared first) the offered ids that may follow `first` as v's second operand: those
  /// whose ranks the rule accepts with first's and whose dimensions agree where the rule requires equality.
  /// Ascending, each once.
  void candidates(const ShapePair& first, std::vector<uint32_t>& out);

 private:
  using Equalities = std::vector<std::pair<uint32_t, uint32_t>>;
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& k) const;
  };
  struct RankGroup {  // the offered shapes of one (rank in A, rank in B), ascending
    size_t ra = 0, rb = 0;
    std::vector<uint32_t> ids;
  };
  struct Table {  // one group keyed for one pair of first-operand ranks
    bool refused = false;
    Equalities eq_a, eq_b;
    std::unordered_map<std::vector<int64_t>, std::vector<uint32_t>, KeyHash> by_key;
  };
  Table& table(size_t ra0, size_t rb0, size_t group);

  const OpVariant& v_;
  const std::vector<ShapePair>* shapes_;
  std::vector<RankGroup> groups_;
  std::map<std::tuple<size_t, size_t, size_t>, Table> tables_;  // (first's rank A, rank B, group)
  std::vector<int64_t> key_;
};

}  // namespace teq::synth
