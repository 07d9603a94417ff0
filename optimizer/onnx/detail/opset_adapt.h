// Private to ONNX import: models of opsets 18 to 21 seen through the ONNX library's opset-17 schemas.
// Debian's libonnx (1.12) has schemas up to opset 17 only, and its checker and shape inference are what the
// importer relies on. Most operators did not change after 17, or only gained element types; the few whose
// signature changed are rewritten, in memory, to their opset-17 form of the same meaning (ReduceMean's axes
// input back to an attribute, say). Operators new after 17 that import meaningfully (Gelu, and
// shape-preserving ones kept opaque) get an opset-17 stand-in that only carries their shapes through
// inference. The original node is kept for export, so what the exported model holds is valid at the
// original opset. Anything else is refused with a message naming the node, never imported with another
// meaning.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "rules/op.h"

namespace teq::onnx_io::detail {

/// The newest opset whose schemas the linked ONNX library has; adapt_to_library_opset targets it.
inline constexpr int64_t kLibraryOpset = 17;

/// A node that adapt_to_library_opset rewrote.
struct AdaptedNode {
  std::string original;  // serialized onnx::NodeProto as in the model: what an opaque node exports
  /// The working node is a stand-in for shape inference only; import must not map it to the vocabulary
  /// by its stand-in op_type. `gelu` is the vocabulary's operator a Gelu is (`gelu` for the exact erf form,
  /// `gelu_tanh` for approximate='tanh'); empty for any other node.
  bool stand_in = false;
  std::optional<OpKind> gelu;
};

/// Rewrites every default-domain node of `model` (opset 18 to 21) to its opset-17 form and sets the
/// default-domain opset import to kLibraryOpset. Returns the rewritten nodes, keyed by their first output.
/// Throws OnnxError("<origin>: node '...' (Op): ...") for a node that has no opset-17 form of the same
/// meaning (an operator new after 17 other than Gelu and the shape-preserving Mish and
/// GroupNormalization, a non-constant Reduce axes input, AveragePool dilations other than 1, ...).
std::unordered_map<std::string, AdaptedNode> adapt_to_library_opset(onnx::ModelProto& model, const std::string& origin);

}  // namespace teq::onnx_io::detail
