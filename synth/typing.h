// Typing: gives a rule's ?variables concrete shapes drawn from the leaf types (vocabulary.h). A variable
// named after a leaf type ("?x2", "?k1") tries that type first; any variable gets the first type, in
// that order, under which every pattern of the rule is well-shaped.
// Fingerprint shapes only; proofs find their own shapes (verify/shape_assign.h via synth/prove.h).
#pragma once

#include <optional>
#include <vector>

#include "rules/corpus.h"
#include "rules/evaluator.h"
#include "synth/vocabulary.h"

namespace teq::synth {

/// Which of a leaf type's shapes to use.
struct ShapeChoice {
  enum Kind { SetA, SetB, SetC } kind = SetA;  // SetC: only for types that have shape_c
};

/// Leaf type of each variable (index into `types`), or nullopt when no assignment makes every
/// pattern of the rule well-shaped under all of `choices`.
std::optional<std::map<std::string, int>> assign_types(const Rule& rule, const std::vector<LeafType>& types,
                                                       const std::vector<ShapeChoice>& choices);

/// The variable shapes of a type assignment under one choice.
VarShapes shapes_of(const std::map<std::string, int>& typing, const std::vector<LeafType>& types, ShapeChoice choice);

}  // namespace teq::synth
