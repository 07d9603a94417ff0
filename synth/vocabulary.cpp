#include "synth/vocabulary.h"

#include <algorithm>
#include <ranges>

namespace teq::synth {

std::vector<std::string> default_op_names() {
  return {"matmul",  "ewadd",   "ewmul",   "relu", "tanh", "smul",  "transpose", "concat", "split",
          "conv2d",  "maxpool", "avgpool", "enlarge", "ones", "eye", "iconv", "pool_kernel", "conv_cut", "maxpool2x2",
          "transpose3d", "conv_pad1"};
}

std::vector<std::string> known_op_names() {
  std::vector<std::string> names = {"matmul", "ewadd",   "ewsub",   "ewmul",   "relu", "tanh",
                                    "sigmoid", "smul",   "transpose", "concat", "split", "conv2d",
                                    "maxpool", "avgpool", "enlarge", "ones", "eye",  "iconv",
                                    "pool_kernel", "pooling", "constants", "transpose3d", "maxpool2x2",
                                    "conv_pad1", "conv_cut"};
  return names;
}

std::vector<LeafType> default_leaf_types(int per_type) {
  int n = std::clamp(per_type, 1, 3);
  // Set A follows TASO's test tensors (channels 4, 5x5 images, batch 1 to keep evaluation cheap);
  // set B changes every dimension that an operator could confuse (batch, channels, extent).
  // The 1x3 and 3x1 kernels a and b have more output than input channels in both sets: with square
  // kernels only, "cut a conv's output channels at the kernel's input-channel count" is a true rule
  // at every fingerprint shape, and minimization then derives the general conv batching rules through
  // such coincidences and drops them (a 5x5 kernel with 1 output channel then has no batching rule).
  // k stays square so that convolutions compose (conv of conv, conv plus its input).
  // Set C (cheap refutation only) gives every dimension a third value, distinct within the set where no
  // operator needs two to agree: x rows 5 / cols 3 (rows > cols, unlike A and B), batch 2, channels 6,
  // a non-square 7x5 image (odd extents, so stride 2 with SAME and VALID differ), 8 kernel outputs.
  return {
      {"x", {2, 4}, {3, 5}, n, false, Shape{5, 3}},
      {"w", {4, 4}, {5, 5}, n, true, Shape{3, 3}},
      {"i", {1, 4, 5, 5}, {2, 3, 4, 4}, n, false, Shape{2, 6, 7, 5}},
      {"k", {4, 4, 3, 3}, {3, 3, 3, 3}, n, true, Shape{6, 6, 3, 3}},
      {"a", {6, 4, 1, 3}, {5, 3, 1, 3}, n, true, Shape{8, 6, 1, 3}},
      {"b", {6, 4, 3, 1}, {5, 3, 3, 1}, n, true, Shape{8, 6, 3, 1}},
      {"d", {4, 1, 3, 3}, {3, 1, 3, 3}, 1, true, Shape{6, 1, 3, 3}},
      {"s", {}, {}, std::min(n, 2), true, Shape{}},
  };
}

LeafType rank3_leaf_type() {
  // Rank-3 activations (a sequence of vectors, attention's heads). Every position differs between the sets,
  // so a wrong permutation changes a shape; two leaves, for the laws of a binary operator.
  return {"t", {2, 3, 4}, {5, 2, 3}, 2, false, Shape{4, 5, 2}};
}

std::vector<std::string> family_scope(const std::string& name) {
  if (name == "transpose3d") return {"transpose3d"};
  if (name == "conv_pad1") return {"conv_pad1", "ewadd", "relu"};
  return {};
}

namespace {

void add_variants(const std::string& name, std::vector<OpVariant>& out) {
  auto add = [&](OpKind op, std::vector<int64_t> attrs, int arity, LastChild last = LastChild::Any) {
    out.push_back(OpVariant{op, std::move(attrs), arity, last, op == OpKind::Conv2d});
  };
  if (name == "matmul") {
    for (int64_t act : {0, 2}) add(OpKind::Matmul, {act}, 2);
  } else if (name == "ewadd") {
    add(OpKind::EwAdd, {}, 2);
  } else if (name == "ewsub") {
    add(OpKind::EwSub, {}, 2);
  } else if (name == "ewmul") {
    add(OpKind::EwMul, {}, 2);
  } else if (name == "relu") {
    add(OpKind::Relu, {}, 1);
  } else if (name == "tanh") {
    add(OpKind::Tanh, {}, 1);
  } else if (name == "sigmoid") {
    add(OpKind::Sigmoid, {}, 1);
  } else if (name == "smul") {
    add(OpKind::Smul, {}, 2);
  } else if (name == "transpose") {
    add(OpKind::Transpose, {1, 0}, 1);
  } else if (name == "transpose3d") {  // on rank-3 terms only (the t leaves make_vocabulary adds)
    for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}})
      add(OpKind::Transpose, perm, 1);
  } else if (name == "concat") {
    for (int64_t axis : {0, 1}) add(OpKind::Concat, {axis}, 2);
  } else if (name == "split") {
    // The cut comes from a leaf's extent on the same axis (explicit split points: docs/operators.md, split).
    for (int64_t axis : {0, 1})
      for (int64_t part : {0, 1}) add(OpKind::Split, {axis, part, axis}, 2, LastChild::Leaf);
  } else if (name == "conv_cut") {
    // A convolution's output channels (axis 1) cut at a kernel's output-channel count (its axis 0): how the
    // output of convolutions merged by concatenating their kernels is taken apart again.
    for (int64_t part : {0, 1}) {
      add(OpKind::Split, {1, part, 0}, 2, LastChild::Leaf);
      out.back().kernel_reference = true;
    }
  } else if (name == "conv2d") {
    for (int64_t s : {1, 2})
      for (int64_t pad : {-1, 0})
        for (int64_t act : {0, 2}) add(OpKind::Conv2d, {s, s, pad, pad, act}, 2);
  } else if (name == "conv_pad1") {
    // Explicit padding (one pixel, what PyTorch writes for a 3x3 kernel), stride 1.
    for (int64_t act : {0, 2}) add(OpKind::Conv2d, {1, 1, 1, 1, act}, 2);
  } else if (name == "maxpool") {
    for (int64_t s : {1, 2})
      for (int64_t pad : {-1, 0}) add(OpKind::MaxPool, {3, 3, s, s, pad, pad}, 1);
  } else if (name == "maxpool2x2") {
    add(OpKind::MaxPool, {2, 2, 2, 2, 0, 0}, 1);  // the 2x2 downsampling of VGG and U-Net
  } else if (name == "avgpool") {
    for (int64_t s : {1, 2})
      for (int64_t pad : {-1, 0}) add(OpKind::AvgPool, {3, 3, s, s, pad, pad, 1}, 1);
  } else if (name == "enlarge") {
    add(OpKind::Enlarge, {3, 3}, 1);
  } else if (name == "ones") {
    add(OpKind::Ones, {}, 1, LastChild::Leaf);
  } else if (name == "eye") {
    add(OpKind::Eye, {}, 1, LastChild::Leaf);
  } else if (name == "iconv") {
    add(OpKind::IConv, {3, 3}, 1, LastChild::Leaf);
  } else if (name == "pool_kernel") {
    add(OpKind::PoolKernel, {3, 3}, 1, LastChild::Leaf);
  } else {
    std::string known;
    for (const std::string& k : known_op_names()) known += (known.empty() ? "" : ", ") + k;
    throw VocabularyError("unknown operator '" + name + "' in --ops (known: " + known + ")");
  }
}

}  // namespace

Vocabulary make_vocabulary(const std::vector<std::string>& op_names, std::vector<LeafType> leaf_types) {
  Vocabulary vocab;
  vocab.leaf_types = std::move(leaf_types);
  std::vector<std::string> expanded;
  for (const std::string& name : op_names) {
    if (name == "pooling") {
      expanded.insert(expanded.end(), {"maxpool", "avgpool"});
    } else if (name == "constants") {
      expanded.insert(expanded.end(), {"ones", "eye", "iconv", "pool_kernel"});
    } else if (!name.empty()) {
      expanded.push_back(name);
    }
  }
  if (expanded.empty()) throw VocabularyError("--ops: the operator list is empty");
  for (const std::string& name : expanded) {
    if (std::find(vocab.op_names.begin(), vocab.op_names.end(), name) != vocab.op_names.end()) continue;
    const size_t first = vocab.variants.size();
    add_variants(name, vocab.variants);
    for (size_t v = first; v < vocab.variants.size(); ++v)
      vocab.variants[v].name_index = static_cast<uint8_t>(vocab.op_names.size());
    vocab.op_names.push_back(name);
  }
  if (vocab.op_names.size() > 64) throw VocabularyError("at most 64 operator names are supported");
  // Scopes: a scoped family lists its companions; the others may combine with anything but a scoped family
  // that does not list them (the relation is symmetric).
  const size_t names = vocab.op_names.size();
  auto bit = [](size_t i) { return uint64_t{1} << i; };
  vocab.scope.assign(names, names == 64 ? ~uint64_t{0} : bit(names) - 1);
  for (size_t i = 0; i < names; ++i) {
    const std::vector<std::string> companions = family_scope(vocab.op_names[i]);
    if (companions.empty()) continue;
    uint64_t allowed = bit(i);
    for (size_t j = 0; j < names; ++j)
      if (std::ranges::find(companions, vocab.op_names[j]) != companions.end()) allowed |= bit(j);
    for (size_t j = 0; j < names; ++j)
      if (!(allowed & bit(j))) vocab.scope[i] &= ~bit(j), vocab.scope[j] &= ~bit(i);
  }
  // 3-d transposes need rank-3 terms: their leaves come with them (unless the caller's types have some).
  const auto rank3 = [](const LeafType& t) { return t.shape_a.size() == 3; };
  if (std::ranges::find(vocab.op_names, "transpose3d") != vocab.op_names.end() &&
      std::ranges::none_of(vocab.leaf_types, rank3))
    vocab.leaf_types.push_back(rank3_leaf_type());
  int leaves = 0;
  for (const LeafType& t : vocab.leaf_types) leaves += t.count;
  if (leaves > 32) throw VocabularyError("at most 32 leaf tensors are supported, got " + std::to_string(leaves));
  return vocab;
}

}  // namespace teq::synth
