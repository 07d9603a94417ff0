// Fuzzes the Tensat rule-text importer (single-rule and multi-pattern forms): it either converts or
// reports the rule as skipped / throws CorpusError; converted rules must be valid corpus rules.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rules/import/tensat_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool multi : {false, true}) {
    try {
      teq::ImportResult r = multi ? teq::import_tensat_rules("", text, "fuzz") : teq::import_tensat_rules(text, "", "fuzz");
      for (const teq::Rule& rule : r.corpus.rules) teq::validate_rule(rule);  // throws only on a bug
    } catch (const teq::CorpusError&) {
    }
  }
  return 0;
}
