// What the convolution and pooling families share in ONNX: the 2-d window's strides, pads and dilations, both
// ways, and a zero Pad folded into the window that reads it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>

#include <onnx/onnx_pb.h>

#include "rules/expr.h"
#include "rules/shape.h"

namespace teq::onnx_io::detail {

class Importer;

/// One spatial axis of a window op: ONNX (pad_begin, pad_end) -> our padding attribute (-1 = SAME).
/// `conv`: a convolution, whose rules are written with SAME wherever SAME is what it computes, also
/// where SAME pads nothing (a 1x1 kernel); pooling rules keep an explicit 0 there (optimizer/models).
std::optional<int64_t> map_padding(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool conv);

/// Our (stride h, stride w, pad h, pad w, dilation h, dilation w) of Conv/MaxPool/AveragePool on a
/// [N,C,H,W] input; only a Conv may be dilated (the pools of the vocabulary are not).
/// `extra`: zero padding (ONNX order h_begin, w_begin, h_end, w_end) of a Pad folded into the window.
/// Throws NotInVocabulary when the window has no such form.
std::array<int64_t, 6> window_attrs(const onnx::NodeProto& n, const Shape& x, int64_t kh, int64_t kw,
                                    bool dilation_allowed = false,
                                    const std::array<int64_t, 4>& extra = {0, 0, 0, 0});

/// A pad node of a 4-d tensor that pads only the spatial axes (H, W): its operand and the pads in ONNX's
/// (h_begin, w_begin, h_end, w_end) order, for folding into the Conv or AveragePool that reads it.
struct FoldablePad {
  ExprId x;
  std::array<int64_t, 4> pads;
};
std::optional<FoldablePad> foldable_pad(const Importer& im, ExprId id);

/// ONNX (pad_begin, pad_end) of one spatial axis for our padding attribute (-1 = SAME, extra at the end).
std::pair<int64_t, int64_t> onnx_pads(int64_t in, int64_t k, int64_t s, int64_t p);

}  // namespace teq::onnx_io::detail
