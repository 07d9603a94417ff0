// OpKind and the static facts about each operator (name, arity, attribute count), generated from
// op_list.inc. Shapes and values live in rules/ops/ (semantics.h gathers them).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace teq {

enum class OpKind : uint8_t {
#define TEQ_OP(kind, name, min_children, max_children, num_attrs, work) kind,
#include "rules/op_list.inc"
#undef TEQ_OP
};

inline constexpr int kVariadic = -1;

/// What running an operator costs in a runtime: the one answer to "is this a view" for the cost models, the
/// exporter and the CUDA runtime (column `work` of op_list.inc).
enum class OpWorkKind : uint8_t {
  Leaf,      // var, input, weight: nothing runs
  View,      // aliases its first input: no kernel, no data moved (reshape, noop)
  Copy,      // a data-movement kernel (concat, split and slice, transpose, broadcast, enlarge)
  Constant,  // a constant written once from its reference's shape (ones, eye, iconv, pool_kernel)
  Compute,   // an arithmetic kernel
  Opaque,    // outside the vocabulary: priced as a copy of its operands and outputs
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int min_children;
  int max_children;  // kVariadic = any number >= min_children
  int num_attrs;     // kVariadic = any number
  OpWorkKind work;
  int optional_attrs = 0;  // trailing attributes written only together, after num_attrs (conv2d's dh dw)
};

/// Facts about one operator.
const OpInfo& op_info(OpKind kind);
/// The operator with this s-expression name, if any ("conv2d" -> Conv2d).
std::optional<OpKind> op_from_name(std::string_view name);
/// Every operator, in op_list.inc order.
std::span<const OpInfo> all_ops();

inline std::string_view op_name(OpKind kind) { return op_info(kind).name; }
/// Whether `n` integer attributes fit the operator: num_attrs, or num_attrs + optional_attrs.
bool attr_count_fits(const OpInfo& info, size_t n);
/// The counts attr_count_fits accepts, for messages: "5", "5 or 7".
std::string attr_count_text(const OpInfo& info);
/// Leaves: pattern variables, graph inputs and weights.
inline bool is_leaf(OpKind kind) {
  return kind == OpKind::Var || kind == OpKind::Input || kind == OpKind::Weight;
}

inline OpWorkKind op_work_kind(OpKind kind) { return op_info(kind).work; }
inline bool is_view(OpKind kind) { return op_work_kind(kind) == OpWorkKind::View; }
/// Constants shaped after a reference tensor (ones, eye, iconv, pool_kernel): known at load time.
inline bool is_constant_op(OpKind kind) { return op_work_kind(kind) == OpWorkKind::Constant; }

using AttrSpan = std::span<const int64_t>;

/// Fused activation codes, as TASO and Tensat number them.
enum class Activation : int64_t { None = 0, Sigmoid = 1, Relu = 2, Tanh = 3 };
/// The fused activation of a matmul or conv2d node; Activation::None for every other operator.
Activation fused_activation(OpKind kind, AttrSpan attrs);
/// The operator a fused activation stands for (Relu, Sigmoid, Tanh); nullopt for None.
std::optional<OpKind> activation_op(Activation act);

}  // namespace teq
