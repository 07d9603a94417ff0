// Shape facts: each operator's shape rule (rules/symbolic_dims.h) as Z3 formulas over dim and rank, stated
// for every operator an encoding applies; the operands a shape rule requires to agree; a split's
// precondition.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include <z3++.h>

#include "rules/rank_signature.h"
#include "verify/axioms/encoder.h"

namespace teq::axioms {

/// Ranks up to which the shape facts are stated: a rule whose ranks the checked shapes leave open is proved
/// for every rank from the lowest they allow up to this one (rank_constraints, laws.h). The ranks the shape
/// search and the importers probe the shape rules at (rules/rank_signature.h): one bound, so the facts cover
/// every rank the search can pick.
inline constexpr size_t kMaxFactRank = RankSignature::kMaxProbedRank;

/// For every operator `enc` applied so far: forall operands (a split's cut too): for each tuple of operand
/// ranks its shape rule accepts, those ranks imply the result's rank and each of its dimensions, the rule's
/// terms over dim(operand, k). Stated for every application, also where the rule's checks on dimensions
/// fail: the laws and the goal assume well-shapedness where they need it.
z3::expr_vector shape_facts(Encoder& enc);

/// A split's precondition, its shape rule's (shape_split: the cut inside the axis) read off at the lowest
/// rank it accepts, with that rank as a lower bound on x's and the cut a dimension (>= 1).
z3::expr split_well_shaped(Encoder& enc, const z3::expr& x, const z3::expr& cut, int64_t axis, int64_t part);

/// Two operands that an operator's shape rule requires to agree (an element-wise operator's, a concat's):
/// equal ranks in every case it accepts, and equal extents at every axis but `except` (a concat's axis), the
/// same axes at every rank. Read off the rule's recorded conditions (x.k = y.k); the well-shapedness that the
/// shape facts do not state, since they are stated for ill-shaped applications too.
struct OperandAgreement {
  size_t a = 0, b = 0;
  std::set<int64_t> except;
};

/// The operand agreements of (operator, attributes, operand count), computed once per process; none for a
/// split, whose reference is encoded as its cut.
const std::vector<OperandAgreement>& operand_agreements(OpKind kind, AttrSpan attrs, size_t operands);

}  // namespace teq::axioms
