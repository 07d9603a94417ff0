// The axiom table: the laws the shape-generic proofs may use, as templates (AxiomTemplate, verify/axioms.h).
#include "verify/axioms/table.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace teq {
namespace {

// A split's reference axis is 0 throughout: a reference used only as such is encoded as its cut (an Int,
// Encoder::split_cut), so the law holds for a split of any reference axis, and one instance serves them all.
constexpr AxiomTemplate kAxioms[] = {
    // Element-wise algebra.
    {"ewadd-comm", "(ewadd ?x ?y)", "(ewadd ?y ?x)"},
    {"ewadd-assoc", "(ewadd ?x (ewadd ?y ?z))", "(ewadd (ewadd ?x ?y) ?z)"},
    {"ewmul-comm", "(ewmul ?x ?y)", "(ewmul ?y ?x)"},
    {"ewmul-assoc", "(ewmul ?x (ewmul ?y ?z))", "(ewmul (ewmul ?x ?y) ?z)"},
    {"ewmul-dist", "(ewmul (ewadd ?x ?y) ?z)", "(ewadd (ewmul ?x ?z) (ewmul ?y ?z))"},
    {"smul-comm", "(smul (smul ?x ?s) ?t)", "(smul (smul ?x ?t) ?s)"},
    {"smul-dist", "(smul (ewadd ?x ?y) ?s)", "(ewadd (smul ?x ?s) (smul ?y ?s))"},
    {"smul-ewmul", "(ewmul (smul ?x ?s) ?y)", "(smul (ewmul ?x ?y) ?s)"},
    {"relu-idempotent", "(relu (relu ?x))", "(relu ?x)"},
    // Matrix multiplication.
    {"matmul-assoc", "(matmul 0 ?x (matmul 0 ?y ?z))", "(matmul 0 (matmul 0 ?x ?y) ?z)"},
    {"matmul-dist-left", "(matmul 0 ?x (ewadd ?y ?z))", "(ewadd (matmul 0 ?x ?y) (matmul 0 ?x ?z))"},
    {"matmul-dist-right", "(matmul 0 (ewadd ?x ?y) ?z)", "(ewadd (matmul 0 ?x ?z) (matmul 0 ?y ?z))"},
    {"matmul-smul-left", "(smul (matmul 0 ?x ?y) ?s)", "(matmul 0 (smul ?x ?s) ?y)"},
    {"matmul-smul-right", "(smul (matmul 0 ?x ?y) ?s)", "(matmul 0 ?x (smul ?y ?s))"},
    {"matmul-transpose", "(transpose 1 0 (matmul 0 ?x ?y))", "(matmul 0 (transpose 1 0 ?y) (transpose 1 0 ?x))"},
    {"matmul-relu", "(relu (matmul 0 ?x ?y))", "(matmul 2 ?x ?y)"},
    {"matmul-sigmoid", "(sigmoid (matmul 0 ?x ?y))", "(matmul 1 ?x ?y)"},
    {"matmul-tanh", "(tanh (matmul 0 ?x ?y))", "(matmul 3 ?x ?y)"},
    {"matmul-concat-right", "(matmul {A} ?x (concat {X} ?y ?z))", "(concat {X} (matmul {A} ?x ?y) (matmul {A} ?x ?z))"},
    {"matmul-concat-left", "(matmul {A} (concat {X} ?x ?y) ?z)", "(concat {X} (matmul {A} ?x ?z) (matmul {A} ?y ?z))"},
    {"matmul-concat-inner", "(matmul 0 (concat {X} ?a ?b) (concat {Y} ?c ?d))", "(ewadd (matmul 0 ?a ?c) (matmul 0 ?b ?d))"},
    {"matmul-eye", "(matmul 0 ?x (eye ?x))", "?x"},
    // Transposition.
    {"transpose-twice", "(transpose 1 0 (transpose 1 0 ?x))", "?x"},
    {"transpose-ewadd", "(transpose 1 0 (ewadd ?x ?y))", "(ewadd (transpose 1 0 ?x) (transpose 1 0 ?y))"},
    {"transpose-ewmul", "(transpose 1 0 (ewmul ?x ?y))", "(ewmul (transpose 1 0 ?x) (transpose 1 0 ?y))"},
    {"transpose-relu", "(transpose 1 0 (relu ?x))", "(relu (transpose 1 0 ?x))"},
    {"transpose-smul", "(transpose 1 0 (smul ?x ?s))", "(smul (transpose 1 0 ?x) ?s)"},
    {"transpose-concat", "(transpose 1 0 (concat {X} ?x ?y))", "(concat {Y} (transpose 1 0 ?x) (transpose 1 0 ?y))"},
    // Concatenation and split.
    {"split-concat-0", "(split {X} 0 0 (concat {X} ?x ?y) ?r)", "?x", "?r.0 = ?x.{X}"},
    {"split-concat-1", "(split {X} 1 0 (concat {X} ?x ?y) ?r)", "?y", "?r.0 = ?x.{X}"},
    {"concat-split", "(concat {X} (split {X} 0 0 ?x ?r) (split {X} 1 0 ?x ?r))", "?x"},
    {"concat-ewadd", "(concat {X} (ewadd ?a ?b) (ewadd ?c ?d))", "(ewadd (concat {X} ?a ?c) (concat {X} ?b ?d))"},
    {"concat-ewmul", "(concat {X} (ewmul ?a ?b) (ewmul ?c ?d))", "(ewmul (concat {X} ?a ?c) (concat {X} ?b ?d))"},
    {"concat-relu", "(relu (concat {X} ?x ?y))", "(concat {X} (relu ?x) (relu ?y))"},
    {"concat-tanh", "(tanh (concat {X} ?x ?y))", "(concat {X} (tanh ?x) (tanh ?y))"},
    {"concat-sigmoid", "(sigmoid (concat {X} ?x ?y))", "(concat {X} (sigmoid ?x) (sigmoid ?y))"},
    {"concat-smul", "(smul (concat {X} ?x ?y) ?s)", "(concat {X} (smul ?x ?s) (smul ?y ?s))"},
    {"concat-assoc", "(concat {X} (concat {X} ?x ?y) ?z)", "(concat {X} ?x (concat {X} ?y ?z))"},
    // Guarded: the lhs is well-shaped for any split of its rows, the rhs only for equal ones.
    {"concat-swap", "(concat {X} (concat {Y} ?a ?b) (concat {Y} ?c ?d))", "(concat {Y} (concat {X} ?a ?c) (concat {X} ?b ?d))",
     "?a.{Y} = ?c.{Y}"},
    // Convolution.
    {"conv-linear-weights", "(conv2d {C} 0 ?x (ewadd ?w ?v))", "(ewadd (conv2d {C} 0 ?x ?w) (conv2d {C} 0 ?x ?v))"},
    {"conv-linear-input", "(conv2d {C} 0 (ewadd ?x ?y) ?w)", "(ewadd (conv2d {C} 0 ?x ?w) (conv2d {C} 0 ?y ?w))"},
    {"conv-smul-weights", "(conv2d {C} 0 ?x (smul ?w ?s))", "(smul (conv2d {C} 0 ?x ?w) ?s)"},
    {"conv-smul-input", "(conv2d {C} 0 (smul ?x ?s) ?w)", "(smul (conv2d {C} 0 ?x ?w) ?s)"},
    {"conv-relu", "(relu (conv2d {C} 0 ?x ?w))", "(conv2d {C} 2 ?x ?w)"},
    {"conv-sigmoid", "(sigmoid (conv2d {C} 0 ?x ?w))", "(conv2d {C} 1 ?x ?w)"},
    {"conv-tanh", "(tanh (conv2d {C} 0 ?x ?w))", "(conv2d {C} 3 ?x ?w)"},
    {"conv-concat-weights", "(conv2d {C} {A} ?x (concat 0 ?w ?v))", "(concat 1 (conv2d {C} {A} ?x ?w) (conv2d {C} {A} ?x ?v))"},
    {"conv-concat-channels", "(conv2d {C} 0 (concat 1 ?x ?y) (concat 1 ?w ?v))", "(ewadd (conv2d {C} 0 ?x ?w) (conv2d {C} 0 ?y ?v))"},
    {"conv-concat-batch", "(conv2d {C} {A} (concat 0 ?x ?y) ?w)", "(concat 0 (conv2d {C} {A} ?x ?w) (conv2d {C} {A} ?y ?w))"},
    // A grouped convolution (two inputs side by side on channels, one kernel twice) is the two convolutions
    // side by side: each group reads one input with one copy of the kernel. Like conv-concat-weights, these
    // two laws hold in verification's scope, where a convolution on a variable kernel is ungrouped
    // (rules/rule_scope.h): here the right side's, which makes the left side's two groups match its two convs.
    {"conv-grouped-concat", "(conv2d {C} {A} (concat 1 ?x ?y) (concat 0 ?w ?w))",
     "(concat 1 (conv2d {C} {A} ?x ?w) (conv2d {C} {A} ?y ?w))"},
    // One input twice, two kernels: both groups read the same image, so each kernel meets all of it (with a
    // grouped convolution on the right, kernel rows would meet other channels).
    {"conv-grouped-same-input", "(conv2d {C} {A} (concat 1 ?x ?x) (concat 0 ?w ?v))",
     "(concat 1 (conv2d {C} {A} ?x ?w) (conv2d {C} {A} ?x ?v))"},
    // The identity kernel and the pooling kernel depend on their operand's channel count only.
    {"conv-iconv", "(conv2d {C} 0 ?x (iconv {K} ?y))", "?x", "?x.1 = ?y.1"},
    {"conv-pool-kernel", "(conv2d {C} 0 ?x (pool_kernel {K} ?y))", "(avgpool {P} 1 ?x)", "?x.1 = ?y.1"},
    {"conv-enlarge", "(conv2d {C} {A} ?x ?w)", "(conv2d {C} {A} ?x (enlarge {K} ?w))"},
    {"avgpool-conv", "(avgpool {P} 1 ?x)", "(conv2d {C} 0 ?x (pool_kernel {K} ?x))"},
    {"maxpool-relu", "(relu (maxpool {P} ?x))", "(maxpool {P} (relu ?x))"},
    // Split through the operators that keep the split axis (2026-12-02). Each law is also guarded by
    // both sides' splits being well-shaped (0 < cut < extent), which is what makes its shape facts agree.
    {"split-relu", "(split {X} {Q} 0 (relu ?x) ?r)", "(relu (split {X} {Q} 0 ?x ?r))"},
    {"split-tanh", "(split {X} {Q} 0 (tanh ?x) ?r)", "(tanh (split {X} {Q} 0 ?x ?r))"},
    {"split-sigmoid", "(split {X} {Q} 0 (sigmoid ?x) ?r)", "(sigmoid (split {X} {Q} 0 ?x ?r))"},
    {"split-smul", "(split {X} {Q} 0 (smul ?x ?s) ?r)", "(smul (split {X} {Q} 0 ?x ?r) ?s)"},
    // Guarded: from the rhs, the operands' parts agree in shape but not their extents along the split axis.
    {"split-ewadd", "(split {X} {Q} 0 (ewadd ?x ?y) ?r)", "(ewadd (split {X} {Q} 0 ?x ?r) (split {X} {Q} 0 ?y ?r))",
     "?x.{X} = ?y.{X}"},
    {"split-ewmul", "(split {X} {Q} 0 (ewmul ?x ?y) ?r)", "(ewmul (split {X} {Q} 0 ?x ?r) (split {X} {Q} 0 ?y ?r))",
     "?x.{X} = ?y.{X}"},
    {"split-matmul-rows", "(split {X} {Q} 0 (matmul {A} ?x ?y) ?r)", "(matmul {A} (split {X} {Q} 0 ?x ?r) ?y)"},
    {"split-matmul-cols", "(split {X} {Q} 0 (matmul {A} ?x ?y) ?r)", "(matmul {A} ?x (split {X} {Q} 0 ?y ?r))"},
    {"split-conv-out-channels", "(split 1 {Q} 0 (conv2d {C} {A} ?x ?w) ?r)", "(conv2d {C} {A} ?x (split 0 {Q} 0 ?w ?r))"},
    // Along channels only: the same laws along the batch axis cost the shape search its whole budget (the
    // instances' element-wise proofs found no assignment), and no corpus rule needs them.
    {"split-maxpool", "(split 1 {Q} 0 (maxpool {P} ?x) ?r)", "(maxpool {P} (split 1 {Q} 0 ?x ?r))"},
    {"split-avgpool", "(split 1 {Q} 0 (avgpool {P} 1 ?x) ?r)", "(avgpool {P} 1 (split 1 {Q} 0 ?x ?r))"},
    {"split-transpose", "(split {X} {Q} 0 (transpose 1 0 ?x) ?r)", "(transpose 1 0 (split {Y} {Q} 0 ?x ?r))"},
    {"split-enlarge", "(enlarge {K} (split {X} {Q} 0 ?x ?r))", "(split {X} {Q} 0 (enlarge {K} ?x) ?r)"},
    // A split of a concatenation along the same axis, cut inside the first operand; along another axis.
    {"split-concat-inside-0", "(split {X} 0 0 (concat {X} ?x ?y) ?r)", "(split {X} 0 0 ?x ?r)", "?r.0 < ?x.{X}"},
    {"split-concat-inside-1", "(split {X} 1 0 (concat {X} ?x ?y) ?r)", "(concat {X} (split {X} 1 0 ?x ?r) ?y)",
     "?r.0 < ?x.{X}"},
    // Cut beyond the first operand: the rest of the cut, r - x, is the extent of r's second part at x.
    {"split-concat-beyond-0", "(split {X} 0 {X} (concat {X} ?x ?y) ?r)",
     "(concat {X} ?x (split {X} 0 {X} ?y (split {X} 1 {X} ?r ?x)))"},
    {"split-concat-beyond-1", "(split {X} 1 {X} (concat {X} ?x ?y) ?r)", "(split {X} 1 {X} ?y (split {X} 1 {X} ?r ?x))"},
    {"split-concat-across", "(split {X} {Q} 0 (concat {Y} ?x ?y) ?r)",
     "(concat {Y} (split {X} {Q} 0 ?x ?r) (split {X} {Q} 0 ?y ?r))", "?x.{X} = ?y.{X}"},
    // A split of a split: the first part of a first part; splits along different axes commute.
    {"split-split-0", "(split {X} 0 0 (split {X} 0 0 ?x ?s) ?r)", "(split {X} 0 0 ?x ?r)"},
    {"split-split-across-0", "(split {X} {Q} 0 (split {Y} 0 0 ?x ?s) ?r)", "(split {Y} 0 0 (split {X} {Q} 0 ?x ?r) ?s)"},
    {"split-split-across-1", "(split {X} {Q} 0 (split {Y} 1 0 ?x ?s) ?r)", "(split {Y} 1 0 (split {X} {Q} 0 ?x ?r) ?s)"},
    // Pools along batch and channels; average pooling is linear.
    {"maxpool-concat", "(maxpool {P} (concat {X} ?x ?y))", "(concat {X} (maxpool {P} ?x) (maxpool {P} ?y))"},
    {"avgpool-concat", "(avgpool {P} 1 (concat {X} ?x ?y))", "(concat {X} (avgpool {P} 1 ?x) (avgpool {P} 1 ?y))"},
    {"avgpool-ewadd", "(avgpool {P} 1 (ewadd ?x ?y))", "(ewadd (avgpool {P} 1 ?x) (avgpool {P} 1 ?y))"},
    {"avgpool-smul", "(avgpool {P} 1 (smul ?x ?s))", "(smul (avgpool {P} 1 ?x) ?s)"},
    // Doubling commutes with relu, max pooling and a fused relu (positive homogeneity, 2x = x + x).
    {"relu-double", "(relu (ewadd ?x ?x))", "(ewadd (relu ?x) (relu ?x))"},
    {"maxpool-double", "(maxpool {P} (ewadd ?x ?x))", "(ewadd (maxpool {P} ?x) (maxpool {P} ?x))"},
    {"conv-relu-double-input", "(conv2d {C} 2 (ewadd ?x ?x) ?w)", "(ewadd (conv2d {C} 2 ?x ?w) (conv2d {C} 2 ?x ?w))"},
    {"conv-relu-double-weights", "(conv2d {C} 2 ?x (ewadd ?w ?w))", "(ewadd (conv2d {C} 2 ?x ?w) (conv2d {C} 2 ?x ?w))"},
    {"conv-concat-channels-same", "(conv2d {C} {A} (concat 1 ?x ?x) (concat 1 ?w ?w))",
     "(ewadd (conv2d {C} {A} ?x ?w) (conv2d {C} {A} ?x ?w))"},
    // A fused relu is the identity on a convolution or matrix product of non-negative operands; and it
    // commutes with a scale that cannot be negative (s * s).
    {"conv-relu-nonnegative", "(conv2d {C} 2 ?x ?w)", "(conv2d {C} 0 ?x ?w)", "", "x w"},
    {"matmul-relu-nonnegative", "(matmul 2 ?x ?y)", "(matmul 0 ?x ?y)", "", "x y"},
    // What is non-negative (relu(t) = t): a fused relu, a square, ones, and sums, products, convolutions,
    // matrix products and average pools of non-negative tensors; a relu of a product with a non-negative
    // factor; the max pooling of a non-negative square is the square of the max pooling.
    {"relu-conv-relu", "(relu (conv2d {C} 2 ?x ?w))", "(conv2d {C} 2 ?x ?w)"},
    {"relu-matmul-relu", "(relu (matmul 2 ?x ?y))", "(matmul 2 ?x ?y)"},
    {"relu-square", "(relu (ewmul ?x ?x))", "(ewmul ?x ?x)"},
    {"relu-ones", "(relu (ones ?x))", "(ones ?x)"},
    {"relu-ewadd-nonnegative", "(relu (ewadd ?x ?y))", "(ewadd ?x ?y)", "", "x y"},
    {"relu-ewmul-nonnegative", "(relu (ewmul ?x ?y))", "(ewmul ?x ?y)", "", "x y"},
    {"relu-conv-nonnegative", "(relu (conv2d {C} 0 ?x ?w))", "(conv2d {C} 0 ?x ?w)", "", "x w"},
    {"relu-matmul-nonnegative", "(relu (matmul 0 ?x ?y))", "(matmul 0 ?x ?y)", "", "x y"},
    {"relu-avgpool-nonnegative", "(relu (avgpool {P} 1 ?x))", "(avgpool {P} 1 ?x)", "", "x"},
    {"relu-ewmul-nonnegative-factor", "(relu (ewmul ?x ?y))", "(ewmul (relu ?x) ?y)", "", "y"},
    {"maxpool-square-scale", "(maxpool {P} (smul (smul ?x ?s) ?s))", "(smul (smul (maxpool {P} ?x) ?s) ?s)"},
    {"maxpool-square-nonnegative", "(maxpool {P} (ewmul ?x ?x))", "(ewmul (maxpool {P} ?x) (maxpool {P} ?x))", "", "x"},
    {"conv-relu-square-scale", "(conv2d {C} 2 (smul (smul ?x ?s) ?s) ?w)", "(smul (smul (conv2d {C} 2 ?x ?w) ?s) ?s)"},
    // Enlarging a kernel that already has the target size changes nothing.
    {"enlarge-identity", "(enlarge {K} ?x)", "?x", "?x.2 = {K}[0]; ?x.3 = {K}[1]"},
    {"enlarge-twice", "(enlarge {K} (enlarge {K} ?x))", "(enlarge {K} ?x)"},
    {"enlarge-relu", "(enlarge {K} (relu ?x))", "(relu (enlarge {K} ?x))"},
    {"enlarge-smul", "(enlarge {K} (smul ?x ?s))", "(smul (enlarge {K} ?x) ?s)"},
};

/// The laws that show a term non-negative (relu(t) = t), besides those assuming non-negative operands.
constexpr std::string_view kNonnegativeTerms[] = {"relu-idempotent", "relu-conv-relu", "relu-matmul-relu",
                                                  "relu-square", "relu-ones"};

}  // namespace

std::span<const AxiomTemplate> axiom_templates() { return kAxioms; }

namespace axioms {

bool about_nonnegativity(const AxiomTemplate& t) {
  return *t.nonneg != '\0' || std::ranges::find(kNonnegativeTerms, std::string_view(t.id)) != std::end(kNonnegativeTerms);
}

}  // namespace axioms
}  // namespace teq
