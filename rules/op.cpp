#include "rules/op.h"

#include <array>

#include "rules/ops/conv.h"
#include "rules/ops/matmul.h"

namespace teq {
namespace {

// Trailing attributes an operator may leave out (together): conv2d's dilations dh dw (rules/ops/conv.h).
constexpr int optional_attrs(OpKind kind) { return kind == OpKind::Conv2d ? 2 : 0; }

constexpr std::array kOps = {
#define TEQ_OP(kind, name, min_children, max_children, num_attrs, work) \
  OpInfo{OpKind::kind, name, min_children, max_children, num_attrs, OpWorkKind::work, optional_attrs(OpKind::kind)},
#include "rules/op_list.inc"
#undef TEQ_OP
};

}  // namespace

const OpInfo& op_info(OpKind kind) { return kOps[static_cast<size_t>(kind)]; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (const OpInfo& info : kOps)
    if (info.name == name) return info.kind;
  return std::nullopt;
}

std::span<const OpInfo> all_ops() { return kOps; }

bool attr_count_fits(const OpInfo& info, size_t n) {
  const int count = static_cast<int>(n);
  return info.num_attrs == kVariadic || count == info.num_attrs ||
         (info.optional_attrs > 0 && count == info.num_attrs + info.optional_attrs);
}

std::string attr_count_text(const OpInfo& info) {
  std::string text = std::to_string(info.num_attrs);
  if (info.optional_attrs > 0) text += " or " + std::to_string(info.num_attrs + info.optional_attrs);
  return text;
}

Activation fused_activation(OpKind kind, AttrSpan attrs) {
  if (kind == OpKind::Matmul && attrs.size() >= 1) return ops::matmul_activation(attrs);
  if (kind == OpKind::Conv2d && attrs.size() >= 5) return ops::conv_attrs(attrs).act;
  return Activation::None;
}

std::optional<OpKind> activation_op(Activation act) {
  switch (act) {
    case Activation::Relu: return OpKind::Relu;
    case Activation::Sigmoid: return OpKind::Sigmoid;
    case Activation::Tanh: return OpKind::Tanh;
    case Activation::None: break;
  }
  return std::nullopt;
}

}  // namespace teq
