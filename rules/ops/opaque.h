// (opaque id output d0 .. dn args...): an imported operator outside the vocabulary. `id` indexes the
// importer's side table (op type, attributes), `output` selects one of its outputs, d0..dn is that
// output's shape. It is never rewritten and has no value in any instantiation (evaluating it throws).
#pragma once

#include "rules/ops/common.h"

namespace teq::ops {

Shape shape_opaque(AttrSpan attrs, Shapes in);
[[noreturn]] void throw_opaque_not_evaluable(AttrSpan attrs);

}  // namespace teq::ops
