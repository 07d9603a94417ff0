#include <gtest/gtest.h>

#include "verify/axioms.h"

namespace teq {
namespace {

AxiomOptions quick() {
  AxiomOptions o;
  o.rlimit = 50'000;  // a resource limit, so the test's verdicts do not depend on the machine's load
  return o;
}

TEST(Axioms, ProvesRulesForAllShapes) {
  z3::context ctx;
  for (auto [l, r] : {std::pair{"(ewadd ?a (ewadd ?b ?c))", "(ewadd (ewadd ?c ?b) ?a)"},
                      {"(relu (conv2d 1 1 -1 -1 0 ?x (ewadd ?w ?v)))",
                       "(conv2d 1 1 -1 -1 2 ?x (ewadd ?v ?w))"},
                      {"(split 1 1 1 (concat 1 ?a ?b) ?a)", "?b"}}) {
    AxiomProof p = prove_from_axioms(make_rule("t", {l}, {r}), ctx);
    EXPECT_TRUE(p.proved) << l << " => " << r << ": " << p.detail;
    EXPECT_FALSE(p.axioms.empty());
  }
}

TEST(Axioms, DoesNotProveWrongOrUnderivableRules) {
  z3::context ctx;
  // Wrong: the axioms must not be able to derive it (they are consistent and each holds element-wise).
  AxiomProof wrong = prove_from_axioms(make_rule("t", {"(relu (ewadd ?a ?b))"}, {"(ewadd (relu ?a) (relu ?b))"}), ctx);
  EXPECT_FALSE(wrong.proved);
  // True for rank 3 but no axiom speaks about 3-d transposes: unproved, and in particular the rank-2
  // transpose law must not leak onto rank-3 tensors (an untyped axiom set would make this "provable").
  AxiomProof t3 = prove_from_axioms(make_rule("t", {"(transpose 1 2 0 (transpose 2 0 1 ?a))"}, {"?a"}), ctx,
                                    quick());
  EXPECT_FALSE(t3.proved);
}

TEST(Axioms, EveryTemplateInstanceUsedWasCheckedElementwise) {
  z3::context ctx;
  // A split whose cut comes from the wrong operand: split-concat instances hold only under their condition.
  // (The rule must be false where its sides have equal shapes, the only shapes a proof covers: `(split 1 0
  // 1 (concat 1 ?a ?b) ?b) => ?a` is true there.)
  AxiomProof p = prove_from_axioms(make_rule("t", {"(split 1 0 1 (concat 1 ?a ?b) ?c)"}, {"(split 1 0 1 ?b ?c)"}),
                                   ctx, quick());
  EXPECT_FALSE(p.proved);
  EXPECT_GE(axiom_templates().size(), 40u);
}

}  // namespace
}  // namespace teq
