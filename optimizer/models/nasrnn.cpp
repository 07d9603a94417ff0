// NasRNN (Zoph & Le's searched recurrent cell) as TASO and Tensat benchmark it: 5 steps, hidden 512,
// batch 1. Each step combines the input and the state through 8 pairs of matmuls, then a fixed tree of
// relu/sigmoid/tanh and element-wise add/mul. The initial state is a weight, as in both.
#include "optimizer/models/families.h"
#include "optimizer/models/graph_builder.h"

namespace teq::models {
namespace {

constexpr int64_t kHidden = 512, kSteps = 5;

ExprId nas_cell(GraphBuilder& g, ExprId state, ExprId x) {
  auto combine = [&] {
    ExprId from_x = g.matmul(x, g.weight("wx", {kHidden, kHidden}));
    ExprId from_state = g.matmul(state, g.weight("wh", {kHidden, kHidden}));
    return g.add(from_x, from_state);
  };
  std::vector<ExprId> t;
  for (int i = 0; i < 8; ++i) t.push_back(combine());
  ExprId m0 = g.add(g.relu(t[0]), g.sigmoid(t[3]));
  ExprId m1 = g.add(g.sigmoid(t[1]), g.tanh(t[2]));
  ExprId m2 = g.mul(g.sigmoid(t[4]), g.tanh(t[5]));
  ExprId m3 = g.mul(g.sigmoid(t[6]), g.relu(t[7]));
  ExprId m4 = g.add(g.sigmoid(m1), g.tanh(m2));
  ExprId m5 = g.mul(g.tanh(m0), g.tanh(m3));
  ExprId m6 = g.mul(g.tanh(m4), g.tanh(m5));
  return g.tanh(m6);
}

}  // namespace

Expr build_nasrnn() {
  GraphBuilder g;
  std::vector<ExprId> xs;
  for (int i = 0; i < kSteps; ++i) xs.push_back(g.input("x" + std::to_string(i), {1, kHidden}));
  ExprId state = g.weight("state", {1, kHidden});
  for (ExprId x : xs) state = nas_cell(g, state, x);
  return std::move(g).finish({state});
}

}  // namespace teq::models
