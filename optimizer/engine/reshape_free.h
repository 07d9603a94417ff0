// Reshapes around element-wise computations, removed. Exporters write a linear layer on a 3-d activation as a
// reshape to 2-d, Gemm, and a reshape back, so an element-wise chain between two layers (GPT-2's tanh GELU, a
// bias and activation) sits between a reshape to [B, S, E] and one back to [B * S, E]:
//
//   reshape([B*S, E], f(reshape([B, S, E], a), scalars))  ==  f(a, scalars)     when a is [B*S, E]
//
// An element-wise operator computes each element from the elements at its index, and a reshape keeps the
// elements' order, so f commutes with any reshape; a reshape of a reshape back to the first one's input shape is
// that input. No rule of the corpus says this for every shape (rules' reshapes have fixed targets), and offered
// as an alternative it only multiplies the extraction's ties, so the optimizer applies it to its input where it
// is never worse: f's nodes read by nothing else, so that the same nodes compute f at the other shape and the
// outer reshape (and the inner ones nothing else reads) are gone.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>

#include "rules/expr.h"

namespace teq {

/// What the engine cannot know of opaque nodes and the pass needs (set by the ONNX driver, eqsat_app.cpp).
struct OpaqueFacts {
  /// Of an opaque node that only reshapes its operand (an ONNX Reshape the import kept opaque because its target
  /// is computed from the input's dimensions), which child it reshapes; nullopt for any other node. Such a node
  /// may be an inner reshape (never the outer: the export could not write it without its target).
  std::function<std::optional<size_t>(const ExprNode&)> reshape_operand;
  /// Whether an opaque node is element-wise (an ONNX Pow, Neg, Exp ... outside the vocabulary): then it may be
  /// inside the computation, rebuilt at the other shape (its operands of its shape or 0-d).
  std::function<bool(const ExprNode&)> elementwise;
};

struct ReshapeFree {
  Expr graph;          // the input with those reshapes removed (only what its roots reach)
  size_t removed = 0;  // outer reshapes replaced
};

/// `graph` with every reshape whose operand is an element-wise computation over reshapes of tensors of the outer
/// reshape's shape and over broadcast numbers or trailing-axis vectors (a bias), computed by nodes nothing else
/// reads, replaced by that computation at the outer shape on those tensors.
ReshapeFree remove_reshapes_around_elementwise(const Expr& graph, const OpaqueFacts& opaque = {});

}  // namespace teq
