// Shape-generic proofs: operator axioms in the style of TASO's verify.py (matmul associativity,
// distributivity, conv linearity, concat/split laws, activation fusion, ...), each itself proved
// element-wise on several shapes, and a Z3 proof of a rule from them over an uninterpreted tensor sort.
// A rule proved this way holds for every shape assignment under which the terms involved are well-shaped.
#pragma once

#include <string>
#include <vector>

#include <z3++.h>

#include "rules/corpus.h"
#include "verify/elementwise.h"

namespace teq {

struct AxiomOptions {
  unsigned timeout_ms = 2'000;
  ElementwiseOptions elementwise;  // for proving the axioms themselves
};

struct AxiomProof {
  bool proved = false;
  std::vector<std::string> axioms;  // ids of the (instantiated) axioms offered to Z3
  std::string detail;               // why not proved
};

AxiomProof prove_from_axioms(const Rule& rule, z3::context& ctx, const AxiomOptions& options = {});

}  // namespace teq
