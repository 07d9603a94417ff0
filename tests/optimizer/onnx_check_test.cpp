// --check at a second value of each symbolic dimension (optimizer/onnx/check.h): models with a symbolic
// batch from tools/make_models.py (tests/python/data/). A graph equal to the original at batch 1 only must
// fail at batch 2, whether its export no longer imports there or computes other values; a model whose
// original only works at batch 1 is not checked there, and says so.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "optimizer/engine/extract.h"
#include "optimizer/onnx/check.h"
#include "optimizer/onnx/onnx_export.h"
#include "optimizer/onnx/onnx_import.h"
#include "rules/sexpr.h"
#include "tests/optimizer/symbolic_graph.h"

namespace teq::onnx_io {

// For gtest's messages: a target as Reshape would read it, with "INPUT:AXIS" where an extent is read.
void PrintTo(const ReshapeTarget& t, std::ostream* os) {
  *os << "[";
  for (size_t d = 0; d < t.values.size(); ++d)
    *os << (d ? ", " : "")
        << (d < t.from_input.size() && !t.from_input[d].input.empty()
                ? t.from_input[d].input + ":" + std::to_string(t.from_input[d].axis)
                : std::to_string(t.values[d]));
  *os << "]";
}

namespace {

const std::filesystem::path kData = std::filesystem::path(TEQ_SOURCE_DIR) / "tests" / "python" / "data";

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

ImportOptions batch(int64_t value) {
  ImportOptions o;
  o.dims["batch"] = value;
  return o;
}

TEST(OnnxCheck, SymbolicDimsAndTheirSecondValues) {
  const OnnxModel m = import_onnx(kData / "flatten_batch.onnx", batch(4));
  const auto dims = symbolic_dims(m, batch(4));
  ASSERT_EQ(dims.size(), 1u);
  EXPECT_EQ(dims[0], std::make_pair(std::string("batch"), int64_t{4}));
  EXPECT_EQ(second_value(1), 2);
  EXPECT_EQ(second_value(2), 1);
  EXPECT_EQ(second_value(4), 2);
  EXPECT_EQ(second_value(128), 64);
  EXPECT_EQ(second_value(3), 1);
  ImportOptions by_default;
  by_default.default_dim = 3;
  EXPECT_EQ(symbolic_dims(import_onnx(kData / "flatten_batch.onnx", by_default), by_default)[0].second, 3);
  EXPECT_TRUE(symbolic_dims(import_onnx(TEQ_SOURCE_DIR "/corpus/models/mlp.onnx"), {}).empty());
}

TEST(OnnxCheck, ModelsImportedSeparatelyCompareByInputName) {
  const OnnxModel a = import_onnx(kData / "row_norms.onnx", batch(1));
  const OnnxModel b = import_onnx(kData / "row_norms_mixed.onnx", batch(1));
  CheckResult same = check_models(a, b);
  ASSERT_TRUE(same.evaluated) << same.reason;
  EXPECT_TRUE(same.passed) << same.reason;
  EXPECT_EQ(same.elements, 3u);
  CheckResult differ = check_models(import_onnx(kData / "row_norms.onnx", batch(2)),
                                    import_onnx(kData / "row_norms_mixed.onnx", batch(2)));
  ASSERT_TRUE(differ.evaluated) << differ.reason;
  EXPECT_FALSE(differ.passed);
  EXPECT_GT(differ.max_abs_diff, 1e-3);
}

// x @ (x^T @ x) equals x * |x|^2 at batch 1: the check at batch 1 passes, the one at batch 2 finds other values.
TEST(OnnxCheck, SecondBatchSizeCatchesOtherValues) {
  const std::string original = read_bytes(kData / "row_norms.onnx");
  const OnnxModel m = import_onnx_bytes(original, "row_norms.onnx", batch(1));
  const Expr mixed = import_onnx(kData / "row_norms_mixed.onnx", batch(1)).graph;  // leaves: the input x only
  CheckResult c = check_optimization(m, mixed, original, batch(1));
  ASSERT_TRUE(c.evaluated) << c.reason;
  EXPECT_LT(c.max_abs_diff, 1e-12);  // equal at the imported size
  EXPECT_FALSE(c.passed);
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_EQ(c.sizes[0].dim, "batch");
  EXPECT_EQ(c.sizes[0].value, 2);
  EXPECT_TRUE(c.sizes[0].evaluated);
  EXPECT_FALSE(c.sizes[0].passed);
  EXPECT_EQ(c.sizes[0].elements, 6u);
  EXPECT_NE(c.reason.find("at batch=2 (the second value of symbolic dimension 'batch')"), std::string::npos) << c.reason;
  // The original against itself passes at both sizes; from batch 4 the second size is 2.
  CheckResult self = check_optimization(import_onnx_bytes(original, "row_norms.onnx", batch(4)),
                                        import_onnx_bytes(original, "row_norms.onnx", batch(4)).graph, original,
                                        batch(4));
  EXPECT_TRUE(self.passed) << self.reason;
  ASSERT_EQ(self.sizes.size(), 1u);
  EXPECT_EQ(self.sizes[0].value, 2);
  EXPECT_EQ(self.sizes[0].at, "batch=2");
  EXPECT_TRUE(self.sizes[0].passed) << self.sizes[0].reason;
  EXPECT_TRUE(self.sizes[0].identical);  // the same graph read back: passed without evaluating
  EXPECT_EQ(self.sizes[0].elements, 0u);
}

// An optimized graph that multiplies by a [1,1] weight is right at batch 1, and its export cannot be
// imported at batch 2 ([1,1] x [2,5]): the check fails there, naming the dimension.
TEST(OnnxCheck, SecondBatchSizeCatchesAGraphFixedToOneBatch) {
  const std::string original = read_bytes(kData / "flatten_batch.onnx");
  OnnxModel m = import_onnx_bytes(original, "flatten_batch.onnx", batch(1));
  m.weights.emplace("teq_one", Tensor<float>(Shape{1, 1}, 1.0f));
  Expr fixed;
  fixed.add_root(fixed.add(OpKind::Matmul, {0},
                           {fixed.add(ExprNode{OpKind::Weight, {1, 1}, {}, "teq_one"}),
                            fixed.import(m.graph, m.graph.root())}));
  CheckResult c = check_optimization(m, fixed, original, batch(1));
  ASSERT_TRUE(c.evaluated) << c.reason;
  EXPECT_LT(c.max_abs_diff, 1e-12);
  EXPECT_FALSE(c.passed);
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_TRUE(c.sizes[0].evaluated);
  EXPECT_FALSE(c.sizes[0].passed);
  EXPECT_NE(c.reason.find("at batch=2 (the second value of symbolic dimension 'batch') the optimized model is invalid"),
            std::string::npos)
      << c.reason;
}

// The unchanged graph, exported and imported at batch 2, is checked there (its verdict depends on
// whether the exporter keeps the batch symbolic; tests/python/test_second_size.py compares it with
// onnxruntime's).
TEST(OnnxCheck, SecondBatchSizeIsEvaluated) {
  const std::string original = read_bytes(kData / "flatten_batch.onnx");
  const OnnxModel m = import_onnx_bytes(original, "flatten_batch.onnx", batch(1));
  CheckResult c = check_optimization(m, m.graph, original, batch(1));
  ASSERT_TRUE(c.evaluated) << c.reason;
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_TRUE(c.sizes[0].evaluated) << c.sizes[0].reason;
  EXPECT_EQ(c.passed, c.sizes[0].passed);
  if (c.sizes[0].passed) EXPECT_EQ(c.sizes[0].elements, 10u);
  else EXPECT_NE(c.sizes[0].reason.find("batch=2"), std::string::npos);
}

// The original only works at batch 1: batch 2 is not checked, the verdict stays that of batch 1.
TEST(OnnxCheck, SecondSizeTheOriginalRejectsIsNotChecked) {
  const std::string original = read_bytes(kData / "batch_one_only.onnx");
  const OnnxModel m = import_onnx_bytes(original, "batch_one_only.onnx", batch(1));
  CheckResult c = check_optimization(m, m.graph, original, batch(1));
  ASSERT_TRUE(c.evaluated) << c.reason;
  EXPECT_TRUE(c.passed) << c.reason;
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_FALSE(c.sizes[0].evaluated);
  EXPECT_NE(c.sizes[0].reason.find("the original model does not work at batch=2"), std::string::npos)
      << c.sizes[0].reason;
}

TEST(OnnxCheck, ProgressLinesNameTheGraph) {
  const OnnxModel m = import_onnx(TEQ_SOURCE_DIR "/corpus/models/inception_block.onnx");
  std::vector<std::string> lines;
  CheckOptions o;
  o.progress_seconds = 0;  // every operator but the last
  o.on_progress = [&](const std::string& line) { lines.push_back(line); };
  CheckResult c = check_equivalent(m, m.graph, o);
  ASSERT_TRUE(c.passed) << c.reason;
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().rfind("original graph: 1/", 0), 0u) << lines.front();
  EXPECT_EQ(lines.back().rfind("optimized graph: ", 0), 0u) << lines.back();
}

// Heads split and merged and seq*batch folded into rows (tools/make_models.py head_reshapes): the original
// imported at batch 2 shows which target dimension carries the batch, also where the bound target's first
// dimension equals the input's at batch 1 ([4, 1, 8] -> [4, 8] is a fold, not a copy). Written so, the export
// is valid at batch 2 with the original's output shape; written with the concrete targets it is not.
TEST(OnnxCheck, ReshapeTargetsFollowTheSymbolicBatch) {
  const std::filesystem::path path = kData / "head_reshapes.onnx";
  const OnnxModel m = import_onnx(path, batch(1));
  ASSERT_EQ(m.reshapes.size(), 3u);
  const std::string bytes = read_bytes(path);
  const auto targets = symbolic_reshape_targets(m, bytes, batch(1));
  using Key = std::pair<Shape, Shape>;
  const std::vector<InputAxis> none3(3), none2(2);
  const std::map<Key, ReshapeTarget> want = {
      {{{4, 1, 8}, {4, 4, 2}}, {{4, -1, 2}, none3}},
      {{{4, 4, 2}, {4, 1, 8}}, {{4, -1, 8}, none3}},
      {{{4, 1, 8}, {4, 8}}, {{-1, 8}, none2}},
  };
  EXPECT_EQ(targets, want);
  ExportOptions follow;
  follow.reshape_targets = targets;
  EXPECT_EQ(fixed_size_reason(m, bytes, export_onnx_bytes(m, m.graph, follow), batch(1)), "");
  const std::string fixed = fixed_size_reason(m, bytes, export_onnx_bytes(m, m.graph), batch(1));
  EXPECT_NE(fixed.find("batch=2"), std::string::npos) << fixed;
  // Without a symbolic dimension there is nothing to follow.
  EXPECT_TRUE(symbolic_reshape_targets(import_onnx(TEQ_SOURCE_DIR "/corpus/models/mlp.onnx"),
                                       read_bytes(TEQ_SOURCE_DIR "/corpus/models/mlp.onnx"), {})
                  .empty());
}

// x of [B, B, 4] reshaped to a target computed from its batch: [2B, 2B] (valid at every batch), or [2B, 2B, B-1]
// with allowzero (valid at batch 2 only), then Relu twice (one to optimize away). At batch 2 both targets'
// changing dimensions equal an extent of x, so the import's reshape is the vocabulary's; at batch 1 they do
// not, and the import keeps the Reshape opaque there only.
std::string reshape_by_twice_the_batch(bool valid_at_every_batch) {
  SymbolicGraph s(17);
  s.input("x", {"batch", "batch", "4"});
  s.output("y", {});
  s.ints("two", {2});
  s.ints("one", {1});
  s.extent("x", 0, "", "b");
  s.node("Mul", {"b", "two"}, "b2");
  if (valid_at_every_batch) {
    s.attr(s.node("Concat", {"b2", "b2"}, "target"), "axis", {0});
  } else {
    s.node("Sub", {"b", "one"}, "b_minus_1");
    s.attr(s.node("Concat", {"b2", "b2", "b_minus_1"}, "target"), "axis", {0});
  }
  onnx::NodeProto& reshape = s.node("Reshape", {"x", "target"}, "r");
  if (!valid_at_every_batch) s.attr(reshape, "allowzero", {1});
  s.node("Relu", {"r"}, "r1");
  s.node("Relu", {"r1"}, "y");
  return s.bytes();
}

// The import at batch 1 holds an opaque Reshape that the one at batch 2 lacks. The check used to pass such a
// size over as one where the original does not work, and so vouched for an export fixed to batch 2 (a target
// of [4, 4], which onnxruntime rejects at batch 1 and 3). It evaluates that size now: the original works
// there, the fixed export does not.
TEST(OnnxCheck, ASizeWhereOnlyTheOriginalKeepsAnOperatorOpaqueIsStillChecked) {
  const std::string original = reshape_by_twice_the_batch(true);
  ASSERT_EQ(import_onnx_bytes(original, "twice.onnx", batch(1)).num_opaque() > 0, true);
  const OnnxModel m = import_onnx_bytes(original, "twice.onnx", batch(2));
  ASSERT_EQ(m.num_opaque(), 0u) << print_graph(m.graph);
  // Without evaluating the sizes (eqsat-run's guard before the check, the only one with --no-check), the
  // original is evaluated at batch 1 in this case only, and the fixed export is refused.
  EXPECT_NE(fixed_size_reason(m, original, export_onnx_bytes(m, m.graph), batch(2)), "");
  CheckResult c = check_optimization(m, m.graph, original, batch(2));  // exported with the target fixed
  ASSERT_TRUE(c.evaluated) << c.reason;
  EXPECT_LT(c.max_abs_diff, 1e-12);  // equal at batch 2
  EXPECT_FALSE(c.passed);
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_TRUE(c.sizes[0].evaluated) << c.sizes[0].reason;
  EXPECT_FALSE(c.sizes[0].passed);
  EXPECT_NE(c.reason.find("at batch=1 (the second value of symbolic dimension 'batch') the optimized model is invalid"),
            std::string::npos)
      << c.reason;
  // The original file itself, as the optimized one, is evaluated at batch 1 (its opaque Reshape too) and passes.
  CheckResult self = check_optimization(m, m.graph, original, batch(2), {}, original);
  EXPECT_TRUE(self.passed) << self.reason;
  ASSERT_EQ(self.sizes.size(), 1u);
  EXPECT_TRUE(self.sizes[0].evaluated) << self.sizes[0].reason;
  EXPECT_TRUE(self.sizes[0].passed) << self.sizes[0].reason;
}

// The same import asymmetry where the original does not work at batch 1 ([1, 1, 4] into [2, 2, 0]): its
// evaluation fails there, so that size is not checked, and the reason says the original does not work there.
TEST(OnnxCheck, ASizeWhereTheOriginalsOwnEvaluationFailsIsNotChecked) {
  const std::string original = reshape_by_twice_the_batch(false);
  const OnnxModel m = import_onnx_bytes(original, "batch_two_only.onnx", batch(2));
  ASSERT_EQ(m.num_opaque(), 0u) << print_graph(m.graph);
  EXPECT_EQ(fixed_size_reason(m, original, export_onnx_bytes(m, m.graph), batch(2)), "");
  CheckResult c = check_optimization(m, m.graph, original, batch(2));
  ASSERT_TRUE(c.evaluated) << c.reason;
  EXPECT_TRUE(c.passed) << c.reason;
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_FALSE(c.sizes[0].evaluated);
  EXPECT_NE(c.sizes[0].reason.find("the original model does not work at batch=1"), std::string::npos)
      << c.sizes[0].reason;
}

}  // namespace
}  // namespace teq::onnx_io

namespace teq::onnx_io {
namespace {

/// x[batch, 4] @ w[4, 3], then CumSum along axis 1 (an operator outside the vocabulary, kept opaque) with
/// `exclusive`; w's entries from `w0` upward in steps of 0.25.
std::string matmul_cumsum(float w0, int64_t exclusive, const std::string& weight = "w") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("g");
  SymbolicGraph::value(g.add_input(), "x", {"batch", "4"});
  SymbolicGraph::value(g.add_output(), "y", {"batch", "3"});
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name(weight);
  w.set_data_type(onnx::TensorProto::FLOAT);
  w.add_dims(4), w.add_dims(3);
  for (int k = 0; k < 12; ++k) w.add_float_data(w0 + 0.25f * static_cast<float>(k));
  onnx::TensorProto& axis = *g.add_initializer();
  axis.set_name("axis");
  axis.set_data_type(onnx::TensorProto::INT64);
  axis.add_int64_data(1);
  onnx::NodeProto& mm = *g.add_node();
  mm.set_op_type("MatMul"), mm.add_input("x"), mm.add_input(weight), mm.add_output("h");
  onnx::NodeProto& cs = *g.add_node();
  cs.set_op_type("CumSum"), cs.add_input("h"), cs.add_input("axis"), cs.add_output("y");
  onnx::AttributeProto& a = *cs.add_attribute();
  a.set_name("exclusive"), a.set_type(onnx::AttributeProto::INT), a.set_i(exclusive);
  return m.SerializeAsString();
}

TEST(OnnxCheck, TheSameComputationPassesWithoutEvaluating) {
  const OnnxModel a = import_onnx_bytes(matmul_cumsum(0.5f, 0), "a.onnx", batch(2));
  ASSERT_EQ(a.num_opaque(), 1u);  // the CumSum
  const CheckResult same = check_models(a, import_onnx_bytes(matmul_cumsum(0.5f, 0), "b.onnx", batch(2)));
  EXPECT_TRUE(same.evaluated && same.passed && same.identical) << same.reason;
  EXPECT_EQ(same.elements, 0u);  // nothing evaluated
  EXPECT_NE(same.note.find("without evaluating"), std::string::npos);
  // A weight of the same value under another name (an export renames the constants the import makes).
  const CheckResult renamed = check_models(a, import_onnx_bytes(matmul_cumsum(0.5f, 0, "w_renamed"), "c.onnx", batch(2)));
  EXPECT_TRUE(renamed.evaluated && renamed.passed && renamed.identical) << renamed.reason;
}

// An operator the evaluator lacks (Celu) does not stop the same computation from passing: nothing is evaluated.
TEST(OnnxCheck, TheSameComputationPassesWithAnOperatorTheEvaluatorLacks) {
  onnx::ModelProto m = onnx::ModelProto();
  ASSERT_TRUE(m.ParseFromString(matmul_cumsum(0.5f, 0)));
  onnx::NodeProto& celu = *m.mutable_graph()->add_node();
  celu.set_op_type("Celu"), celu.add_input("y"), celu.add_output("z");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  const std::string bytes = m.SerializeAsString();
  const OnnxModel a = import_onnx_bytes(bytes, "a.onnx", batch(2));
  const CheckResult same = check_models(a, import_onnx_bytes(bytes, "b.onnx", batch(2)));
  EXPECT_TRUE(same.evaluated && same.passed && same.identical) << same.reason;
  // The same graph with another CumSum: not the same computation, and Celu cannot be evaluated.
  onnx::ModelProto other = m;
  other.mutable_graph()->mutable_node(1)->mutable_attribute(0)->set_i(1);
  const CheckResult differ = check_models(a, import_onnx_bytes(other.SerializeAsString(), "c.onnx", batch(2)));
  EXPECT_FALSE(differ.identical);
  EXPECT_FALSE(differ.evaluated);
  EXPECT_NE(differ.reason.find("Celu"), std::string::npos) << differ.reason;
}

TEST(OnnxCheck, OtherWeightsOrOpaqueAttributesAreEvaluated) {
  const OnnxModel a = import_onnx_bytes(matmul_cumsum(0.5f, 0), "a.onnx", batch(2));
  // The same Expr, other weight values: evaluated, and found different.
  const CheckResult weights = check_models(a, import_onnx_bytes(matmul_cumsum(0.75f, 0), "b.onnx", batch(2)));
  EXPECT_FALSE(weights.identical);
  ASSERT_TRUE(weights.evaluated) << weights.reason;
  EXPECT_FALSE(weights.passed);
  EXPECT_EQ(weights.elements, 6u);
  // The same Expr and weights, the opaque CumSum exclusive: evaluated, and found different.
  const CheckResult attribute = check_models(a, import_onnx_bytes(matmul_cumsum(0.5f, 1), "b.onnx", batch(2)));
  EXPECT_FALSE(attribute.identical);
  ASSERT_TRUE(attribute.evaluated) << attribute.reason;
  EXPECT_FALSE(attribute.passed);
}


/// PyTorch's dynamo export of attention's reshapes, in small: x[batch, seq, 8] viewed as [batch, seq, 2, 4]
/// (allowzero=1, its target Concat(Shape(x)[0], Shape(x)[1], -1, 4)), heads first, folded into a batched
/// MatMul's [batch * 2, seq, 4] (target Concat(-1, Shape(p)[2], 4): the seq moves from axis 2 to axis 1) and
/// unfolded to [batch, 2, seq, 4] (target Concat(Shape(x)[0], 2, Shape(x)[1], 4)). Opset 17, or 14 (Shape
/// without start and end: the export reads an extent with a Gather).
std::string dynamo_head_reshapes(int64_t opset) {
  SymbolicGraph b(opset);
  b.input("x", {"batch", "seq", "8"});
  b.output("y", {"batch", "2", "seq", "4"});
  b.ints("minus_one", {-1}), b.ints("zero", {0}), b.ints("one", {1}), b.ints("two", {2}), b.ints("four", {4});
  b.extent("x", 0, "zero", "b");
  b.extent("x", 1, "one", "s");
  b.attr(b.node("Concat", {"b", "s", "minus_one", "four"}, "view_target"), "axis", {0});
  b.attr(b.node("Reshape", {"x", "view_target"}, "v"), "allowzero", {1});
  b.attr(b.node("Transpose", {"v"}, "p"), "perm", {0, 2, 1, 3});
  b.extent("p", 2, "two", "ps");
  b.attr(b.node("Concat", {"minus_one", "ps", "four"}, "fold_target"), "axis", {0});
  b.node("Reshape", {"p", "fold_target"}, "r");
  b.node("Relu", {"r"}, "h");
  b.attr(b.node("Concat", {"b", "two", "s", "four"}, "unfold_target"), "axis", {0});
  b.node("Reshape", {"h", "unfold_target"}, "y");
  return b.bytes();
}

/// GPT-2's Conv1D as PyTorch's dynamo exporter writes it: x[batch, seq, 8] viewed as [-1, 8] (a constant
/// target), multiplied by a [8, 6] weight, and viewed back as Concat(Shape(x)[0], Shape(x)[1], 6): the
/// second view's changing extents are the batch and the sequence, which its input [batch * seq, 6] lacks.
std::string conv1d_views(int64_t opset) {
  SymbolicGraph b(opset);
  b.input("x", {"batch", "seq", "8"});
  b.output("y", {"batch", "seq", "6"});
  b.ints("zero", {0}), b.ints("one", {1}), b.ints("six", {6}), b.ints("rows", {-1, 8});
  onnx::TensorProto& w = *b.g.add_initializer();
  w.set_name("w"), w.set_data_type(onnx::TensorProto::FLOAT), w.add_dims(8), w.add_dims(6);
  for (int k = 0; k < 48; ++k) w.add_float_data(static_cast<float>((k * 7) % 11) / 8.0f - 0.6f);
  b.extent("x", 0, "zero", "b");
  b.extent("x", 1, "one", "s");
  b.attr(b.node("Reshape", {"x", "rows"}, "flat"), "allowzero", {1});
  b.node("MatMul", {"flat", "w"}, "mm");
  b.attr(b.node("Concat", {"b", "s", "six"}, "back"), "axis", {0});
  b.attr(b.node("Reshape", {"mm", "back"}, "y"), "allowzero", {1});
  return b.bytes();
}

// At batch 2 (and seq 5) the view back's extents 2 and 5 are no extent of its input [10, 6]; they are the
// symbolic dimensions' values, at the bound and at the probe sizes, so the reshape is the vocabulary's and its
// export reads them from x. (GPT-2's canonical export was refused at every batch but 1 before: the import at
// batch 2 kept these views opaque, so the export's targets stayed fixed.)
TEST(OnnxCheck, AViewBackToTheSymbolicSizesIsTheVocabularysAtEveryBatch) {
 for (int64_t opset : {17, 14}) {
  SCOPED_TRACE("opset " + std::to_string(opset));
  const std::string bytes = conv1d_views(opset);
  for (auto [bound_batch, bound_seq] : {std::pair{1, 4}, std::pair{2, 5}}) {
    SCOPED_TRACE("bound at " + std::to_string(bound_batch) + "x" + std::to_string(bound_seq));
    const OnnxModel m = import_onnx_bytes(bytes, "conv1d.onnx", batch_seq(bound_batch, bound_seq));
    EXPECT_EQ(m.num_opaque(), 0u) << print_graph(m.graph);
    ExportOptions follow;
    follow.reshape_targets = symbolic_reshape_targets(m, bytes, batch_seq(bound_batch, bound_seq));
    const std::string exported = export_onnx_bytes(m, m.graph, follow);
    EXPECT_EQ(fixed_size_reason(m, bytes, exported, batch_seq(bound_batch, bound_seq)), "");
    for (auto [b, s] : {std::pair{3, 7}, std::pair{1, 1}, std::pair{2, 5}}) {
      std::vector<double> x(static_cast<size_t>(b * s * 8));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 5) % 13) - 6.0;
      const std::map<std::string, Tensor<double>> inputs = {{"x", Tensor<double>({b, s, 8}, x)}};
      const auto want = evaluate_model(import_onnx_bytes(bytes, "conv1d.onnx", batch_seq(b, s)), inputs);
      const auto got = evaluate_model(import_onnx_bytes(exported, "exported.onnx", batch_seq(b, s)), inputs);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].shape, (Shape{b, s, 6}));
      EXPECT_EQ(got[0].data, want[0].data) << b << "x" << s;
    }
  }
 }
}

/// Grouped-query attention's repeat of the key/value heads as PyTorch's exporters write it: k[batch, 2, seq, 4]
/// unsqueezed to [batch, 2, 1, seq, 4], expanded to Concat(Shape(k)[0], 2, 3, Shape(k)[2], 4) and viewed as
/// [batch, 6, seq, 4]. With `expand_a_one`, the Expand instead broadcasts a [1, 1, 4] weight to [batch, 1, 4]:
/// a target that follows the batch where the input has a fixed 1 (1 at a batch of 1 too: no copy of its extent).
std::string gqa_repeat_kv(int64_t opset, bool expand_a_one = false) {
  SymbolicGraph b(opset);
  b.input("k", {"batch", "2", "seq", "4"});
  b.ints("zero", {0}), b.ints("two", {2}), b.ints("three", {3}), b.ints("four", {4}), b.ints("six", {6});
  b.extent("k", 0, "zero", "b");
  b.extent("k", 2, "two", "s");
  if (expand_a_one) {
    b.output("y", {"batch", "1", "4"});
    onnx::TensorProto& w = *b.g.add_initializer();
    w.set_name("w"), w.set_data_type(onnx::TensorProto::FLOAT), w.add_dims(1), w.add_dims(1), w.add_dims(4);
    for (float v : {0.5f, -1.0f, 2.0f, 0.25f}) w.add_float_data(v);
    b.ints("one", {1});
    b.attr(b.node("Concat", {"b", "one", "four"}, "target"), "axis", {0});  // only the batch varies
    b.node("Expand", {"w", "target"}, "e");
    b.attr(b.node("ReduceMean", {"k"}, "mk"), "axes", {1, 2});  // [batch, 1, 1, 4]
    b.node("Squeeze", {"mk", "one"}, "sk");
    b.node("Add", {"sk", "e"}, "y");
    return b.bytes();
  }
  b.output("y", {"batch", "6", "seq", "4"});
  b.node("Unsqueeze", {"k", "two"}, "u");
  b.attr(b.node("Concat", {"b", "two", "three", "s", "four"}, "target"), "axis", {0});
  b.node("Expand", {"u", "target"}, "e");
  b.attr(b.node("Concat", {"b", "six", "s", "four"}, "view"), "axis", {0});
  b.attr(b.node("Reshape", {"e", "view"}, "r"), "allowzero", {1});
  b.node("Relu", {"r"}, "y");
  return b.bytes();
}

// The reshapes PyTorch's dynamo exporter writes are the vocabulary's (no opaque node: allowzero=1 without a 0
// in the target, a dimension that is another axis's extent); the export writes them so that they follow both
// symbolic dimensions, and computes the original's values at other sizes.
TEST(OnnxCheck, DynamoReshapesAreTheVocabularysAndFollowTheSymbolicSizes) {
 for (int64_t opset : {17, 14}) {
  SCOPED_TRACE("opset " + std::to_string(opset));
  const std::string bytes = dynamo_head_reshapes(opset);
  const OnnxModel m = import_onnx_bytes(bytes, "heads.onnx", batch_seq(1, 5));
  EXPECT_EQ(m.num_opaque(), 0u) << print_graph(m.graph);
  const ReshapeTargets targets = symbolic_reshape_targets(m, bytes, batch_seq(1, 5));
  using Key = std::pair<Shape, Shape>;
  const InputAxis none, seq{"x", 1};  // the seq, read from the graph input that has it
  const ReshapeTargets want = {
      {Key{{1, 5, 8}, {1, 5, 2, 4}}, {{0, 0, 2, 4}, {none, none, none, none}}},
      {Key{{1, 2, 5, 4}, {2, 5, 4}}, {{-1, 5, 4}, {none, seq, none}}},             // the seq from axis 2 to 1
      {Key{{2, 5, 4}, {1, 2, 5, 4}}, {{-1, 2, 5, 4}, {none, none, seq, none}}},  // the batch inferred
  };
  EXPECT_EQ(targets, want);
  ExportOptions follow;
  follow.reshape_targets = targets;
  const std::string exported = export_onnx_bytes(m, m.graph, follow);
  EXPECT_EQ(fixed_size_reason(m, bytes, exported, batch_seq(1, 5)), "");
  EXPECT_NE(fixed_size_reason(m, bytes, export_onnx_bytes(m, m.graph), batch_seq(1, 5)), "");
  // At sizes neither the import nor the second-size check used, the export computes the original's values.
  for (auto [b, s] : {std::pair{3, 7}, std::pair{2, 1}}) {
    std::vector<double> x(static_cast<size_t>(b * s * 8));
    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<double>((k * 7) % 11) - 5.0;
    const std::map<std::string, Tensor<double>> inputs = {{"x", Tensor<double>({b, s, 8}, x)}};
    const auto want = evaluate_model(import_onnx_bytes(bytes, "heads.onnx", batch_seq(b, s)), inputs);
    const auto got = evaluate_model(import_onnx_bytes(exported, "exported.onnx", batch_seq(b, s)), inputs);
    ASSERT_EQ(want.size(), 1u);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].shape, (Shape{b, 2, s, 4}));
    EXPECT_EQ(got[0].data, want[0].data) << b << "x" << s;
  }
  // The seq is read once from the graph input (a Shape, with a Gather before opset 15), for both targets.
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(exported));
  int shapes = 0;
  for (const onnx::NodeProto& n : written.graph().node())
    if (n.op_type() == "Shape") {
      ++shapes;
      EXPECT_EQ(n.input(0), "x");
      EXPECT_EQ(n.attribute_size(), opset >= 15 ? 2 : 0);
    }
  EXPECT_EQ(shapes, 1);
 }
}

// Grouped-query attention's Expand of the key/value heads is the vocabulary's broadcast: its target follows the
// batch and the sequence where it is the input's own extent, so the export writes 1 there and the constant 3,
// which holds at every size. An Expand of a fixed 1 to the batch stays opaque (written back as it is).
TEST(OnnxCheck, AnExpandThatKeepsTheInputsSymbolicExtentsIsTheVocabularysBroadcast) {
 for (int64_t opset : {17, 14}) {
  SCOPED_TRACE("opset " + std::to_string(opset));
  const std::string bytes = gqa_repeat_kv(opset);
  const OnnxModel m = import_onnx_bytes(bytes, "gqa.onnx", batch_seq(1, 5));
  EXPECT_EQ(m.num_opaque(), 0u) << print_graph(m.graph);
  EXPECT_NE(print_graph(m.graph).find("(broadcast 1 2 3 5 4 "), std::string::npos) << print_graph(m.graph);
  ExportOptions follow;
  follow.reshape_targets = symbolic_reshape_targets(m, bytes, batch_seq(1, 5));
  const std::string exported = export_onnx_bytes(m, m.graph, follow);
  EXPECT_EQ(fixed_size_reason(m, bytes, exported, batch_seq(1, 5)), "");
  for (auto [b, s] : {std::pair{3, 7}, std::pair{2, 1}}) {
    std::vector<double> k(static_cast<size_t>(b * 2 * s * 4));
    for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<double>((i * 5) % 13) - 6.0;
    const std::map<std::string, Tensor<double>> inputs = {{"k", Tensor<double>({b, 2, s, 4}, k)}};
    const auto want = evaluate_model(import_onnx_bytes(bytes, "gqa.onnx", batch_seq(b, s)), inputs);
    const auto got = evaluate_model(import_onnx_bytes(exported, "exported.onnx", batch_seq(b, s)), inputs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].shape, (Shape{b, 6, s, 4}));
    EXPECT_EQ(got[0].data, want[0].data) << b << "x" << s;
  }
  // The written Expand's target: 1 for the batch and the sequence, the 3 heads' repeat.
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(exported));
  std::vector<int64_t> target;
  for (const onnx::NodeProto& n : written.graph().node())
    if (n.op_type() == "Expand")
      for (const onnx::TensorProto& t : written.graph().initializer())
        if (t.name() == n.input(1)) target.assign(t.int64_data().begin(), t.int64_data().end());
  EXPECT_EQ(target, (std::vector<int64_t>{1, 1, 3, 1, 1}));

  // A fixed 1 expanded to the batch (1 at the bound size too): not a copy of the input's extent.
  const OnnxModel one = import_onnx_bytes(gqa_repeat_kv(opset, true), "one.onnx", batch_seq(1, 5));
  size_t expands = 0;
  for (const OpaqueNode& n : one.opaque) expands += n.op_type == "Expand";
  EXPECT_EQ(expands, 1u) << print_graph(one.graph);
 }
}

// A linear layer on a [batch, seq, K] activation: x @ w + b (b a vector, or, with `residual`, a [batch, seq, N]
// graph input, which Gemm cannot take as its C).
std::string linear_layer(int64_t opset, bool residual) {
  SymbolicGraph sg(opset);
  sg.input("x", {"batch", "seq", "4"});
  if (residual) sg.input("r", {"batch", "seq", "3"});
  auto floats = [&](const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto& t = *sg.g.add_initializer();
    t.set_name(name), t.set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t.add_dims(d), n *= d;
    for (int64_t k = 0; k < n; ++k) t.add_float_data(static_cast<float>((k * 5) % 7) - 3.0f);
  };
  floats("w", {4, 3});
  floats("b", {3});
  sg.node("MatMul", {"x", "w"}, "xw");
  sg.node("Add", {"xw", residual ? "r" : "b"}, "y");
  sg.output("y", {"batch", "seq", "3"});
  return sg.bytes();
}

std::map<std::string, int> op_counts(const std::string& bytes) {
  onnx::ModelProto written;
  EXPECT_TRUE(written.ParseFromString(bytes));
  std::map<std::string, int> counts;
  for (const onnx::NodeProto& n : written.graph().node()) ++counts[n.op_type()];
  return counts;
}

// ExportOptions::batched_linear_as_gemm: a MatMul of a rank-3 activation and its bias Add (which onnxruntime fuses
// only at a concrete shape) are written as Reshape, Gemm, Reshape back to the activation's own leading extents,
// so the file computes the original's values at sizes neither the import nor the check used. Not before opset 15
// (no Shape with start and end) and not for an Add of a tensor Gemm cannot broadcast.
TEST(OnnxCheck, ALinearLayerOfASymbolicShapeIsWrittenAsOneGemmValidAtEverySize) {
  const std::string bytes = linear_layer(17, false);
  const OnnxModel m = import_onnx_bytes(bytes, "linear.onnx", batch_seq(1, 5));
  EXPECT_TRUE(has_batched_linear(m.graph, m.opset, precomputable_nodes(m.graph)));
  ExportOptions as_gemm;
  as_gemm.batched_linear_as_gemm = true;
  const std::string exported = export_onnx_bytes(m, m.graph, as_gemm);
  const std::map<std::string, int> counts = op_counts(exported);
  EXPECT_EQ(counts.count("MatMul") + counts.count("Add"), 0u) << exported.size();
  EXPECT_EQ(counts.at("Gemm"), 1);
  EXPECT_EQ(counts.at("Reshape"), 2);
  EXPECT_EQ(fixed_size_reason(m, bytes, exported, batch_seq(1, 5)), "");
  for (auto [b, s] : {std::pair{3, 7}, std::pair{2, 1}}) {
    std::vector<double> x(static_cast<size_t>(b * s * 4));
    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<double>((k * 7) % 11) - 5.0;
    const std::map<std::string, Tensor<double>> inputs = {{"x", Tensor<double>({b, s, 4}, x)}};
    const auto want = evaluate_model(import_onnx_bytes(bytes, "linear.onnx", batch_seq(b, s)), inputs);
    const auto got = evaluate_model(import_onnx_bytes(exported, "exported.onnx", batch_seq(b, s)), inputs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].shape, (Shape{b, s, 3}));
    EXPECT_EQ(got[0].data, want[0].data) << b << "x" << s;
  }
  // The kernels the form adds beyond the MatMul and Add: two Reshapes less the Add, and the Shape and Concat.
  EXPECT_EQ(batched_linear_extra_kernels(exported), 3);
  EXPECT_EQ(batched_linear_extra_kernels(bytes), 0);
  // A layer smaller than the size where the form pays is written as it was.
  ExportOptions large_only = as_gemm;
  large_only.batched_linear_min_elements = 5 * 3 + 1;  // the layer's [1, 5, 3] output at the bound sizes
  EXPECT_EQ(op_counts(export_onnx_bytes(m, m.graph, large_only)).count("Gemm"), 0u);
  EXPECT_FALSE(has_batched_linear(m.graph, m.opset, precomputable_nodes(m.graph), large_only.batched_linear_min_elements));
  large_only.batched_linear_min_elements = 5 * 3;
  EXPECT_EQ(op_counts(export_onnx_bytes(m, m.graph, large_only)).at("Gemm"), 1);
  // Without the option, and before opset 15, MatMul and Add as the input has them.
  EXPECT_EQ(op_counts(export_onnx_bytes(m, m.graph)).count("Gemm"), 0u);
  const OnnxModel m14 = import_onnx_bytes(linear_layer(14, false), "linear14.onnx", batch_seq(1, 5));
  EXPECT_FALSE(has_batched_linear(m14.graph, m14.opset, precomputable_nodes(m14.graph)));
  EXPECT_EQ(op_counts(export_onnx_bytes(m14, m14.graph, as_gemm)).count("Gemm"), 0u);
  // A residual of the activation's shape is no bias.
  const OnnxModel mr = import_onnx_bytes(linear_layer(17, true), "residual.onnx", batch_seq(1, 5));
  EXPECT_FALSE(has_batched_linear(mr.graph, mr.opset, precomputable_nodes(mr.graph)));
  EXPECT_EQ(op_counts(export_onnx_bytes(mr, mr.graph, as_gemm)).count("Gemm"), 0u);
}

}  // namespace
}  // namespace teq::onnx_io
