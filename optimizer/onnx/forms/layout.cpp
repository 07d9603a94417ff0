// The layout family's ONNX forms (rules/ops/layout.h): Concat, Split (as slices), Slice, Transpose,
// Reshape/Flatten/Squeeze/Unsqueeze (as reshape) and Pad in; Concat, Slice (split and slice), Split (slices
// tiling an axis), Transpose, Reshape and Pad out.
#include <algorithm>
#include <map>
#include <optional>

#include "optimizer/onnx/detail/exporter.h"
#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/onnx_forms.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/layout.h"

namespace teq::onnx_io::detail {

namespace {

// ---- import ------------------------------------------------------------------------------------------

void import_concat(Importer& im, const onnx::NodeProto& n) {
  std::vector<ExprId> kids;
  for (int k = 0; k < n.input_size(); ++k) kids.push_back(im.in(n, k));
  auto axis = find_attr(n, "axis");
  if (!axis) throw NotInVocabulary{"no axis"};
  im.set_output(n, kids.size() == 1 ? kids[0] : im.add(OpKind::Concat, {axis->i()}, kids));
}

/// Each output a slice of the input (the vocabulary's split cuts at a tensor's extent, which ONNX's
/// split sizes are not).
void import_split(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  const Shape xs = im.shape(x);  // a copy: add() below grows the shapes
  int64_t axis = normalize_axis(attr_int(n, "axis", 0), xs.size(), "Split", {});
  int64_t begin = 0;
  for (int k = 0; k < n.output_size(); ++k) {
    int64_t size = im.out_shape(n, k)[axis];
    im.set_output(n, size == xs[axis] ? x : im.add(OpKind::Slice, {axis, begin, begin + size}, {x}), k);
    begin += size;
  }
}

/// A Slice's starts, ends, axes and steps, wherever the opset keeps them.
struct SliceRanges {
  std::vector<double> starts, ends, axes, steps;
};

/// A slice per sliced axis (steps 1 only), the whole axis none.
void import_slice(Importer& im, const onnx::NodeProto& n, ExprId x, SliceRanges r) {
  const Shape xs = im.shape(x);
  if (r.axes.empty())
    for (size_t d = 0; d < r.starts.size(); ++d) r.axes.push_back(static_cast<double>(d));
  ExprId y = x;
  for (size_t k = 0; k < r.starts.size(); ++k) {
    if (!r.steps.empty() && r.steps[k] != 1) throw NotInVocabulary{"step other than 1"};
    int64_t axis = normalize_axis(static_cast<int64_t>(r.axes[k]), xs.size(), "Slice", {});
    double extent = static_cast<double>(xs[axis]);
    auto clamp = [&](double v) { return std::clamp(v < 0 ? v + extent : v, 0.0, extent); };
    int64_t b = static_cast<int64_t>(clamp(r.starts[k])), e = static_cast<int64_t>(clamp(r.ends[k]));
    if (b >= e) throw NotInVocabulary{"empty slice"};
    if (b == 0 && e == xs[axis]) continue;
    y = im.add(OpKind::Slice, {axis, b, e}, {y});
  }
  im.set_output(n, y);
}

/// Before opset 10 the ranges are attributes.
void import_slice_attributes(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  SliceRanges r;
  auto s = attr_ints(n, "starts"), e = attr_ints(n, "ends");
  if (!s || !e) throw NotInVocabulary{"no starts/ends"};
  r.starts.assign(s->begin(), s->end());
  r.ends.assign(e->begin(), e->end());
  if (auto ax = attr_ints(n, "axes")) r.axes.assign(ax->begin(), ax->end());
  import_slice(im, n, x, std::move(r));
}

/// From opset 10 on they are inputs, which must be constant.
void import_slice_inputs(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  SliceRanges r;
  auto s = im.const_input(n, 1), e = im.const_input(n, 2);
  if (!s || !e) throw NotInVocabulary{"non-constant starts/ends"};
  r.starts = *s;
  r.ends = *e;
  if (im.has_input(n, 3)) {
    auto ax = im.const_input(n, 3);
    if (!ax) throw NotInVocabulary{"non-constant axes"};
    r.axes = *ax;
  }
  if (im.has_input(n, 4)) {
    auto st = im.const_input(n, 4);
    if (!st) throw NotInVocabulary{"non-constant steps"};
    r.steps = *st;
  }
  import_slice(im, n, x, std::move(r));
}

void import_transpose(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  size_t rank = im.shape(x).size();
  std::vector<int64_t> perm;
  for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  perm = attr_ints(n, "perm").value_or(perm);
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
  im.set_output(n, identity ? x : im.add(OpKind::Transpose, perm, {x}));
}

/// Reshape, Flatten, Squeeze and Unsqueeze: ONNX shape inference already resolved -1, 0 and the axes, so
/// the output shape is the reshape.
void import_reshape(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  const Shape& s = im.out_shape(n);
  if (s == im.shape(x)) {
    im.set_output(n, x);
  } else {
    im.set_output(n, im.add(OpKind::Reshape, std::vector<int64_t>(s.begin(), s.end()), {x}));
    im.note_reshape({n.output(0), im.shape(x), s});
  }
}

/// Pad in constant mode with value 0 and constant, non-negative pads (ONNX order: begins, then ends).
void import_pad(Importer& im, const onnx::NodeProto& n, ExprId x, const std::vector<double>& pads, double value) {
  if (value != 0) throw NotInVocabulary{"pad value other than 0"};
  if (pads.size() != 2 * im.shape(x).size()) throw NotInVocabulary{"pads do not cover every axis"};
  std::vector<int64_t> attrs;
  for (double p : pads) {
    if (p < 0) throw NotInVocabulary{"negative pads (cropping)"};
    attrs.push_back(static_cast<int64_t>(p));
  }
  if (std::all_of(attrs.begin(), attrs.end(), [](int64_t p) { return p == 0; })) return im.set_output(n, x);
  im.set_output(n, im.add(OpKind::Pad, attrs, {x}));
}

void require_constant_mode(const onnx::NodeProto& n) {
  const std::string mode = attr_string(n, "mode", "constant");
  if (mode != "constant") throw NotInVocabulary{"mode '" + mode + "'"};
}

/// Before opset 11 the pads and the value are attributes.
void import_pad_attributes(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  require_constant_mode(n);
  auto p = attr_ints(n, "pads");
  if (!p) throw NotInVocabulary{"no pads"};
  import_pad(im, n, x, std::vector<double>(p->begin(), p->end()), attr_float(n, "value", 0.0f));
}

/// From opset 11 on they are inputs, which must be constant.
void import_pad_inputs(Importer& im, const onnx::NodeProto& n) {
  ExprId x = im.in(n, 0);
  require_constant_mode(n);
  auto p = im.const_input(n, 1);
  if (!p) throw NotInVocabulary{"non-constant pads"};
  double value = 0;
  if (im.has_input(n, 2)) {
    auto v = im.const_input(n, 2);
    if (!v || v->size() > 1) throw NotInVocabulary{"non-constant pad value"};
    if (!v->empty()) value = (*v)[0];
  }
  import_pad(im, n, x, *p, value);
}

constexpr ImportForm kImports[] = {
    {"Concat", 1, kLatestOpset, import_concat},
    {"Split", 1, kLatestOpset, import_split},
    {"Slice", 1, 9, import_slice_attributes},
    {"Slice", 10, kLatestOpset, import_slice_inputs},
    {"Transpose", 1, kLatestOpset, import_transpose},
    {"Reshape", 1, kLatestOpset, import_reshape},
    {"Flatten", 1, kLatestOpset, import_reshape},
    {"Squeeze", 1, kLatestOpset, import_reshape},
    {"Unsqueeze", 1, kLatestOpset, import_reshape},
    {"Pad", 1, 10, import_pad_attributes},
    {"Pad", 11, kLatestOpset, import_pad_inputs},
};

// ---- export ------------------------------------------------------------------------------------------

std::string write_concat(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  std::vector<std::string> inputs;
  for (size_t k = 0; k < node.children.size(); ++k) inputs.push_back(ex.operand(id, k));
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish("Concat", inputs, id, Activation::None, &n);
  add_attr(*n, "axis", ops::concat_axis(node.attrs));
  return y;
}

std::string write_split(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  ops::SplitRange r = ops::split_range(node.attrs, ex.shape(node.children[0]), ex.shape(node.children[1]));
  return ex.slice(ex.operand(id, 0), r.axis, r.begin, r.end, id);
}

std::string write_slice(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  const ops::SliceAttrs sl = ops::slice_attrs(node.attrs);
  int64_t axis = sl.axis < 0 ? sl.axis + static_cast<int64_t>(ex.shape(node.children[0]).size()) : sl.axis;
  return ex.slice(ex.operand(id, 0), axis, sl.begin, sl.end, id);
}

std::string write_transpose(Exporter& ex, ExprId id) {
  onnx::NodeProto* n = nullptr;
  std::string y = ex.finish("Transpose", {ex.operand(id, 0)}, id, Activation::None, &n);
  add_attr(*n, "perm", ex.graph()[id].attrs);
  return y;
}

/// The target of a reshape with dimensions read from graph inputs (ReshapeTarget::from_input): one Concat of
/// the constant runs of `target.values` and those extents (Exporter::input_extent), written once per target.
std::string computed_reshape_target(Exporter& ex, const ReshapeTarget& target) {
  std::string key = "reshape target";
  for (size_t d = 0; d < target.values.size(); ++d)
    key += target.from_input[d].input.empty() ? " " + std::to_string(target.values[d])
                                              : " " + target.from_input[d].input + ":" +
                                                    std::to_string(target.from_input[d].axis);
  std::string& written = ex.written_once(key);
  if (!written.empty()) return written;
  std::vector<std::string> pieces;
  std::vector<int64_t> run;
  auto end_run = [&] {
    if (!run.empty()) pieces.push_back(ex.int_constant(run));
    run.clear();
  };
  for (size_t d = 0; d < target.values.size(); ++d) {
    if (target.from_input[d].input.empty()) {
      run.push_back(target.values[d]);
      continue;
    }
    end_run();
    pieces.push_back(ex.input_extent(target.from_input[d]));
  }
  end_run();
  onnx::NodeProto* concat = nullptr;
  written = ex.add_simple("Concat", pieces, &concat);
  add_attr(*concat, "axis", int64_t{0});
  return written;
}

std::string write_reshape(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  const std::vector<int64_t>& a = node.attrs;
  // A reshape the original has is written the way the original's follows the symbolic dimensions
  // (ExportOptions::reshape_targets); another keeps its leading dimensions as 0 ("copy from the input"), so
  // that a symbolic batch bound at import (a Flatten to [1, 2048], say) still follows the input.
  std::vector<int64_t> target(a.begin(), a.end());
  const Shape& x = ex.shape(node.children[0]);
  std::string arg = ex.operand(id, 0);
  const auto& known_targets = ex.options().reshape_targets;
  if (auto known = known_targets.find({x, Shape(a.begin(), a.end())}); known != known_targets.end()) {
    const ReshapeTarget& follows = known->second;  // how the original's reshape follows a symbolic dimension
    if (std::any_of(follows.from_input.begin(), follows.from_input.end(),
                    [](const InputAxis& at) { return !at.input.empty(); }))
      return ex.finish("Reshape", {arg, computed_reshape_target(ex, follows)}, id);
    target = follows.values;
  } else {
    for (size_t d = 0; d < target.size() && d < x.size() && target[d] == x[d]; ++d) target[d] = 0;
  }
  return ex.finish("Reshape", {arg, ex.int_constant(target)}, id);
}

/// Where a slice or split term cuts its operand: [begin, end) of `axis` (non-negative).
struct Cut {
  int64_t axis, begin, end;
};
std::optional<Cut> cut_of(Exporter& ex, ExprId id) {
  const ExprNode& node = ex.graph()[id];
  if (node.op == OpKind::Split) {
    ops::SplitRange r = ops::split_range(node.attrs, ex.shape(node.children[0]), ex.shape(node.children[1]));
    return Cut{r.axis, r.begin, r.end};
  }
  if (node.op != OpKind::Slice) return std::nullopt;
  const ops::SliceAttrs sl = ops::slice_attrs(node.attrs);
  return Cut{sl.axis < 0 ? sl.axis + static_cast<int64_t>(ex.shape(node.children[0]).size()) : sl.axis, sl.begin,
             sl.end};
}

/// Slices of one operand that tile one of its axes, end to end, written as one Split, the form exporters
/// write (GPT-2's fused query/key/value projection cut in three) and one kernel where slices are one each.
/// Equal parts are written without sizes (opset 13-17: "equal parts"; 18 on: num_outputs), so that they follow
/// a symbolic extent; other parts with their sizes. (Split-18's uneven num_outputs, ceil(extent / n) with a
/// smaller last part, would follow one too, but the import's opset adaptation needs the extent from shape
/// inference to read it, which a file with a computed shape upstream does not always give: sizes instead.)
std::optional<std::string> split_tiling_an_axis(Exporter& ex, ExprId id) {
  const std::optional<Cut> own = cut_of(ex, id);
  if (!own || ex.opset() < 2) return std::nullopt;
  const ExprId x = ex.graph()[id].children[0];
  std::map<std::pair<int64_t, int64_t>, std::vector<ExprId>> parts;  // [begin, end) -> the terms cutting it
  for (ExprId r : ex.readers(x)) {
    if (ex.users(r) == 0 || ex.is_written(r) || ex.materialized(r) || ex.graph()[r].children[0] != x) continue;
    std::optional<Cut> c = cut_of(ex, r);
    if (c && c->axis == own->axis) parts[{c->begin, c->end}].push_back(r);
  }
  const int64_t extent = ex.shape(x)[static_cast<size_t>(own->axis)];
  if (parts.size() < 2) return std::nullopt;
  int64_t at = 0;
  // Two terms cutting the same range (the extraction leaves none) would need one output read twice: not fused.
  std::vector<int64_t> sizes;
  for (const auto& [range, terms] : parts) {
    if (range.first != at || terms.size() != 1) return std::nullopt;  // a gap or an overlap: not one split
    sizes.push_back(range.second - range.first);
    at = range.second;
  }
  if (at != extent || parts[{own->begin, own->end}] != std::vector<ExprId>{id}) return std::nullopt;
  const auto n = static_cast<int64_t>(sizes.size());
  const bool equal = std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s == sizes[0]; });
  std::vector<std::string> inputs{ex.emit(x)};
  if (ex.opset() >= 13 && !equal) inputs.push_back(ex.int_constant(sizes));
  std::vector<ExprId> outputs;
  for (const auto& [range, terms] : parts) outputs.push_back(terms.front());
  onnx::NodeProto* n_proto = nullptr;
  std::vector<std::string> names = ex.finish_outputs("Split", inputs, outputs, &n_proto);
  add_attr(*n_proto, "axis", own->axis);
  if (ex.opset() >= 18 && inputs.size() == 1) add_attr(*n_proto, "num_outputs", n);
  if (ex.opset() < 13 && !equal) add_attr(*n_proto, "split", sizes);
  size_t k = 0;
  std::string own_name;
  for (const auto& [range, terms] : parts) {
    if (terms.front() == id) own_name = names[k];
    ++k;
  }
  return own_name;
}

constexpr ExportForm kExports[] = {
    {OpKind::Concat, write_concat},
    {OpKind::Split, write_split},
    {OpKind::Slice, write_slice},
    {OpKind::Transpose, write_transpose},
    {OpKind::Reshape, write_reshape},
    {OpKind::Pad,
     [](Exporter& ex, ExprId id) { return ex.zero_pad(ex.operand(id, 0), ex.graph()[id].attrs, id); }},
};

constexpr ExportFusion kFusions[] = {
    {OpKind::Slice, split_tiling_an_axis},
    {OpKind::Split, split_tiling_an_axis},
};

}  // namespace

FamilyForms layout_forms() { return {kImports, kExports, kFusions}; }

}  // namespace teq::onnx_io::detail
