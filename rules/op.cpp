#include "rules/op.h"

#include <array>

namespace teq {
namespace {

constexpr std::array kOps = {
#define TEQ_OP(kind, name, min_children, max_children, num_attrs) \
  OpInfo{OpKind::kind, name, min_children, max_children, num_attrs},
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

}  // namespace teq
