// The shape facts the shape-generic proofs trust (verify/axioms/shape_facts.cpp states each operator's result rank and
// dimensions as Z3 formulas) against the operators' own shape rules (infer_shape in rules/ops): on random
// well-shaped shapes of every operator with facts, the facts must hold. A wrong fact is worse than a
// missing one: Z3 would use it to prove a rule that is false.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "rules/evaluator.h"
#include "rules/sexpr.h"
#include "verify/axioms.h"

namespace teq {
namespace {

struct ShapeCase {
  std::string term;
  VarShapes vars;
};

void PrintTo(const ShapeCase& c, std::ostream* os) { *os << c.term; }

/// `vars` with every dimension above 1 renamed to a random value in [2, 7], equal dimensions to equal values
/// (so that the relations a case needs, a matmul's inner extents or a concat's other axes, survive);
/// nullopt if the operators' shape rules reject the result (a kernel larger than the input, say).
std::optional<std::pair<VarShapes, std::vector<Shape>>> random_variant(const Expr& e, const VarShapes& vars,
                                                                       std::mt19937& rng) {
  std::map<int64_t, int64_t> renamed;
  std::uniform_int_distribution<int64_t> dim(2, 7);
  VarShapes out = vars;
  for (auto& [name, shape] : out)
    for (int64_t& d : shape)
      if (d > 1) d = renamed.try_emplace(d, dim(rng)).first->second;
  std::optional<std::vector<Shape>> shapes = try_infer_shapes(e, out);
  if (!shapes) return std::nullopt;
  return std::pair{out, *shapes};
}

class ShapeFacts : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ShapeFacts, HoldOnRandomWellShapedShapes) {
  const ShapeCase& c = GetParam();
  const Expr e = parse_expr(c.term);
  // The case's own shapes first: they must be well-shaped, or the case tests nothing.
  std::optional<std::vector<Shape>> own = try_infer_shapes(e, c.vars);
  ASSERT_TRUE(own) << c.term << " is ill-shaped on the case's shapes";
  EXPECT_EQ(shape_facts_contradiction(e, *own), "") << c.term;
  std::mt19937 rng(std::hash<std::string>{}(c.term) & 0xffffffff);
  int checked = 0;
  for (int attempt = 0; attempt < 40 && checked < 4; ++attempt) {
    auto variant = random_variant(e, c.vars, rng);
    if (!variant) continue;
    ++checked;
    EXPECT_EQ(shape_facts_contradiction(e, variant->second), "") << c.term;
  }
  EXPECT_GT(checked, 0) << "no random variant of " << c.term << " was well-shaped";
}

INSTANTIATE_TEST_SUITE_P(
    EveryOperatorWithFacts, ShapeFacts,
    ::testing::Values(
        ShapeCase{"(ewadd ?a ?b)", {{"a", {2, 3}}, {"b", {2, 3}}}},
        ShapeCase{"(ewadd ?a ?b)", {{"a", {4, 2, 3}}, {"b", {4, 2, 3}}}},
        ShapeCase{"(ewmul ?a ?b)", {{"a", {2, 3, 1}}, {"b", {2, 3, 1}}}}, ShapeCase{"(ewsub ?a ?b)", {{"a", {3}}, {"b", {3}}}},
        ShapeCase{"(ewdiv ?a ?b)", {{"a", {2, 5}}, {"b", {2, 5}}}}, ShapeCase{"(smul ?a ?s)", {{"a", {2, 3}}, {"s", {}}}},
        ShapeCase{"(relu ?a)", {{"a", {3, 4}}}}, ShapeCase{"(tanh ?a)", {{"a", {2, 2, 3}}}},
        ShapeCase{"(sigmoid ?a)", {{"a", {5}}}}, ShapeCase{"(gelu ?a)", {{"a", {2, 6}}}},
        ShapeCase{"(sqrt ?a)", {{"a", {3, 2}}}}, ShapeCase{"(erf ?a)", {{"a", {4}}}},
        ShapeCase{"(noop ?a ?b)", {{"a", {2, 3}}, {"b", {4}}}},
        ShapeCase{"(softmax 1 ?a)", {{"a", {2, 5}}}},
        ShapeCase{"(batchnorm ?x ?s ?b ?m ?v)", {{"x", {1, 3, 4, 4}}, {"s", {3}}, {"b", {3}}, {"m", {3}}, {"v", {3}}}},
        ShapeCase{"(ones ?a)", {{"a", {2, 3}}}}, ShapeCase{"(eye ?a)", {{"a", {2, 3}}}},
        ShapeCase{"(concat 1 ?a ?b ?a)", {{"a", {2, 1, 2}}, {"b", {2, 3, 2}}}},
        ShapeCase{"(concat 0 ?a ?b)", {{"a", {2, 4}}, {"b", {3, 4}}}},
        ShapeCase{"(split 0 0 1 ?a ?r)", {{"a", {5, 2}}, {"r", {2, 3}}}},
        ShapeCase{"(split 0 1 1 ?a ?r)", {{"a", {5, 2}}, {"r", {2, 3}}}},
        ShapeCase{"(split 1 1 0 ?a ?r)", {{"a", {2, 7}}, {"r", {3, 3}}}},
        ShapeCase{"(slice 1 1 3 ?a)", {{"a", {2, 4}}}}, ShapeCase{"(slice 0 0 1 ?a)", {{"a", {3, 4}}}},
        ShapeCase{"(matmul 0 ?a ?b)", {{"a", {2, 3}}, {"b", {3, 4}}}},
        ShapeCase{"(matmul 2 ?a ?b)", {{"a", {5, 2, 3}}, {"b", {3, 4}}}},
        ShapeCase{"(matmul 0 ?a ?b)", {{"a", {2, 1, 2, 3}}, {"b", {4, 3, 5}}}},  // broadcast batch dims
        ShapeCase{"(conv2d 1 1 0 0 0 ?x ?w)", {{"x", {1, 2, 6, 6}}, {"w", {3, 2, 3, 3}}}},
        ShapeCase{"(conv2d 1 1 -1 -1 2 ?x ?w)", {{"x", {2, 2, 5, 4}}, {"w", {4, 2, 3, 3}}}},
        ShapeCase{"(conv2d 2 2 -1 -1 0 ?x ?w)", {{"x", {1, 2, 5, 6}}, {"w", {2, 2, 3, 3}}}},
        ShapeCase{"(conv2d 1 2 1 0 0 ?x ?w)", {{"x", {2, 4, 5, 6}}, {"w", {4, 2, 3, 1}}}},  // grouped
        ShapeCase{"(conv2d 1 1 1 1 0 2 2 ?x ?w)", {{"x", {1, 2, 7, 7}}, {"w", {3, 2, 3, 3}}}},  // dilated
        ShapeCase{"(enlarge 3 5 ?w)", {{"w", {2, 1, 1, 3}}}},
        ShapeCase{"(merge 2 ?w)", {{"w", {4, 2, 3, 3}}}},
        ShapeCase{"(maxpool 2 2 2 2 -1 -1 ?x)", {{"x", {1, 2, 5, 5}}}},
        ShapeCase{"(maxpool 3 3 1 1 1 1 ?x)", {{"x", {1, 1, 3, 4}}}},
        ShapeCase{"(avgpool 3 3 1 1 1 1 0 ?x)", {{"x", {2, 2, 3, 3}}}},
        ShapeCase{"(avgpool 2 2 2 2 -1 -1 1 ?x)", {{"x", {1, 3, 5, 4}}}},
        ShapeCase{"(global_avgpool ?x)", {{"x", {2, 2, 3, 2}}}},
        ShapeCase{"(iconv 3 1 ?a)", {{"a", {1, 2, 4, 4}}}}, ShapeCase{"(pool_kernel 3 3 ?a)", {{"a", {1, 2, 4, 4}}}},
        ShapeCase{"(transpose 1 0 ?a)", {{"a", {2, 3}}}}, ShapeCase{"(transpose 2 0 1 ?a)", {{"a", {2, 3, 4}}}},
        ShapeCase{"(reshape 3 4 ?a)", {{"a", {2, 6}}}},
        ShapeCase{"(broadcast 2 3 4 ?a)", {{"a", {3, 1}}}},
        // Compositions: the facts of nested operators together.
        ShapeCase{"(split 1 0 1 (concat 1 (matmul 0 ?x ?w) (matmul 0 ?x ?v)) ?w)",
                  {{"x", {2, 3}}, {"w", {3, 4}}, {"v", {3, 5}}}},
        ShapeCase{"(conv2d 1 1 -1 -1 0 ?x (enlarge 3 3 (merge 2 ?w)))", {{"x", {1, 4, 5, 5}}, {"w", {4, 2, 1, 1}}}}));

// The check can fail: shapes that break an operator's shape rule contradict its facts.
TEST(ShapeFactsCheck, RejectsShapesThatBreakTheRule) {
  const Expr mm = parse_expr("(matmul 0 ?a ?b)");
  std::vector<Shape> shapes = infer_shapes(mm, {{"a", {2, 3}}, {"b", {3, 4}}});
  EXPECT_EQ(shape_facts_contradiction(mm, shapes), "");
  shapes[mm.root().value] = {2, 5};  // the result's last extent is b's, 4
  EXPECT_NE(shape_facts_contradiction(mm, shapes), "");

  const Expr cat = parse_expr("(concat 0 ?a ?b)");
  shapes = infer_shapes(cat, {{"a", {2, 4}}, {"b", {3, 4}}});
  shapes[cat.root().value] = {4, 4};  // 2 + 3 rows
  EXPECT_NE(shape_facts_contradiction(cat, shapes), "");
}

}  // namespace
}  // namespace teq
