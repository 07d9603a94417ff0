// The placeholders of the axiom templates and the values a rule gives them. A template writes an attribute
// it leaves open as a letter in braces: {X} {Y} an axis (of a concat or a split), {Q} a split's part, {A} a
// fused activation, {C} a convolution's window "sh sw ph pw", {K} a kernel size "kh kw" (enlarge, iconv,
// pool_kernel), {P} a pooling window "kh kw sh sw ph pw".
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "rules/corpus.h"

namespace teq::axioms {

/// The placeholder letters, in the order an instance's id names them ("split-concat-0[X=1]").
inline constexpr std::string_view kPlaceholders = "XYQCAKP";

/// One choice of values: a placeholder letter and the attributes it stands for.
using Pick = std::map<char, std::vector<int64_t>>;
/// Every value each placeholder takes.
using PlaceholderValues = std::map<char, std::set<std::vector<int64_t>>>;

/// The values the rule's own operators give the placeholders (the axioms only need those to talk about the
/// rule), read through each operator's named attribute accessors (rules/ops); {Y} takes {X}'s values.
PlaceholderValues placeholder_values(const Rule& rule);

}  // namespace teq::axioms
