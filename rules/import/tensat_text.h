// Importer for Tensat's rule text (converted.txt, converted_multi.txt, predefined_*.txt): one `lhs=>rhs`
// per line in egg s-expressions over ?input_N variables, in Tensat's whole operator language (its
// src/model.rs). Maps each operator onto ours (docs/importers.md, "Operator mapping / Tensat"): pad codes
// become SAME/explicit padding, pools take their activation as an operator around them, concat drops its
// ndim, enlarge states its kernel size, dropout is its operand, and split_0/split_1 of a split become our
// split whose cut is derived from the concat the tensor came from. merge, input and weight have no
// counterpart in a rule and are refused with their name and line.
// Usage:
//   ImportResult r = import_tensat_rules(read("converted.txt"), read("converted_multi.txt"), "tensat");
//   // r.corpus.rules: "tensat-1" .. "tensat-120", "tensat-multi-1" .. ; r.skipped: the rest, with reasons
#pragma once

#include <string>
#include <string_view>

#include "rules/import/import_result.h"

namespace teq {

/// Converts Tensat rules. `single_text` holds one rule per line (ids "tensat-<line>", 1-based);
/// `multi_text` holds multi-pattern rules as pairs of consecutive lines (ids "tensat-multi-<k>",
/// k = 1, 2, ...; an unpaired last line is reported as skipped). Either text may be empty. Blank lines
/// are ignored. `origin` names the source in each rule's `source` field ("<origin>:<line>"); when
/// both texts are given, the multi rules say "<origin>-multi:<line>". Never throws for bad rule
/// text: a rule that does not parse or convert is reported in `skipped` with the reason.
ImportResult import_tensat_rules(std::string_view single_text, std::string_view multi_text,
                                 const std::string& origin);

}  // namespace teq
