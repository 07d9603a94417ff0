// Law and goal encoding: an axiom instance as quantified formulas guarded by its variables' ranks, its guard
// and its trigger side's well-shapedness; the rule as the negated goal with what is assumed of its shapes; and
// the check that a law's guard makes both sides' shape facts agree.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <z3++.h>

#include "verify/axioms/encoder.h"
#include "verify/axioms/guard.h"
#include "verify/axioms/instances.h"

namespace teq::axioms {

/// The law as quantified formulas, one per side that may trigger it (encode_law in laws.cpp); empty when no
/// side can be a trigger.
std::vector<z3::expr> encode_law(const Instance& inst, const InstanceVerdict& verdict, Encoder& enc, z3::context& ctx);

/// The negated rule and what is assumed of its shapes.
struct Goal {
  std::vector<z3::expr> equal;  // lhs[i] == rhs[i], one per output
  z3::expr lhs0;                // lhs[0], for the consistency check
  std::vector<z3::expr> facts;  // the rule's ranks, its splits well-shaped, the sides of equal shape
};

/// The rule holds where the optimizer applies it: every split of both sides well-shaped, the operands of
/// its element-wise operators and concats of matching shapes, and both sides of the same shape. Its variables
/// get the same kind of rank constraint as the axioms: the rank its well-shaped instances force, or at least
/// the lowest rank they allow. The proof then covers every shape of those ranks.
Goal encode_goal(const Rule& rule, std::span<const VarShapes> shapes, Encoder& enc);

/// Whether the law may be used from its side `from` (0: lhs, 1: rhs) as the trigger: whether its guards
/// (its own, its variables' ranks, its splits well-shaped) and the well-shapedness of the element-wise
/// operators and concats of that side imply, under the shape facts, that both sides have the same rank and
/// extents and that the other side's element-wise operators and concats are well-shaped too (so that the
/// terms the law creates are); "" if so, else what differs. From the rhs, concat-ewadd would make
/// `ewadd(a, b)` of a and b of different widths out of `ewadd(concat(a, c), concat(b, d))`.
std::string law_shape_disagreement(const Rule& law, const Guard& guard, std::span<const VarShapes> shapes,
                                   z3::context& ctx, int from);

}  // namespace teq::axioms
