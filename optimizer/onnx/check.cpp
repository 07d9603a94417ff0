#include "optimizer/onnx/check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/onnx_node_eval.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "optimizer/onnx/fast_eval.h"
#include "optimizer/onnx/onnx_export.h"
#include "rules/evaluator.h"
#include "rules/ops/opaque.h"

namespace teq::onnx_io {

namespace {

using Clock = std::chrono::steady_clock;
using Leaves = std::map<std::string, Tensor<double>>;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// An opaque node described for a message: "operator Resize (node 'r')".
std::string describe_opaque(const OnnxModel& model, size_t id) {
  if (id >= model.opaque.size()) return "opaque operator #" + std::to_string(id);
  const OpaqueNode& op = model.opaque[id];
  return "operator " + (op.domain.empty() ? "" : op.domain + ".") + op.op_type +
         (op.name.empty() ? "" : " (node '" + op.name + "')");
}

/// The first opaque operator of `g` that the check cannot evaluate (detail::onnx_node_evaluable), described
/// for a message, or empty.
std::string first_unevaluable(const OnnxModel& model, const Expr& g) {
  for (const ExprNode& n : g.nodes())
    if (n.op == OpKind::Opaque) {
      size_t id = static_cast<size_t>(ops::opaque_attrs(n.attrs).id);
      onnx::NodeProto proto;
      if (id >= model.opaque.size() || !proto.ParseFromString(model.opaque[id].proto) ||
          !detail::onnx_node_evaluable(proto))
        return describe_opaque(model, id);
    }
  return "";
}

/// Identities of a model's opaque nodes (op type and first output name), to tell a node kept opaque at one
/// size only from one opaque at every size.
std::set<std::string> opaque_keys(const OnnxModel& model) {
  std::set<std::string> keys;
  for (const OpaqueNode& op : model.opaque) {
    onnx::NodeProto proto;
    proto.ParseFromString(op.proto);
    keys.insert(op.op_type + "\x1f" + (proto.output_size() ? proto.output(0) : op.name));
  }
  return keys;
}

/// The first opaque node of `model` whose identity is not in `base` (the same file imported at the sizes
/// bound first): an operator the importer keeps opaque at this size only, because its shape no longer fits.
std::string first_opaque_not_in(const OnnxModel& model, const std::set<std::string>& base) {
  for (const ExprNode& n : model.graph.nodes())
    if (n.op == OpKind::Opaque) {
      size_t id = static_cast<size_t>(ops::opaque_attrs(n.attrs).id);
      if (id >= model.opaque.size()) return describe_opaque(model, id);
      onnx::NodeProto proto;
      proto.ParseFromString(model.opaque[id].proto);
      const OpaqueNode& op = model.opaque[id];
      if (!base.count(op.op_type + "\x1f" + (proto.output_size() ? proto.output(0) : op.name)))
        return describe_opaque(model, id);
    }
  return "";
}

/// The values of a graph's opaque nodes, computed by detail::evaluate_onnx_node from the node's proto: its
/// inputs are the Expr children (input_child) or passed-through initializers, each with its element type
/// (graph inputs as declared, opaque outputs as the import recorded, everything else float). All outputs of
/// a node are computed at once and kept until each Expr node that reads one has taken it.
class OpaqueEvaluator {
 public:
  OpaqueEvaluator(const OnnxModel& model, const Expr& g) : model_(model), g_(g), types_(expr_elem_types(model, g)) {
    for (int32_t& t : types_)
      if (t == 0) t = onnx::TensorProto::FLOAT;
    for (const ExprNode& n : g.nodes())
      if (n.op == OpKind::Opaque) ++readers_[ops::opaque_attrs(n.attrs).id];
  }

  Tensor<double> operator()(size_t node, ops::Args<double> args, const Shape& shape) {
    const ExprNode& n = g_.nodes()[node];
    const ops::OpaqueAttrs a = ops::opaque_attrs(n.attrs);
    const size_t id = static_cast<size_t>(a.id);
    if (id >= model_.opaque.size()) ops::throw_opaque_not_evaluable(n.attrs);
    auto it = outputs_.find(a.id);
    if (it == outputs_.end()) it = outputs_.emplace(a.id, compute(node, args)).first;
    const std::vector<detail::OnnxValue>& outs = it->second;
    if (static_cast<size_t>(a.output) >= outs.size())
      throw ShapeError(describe_opaque(model_, id) + " has no output " + std::to_string(a.output));
    Tensor<double> value = outs[static_cast<size_t>(a.output)].t;
    if (--readers_[a.id] == 0) outputs_.erase(a.id);
    // An output whose shape depends on tensor values has a stand-in shape in the Expr: its value's own counts.
    const auto& dynamic = model_.opaque[id].dynamic_outputs;
    const bool dynamic_shape = static_cast<size_t>(a.output) < dynamic.size() && dynamic[static_cast<size_t>(a.output)];
    if (value.shape != shape && !dynamic_shape)
      throw ShapeError(describe_opaque(model_, id) + " computed output " + std::to_string(a.output) + " of shape " +
                       to_string(value.shape) + " where the import inferred " + to_string(shape));
    return value;
  }

 private:
  std::vector<detail::OnnxValue> compute(size_t node, ops::Args<double> args) {
    const ExprNode& n = g_.nodes()[node];
    const size_t id = static_cast<size_t>(ops::opaque_attrs(n.attrs).id);
    const OpaqueNode& op = model_.opaque[id];
    onnx::NodeProto proto;
    if (!proto.ParseFromString(op.proto)) throw ShapeError(describe_opaque(model_, id) + ": corrupt node");
    std::vector<detail::OnnxValue> held(static_cast<size_t>(proto.input_size()));
    std::deque<detail::OnnxValue> large;  // passed-through weights read for this node only
    std::vector<const detail::OnnxValue*> inputs(static_cast<size_t>(proto.input_size()), nullptr);
    // The operands are borrowed, not copied: each tensor the evaluator holds is moved into its OnnxValue for the
    // call and moved back after it (the evaluator's own storage, not const; an fp16 embedding table of 131 M
    // elements is 1 GB as doubles, which a copy would double). The same tensor read twice is moved once.
    std::map<const Tensor<double>*, size_t> borrowed;
    struct GiveBack {
      std::map<const Tensor<double>*, size_t>& from;
      std::vector<detail::OnnxValue>& held;
      ~GiveBack() {
        for (const auto& [tensor, k] : from) *const_cast<Tensor<double>*>(tensor) = std::move(held[k].t);
      }
    } give_back{borrowed, held};
    for (int k = 0; k < proto.input_size(); ++k) {
      const size_t kk = static_cast<size_t>(k);
      const int child = kk < op.input_child.size() ? op.input_child[kk] : -1;
      if (child >= 0) {
        if (static_cast<size_t>(child) >= args.size()) throw ShapeError(describe_opaque(model_, id) + ": bad input map");
        const Tensor<double>* arg = args[static_cast<size_t>(child)];
        if (auto it = borrowed.find(arg); it != borrowed.end()) {
          inputs[kk] = &held[it->second];
          continue;
        }
        held[kk] = {std::move(*const_cast<Tensor<double>*>(arg)), types_[n.children[static_cast<size_t>(child)].value]};
        borrowed.emplace(arg, kk);
        inputs[kk] = &held[kk];
      } else if (!proto.input(k).empty()) {
        inputs[kk] = &passthrough(proto.input(k), op, large);
      }
    }
    // What an If's branches read from outside: the Expr children after the inputs, or initializers.
    std::vector<detail::OnnxValue> outer_held(op.implicit_inputs.size());
    detail::OuterValues outer;
    for (size_t k = 0; k < op.implicit_inputs.size(); ++k) {
      const auto& [name, child] = op.implicit_inputs[k];
      if (child < 0) {
        outer[name] = &passthrough(name, op, large);
        continue;
      }
      if (static_cast<size_t>(child) >= args.size()) throw ShapeError(describe_opaque(model_, id) + ": bad input map");
      if (auto it = borrowed.find(args[static_cast<size_t>(child)]); it != borrowed.end()) {
        outer[name] = &held[it->second];  // an input too: moved into held above
        continue;
      }
      outer_held[k] = {*args[static_cast<size_t>(child)], types_[n.children[static_cast<size_t>(child)].value]};
      outer[name] = &outer_held[k];
    }
    return detail::evaluate_onnx_node(proto, inputs, model_.opset, outer);
  }

  /// A passed-through initializer's value: small ones kept for every reader, large ones (weights of a type
  /// the vocabulary does not hold, read from their file if they stayed there) decoded into `large` for one
  /// node, so that they are never all held as doubles at once.
  const detail::OnnxValue& passthrough(const std::string& name, const OpaqueNode& op, std::deque<detail::OnnxValue>& large) {
    auto it = constants_.find(name);
    if (it != constants_.end()) return it->second;
    auto src = model_.passthrough.find(name);
    onnx::TensorProto t;
    if (src == model_.passthrough.end() || !t.ParseFromString(src->second))
      throw ShapeError("operator " + op.op_type + " reads '" + name + "', which has no value in the imported model");
    detail::load_tensor_data(t, model_.external_data_dir, model_.source);
    constexpr int64_t kKeptElements = int64_t{1} << 20;
    if (num_elements(detail::tensor_dims(t)) > kKeptElements) return large.emplace_back(detail::decode_tensor(t));
    return constants_.emplace(name, detail::decode_tensor(t)).first->second;
  }

  const OnnxModel& model_;
  const Expr& g_;
  std::vector<int32_t> types_;  // element type of each Expr node's value
  std::map<int64_t, std::vector<detail::OnnxValue>> outputs_;
  std::map<int64_t, int> readers_;  // Expr nodes per opaque id not yet computed
  std::map<std::string, detail::OnnxValue> constants_;
};

/// The importer's first note (why a node stayed opaque), as "; note: ..." for a message, or empty.
std::string first_note(const OnnxModel& m) { return m.notes.empty() ? "" : " (" + m.notes.front() + ")"; }

std::string cannot_evaluate(const std::string& what) {
  return "cannot evaluate: the model contains " + what +
         ", which is outside the operator vocabulary and has no evaluation in --check (docs/errors.md, exit 4)";
}

CheckResult not_evaluated(std::string reason, Clock::time_point start) {
  CheckResult r;
  r.reason = std::move(reason);
  r.seconds = since(start);
  return r;
}

/// A weight as doubles (the evaluator's precision), made when the evaluation reaches its first reader and
/// dropped after its last: a model's weights are never all held as doubles, nor all read from their file.
Tensor<double> weight_as_doubles(const WeightValue& w) { return w.doubles(); }

/// Graph inputs in declaration order, so that the values do not depend on the graph's node order.
void add_random_inputs(const OnnxModel& model, uint64_t seed, Leaves& leaves) {
  std::mt19937_64 rng(seed);
  for (const TensorInfo& in : model.inputs) {
    if (in.is_weight) continue;
    std::vector<double> v(static_cast<size_t>(num_elements(in.shape)));
    // 53 random bits -> [-1, 1): the same on every platform (unlike std::uniform_real_distribution).
    // Integer and boolean inputs (token ids, masks) get 0 or 1, valid as an index into any axis.
    const bool discrete = detail::is_integer_type(in.elem_type) || in.elem_type == onnx::TensorProto::BOOL;
    for (double& x : v) x = discrete ? static_cast<double>(rng() >> 63) : static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
    // A FLOAT16 or BFLOAT16 input holds only the values its type has.
    if (in.elem_type == onnx::TensorProto::FLOAT16 || in.elem_type == onnx::TensorProto::BFLOAT16)
      for (double& x : v) x = round_to_float_type(x, in.elem_type);
    leaves.insert_or_assign(in.name, Tensor<double>(in.shape, std::move(v)));
  }
}

std::map<std::string, const Tensor<double>*> pointers(const Leaves& leaves) {
  std::map<std::string, const Tensor<double>*> p;
  for (const auto& [name, t] : leaves) p.emplace(name, &t);
  return p;
}

/// Evaluates one graph, reporting progress through options.on_progress at most every progress_seconds.
std::vector<Tensor<double>> evaluate_graph(const OnnxModel& model, const Expr& g, const Leaves& leaves,
                                           const CheckOptions& options, const std::string& label) {
  FastEvalOptions fo;
  fo.lazy_leaf_shape = [&model](const std::string& name) -> const Shape* {
    auto it = model.weights.find(name);
    return it == model.weights.end() ? nullptr : &it->second.shape();
  };
  fo.lazy_leaf = [&model](const std::string& name) { return weight_as_doubles(model.weights.at(name)); };
  OpaqueEvaluator opaque(model, g);
  fo.opaque = [&opaque](size_t node, ops::Args<double> args, const Shape& shape) { return opaque(node, args, shape); };
  if (options.on_progress) {
    const Clock::time_point start = Clock::now();
    fo.on_progress = [&options, &label, start, last = start](size_t done, size_t total) mutable {
      const Clock::time_point now = Clock::now();
      if (std::chrono::duration<double>(now - last).count() < options.progress_seconds || done == total) return;
      last = now;
      char line[160];
      std::snprintf(line, sizeof line, ": %zu/%zu operators (%.0f%%), %.1f s", done, total,
                    100.0 * static_cast<double>(done) / static_cast<double>(total), since(start));
      options.on_progress(label + line);
    };
  }
  return evaluate_fast<double>(g, pointers(leaves), fo);
}

/// The largest magnitude of a tensor's finite elements (its L-inf norm), at least 1.
double tensor_scale(const Tensor<double>& t) {
  double scale = 1;
  for (double v : t.data)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  return scale;
}

}  // namespace

CheckOptions tolerance_for(const CheckOptions& options, int32_t elem_type) {
  // Four units in the last place at 1 of the type the file stores the output in: the optimized file's folded
  // weights and constants are rounded to it (2^-10 for FLOAT16, 2^-7 for BFLOAT16), the original's are not.
  double floor = 0;
  if (elem_type == onnx::TensorProto::FLOAT16) floor = 0x1p-8;
  else if (elem_type == onnx::TensorProto::BFLOAT16) floor = 0x1p-5;
  CheckOptions o = options;
  o.rtol = std::max(o.rtol, floor);
  o.atol = std::max(o.atol, floor);
  return o;
}

namespace {

/// Difference of two elements, infinite when only one is NaN and 0 when both are (or equal infinities).
double element_diff(double a, double b) {
  if (std::isnan(a) != std::isnan(b)) return INFINITY;
  const double diff = std::fabs(a - b);
  return std::isnan(diff) ? 0 : diff;
}

/// Output k of both graphs compared element by element into r, against CheckOptions' rule: the tolerance of
/// an element grows with its own magnitude (rtol) and with its tensor's largest one (atol * scale), because a
/// float32 runtime rounds each sum relative to the magnitude of the values summed: an element near 0 that is
/// a difference of large terms (a product of weight matrices folded into one, then rounded to float32) is off
/// by about eps * |terms|, not eps * |element|.
void compare_output(size_t k, const Tensor<double>& want, const Tensor<double>& got, const CheckOptions& given,
                    int32_t type, CheckResult& r) {
  const CheckOptions options = tolerance_for(given, type);
  r.rtol = std::max(r.rtol, options.rtol);
  r.atol = std::max(r.atol, options.atol);
  const double floor = options.atol * tensor_scale(want);
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double a = want.data[i], b = got.data[i], diff = element_diff(a, b);
    // A NaN or infinite original gives no magnitude: both NaN (or equal infinities) pass with diff 0,
    // anything else against them fails.
    const double tolerance = floor + options.rtol * (std::isfinite(a) ? std::fabs(a) : 0.0);
    r.max_abs_diff = std::max(r.max_abs_diff, diff);
    r.max_rel_diff = std::max(r.max_rel_diff, diff / std::max(std::fabs(a), options.atol));
    if (!(diff <= tolerance)) {
      if (r.passed && r.reason.empty()) {
        char line[200];
        std::snprintf(line, sizeof line, "output %zu element %zu is %.9g, expected %.9g (difference %.3g, tolerance %.3g)",
                      k, i, b, a, diff, tolerance);
        r.reason = line;
      }
      r.passed = false;
    }
    ++r.elements;
  }
}

/// Comparison of two graphs' outputs into r (passed, differences, elements, reason); `outputs`: the declared
/// outputs, whose element types set each one's tolerance (tolerance_for).
void compare(const std::vector<Tensor<double>>& want, const std::vector<Tensor<double>>& got,
             const CheckOptions& options, const std::vector<TensorInfo>& outputs, CheckResult& r) {
  r.evaluated = true;
  r.passed = want.size() == got.size();
  if (!r.passed)
    r.reason = std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
  for (size_t k = 0; k < want.size() && k < got.size(); ++k) {
    if (want[k].shape != got[k].shape) {
      r.passed = false;
      if (r.reason.empty())
        r.reason = "output " + std::to_string(k) + " has shape " + to_string(got[k].shape) + ", expected " +
                   to_string(want[k].shape);
      continue;
    }
    compare_output(k, want[k], got[k], options, k < outputs.size() ? outputs[k].elem_type : 0, r);
  }
}

/// One graph's outputs into `out`, or why they could not be computed: an operator with no evaluation
/// (NotEvaluable), or an evaluation that failed (then `failed` is set: the graph does not work at these sizes).
template <class Evaluate>
std::optional<CheckResult> evaluate_one(Evaluate&& evaluate, const std::string& what, bool CheckResult::*failed,
                                        std::vector<Tensor<double>>& out, Clock::time_point start) {
  try {
    out = evaluate();
    return std::nullopt;
  } catch (const detail::NotEvaluable& e) {
    return not_evaluated("cannot evaluate " + what + ": " + e.what(), start);
  } catch (const std::exception& e) {
    CheckResult r = not_evaluated("cannot evaluate " + what + ": " + e.what(), start);
    r.*failed = true;
    return r;
  }
}

/// The original's outputs (`original()`) and the optimized one's (`optimized()`) compared; evaluated = false
/// with the reason when one of them cannot be evaluated.
template <class Original, class Optimized>
CheckResult evaluate_and_compare(Original&& original, Optimized&& optimized, const CheckOptions& options,
                                 const std::vector<TensorInfo>& outputs, Clock::time_point start) {
  std::vector<Tensor<double>> want, got;
  if (auto r = evaluate_one(original, "the original", &CheckResult::original_failed, want, start)) return *r;
  if (auto r = evaluate_one(optimized, "the optimized graph", &CheckResult::optimized_failed, got, start)) return *r;
  CheckResult r;
  compare(want, got, options, outputs, r);
  r.passed_imported_size = r.passed;
  r.seconds = since(start);
  return r;
}

}  // namespace

CheckResult check_equivalent(const OnnxModel& model, const Expr& optimized, const CheckOptions& options) {
  const Clock::time_point start = Clock::now();
  for (const Expr* g : {&model.graph, &optimized}) {
    std::string what = first_unevaluable(model, *g);
    if (!what.empty()) return not_evaluated(cannot_evaluate(what), start);
  }
  Leaves leaves;
  add_random_inputs(model, options.seed, leaves);
  return evaluate_and_compare([&] { return evaluate_graph(model, model.graph, leaves, options, "original graph"); },
                              [&] { return evaluate_graph(model, optimized, leaves, options, "optimized graph"); }, options,
                              model.outputs, start);
}

std::vector<Tensor<double>> evaluate_model(const OnnxModel& model, const std::map<std::string, Tensor<double>>& inputs) {
  return evaluate_graph(model, model.graph, inputs, {}, "");
}

namespace {

/// Whether two weights are one value: the same bytes of the same file, or equal held tensors.
bool same_weight(const WeightValue& a, const WeightValue& b) {
  if (a.shape() != b.shape() || a.elem_type() != b.elem_type()) return false;
  if (a.external() && b.external()) {
    const ExternalBytes &x = *a.external(), &y = *b.external();
    return x.offset == y.offset && x.length == y.length &&
           x.file.lexically_normal() == y.file.lexically_normal();
  }
  if (a.external() || b.external()) return false;
  const auto va = a.values(), vb = b.values();
  return va == vb || va->data == vb->data;
}

/// An opaque node's meaning: everything of its proto but the tensor names (the Expr's children say what
/// it reads), its passed-through inputs' values, and what the import recorded of its outputs.
bool same_opaque(const OnnxModel& a, const OpaqueNode& x, const OnnxModel& b, const OpaqueNode& y) {
  if (x.op_type != y.op_type || x.domain != y.domain || x.input_child != y.input_child ||
      x.output_types != y.output_types || x.dynamic_outputs != y.dynamic_outputs || !x.implicit_inputs.empty() ||
      !y.implicit_inputs.empty())
    return false;
  onnx::NodeProto px, py;
  if (!px.ParseFromString(x.proto) || !py.ParseFromString(y.proto)) return false;
  if (px.input_size() != py.input_size() || px.output_size() != py.output_size() || px.attribute_size() != py.attribute_size())
    return false;
  for (int k = 0; k < px.attribute_size(); ++k)
    if (px.attribute(k).SerializeAsString() != py.attribute(k).SerializeAsString()) return false;
  for (int k = 0; k < px.input_size(); ++k) {
    // input_child is the same for both (compared above); shorter than the inputs means passed through.
    const size_t kk = static_cast<size_t>(k);
    if (kk < x.input_child.size() && x.input_child[kk] >= 0) continue;
    if (px.input(k).empty() != py.input(k).empty()) return false;  // an optional input left out in one only
    if (px.input(k).empty()) continue;
    const auto ta = a.passthrough.find(px.input(k)), tb = b.passthrough.find(py.input(k));
    if ((ta == a.passthrough.end()) != (tb == b.passthrough.end())) return false;
    if (ta != a.passthrough.end()) {
      onnx::TensorProto u, v;  // equal values under other names
      if (!u.ParseFromString(ta->second) || !v.ParseFromString(tb->second)) return false;
      u.clear_name(), v.clear_name();
      if (u.SerializeAsString() != v.SerializeAsString()) return false;
      // The same location names the same file only from the same folder.
      if (u.data_location() == onnx::TensorProto::EXTERNAL &&
          a.external_data_dir.lexically_normal() != b.external_data_dir.lexically_normal())
        return false;
    } else if (px.input(k) != py.input(k)) {
      return false;  // neither computed nor passed through: compare by name
    }
  }
  return true;
}

/// Whether `b` computes what `a` computes by construction: the same Expr node for node (operators,
/// attributes, children, input names, roots) except that a weight may have another name when it is the same
/// value (the import names the constants it makes after the tensors they belong to, which an export renames),
/// every opaque node the same operator, and the same opset and graph inputs. The evaluation is deterministic,
/// so both would give the same values to the last bit; evaluating them could only say so slowly (an unchanged
/// 7B-parameter LLaMA written as imported: minutes in double at four sizes).
bool same_computation(const OnnxModel& a, const OnnxModel& b) {
  if (a.graph.size() != b.graph.size() || a.graph.roots() != b.graph.roots() || a.opset != b.opset ||
      a.inputs.size() != b.inputs.size())
    return false;
  for (size_t k = 0; k < a.inputs.size(); ++k)
    if (a.inputs[k].name != b.inputs[k].name || a.inputs[k].elem_type != b.inputs[k].elem_type) return false;
  for (size_t i = 0; i < a.graph.size(); ++i) {
    const ExprNode &x = a.graph.nodes()[i], &y = b.graph.nodes()[i];
    if (x.op != y.op || x.attrs != y.attrs || x.children != y.children) return false;
    if (x.op == OpKind::Weight) {
      const auto wa = a.weights.find(x.name), wb = b.weights.find(y.name);
      if (wa == a.weights.end() || wb == b.weights.end() || !same_weight(wa->second, wb->second)) return false;
    } else if (x.op == OpKind::Opaque) {
      const auto id = static_cast<size_t>(ops::opaque_attrs(x.attrs).id);
      if (id >= a.opaque.size() || id >= b.opaque.size() || !same_opaque(a, a.opaque[id], b, b.opaque[id])) return false;
    } else if (x.name != y.name) {
      return false;
    }
  }
  return true;
}

}  // namespace

CheckResult check_models(const OnnxModel& original, const OnnxModel& optimized, const CheckOptions& options) {
  const Clock::time_point start = Clock::now();
  if (same_computation(original, optimized)) {
    CheckResult r;
    r.evaluated = r.passed = r.passed_imported_size = true;
    r.identical = true;
    r.note = "the optimized model reads back as the original's own graph (the same operators, attributes and "
             "weights): equal without evaluating";
    r.seconds = since(start);
    return r;
  }
  for (const OnnxModel* m : {&original, &optimized}) {
    std::string what = first_unevaluable(*m, m->graph);
    if (!what.empty()) return not_evaluated(cannot_evaluate(what), start);
  }
  Leaves inputs;
  add_random_inputs(original, options.seed, inputs);
  // Each model its own weights, read as its evaluation reaches them.
  auto run = [&](const OnnxModel& m, const std::string& label) { return evaluate_graph(m, m.graph, inputs, options, label); };
  return evaluate_and_compare([&] { return run(original, "original graph"); },
                              [&] { return run(optimized, "optimized graph"); }, options, original.outputs, start);
}

namespace {

/// A symbolic dimension as the check rebinds it: by name (dim_param), or by input and axis (an unnamed one
/// or one given as --dim INPUT:AXIS=VALUE), labelled "INPUT:AXIS".
struct SymbolicDim {
  std::string label;
  int64_t value = 0;
  std::optional<InputAxis> axis;  // the key in ImportOptions::axis_dims
  InputAxis carrier;              // the first graph input axis that has it (axis counted from 0)
};

std::vector<SymbolicDim> symbolic_dims_of(const OnnxModel& model, const ImportOptions& import) {
  std::vector<SymbolicDim> dims;
  onnx::ModelProto shell;  // the model as imported, without nodes: declared inputs keep their dim_params
  if (model.shell.empty() || !shell.ParseFromString(model.shell)) return dims;
  std::set<std::string> data_inputs, seen;
  for (const TensorInfo& in : model.inputs)
    if (!in.is_weight) data_inputs.insert(in.name);
  for (const auto& in : shell.graph().input()) {
    if (!data_inputs.count(in.name()) || !in.type().tensor_type().has_shape()) continue;
    const auto& shape = in.type().tensor_type().shape();
    const int64_t rank = shape.dim_size();
    for (int64_t k = 0; k < rank; ++k) {
      const auto& d = shape.dim(static_cast<int>(k));
      if (d.has_dim_value()) continue;
      std::optional<InputAxis> axis;
      for (InputAxis key : {InputAxis{in.name(), k}, InputAxis{in.name(), k - rank}})
        if (import.axis_dims.count(key)) axis = key;
      if (axis) {
        dims.push_back({in.name() + ":" + std::to_string(k), import.axis_dims.at(*axis), axis, {in.name(), k}});
        continue;
      }
      if (!d.has_dim_param() || !seen.insert(d.dim_param()).second) continue;
      auto it = import.dims.find(d.dim_param());
      int64_t value = it != import.dims.end() ? it->second : import.default_dim;
      if (value > 0) dims.push_back({d.dim_param(), value, std::nullopt, {in.name(), k}});
    }
  }
  return dims;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> symbolic_dims(const OnnxModel& model, const ImportOptions& import) {
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const SymbolicDim& d : symbolic_dims_of(model, import)) dims.emplace_back(d.label, d.value);
  return dims;
}

int64_t second_value(int64_t value) { return value == 1 ? 2 : value == 2 ? 1 : value / 2; }

namespace {

/// One size the check tries besides the imported one: some symbolic dimensions at their second values.
using SizeAssignment = std::vector<std::pair<SymbolicDim, int64_t>>;

/// The sizes checked: each symbolic dimension alone at its second value, then (with two or more) all of
/// them at their second values at once.
std::vector<SizeAssignment> second_sizes(const std::vector<SymbolicDim>& dims) {
  std::vector<SizeAssignment> sizes;
  for (const SymbolicDim& d : dims) sizes.push_back({{d, second_value(d.value)}});
  if (dims.size() >= 2) {
    SizeAssignment all;
    for (const SymbolicDim& d : dims) all.emplace_back(d, second_value(d.value));
    sizes.push_back(std::move(all));
  }
  return sizes;
}

ImportOptions at_size(const ImportOptions& import, const SizeAssignment& size) {
  ImportOptions second = import;
  for (const auto& [sym, value] : size) {
    if (sym.axis)
      second.axis_dims[*sym.axis] = value;
    else
      second.dims[sym.label] = value;
  }
  return second;
}

/// The original and the optimized export imported at one of the second sizes. `original` is empty when the
/// original itself does not import there (`reason` says why: that size is not checked); `optimized` is empty
/// when the export does not (`reason` says why, naming the dimensions: a failure).
struct SecondSizeModels {
  std::string dim, at, failed;  // "batch" (or "batch=2, seq"), "batch=2, seq=64", "at batch=2 (...) "
  int64_t value = 0;            // the last dimension's value
  std::optional<OnnxModel> original, optimized;
  std::string reason;
  /// An operator each import keeps opaque at this size only, with the importer's note (empty: none). Such
  /// an operator may have no meaning there (the original does not work at this size), or the import may
  /// only have taken another form there (a condition that holds at one size): the evaluation decides.
  std::string original_opaque_here, optimized_opaque_here;
};

/// The opaque nodes of the optimized export at the imported sizes, computed once per check (the export is
/// imported there only when one of its second-size imports holds an opaque node).
struct OptimizedBase {
  std::string_view bytes;
  const ImportOptions& import;
  std::optional<std::set<std::string>> keys;
  const std::set<std::string>& get() {
    if (!keys) {
      keys.emplace();
      try {
        *keys = opaque_keys(import_onnx_bytes(bytes, "the optimized model", import));
      } catch (const std::exception&) {
      }
    }
    return *keys;
  }
};

SecondSizeModels import_at_second_size(const OnnxModel& model, const SizeAssignment& size, std::string_view original_bytes,
                                       OptimizedBase& optimized_base, const ImportOptions& import) {
  SecondSizeModels m;
  for (size_t k = 0; k < size.size(); ++k) {
    const std::string one = size[k].first.label + "=" + std::to_string(size[k].second);
    m.at += (k ? ", " : "") + one;
    m.dim += (k ? ", " : "") + (k + 1 < size.size() ? one : size[k].first.label);
  }
  m.value = size.back().second;
  m.failed = "at " + m.at + (size.size() == 1 ? " (the second value of symbolic dimension '" + m.dim + "') "
                                              : " (every symbolic dimension at its second value) ");
  const ImportOptions second = at_size(import, size);
  try {
    m.original = import_onnx_bytes(original_bytes, model.source + " at " + m.at, second);
    if (std::string what = first_opaque_not_in(*m.original, opaque_keys(model)); !what.empty())
      m.original_opaque_here = what + first_note(*m.original);
  } catch (const std::exception& e) {
    m.original.reset();
    m.reason = "the original model does not import at " + m.at + ", so this size is not checked: " + e.what();
    return m;
  }
  try {
    m.optimized = import_onnx_bytes(optimized_base.bytes, "the optimized model at " + m.at, second);
    if (m.optimized->num_opaque() > 0)
      if (std::string what = first_opaque_not_in(*m.optimized, optimized_base.get()); !what.empty())
        m.optimized_opaque_here = what + first_note(*m.optimized);
    // Valid is not enough: a reshape that infers the wrong dimension still imports, with outputs of
    // another shape than the original's.
    // (With an operator the original keeps opaque here only, the evaluation decides: it compares the shapes
    // too, once it has shown that the original works at this size.)
    if (m.original && m.original_opaque_here.empty()) {
      const std::vector<Shape> want = infer_shapes(m.original->graph, {}), got = infer_shapes(m.optimized->graph, {});
      const auto &ro = m.original->graph.roots(), &rp = m.optimized->graph.roots();
      for (size_t k = 0; k < ro.size() && k < rp.size(); ++k)
        if (want[ro[k].value] != got[rp[k].value])
          throw OnnxError("output '" + m.original->outputs[k].name + "' has shape " + to_string(got[rp[k].value]) +
                          " where the original's has " + to_string(want[ro[k].value]));
    }
  } catch (const std::exception& e) {
    m.optimized.reset();
    m.reason = m.failed + "the optimized model is invalid: " + e.what();
  }
  return m;
}

}  // namespace

ReshapeTargets symbolic_reshape_targets(const OnnxModel& model, std::string_view original_bytes,
                                        const ImportOptions& import) {
  ReshapeTargets targets;
  if (original_bytes.empty() || model.reshapes.empty()) return targets;
  const std::vector<SymbolicDim> symbols = symbolic_dims_of(model, import);
  // Per (input, target) at the bound sizes: which output dimensions change with some symbolic dimension, which
  // are a copy of the input's dimension at the same axis at every size tried (copies), and which equal a
  // symbolic dimension itself at every size tried (is_symbol[d][s]).
  struct Flow {
    std::vector<bool> varies, copies;
    std::vector<std::vector<bool>> is_symbol;
    bool known = true;
    /// One size tried: the site there, and each symbol's value there.
    void see(const ReshapeSite& at, const std::vector<int64_t>& symbol_values) {
      for (size_t d = 0; d < at.target.size(); ++d) {
        copies[d] = copies[d] && d < at.input.size() && at.target[d] == at.input[d];
        for (size_t s = 0; s < symbol_values.size(); ++s)
          is_symbol[d][s] = is_symbol[d][s] && at.target[d] == symbol_values[s];
      }
    }
  };
  std::vector<int64_t> bound_values;
  for (const SymbolicDim& sym : symbols) bound_values.push_back(sym.value);
  std::map<std::pair<Shape, Shape>, Flow> flows;
  for (const ReshapeSite& site : model.reshapes) {
    Flow& f = flows[{site.input, site.target}];
    if (f.varies.empty()) {
      f.varies.assign(site.target.size(), false);
      f.copies.assign(site.target.size(), true);
      f.is_symbol.assign(site.target.size(), std::vector<bool>(symbols.size(), true));
    }
    f.see(site, bound_values);
  }
  for (size_t changed = 0; changed < symbols.size(); ++changed) {
    const SymbolicDim& sym = symbols[changed];
    ImportOptions second = import;
    const int64_t value = second_value(sym.value);
    if (sym.axis)
      second.axis_dims[*sym.axis] = value;
    else
      second.dims[sym.label] = value;
    std::optional<OnnxModel> other;
    try {
      other = import_onnx_bytes(original_bytes, model.source + " at " + sym.label + "=" + std::to_string(value), second);
    } catch (const std::exception&) {
      return {};  // the original does not work at that size either: nothing to follow
    }
    std::map<std::string, const ReshapeSite*> by_output;
    for (const ReshapeSite& site : other->reshapes) by_output[site.output] = &site;
    std::vector<int64_t> symbol_values = bound_values;
    symbol_values[changed] = value;
    for (const ReshapeSite& site : model.reshapes) {
      Flow& f = flows[{site.input, site.target}];
      auto it = by_output.find(site.output);
      if (it == by_output.end() || it->second->target.size() != site.target.size()) {
        f.known = false;  // the import made this reshape differently at that size
        continue;
      }
      const ReshapeSite& at = *it->second;
      for (size_t d = 0; d < site.target.size(); ++d) f.varies[d] = f.varies[d] || at.target[d] != site.target[d];
      f.see(at, symbol_values);
    }
  }
  for (const auto& [key, f] : flows) {
    if (!f.known) continue;
    ReshapeTarget target{std::vector<int64_t>(key.second.begin(), key.second.end()),
                         std::vector<InputAxis>(key.second.size())};
    // A changing dimension is a copy (0), inferred (-1, once) or a symbolic dimension read from the graph
    // input that has it (a Shape node: only where the -1 is taken). The -1 goes to the one dimension that is
    // no symbolic dimension, else to the first.
    std::vector<std::pair<size_t, std::optional<size_t>>> open;  // (dimension, its symbol)
    for (size_t d = 0; d < key.second.size(); ++d) {
      if (!f.varies[d]) continue;
      if (f.copies[d]) {
        target.values[d] = 0;
        continue;
      }
      const auto s = std::find(f.is_symbol[d].begin(), f.is_symbol[d].end(), true);
      open.emplace_back(d, s == f.is_symbol[d].end() ? std::nullopt
                                                     : std::optional<size_t>(s - f.is_symbol[d].begin()));
    }
    const auto unread = std::count_if(open.begin(), open.end(), [](const auto& o) { return !o.second; });
    // More than one dimension to infer has no Reshape form; such a reshape stays concrete (and the export
    // fails the second-size guard, which keeps the original).
    if (unread > 1) continue;
    const auto minus_one = unread == 1 ? std::find_if(open.begin(), open.end(), [](const auto& o) { return !o.second; })
                                       : open.begin();
    for (auto o = open.begin(); o != open.end(); ++o) {
      if (o == minus_one)
        target.values[o->first] = -1;
      else
        target.from_input[o->first] = symbols[*o->second].carrier;
    }
    targets[key] = std::move(target);
  }
  return targets;
}

std::string fixed_size_reason(const OnnxModel& model, std::string_view original_bytes, std::string_view optimized_bytes,
                              const ImportOptions& import) {
  if (original_bytes.empty()) return "";
  OptimizedBase base{optimized_bytes, import, std::nullopt};
  for (const SizeAssignment& size : second_sizes(symbolic_dims_of(model, import))) {
    SecondSizeModels m = import_at_second_size(model, size, original_bytes, base, import);
    if (!m.original) continue;
    std::string invalid = !m.optimized ? m.reason
                          : !m.optimized_opaque_here.empty()
                              ? m.failed + "the optimized model is invalid: " + m.optimized_opaque_here + " has no meaning there"
                              : "";
    if (invalid.empty()) continue;
    // An operator the original keeps opaque at this size only may mean that the original does not work there
    // either (then nothing is lost): its evaluation there tells, done only in this case.
    if (!m.original_opaque_here.empty()) {
      Leaves inputs;
      add_random_inputs(*m.original, 1, inputs);
      try {
        evaluate_graph(*m.original, m.original->graph, inputs, {}, "");
      } catch (const detail::NotEvaluable&) {
        // Whether the original works there is unknown: the export, invalid there, is not vouched for.
      } catch (const std::exception&) {
        continue;  // the original fails at this size too
      }
    }
    return invalid;
  }
  return "";
}

namespace {

/// The optimized file (`bytes`, what is written) imported at the imported sizes and compared with the
/// original: the check vouches for that file, with its float32 weights and the exporter's forms, not only for
/// the term it was made from. A file that does not import fails.
CheckResult check_written(const OnnxModel& model, const Expr& optimized, std::string_view bytes,
                          const ImportOptions& import, const CheckOptions& options) {
  const Clock::time_point start = Clock::now();
  std::optional<OnnxModel> written;
  try {
    written = import_onnx_bytes(bytes, "the optimized model", import);
  } catch (const std::exception& e) {
    CheckResult r;
    r.evaluated = true;
    r.reason = std::string("the optimized model does not import: ") + e.what();
    r.seconds = since(start);
    return r;
  }
  CheckResult r = check_models(model, *written, options);
  if (!r.evaluated) {
    // The file holds an operator the evaluator lacks where the term has none (the exporter writes a form
    // that the importer keeps opaque, such as Expand): the term is what can be checked, and the note says so.
    CheckResult term = check_equivalent(model, optimized, options);
    if (term.evaluated) {
      term.note = "checked the optimized term at the imported size, not the written file read back (" + r.reason + ")";
      return term;
    }
  }
  r.passed_imported_size = r.passed;
  return r;
}

}  // namespace

CheckResult check_optimization(const OnnxModel& model, const Expr& optimized, std::string_view original_bytes,
                               const ImportOptions& import, const CheckOptions& options,
                               std::string_view optimized_bytes) {
  const Clock::time_point start = Clock::now();
  CheckResult r = optimized_bytes.empty() ? check_equivalent(model, optimized, options)
                                          : check_written(model, optimized, optimized_bytes, import, options);
  if (!r.evaluated || original_bytes.empty()) return r;
  std::string exported;
  if (optimized_bytes.empty()) optimized_bytes = exported = export_onnx_bytes(model, optimized);
  OptimizedBase base{optimized_bytes, import, std::nullopt};
  for (const SizeAssignment& size : second_sizes(symbolic_dims_of(model, import))) {
    SecondSizeModels m = import_at_second_size(model, size, original_bytes, base, import);
    SizeCheck s;
    s.dim = m.dim;
    s.at = m.at;
    s.value = m.value;
    s.reason = m.reason;
    s.evaluated = m.original && !m.optimized;  // an optimized model invalid where the original works: a failure
    if (m.original && m.optimized) {
      CheckOptions o = options;
      const std::string& at = m.at;
      if (options.on_progress)
        o.on_progress = [&options, &at](const std::string& line) { options.on_progress(line + " at " + at); };
      CheckResult c = check_models(*m.original, *m.optimized, o);
      s.evaluated = c.evaluated;
      s.passed = c.passed;
      s.max_abs_diff = c.max_abs_diff;
      s.max_rel_diff = c.max_rel_diff;
      s.elements = c.elements;
      s.identical = c.identical;
      if (!c.evaluated && c.original_failed && !m.original_opaque_here.empty()) {
        // The original does not work at this size: its operator kept opaque here fails to evaluate.
        s.reason = "the original model does not work at " + at + " (" + m.original_opaque_here +
                   " is opaque there only, and the original's evaluation fails), so this size is not checked: " +
                   c.reason;
      } else if (!c.evaluated && !m.optimized_opaque_here.empty()) {
        // Only evaluating the export shows that an operator it keeps opaque at this size only works there.
        s.evaluated = true;
        s.passed = false;
        s.reason = m.failed + "the optimized model is invalid: " + m.optimized_opaque_here +
                   " is opaque there only and cannot be shown to work (" + c.reason + ")";
      } else if (!c.evaluated && c.optimized_failed) {
        s.evaluated = true;  // the original works at this size and the optimized model does not
        s.passed = false;
        s.reason = m.failed + "the optimized model is invalid: " + c.reason;
      } else if (!c.evaluated) {
        s.reason = "at " + at + " not checked: " + c.reason;
      } else if (!c.passed) {
        s.reason = m.failed + "the optimized model computes other values: " + c.reason;
      }
    }
    if (s.evaluated && !s.passed) {
      r.passed = false;
      if (r.reason.empty()) r.reason = s.reason;
    }
    r.sizes.push_back(std::move(s));
  }
  r.seconds = since(start);
  return r;
}

OriginalFile read_original_file(const std::filesystem::path& path, const ImportOptions& import) {
  OriginalFile f{"", import};
  if (path.empty()) return f;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  if (!(s << in.rdbuf())) throw OnnxError(path.string() + ": cannot read the model again");
  f.bytes = s.str();
  // The original's external tensor data (if any) lies beside it.
  if (f.import.external_data_dir.empty())
    f.import.external_data_dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  return f;
}

CheckResult check_optimization_file(const OnnxModel& model, const Expr& optimized, const std::filesystem::path& original,
                               const ImportOptions& import, const CheckOptions& options,
                               std::string_view optimized_bytes) {
  const OriginalFile f = read_original_file(original, import);
  return check_optimization(model, optimized, f.bytes, f.import, options, optimized_bytes);
}

}  // namespace teq::onnx_io
