// A consumer of the installed library: optimizes a bundled model of the installed corpus through
// optimize_model (what eqsat-run runs) and fails unless the numerical check ran and passed and the output
// file was written. Usage: consumer OUTPUT.onnx
#include <filesystem>
#include <iostream>

#include "optimizer/eqsat_app.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer OUTPUT.onnx\n";
    return 2;
  }
  const std::filesystem::path corpus = TEQ_CORPUS_DIR;
  teq::EqsatConfig config;
  config.model = corpus / "models" / "attention.onnx";
  config.output = argv[1];
  config.corpus_dir = corpus;
  config.check = teq::CheckMode::Required;
  try {
    const teq::EqsatResult result = teq::optimize_model(config);
    const bool checked = result.check && result.check->evaluated && result.check->passed;
    std::cout << "consumer: exit " << result.exit_code << ", written " << result.report_json.value("written", "?")
              << ", cost " << result.report.original_cost << " -> " << result.output.cost << ", check "
              << (checked ? "passed" : "did not pass") << "\n";
    if (result.exit_code != 0 || !checked || !std::filesystem::exists(config.output)) return 1;
  } catch (const teq::EqsatError& e) {
    std::cerr << "consumer: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
