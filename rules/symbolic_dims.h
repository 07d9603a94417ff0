// The third dimension policy (rules/dims.h): dimensions as terms over the operands' dimensions, so that an
// operator's one shape rule (rules/shape_rules.h) also says, for operands of given ranks and the operator's
// attributes, what each output dimension is and what the rule requires of the operands' dimensions, without
// knowing them. Ranks and attributes stay concrete, as in every policy: a rule that refuses the ranks or the
// attributes alone refuses here too.
//
// Its users translate the terms, never an operator: the verifier's shape facts (verify/axioms/shape_facts.cpp: each term
// becomes a Z3 integer term over dim(t, k)), the shape search's dimension classes and rank signatures
// (verify/shape_assign.cpp) and the importers' rank solver (rules/import). tests/rules/shape_policy_test.cpp
// evaluates the terms at random concrete operands and compares with infer_shape for every operator.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/op.h"
#include "rules/shape.h"

namespace teq {

/// What a term node computes. Comparisons and the connectives are conditions (0 or 1 when evaluated).
enum class SymOp : uint8_t { Const, Operand, Add, Sub, Mul, Div, Mod, Select, Eq, Lt, Le, And, Or, Not };

/// One node of a term: a constant (`value`), dimension `axis` of operand `value` (Operand), or an operation
/// on earlier nodes `a`, `b` (and `c`: Select(a, b, c) is b if a else c).
struct SymNode {
  SymOp op = SymOp::Const;
  int64_t value = 0;
  uint32_t axis = 0;
  uint32_t a = 0, b = 0, c = 0;
  auto operator<=>(const SymNode&) const = default;
};

/// Hash-consed term nodes, with constant folding and the identities that keep terms small (x + 0, x * 1,
/// x / 1, a selection on a constant, x = x). A term is its node's index.
class SymbolicArena {
 public:
  uint32_t constant(int64_t v) { return add({.op = SymOp::Const, .value = v}); }
  uint32_t operand(size_t index, size_t axis) {
    return add({.op = SymOp::Operand, .value = static_cast<int64_t>(index), .axis = static_cast<uint32_t>(axis)});
  }
  uint32_t apply(SymOp op, uint32_t a, uint32_t b = 0, uint32_t c = 0);
  const SymNode& operator[](uint32_t id) const { return nodes_[id]; }
  std::optional<int64_t> constant_value(uint32_t id) const {
    return nodes_[id].op == SymOp::Const ? std::optional(nodes_[id].value) : std::nullopt;
  }
  size_t size() const { return nodes_.size(); }

 private:
  uint32_t add(const SymNode& n);
  std::vector<SymNode> nodes_;
  std::map<SymNode, uint32_t> index_;
};

/// A dimension term (SymDim) and a condition term (SymCond) of one arena, with the operators the shape
/// rules use. Conditions are not bools: a rule's check on dimensions becomes a recorded condition.
struct SymCond {
  SymbolicArena* arena = nullptr;
  uint32_t id = 0;
};
struct SymDim {
  SymbolicArena* arena = nullptr;
  uint32_t id = 0;
};

inline SymDim sym_apply(SymOp op, const SymDim& a, const SymDim& b) { return {a.arena, a.arena->apply(op, a.id, b.id)}; }
inline SymCond sym_compare(SymOp op, const SymDim& a, const SymDim& b) { return {a.arena, a.arena->apply(op, a.id, b.id)}; }
inline SymDim operator+(const SymDim& a, const SymDim& b) { return sym_apply(SymOp::Add, a, b); }
inline SymDim operator-(const SymDim& a, const SymDim& b) { return sym_apply(SymOp::Sub, a, b); }
inline SymDim operator*(const SymDim& a, const SymDim& b) { return sym_apply(SymOp::Mul, a, b); }
inline SymDim operator/(const SymDim& a, const SymDim& b) { return sym_apply(SymOp::Div, a, b); }
inline SymDim operator%(const SymDim& a, const SymDim& b) { return sym_apply(SymOp::Mod, a, b); }
inline SymCond operator==(const SymDim& a, const SymDim& b) { return sym_compare(SymOp::Eq, a, b); }
inline SymCond operator<(const SymDim& a, const SymDim& b) { return sym_compare(SymOp::Lt, a, b); }
inline SymCond operator<=(const SymDim& a, const SymDim& b) { return sym_compare(SymOp::Le, a, b); }
inline SymCond operator>(const SymDim& a, const SymDim& b) { return b < a; }
inline SymCond operator>=(const SymDim& a, const SymDim& b) { return b <= a; }
inline SymCond operator!(const SymCond& a) { return {a.arena, a.arena->apply(SymOp::Not, a.id)}; }
inline SymCond operator!=(const SymDim& a, const SymDim& b) { return !(a == b); }
inline SymCond operator&&(const SymCond& a, const SymCond& b) { return {a.arena, a.arena->apply(SymOp::And, a.id, b.id)}; }
inline SymCond operator||(const SymCond& a, const SymCond& b) { return {a.arena, a.arena->apply(SymOp::Or, a.id, b.id)}; }

/// The symbolic policy: checks on ranks and attributes decide (a failure stops the rule, `failed`); checks
/// on dimensions are recorded in `conditions` (one that folds to false stops the rule like a failed check).
struct SymbolicDims {
  using Dim = SymDim;
  using Cond = SymCond;
  using Shape = std::vector<SymDim>;
  using Shapes = std::span<const Shape>;

  SymbolicArena* arena;
  bool failed = false;
  std::vector<SymCond> conditions;

  explicit SymbolicDims(SymbolicArena& a) : arena(&a) {}
  SymDim k(int64_t v) const { return {arena, arena->constant(v)}; }
  SymDim select(const SymCond& c, const SymDim& a, const SymDim& b) const {
    return {arena, arena->apply(SymOp::Select, c.id, a.id, b.id)};
  }
  SymDim product(std::span<const SymDim> s) const {
    SymDim out = k(1);
    for (const SymDim& d : s) out = out * d;
    return out;
  }
  static std::string text(const SymDim&) { return "?"; }

  template <class F>
  bool require(bool ok, std::string_view, F&&) {
    if (!ok) failed = true;
    return ok;
  }
  template <class F>
  bool require(const SymCond& c, std::string_view, F&&) {
    if (const auto v = arena->constant_value(c.id)) return require(*v != 0, {}, 0);
    conditions.push_back(c);
    return true;
  }
};

/// An operator's output shape over its operands' dimensions, and what its shape rule requires of them.
struct SymbolicShape {
  std::vector<SymDim> dims;
  std::vector<SymCond> conditions;
};

/// Operand `index`'s dimensions as Operand terms, for a given rank.
std::vector<SymDim> symbolic_operand(SymbolicArena& arena, size_t index, size_t rank);

/// `op`'s shape rule on operands given as terms; nullopt when its ranks or attributes alone refuse them.
std::optional<SymbolicShape> symbolic_shape(SymbolicArena& arena, OpKind op, AttrSpan attrs,
                                            std::span<const std::vector<SymDim>> operands);
/// The same on operands of these ranks, their dimensions Operand terms.
std::optional<SymbolicShape> symbolic_shape(SymbolicArena& arena, OpKind op, AttrSpan attrs,
                                            std::span<const size_t> ranks);

/// The rank of `op`'s output on operands of these ranks, or nullopt where the ranks or attributes alone
/// refuse them (dimensions are not looked at: a rank signature, for rank solvers).
std::optional<size_t> symbolic_rank(OpKind op, AttrSpan attrs, std::span<const size_t> ranks);

/// The value of term `id` on concrete operands (conditions: 1 or 0). Division by 0 gives 0 and x mod 0 is
/// x, the arithmetic saturates at the int64 range: a condition that guards a division is evaluated too.
int64_t evaluate(const SymbolicArena& arena, uint32_t id, std::span<const Shape> operands);

}  // namespace teq
