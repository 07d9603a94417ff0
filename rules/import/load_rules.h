// One entry point for every rule file the programs accept: our JSON corpus, Tensat's rule text and
// TASO's graph_subst.pb. The format is detected from the content (and the file name for Tensat's
// multi-pattern files), so `--rules` can name any of them.
// Usage:
//   ImportResult r = load_rules_file("corpus/rules.json");   // or converted.txt, graph_subst.pb
//   for (const ImportIssue& s : r.skipped) std::cerr << s.rule_id << ": " << s.reason << "\n";
//   RuleSet set = load_rule_set({"corpus/rules.json", "extra.txt"});  // several files used together: the
//                                                                    // one loader of eqsat-run, ruleverify, rulegen
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

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

/// One file of a rule set, as it was read: its own rule ids, what its importer skipped.
struct RuleFile {
  std::filesystem::path path;
  RuleFileFormat format = RuleFileFormat::Auto;  // the format detected (or given)
  ImportResult rules;
};

/// Where a rule of a RuleSet came from.
struct RuleOrigin {
  size_t file = 0;   // index into RuleSet::files
  size_t index = 0;  // index into that file's rules
};

/// Several rule files used together, in order: the rules of later files follow. Ids are unique across the
/// set (reports count applications and verdicts per id): an id an earlier file already has gets the file's
/// stem in front ("extra/rule-1"). `corpus.generator` is the first file's.
struct RuleSet {
  RuleCorpus corpus;
  std::vector<RuleOrigin> origin;  // one per rule of `corpus`
  std::vector<RuleFile> files;
  size_t skipped() const;          // rules the importers could not convert, over all files
};

/// Loads every file with load_rules_file (any format); throws CorpusError whose message starts with the path of
/// the file that cannot be read or parsed.
RuleSet load_rule_set(const std::vector<std::filesystem::path>& paths, const LoadRulesOptions& options = {});

}  // namespace teq
