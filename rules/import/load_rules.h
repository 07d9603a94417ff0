// One entry point for every rule file the programs accept: our JSON corpus, Tensat's rule text and
// TASO's graph_subst.pb. The format is detected from the content (and the file name for Tensat's
// multi-pattern files), so `--rules` can name any of them.
// Usage:
//   ImportResult r = load_rules_file("corpus/rules.json");   // or converted.txt, graph_subst.pb
//   for (const ImportIssue& s : r.skipped) std::cerr << s.rule_id << ": " << s.reason << "\n";
#pragma once

#include <filesystem>
#include <string_view>

#include "rules/import/import_result.h"
#include "rules/import/taso_pb.h"
#include "rules/import/tensat_text.h"

namespace teq {

enum class RuleFileFormat { Auto, Json, TensatSingle, TensatMulti, TasoPb };

struct LoadRulesOptions {
  /// Auto: '{' first -> JSON; binary content or a .pb extension -> TASO protobuf; text with "=>" ->
  /// Tensat, multi-pattern (pairs of lines) when the file name contains "multi", single otherwise.
  RuleFileFormat format = RuleFileFormat::Auto;
};

/// The format Auto would pick for this file name and content; throws CorpusError when none fits.
RuleFileFormat detect_rule_format(const std::filesystem::path& path, std::string_view content);
std::string_view format_name(RuleFileFormat format);

/// Loads rules from any supported file. A JSON corpus is loaded as is (total = its rule count, nothing
/// skipped; invalid JSON rules throw, as load_corpus does). Throws CorpusError when the file cannot be
/// read or its format is not recognized; rules that cannot be converted are reported in `skipped`.
ImportResult load_rules_file(const std::filesystem::path& path, const LoadRulesOptions& options = {});

}  // namespace teq
