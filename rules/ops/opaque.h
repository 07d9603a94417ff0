// (opaque id output d0 .. dn args...): an imported operator outside the vocabulary. `id` indexes the
// importer's side table (op type, attributes), `output` selects one of its outputs, d0..dn is that
// output's shape. It is never rewritten and has no value in any instantiation (evaluating it throws).
#pragma once

#include "rules/ops/common.h"

namespace teq::ops {

// The shape rule: rules/ops/detail/opaque_shape.h.

/// Which side-table entry and which of its outputs an opaque node is.
struct OpaqueAttrs {
  int64_t id, output;
};
inline OpaqueAttrs opaque_attrs(AttrSpan a) { return {a[0], a[1]}; }
/// Renumbers an opaque node's side-table entry (when a graph is compacted).
inline void set_opaque_id(std::vector<int64_t>& attrs, int64_t id) { attrs[0] = id; }
[[noreturn]] void throw_opaque_not_evaluable(AttrSpan attrs);

/// Its meaning (Semantics, rules/ops/common.h): none.
template <>
struct Semantics<OpKind::Opaque> {
  template <class S>
  static Tensor<S> eval(const Arith<S>&, AttrSpan attrs, Args<S>, const Shape&) {
    throw_opaque_not_evaluable(attrs);
  }
};

}  // namespace teq::ops
