// Prover: decides whether a candidate rule holds, by Z3 over the shared semantics (Arith<z3::expr>):
// every output element of each lhs/rhs pair is built as a term over symbolic inputs, on each of the
// leaf types' proof shapes (small, distinct dimensions), and Z3 is asked whether any element can differ.
// This is a local adapter: verify/ will own the project's prover (and axioms); rulegen switches to it
// once its API lands. Thread-safe: each call uses its own Z3 context.
#pragma once

#include <string>
#include <vector>

#include "rules/corpus.h"
#include "synth/vocabulary.h"

namespace teq::synth {

struct ProveConfig {
  /// Z3 resource limit per query (one output element). A resource limit, not a timeout: Z3's timeouts
  /// start timer threads that deadlocked when several threads proved at once, and rlimit is
  /// deterministic (same verdicts on any machine load).
  unsigned rlimit = 2'000'000;
};

struct ProofResult {
  std::string status = "unknown";  // "verified", "wrong", "unknown"
  std::string reason;              // why not verified: counterexample element, timeout, ill-shaped
  double ms = 0;
};

/// Proves every lhs[i] == rhs[i] of `rule` on each proof-shape assignment of its variables
/// (typing.h). "verified" only if all are unsat.
ProofResult prove_rule(const Rule& rule, const std::vector<LeafType>& types, const ProveConfig& config = {});

}  // namespace teq::synth
