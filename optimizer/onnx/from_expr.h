// model_from_expr: an OnnxModel for a graph that did not come from an ONNX file (the built-in benchmark
// models), so that export, --check and the report treat it like an imported one. Weights get seeded
// random values scaled by their fan-in (batchnorm-style 1-d weights stay in [0.5, 1.5], so variances are
// positive); inputs and outputs are declared as float tensors named after the leaves and "output<k>".
#pragma once

#include <cstdint>
#include <string>

#include "optimizer/onnx/model.h"

namespace teq::onnx_io {

/// Throws ShapeError if `graph` is ill-shaped. Uses opset 17.
OnnxModel model_from_expr(const Expr& graph, const std::string& name, uint64_t seed = 1);

}  // namespace teq::onnx_io
