// NasNet-A (Zoph et al. 2018) as Tensat benchmarks it: a 7x7 stem on a 224x224 input, three stages of
// five normal cells and one reduction cell (128, 256, 512 channels per branch), batch 1; then global
// average pooling and a 1000-way classifier. Separable convolutions are a depthwise conv followed by a
// 1x1 conv. A pooling that a cell applies twice to the same tensor is one node (the graph is hash-consed).
#include "optimizer/models/families.h"
#include "optimizer/models/graph_builder.h"

namespace teq::models {
namespace {

struct NasNet {
  GraphBuilder& g;

  ExprId squeeze(ExprId x, int64_t channels) {
    return g.conv2d(x, {.out = channels, .act = Activation::Relu});
  }

  /// Brings `x` to the channels and resolution of `like` (a strided 3x3 conv when the resolution differs).
  ExprId fit(ExprId like, ExprId x) {
    if (g.dim(x, 2) == g.dim(like, 2)) return squeeze(x, g.dim(like, 1));
    return g.conv2d(x, {.out = g.dim(like, 1), .kh = 3, .kw = 3, .sh = 2, .sw = 2, .act = Activation::Relu});
  }

  ExprId separable(ExprId x, int64_t channels, int64_t k, int64_t stride) {
    ExprId t = g.conv2d(x, {.out = channels, .kh = k, .kw = k, .sh = stride, .sw = stride,
                            .groups = g.dim(x, 1) / channels});
    return g.conv2d(t, {.out = channels});
  }

  ExprId avg3(ExprId x, int64_t stride) { return g.avgpool(x, 3, stride, kSame); }
  ExprId max3(ExprId x, int64_t stride) { return g.maxpool(x, 3, stride, kSame); }

  ExprId normal_cell(ExprId prev, ExprId cur, int64_t ch) {
    cur = squeeze(cur, ch);
    prev = fit(cur, prev);
    // TASO's order of the ten branch tensors (named locals keep weight numbering deterministic).
    ExprId s0 = separable(cur, ch, 3, 1);
    ExprId s1 = separable(prev, ch, 3, 1);
    ExprId s2 = separable(cur, ch, 3, 1);
    ExprId s3 = separable(prev, ch, 3, 1);
    ExprId s4 = separable(prev, ch, 3, 1);
    std::vector<ExprId> out = {g.add(s0, cur), g.add(s1, s2), g.add(avg3(cur, 1), prev),
                               g.add(avg3(prev, 1), avg3(prev, 1)), g.add(s3, s4)};
    return g.concat(1, out);
  }

  ExprId reduction_cell(ExprId prev, ExprId cur, int64_t ch) {
    cur = squeeze(cur, ch);
    prev = fit(cur, prev);
    ExprId s0 = separable(prev, ch, 7, 2);
    ExprId s1 = separable(cur, ch, 5, 2);
    ExprId o0 = g.add(s0, s1);
    ExprId s2 = separable(prev, ch, 7, 2);
    ExprId o1 = g.add(max3(cur, 2), s2);
    ExprId s3 = separable(prev, ch, 5, 2);
    ExprId o2 = g.add(avg3(cur, 2), s3);
    ExprId s4 = separable(o0, ch, 3, 1);
    ExprId o3 = g.add(max3(cur, 2), s4);
    ExprId o4 = g.add(avg3(o0, 1), o1);
    return g.concat(1, {o0, o1, o2, o3, o4});
  }
};

}  // namespace

Expr build_nasneta() {
  GraphBuilder g;
  NasNet net{g};
  ExprId x = g.input("input", {1, 3, 224, 224});
  x = g.conv2d(x, {.out = 64, .kh = 7, .kw = 7, .sh = 2, .sw = 2, .act = Activation::Relu});
  x = g.maxpool(x, 3, 2, kSame);
  int64_t channels = 128;
  for (int stage = 0; stage < 3; ++stage) {
    ExprId prev = x, cur = x;
    for (int i = 0; i < 5; ++i) {
      ExprId next = net.normal_cell(prev, cur, channels);
      prev = cur;
      cur = next;
    }
    channels *= 2;
    x = net.reduction_cell(prev, cur, channels);
  }
  ExprId logits = g.classifier(x, 1000);
  return std::move(g).finish({logits});
}

}  // namespace teq::models
