// The floating-point element types a term can have (issue 45): float32, float16 and bfloat16, in ONNX's
// TensorProto::DataType numbering (the one the e-graph's element types, the exporter and the files use), and
// the exact conversions between their bits and float. One definition for the whole project: the ONNX reader
// and writer store weights with them, `cast`'s meaning rounds with them, and --check rounds leaves with them.
#pragma once

#include <cstdint>

namespace teq {

inline constexpr int32_t kFloat32Type = 1;    // onnx::TensorProto::FLOAT
inline constexpr int32_t kFloat16Type = 10;   // onnx::TensorProto::FLOAT16
inline constexpr int32_t kBFloat16Type = 16;  // onnx::TensorProto::BFLOAT16

/// Whether `type` is one of the three.
constexpr bool is_float_term_type(int64_t type) {
  return type == kFloat32Type || type == kFloat16Type || type == kBFloat16Type;
}

/// IEEE binary16 and bfloat16 bits to float (exact: every such value is a float) and back (round to nearest
/// even; NaN stays NaN, a magnitude beyond the type's largest becomes infinity).
float half_to_float(uint16_t h);
float bfloat_to_float(uint16_t h);
uint16_t float_to_half(float f);
uint16_t float_to_bfloat(float f);
/// half_to_float of every 16-bit pattern, indexed by it: for loops over billions of elements.
const float* half_to_float_table();

/// What `x` becomes stored in `type` (one of the three) and read back: rounded to float32 first, as every value
/// of a float32 computation is, then to the 16-bit type.
double round_to_float_type(double x, int32_t type);

}  // namespace teq
