// Element-wise proof of a rule on concrete shapes: for each shape assignment (verify/shape_assign.h), every
// output element of both sides is built as a Z3 term over symbolic real inputs through the shared operator
// semantics (evaluate<z3::expr>), and Z3 decides whether any pair can differ. Proves "equal for these
// shapes", not "for all shapes" (that is verify/axioms.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <z3++.h>

#include "rules/corpus.h"
#include "verify/counterexample.h"
#include "verify/shape_assign.h"

namespace teq {

struct ElementwiseOptions {
  /// Budget for the whole rule (all shape assignments); Z3 gets what is left of it.
  unsigned timeout_ms = 10'000;
  /// When non-zero, each Z3 query is bounded by this resource limit instead of the remaining time: a
  /// deterministic budget (the same verdict on any machine load), which rulegen needs so that sharded and
  /// unsharded runs agree. timeout_ms is then checked only between queries.
  unsigned rlimit = 0;
  ShapeSearchOptions shapes;
  /// Before Z3, evaluate both sides in double on random small integers: a wrong rule is usually caught
  /// there in microseconds, with a counterexample that holds for the real tanh/sigmoid too.
  bool random_probe = true;
  /// Also check one assignment in which every convolution is grouped (groups >= 2), when one exists.
  bool grouped_conv = false;
  /// Reject a rule whose sides can be well-shaped together with different shapes. Off only for
  /// conditional statements whose condition is "the shapes agree" (the split laws of verify/axioms.h).
  bool shape_mismatch_is_wrong = true;
};

struct ElementwiseResult {
  VerifyStatus status = VerifyStatus::Unknown;
  std::vector<VarShapes> shapes;            // the assignments checked
  std::optional<Counterexample> counterexample;
  std::string detail;                       // why unknown (timeout, no shapes) or what was wrong
  int solver_calls = 0;                     // assignments that simplify() alone did not close
};

/// Proves rule.lhs[i] == rule.rhs[i] for every i, element by element, on several shape assignments.
/// Verified: unsat on every assignment. Wrong: a counterexample (or roots of different shapes).
/// Unknown: timeout, Z3 gave up, or no assignment makes every pattern well-shaped. Example:
///   z3::context ctx;
///   auto r = prove_elementwise(make_rule("c", {"(ewadd ?a ?b)"}, {"(ewadd ?b ?a)"}), ctx, {});
///   // r.status == VerifyStatus::Verified
ElementwiseResult prove_elementwise(const Rule& rule, z3::context& ctx, const ElementwiseOptions& options = {});

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
