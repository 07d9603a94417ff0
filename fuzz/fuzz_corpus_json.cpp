// Fuzzes the rule-corpus JSON loader: any input either loads (and then dumps and re-loads equal) or throws
// CorpusError.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rules/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  teq::RuleCorpus corpus;
  try {
    corpus = teq::parse_corpus(text, "fuzz");
  } catch (const teq::CorpusError&) {
    return 0;
  }
  std::string dumped = teq::dump_corpus(corpus);
  if (teq::dump_corpus(teq::parse_corpus(dumped, "fuzz-redump")) != dumped) std::abort();
  return 0;
}
