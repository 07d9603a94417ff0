// Numeric check of an optimization: evaluates the original and the optimized graph of an imported model
// on the same seeded random inputs with the reference evaluator (double precision) and compares their
// outputs. Weights come from the model's initializers; graph inputs get uniform values in [-1, 1].
// Usage:
//   CheckResult c = check_equivalent(model, report.optimized, {});
//   if (c.evaluated && !c.passed) ...   // c.max_abs_diff, c.max_rel_diff say by how much
#pragma once

#include <cstdint>
#include <string>

#include "optimizer/onnx/model.h"

namespace teq::onnx_io {

struct CheckOptions {
  uint64_t seed = 1;
  double rtol = 1e-5;  // |optimized - original| <= atol + rtol * |original|, element by element
  double atol = 1e-6;
};

struct CheckResult {
  bool evaluated = false;   // false: some operator cannot be evaluated (see reason); nothing compared
  std::string reason;       // why not evaluated
  bool passed = false;      // evaluated and every element within tolerance
  double max_abs_diff = 0;
  double max_rel_diff = 0;  // |diff| / max(|original|, atol)
  size_t elements = 0;      // output elements compared
  double seconds = 0;
};

/// Compares `optimized` (same leaves and roots as model.graph) against model.graph. Never throws for
/// opaque operators: it reports evaluated = false with the operator named in `reason`.
CheckResult check_equivalent(const OnnxModel& model, const Expr& optimized, const CheckOptions& options = {});

}  // namespace teq::onnx_io
