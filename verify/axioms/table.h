// The axiom table (table.cpp): the laws of verify/axioms.h as templates, in the order the proofs offer them.
#pragma once

#include "verify/axioms.h"

namespace teq::axioms {

/// Whether the law is about non-negativity: it assumes non-negative operands (AxiomTemplate::nonneg) or shows
/// a term non-negative (relu(t) = t). A rule without relu gets these only (instances.cpp, instantiate).
bool about_nonnegativity(const AxiomTemplate& t);

}  // namespace teq::axioms
