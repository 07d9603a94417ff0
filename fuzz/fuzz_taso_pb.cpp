// Fuzzes the TASO graph_subst.pb importer on arbitrary bytes.
#include <cstdint>
#include <string>

#include "rules/import/taso_pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    teq::ImportResult r = teq::import_taso_pb_bytes(bytes, "fuzz");
    for (const teq::Rule& rule : r.corpus.rules) teq::validate_rule(rule);
  } catch (const teq::CorpusError&) {
  }
  return 0;
}
