// Vocabulary: what rulegen enumerates. Operator variants (an operator with one concrete attribute tuple
// from its domain) and typed leaf tensors with two concrete shapes each, one per fingerprint input set.
// It does not compute anything: values come from rules/semantics.h, shapes from infer_shape.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "rules/op.h"
#include "rules/shape.h"

namespace teq::synth {

/// Restriction on an operator's last operand, so that enumeration stays meaningful and small.
enum class LastChild : uint8_t {
  Any,   // any term
  Leaf,  // a leaf tensor only: split's reference, the `like` of constants
};

/// An operator with one attribute tuple, e.g. conv2d with stride 2, SAME padding, fused relu.
struct OpVariant {
  OpKind op = OpKind::Relu;
  std::vector<int64_t> attrs;
  int arity = 1;
  LastChild last = LastChild::Any;
  /// The last operand must be weight-only (conv2d's kernel): built from weight leaves and constants.
  /// Convolving with an activation as kernel only adds shapes and coincidences, never a useful rule.
  bool weight_operand = false;
  /// The last operand is a convolution kernel (a 4-d weight leaf): a cut of a convolution's output channels at a
  /// kernel's output-channel count. Cut at any other leaf, such a split only makes rules that hold where two
  /// unrelated extents happen to agree.
  bool kernel_reference = false;
  /// Index of the operator name this variant belongs to in Vocabulary::op_names (set by make_vocabulary).
  uint8_t name_index = 0;
};

/// A type of leaf tensor: `count` interchangeable leaves named prefix1..prefixN, with a shape in each
/// fingerprint set. Set B differs from set A in values and in dimensions, so shape-dependent
/// coincidences in set A are separated by set B. Set C (optional) is a third assignment, at dimensions
/// other than A's and B's, used only to refute candidates cheaply before their proofs
/// (refute_on_third_set, candidates.h); it does not take part in the class keys, so enumeration and
/// the candidate set do not depend on it.
struct LeafType {
  std::string prefix;
  Shape shape_a, shape_b;
  int count = 3;
  bool weight = false;  // a weight (known at load time), not an activation
  std::optional<Shape> shape_c = std::nullopt;  // absent: no cheap refutation for rules using this type
};

struct Vocabulary {
  std::vector<std::string> op_names;  // the --ops list, resolved (aliases expanded), in order
  std::vector<OpVariant> variants;
  std::vector<LeafType> leaf_types;
  /// scope[i]: bitmask of the op_names a term using op_names[i] may also use (all bits: no restriction).
  /// A scoped family (family_scope) is enumerated only together with the operators of its scope.
  std::vector<uint64_t> scope;

  /// Whether one term may use every operator of `names` (a bitmask over op_names).
  bool may_combine(uint64_t names) const {
    for (uint64_t rest = names; rest != 0; rest &= rest - 1)
      if (names & ~scope[static_cast<size_t>(std::countr_zero(rest))]) return false;
    return true;
  }
};

/// The operators a family outside TASO's vocabulary is enumerated with (itself included), or empty when it
/// combines with everything. "transpose3d": 3-d transposes with each other only; "conv_pad1": the explicitly
/// padded convolution with ewadd and relu only. Their laws with the other operators are those of the
/// variants already there (a transpose of any permutation commutes with an element-wise operator, a padded
/// convolution is linear like any other): enumerating every combination would repeat each such law once per
/// attribute value, about 100 rules (docs/rulegen.md, "Scoped families").
std::vector<std::string> family_scope(const std::string& name);

/// Thrown for an unknown operator name or an operator rulegen cannot enumerate; the message lists
/// the names it accepts.
class VocabularyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The default --ops list: TASO's generator vocabulary, tanh (NasRNN's and LSTM-like cells' activation:
/// its concat/split rules are not relu's, whose fused forms in conv and matmul tanh does not have),
/// conv_cut (taking convolutions that share an input apart again after their kernels were concatenated),
/// maxpool2x2 (VGG's and U-Net's downsampling; 20 rules more), and the scoped families transpose3d and
/// conv_pad1 (family_scope: the hand seed's 3-d transposes and explicitly padded convolution; 12 rules of
/// corpus/rules.json use them).
std::vector<std::string> default_op_names();
/// Every name make_vocabulary accepts (operators and the aliases "pooling", "constants").
std::vector<std::string> known_op_names();
/// TASO-like typed inputs: 2-d matrices x (2x4) and w (4x4), NCHW activations i, OIHW kernels k (3x3),
/// a (1x3), b (3x1), a depthwise kernel d and two 0-d scalars s (one when `per_type` is 1: two are what
/// reordering scalings needs, smul(smul(x, s1), s2) = smul(smul(x, s2), s1)); set B uses other dimensions.
/// `per_type` caps the interchangeable leaves of each type (at most 3).
std::vector<LeafType> default_leaf_types(int per_type = 3);

/// Two rank-3 activations t (2x3x4), which make_vocabulary adds for "transpose3d".
LeafType rank3_leaf_type();

/// Resolves operator names into variants with their attribute domains (conv2d: strides 1 and 2,
/// padding SAME and VALID, activation none and relu; concat/split: axes 0 and 1; matmul: activation
/// none and relu; transpose: the 2-d swap; pooling 3x3, strides 1 and 2, SAME and VALID;
/// enlarge/iconv/pool_kernel to 3x3). Beyond TASO's list, all in the default list: "transpose3d" (the five
/// 3-d permutations, with rank-3 leaves t) and "conv_pad1" (an explicit one-pixel padding at stride 1), the
/// forms the hand seed has, each enumerated within its scope (family_scope); "maxpool2x2" (2x2 stride 2) and
/// "conv_cut" (a split of axis 1 at a kernel's axis 0; the kernel's output count must be no activation's
/// channel count).
/// Throws VocabularyError for unknown names or an empty list.
Vocabulary make_vocabulary(const std::vector<std::string>& op_names, std::vector<LeafType> leaf_types);

}  // namespace teq::synth
