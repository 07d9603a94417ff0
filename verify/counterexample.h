// Verdicts and counterexamples of the verifier: the status of one rule and, for a wrong rule, concrete
// input tensors plus the first output element where the two sides differ, printable for a person and as
// JSON. Producing them is the provers' job (verify/elementwise.h); this header only holds and formats.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rules/evaluator.h"

namespace teq {

enum class VerifyStatus { Verified, Wrong, Unknown };
std::string_view status_name(VerifyStatus status);  // "verified", "wrong", "unknown"

struct Counterexample {
  VarShapes shapes;                                  // the shape assignment it lives in
  std::map<std::string, Tensor<double>> inputs;      // each variable's value (for replay in evaluate<double>)
  std::map<std::string, std::vector<std::string>> exact;  // the same values as exact numbers ("-1/2")
  size_t output = 0;                                 // which lhs/rhs pair differs
  std::vector<int64_t> index;                        // first differing element of that output
  std::string lhs_value, rhs_value;                  // its two values, exact where possible
  std::string source;                                // "z3 model" or "random probe"
  std::string note;                                  // e.g. "lhs shape [2,3] but rhs shape [3,2]"
};

/// Several lines: the shapes, each input tensor as nested brackets, the differing element.
std::string format_counterexample(const Counterexample& cex);
nlohmann::json counterexample_to_json(const Counterexample& cex);

/// "[[1, 2], [3, 4]]" for a 2x2 tensor of these element texts (row-major).
std::string format_nested(const Shape& shape, const std::vector<std::string>& elements);

}  // namespace teq
