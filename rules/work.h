// What running an operator computes, read off its definition (ops::Semantics<K>::flops, rules/ops/): the one
// flop count every cost model uses (the engine's flops model, the analytical device model). Whether an
// operator computes, copies, aliases or writes a constant is op_list.inc's `work` column (op_work_kind).
#pragma once

#include <span>

#include "rules/op.h"
#include "rules/ops/common.h"
#include "rules/shape.h"

namespace teq {

/// What one run of `op` depends on (ops::WorkKey): its attributes and operand shapes with a negative axis
/// made non-negative, a split as the slice it selects, a constant generator's reference cut to the
/// dimensions it reads and noop's extra operands dropped, each operator's Semantics<K>::work_key; the rest
/// as written. Nodes with equal keys do the same work: the measured cost database keys its times by it.
ops::WorkKey work_key(OpKind op, AttrSpan attrs, std::span<const Shape> inputs);

/// Multiply-adds of one run of `op` (one operation per element for element-wise work and reductions), 0
/// for operators that only move data, alias, write constants, or are leaves or opaque.
double op_flops(OpKind op, AttrSpan attrs, std::span<const Shape> inputs, const Shape& output);

}  // namespace teq
