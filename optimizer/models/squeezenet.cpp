// SqueezeNet 1.1 (Iandola et al. 2016; the version in the ONNX model zoo, which Tensat benchmarks):
// 224x224 input, batch 1, a 3x3 stride-2 stem, eight fire modules with max pooling after the 2nd and
// 4th, a 1x1 convolution to 1000 classes and global average pooling. Relus are separate operators (as
// imported from ONNX); biases and dropout are left out, as in TASO's import.
#include "optimizer/models/families.h"
#include "optimizer/models/graph_builder.h"

namespace teq::models {
namespace {

ExprId fire(GraphBuilder& g, ExprId x, int64_t squeeze, int64_t expand) {
  ExprId s = g.relu(g.conv2d(x, {.out = squeeze}));
  ExprId e1 = g.relu(g.conv2d(s, {.out = expand}));
  ExprId e3 = g.relu(g.conv2d(s, {.out = expand, .kh = 3, .kw = 3}));
  return g.concat(1, {e1, e3});
}

}  // namespace

Expr build_squeezenet() {
  GraphBuilder g;
  ExprId x = g.input("input", {1, 3, 224, 224});
  x = g.relu(g.conv2d(x, {.out = 64, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 0, .pw = 0}));  // 111
  x = g.maxpool(x, 3, 2, 0);                                                               // 55
  x = fire(g, x, 16, 64);
  x = fire(g, x, 16, 64);
  x = g.maxpool(x, 3, 2, 0);  // 27
  x = fire(g, x, 32, 128);
  x = fire(g, x, 32, 128);
  x = g.maxpool(x, 3, 2, 0);  // 13
  x = fire(g, x, 48, 192);
  x = fire(g, x, 48, 192);
  x = fire(g, x, 64, 256);
  x = fire(g, x, 64, 256);
  x = g.relu(g.conv2d(x, {.out = 1000}));
  x = g.op(OpKind::GlobalAvgPool, {}, {x});
  x = g.reshape(x, {1, 1000});
  return std::move(g).finish({x});
}

}  // namespace teq::models
