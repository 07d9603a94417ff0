// A fast execution strategy for the reference evaluator on float/double, used by --check (check.h).
// It is not a second meaning: every operator's value is still evaluate_op (rules/semantics.h), except
// that conv2d and matmul, the operators whose generic loops make real models take minutes, are computed
// as BLAS matrix products (OpenBLAS, both cores) of the same sums, followed by the same fused activation
// (ops::activate), and broadcast (every conv bias) copies whole rows. Only the order of the additions
// differs; tests/optimizer/fast_eval_test.cpp runs every operator of rules/op_list.inc through both on
// random shapes and compares.
//
// It lives in optimizer/onnx/ (the library that owns --check), not in rules/: the core library is linked
// by the verifier, rulegen and the fuzzers, which need neither BLAS nor threads.
//
// Whole graphs are evaluated in node order with each intermediate freed right after its last use, and
// leaves read in place (never copied), so memory stays near the largest live set plus the weights.
// Usage:
//   std::map<std::string, const Tensor<double>*> leaves = ...;   // every input and weight, by name
//   auto outs = evaluate_fast<double>(graph, leaves, {.on_progress = [](size_t done, size_t total) {...}});
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rules/expr.h"
#include "rules/semantics.h"

namespace teq::onnx_io {

struct FastEvalOptions {
  /// Called after each operator node is computed: nodes done, nodes to compute (leaves not counted).
  std::function<void(size_t done, size_t total)> on_progress;
  /// The value of an Opaque node (evaluate_fast<double> only): the node's index in the Expr, its children's
  /// values, the shape it must have. Unset: an opaque node throws ShapeError, as evaluate<S> does.
  std::function<Tensor<double>(size_t node, ops::Args<double> args, const Shape& shape)> opaque;
  /// Leaves missing from `leaves` (evaluate_fast<double> only): their shape (nullptr: unknown), and their value,
  /// made when first read and dropped after the last node that reads it, so that a model's weights are never
  /// all held as doubles at once.
  std::function<const Shape*(const std::string& name)> lazy_leaf_shape;
  std::function<Tensor<double>(const std::string& name)> lazy_leaf;
};

/// Value of one operator, as evaluate_op<S>(Arith<S>{}, ...) computes it; conv2d and matmul on BLAS,
/// broadcast by rows.
/// Same preconditions as evaluate_op. S is float or double.
template <class S>
Tensor<S> evaluate_op_fast(OpKind op, AttrSpan attrs, ops::Args<S> args, const Shape& out_shape);

/// Values of the roots of `expr`, as evaluate<S> (rules/evaluator.h) computes them, with evaluate_op_fast.
/// `leaves` maps every input and weight name to its value, which must outlive the call. Throws
/// ShapeError for a missing leaf, a shape mismatch or an opaque operator without options.opaque (as
/// evaluate<S> does).
template <class S>
std::vector<Tensor<S>> evaluate_fast(const Expr& expr, const std::map<std::string, const Tensor<S>*>& leaves,
                                     const FastEvalOptions& options = {});

}  // namespace teq::onnx_io
