// Property test of the rule corpus as eqsat-run applies it: random small graphs with the attributes ONNX
// allows (grouped, depthwise, strided, padded and dilated convolutions, every pool setting, broadcasting, each
// operator's axes) are saturated with the whole of corpus/rules.json applied both ways, and then every e-node
// of every e-class is evaluated against its class's value. A class's e-nodes are the alternatives extraction
// chooses from, so when each one computes its class's value, every graph any extraction can build computes
// the original's; an e-node that does not names the rule that made it.
//
// The test can fail: the same saturation with each rule's scope widened to every grouping of its convolutions
// (rules/rule_scope.h, what the rewriters applied before the scope covered both sides) must find wrong e-nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "optimizer/engine/egraph.h"
#include "optimizer/engine/runner.h"
#include "rules/corpus.h"
#include "rules/evaluator.h"
#include "rules/rule_scope.h"
#include "rules/sexpr.h"
#include "tests/optimizer/random_graph.h"

namespace teq {
namespace {

/// Grows a random graph of convolutions, pools, matmuls and element-wise operators, with the structures
/// where conv and matmul rules apply: several operators of one kind on one input, their outputs
/// concatenated or added.
class ConvGraphGenerator : test::RandomGraphBuilder {
 public:
  explicit ConvGraphGenerator(std::mt19937& rng) : RandomGraphBuilder(rng) {}

  Expr generate() {
    reset();
    const int want = uniform(2, 6);
    for (int tries = 0; static_cast<int>(ops_.size()) < want && tries < 60; ++tries) step();
    if (ops_.empty()) add_op(OpKind::Relu, {}, {image()});
    g_.add_root(ops_.back());
    if (ops_.size() > 1 && uniform(0, 1)) g_.add_root(ops_[uniform(0, static_cast<int>(ops_.size()) - 2)]);
    return std::move(g_);
  }

 private:
  template <class T>
  T pick(std::initializer_list<T> xs) {
    return *(xs.begin() + uniform(0, static_cast<int>(xs.size()) - 1));
  }

  /// A 4-d tensor: an existing one (mostly the newest), or a new input with 2 to 8 channels.
  ExprId image() {
    std::vector<ExprId> fits;
    for (const auto& [e, s] : pool_)
      if (s.size() == 4 && s[2] >= 3 && s[3] >= 3) fits.push_back(e);
    if (!fits.empty() && uniform(0, 3)) return uniform(0, 1) ? fits.back() : fits[uniform(0, static_cast<int>(fits.size()) - 1)];
    return leaf({uniform(1, 2), pick({2, 4, 6, 8}), uniform(4, 7), uniform(4, 7)}, false);
  }
  ExprId any_tensor() {
    if (pool_.empty() || uniform(0, 4) == 0) return image();
    return pool_[uniform(0, static_cast<int>(pool_.size()) - 1)].first;
  }

  /// A convolution's attributes: stride 1 or 2, SAME, VALID or one pixel of padding, a fused relu at times,
  /// dilation 2 at times.
  std::vector<int64_t> conv_attrs() {
    const int64_t s = pick({1, 1, 2}), p = pick({-1, -1, 0, 1}), act = pick({0, 0, 2});
    std::vector<int64_t> a{s, s, p, p, act};
    if (uniform(0, 5) == 0) a.insert(a.end(), {2, 2});
    return a;
  }
  /// A kernel for input x: `groups` must divide x's channels; output channels a multiple of it.
  ExprId kernel(const Shape& x, int64_t groups, int64_t k) {
    return leaf({groups * uniform(1, 2), x[1] / groups, k, k}, true);
  }
  int64_t groups_for(int64_t channels) {
    switch (uniform(0, 3)) {
      case 0: return channels;                       // depthwise
      case 1: return channels % 2 == 0 ? 2 : 1;      // two groups
      default: return 1;
    }
  }

  void convs() {
    const ExprId x = image();
    const Shape sx = shape_of(x);
    const int64_t groups = groups_for(sx[1]), k = pick({1, 3, 3});
    const std::vector<int64_t> attrs = conv_attrs();
    const ExprId w = kernel(sx, groups, k);
    std::optional<ExprId> a = add_op(OpKind::Conv2d, attrs, {x, w});
    if (!a || uniform(0, 2) == 0) return;
    // A second convolution like it: on the same input, or on another of the same shape; then joined.
    const ExprId x2 = uniform(0, 2) ? x : leaf(sx, false);
    std::optional<ExprId> b = add_op(OpKind::Conv2d, attrs, {x2, uniform(0, 3) ? leaf(shape_of(w), true) : w});
    if (!b) return;
    switch (uniform(0, 3)) {
      case 0: add_op(OpKind::EwAdd, {}, {*a, *b}); break;
      case 1: add_op(OpKind::Concat, {1}, {*b, *a}); break;
      default: add_op(OpKind::Concat, {1}, {*a, *b}); break;
    }
  }
  void pool() {
    const ExprId x = image();
    const int64_t k = pick({2, 3}), s = pick({1, 2}), p = pick({0, 0, -1, 1});
    if (uniform(0, 1)) add_op(OpKind::MaxPool, {k, k, s, s, p, p}, {x});
    else add_op(OpKind::AvgPool, {k, k, s, s, p, p, uniform(0, 1)}, {x});
  }
  void matmuls() {
    const ExprId a = leaf({uniform(1, 3), uniform(2, 4)}, false);
    const Shape sa = shape_of(a);
    std::optional<ExprId> m = add_op(OpKind::Matmul, {pick({0, 0, 2})}, {a, leaf({sa[1], uniform(1, 3)}, true)});
    std::optional<ExprId> n = add_op(OpKind::Matmul, {0}, {a, leaf({sa[1], uniform(1, 3)}, true)});
    if (m && n && uniform(0, 1)) add_op(OpKind::Concat, {1}, {*m, *n});
  }
  void elementwise() {
    const ExprId a = any_tensor();
    const Shape s = shape_of(a);
    Shape other = s;
    switch (uniform(0, 2)) {  // broadcasting: per channel, a scalar-like tensor, or equal shapes
      case 0:
        if (s.size() == 4) other = {1, s[1], 1, 1};
        break;
      case 1: other = Shape(s.size(), 1); break;
      default: break;
    }
    const ExprId b = uniform(0, 1) ? leaf(other, true) : leaf(other, false);
    add_op(pick({OpKind::EwAdd, OpKind::EwMul, OpKind::EwSub}), {}, {a, b});
  }
  void layout() {
    const ExprId a = any_tensor();
    const Shape s = shape_of(a);
    if (s.empty()) return;
    const int axis = uniform(0, static_cast<int>(s.size()) - 1);
    switch (uniform(0, 2)) {
      case 0: {
        Shape t = s;
        t[axis] = uniform(1, 3);
        add_op(OpKind::Concat, {uniform(0, 1) ? axis : axis - static_cast<int>(s.size())}, {a, leaf(t, false)});
        break;
      }
      case 1:
        if (s[axis] >= 2) add_op(OpKind::Split, {axis, uniform(0, 1), 0}, {a, leaf({uniform(1, static_cast<int>(s[axis]) - 1)}, true)});
        break;
      default: {
        std::vector<int64_t> perm(s.size());
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::shuffle(perm.begin(), perm.end(), rng_);
        add_op(OpKind::Transpose, perm, {a});
      }
    }
  }

  void step() {
    switch (uniform(0, 9)) {
      case 0: case 1: case 2: convs(); break;
      case 3: pool(); break;
      case 4: matmuls(); break;
      case 5: case 6: elementwise(); break;
      case 7: layout(); break;
      default: add_op(pick({OpKind::Relu, OpKind::Tanh, OpKind::Sigmoid}), {}, {ops_.empty() ? image() : ops_.back()});
    }
  }
};

/// The value of one e-node with its children's classes' values as operands.
Tensor<double> node_value(const EGraph& egraph, const ENode& n, const std::map<ClassId, Tensor<double>>& values,
                          const std::map<std::string, Tensor<double>>& leaves) {
  if (n.op == OpKind::Input || n.op == OpKind::Weight) return leaves.at(n.name);
  Expr one;
  std::map<std::string, Tensor<double>> operands;
  std::vector<ExprId> children;
  for (size_t k = 0; k < n.children.size(); ++k) {
    const std::string name = "c" + std::to_string(k);
    children.push_back(one.add(ExprNode{OpKind::Input, egraph.shape(n.children[k]), {}, name}));
    operands.emplace(name, values.at(egraph.find(n.children[k])));
  }
  one.add_root(one.add(n.op, n.attrs, std::move(children)));
  return evaluate<double>(one, Arith<double>{}, operands).at(0);
}

double difference(const Tensor<double>& a, const Tensor<double>& b) {
  if (a.shape != b.shape) return INFINITY;
  double err = 0;
  for (size_t i = 0; i < a.data.size(); ++i) err = std::max(err, std::abs(a.data[i] - b.data[i]) / (1 + std::abs(a.data[i])));
  return err;
}

struct Outcome {
  size_t graphs = 0, grown = 0, nodes_checked = 0, wrong_nodes = 0, wrong_graphs = 0;
  std::map<std::string, size_t> wrong_by_rule;  // the rule that made each wrong e-node
  std::string first_wrong;                      // the first graph with a wrong e-node, and the node
};

/// Saturates `graphs` random graphs with `rules` and checks that every e-node computes its class's value.
/// Class values come bottom-up: a class takes the value of the first of its e-nodes whose operands are known,
/// and every other e-node is compared with it, so an e-graph whose classes are all consistent is one whose
/// every extraction computes the original graph's values.
Outcome check_every_alternative(const RuleCorpus& rules, int graphs, uint32_t seed) {
  std::mt19937 rng(seed);
  ConvGraphGenerator gen(rng);
  const auto compiled = std::make_shared<const CompiledRules>(rules.rules, false);
  Outcome out;
  for (int trial = 0; trial < graphs; ++trial) {
    const Expr graph = gen.generate();
    const auto leaves = test::random_leaves(graph, rng);
    EGraph egraph;
    egraph.add_expr(graph);
    Runner runner(compiled, RunnerConfig{.node_limit = 2'000, .iter_limit = 4, .time_limit_s = 1e9});
    runner.run(egraph);
    ++out.graphs;
    out.grown += egraph.num_nodes() > graph.size();
    std::map<ClassId, Tensor<double>> values;
    bool wrong = false;
    for (bool progress = true; progress;) {
      progress = false;
      for (ClassId c : egraph.class_ids()) {
        if (values.contains(c)) continue;
        for (NodeId id : egraph.eclass(c).nodes) {
          const ENode& n = egraph.node(id);
          bool ready = true;
          for (ClassId ch : n.children) ready = ready && values.contains(egraph.find(ch));
          if (!ready) continue;
          values.emplace(c, node_value(egraph, n, values, leaves));
          progress = true;
          break;
        }
      }
    }
    // Every e-node against its class: all operands have values now (the input graph's classes are acyclic).
    for (ClassId c : egraph.class_ids()) {
      if (!values.contains(c)) continue;
      for (NodeId id : egraph.eclass(c).nodes) {
        const ENode& n = egraph.node(id);
        bool ready = true;
        for (ClassId ch : n.children) ready = ready && values.contains(egraph.find(ch));
        if (!ready) continue;
        ++out.nodes_checked;
        if (difference(values.at(c), node_value(egraph, n, values, leaves)) < 1e-8) continue;
        ++out.wrong_nodes;
        wrong = true;
        const std::string rule = egraph.origin(id) ? rules.rules[egraph.origin(id)->value].id : "(input graph)";
        ++out.wrong_by_rule[rule];
        if (out.first_wrong.empty())
          out.first_wrong = "trial " + std::to_string(trial) + ": " + print_graph(graph) + "\n  a " +
                            std::string(op_name(n.op)) + " e-node made by " + rule + " differs from its class";
      }
    }
    out.wrong_graphs += wrong;
  }
  return out;
}

RuleCorpus corpus_both_ways() {
  RuleCorpus corpus = load_corpus(std::filesystem::path(TEQ_SOURCE_DIR) / "corpus" / "rules.json");
  add_reversed_rules(corpus);  // eqsat-run's default, --both-ways
  return corpus;
}

void print(const char* what, const Outcome& o) {
  std::printf("%s: %zu graphs, %zu grew, %zu e-nodes checked, %zu wrong in %zu graphs\n", what, o.graphs, o.grown,
              o.nodes_checked, o.wrong_nodes, o.wrong_graphs);
  for (const auto& [rule, n] : o.wrong_by_rule) std::printf("  wrong e-nodes made by %s: %zu\n", rule.c_str(), n);
}

constexpr int kGraphs = 1000;

TEST(CorpusScopeProperty, EveryAlternativeComputesTheOriginal) {
  const Outcome o = check_every_alternative(corpus_both_ways(), kGraphs, 42);
  print("corpus both ways", o);
  EXPECT_EQ(o.wrong_nodes, 0u) << o.first_wrong;
  EXPECT_GT(o.grown, kGraphs / 2u);  // the corpus really rewrote these graphs
}

// The same graphs with every rule's scope widened to all groupings of its convolutions: the rewriters'
// behaviour before they checked both sides of a rule against its verified groupings. Wrong e-nodes appear,
// so the test above would have failed then.
TEST(CorpusScopeProperty, FailsWithTheScopeCheckWidened) {
  RuleCorpus corpus = load_corpus(std::filesystem::path(TEQ_SOURCE_DIR) / "corpus" / "rules.json");
  for (Rule& rule : corpus.rules)
    if (has_scoped_convs(rule)) rule.conv_groupings = all_groupings(rule);
  add_reversed_rules(corpus);
  const Outcome o = check_every_alternative(corpus, kGraphs, 42);
  print("scope widened", o);
  EXPECT_GT(o.wrong_nodes, 0u);
}

}  // namespace
}  // namespace teq
