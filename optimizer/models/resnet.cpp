// ResNet-50 and ResNeXt-50 (32x4d-style, as in TASO and Tensat): a 7x7 stem, bottleneck blocks in stages
// of 3, 4, 6 and 3, then global average pooling and a 1000-way classifier; 224x224 input, batch 1.
// Batch normalization is folded into the convolutions and biases are left out, as in TASO's graphs; the
// projection shortcut carries a fused relu as in TASO's and Tensat's examples.
#include "optimizer/models/families.h"
#include "optimizer/models/graph_builder.h"

namespace teq::models {
namespace {

ExprId bottleneck(GraphBuilder& g, ExprId x, int64_t stride, int64_t width, int64_t expansion, int64_t groups) {
  const Activation relu = Activation::Relu;
  ExprId t = g.conv2d(x, {.out = width, .act = relu});
  t = g.conv2d(t, {.out = width, .kh = 3, .kw = 3, .sh = stride, .sw = stride, .act = relu, .groups = groups});
  t = g.conv2d(t, {.out = width * expansion});
  ExprId shortcut = x;
  if (stride > 1 || g.dim(x, 1) != width * expansion)
    shortcut = g.conv2d(x, {.out = width * expansion, .sh = stride, .sw = stride, .act = relu});
  return g.relu(g.add(shortcut, t));
}

Expr build_resnet_like(const int64_t (&widths)[4], int64_t expansion, int64_t groups) {
  constexpr int kBlocks[4] = {3, 4, 6, 3};
  GraphBuilder g;
  ExprId x = g.input("input", {1, 3, 224, 224});
  x = g.conv2d(x, {.out = 64, .kh = 7, .kw = 7, .sh = 2, .sw = 2, .act = Activation::Relu});
  x = g.maxpool(x, 3, 2, kSame);
  for (int stage = 0; stage < 4; ++stage)
    for (int b = 0; b < kBlocks[stage]; ++b)
      x = bottleneck(g, x, stage > 0 && b == 0 ? 2 : 1, widths[stage], expansion, groups);
  ExprId logits = g.classifier(x, 1000);
  return std::move(g).finish({logits});
}

}  // namespace

Expr build_resnet50() { return build_resnet_like({64, 128, 256, 512}, 4, 1); }
Expr build_resnext50() { return build_resnet_like({128, 256, 512, 1024}, 2, 32); }

}  // namespace teq::models
