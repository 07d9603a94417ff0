#include "rules/semantics.h"

#include "rules/shape_rules.h"

namespace teq {

Shape infer_shape(OpKind op, AttrSpan attrs, std::span<const Shape> in) {
  ThrowingDims p(in);
  return infer_shape_with(p, op, attrs, in);
}

std::optional<Shape> try_infer_shape(OpKind op, AttrSpan attrs, std::span<const Shape> in) {
  CheckingDims p;
  Shape out = infer_shape_with(p, op, attrs, in);
  if (p.failed) return std::nullopt;
  return out;
}

}  // namespace teq
