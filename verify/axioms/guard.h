// A law's side condition on extents (AxiomTemplate::guard): parsed into comparisons, placeholders filled from
// a Pick, and stated to Z3 over an encoding's variables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <z3++.h>

#include "verify/axioms/placeholders.h"

namespace teq::axioms {

class Encoder;
struct Scope;

/// Extent `axis` of variable `var` (`?var.axis`); of a variable used only as a split's reference, its cut.
struct GuardExtent {
  std::string var;
  int64_t axis = 0;
};
using GuardOperand = std::variant<int64_t, GuardExtent>;
enum class GuardRelation { Equal, Less, LessEqual };
struct GuardComparison {
  GuardOperand lhs;
  GuardRelation relation = GuardRelation::Equal;
  GuardOperand rhs;
};
/// The conjunction of its comparisons; empty: no side condition.
using Guard = std::vector<GuardComparison>;

/// The guard that `text` states: conjuncts separated by ';', each `a = b`, `a < b` or `a <= b` over integers,
/// `?v.N` and `?v.{X}`, and a placeholder's value `{X}` or one of its values `{K}[i]`, taken from `pick`.
Guard parse_guard(std::string_view text, const Pick& pick = {});

/// The guard as a Z3 formula over the variables `scope` holds (those of the law `enc` encoded).
z3::expr encode_guard(const Guard& guard, Encoder& enc, const Scope& scope);

}  // namespace teq::axioms
