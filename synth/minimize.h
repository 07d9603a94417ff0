// Derivability by equality saturation (Ruler's minimization): is an equation provable from a rule set
// by rewriting? Used to drop generated rules that the rules kept before them already derive, and by
// `rulegen derive` to measure how much of another rule set a corpus covers. The e-graph and the
// saturation loop are the optimizer's (optimizer/egraph.h, optimizer/runner.h).
#pragma once

#include <string>
#include <vector>

#include "rules/corpus.h"
#include "synth/vocabulary.h"

namespace teq::synth {

struct DeriveLimits {
  size_t node_limit = 4'000;
  size_t iter_limit = 8;
  double time_limit_s = 2;
  int k_multi = 3;  // iterations in which multi-pattern rules apply
};

struct DeriveResult {
  bool derived = false;
  std::string reason;  // when not derived: "not equal after saturation (node-limit, 4012 e-nodes)", ...
};

/// Rules as the saturation uses them: each rule, plus its reverse when the reverse is a valid rule
/// (right side binds every variable and is not a bare variable). Corpus rules are equations; reversing
/// lets minimization and coverage use them both ways.
std::vector<Rule> both_directions(const std::vector<Rule>& rules);

/// Whether `target` (every lhs[i] == rhs[i]) follows from `rules` (already both_directions'ed if wanted)
/// by saturation within `limits`. Variables become input leaves with shapes from the leaf types (set A,
/// typing.h).
DeriveResult derive_rule(const Rule& target, const std::vector<Rule>& rules, const std::vector<LeafType>& types,
                         const DeriveLimits& limits = {});

}  // namespace teq::synth
