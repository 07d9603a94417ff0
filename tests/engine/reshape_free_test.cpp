// Reshapes around element-wise computations (optimizer/engine/reshape_free.h): removed where the computation is
// the same at the outer shape, and the values are those of the input graph; left where they are not.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "optimizer/engine/reshape_free.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

/// Random values for every input and weight of `g` (the same seed for both graphs of a comparison).
std::map<std::string, Tensor<double>> leaves_of(const Expr& g) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-2, 2);
  std::map<std::string, Tensor<double>> leaves;
  for (const ExprNode& n : g.nodes()) {
    if ((n.op != OpKind::Input && n.op != OpKind::Weight) || leaves.count(n.name)) continue;
    Shape s(n.attrs.begin(), n.attrs.end());
    std::vector<double> v(static_cast<size_t>(num_elements(s)));
    for (double& x : v) x = u(rng);
    leaves.emplace(n.name, Tensor<double>(s, std::move(v)));
  }
  return leaves;
}

/// Removes what the pass removes and checks that the graph computes the same values.
ReshapeFree removed(const std::string& text, const OpaqueFacts& opaque = {}) {
  Expr g = parse_expr(text);
  ReshapeFree r = remove_reshapes_around_elementwise(g, opaque);
  if (r.removed > 0) {
    auto leaves = leaves_of(g);
    auto before = evaluate<double>(g, Arith<double>{}, leaves);
    auto after = evaluate<double>(r.graph, Arith<double>{}, leaves);
    EXPECT_EQ(before.size(), after.size());
    for (size_t k = 0; k < before.size() && k < after.size(); ++k) {
      EXPECT_EQ(before[k].shape, after[k].shape);
      EXPECT_EQ(before[k].data, after[k].data);
    }
  }
  return r;
}

TEST(ReshapeFree, ChainBetweenAReshapeAndOneBackIsComputedWithoutThem) {
  // GPT-2's MLP as the dynamo exporter writes it: [B*S, 4E] -> [B, S, 4E], GELU's element-wise chain, back.
  ReshapeFree r = removed(R"(
    (let x (input x 6 4))
    (let r (reshape 2 3 4 x))
    (reshape 6 4 (ewmul (tanh (ewadd r (broadcast 2 3 4 (weight c)))) r)))");
  EXPECT_EQ(r.removed, 1u);
  EXPECT_EQ(print_graph(r.graph), "(ewmul (tanh (ewadd (input x 6 4) (broadcast 6 4 (weight c)))) (input x 6 4))\n");
}

TEST(ReshapeFree, BiasOverTheLastAxisFollowsAndAReshapeOfAReshapeIsItsInput) {
  ReshapeFree r = removed(R"(
    (reshape 6 4 (relu (ewadd (reshape 2 3 4 (input x 6 4)) (broadcast 2 3 4 (weight b 4)))))
    (reshape 6 4 (reshape 3 8 (input y 6 4)))
    (reshape 6 4 (input z 6 4)))");
  EXPECT_EQ(r.removed, 3u);
  EXPECT_EQ(print_graph(r.graph),
            "(relu (ewadd (input x 6 4) (broadcast 6 4 (weight b 4))))\n(input y 6 4)\n(input z 6 4)\n");
}

TEST(ReshapeFree, LeftWhereTheComputationIsNotTheSameOrIsReadElsewhere) {
  // A broadcast that varies along an axis the reshape merges: not the same values at the other shape.
  EXPECT_EQ(removed("(reshape 6 4 (ewadd (reshape 2 3 4 (input x 6 4)) (broadcast 2 3 4 (weight b 3 1))))").removed,
            0u);
  // The chain's node is also an output: removing the reshapes would compute it twice.
  EXPECT_EQ(removed("(let t (tanh (reshape 2 3 4 (input x 6 4)))) (reshape 6 4 t) t").removed, 0u);
  // The inner reshape's input has another shape than the outer reshape's result.
  EXPECT_EQ(removed("(reshape 6 4 (relu (reshape 2 3 4 (input x 3 8))))").removed, 0u);
  // Not element-wise.
  EXPECT_EQ(removed("(reshape 6 4 (softmax 2 (reshape 2 3 4 (input x 6 4))))").removed, 0u);
}

TEST(ReshapeFree, AnInnerReadByOthersStaysForThem) {
  // The inner reshape feeds a second reader: it stays, the outer one goes.
  ReshapeFree r = removed("(let r (reshape 2 3 4 (input x 6 4))) (reshape 6 4 (relu r)) (tanh r)");
  EXPECT_EQ(r.removed, 1u);
  EXPECT_EQ(print_graph(r.graph), "(relu (input x 6 4))\n(tanh (reshape 2 3 4 (input x 6 4)))\n");
}

TEST(ReshapeFree, OpaqueReshapesAndElementWiseOperatorsAsTheDriverSaysTheyAre) {
  // An ONNX Reshape kept opaque (its target computed from the input's dimensions) as the inner reshape, an
  // opaque Pow inside the chain: rebuilt at the outer shape. Opaque nodes have no values, so only the form is
  // compared here; eqsat_run.hf.gpt2.dynamo runs the same in onnxruntime at four shapes.
  const std::string text =
      "(reshape 6 4 (tanh (opaque 1 0 2 3 4 (opaque 0 0 2 3 4 (input x 6 4) (input s 3)) (weight e))))";
  OpaqueFacts facts{.reshape_operand = [](const ExprNode& n) -> std::optional<size_t> {
                      return n.attrs[0] == 0 ? std::optional<size_t>(0) : std::nullopt;
                    },
                    .elementwise = [](const ExprNode& n) { return n.attrs[0] == 1; }};
  ReshapeFree r = remove_reshapes_around_elementwise(parse_expr(text), facts);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_EQ(print_graph(r.graph), "(tanh (opaque 1 0 6 4 (input x 6 4) (weight e)))\n");
  // Without the driver's facts they are just opaque: nothing removed.
  EXPECT_EQ(remove_reshapes_around_elementwise(parse_expr(text)).removed, 0u);
}

}  // namespace
}  // namespace teq
