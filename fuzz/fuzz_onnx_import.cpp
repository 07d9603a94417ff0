// Fuzzes the ONNX importer (protobuf parsing, ONNX shape inference, the operator mapping) and, for what
// imports, the exporter: bad bytes must give OnnxError, never a crash.
#include <cstdint>
#include <string_view>

#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/shape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    teq::onnx_io::OnnxModel model = teq::onnx_io::import_onnx_bytes(bytes, "fuzz");
    if (model.graph.size() > 10'000) return 0;  // keep each run fast
    teq::onnx_io::export_onnx_bytes(model, model.graph);
  } catch (const teq::onnx_io::OnnxError&) {
  } catch (const teq::ShapeError&) {
  }
  return 0;
}
