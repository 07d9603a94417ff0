// Axiom instances: the templates of the table with the placeholder values a rule uses, each proved
// element-wise (verify/elementwise.h) before Z3 may use it; the verdicts are cached process-wide.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <z3++.h>

#include "rules/corpus.h"
#include "verify/axioms/guard.h"
#include "verify/elementwise.h"

namespace teq::axioms {

struct Instance {
  std::string id;  // template id plus the placeholder values
  Rule rule;       // lhs/rhs with attributes filled in
  Guard guard;     // the template's guard with the placeholders filled in
  std::vector<std::string> nonneg;  // variables assumed non-negative (AxiomTemplate::nonneg)
  Rule checked;  // what the element-wise proof checks: `rule` with each non-negative ?v as (relu ?v)
};

/// Every instance of every template whose operators all occur in the rule. A rule without relu may still
/// need the laws about non-negativity, whose guard relu(v) = v brings relu in: those are added when a law
/// assuming non-negative operands applies (but not the other relu laws: they only cost such a proof).
std::vector<Instance> instantiate(const Rule& rule);

/// Element-wise verdict on an axiom instance, with the ranks its variables took in the checked shapes.
struct InstanceVerdict {
  bool holds = false;
  std::vector<VarShapes> shapes;  // the assignments it was checked on
  bool from[2] = {false, false};   // whether its lhs, its rhs may trigger it (law_shape_disagreement)
};

/// The cached verdict (prepare_axiom_instances), or one proved now in a context of its own, so that it
/// depends on the instance only, not on which rule asked first.
InstanceVerdict check_instance(const Instance& inst, const ElementwiseOptions& opt);

}  // namespace teq::axioms
