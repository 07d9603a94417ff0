// Rules that feed themselves: a rule whose left side matches its own right side with a variable bound to a
// larger term finds a new match in every iteration and grows the e-graph without bound. Example: the
// reversal of removing an enlarge, (conv2d .. ?i ?k) => (conv2d .. ?i (enlarge 3 3 ?k)), matches its own
// output with ?k := (enlarge 3 3 ?k), then (enlarge 3 3 (enlarge 3 3 ?k)), ... (the seed's conv-enlarge grew
// SqueezeNet's e-graph by 75 e-nodes an iteration until the iteration limit). Commutativity matches its own
// output too, but only by renaming variables, which adds nothing. The runner applies a rule that feeds
// itself one generation deep (optimizer/engine/runner.h).
#pragma once

#include <string>
#include <vector>

#include "rules/expr.h"

namespace teq {

/// A variable a rule binds to a larger term when its left side matches its own right side: `var`, and
/// the operator at the root of that term (enlarge, for the example above).
struct GrowingVar {
  std::string var;
  OpKind image_op = OpKind::Var;
};

/// For the single-pattern rule lhs => rhs: the variables bound to a non-variable term by the first match
/// of `lhs` at a subterm of `rhs` (its ?variables taken as opaque leaves) that binds any. Empty when the
/// rule does not feed itself, or only through renamings.
std::vector<GrowingVar> self_feeding_vars(const Expr& lhs, const Expr& rhs);

}  // namespace teq
