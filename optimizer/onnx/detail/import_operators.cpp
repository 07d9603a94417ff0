// The node mappers of the ONNX importer (detail/importer.h): each ONNX node onto the vocabulary, in the
// canonical form the rules are written for (docs/eqsat-run.md lists the mapping), or kept opaque.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <limits>
#include <set>

#include <onnx/onnx_pb.h>

#include "optimizer/onnx/detail/external_data.h"
#include "optimizer/onnx/detail/fold_shapes.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/opset_adapt.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/elementwise.h"
#include "rules/semantics.h"

namespace teq::onnx_io::detail {

void Importer::import_node(const onnx::NodeProto& n) {
  for (const auto& in : n.input())
    if (!in.empty() && !values_.count(in) && !m_.passthrough.count(in))
      fail(describe(n) + " reads '" + in + "', which no earlier node, input or initializer defines");
  // A value computed from the symbolic dimensions stays the computation the file has: the node as it was
  // before folding, opaque; so does a node that reads such a value (its result would otherwise hold one size).
  if (n.op_type() == "Constant" && n.output_size() == 1 && size_dependent_.count(n.output(0))) {
    onnx::NodeProto original;
    if (!original.ParseFromString(folded_.at(n.output(0)).original_node)) fail(describe(n) + ": folded node is corrupt");
    return import_opaque(original);
  }
  if (auto dependent = size_dependent_input(n); dependent && !reshape_follows_sizes(n)) {
    note_opaque(n, "reads '" + *dependent + "', which is computed from the symbolic input dimensions");
    return import_opaque(n);
  }
  const AdaptedNode* adapted = adapted_node(n);
  if (adapted && adapted->stand_in) {
    // An operator newer than opset 17 whose working node only carries its shapes: named as the model has it.
    onnx::NodeProto original;
    original.ParseFromString(adapted->original);
    try {
      if (adapted->gelu && import_gelu(n)) return;
      if (original.op_type() == "Gelu")
        note_opaque(original, "approximate='" + attr_string(original, "approximate", "none") +
                                  "' is not the vocabulary's gelu (the exact erf form)");
    } catch (const NotInVocabulary& e) {
      note_opaque(original, e.reason);
    } catch (const ShapeError& e) {
      note_opaque(original, std::string("shape mismatch: ") + e.what());
    }
  } else if (is_default_domain(n.domain())) {
    try {
      if (import_vocabulary(n)) return;
      note_opaque(n, "");
    } catch (const NotInVocabulary& e) {
      note_opaque(n, e.reason);
    } catch (const ShapeError& e) {
      note_opaque(n, std::string("shape mismatch: ") + e.what());
    } catch (const OnnxError& e) {
      note_opaque(n, e.what());
    }
  } else {
    note_opaque(n, "");
  }
  import_opaque(n);
}

void Importer::note_opaque(const onnx::NodeProto& n, const std::string& reason) {
  if (!reason.empty()) m_.notes.push_back(describe(n) + " stays opaque: " + reason);
}

ExprId Importer::in(const onnx::NodeProto& n, int k) {
  if (k >= n.input_size() || n.input(k).empty()) throw NotInVocabulary{"input " + std::to_string(k) + " missing"};
  const std::string& name = n.input(k);
  auto it = values_.find(name);
  if (it == values_.end() || elem_type(name) != onnx::TensorProto::FLOAT)
    throw NotInVocabulary{"input '" + name + "' is not a float tensor"};
  return it->second;
}

std::optional<std::vector<double>> Importer::const_input(const onnx::NodeProto& n, int k) {
  if (!has_input(n, k)) return std::nullopt;
  auto it = constants_.find(n.input(k));
  if (it == constants_.end()) return std::nullopt;
  return tensor_numbers(*it->second);
}

void Importer::set_output(const onnx::NodeProto& n, ExprId id, int k) {
  const Shape& expected = out_shape(n, k);
  if (shapes_[id.value] != expected)
    throw NotInVocabulary{"mapped shape " + to_string(shapes_[id.value]) + " differs from ONNX's " +
                          to_string(expected)};
  pending_.emplace_back(n.output(k), id);
}

ExprId Importer::broadcast_to(ExprId x, const Shape& target) {
  if (shapes_[x.value] == target) return x;
  std::vector<int64_t> attrs(target.begin(), target.end());
  return add(OpKind::Broadcast, attrs, {x});
}

void Importer::require_single_output(const onnx::NodeProto& n) {
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty() && used_.count(n.output(k)))
      throw NotInVocabulary{"optional output '" + n.output(k) + "' is used"};
}

std::optional<int64_t> Importer::map_padding(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool conv) {
  // Canonical form first: explicit pads that are SAME padding (PyTorch's padding=k//2 at stride 1) become
  // SAME, the form the rules are written in, so one rule matches every encoding of the same convolution.
  int64_t out_same = (in + s - 1) / s, total = std::max<int64_t>((out_same - 1) * s + k - in, 0);
  if (pb == total / 2 && pe == total - total / 2 && (total > 0 || conv)) return -1;
  if (pb == pe) return pb;
  // Asymmetric padding that produces as many outputs as symmetric pb places every window identically.
  if (in + 2 * pb >= k && (in + pb + pe - k) / s == (in + 2 * pb - k) / s) return pb;
  return std::nullopt;
}

std::array<int64_t, 6> Importer::window_attrs(const onnx::NodeProto& n, const Shape& x, int64_t kh, int64_t kw,
                                              bool dilation_allowed, const std::array<int64_t, 4>& extra) {
  std::vector<int64_t> dilations = attr_ints(n, "dilations").value_or(std::vector<int64_t>{1, 1});
  if (dilations.size() != 2) throw NotInVocabulary{"dilations are not 2-d"};
  if (!dilation_allowed && (dilations[0] != 1 || dilations[1] != 1)) throw NotInVocabulary{"dilations other than 1"};
  std::vector<int64_t> strides = attr_ints(n, "strides").value_or(std::vector<int64_t>{1, 1});
  std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
  if (strides.size() != 2 || pads.size() != 4) throw NotInVocabulary{"strides/pads are not 2-d"};
  const int64_t kernel[2] = {ops::dilated_extent(kh, dilations[0]), ops::dilated_extent(kw, dilations[1])};
  std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (extra != std::array<int64_t, 4>{0, 0, 0, 0}) {
    if (auto_pad != "NOTSET") throw NotInVocabulary{"a Pad before auto_pad " + auto_pad};
    for (int k = 0; k < 4; ++k) pads[k] += extra[k];
  }
  std::array<int64_t, 6> out{strides[0], strides[1], 0, 0, dilations[0], dilations[1]};
  for (int a = 0; a < 2; ++a) {
    int64_t in = x[2 + a], s = strides[a], pb = pads[a], pe = pads[a + 2];
    if (auto_pad == "VALID") {
      pb = pe = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(((in + s - 1) / s - 1) * s + kernel[a] - in, 0);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (auto_pad != "NOTSET") {
      throw NotInVocabulary{"auto_pad " + auto_pad};
    }
    auto p = map_padding(in, kernel[a], s, pb, pe, n.op_type() == "Conv");
    if (!p) throw NotInVocabulary{"asymmetric padding"};
    out[2 + a] = *p;
  }
  return out;
}

bool Importer::import_vocabulary(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  pending_.clear();
  if (op == "Constant") return import_constant(n);
  for (const auto& out : n.output())
    if (!out.empty() && elem_type(out) != onnx::TensorProto::FLOAT && used_.count(out))
      throw NotInVocabulary{"output '" + out + "' is not a float tensor"};
  if (op == "Identity" || op == "Dropout") {
    require_single_output(n);
    if (op == "Dropout" && has_input(n, 2)) {
      auto training = const_input(n, 2);
      if (!training || (!training->empty() && (*training)[0] != 0)) throw NotInVocabulary{"training mode"};
    }
    alias(n, in(n, 0));
  } else if (op == "Relu" || op == "Sigmoid" || op == "Tanh") {
    OpKind k = op == "Relu" ? OpKind::Relu : op == "Sigmoid" ? OpKind::Sigmoid : OpKind::Tanh;
    set_output(n, add(k, {}, {in(n, 0)}));
  } else if (op == "Clip") {
    double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
    if (m_.opset < 11) {
      lo = attr_float(n, "min", -FLT_MAX);
      hi = attr_float(n, "max", FLT_MAX);
    } else {
      for (int k : {1, 2}) {
        if (!has_input(n, k)) continue;
        auto v = const_input(n, k);
        if (!v || v->size() != 1) throw NotInVocabulary{"non-constant clip bounds"};
        (k == 1 ? lo : hi) = (*v)[0];
      }
    }
    import_clip(n, lo, hi);
  } else if (op == "Mul" && import_erf_gelu(n)) {
    // PyTorch's exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)): the vocabulary's gelu
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    import_binary(n);
  } else if (op == "MatMul") {
    ExprId a = in(n, 0), b = in(n, 1);
    if (shapes_[a.value].size() < 2 || shapes_[b.value].size() < 2) throw NotInVocabulary{"1-d operand"};
    set_output(n, add(OpKind::Matmul, {0}, {a, b}));
  } else if (op == "Gemm") {
    import_gemm(n);
  } else if (op == "Conv") {
    import_conv(n);
  } else if (op == "MaxPool" || op == "AveragePool") {
    require_single_output(n);
    ExprId x = in(n, 0);
    const Shape& xs = shapes_[x.value];
    auto kernel = attr_ints(n, "kernel_shape");
    if (xs.size() != 4 || !kernel || kernel->size() != 2) throw NotInVocabulary{"not a 2-d pooling"};
    if (attr_int(n, "storage_order", 0) != 0) throw NotInVocabulary{"storage_order"};
    int64_t include_pad = attr_int(n, "count_include_pad", 0) != 0 ? 1 : 0;
    std::optional<std::array<int64_t, 6>> w;
    if (op == "AveragePool") {
      // A zero Pad of the spatial axes before it (PyTorch's avg_pool2d(padding=p) with count_include_pad)
      // is the pooling's own padding counted in the divisor: every window then holds kh*kw elements,
      // real or padded, so it divides by kh*kw. That needs the pooling's own pads to be counted as well
      // (count_include_pad=1) or absent.
      auto own = attr_ints(n, "pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
      const bool no_own = std::all_of(own.begin(), own.end(), [](int64_t p) { return p == 0; });
      if (auto f = foldable_pad(x); f && (include_pad || no_own)) {
        try {
          w = window_attrs(n, shapes_[f->x.value], (*kernel)[0], (*kernel)[1], /*dilation_allowed=*/false, f->pads);
          x = f->x;
          include_pad = 1;
        } catch (const NotInVocabulary&) {
          // not expressible as our symmetric or SAME padding: the Pad stays a node of its own
        }
      }
    }
    if (!w) w = window_attrs(n, xs, (*kernel)[0], (*kernel)[1]);
    std::vector<int64_t> attrs{(*kernel)[0], (*kernel)[1], (*w)[0], (*w)[1], (*w)[2], (*w)[3]};
    if (op == "AveragePool") attrs.push_back(include_pad);
    set_output(n, add(op == "MaxPool" ? OpKind::MaxPool : OpKind::AvgPool, attrs, {x}));
  } else if (op == "GlobalAveragePool") {
    ExprId x = in(n, 0);
    if (shapes_[x.value].size() != 4) throw NotInVocabulary{"not 2-d"};
    set_output(n, add(OpKind::GlobalAvgPool, {}, {x}));
  } else if (op == "Concat") {
    std::vector<ExprId> kids;
    for (int k = 0; k < n.input_size(); ++k) kids.push_back(in(n, k));
    auto axis = find_attr(n, "axis");
    if (!axis) throw NotInVocabulary{"no axis"};
    set_output(n, kids.size() == 1 ? kids[0] : add(OpKind::Concat, {axis->i()}, kids));
  } else if (op == "Split") {
    ExprId x = in(n, 0);
    const Shape xs = shapes_[x.value];  // a copy: add() below grows shapes_
    int64_t axis = normalize_axis(attr_int(n, "axis", 0), xs.size(), "Split", {});
    int64_t begin = 0;
    for (int k = 0; k < n.output_size(); ++k) {
      int64_t size = out_shape(n, k)[axis];
      set_output(n, size == xs[axis] ? x : add(OpKind::Slice, {axis, begin, begin + size}, {x}), k);
      begin += size;
    }
  } else if (op == "Slice") {
    import_slice(n);
  } else if (op == "Transpose") {
    ExprId x = in(n, 0);
    size_t rank = shapes_[x.value].size();
    std::vector<int64_t> perm;
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    perm = attr_ints(n, "perm").value_or(perm);
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
    set_output(n, identity ? x : add(OpKind::Transpose, perm, {x}));
  } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    // ONNX shape inference already resolved -1, 0 and the axes: the output shape is the reshape.
    ExprId x = in(n, 0);
    const Shape& s = out_shape(n);
    if (s == shapes_[x.value]) {
      set_output(n, x);
    } else {
      set_output(n, add(OpKind::Reshape, std::vector<int64_t>(s.begin(), s.end()), {x}));
      m_.reshapes.push_back({n.output(0), shapes_[x.value], s});
    }
  } else if (op == "Sqrt" || op == "Erf") {
    set_output(n, add(op == "Sqrt" ? OpKind::Sqrt : OpKind::Erf, {}, {in(n, 0)}));
  } else if (op == "Pow") {
    import_pow(n);
  } else if (op == "ReduceMean") {
    import_reduce_mean(n);
  } else if (op == "Pad") {
    import_pad(n);
  } else if (op == "LayerNormalization") {
    import_layernorm(n);
  } else if (op == "BatchNormalization") {
    import_batchnorm(n);
  } else if (op == "Softmax") {
    ExprId x = in(n, 0);
    size_t rank = shapes_[x.value].size();
    int64_t axis = normalize_axis(attr_int(n, "axis", m_.opset >= 13 ? -1 : 1), rank, "Softmax", {});
    // Before opset 13 Softmax flattens to 2-d at `axis`: the same as ours only on the last axis.
    if (m_.opset < 13 && axis != static_cast<int64_t>(rank) - 1)
      throw NotInVocabulary{"opset < 13 softmax over more than the last axis"};
    set_output(n, add(OpKind::Softmax, {axis}, {x}));
  } else {
    return false;
  }
  for (const auto& [name, id] : pending_) values_[name] = id;
  return true;
}

bool Importer::import_constant(const onnx::NodeProto& n) {
  const auto* value = find_attr(n, "value");
  if (!value || !value->has_t()) throw NotInVocabulary{"Constant without a tensor 'value'"};
  onnx::TensorProto t = value->t();
  t.set_name(n.output(0));
  Shape dims = tensor_dims(t);
  constant_storage_.push_back(std::make_unique<onnx::TensorProto>(t));
  constants_[t.name()] = constant_storage_.back().get();
  if (t.data_type() == onnx::TensorProto::FLOAT && num_elements(dims) > 0)
    values_[t.name()] = weight(t.name(), Tensor<float>(dims, tensor_floats(t)));
  else
    m_.passthrough[t.name()] = t.SerializeAsString();
  return true;
}

bool Importer::constant_all(const onnx::NodeProto& n, int k, double v) {
  auto values = const_input(n, k);
  return values && !values->empty() && std::all_of(values->begin(), values->end(), [v](double x) { return x == v; });
}

void Importer::import_binary(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  ExprId a = in(n, 0), b = in(n, 1);
  const Shape& out = out_shape(n);
  // Canonical form: x*1, 1*x, x/1, x+0, 0+x and x-0 are x (when x already has the output's shape).
  const bool mul_or_div = op == "Mul" || op == "Div", add_or_sub = op == "Add" || op == "Sub";
  for (int k : {1, 0}) {
    if (k == 0 && (op == "Div" || op == "Sub")) continue;
    ExprId keep = k == 1 ? a : b;
    if (shapes_[keep.value] == out && ((mul_or_div && constant_all(n, k, 1)) || (add_or_sub && constant_all(n, k, 0)))) {
      m_.folded.push_back(describe(n) + ": " + (mul_or_div ? "a factor of one" : "a term of zero") + " removed");
      return alias(n, keep);
    }
  }
  if (op == "Mul" && shapes_[b.value].empty() && shapes_[a.value] == out) return set_output(n, add(OpKind::Smul, {}, {a, b}));
  if (op == "Mul" && shapes_[a.value].empty() && shapes_[b.value] == out) return set_output(n, add(OpKind::Smul, {}, {b, a}));
  OpKind k = op == "Add" ? OpKind::EwAdd : op == "Sub" ? OpKind::EwSub : op == "Mul" ? OpKind::EwMul : OpKind::EwDiv;
  set_output(n, add(k, {}, {broadcast_to(a, out), broadcast_to(b, out)}));
}

void Importer::import_gemm(const onnx::NodeProto& n) {
  ExprId a = in(n, 0), b = in(n, 1);
  if (shapes_[a.value].size() != 2 || shapes_[b.value].size() != 2) throw NotInVocabulary{"operands not 2-d"};
  if (attr_int(n, "transA", 0)) a = add(OpKind::Transpose, {1, 0}, {a});
  if (attr_int(n, "transB", 0)) b = add(OpKind::Transpose, {1, 0}, {b});
  ExprId y = add(OpKind::Matmul, {0}, {a, b});
  const std::string hint = n.output(0);
  if (float alpha = attr_float(n, "alpha", 1.0f); alpha != 1.0f) y = add(OpKind::Smul, {}, {y, scalar_weight(hint + ".alpha", alpha)});
  if (has_input(n, 2)) {
    ExprId c = in(n, 2);
    if (float beta = attr_float(n, "beta", 1.0f); beta != 1.0f) c = add(OpKind::Smul, {}, {c, scalar_weight(hint + ".beta", beta)});
    y = add(OpKind::EwAdd, {}, {y, broadcast_to(c, shapes_[y.value])});
  }
  set_output(n, y);
}

void Importer::import_conv(const onnx::NodeProto& n) {
  ExprId x = in(n, 0), w = in(n, 1);
  const Shape xs = shapes_[x.value], ws = shapes_[w.value];  // copies: add() grows shapes_
  if (xs.size() != 4 || ws.size() != 4) throw NotInVocabulary{"not a 2-d convolution"};
  std::optional<std::array<int64_t, 6>> folded;
  if (auto f = foldable_pad(x)) {
    // A zero Pad of the spatial axes is the convolution's own zero padding.
    try {
      folded = window_attrs(n, shapes_[f->x.value], ws[2], ws[3], /*dilation_allowed=*/true, f->pads);
      x = f->x;
    } catch (const NotInVocabulary&) {
      // not expressible as our padding: the Pad stays a node of its own
    }
  }
  auto a = folded ? *folded : window_attrs(n, xs, ws[2], ws[3], /*dilation_allowed=*/true);
  ExprId y = add(OpKind::Conv2d, ops::conv2d_attr_list({a[0], a[1], a[2], a[3], Activation::None, a[4], a[5]}), {x, w});
  if (has_input(n, 2)) {
    // Bias [O] -> [O,1,1], broadcast over N, H, W.
    ExprId bias = add(OpKind::Reshape, {ws[0], 1, 1}, {in(n, 2)});
    y = add(OpKind::EwAdd, {}, {y, broadcast_to(bias, shapes_[y.value])});
  }
  set_output(n, y);
}

void Importer::import_slice(const onnx::NodeProto& n) {
  ExprId x = in(n, 0);
  const Shape xs = shapes_[x.value];
  std::vector<double> starts, ends, axes, steps;
  if (m_.opset < 10) {
    auto s = attr_ints(n, "starts"), e = attr_ints(n, "ends");
    if (!s || !e) throw NotInVocabulary{"no starts/ends"};
    starts.assign(s->begin(), s->end());
    ends.assign(e->begin(), e->end());
    if (auto ax = attr_ints(n, "axes")) axes.assign(ax->begin(), ax->end());
  } else {
    auto s = const_input(n, 1), e = const_input(n, 2);
    if (!s || !e) throw NotInVocabulary{"non-constant starts/ends"};
    starts = *s;
    ends = *e;
    if (has_input(n, 3)) {
      auto ax = const_input(n, 3);
      if (!ax) throw NotInVocabulary{"non-constant axes"};
      axes = *ax;
    }
    if (has_input(n, 4)) {
      auto st = const_input(n, 4);
      if (!st) throw NotInVocabulary{"non-constant steps"};
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<double>(d));
  ExprId y = x;
  for (size_t k = 0; k < starts.size(); ++k) {
    if (!steps.empty() && steps[k] != 1) throw NotInVocabulary{"step other than 1"};
    int64_t axis = normalize_axis(static_cast<int64_t>(axes[k]), xs.size(), "Slice", {});
    double extent = static_cast<double>(xs[axis]);
    auto clamp = [&](double v) { return std::clamp(v < 0 ? v + extent : v, 0.0, extent); };
    int64_t b = static_cast<int64_t>(clamp(starts[k])), e = static_cast<int64_t>(clamp(ends[k]));
    if (b >= e) throw NotInVocabulary{"empty slice"};
    if (b == 0 && e == xs[axis]) continue;
    y = add(OpKind::Slice, {axis, b, e}, {y});
  }
  set_output(n, y);
}

const Tensor<float>* Importer::weight_value(ExprId id) const {
  const ExprNode& node = m_.graph[id];
  if (node.op != OpKind::Weight) return nullptr;
  auto it = m_.weights.find(node.name);
  if (it == m_.weights.end()) return nullptr;
  // Held for the rest of the import: a weight in an external file is read only when a fold asks for it.
  return read_weights_.emplace(node.name, it->second.values()).first->second.get();
}

std::optional<ExprId> Importer::fold_batchnorm_into_conv(const onnx::NodeProto& n, ExprId x, float eps) {
  if (auto r = readers_.find(n.input(0)); r == readers_.end() || r->second != 1) return std::nullopt;  // the convolution's output is read elsewhere too
  const Tensor<float>* bn[4];
  for (int k = 1; k <= 4; ++k) {
    auto it = values_.find(n.input(k));
    if (it == values_.end() || !(bn[k - 1] = weight_value(it->second))) return std::nullopt;
  }
  // x is conv2d(input, w) or ewadd(conv2d(input, w), broadcast(reshape(b))), as import_conv builds it.
  ExprId conv = x;
  const Tensor<float>* conv_bias = nullptr;
  if (m_.graph[x].op == OpKind::EwAdd) {
    conv = m_.graph[x].children[0];
    ExprId bc = m_.graph[x].children[1];
    if (m_.graph[bc].op != OpKind::Broadcast || m_.graph[m_.graph[bc].children[0]].op != OpKind::Reshape) return std::nullopt;
    conv_bias = weight_value(m_.graph[m_.graph[bc].children[0]].children[0]);
    if (!conv_bias) return std::nullopt;
  }
  const ExprNode conv_node = m_.graph[conv];  // a copy: add() below grows the graph
  if (conv_node.op != OpKind::Conv2d || fused_activation(conv_node.op, conv_node.attrs) != Activation::None)
    return std::nullopt;
  const Tensor<float>* w = weight_value(conv_node.children[1]);
  if (!w) return std::nullopt;
  const int64_t out_channels = w->shape[0];
  for (const Tensor<float>* t : bn)
    if (t->shape != Shape{out_channels}) return std::nullopt;
  if (conv_bias && conv_bias->shape != Shape{out_channels}) return std::nullopt;
  const auto& [scale, beta, mean, var] = bn;
  Tensor<float> folded_w = *w;
  std::vector<float> folded_b(static_cast<size_t>(out_channels));
  const size_t per_channel = folded_w.data.size() / static_cast<size_t>(out_channels);
  for (size_t o = 0; o < static_cast<size_t>(out_channels); ++o) {
    const double k = scale->data[o] / std::sqrt(static_cast<double>(var->data[o]) + eps);
    for (size_t i = 0; i < per_channel; ++i) folded_w.data[o * per_channel + i] = static_cast<float>(folded_w.data[o * per_channel + i] * k);
    folded_b[o] = static_cast<float>(((conv_bias ? conv_bias->data[o] : 0.0f) - mean->data[o]) * k + beta->data[o]);
  }
  const std::string w_name = m_.graph[conv_node.children[1]].name;
  ExprId new_w = weight(unique_name(w_name + ".bn"), std::move(folded_w));
  ExprId y = add(OpKind::Conv2d, conv_node.attrs, {conv_node.children[0], new_w});
  ExprId b = weight(unique_name(w_name + ".bn_bias"), Tensor<float>(Shape{out_channels}, std::move(folded_b)));
  ExprId bias = add(OpKind::Reshape, {out_channels, 1, 1}, {b});
  m_.folded.push_back(describe(n) + ": folded into the convolution before it");
  return add(OpKind::EwAdd, {}, {y, broadcast_to(bias, shapes_[y.value])});
}

const onnx::NodeProto* Importer::sole_producer(const std::string& name, const std::string& op_type) const {
  auto it = producer_.find(name);
  if (it == producer_.end() || it->second->op_type() != op_type || !is_default_domain(it->second->domain()))
    return nullptr;
  auto r = readers_.find(name);
  return r != readers_.end() && r->second == 1 ? it->second : nullptr;
}

bool Importer::is_constant(const std::string& name, double v) {
  auto it = constants_.find(name);
  if (it == constants_.end()) return false;
  auto x = tensor_numbers(*it->second);
  return x && x->size() == 1 && std::fabs((*x)[0] - v) <= 1e-6;
}

bool Importer::import_erf_gelu(const onnx::NodeProto& n) {
  if (n.input_size() != 2) return false;
  // The three factors of the two nested products.
  for (int k = 0; k < 2; ++k) {
    const onnx::NodeProto* inner = sole_producer(n.input(k), "Mul");
    if (!inner || inner->input_size() != 2) continue;
    const std::string factors[3] = {n.input(1 - k), inner->input(0), inner->input(1)};
    for (int half = 0; half < 3; ++half) {
      if (!is_constant(factors[half], 0.5)) continue;
      for (int x = 0; x < 3; ++x) {
        if (x == half) continue;
        const std::string& one_plus = factors[3 - half - x];
        auto y = erf_gelu_input(one_plus);
        if (!y || *y != factors[x]) continue;
        auto v = values_.find(*y);
        if (v == values_.end() || elem_type(*y) != onnx::TensorProto::FLOAT) return false;
        set_output(n, add(OpKind::Gelu, {}, {v->second}));
        return true;
      }
    }
  }
  return false;
}

std::optional<std::string> Importer::erf_gelu_input(const std::string& name) {
  const onnx::NodeProto* add1 = sole_producer(name, "Add");
  if (!add1 || add1->input_size() != 2) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    if (!is_constant(add1->input(1 - k), 1.0)) continue;
    const onnx::NodeProto* erf = sole_producer(add1->input(k), "Erf");
    if (!erf) continue;
    if (const onnx::NodeProto* div = sole_producer(erf->input(0), "Div");
        div && div->input_size() == 2 && is_constant(div->input(1), std::sqrt(2.0)))
      return div->input(0);
    if (const onnx::NodeProto* mul = sole_producer(erf->input(0), "Mul"); mul && mul->input_size() == 2)
      for (int j = 0; j < 2; ++j)
        if (is_constant(mul->input(1 - j), std::sqrt(0.5))) return mul->input(j);
  }
  return std::nullopt;
}

std::optional<std::array<int64_t, 2>> Importer::dyadic(double v) {
  if (!std::isfinite(v) || static_cast<double>(static_cast<float>(v)) != v) return std::nullopt;
  int64_t exp = 0;
  for (; v != std::floor(v); v *= 2)  // exact: doubling a double only changes its exponent
    if (++exp > 62) return std::nullopt;
  if (std::fabs(v) >= 0x1p62) return std::nullopt;
  return std::array<int64_t, 2>{static_cast<int64_t>(v), exp};
}

void Importer::import_clip(const onnx::NodeProto& n, double lo, double hi) {
  ExprId x = in(n, 0);
  if (std::isnan(lo) || std::isnan(hi)) throw NotInVocabulary{"NaN clip bound"};
  const bool has_lo = lo > -FLT_MAX, has_hi = hi < FLT_MAX;
  if (lo == 0 && !has_hi) return set_output(n, add(OpKind::Relu, {}, {x}));
  if (!has_lo && !has_hi) return set_output(n, x);
  auto bound = [](double v) {
    auto d = dyadic(v);
    if (!d) throw NotInVocabulary{"clip bound " + std::to_string(v) + " is not num / 2^k with k <= 62"};
    return ops::ClipBound{(*d)[0], (*d)[1]};
  };
  ops::ClipAttrs c;
  if (has_lo) c.lo = bound(lo);
  if (has_hi) c.hi = bound(hi);
  if (has_lo && has_hi && lo > hi) throw NotInVocabulary{"clip with min above max"};
  set_output(n, add(OpKind::Clip, ops::clip_attr_list(c), {x}));
}

void Importer::import_pow(const onnx::NodeProto& n) {
  ExprId x = in(n, 0);
  auto e = const_input(n, 1);
  if (!e || e->size() != 1) throw NotInVocabulary{"exponent is not a constant scalar"};
  const double p = (*e)[0];
  if (p == 2) return set_output(n, add(OpKind::EwMul, {}, {x, x}));
  if (p == 0.5) return set_output(n, add(OpKind::Sqrt, {}, {x}));
  if (p == 1) return set_output(n, x);
  std::ostringstream what;
  what << "exponent " << p << " (the vocabulary has 2 as ewmul x x, 0.5 as sqrt and 1)";
  throw NotInVocabulary{what.str()};
}

void Importer::import_reduce_mean(const onnx::NodeProto& n) {
  ExprId x = in(n, 0);
  const Shape xs = shapes_[x.value];
  if (xs.empty()) throw NotInVocabulary{"0-d input"};
  std::vector<int64_t> axes;
  if (auto a = attr_ints(n, "axes")) {
    for (int64_t v : *a) axes.push_back(normalize_axis(v, xs.size(), "ReduceMean", {}));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw NotInVocabulary{"repeated axis"};
  }
  if (axes.empty())  // no axes: every axis
    for (size_t d = 0; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  std::vector<int64_t> attrs{attr_int(n, "keepdims", 1) != 0 ? 1 : 0};
  attrs.insert(attrs.end(), axes.begin(), axes.end());
  set_output(n, add(OpKind::ReduceMean, attrs, {x}));
}

void Importer::import_pad(const onnx::NodeProto& n) {
  ExprId x = in(n, 0);
  const Shape xs = shapes_[x.value];
  const std::string mode = attr_string(n, "mode", "constant");
  if (mode != "constant") throw NotInVocabulary{"mode '" + mode + "'"};
  std::vector<double> pads;
  double value = 0;
  if (m_.opset < 11) {
    auto p = attr_ints(n, "pads");
    if (!p) throw NotInVocabulary{"no pads"};
    pads.assign(p->begin(), p->end());
    value = attr_float(n, "value", 0.0f);
  } else {
    auto p = const_input(n, 1);
    if (!p) throw NotInVocabulary{"non-constant pads"};
    pads = *p;
    if (has_input(n, 2)) {
      auto v = const_input(n, 2);
      if (!v || v->size() > 1) throw NotInVocabulary{"non-constant pad value"};
      if (!v->empty()) value = (*v)[0];
    }
  }
  if (value != 0) throw NotInVocabulary{"pad value other than 0"};
  if (pads.size() != 2 * xs.size()) throw NotInVocabulary{"pads do not cover every axis"};
  std::vector<int64_t> attrs;
  for (double p : pads) {
    if (p < 0) throw NotInVocabulary{"negative pads (cropping)"};
    attrs.push_back(static_cast<int64_t>(p));
  }
  if (std::all_of(attrs.begin(), attrs.end(), [](int64_t p) { return p == 0; })) return set_output(n, x);
  set_output(n, add(OpKind::Pad, attrs, {x}));
}

auto Importer::foldable_pad(ExprId id) const -> std::optional<FoldablePad> {
  const ExprNode& p = m_.graph[id];
  if (p.op != OpKind::Pad || p.attrs.size() != 8) return std::nullopt;
  const auto& a = p.attrs;
  if (a[0] || a[1] || a[4] || a[5]) return std::nullopt;
  return FoldablePad{p.children[0], {a[2], a[3], a[6], a[7]}};
}

void Importer::import_layernorm(const onnx::NodeProto& n) {
  require_single_output(n);
  ExprId x = in(n, 0);
  const Shape xs = shapes_[x.value];
  if (xs.empty()) throw NotInVocabulary{"0-d input"};
  if (attr_int(n, "stash_type", 1) != 1) throw NotInVocabulary{"stash_type other than float"};
  const int64_t axis = normalize_axis(attr_int(n, "axis", -1), xs.size(), "LayerNormalization", {});
  std::vector<int64_t> attrs{1};
  for (int64_t d = axis; d < static_cast<int64_t>(xs.size()); ++d) attrs.push_back(d);
  const float eps = attr_float(n, "epsilon", 1e-5f);
  ExprId mean = add(OpKind::ReduceMean, attrs, {x});
  ExprId d = add(OpKind::EwSub, {}, {x, broadcast_to(mean, xs)});
  ExprId var = add(OpKind::ReduceMean, attrs, {add(OpKind::EwMul, {}, {d, d})});
  const Shape vs = shapes_[var.value];
  ExprId sd = add(OpKind::Sqrt, {}, {add(OpKind::EwAdd, {}, {var, broadcast_to(scalar_weight(n.output(0) + ".epsilon", eps), vs)})});
  ExprId y = add(OpKind::EwDiv, {}, {d, broadcast_to(sd, xs)});
  y = add(OpKind::EwMul, {}, {y, broadcast_to(in(n, 1), xs)});
  if (has_input(n, 2)) y = add(OpKind::EwAdd, {}, {y, broadcast_to(in(n, 2), xs)});
  set_output(n, y);
}

void Importer::import_batchnorm(const onnx::NodeProto& n) {
  require_single_output(n);
  if (attr_int(n, "training_mode", 0) != 0) throw NotInVocabulary{"training mode"};
  if (m_.opset < 9 && attr_int(n, "spatial", 1) != 1) throw NotInVocabulary{"spatial = 0"};
  float eps = attr_float(n, "epsilon", 1e-5f);
  if (auto folded = fold_batchnorm_into_conv(n, in(n, 0), eps)) return set_output(n, *folded);
  ExprId x = in(n, 0), scale = in(n, 1), bias = in(n, 2), mean = in(n, 3), var = in(n, 4);
  if (eps != 0) {
    // Our batchnorm has no epsilon: fold it into the variance (a new weight when var is one).
    const ExprNode& v = m_.graph[var];
    if (v.op == OpKind::Weight) {
      std::string key = v.name + "\x1f" + std::to_string(eps);
      auto it = folded_var_.find(key);
      if (it == folded_var_.end()) {
        Tensor<float> t = *m_.weights.at(v.name).values();
        for (float& e : t.data) e += eps;
        it = folded_var_.emplace(key, weight(unique_name(v.name + "+eps"), std::move(t))).first;
      }
      var = it->second;
    } else {
      ExprId e = scalar_weight(n.output(0) + ".epsilon", eps);
      var = add(OpKind::EwAdd, {}, {var, broadcast_to(e, shapes_[var.value])});
    }
  }
  set_output(n, add(OpKind::BatchNorm, {}, {x, scale, bias, mean, var}));
}

const AdaptedNode* Importer::adapted_node(const onnx::NodeProto& n) const {
  if (adapted_.empty() || n.output_size() == 0) return nullptr;
  auto it = adapted_.find(n.output(0));
  return it == adapted_.end() ? nullptr : &it->second;
}

bool Importer::import_gelu(const onnx::NodeProto& n) {
  pending_.clear();
  if (elem_type(n.output(0)) != onnx::TensorProto::FLOAT) throw NotInVocabulary{"not a float tensor"};
  set_output(n, add(OpKind::Gelu, {}, {in(n, 0)}));
  for (const auto& [name, id] : pending_) values_[name] = id;
  return true;
}

void Importer::import_opaque(const onnx::NodeProto& working) {
  // A node adapted to opset 17 is exported as the model had it, with its original inputs.
  onnx::NodeProto original;
  const AdaptedNode* adapted = adapted_node(working);
  if (adapted && !original.ParseFromString(adapted->original)) fail(describe(working) + ": adapted node is corrupt");
  const onnx::NodeProto& n = adapted ? original : working;
  OpaqueNode node{n.op_type(), n.domain(), n.name(), n.SerializeAsString(), {}, {}, {}};
  // Control flow is written as the file has it, without the sizes shape inference put into its subgraphs.
  if (auto cf = n.output_size() > 0 ? control_flow_.find(n.output(0)) : control_flow_.end(); cf != control_flow_.end())
    node.proto = cf->second;
  std::vector<ExprId> kids;
  for (const auto& name : n.input()) {
    auto it = values_.find(name);
    if (name.empty() || it == values_.end()) {
      node.input_child.push_back(-1);  // optional input left out, or a passed-through initializer
      continue;
    }
    node.input_child.push_back(static_cast<int>(kids.size()));
    kids.push_back(it->second);
  }
  for (const auto& name : outer_references(n)) {
    auto it = values_.find(name);
    if (it == values_.end()) {
      if (!m_.passthrough.count(name))
        fail(describe(n) + " reads '" + name + "' in a subgraph, which no earlier node, input or initializer defines");
      node.implicit_inputs.emplace_back(name, -1);
      continue;
    }
    node.implicit_inputs.emplace_back(name, static_cast<int>(kids.size()));
    kids.push_back(it->second);
  }
  const int64_t id = static_cast<int64_t>(m_.opaque.size());
  for (int k = 0; k < n.output_size(); ++k) {
    const std::string& out = n.output(k);
    node.output_types.push_back(out.empty() ? 0 : elem_type(out));
    if (out.empty() || !used_.count(out)) continue;
    const Shape& s = shape_of(out, &n);
    for (int64_t d : s)
      if (d < 1) fail(describe(n) + " produces '" + out + "' with a zero-size dimension, which is not supported");
    std::vector<int64_t> attrs{id, k};
    attrs.insert(attrs.end(), s.begin(), s.end());
    values_[out] = add(OpKind::Opaque, std::move(attrs), kids);
  }
  m_.opaque.push_back(std::move(node));
}

}  // namespace teq::onnx_io::detail
