// The convolution family's ONNX forms (rules/ops/conv.h): Conv in (its bias as a broadcast add, a zero Pad
// before it as its own padding); Conv (with the bias add it feeds as its bias input), enlarge as Pad and
// merge as Tile times a mask out.
#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/forms/window.h"
#include "rules/ops/conv.h"
#include "rules/semantics.h"

namespace teq::onnx_io::detail {

namespace {

// ---- import ------------------------------------------------------------------------------------------

void import_conv(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0), w = im.in(n, 1);
  const Shape xs = im.shape(x), ws = im.shape(w);  // copies: add() grows the shapes
  if (xs.size() != 4 || ws.size() != 4) throw NotInVocabulary{"not a 2-d convolution"};
  std::optional<std::array<int64_t, 6>> folded;
  if (auto f = foldable_pad(im, x)) {
    // A zero Pad of the spatial axes is the convolution's own zero padding.
    try {
      folded = window_attrs(n, im.shape(f->x), ws[2], ws[3], /*dilation_allowed=*/true, f->pads);
      x = f->x;
    } catch (const NotInVocabulary&) {
      // not expressible as our padding: the Pad stays a node of its own
    }
  }
  const auto [sh, sw, ph, pw, dh, dw] = folded ? *folded : window_attrs(n, xs, ws[2], ws[3], /*dilation_allowed=*/true);
  const ops::ConvAttrs c{.sh = sh, .sw = sw, .ph = ph, .pw = pw, .act = Activation::None, .dh = dh, .dw = dw};
  ExprId y = im.add(OpKind::Conv2d, ops::conv2d_attr_list(c), {x, w});
  if (im.has_input(n, 2)) {
    // Bias [O] -> [O,1,1], broadcast over N, H, W.
    ExprId bias = im.add(OpKind::Reshape, {ws[0], 1, 1}, {im.in(n, 2)});
    y = im.add(OpKind::EwAdd, {}, {y, im.broadcast_to(bias, im.shape(y))});
  }
  im.set_output(n, y);
}

constexpr ImportForm kImports[] = {
    {"Conv", 1, kLatestOpset, import_conv},
};

// ---- export ------------------------------------------------------------------------------------------

/// Conv2d node `conv` as a Conv computing `result`, with `bias` as its bias input when there is one.
std::string write_conv(Exporter& ex, ExprId conv, ExprId result, const std::string& bias) {
  const ExprNode& node = ex.graph()[conv];
  const Shape &x = ex.shape(node.children[0]), &w = ex.shape(node.children[1]);
  std::vector<std::string> inputs{ex.emit(node.children[0]), ex.emit(node.children[1])};
  if (!bias.empty()) inputs.push_back(bias);
  const ops::ConvAttrs c = ops::conv_attrs(node.attrs);
  auto [hb, he] = onnx_pads(x[2], ops::dilated_extent(w[2], c.dh), c.sh, c.ph);
  auto [wb, we] = onnx_pads(x[3], ops::dilated_extent(w[3], c.dw), c.sw, c.pw);
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish("Conv", inputs, result, c.act, &n);
  add_attr(*n, "kernel_shape", std::vector<int64_t>{w[2], w[3]});
  add_attr(*n, "strides", std::vector<int64_t>{c.sh, c.sw});
  if (c.dh != 1 || c.dw != 1) add_attr(*n, "dilations", std::vector<int64_t>{c.dh, c.dw});
  add_attr(*n, "pads", std::vector<int64_t>{hb, wb, he, we});
  add_attr(*n, "group", x[1] / w[1]);
  return y;
}

/// Conv2d with act 0 used only by this add, plus a bias [O] reshaped to [O,1,1] and broadcast: ONNX
/// Conv's own bias input.
std::optional<std::string> conv_with_bias(Exporter& ex, ExprId id) {
  const Expr& g = ex.graph();
  const ExprNode& add = g[id];
  for (int k = 0; k < 2; ++k) {
    ExprId conv = add.children[k], other = add.children[1 - k];
    const ExprNode& c = g[conv];
    if (c.op != OpKind::Conv2d || fused_activation(c.op, c.attrs) != Activation::None || ex.users(conv) != 1 ||
        ex.is_written(conv) || ex.materialized(conv) || g[other].op != OpKind::Broadcast)
      continue;
    ExprId reshape = g[other].children[0];
    const ExprNode& r = g[reshape];
    const int64_t O = ex.shape(conv)[1];
    if (r.op != OpKind::Reshape || r.attrs != std::vector<int64_t>{O, 1, 1} || ex.shape(r.children[0]) != Shape{O})
      continue;
    return write_conv(ex, conv, id, ex.emit(r.children[0]));
  }
  return std::nullopt;
}

std::string write_enlarge(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  const Shape& w = ex.shape(node.children[0]);
  const ops::EnlargeAttrs e = ops::enlarge_attrs(node.attrs);
  int64_t dy = (e.kh - w[2]) / 2, dx = (e.kw - w[3]) / 2;
  return ex.zero_pad(ex.operand(id, 0), {0, 0, dy, dx, 0, 0, e.kh - w[2] - dy, e.kw - w[3] - dx}, id);
}

std::string write_merge(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  // Tile the kernel `count` times along its input channels, then keep each output channel's own
  // block: the mask is merge itself applied to ones (rules/ops/conv.h has the one layout).
  if (ex.opset() < 7)
    throw OnnxError("export: merge needs Tile with a repeats input and a broadcasting Mul, which opset " +
                    std::to_string(ex.opset()) + " lacks");
  const Shape& w = ex.shape(node.children[0]);
  const Tensor<float> ones({w[0], w[1], 1, 1}, 1.0f);
  const Tensor<float>* ones_arg[] = {&ones};
  const int64_t count = ops::merge_count(node.attrs);
  const Tensor<float> mask =
      evaluate_op<float>(Arith<float>{}, OpKind::Merge, node.attrs, ones_arg, {w[0], w[1] * count, 1, 1});
  std::string name = ex.add_initializer("teq_merge_mask", mask);
  std::string tiled = ex.add_simple("Tile", {ex.operand(id, 0), ex.int_constant({1, count, 1, 1})});
  return ex.finish("Mul", {tiled, name}, id);
}

constexpr ExportForm kExports[] = {
    {OpKind::Conv2d, [](Exporter& ex, ExprId id) { return write_conv(ex, id, id, ""); }},
    {OpKind::Enlarge, write_enlarge},
    {OpKind::Merge, write_merge},
};

constexpr ExportFusion kFusions[] = {
    {OpKind::EwAdd, conv_with_bias},
};

}  // namespace

FamilyForms conv_forms() { return {kImports, kExports, kFusions}; }

}  // namespace teq::onnx_io::detail
