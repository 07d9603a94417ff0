// The reduction family's ONNX forms (rules/ops/reduce.h): ReduceMean both ways (axes an attribute before
// opset 18, an input from it; the import sees opset 18's input as an attribute, detail/opset_adapt.h).
#include <algorithm>

#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/reduce.h"

namespace teq::onnx_io::detail {

namespace {

void import_reduce_mean(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  const Shape xs = im.shape(x);
  if (xs.empty()) throw NotInVocabulary{"0-d input"};
  std::vector<int64_t> axes;
  if (auto a = attr_ints(n, "axes")) {
    for (int64_t v : *a) axes.push_back(normalize_axis(v, xs.size(), "ReduceMean", {}));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw NotInVocabulary{"repeated axis"};
  }
  if (axes.empty())  // no axes: every axis
    for (size_t d = 0; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  std::vector<int64_t> attrs{attr_int(n, "keepdims", 1) != 0 ? 1 : 0};
  attrs.insert(attrs.end(), axes.begin(), axes.end());
  im.set_output(n, im.add(OpKind::ReduceMean, attrs, {x}));
}

constexpr ImportForm kImports[] = {
    {"ReduceMean", 1, kLatestOpset, import_reduce_mean},
};

std::string write_reduce_mean(Exporter& ex, ExprId id) {
  const ops::ReduceMeanAttrs r = ops::reduce_mean_attrs(ex.graph()[id].attrs);
  const std::vector<int64_t>& axes = r.axes;
  onnx::NodeProto* n = nullptr;
  // Opset 18 made axes an input.
  std::string y = ex.opset() >= 18
                      ? ex.finish("ReduceMean", {ex.operand(id, 0), ex.int_constant(axes)}, id, Activation::None, &n)
                      : ex.finish("ReduceMean", {ex.operand(id, 0)}, id, Activation::None, &n);
  if (ex.opset() < 18) add_attr(*n, "axes", axes);
  add_attr(*n, "keepdims", int64_t{r.keepdims});
  return y;
}

constexpr ExportForm kExports[] = {
    {OpKind::ReduceMean, write_reduce_mean},
};

}  // namespace

FamilyForms reduce_forms() { return {kImports, kExports, {}}; }

}  // namespace teq::onnx_io::detail
