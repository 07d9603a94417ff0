// Shape-generic proofs, in the style of TASO's verify.py: operator axioms (matmul associativity and
// distributivity, conv linearity, concat/split laws, activation fusion, ...) as equations over an
// uninterpreted tensor sort, and a Z3 proof (E-matching) that a rule's sides are equal under them.
// Axioms are templates whose attributes (axes, conv windows, kernels) are filled in with the values the
// rule uses; each instance is itself proved element-wise on several shapes (verify/elementwise.h) before
// Z3 may use it, and instances that fail are left out. Split laws carry their side condition on shapes
// (the cut equals the first part's extent) through uninterpreted dim/rank functions with per-operator facts.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <z3++.h>

#include "rules/corpus.h"
#include "verify/elementwise.h"

namespace teq {

/// An axiom template: patterns with placeholders for attributes ({X} {Y} axes,
/// {C} conv window "sh sw ph pw", {A} activation, {K} kernel "kh kw", {P} pool window "kh kw sh sw ph pw",
/// {Q} split part).
/// `guard`: the law's side condition on extents, conjuncts separated by ';', each `a = b`, `a < b` or
/// `a <= b` over integers and `?v.N` (dim N of ?v; for a variable used only as a split's reference, the cut
/// itself). Example: the split laws' "?r.0 = ?x.{X}" (the cut is the first part's extent). Every law is
/// also guarded by the well-shapedness of the splits on both sides (0 < cut < extent), and its guard must
/// make both sides' shape facts agree (checked for every instance before Z3 may use it).
/// `nonneg`: variables (names without '?', separated by spaces) the law assumes non-negative, stated to Z3
/// as relu(v) = v and checked element-wise with each such ?v replaced by (relu ?v), which is the same
/// statement: a tensor equal to its relu is the relu of itself.
struct AxiomTemplate {
  const char* id;
  const char* lhs;
  const char* rhs;
  const char* guard = "";
  const char* nonneg = "";
};
std::span<const AxiomTemplate> axiom_templates();

struct AxiomOptions {
  /// Z3 resource limit of the proof, per output (each is its own query). E-matching on laws like
  /// commutativity never runs out of new terms, so a rule the laws do not cover uses the whole budget: it
  /// must be small. 493 rules of the generated corpus are proved within 50'000, 533 within 100'000, 549
  /// within 200'000 (docs/ruleverify.md).
  unsigned rlimit = 200'000;
  /// Of the consistency check (the same laws must not refute a satisfiable goal); 0: the proof's budget.
  /// The check almost never ends before its budget (E-matching does not saturate), so it cost 40% of the
  /// gate's proofs at the proof's budget. A quarter of it: the inconsistency it used to find (shape facts
  /// of ill-shaped terms against unguarded laws) is ruled out by construction now (encode_law's guards,
  /// tested at 1'000'000 in tests/verify/axiom_laws_test.cpp), and no proved rule of the anchors or the
  /// generated corpus is refuted even at 10x the proof's budget (docs/ruleverify.md).
  unsigned consistency_rlimit = 50'000;
  ElementwiseOptions elementwise;  // for proving the axiom instances themselves
};

struct AxiomProof {
  bool proved = false;
  std::vector<std::string> axioms;  // the proved instances offered to Z3 ("matmul-assoc", "split-concat-0[X=1]")
  std::vector<std::string> rejected;  // instances that did not hold element-wise (left out)
  std::string detail;               // why not proved
};

/// Proves, element-wise, every axiom instance that `rules` may use and caches the verdicts for
/// prove_from_axioms: sorted, in fixed batches of 16 per fresh Z3 context (verify/batches.h), over `jobs`
/// threads (0 = all cores), so that a verdict depends on the rule list, not on thread scheduling. Without
/// it, prove_from_axioms proves each instance it meets in a context of its own (slower: contexts are costly).
void prepare_axiom_instances(std::span<const Rule> rules, const ElementwiseOptions& options = {}, int jobs = 0);

/// Tries to prove lhs[i] == rhs[i] for all i from the axioms. Thread-safe for distinct contexts; axiom
/// instances proved element-wise are cached process-wide. Example:
///   z3::context ctx;
///   AxiomProof p = prove_from_axioms(make_rule("t", {"(ewadd ?a (ewadd ?b ?c))"}, {"(ewadd (ewadd ?c ?b) ?a)"}), ctx);
///   // p.proved: commutativity + associativity, for every shape
/// `shapes`: the rule's well-shaped assignments (the element-wise proof's), which fix the ranks the proof
/// covers; searched when empty.
AxiomProof prove_from_axioms(const Rule& rule, z3::context& ctx, const AxiomOptions& options = {},
                             std::span<const VarShapes> shapes = {});

/// Why the law `law` (one lhs, one rhs) under `guard` (AxiomTemplate::guard syntax, placeholders filled in)
/// may equate terms whose shape facts differ: "" when the guard, the ranks its variables take where the
/// shape search finds it well-shaped and its splits being well-shaped imply equal ranks and extents of
/// both sides. Every axiom instance passes this check before Z3 may use it; e.g. split-concat-0 without
/// its guard "?r.R = ?x.X" fails it.
std::string axiom_shape_disagreement(const Rule& law, const std::string& guard);

/// The shape-generic proofs trust per-operator facts about rank and dimensions (the operators' shape rules
/// written as Z3 formulas). This checks them against concrete shapes: `shapes` gives every node of `term`
/// its shape (infer_shapes with the operators' own shape rules); the facts of every operator in `term`,
/// with those shapes asserted, must not be contradictory. Returns what contradicts, or an empty string.
/// Tests run it over every operator on random well-shaped shapes: a wrong fact would let Z3 prove a
/// false rule.
std::string shape_facts_contradiction(const Expr& term, std::span<const Shape> shapes, unsigned rlimit = 200'000);

}  // namespace teq
