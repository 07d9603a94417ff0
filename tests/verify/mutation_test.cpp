// Mutation test of the verifier: small semantic edits of corpus rules (swapped operands, another concat/split
// axis, a dropped or changed fused activation, swapped outputs of a multi-pattern rule, another transpose
// permutation) must each be decided: rejected with a counterexample that really separates the two sides in
// the double reference evaluator, or proved equivalent. Counterexamples here come from Z3 models (the
// random probe is off), so this checks the models, not the probe.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "rules/corpus.h"
#include "rules/sexpr.h"
#include "verify/elementwise.h"
#include "verify/prover.h"

namespace teq {
namespace {

struct Mutant {
  std::string what;
  Rule rule;
};

/// Copy of `e` with node `target` replaced by `edit(node)` (children are remapped first).
Expr rebuild(const Expr& e, size_t target, const std::function<void(ExprNode&)>& edit) {
  Expr out;
  std::vector<ExprId> map(e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    ExprNode n = e.nodes()[i];
    for (ExprId& c : n.children) c = map[c.value];
    if (i == target) edit(n);
    map[i] = out.add(std::move(n));
  }
  for (ExprId r : e.roots()) out.add_root(map[r.value]);
  return out;
}

std::string text_of(const Rule& r) {
  std::string s;
  for (const Expr& e : r.lhs) s += to_sexpr(e, e.root()) + ";";
  s += "=>";
  for (const Expr& e : r.rhs) s += to_sexpr(e, e.root()) + ";";
  return s;
}

/// Every single-edit mutant of the rule's right-hand sides, plus swapped outputs for multi-pattern rules.
std::vector<Mutant> mutants_of(const Rule& rule) {
  std::vector<Mutant> out;
  auto add = [&](std::string what, size_t side, Expr e) {
    Rule m = rule;
    m.id = rule.id + "/" + what;
    m.rhs[side] = std::move(e);
    out.push_back({std::move(what), std::move(m)});
  };
  for (size_t side = 0; side < rule.rhs.size(); ++side) {
    const Expr& e = rule.rhs[side];
    for (size_t i = 0; i < e.size(); ++i) {
      const ExprNode& n = e.nodes()[i];
      switch (n.op) {
        case OpKind::Matmul:
        case OpKind::EwSub:
        case OpKind::EwDiv:
          add("swap-operands", side, rebuild(e, i, [](ExprNode& x) { std::swap(x.children[0], x.children[1]); }));
          break;
        case OpKind::Concat:
          add("swap-operands", side, rebuild(e, i, [](ExprNode& x) { std::swap(x.children[0], x.children[1]); }));
          add("concat-axis", side, rebuild(e, i, [](ExprNode& x) { x.attrs[0] = x.attrs[0] == 0 ? 1 : x.attrs[0] - 1; }));
          break;
        case OpKind::Split:
          add("split-part", side, rebuild(e, i, [](ExprNode& x) { x.attrs[1] = 1 - x.attrs[1]; }));
          add("split-axis", side, rebuild(e, i, [](ExprNode& x) { x.attrs[0] = x.attrs[0] == 0 ? 1 : x.attrs[0] - 1; }));
          break;
        case OpKind::Transpose:
          // Rotate the permutation by one place: a different permutation of the same rank.
          add("transpose-perm", side, rebuild(e, i, [](ExprNode& x) {
                std::rotate(x.attrs.begin(), x.attrs.begin() + 1, x.attrs.end());
              }));
          break;
        case OpKind::Relu:
          add("drop-relu", side, rebuild(e, i, [](ExprNode& x) { x.op = OpKind::Noop; }));
          break;
        default: break;
      }
      if (n.op == OpKind::Matmul || n.op == OpKind::Conv2d) {
        size_t act = n.op == OpKind::Matmul ? 0 : 4;
        add("change-activation", side, rebuild(e, i, [act](ExprNode& x) { x.attrs[act] = x.attrs[act] == 0 ? 2 : 0; }));
      }
    }
  }
  if (rule.is_multi()) {
    Rule m = rule;
    std::swap(m.rhs[0], m.rhs[1]);
    m.id = rule.id + "/swap-outputs";
    out.push_back({"swap-outputs", std::move(m)});
  }
  // Drop mutants identical to the rule (e.g. a transpose rotation that is the same permutation).
  std::string original = text_of(rule);
  std::erase_if(out, [&](const Mutant& m) { return text_of(m.rule) == original; });
  return out;
}

TEST(Mutation, CorpusMutantsAreDecidedAndCounterexamplesReplay) {
  RuleCorpus corpus = load_corpus(std::string(TEQ_SOURCE_DIR) + "/tests/data/seed.json");
  z3::context ctx;
  ElementwiseOptions opt;
  opt.random_probe = false;  // every counterexample below is a Z3 model
  opt.timeout_ms = 20'000;
  opt.shapes.max_assignments = 2;
  std::set<std::string> rules_with_decided_mutant;
  int rejected = 0, equivalent = 0, ill_shaped = 0, replayed = 0;
  for (const Rule& rule : corpus.rules) {
    std::vector<Mutant> ms = mutants_of(rule);
    // At most three mutants per rule keeps the test quick; take them spread over the kinds.
    if (ms.size() > 3) ms = {ms[0], ms[ms.size() / 2], ms.back()};
    for (const Mutant& m : ms) {
      SCOPED_TRACE(m.rule.id + ": " + text_of(m.rule));
      ElementwiseResult r = prove_elementwise(m.rule, ctx, opt);
      if (r.status == VerifyStatus::Unknown) {
        // Only a mutant that is never well-shaped may stay undecided (it can never apply).
        EXPECT_NE(r.detail.find("no shape assignment"), std::string::npos) << r.detail;
        ++ill_shaped;
        continue;
      }
      rules_with_decided_mutant.insert(rule.id);
      if (r.status == VerifyStatus::Verified) {
        ++equivalent;
        continue;
      }
      ++rejected;
      ASSERT_TRUE(r.counterexample.has_value()) << "wrong without a counterexample";
      const Counterexample& cex = *r.counterexample;
      if (cex.lhs_value.empty()) {
        // A shape counterexample: both sides well-shaped, with different shapes.
        bool differ = false;
        for (size_t i = 0; i < m.rule.lhs.size(); ++i) {
          auto l = infer_shapes(m.rule.lhs[i], cex.shapes), rr = infer_shapes(m.rule.rhs[i], cex.shapes);
          differ |= l[m.rule.lhs[i].root().value] != rr[m.rule.rhs[i].root().value];
        }
        EXPECT_TRUE(differ) << cex.note;
        continue;
      }
      EXPECT_EQ(cex.source, "z3 model");
      std::optional<Difference> d = find_difference(m.rule, cex.inputs);
      ASSERT_TRUE(d.has_value()) << "counterexample does not separate the sides in double:\n"
                                 << format_counterexample(cex);
      EXPECT_EQ(d->output, cex.output);
      ++replayed;
    }
  }
  std::cout << "mutants: " << rejected << " rejected (" << replayed << " replayed in double), " << equivalent
            << " proved equivalent, " << ill_shaped << " never well-shaped; rules covered: "
            << rules_with_decided_mutant.size() << "\n";
  EXPECT_GE(rules_with_decided_mutant.size(), 30u);
  EXPECT_GE(replayed, 30);
}

TEST(Mutation, AxiomsNeverProveAMutantZ3Refutes) {
  // ruleverify tries the proof for all shapes before Z3 on concrete shapes and skips the latter when the axioms
  // succeed, so an unsound law would let a wrong rule through. With the probes in double off, nothing but the
  // axioms stands between a wrong mutant and "verified": every mutant Z3 refutes element-wise must come out
  // wrong through the whole pipeline too, and no mutant may be proved from axioms and refuted by Z3.
  RuleCorpus corpus = load_corpus(std::string(TEQ_SOURCE_DIR) + "/tests/data/seed.json");
  z3::context ctx;
  ElementwiseOptions ew;
  ew.random_probe = false;
  ew.shapes.max_assignments = 2;
  VerifyOptions full;
  full.elementwise = ew;
  int wrong = 0, tried_by_axioms = 0;
  for (const Rule& rule : corpus.rules) {
    std::vector<Mutant> ms = mutants_of(rule);
    if (ms.size() > 3) ms = {ms[0], ms[ms.size() / 2], ms.back()};
    for (const Mutant& m : ms) {
      SCOPED_TRACE(m.rule.id + ": " + text_of(m.rule));
      if (prove_elementwise(m.rule, ctx, ew).status != VerifyStatus::Wrong) continue;
      ++wrong;
      const RuleReport r = verify_rule(m.rule, ctx, full);
      if (!r.axiom_failure.empty() || r.method == kMethodAxioms) ++tried_by_axioms;
      EXPECT_EQ(r.status, VerifyStatus::Wrong) << r.detail;
      EXPECT_NE(r.method, kMethodAxioms) << "proved for all shapes, refuted element-wise: an unsound law";
      EXPECT_EQ(r.detail.find("an axiom is unsound"), std::string::npos) << r.detail;
      EXPECT_TRUE(r.counterexample.has_value());
    }
  }
  std::cout << "wrong mutants: " << wrong << ", " << tried_by_axioms << " of them tried by the axioms first\n";
  EXPECT_GE(wrong, 30);
  EXPECT_GE(tried_by_axioms, 20) << "the axioms were not asked, so the test shows nothing";
}

}  // namespace
}  // namespace teq
