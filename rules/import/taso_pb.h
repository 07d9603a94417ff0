// Importer for TASO's rule file graph_subst.pb (protobuf RuleCollection, schema in taso_rules.proto).
// Each TASO rule is a source and a target operator list; its n mapped outputs become an n-pattern rule.
// Inputs are named as TASO's generator names them (x1..x3, w1..w13, i1..i3, s0), split cuts and the
// sizes of TASO's constants are derived from context (docs/importers.md).
// Usage:
//   ImportResult r = import_taso_pb("graph_subst.pb");   // ids "taso-0", "taso-1", ...
#pragma once

#include <filesystem>
#include <string>

#include "rules/import/import_result.h"

namespace teq {

/// Reads and converts a TASO graph_subst.pb. Rule ids are "taso-<index>" (0-based index in the file),
/// `source` is "<file name>#<index>". Throws CorpusError when the file cannot be read or is not a
/// RuleCollection; a rule that cannot be converted is reported in `skipped` with the reason.
ImportResult import_taso_pb(const std::filesystem::path& pb);

/// As import_taso_pb, from the file's bytes; `origin` names it in errors and `source` fields.
ImportResult import_taso_pb_bytes(const std::string& bytes, const std::string& origin);

/// TASO's generator input for opId -k (k >= 1): "x1".."x3", "w1".."w3", "i1".."i3", "w4".."w13", "s0";
/// "in<k>" beyond the 20 generator inputs.
std::string taso_input_name(int k);

}  // namespace teq
