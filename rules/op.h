// OpKind and the static facts about each operator (name, arity, attribute count), generated from
// op_list.inc. Shapes live in shape_inference.h, values in semantics.h.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace teq {

enum class OpKind : uint8_t {
#define TEQ_OP(kind, name, min_children, max_children, num_attrs) kind,
#include "rules/op_list.inc"
#undef TEQ_OP
};

inline constexpr int kVariadic = -1;

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int min_children;
  int max_children;  // kVariadic = any number >= min_children
  int num_attrs;     // kVariadic = any number
};

/// Facts about one operator.
const OpInfo& op_info(OpKind kind);
/// The operator with this s-expression name, if any ("conv2d" -> Conv2d).
std::optional<OpKind> op_from_name(std::string_view name);
/// Every operator, in op_list.inc order.
std::span<const OpInfo> all_ops();

inline std::string_view op_name(OpKind kind) { return op_info(kind).name; }
/// Leaves: pattern variables, graph inputs and weights.
inline bool is_leaf(OpKind kind) {
  return kind == OpKind::Var || kind == OpKind::Input || kind == OpKind::Weight;
}

using AttrSpan = std::span<const int64_t>;

/// Fused activation codes, as TASO and Tensat number them.
enum class Activation : int64_t { None = 0, Sigmoid = 1, Relu = 2, Tanh = 3 };

}  // namespace teq
