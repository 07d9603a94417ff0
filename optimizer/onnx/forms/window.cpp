#include "optimizer/onnx/forms/window.h"

#include <algorithm>
#include <string>
#include <vector>

#include "optimizer/onnx/detail/importer.h"
#include "optimizer/onnx/detail/proto_util.h"
#include "rules/ops/conv.h"
#include "rules/ops/layout.h"

namespace teq::onnx_io::detail {

std::optional<int64_t> map_padding(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool conv) {
  // Canonical form first: explicit pads that are SAME padding (PyTorch's padding=k//2 at stride 1) become
  // SAME, the form the rules are written in, so one rule matches every encoding of the same convolution.
  int64_t out_same = (in + s - 1) / s, total = std::max<int64_t>((out_same - 1) * s + k - in, 0);
  if (pb == total / 2 && pe == total - total / 2 && (total > 0 || conv)) return -1;
  if (pb == pe) return pb;
  // Asymmetric padding that produces as many outputs as symmetric pb places every window identically, when
  // every window lies inside both paddings: with in + pb + pe < k the last window runs past the padded input
  // (C++'s division rounds (in + pb + pe - k) / s up to 0 there), and onnxruntime then divides an average by
  // fewer elements than the symmetric form's (the random campaign's seed 202772: Pad (1, 0) before a 3-wide
  // AveragePool of a 1-wide input, written as pads (1, 1), averaged by 3 instead of 2).
  if (in + 2 * pb >= k && in + pb + pe >= k && (in + pb + pe - k) / s == (in + 2 * pb - k) / s) return pb;
  return std::nullopt;
}

std::array<int64_t, 6> window_attrs(const onnx::NodeProto& n, const Shape& x, int64_t kh, int64_t kw,
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

std::optional<FoldablePad> foldable_pad(const Importer& im, ExprId id) {
  const ExprNode& p = im.graph()[id];
  if (p.op != OpKind::Pad) return std::nullopt;
  const ops::PadAttrs pad = ops::pad_attrs(p.attrs);
  if (pad.before.size() != 4) return std::nullopt;
  if (pad.before[0] || pad.before[1] || pad.after[0] || pad.after[1]) return std::nullopt;
  return FoldablePad{p.children[0], {pad.before[2], pad.before[3], pad.after[2], pad.after[3]}};
}

std::pair<int64_t, int64_t> onnx_pads(int64_t in, int64_t k, int64_t s, int64_t p) {
  if (p >= 0) return {p, p};
  int64_t out = (in + s - 1) / s, total = std::max<int64_t>((out - 1) * s + k - in, 0);
  return {total / 2, total - total / 2};
}

}  // namespace teq::onnx_io::detail
