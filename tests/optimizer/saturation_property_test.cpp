// Property test of the whole engine: random well-shaped graphs over the vocabulary are saturated with
// the test corpus, extracted with every method, and evaluated with the reference evaluator on random
// inputs. The extracted graphs must compute what the originals compute, be acyclic and well-shaped, and
// keep the outputs in order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "optimizer/engine/cycles.h"
#include "optimizer/engine/egraph.h"
#include "optimizer/engine/extract.h"
#include "optimizer/engine/extract_greedy.h"
#include "optimizer/ilp/extract_ilp.h"
#include "optimizer/optimize.h"
#include "optimizer/engine/runner.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"
#include "tests/engine/test_rules.h"
#include "tests/optimizer/random_graph.h"

namespace teq {
namespace {

/// Grows a random graph one operator at a time, choosing operands from what exists or new leaves.
class GraphGenerator : test::RandomGraphBuilder {
 public:
  explicit GraphGenerator(std::mt19937& rng) : RandomGraphBuilder(rng) {}

  Expr generate() {
    reset();
    const int want = uniform(2, 7);
    for (int tries = 0; static_cast<int>(ops_.size()) < want && tries < 50; ++tries) step();
    if (ops_.empty()) add_op(OpKind::Relu, {}, {pick_or_input()});
    g_.add_root(ops_.back());
    if (ops_.size() > 1 && uniform(0, 1)) g_.add_root(ops_[uniform(0, static_cast<int>(ops_.size()) - 2)]);
    return std::move(g_);
  }

 private:
  int dim() { return uniform(1, 4); }

  ExprId pick_or_input() {
    if (pool_.empty() || uniform(0, 5) == 0) {
      Shape s(uniform(2, 3));
      for (auto& d : s) d = dim();
      return leaf(s, uniform(0, 3) == 0);
    }
    // Scalars (smul's factors) are operands of smul only.
    std::vector<ExprId> tensors;
    for (const auto& [e, sh] : pool_)
      if (!sh.empty()) tensors.push_back(e);
    if (tensors.empty()) return leaf({dim(), dim()}, false);
    return tensors[uniform(0, static_cast<int>(tensors.size()) - 1)];
  }
  ExprId recent_or_pick() { return !ops_.empty() && uniform(0, 2) ? ops_.back() : pick_or_input(); }
  /// An existing tensor of exactly this shape (sometimes), else a new leaf.
  ExprId of_shape(const Shape& s) {
    std::vector<ExprId> fits;
    for (const auto& [e, sh] : pool_)
      if (sh == s) fits.push_back(e);
    if (!fits.empty() && uniform(0, 2)) return fits[uniform(0, static_cast<int>(fits.size()) - 1)];
    return leaf(s, uniform(0, 1));
  }
  ExprId four_d() {
    std::vector<ExprId> fits;
    for (const auto& [e, sh] : pool_)
      if (sh.size() == 4 && sh[2] >= 2 && sh[3] >= 2) fits.push_back(e);
    if (!fits.empty() && uniform(0, 3)) return fits[uniform(0, static_cast<int>(fits.size()) - 1)];
    return leaf({1, uniform(1, 3), uniform(2, 5), uniform(2, 5)}, false);
  }
  void step() {
    switch (uniform(0, 11)) {
      // Activations mostly follow the newest operator, as in real models (and fusion rules apply).
      case 0: add_op(OpKind::Relu, {}, {recent_or_pick()}); break;
      case 1: add_op(OpKind::Tanh, {}, {recent_or_pick()}); break;
      case 2:
      case 3: {
        ExprId a = pick_or_input();
        add_op(uniform(0, 1) ? OpKind::EwAdd : OpKind::EwMul, {}, {a, of_shape(shape_of(a))});
        break;
      }
      case 4:
      case 5: {
        ExprId a = pick_or_input();
        Shape sa = shape_of(a);
        if (sa.size() < 2 || sa.size() > 3) break;
        ExprId b = of_shape({sa.back(), dim()});
        add_op(OpKind::Matmul, {uniform(0, 3) == 0 ? 2 : 0}, {a, b});
        // A second matmul on the same input: where multi-pattern rules apply.
        if (uniform(0, 1)) add_op(OpKind::Matmul, {0}, {a, leaf({sa.back(), dim()}, true)});
        break;
      }
      case 6: {
        ExprId a = pick_or_input();
        Shape s = shape_of(a);
        int axis = uniform(0, static_cast<int>(s.size()) - 1);
        s[axis] = dim();
        add_op(OpKind::Concat, {uniform(0, 1) ? axis : axis - static_cast<int>(s.size())}, {a, of_shape(s)});
        break;
      }
      case 7: {
        ExprId a = pick_or_input();
        Shape s = shape_of(a);
        int axis = uniform(0, static_cast<int>(s.size()) - 1);
        if (s[axis] < 2) break;
        ExprId ref = leaf({uniform(1, static_cast<int>(s[axis]) - 1)}, true);
        add_op(OpKind::Split, {axis, uniform(0, 1), 0}, {a, ref});
        break;
      }
      case 8: {
        ExprId a = pick_or_input();
        std::vector<int64_t> perm(shape_of(a).size());
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::shuffle(perm.begin(), perm.end(), rng_);
        add_op(OpKind::Transpose, perm, {a});
        break;
      }
      case 9: {
        ExprId x = four_d();
        const Shape sx = shape_of(x);  // a copy: adding leaves below may reallocate the shape table
        int k = uniform(0, 1) ? 1 : 3;
        ExprId w = of_shape({uniform(1, 3), sx[1], k, k});  // groups = 1 (see test_rules.h)
        int64_t pad = uniform(0, 1) ? -1 : 0;
        add_op(OpKind::Conv2d, {1, 1, pad, pad, uniform(0, 2) == 0 ? 2 : 0}, {x, w});
        // Shared-input convolutions for conv-share-input.
        if (uniform(0, 1)) add_op(OpKind::Conv2d, {1, 1, -1, -1, 0}, {x, leaf({uniform(1, 3), sx[1], k, k}, true)});
        break;
      }
      case 10: add_op(OpKind::Smul, {}, {pick_or_input(), of_shape({})}); break;
      case 11: {
        ExprId x = four_d();
        switch (uniform(0, 2)) {
          case 0: add_op(OpKind::MaxPool, {2, 2, 2, 2, 0, 0}, {x}); break;
          case 1: add_op(OpKind::AvgPool, {2, 2, 1, 1, 0, 0, 1}, {x}); break;
          default: add_op(OpKind::AvgPool, {3, 3, 1, 1, -1, -1, 0}, {x}); break;
        }
        break;
      }
    }
  }

};

/// Max |a - b| relative to the values' scale, over all outputs.
double max_error(const std::vector<Tensor<double>>& a, const std::vector<Tensor<double>>& b) {
  double err = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].data.size(); ++j)
      err = std::max(err, std::abs(a[i].data[j] - b[i].data[j]) / (1 + std::abs(a[i].data[j])));
  return err;
}

struct PropertyCounts {
  size_t improved = 0, grown = 0, multi_used = 0, blacklisted = 0, ilp_optimal = 0;
};

/// Saturates `graphs` random graphs with `rules`, extracts three ways and checks every result. (An out
/// parameter because gtest's ASSERT_* need a void function.)
void check_random_graphs(const RuleCorpus& rules, int graphs, uint32_t seed, PropertyCounts& counts) {
  std::mt19937 rng(seed);
  GraphGenerator gen(rng);
  const FlopCostModel cost;
  size_t improved = 0, grown = 0, multi_used = 0, blacklisted = 0, ilp_optimal = 0;
  for (int trial = 0; trial < graphs; ++trial) {
    const Expr graph = gen.generate();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + print_graph(graph));
    const auto leaves = test::random_leaves(graph, rng);
    const std::vector<Tensor<double>> expected = evaluate<double>(graph, Arith<double>{}, leaves);

    EGraph egraph;
    const std::vector<ClassId> ids = egraph.add_expr(graph);
    std::vector<ClassId> roots;
    for (ExprId r : graph.roots()) roots.push_back(ids[r.value]);
    Runner runner(rules.rules, RunnerConfig{.node_limit = 1'500, .iter_limit = 5, .time_limit_s = 10});
    const RunReport run = runner.run(egraph);
    grown += egraph.num_nodes() > graph.size();
    std::vector<bool> blacklist;
    blacklisted += blacklist_cycles(egraph, blacklist).blacklisted;
    const ExtractionProblem problem = make_problem(egraph, roots, cost, blacklist);
    const double original_cost = graph_cost(graph, cost);

    const Extraction results[] = {extract_greedy(problem), extract_dag_greedy(problem),
                                  extract_ilp(problem, IlpConfig{.time_limit_s = 10})};
    for (const Extraction& ex : results) {
      SCOPED_TRACE(ex.method);
      ASSERT_TRUE(ex.ok()) << ex.status;
      const Expr out = build_expr(egraph, ex.choice, roots);  // throws on a cyclic selection
      ASSERT_EQ(out.roots().size(), graph.roots().size());
      const std::vector<Shape> shapes = infer_shapes(out, {});  // well-shaped
      const std::vector<Shape> original = infer_shapes(graph, {});
      for (size_t i = 0; i < out.roots().size(); ++i)
        ASSERT_EQ(shapes[out.roots()[i].value], original[graph.roots()[i].value]);
      for (const ExprNode& n : out.nodes()) {
        if (n.op == OpKind::Input || n.op == OpKind::Weight) {
          ASSERT_TRUE(leaves.contains(n.name)) << n.name;
        }
      }
      // The objective is the graph's cost with each rule-made node kRewrittenNodeTieBreak dearer.
      EXPECT_LE(graph_cost(out, cost), ex.cost * (1 + 1e-9) + 1e-12);
      EXPECT_GE(graph_cost(out, cost) * (1 + kRewrittenNodeTieBreak) + 1e-12, ex.cost * (1 - 1e-9));
      const double err = max_error(expected, evaluate<double>(out, Arith<double>{}, leaves));
      ASSERT_LT(err, 1e-9) << print_graph(out);
      if (ex.cost < original_cost * (1 - 1e-9)) ++improved;
    }
    EXPECT_LE(results[2].cost, results[1].cost + 1e-12);
    EXPECT_LE(results[1].cost, results[0].cost + 1e-12);
    ilp_optimal += results[2].optimal;
    for (size_t c = 0; c < problem.classes.size(); ++c) {  // multi-pattern rules' nodes in the ILP answer
      NodeId n = results[2].choice[c];
      if (n != kNoNode)
        if (auto r = egraph.origin(n))
          multi_used += rules.rules[r->value].is_multi();
    }
    (void)run;
  }
  std::printf("property: %zu/%d e-graphs grew, %zu extractions cheaper than the input, %zu multi-pattern nodes "
              "extracted, %zu e-nodes blacklisted, ILP optimal on %zu\n",
              grown, graphs, improved, multi_used, blacklisted, ilp_optimal);
  counts = PropertyCounts{improved, grown, multi_used, blacklisted, ilp_optimal};
}

TEST(SaturationProperty, ExtractedGraphsComputeTheSameValues) {
  constexpr int kGraphs = 500;
  PropertyCounts n;
  check_random_graphs(test::engine_test_rules(), kGraphs, 7, n);
  // The corpus really rewrote things, including multi-pattern rules and cycles.
  EXPECT_GT(n.grown, kGraphs / 2u);
  EXPECT_GT(n.improved, 20u);
  EXPECT_GT(n.multi_used, 0u);
  EXPECT_GT(n.blacklisted, 0u);
  EXPECT_GT(n.ilp_optimal, kGraphs * 9u / 10);
}

TEST(SaturationProperty, ProjectCorpusKeepsValues) {
  const std::filesystem::path path = std::filesystem::path(TEQ_SOURCE_DIR) / "tests" / "data" / "seed.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const RuleCorpus corpus = load_corpus(path);
  PropertyCounts n;
  check_random_graphs(corpus, 300, 13, n);
  EXPECT_GT(n.grown, 100u);
}

TEST(SaturationProperty, OptimizeGraphEndToEnd) {
  std::mt19937 rng(11);
  GraphGenerator gen(rng);
  const RuleCorpus rules = test::engine_test_rules();
  const FlopCostModel cost;
  for (ExtractMethod method : {ExtractMethod::Greedy, ExtractMethod::DagGreedy, ExtractMethod::Ilp}) {
    for (int trial = 0; trial < 20; ++trial) {
      const Expr graph = gen.generate();
      SCOPED_TRACE(print_graph(graph));
      size_t progress_lines = 0;
      OptimizeReport r = optimize_graph(graph, rules, cost,
                                        OptimizeConfig{.saturation = {.node_limit = 800, .iter_limit = 4,
                                                                       .on_iteration = [&](const IterationStats&) {
                                                                         ++progress_lines;
                                                                       }},
                                                       .extract = method,
                                                       .ilp_time_limit_s = 10});
      EXPECT_EQ(progress_lines, r.iterations);
      EXPECT_LE(r.optimized_cost, r.original_cost + 1e-15);
      EXPECT_NEAR(r.optimized_cost, graph_cost(r.optimized, cost), 1e-15);
      const auto leaves = test::random_leaves(graph, rng);
      EXPECT_LT(max_error(evaluate<double>(graph, Arith<double>{}, leaves),
                          evaluate<double>(r.optimized, Arith<double>{}, leaves)),
                1e-9);
      // Every rule credited with a node of the result exists in the corpus.
      for (const auto& [id, count] : r.rules_used) {
        EXPECT_NE(rules.find(id), nullptr) << id;
        EXPECT_GT(count, 0u);
      }
    }
  }
}

TEST(SaturationProperty, OptimizeGraphRejectsIllShapedInput) {
  const RuleCorpus rules = test::engine_test_rules();
  EXPECT_THROW(optimize_graph(parse_expr("(matmul 0 (input a 2 3) (input b 2 3))"), rules, FlopCostModel{}, {}),
               ShapeError);
}

}  // namespace
}  // namespace teq
