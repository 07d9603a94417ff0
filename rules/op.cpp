#include "rules/op.h"

#include <array>

namespace teq {
namespace {

constexpr std::array kOps = {
#define TEQ_OP(kind, name, min_children, max_children, num_attrs, work) \
  OpInfo{OpKind::kind, name, min_children, max_children, num_attrs, OpWorkKind::work},
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

Activation fused_activation(OpKind kind, AttrSpan attrs) {
  // The attribute positions of rules/ops/matmul.h and conv.h: (matmul act a b), (conv2d sh sw ph pw act x w).
  if (kind == OpKind::Matmul && attrs.size() >= 1) return static_cast<Activation>(attrs[0]);
  if (kind == OpKind::Conv2d && attrs.size() >= 5) return static_cast<Activation>(attrs[4]);
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
