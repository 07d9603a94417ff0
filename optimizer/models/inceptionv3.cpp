// Inception-v3 (Szegedy et al. 2016) as TASO benchmarks it: 299x299 input, batch 1, the stem, 3 x A,
// B, 4 x C, D, 2 x E modules, then global average pooling and a 1000-way classifier (TASO's example stops
// at the pooling). Every convolution carries a fused relu (batch normalization folded, no biases).
// Padding follows TASO: VALID for unpadded kernels larger than 1x1, SAME otherwise.
#include "optimizer/models/families.h"
#include "optimizer/models/graph_builder.h"

namespace teq::models {
namespace {

struct Inception {
  GraphBuilder& g;

  /// conv + relu with the published kernel, stride and padding (padding as TASO maps it).
  ExprId conv(ExprId x, int64_t out, int64_t kh, int64_t kw, int64_t stride = 1, int64_t ph = 0, int64_t pw = 0) {
    const int64_t pad = (ph == 0 && pw == 0 && kh + kw > 2) ? 0 : kSame;
    return g.conv2d(x, {.out = out, .kh = kh, .kw = kw, .sh = stride, .sw = stride, .ph = pad, .pw = pad,
                        .act = Activation::Relu});
  }

  ExprId stem(ExprId x) {
    x = conv(x, 32, 3, 3, 2);        // 149
    x = conv(x, 32, 3, 3);           // 147
    x = conv(x, 64, 3, 3, 1, 1, 1);  // 147
    x = g.maxpool(x, 3, 2, 0);       // 73
    x = conv(x, 80, 1, 1);
    x = conv(x, 192, 3, 3);          // 71
    return g.maxpool(x, 3, 2, 0);    // 35
  }

  ExprId module_a(ExprId x, int64_t pool_features) {
    ExprId b1 = conv(x, 64, 1, 1);
    ExprId b5 = conv(conv(x, 48, 1, 1), 64, 5, 5, 1, 2, 2);
    ExprId b3 = conv(conv(conv(x, 64, 1, 1), 96, 3, 3, 1, 1, 1), 96, 3, 3, 1, 1, 1);
    ExprId bp = conv(g.avgpool(x, 3, 1, kSame), pool_features, 1, 1);
    return g.concat(1, {b1, b5, b3, bp});
  }

  ExprId module_b(ExprId x) {
    ExprId b3 = conv(x, 384, 3, 3, 2);
    ExprId bd = conv(conv(conv(x, 64, 1, 1), 96, 3, 3, 1, 1, 1), 96, 3, 3, 2);
    ExprId bp = g.maxpool(x, 3, 2, 0);
    return g.concat(1, {b3, bd, bp});
  }

  ExprId module_c(ExprId x, int64_t c7) {
    ExprId b1 = conv(x, 192, 1, 1);
    ExprId b7 = conv(conv(conv(x, c7, 1, 1), c7, 1, 7, 1, 0, 3), 192, 7, 1, 1, 3, 0);
    ExprId bd = conv(x, c7, 1, 1);
    bd = conv(bd, c7, 7, 1, 1, 3, 0);
    bd = conv(bd, c7, 1, 7, 1, 0, 3);
    bd = conv(bd, c7, 7, 1, 1, 3, 0);
    bd = conv(bd, 192, 1, 7, 1, 0, 3);
    ExprId bp = conv(g.avgpool(x, 3, 1, kSame), 192, 1, 1);
    return g.concat(1, {b1, b7, bd, bp});
  }

  ExprId module_d(ExprId x) {
    ExprId b3 = conv(conv(x, 192, 1, 1), 320, 3, 3, 2);
    ExprId b7 = conv(x, 192, 1, 1);
    b7 = conv(b7, 192, 1, 7, 1, 0, 3);
    b7 = conv(b7, 192, 7, 1, 1, 3, 0);
    b7 = conv(b7, 192, 3, 3, 2);
    ExprId bp = g.maxpool(x, 3, 2, 0);
    return g.concat(1, {b3, b7, bp});
  }

  ExprId module_e(ExprId x) {
    ExprId b1 = conv(x, 320, 1, 1);
    ExprId b3 = conv(x, 384, 1, 1);
    ExprId b3a = conv(b3, 384, 1, 3, 1, 0, 1);
    ExprId b3b = conv(b3, 384, 3, 1, 1, 1, 0);
    ExprId bd = conv(conv(x, 448, 1, 1), 384, 3, 3, 1, 1, 1);
    ExprId bda = conv(bd, 384, 1, 3, 1, 0, 1);
    ExprId bdb = conv(bd, 384, 3, 1, 1, 1, 0);
    ExprId bp = conv(g.avgpool(x, 3, 1, kSame), 192, 1, 1);
    return g.concat(1, {b1, b3a, b3b, bda, bdb, bp});
  }
};

}  // namespace

Expr build_inceptionv3() {
  GraphBuilder g;
  Inception net{g};
  ExprId x = net.stem(g.input("input", {1, 3, 299, 299}));
  x = net.module_a(x, 32);
  x = net.module_a(x, 64);
  x = net.module_a(x, 64);
  x = net.module_b(x);
  for (int64_t c7 : {128, 160, 160, 192}) x = net.module_c(x, c7);
  x = net.module_d(x);
  x = net.module_e(x);
  x = net.module_e(x);
  ExprId logits = g.classifier(x, 1000);
  return std::move(g).finish({logits});
}

}  // namespace teq::models
