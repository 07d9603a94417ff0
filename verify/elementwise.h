// Element-wise proof of a rule on concrete shapes: for each shape assignment (verify/shape_assign.h), every
// output element of both sides is built as a Z3 term over symbolic real inputs through the shared operator
// semantics (evaluate<z3::expr>), and Z3 decides whether any pair can differ. Proves "equal for these
// shapes", not "for all shapes" (that is verify/axioms.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <z3++.h>

#include "rules/corpus.h"
#include "verify/counterexample.h"
#include "verify/shape_assign.h"

namespace teq {

/// How an unknown verdict starts when no shape assignment exists in the rule's scope (rules/rule_scope.h):
/// rulegen then looks for the groupings the rule holds at.
inline constexpr std::string_view kNoAssignmentInScope = "no shape assignment in the rule's scope";

struct ElementwiseOptions {
  /// Z3 resource limit per query (one output element pair on one shape assignment): the budget that decides
  /// "unknown". It counts Z3's work, not seconds, so a verdict is the same on an idle and a loaded machine
  /// (and rulegen's sharded and unsharded runs agree). 0 = unbounded. rulegen keeps a rule only if it is
  /// proved within 5'000'000 (synth/prove.h); the default leaves room above that.
  unsigned rlimit = 20'000'000;
  /// Wall-clock guard for the whole rule, a last resort against a runaway proof: checked between queries
  /// (never given to Z3), and a rule stopped by it is unknown with a detail that says so, because such a
  /// verdict depends on the machine. 0 = no guard.
  unsigned timeout_ms = 120'000;
  ShapeSearchOptions shapes;
  /// Before Z3, evaluate both sides in double on random small integers: a wrong rule is usually caught
  /// there in microseconds, with a counterexample that holds for the real tanh/sigmoid too.
  bool random_probe = true;
  /// Also probe (and look for a shape mismatch) on larger dimensions (`wide_dims` first, up to
  /// `wide_max_elements` per tensor; double evaluation only, no Z3): the proofs' small shapes hide rules
  /// that hold only on 1x1 or 2x2 spatial extents or when a split's cut happens to fall on an operand's
  /// edge (8 such rules had passed into corpus/rules.json).
  bool wide_probe = true;
  std::vector<int64_t> wide_dims = {7, 9, 8, 6, 5, 4, 3, 2, 1};
  int64_t wide_max_elements = 20'000;
  /// Also probe (double evaluation, no Z3) the assignments near the proof's: each dimension set to every
  /// size from 1 to `neighbor_max_size`, alone and with every dimension of the same size, where the rule can
  /// apply (sides of equal shape, convolutions on a weight of free shape grouped as in the proof). Catches a
  /// rule that holds only because the search tied two unrelated extents (a split cut at a leaf's extent that
  /// equals an operand's) or only on small extents (pool idempotence); at most `neighbor_max_probes`
  /// assignments per rule, a count.
  bool neighbor_probe = true;
  int64_t neighbor_max_size = 12;
  int neighbor_max_probes = 4096;
  /// Also check one assignment in which every convolution is grouped (groups >= 2), when one exists.
  bool grouped_conv = false;
  /// How many of the shape assignments Z3 proves (0 = all); the others are still probed in double (random,
  /// wide and neighbour probes). One for the axiom instances (verify/axioms.h): a law's instance is a
  /// documented law at given attributes, its check a guard against a mistyped law, and Z3 on three
  /// assignments was a quarter of the gate's time.
  int z3_assignments = 0;
  /// Also reject a rule whose sides are well-shaped with different shapes once one dimension of a proof's
  /// assignment is moved (to each size up to `neighbor_max_size`): it holds only where unrelated extents
  /// agree. The optimizer applies a rule only where its sides' shapes agree, so such a rule is sound there,
  /// but of little general use: `ruleverify --strict-shapes` and `rulegen --strict-shapes` report it.
  /// corpus/rules.json has about 200 such rules (a split cut at an operand's extent that equals the cut's).
  bool coincidence_is_wrong = false;
  /// Reject a rule whose sides can be well-shaped together with different shapes. Off only for
  /// conditional statements whose condition is "the shapes agree" (the split laws of verify/axioms.h).
  bool shape_mismatch_is_wrong = true;
};

struct ElementwiseResult {
  VerifyStatus status = VerifyStatus::Unknown;
  std::vector<VarShapes> shapes;            // the assignments checked
  std::optional<Counterexample> counterexample;
  std::string detail;                       // why unknown (resource limit, guard, no shapes) or what was wrong
  int solver_calls = 0;                     // assignments that simplify() alone did not close
  /// From refute_elementwise: shapes were found and no probe refuted the rule, so it awaits a proof (its
  /// status is still Unknown); false when the first stage decided (Wrong) or could not go on (no shapes, guard).
  bool awaiting_proof = false;
};

/// Proves rule.lhs[i] == rule.rhs[i] for every i, element by element, on several shape assignments.
/// Verified: unsat on every assignment. Wrong: a counterexample (or roots of different shapes).
/// Unknown: a query exceeded the rlimit or Z3 gave up, the wall-clock guard stopped the rule, or no
/// assignment makes every pattern well-shaped. Example:
///   z3::context ctx;
///   auto r = prove_elementwise(make_rule("c", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"}), ctx, {});
///   // r.status == VerifyStatus::Verified
ElementwiseResult prove_elementwise(const Rule& rule, z3::context& ctx, const ElementwiseOptions& options = {});

/// prove_elementwise in its two stages. The first searches the shape assignments and looks for a
/// counterexample in double (no Z3): Wrong with a counterexample, Unknown with a detail (no shapes, guard),
/// or Unknown with `awaiting_proof` and the assignments in `shapes`, which the second stage
/// then proves with Z3. Between them ruleverify tries the shape-generic proof (verify/prover.h), which makes
/// the second stage unnecessary when it succeeds.
ElementwiseResult refute_elementwise(const Rule& rule, const ElementwiseOptions& options = {});
ElementwiseResult prove_unrefuted(const Rule& rule, z3::context& ctx, const ElementwiseOptions& options,
                                        ElementwiseResult refutation);

/// Evaluates both sides of `rule` in double on `inputs`; the index of the first output pair whose elements
/// differ (relative tolerance `tol`), or nullopt. Used to replay counterexamples.
struct Difference {
  size_t output;
  std::vector<int64_t> index;
  double lhs, rhs;
};
std::optional<Difference> find_difference(const Rule& rule, const std::map<std::string, Tensor<double>>& inputs,
                                          double tol = 1e-6);

}  // namespace teq
