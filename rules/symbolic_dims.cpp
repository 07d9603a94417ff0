#include "rules/symbolic_dims.h"

#include <limits>

#include "rules/shape_rules.h"

namespace teq {
namespace {

int64_t saturate(__int128 v) {
  constexpr __int128 lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v < lo ? lo : v > hi ? hi : v);
}

/// One operation on values: the arithmetic of evaluate, and of constant folding (the same by construction).
int64_t compute(SymOp op, int64_t a, int64_t b, int64_t c) {
  const __int128 x = a, y = b;
  switch (op) {
    case SymOp::Add: return saturate(x + y);
    case SymOp::Sub: return saturate(x - y);
    case SymOp::Mul: return saturate(x * y);
    case SymOp::Div: return b == 0 ? 0 : saturate(x / y);
    case SymOp::Mod: return b == 0 ? a : saturate(x % y);
    case SymOp::Select: return a != 0 ? b : c;
    case SymOp::Eq: return a == b;
    case SymOp::Lt: return a < b;
    case SymOp::Le: return a <= b;
    case SymOp::And: return a != 0 && b != 0;
    case SymOp::Or: return a != 0 || b != 0;
    case SymOp::Not: return a == 0;
    case SymOp::Const:
    case SymOp::Operand: break;
  }
  return 0;
}

}  // namespace

uint32_t SymbolicArena::add(const SymNode& n) {
  if (auto it = index_.find(n); it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(n);
  index_.emplace(n, id);
  return id;
}

uint32_t SymbolicArena::apply(SymOp op, uint32_t a, uint32_t b, uint32_t c) {
  const std::optional<int64_t> ka = constant_value(a), kb = constant_value(b);
  const bool unary = op == SymOp::Not, ternary = op == SymOp::Select;
  if (ka && (unary || (kb && (!ternary || constant_value(c))))) {
    return constant(compute(op, *ka, kb.value_or(0), ternary ? *constant_value(c) : 0));
  }
  auto is = [&](const std::optional<int64_t>& k, int64_t v) { return k && *k == v; };
  switch (op) {
    case SymOp::Add:
      if (is(kb, 0)) return a;
      if (is(ka, 0)) return b;
      break;
    case SymOp::Sub:
      if (is(kb, 0)) return a;
      if (a == b) return constant(0);
      break;
    case SymOp::Mul:
      if (is(kb, 1)) return a;
      if (is(ka, 1)) return b;
      break;
    case SymOp::Div:
      if (is(kb, 1)) return a;
      break;
    case SymOp::Select:
      if (ka) return *ka != 0 ? b : c;
      if (b == c) return b;
      break;
    case SymOp::Eq:
    case SymOp::Le:
      if (a == b) return constant(1);
      break;
    case SymOp::Lt:
      if (a == b) return constant(0);
      break;
    case SymOp::And:
      if (is(ka, 0) || is(kb, 0)) return constant(0);
      if (ka) return b;
      if (kb) return a;
      break;
    case SymOp::Or:
      if ((ka && *ka != 0) || (kb && *kb != 0)) return constant(1);
      if (ka) return b;
      if (kb) return a;
      break;
    case SymOp::Not:
      if (nodes_[a].op == SymOp::Not) return nodes_[a].a;
      break;
    default: break;
  }
  return add({.op = op, .a = a, .b = b, .c = c});
}

std::vector<SymDim> symbolic_operand(SymbolicArena& arena, size_t index, size_t rank) {
  std::vector<SymDim> dims;
  for (size_t k = 0; k < rank; ++k) dims.push_back({&arena, arena.operand(index, k)});
  return dims;
}

std::optional<SymbolicShape> symbolic_shape(SymbolicArena& arena, OpKind op, AttrSpan attrs,
                                            std::span<const std::vector<SymDim>> operands) {
  SymbolicDims p(arena);
  std::vector<SymDim> out = infer_shape_with(p, op, attrs, operands);
  if (p.failed) return std::nullopt;
  return SymbolicShape{std::move(out), std::move(p.conditions)};
}

std::optional<SymbolicShape> symbolic_shape(SymbolicArena& arena, OpKind op, AttrSpan attrs,
                                            std::span<const size_t> ranks) {
  std::vector<std::vector<SymDim>> operands;
  for (size_t j = 0; j < ranks.size(); ++j) operands.push_back(symbolic_operand(arena, j, ranks[j]));
  return symbolic_shape(arena, op, attrs, operands);
}

std::optional<size_t> symbolic_rank(OpKind op, AttrSpan attrs, std::span<const size_t> ranks) {
  SymbolicArena arena;
  const auto shape = symbolic_shape(arena, op, attrs, ranks);
  return shape ? std::optional(shape->dims.size()) : std::nullopt;
}

int64_t evaluate(const SymbolicArena& arena, uint32_t id, std::span<const Shape> operands) {
  const SymNode& n = arena[id];
  switch (n.op) {
    case SymOp::Const: return n.value;
    case SymOp::Operand: return operands[static_cast<size_t>(n.value)][n.axis];
    case SymOp::Select:
      return evaluate(arena, n.a, operands) != 0 ? evaluate(arena, n.b, operands) : evaluate(arena, n.c, operands);
    case SymOp::Not: return compute(n.op, evaluate(arena, n.a, operands), 0, 0);
    default: return compute(n.op, evaluate(arena, n.a, operands), evaluate(arena, n.b, operands), 0);
  }
}

}  // namespace teq
