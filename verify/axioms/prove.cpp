// The shape-generic proof of a rule (verify/axioms.h): the proved instances of the laws it may use, its
// negated goal and the shape facts, in one Z3 query per output; then the consistency check.
#include "verify/axioms.h"

#include "verify/axioms/encoder.h"
#include "verify/axioms/instances.h"
#include "verify/axioms/laws.h"
#include "verify/axioms/shape_facts.h"

namespace teq {
namespace {

/// The proved instances of every template the rule may use, encoded; the others are listed in `proof`.
z3::expr_vector encode_laws(const Rule& rule, axioms::Encoder& enc, const AxiomOptions& options, AxiomProof& proof) {
  z3::context& ctx = enc.context();
  z3::expr_vector laws(ctx);
  for (const axioms::Instance& inst : axioms::instantiate(rule)) {
    axioms::InstanceVerdict verdict = axioms::check_instance(inst, options.elementwise);
    if (!verdict.holds) {
      proof.rejected.push_back(inst.id);
      continue;
    }
    proof.axioms.push_back(inst.id);
    for (const z3::expr& law : axioms::encode_law(inst, verdict, enc, ctx)) laws.push_back(law);
  }
  return laws;
}

}  // namespace

std::string axiom_shape_disagreement(const Rule& law, const std::string& guard) {
  std::vector<const Expr*> patterns{&law.lhs[0], &law.rhs[0]};
  const std::vector<VarShapes> shapes = find_shape_assignments(patterns, {}).assignments;
  const axioms::Guard parsed = axioms::parse_guard(guard);
  z3::context ctx;
  const std::string from_lhs = axioms::law_shape_disagreement(law, parsed, shapes, ctx, 0);
  return from_lhs.empty() ? from_lhs : axioms::law_shape_disagreement(law, parsed, shapes, ctx, 1);
}

AxiomProof prove_from_axioms(const Rule& rule, z3::context& ctx, const AxiomOptions& options,
                             std::span<const VarShapes> shapes) {
  std::vector<VarShapes> searched;
  if (shapes.empty()) {
    std::vector<Expr> conditions;
    std::vector<const Expr*> patterns = rule_patterns(rule, conditions);
    searched = find_shape_assignments(patterns, options.elementwise.shapes).assignments;
    shapes = searched;
  }
  AxiomProof proof;
  axioms::Encoder enc(ctx);
  z3::solver solver(ctx);
  // Resource limits, never timeouts: the verdict must not depend on the machine's load.
  z3::params p(ctx);
  p.set("rlimit", options.rlimit);
  p.set("mbqi", false);  // E-matching only: MBQI would search for models of the uninterpreted sort
  solver.set(p);
  z3::expr_vector laws = encode_laws(rule, enc, options, proof);
  axioms::Goal goal = axioms::encode_goal(rule, shapes, enc);
  const z3::expr_vector shape_facts = axioms::shape_facts(enc);
  // One query per output, each with the whole budget: a two-pattern rule's outputs are usually proved by
  // different laws, and one query that must refute their disjunction ran out of budget on rules whose every
  // step is a law (two-pattern splits of a pool or conv of a concat). Each in a reset solver, not after a
  // push: Z3's incremental solver ignored the resource limit on some rules of tests/data/seed.json.
  for (const z3::expr& equal : goal.equal) {
    solver.reset();
    solver.set(p);
    for (const z3::expr& a : laws) solver.add(a);
    for (const z3::expr& f : goal.facts) solver.add(f);
    for (const z3::expr& f : shape_facts) solver.add(f);
    solver.add(!equal);
    const z3::check_result res = solver.check();
    if (res != z3::unsat) {
      proof.detail = res == z3::sat ? "not derivable from the axioms"
                                    : "no proof from the axioms within --axiom-rlimit " + std::to_string(options.rlimit) +
                                          " (z3: " + solver.reason_unknown() + ")";
      return proof;
    }
  }
  proof.proved = true;
  // Sanity check: the same axioms and the same assumptions about the rule's shapes must not refute a goal
  // that is certainly satisfiable (a rule's lhs differing from a fresh tensor); if they do, the guarded
  // axioms or the assumptions are inconsistent here and prove nothing. (Before the laws were guarded by
  // their trigger side's well-shapedness, encode_law, this refuted rg-0495 and others at 6x the proof's
  // budget and passed at 1x: tests/verify/axiom_laws_test.cpp.)
  solver.reset();
  z3::params wide(ctx);
  wide.set("rlimit", options.consistency_rlimit != 0 ? options.consistency_rlimit : options.rlimit);
  wide.set("mbqi", false);
  solver.set(wide);
  for (const z3::expr& a : laws) solver.add(a);
  for (const z3::expr& f : goal.facts) solver.add(f);
  solver.add(goal.lhs0 != ctx.constant("fresh!", enc.tensor_sort()));
  for (const z3::expr& f : axioms::shape_facts(enc)) solver.add(f);
  if (solver.check() == z3::unsat) {
    proof.proved = false;
    proof.detail = "axioms inconsistent on this rule's terms";
  }
  return proof;
}

}  // namespace teq
