// Private to ONNX import: constant folding of integer shape arithmetic before the import maps nodes.
// Exporters such as PyTorch's write a shape as computation on the input's shape (Shape, Gather, Add, Div,
// Unsqueeze, Concat, ... feeding Reshape or Slice). ONNX shape inference cannot see through most of it, so the
// outputs of the Reshape/Slice would stay unknown. With fixed input shapes every such value is a constant:
// this pass evaluates it and replaces each folded node by a Constant node holding its value.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "rules/tensor.h"

namespace teq::onnx_io::detail {

/// A folded node: the node as it was (serialized NodeProto) and the value it was replaced by.
/// `varies` (empty: none does) marks the elements computed from a symbolic dimension: traced element by
/// element from the Shape/Size elements that change between the folded sizes and the probe's (see
/// fold_shape_arithmetic's `probe`). A comparison of such an element with a threshold can agree at two sizes
/// and differ at a third, so an element counts as varying by where it comes from, not by its two values.
struct FoldedValue {
  std::string original_node;
  Shape dims;
  std::vector<int64_t> values;
  std::vector<bool> varies;
  bool any_varies() const { return std::find(varies.begin(), varies.end(), true) != varies.end(); }
  bool operator==(const FoldedValue& o) const { return dims == o.dims && values == o.values; }
};
/// Folded nodes by output name.
using FoldRecord = std::map<std::string, FoldedValue>;

/// Repeats ONNX shape inference and a folding pass until nothing more folds. Folds a default-domain node
/// when its output is an INT64/INT32/BOOL tensor of at most kMaxFoldedElements values computed from constants
/// (Constant nodes, initializers that are not graph inputs, nodes folded before) and from the static shapes of
/// any tensor: Shape, Size, Identity, Cast (to integers or bool), Unsqueeze, Squeeze, Concat, Gather, Slice,
/// Range, Add, Sub, Mul, Div (truncating, as onnxruntime), Mod, Min, Max, Neg, Abs, Not, And, Or, Xor, Equal,
/// Less(OrEqual), Greater(OrEqual), Where, Expand, Reshape, ConstantOfShape (integer or bool fill), CumSum.
/// Float computation is never folded. Returns the number of nodes folded; `record` (optional) gets each
/// folded node as it was and its value. Leaves the graph's value_info empty (the importer re-infers shapes);
/// shape inference errors stop the pass quietly (the importer reports them). Shape inference is strict (it stops at
/// the first node whose shapes do not fit; libonnx 1.12 can crash when it carries on past one) when `strict` or
/// when every node is of the default domain.
/// `probe` (optional): the same model folded with its symbolic dimensions bound to other values. A Shape or
/// Size element that differs there (or a Shape/Size the probe did not fold) is a source of variation; each
/// folded value's `varies` follows it through element-wise operators (element by element, with broadcasting),
/// through data movement (Identity, Unsqueeze, Squeeze, Reshape, Expand, Concat, Gather, Slice: to the element
/// moved, provided the indices/shape/axes do not vary themselves) and through any other operator as a whole.
int fold_shape_arithmetic(onnx::ModelProto& model, FoldRecord* record = nullptr, bool strict = false,
                          const FoldRecord* probe = nullptr);

inline constexpr int64_t kMaxFoldedElements = 4096;

}  // namespace teq::onnx_io::detail
