#include "synth/prove.h"

#include <chrono>

#include <z3++.h>

#include "rules/evaluator.h"
#include "synth/fingerprint.h"
#include "synth/typing.h"
#include "verify/z3_arith.h"

namespace teq::synth {

namespace {

/// Random integer inputs on the proof shapes: a cheap refutation before any Z3 work.
bool differs_on_random_inputs(const Rule& rule, const VarShapes& shapes, uint64_t seed) {
  std::mt19937_64 rng(mix64(seed));
  std::map<std::string, Tensor<ModInt>> leaves;
  for (const auto& [name, shape] : shapes) leaves.emplace(name, random_tensor(shape, rng));
  Arith<ModInt> ar;
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    Tensor<ModInt> l = evaluate<ModInt>(rule.lhs[i], ar, leaves).at(0);
    Tensor<ModInt> r = evaluate<ModInt>(rule.rhs[i], ar, leaves).at(0);
    if (l.shape != r.shape || l.data != r.data) return true;
  }
  return false;
}

/// One shape assignment: "verified", "wrong" (with the element) or "unknown".
ProofResult prove_on(const Rule& rule, const VarShapes& shapes, const ProveConfig& config) {
  z3::context ctx;
  Arith<z3::expr> ar(ctx);
  std::map<std::string, Tensor<z3::expr>> leaves;
  for (const auto& [name, shape] : shapes) {
    std::vector<z3::expr> data;
    for (int64_t k = 0; k < num_elements(shape); ++k)
      data.push_back(ctx.real_const((name + "_" + std::to_string(k)).c_str()));
    leaves.emplace(name, Tensor<z3::expr>(shape, std::move(data)));
  }
  z3::expr_vector differs(ctx);
  std::vector<std::string> where;
  z3::params simp(ctx);
  simp.set("som", true);  // sum of monomials: polynomial identities simplify to 0 = 0
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    Tensor<z3::expr> l = evaluate<z3::expr>(rule.lhs[i], ar, leaves).at(0);
    Tensor<z3::expr> r = evaluate<z3::expr>(rule.rhs[i], ar, leaves).at(0);
    if (l.shape != r.shape)
      return {"wrong", "pattern " + std::to_string(i) + ": shapes differ " + to_string(l.shape) + " vs " + to_string(r.shape)};
    for (size_t k = 0; k < l.data.size(); ++k) {
      z3::expr d = (l.data[k] - r.data[k]).simplify(simp);
      if (d.is_numeral() && (d == ctx.real_val(0)).simplify().is_true()) continue;
      differs.push_back(l.data[k] != r.data[k]);
      where.push_back("pattern " + std::to_string(i) + " element " + std::to_string(k));
    }
  }
  if (differs.empty()) return {"verified", ""};
  // One small query per remaining element: Z3 decides many small non-linear problems far faster than
  // one disjunction of all of them.
  z3::params p(ctx);
  p.set("rlimit", config.rlimit);
  for (unsigned k = 0; k < differs.size(); ++k) {
    z3::solver solver(ctx);
    solver.set(p);
    solver.add(differs[static_cast<int>(k)]);
    switch (solver.check()) {
      case z3::unsat: break;
      case z3::sat: return {"wrong", "z3: " + where[k] + " differs"};
      default: return {"unknown", "z3: " + solver.reason_unknown() + " at " + where[k]};
    }
  }
  return {"verified", ""};
}

}  // namespace

ProofResult prove_rule(const Rule& rule, const std::vector<LeafType>& types, const ProveConfig& config) {
  auto start = std::chrono::steady_clock::now();
  ProofResult result;
  size_t assignments = 0;
  for (const LeafType& t : types) assignments = std::max(assignments, t.proof_shapes.size());
  std::vector<ShapeChoice> choices;
  for (size_t k = 0; k < assignments; ++k) choices.push_back({ShapeChoice::Proof, static_cast<int>(k)});
  auto typing = assign_types(rule, types, choices);
  if (!typing) {
    result = {"unknown", "no proof shapes make every pattern well-shaped"};
  } else {
    result = {"verified", ""};
    for (ShapeChoice c : choices) {
      try {
        VarShapes shapes = shapes_of(*typing, types, c);
        ProofResult r = differs_on_random_inputs(rule, shapes, 17 + c.index)
                            ? ProofResult{"wrong", "differs on random integer inputs"}
                            : prove_on(rule, shapes, config);
        if (r.status != "verified") {
          result = r;
          result.reason += " (proof shapes #" + std::to_string(c.index) + ")";
          break;
        }
      } catch (const std::exception& e) {
        result = {"unknown", std::string("cannot instantiate: ") + e.what()};
        break;
      }
    }
  }
  result.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace teq::synth
