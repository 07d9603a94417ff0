// VGG-19 (Simonyan & Zisserman 2015, configuration E) as Tensat benchmarks it from ONNX: 224x224 input,
// batch 1, sixteen 3x3 convolutions each followed by a separate relu (as imported from ONNX, not fused),
// five 2x2 max poolings, three fully connected layers (relu after the first two). Biases and dropout are
// left out, as in TASO's import; the fully connected weights are stored already transposed.
#include "optimizer/models/families.h"
#include "optimizer/models/graph_builder.h"

namespace teq::models {

Expr build_vgg19() {
  constexpr int64_t kStages[5][2] = {{64, 2}, {128, 2}, {256, 4}, {512, 4}, {512, 4}};  // channels, convs
  GraphBuilder g;
  ExprId x = g.input("input", {1, 3, 224, 224});
  for (const auto& [channels, convs] : kStages) {
    for (int64_t i = 0; i < convs; ++i) x = g.relu(g.conv2d(x, {.out = channels, .kh = 3, .kw = 3}));
    x = g.maxpool(x, 2, 2, 0);
  }
  x = g.reshape(x, {1, 512 * 7 * 7});
  x = g.relu(g.dense(x, 4096));
  x = g.relu(g.dense(x, 4096));
  x = g.dense(x, 1000);
  return std::move(g).finish({x});
}

}  // namespace teq::models
