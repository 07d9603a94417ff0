#include "verify/axioms.h"

namespace teq {

AxiomProof prove_from_axioms(const Rule& rule, z3::context& ctx, const AxiomOptions& options) {
  return {false, {}, "not implemented"};
}

}  // namespace teq
