#include "optimizer/onnx/check.h"

#include <chrono>
#include <cmath>
#include <random>

#include "rules/evaluator.h"

namespace teq::onnx_io {

namespace {

/// The first opaque operator of `g`, described for a message, or empty.
std::string first_opaque(const OnnxModel& model, const Expr& g) {
  for (const ExprNode& n : g.nodes())
    if (n.op == OpKind::Opaque) {
      size_t id = static_cast<size_t>(n.attrs[0]);
      if (id >= model.opaque.size()) return "opaque operator #" + std::to_string(id);
      const OpaqueNode& op = model.opaque[id];
      return "operator " + (op.domain.empty() ? "" : op.domain + ".") + op.op_type +
             (op.name.empty() ? "" : " (node '" + op.name + "')");
    }
  return "";
}

}  // namespace

CheckResult check_equivalent(const OnnxModel& model, const Expr& optimized, const CheckOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CheckResult r;
  for (const Expr* g : {&model.graph, &optimized}) {
    std::string what = first_opaque(model, *g);
    if (!what.empty()) {
      r.reason = "cannot evaluate: the model contains " + what +
                 ", which is outside the operator vocabulary and has no reference implementation";
      return r;
    }
  }
  std::map<std::string, Tensor<double>> leaves;
  for (const auto& [name, w] : model.weights) leaves.emplace(name, Tensor<double>(w.shape, std::vector<double>(w.data.begin(), w.data.end())));
  // Inputs in declaration order, so that the values do not depend on the graph's node order.
  std::mt19937_64 rng(options.seed);
  for (const TensorInfo& in : model.inputs) {
    if (in.is_weight) continue;
    std::vector<double> v(num_elements(in.shape));
    // 53 random bits -> [-1, 1): the same on every platform (unlike std::uniform_real_distribution).
    for (double& x : v) x = static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
    leaves.emplace(in.name, Tensor<double>(in.shape, std::move(v)));
  }
  std::vector<Tensor<double>> want, got;
  try {
    want = evaluate<double>(model.graph, Arith<double>{}, leaves);
    got = evaluate<double>(optimized, Arith<double>{}, leaves);
  } catch (const std::exception& e) {
    r.reason = std::string("cannot evaluate: ") + e.what();
    return r;
  }
  r.evaluated = true;
  r.passed = want.size() == got.size();
  for (size_t k = 0; k < want.size() && k < got.size(); ++k) {
    if (want[k].shape != got[k].shape) {
      r.passed = false;
      r.reason = "output " + std::to_string(k) + " has shape " + to_string(got[k].shape) + ", expected " +
                 to_string(want[k].shape);
      continue;
    }
    for (size_t i = 0; i < want[k].data.size(); ++i) {
      double a = want[k].data[i], b = got[k].data[i], diff = std::fabs(a - b);
      if (std::isnan(a) != std::isnan(b)) diff = INFINITY;
      if (std::isnan(diff)) diff = 0;  // both NaN (or equal infinities)
      r.max_abs_diff = std::max(r.max_abs_diff, diff);
      r.max_rel_diff = std::max(r.max_rel_diff, diff / std::max(std::fabs(a), options.atol));
      if (diff > options.atol + options.rtol * std::fabs(a)) r.passed = false;
      ++r.elements;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace teq::onnx_io
