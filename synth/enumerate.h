// Enumerator: every term DAG of up to N operators over typed leaves, grown one operator at a time from
// the representatives of the fingerprint classes found at smaller sizes (Quartz, Ruler), bucketed by
// the fingerprints of two input sets (fingerprint.h). Its product is the list of equations
// "term == representative of its class": the candidate pairs. Turning them into rules, verifying and
// pruning them is done by candidates.h, prove.h and prune.h.
// Usage:
//   Enumeration e = enumerate_terms(make_vocabulary({"matmul"}, default_leaf_types(2)), {.max_ops = 2});
//   // e.equations holds matmul associativity: (matmul (matmul x1 w1) w2) == (matmul x1 (matmul w1 w2))
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rules/expr.h"
#include "synth/operand_index.h"
#include "synth/vocabulary.h"

namespace teq::synth {

inline constexpr int kMaxOps = 6;
inline constexpr uint32_t kLeafVariant = UINT32_MAX;

/// One e-node over class representatives: an operator variant applied to classes (or a leaf).
struct TermNode {
  uint32_t variant = kLeafVariant;  // index into Vocabulary::variants
  uint32_t child[2] = {0, 0};       // class ids; for a leaf, child[0] is the leaf index
  uint8_t arity = 0;
};

/// The operator nodes of a term's DAG as sorted class ids (a term's own node is not a class).
struct OpSet {
  std::array<uint32_t, kMaxOps> ids{};
  uint8_t size = 0;
  bool contains(uint32_t id) const;
};

/// A fingerprint class, identified by its representative (the first term found with this fingerprint).
struct EquivClass {
  TermNode rep;
  OpSet ops;          // includes the rep's own id unless it is a leaf
  uint32_t vars = 0;  // bitmask of the leaves it uses
  uint32_t shape = 0; // index into Enumeration::shapes
  uint8_t size = 0;   // operator count of the rep's DAG
  bool weight_only = false;  // built from weight leaves and constants only
  uint64_t op_names = 0;     // bitmask of the vocabulary's op_names the rep uses (OpVariant::name_index)
};

/// A candidate pair: `member` (a term of `size` operators) has the fingerprint of class `cls`.
struct Equation {
  TermNode member;
  OpSet child_ops;    // union of the children's operator nodes
  uint32_t vars = 0;
  uint32_t cls = 0;
  uint8_t size = 0;
};

struct EnumerateConfig {
  int max_ops = 3;
  int max_inputs = 4;     // distinct leaves in one term
  int threads = 1;
  uint64_t seed = 1;
  double time_limit_s = 0;  // 0 = none; on expiry the current level stops and `truncated` is set
  int shard_index = 0;      // the last level is split by output shape: equal terms share a shard
  int shard_count = 1;
  /// At most this many distinct (set A, set B) shapes (a count, so the result does not depend on the
  /// machine). Shapes are interned in a fixed order, so the cap drops the same operand pairs on every run:
  /// an application whose output would need a shape beyond it is not enumerated (counted in
  /// Enumeration::shapes_refused). 0 = no cap.
  uint64_t max_shapes = 0;
  /// Tries every pair of live shapes, instead of the second-operand index (operand_index.h) over the shapes
  /// expand() can use: the quadratic table the index replaced, kept for the tests that compare the two
  /// (same terms, classes and equations; more shapes interned, so other shape ids).
  bool brute_force_operands = false;
  std::function<void(const struct EnumerateProgress&)> on_progress = {};  // may be empty
};

struct EnumerateProgress {
  int level = 0;
  uint64_t terms = 0, classes = 0, candidates = 0;
  uint64_t shapes = 0, live_shapes = 0, operand_pairs = 0, shapes_refused = 0;
  double done = 0;  // share of the level's (variant, first operand) items expanded, 0..1
  double seconds = 0;        // since the enumeration began
  double level_seconds = 0;  // since this level began
};

struct LevelStats {
  int level = 0;
  uint64_t terms = 0;         // terms evaluated at this size
  uint64_t new_classes = 0;
  uint64_t candidates = 0;    // equations recorded
  uint64_t separated = 0;     // terms whose set-A fingerprint matched a class that set B told apart
  uint64_t live_shapes = 0;   // shapes of the representatives it grows from
  uint64_t operand_pairs = 0; // (variant, first shape, second shape) applications that fit
  double seconds = 0;
};

struct Enumeration {
  Vocabulary vocab;
  std::vector<std::string> leaf_names;  // "x1", "w2", ...
  std::vector<uint32_t> leaf_shape;     // shape id of each leaf
  std::vector<ShapePair> shapes;
  uint64_t shapes_refused = 0;          // applications not enumerated for EnumerateConfig::max_shapes
  std::vector<EquivClass> classes;      // leaves first (class id == leaf index)
  std::vector<Equation> equations;
  std::vector<std::pair<TermNode, uint32_t>> separated_examples;  // a few (term, class) pairs B told apart
  std::vector<LevelStats> levels;
  bool truncated = false;
  double seconds = 0;

  uint64_t total_terms() const;
  /// The pattern of a class's representative / of a term, leaves as ?variables named after the leaves.
  ExprId add_class(Expr& expr, uint32_t cls) const;
  ExprId add_term(Expr& expr, const TermNode& node) const;
  Expr class_pattern(uint32_t cls) const;
  Expr term_pattern(const TermNode& node) const;
};

/// Enumerates and fingerprints. Deterministic for a given vocabulary, config.seed, max_ops and
/// max_inputs, whatever the thread count; shards of one run partition its last level's equations.
Enumeration enumerate_terms(const Vocabulary& vocab, const EnumerateConfig& config);

}  // namespace teq::synth
