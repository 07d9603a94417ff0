// Private helpers shared by ONNX import and export: TensorProto <-> values, attribute lookup.
// Not part of the optimizer's interface (include only from optimizer/onnx/*.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "rules/float_types.h"
#include "rules/shape.h"

namespace teq::onnx_io::detail {

/// Dims of an initializer.
Shape tensor_dims(const onnx::TensorProto& t);
/// The floating-point element types the vocabulary's terms hold (issue 45): FLOAT, FLOAT16 and BFLOAT16. A
/// term's values are float in memory whatever its type; the type says how the file stores them.
bool is_term_float_type(int32_t type);
/// Bytes of one element of a term float type (4, or 2 for FLOAT16 and BFLOAT16).
int64_t float_type_bytes(int32_t type);
/// IEEE binary16 and bfloat16 bits to float and back: rules/float_types.h's, named here for the ONNX code.
using ::teq::bfloat_to_float;
using ::teq::float_to_bfloat;
using ::teq::float_to_half;
using ::teq::half_to_float;
using ::teq::half_to_float_table;
/// `values` as the little-endian bytes of a tensor of `type` (a term float type), as raw_data holds them.
std::string float_bytes(const std::vector<float>& values, int32_t type);
/// `bytes` (raw data of a term float type) decoded into `out` (of bytes.size() / float_type_bytes(type)).
void decode_float_bytes(const char* bytes, size_t size, int32_t type, float* out);
void decode_float_bytes(const char* bytes, size_t size, int32_t type, double* out);
/// Values of a FLOAT, FLOAT16 or BFLOAT16 tensor (raw_data, float_data or, for the 16-bit types, int32_data),
/// as float. Throws OnnxError for other types or external data.
std::vector<float> tensor_floats(const onnx::TensorProto& t);
/// Values of an INT64/INT32 tensor. Throws OnnxError for other types or external data.
std::vector<int64_t> tensor_ints(const onnx::TensorProto& t);
/// Numeric values of FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT32 or INT64 tensors as doubles; nullopt for others.
std::optional<std::vector<double>> tensor_numbers(const onnx::TensorProto& t);

/// A tensor of `type` (a term float type: FLOAT, FLOAT16 or BFLOAT16) holding `values`, rounded to the type.
onnx::TensorProto make_float_tensor(const std::string& name, const Shape& dims, const std::vector<float>& values,
                                    int32_t type = onnx::TensorProto::FLOAT);
onnx::TensorProto make_int_tensor(const std::string& name, const Shape& dims, const std::vector<int64_t>& values);

/// The attribute called `name`, or nullptr.
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback);
float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback);
std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback);
/// Integer list attribute, or nullopt when absent.
std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const std::string& name);

onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, int64_t v);
onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, float v);
onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, const std::string& v);

/// Version of the default domain ("" or "ai.onnx") in the model's opset imports; 0 when absent.
int64_t default_opset(const onnx::ModelProto& m);

/// The options of every ONNX shape inference the import runs: `strict` stops at node errors. Without data
/// propagation: libonnx 1.12's crashes (SIGSEGV) on graphs whose shapes do not fit at some size (a LLaMA
/// export bound past what it was optimized for, a sequence longer than a position table), and the import's
/// own folding (fold_shapes.h) computes the shape values it would have propagated.
/// Steps a row-major multi-index `idx` over `dims` (the last axis fastest); wraps to all zeros at the end.
inline void next_index(Shape& idx, const Shape& dims) {
  for (size_t k = idx.size(); k-- > 0;) {
    if (++idx[k] < dims[k]) break;
    idx[k] = 0;
  }
}

/// Output extent of a pooling window along one axis of extent `in` with explicit pads, as onnxruntime
/// computes it: floor (or, with `ceil_mode`, ceil) of the window positions, where a window larger than the
/// padded input gives 0, and with ceil_mode a last window that would start in the end padding is dropped.
/// `drop_window_in_end_pad` false: ONNX's shape inference, which counts that window.
inline int64_t pool_extent(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                           int64_t pad_end, bool ceil_mode, bool drop_window_in_end_pad = true) {
  const int64_t span = in + pad_begin + pad_end - ((kernel - 1) * dilation + 1);
  // Truncating division, as ONNX's inference (a negative span rounds toward 0).
  const int64_t positions = ceil_mode && span > 0 ? (span + stride - 1) / stride : span / stride;
  int64_t extent = std::max<int64_t>(0, positions + 1);
  if (drop_window_in_end_pad && ceil_mode && extent > 0 && (extent - 1) * stride >= in + pad_begin) --extent;
  return extent;
}

inline onnx::ShapeInferenceOptions inference_options(bool strict) { return onnx::ShapeInferenceOptions(false, strict ? 1 : 0, false); }

/// The tensors of the enclosing graphs that the subgraphs of `node` (If's branches, Loop's and Scan's bodies,
/// nested ones included) read by name, in order of first use: not defined inside them.
std::vector<std::string> outer_references(const onnx::NodeProto& node);
/// Renames every read of `from` inside the subgraphs of `node` (nested ones included) to `to`.
void rename_outer_reference(onnx::NodeProto& node, const std::string& from, const std::string& to);

}  // namespace teq::onnx_io::detail
