// The pooling family's ONNX forms (rules/ops/pool.h): MaxPool, AveragePool (a zero Pad before it as its own
// padding) and GlobalAveragePool, both ways.
#include <algorithm>

#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/forms/window.h"
#include "rules/ops/pool.h"

namespace teq::onnx_io::detail {

namespace {

// ---- import ------------------------------------------------------------------------------------------

void import_pool(Importer& im, const onnx::NodeProto& n) {
  const bool average = n.op_type() == "AveragePool";
  im.require_single_output(n);
  ExprId x = im.in(n, 0);
  const Shape& xs = im.shape(x);
  auto kernel = attr_ints(n, "kernel_shape");
  if (xs.size() != 4 || !kernel || kernel->size() != 2) throw NotInVocabulary{"not a 2-d pooling"};
  if (attr_int(n, "storage_order", 0) != 0) throw NotInVocabulary{"storage_order"};
  int64_t include_pad = attr_int(n, "count_include_pad", 0) != 0 ? 1 : 0;
  std::optional<std::array<int64_t, 6>> w;
  if (average) {
    // A zero Pad of the spatial axes before it (PyTorch's avg_pool2d(padding=p) with count_include_pad)
    // is the pooling's own padding counted in the divisor: every window then holds kh*kw elements,
    // real or padded, so it divides by kh*kw. That needs the pooling's own pads to be counted as well
    // (count_include_pad=1) or absent.
    auto own = attr_ints(n, "pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
    const bool no_own = std::all_of(own.begin(), own.end(), [](int64_t p) { return p == 0; });
    if (auto f = foldable_pad(im, x); f && (include_pad || no_own)) {
      try {
        w = window_attrs(n, im.shape(f->x), (*kernel)[0], (*kernel)[1], /*dilation_allowed=*/false, f->pads);
        x = f->x;
        include_pad = 1;
      } catch (const NotInVocabulary&) {
        // not expressible as our symmetric or SAME padding: the Pad stays a node of its own
      }
    }
  }
  if (!w) w = window_attrs(n, xs, (*kernel)[0], (*kernel)[1]);
  std::vector<int64_t> attrs{(*kernel)[0], (*kernel)[1], (*w)[0], (*w)[1], (*w)[2], (*w)[3]};
  if (average) attrs.push_back(include_pad);
  im.set_output(n, im.add(average ? OpKind::AvgPool : OpKind::MaxPool, attrs, {x}));
}

void import_global_avgpool(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  if (im.shape(x).size() != 4) throw NotInVocabulary{"not 2-d"};
  im.set_output(n, im.add(OpKind::GlobalAvgPool, {}, {x}));
}

constexpr ImportForm kImports[] = {
    {"MaxPool", 1, kLatestOpset, import_pool},
    {"AveragePool", 1, kLatestOpset, import_pool},
    {"GlobalAveragePool", 1, kLatestOpset, import_global_avgpool},
};

// ---- export ------------------------------------------------------------------------------------------

std::string write_pool(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  const Shape& x = ex.shape(node.children[0]);
  const ops::PoolAttrs p = ops::pool_attrs(node.attrs);
  auto [hb, he] = onnx_pads(x[2], p.kh, p.sh, p.ph);
  auto [wb, we] = onnx_pads(x[3], p.kw, p.sw, p.pw);
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish(node.op == OpKind::MaxPool ? "MaxPool" : "AveragePool", {ex.operand(id, 0)}, id,
                            Activation::None, &n);
  add_attr(*n, "kernel_shape", std::vector<int64_t>{p.kh, p.kw});
  add_attr(*n, "strides", std::vector<int64_t>{p.sh, p.sw});
  add_attr(*n, "pads", std::vector<int64_t>{hb, wb, he, we});
  if (node.op == OpKind::AvgPool) add_attr(*n, "count_include_pad", int64_t{p.include_pad});
  return y;
}

constexpr ExportForm kExports[] = {
    {OpKind::MaxPool, write_pool},
    {OpKind::AvgPool, write_pool},
    {OpKind::GlobalAvgPool,
     [](Exporter& ex, ExprId id) { return ex.finish("GlobalAveragePool", {ex.operand(id, 0)}, id); }},
};

}  // namespace

FamilyForms pool_forms() { return {kImports, kExports, {}}; }

}  // namespace teq::onnx_io::detail
