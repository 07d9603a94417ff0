// The built-in benchmark models that TASO and Tensat evaluate (BERT, NasRNN, NasNet-A, ResNeXt-50,
// ResNet-50, Inception-v3, VGG-19, SqueezeNet), built at batch 1 from their published architectures with
// the sizes Tensat used. Each is an Expr graph: (input NAME dims) and (weight NAME dims) leaves, the
// model's outputs as roots. Differences from Tensat's graphs are listed in docs/benchmarks.md.
// Usage:
//   Expr g = build_builtin_model("resnet50");   // one root of shape [1,1000]
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/expr.h"

namespace teq {

/// The names build_builtin_model accepts, in the order reports list them.
std::vector<std::string> builtin_model_names();

/// Builds the named model. Throws std::invalid_argument listing the valid names for an unknown one.
Expr build_builtin_model(std::string_view name);

}  // namespace teq
