#include "rules/work.h"

#include <array>
#include <stdexcept>
#include <string>

#include "rules/semantics.h"

namespace teq {

namespace {

/// op_list.inc's work column, at compile time.
constexpr std::array kWork{
#define TEQ_OP(kind, name, min_children, max_children, num_attrs, work) OpWorkKind::work,
#include "rules/op_list.inc"
#undef TEQ_OP
};

template <OpKind K>
double flops_of(AttrSpan attrs, std::span<const Shape> inputs, const Shape& output) {
  constexpr bool counted = requires(AttrSpan a, ops::Shapes in, const Shape& out) { ops::Semantics<K>::flops(a, in, out); };
  // A computing operator says what it computes; one that moves data or nothing does not.
  static_assert(counted == (kWork[static_cast<size_t>(K)] == OpWorkKind::Compute),
                "an operator defines Semantics<K>::flops exactly when its work in op_list.inc is Compute");
  if constexpr (counted) {
    return ops::Semantics<K>::flops(attrs, inputs, output);
  } else {
    return 0;
  }
}

template <OpKind K>
ops::WorkKey work_key_of(AttrSpan attrs, std::span<const Shape> inputs) {
  if constexpr (requires(AttrSpan a, ops::Shapes in) { ops::Semantics<K>::work_key(a, in); }) {
    return ops::Semantics<K>::work_key(attrs, inputs);
  } else {
    return {K, {attrs.begin(), attrs.end()}, {inputs.begin(), inputs.end()}};
  }
}

}  // namespace

ops::WorkKey work_key(OpKind op, AttrSpan attrs, std::span<const Shape> inputs) {
  switch (op) {
#define TEQ_OP(kind, ...) \
  case OpKind::kind: return work_key_of<OpKind::kind>(attrs, inputs);
#include "rules/op_list.inc"
#undef TEQ_OP
  }
  throw std::logic_error("work_key: no operator " + std::to_string(static_cast<int>(op)));
}

double op_flops(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output) {
  switch (op) {
#define TEQ_OP(kind, ...) \
  case OpKind::kind: return flops_of<OpKind::kind>(attrs, inputs, output);
#include "rules/op_list.inc"
#undef TEQ_OP
  }
  throw std::logic_error("op_flops: no operator " + std::to_string(static_cast<int>(op)));
}

}  // namespace teq
