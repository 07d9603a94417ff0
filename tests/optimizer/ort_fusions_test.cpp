// onnxruntime's load-time fusions recognized in our graphs (optimizer/cost/ort_fusions.h) and priced by a cost
// DB's fused entries (optimizer/cost/measured_cost.h): a residual Add and the layer norm after it cost what the
// SkipLayerNormalization kernel costs, not the sum of their twelve nodes; a DB without fused entries (every DB
// written before them) prices node by node as before; a malformed fused entry is refused by name.
#include <gtest/gtest.h>

#include "optimizer/cost/measured_cost.h"
#include "optimizer/cost/ort_fusions.h"
#include "optimizer/engine/extract.h"
#include "rules/evaluator.h"
#include "rules/sexpr.h"
#include "rules/shape.h"

namespace teq {
namespace {

/// A layer norm over the last axis of `x` as PyTorch exports it and the import reads it: mean, x - mean,
/// mean of its square, + eps, sqrt, divide, * gamma, and (`beta`) + beta; `outer` wraps its output ("%").
std::string layer_norm(const std::string& x, bool beta = true, const std::string& outer = "%") {
  const std::string d = "(ewsub " + x + " (broadcast 2 16 64 (reduce_mean 1 2 " + x + ")))";
  const std::string sd = "(sqrt (ewadd (reduce_mean 1 2 (ewmul d d)) (broadcast 2 16 1 (weight eps))))";
  const std::string scaled = "(ewmul (ewdiv d (broadcast 2 16 64 " + sd + ")) (broadcast 2 16 64 (weight gamma 64)))";
  std::string y = beta ? "(ewadd " + scaled + " (broadcast 2 16 64 (weight beta 64)))" : scaled;
  std::string wrapped = outer;
  wrapped.replace(wrapped.find('%'), 1, y);
  return "(let d " + d + ") " + wrapped;
}

const std::string kX = "(input x 2 16 64)", kResidual = "(ewadd (input x 2 16 64) (input r 2 16 64))";

struct Analysed {
  Expr graph;
  std::vector<Shape> shapes;
  std::vector<bool> precomputable;
};

Analysed analyse(const std::string& text) {
  Analysed a{parse_expr(text), {}, {}};
  a.shapes = infer_shapes(a.graph, {});
  a.precomputable = precomputable_nodes(a.graph);
  return a;
}

std::vector<FusedUnit> units_of(const std::string& text) {
  const Analysed a = analyse(text);
  return find_ort_fusions(a.graph, a.shapes, a.precomputable);
}

/// A fallback with a recognizable answer: 1 second per output element.
class ElementCost final : public CostModel {
 public:
  std::string name() const override { return "elements"; }
  using CostModel::node_cost;
  double node_cost(const NodeContext& node) const override {
    return static_cast<double>(num_elements(node.output));
  }
};

MeasuredCostModel db_model(std::map<std::string, double> fused) {
  CostDb db;
  db.fused_ms = std::move(fused);
  return MeasuredCostModel(std::move(db), NodeTimer{}, std::make_unique<ElementCost>(), {.name = "db:test", .save_path = {}});
}

TEST(OrtFusions, ResidualAddAndLayerNormAreOneSkipLayerNormalization) {
  const std::vector<FusedUnit> units = units_of(layer_norm(kResidual));
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].kind, OrtFusion::SkipLayerNormalization);
  EXPECT_EQ(units[0].key, "ort:SkipLayerNormalization|[2,16,64]");
  // add, mean, its broadcast, sub, square, variance, + eps, sqrt, its broadcast, div, * gamma, + beta
  EXPECT_EQ(units[0].nodes.size(), 12u);
}

TEST(OrtFusions, LayerNormAloneWithoutBetaAndWithASharedSum) {
  ASSERT_EQ(units_of(layer_norm(kX)).size(), 1u);
  EXPECT_EQ(units_of(layer_norm(kX))[0].kind, OrtFusion::LayerNormalization);
  // Without + beta it is still a LayerNormalization (onnxruntime's profile of such a file: LayerNormalization
  // kernels with the residual Adds apart): mean, its broadcast, sub, square, variance, + eps, sqrt, its
  // broadcast, div, * gamma; the residual Add is not taken in.
  const std::vector<FusedUnit> no_beta = units_of(layer_norm(kResidual, false));
  ASSERT_EQ(no_beta.size(), 1u);
  EXPECT_EQ(no_beta[0].kind, OrtFusion::LayerNormalization);
  EXPECT_EQ(no_beta[0].nodes.size(), 10u);
  // x / sqrt(mean(x * x) + eps) * w, with no mean taken off: onnxruntime's RMS-norm fusion, seven nodes.
  const std::string sd = "(broadcast 2 16 64 (sqrt (ewadd (reduce_mean 1 2 (ewmul x x)) (broadcast 2 16 1 (weight eps)))))";
  const std::vector<FusedUnit> rms =
      units_of("(let x (input x 2 16 64)) (ewmul (ewdiv x " + sd + ") (broadcast 2 16 64 (weight w 64)))");
  ASSERT_EQ(rms.size(), 1u);
  EXPECT_EQ(rms[0].kind, OrtFusion::SimplifiedLayerNormalization);
  EXPECT_EQ(rms[0].nodes.size(), 7u);
  // The residual sum also used elsewhere: SkipLayerNormFusion leaves the Add, the layer norm still fuses.
  const std::vector<FusedUnit> shared = units_of("(let s " + kResidual + ") " + layer_norm("s") + " (relu s)");
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0].kind, OrtFusion::LayerNormalization);
  // A reduction over another axis is no layer norm onnxruntime fuses.
  EXPECT_TRUE(units_of("(ewsub (input x 2 16 64) (broadcast 2 16 64 (reduce_mean 1 1 (input x 2 16 64))))").empty());
  ASSERT_EQ(units_of("(gelu (input x 2 16 128))").size(), 1u);
  EXPECT_EQ(units_of("(gelu (input x 2 16 128))")[0].key, "ort:Gelu|[2,16,128]");
  // The tanh approximation is FastGeluFusion's FastGelu.
  ASSERT_EQ(units_of("(gelu_tanh (input x 2 16 128))").size(), 1u);
  EXPECT_EQ(units_of("(gelu_tanh (input x 2 16 128))")[0].key, "ort:FastGelu|[2,16,128]");
}

TEST(OrtFusions, MatmulsAsOnnxruntimeFusesThem) {
  // A rank-3 tensor times a weight matrix plus a bias: MatMulAddFusion's Reshape, Gemm, Reshape.
  const std::vector<FusedUnit> gemm =
      units_of("(ewadd (matmul 0 (input x 2 16 64) (weight w 64 128)) (broadcast 2 16 128 (weight b 128)))");
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_EQ(gemm[0].key, "ort:Gemm|[32,64],[64,128]");
  EXPECT_EQ(gemm[0].nodes.size(), 2u);
  // Without a bias, or with a per-run weight, there is nothing to fuse.
  EXPECT_TRUE(units_of("(matmul 0 (input x 2 16 64) (weight w 64 128))").empty());
  EXPECT_TRUE(units_of("(ewadd (matmul 0 (input x 2 16 64) (input w 64 128)) (broadcast 2 16 128 (weight b 128)))").empty());
  // Attention scores: the transposes and the constant scale go into one FusedMatMul.
  const std::vector<FusedUnit> scores = units_of(
      "(matmul 0 (ewdiv (transpose 1 0 2 (input q 16 8 16)) (broadcast 8 16 16 (weight s))) "
      "(transpose 1 2 0 (input k 16 8 16)))");
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_EQ(scores[0].key, "ort:FusedMatMul|[8,16,16],[8,16,16]");
  EXPECT_EQ(scores[0].nodes.size(), 4u);
  // A transpose used elsewhere stays a kernel of its own; nothing absorbed, no unit.
  EXPECT_TRUE(units_of("(let t (transpose 1 0 2 (input q 16 8 16))) (matmul 0 t (input k 8 16 16)) (relu t)").empty());
}

TEST(OrtFusions, A2dMatmulAndItsAddAreOneGemmWithTheActivationAfterIt) {
  // An RNN cell: tanh(x W1 + y W2) runs as one FusedGemm (MatMulAddFusion, GemmActivationFusion): the first
  // matmul is the product, the second the added C.
  const std::string cell = "(ewadd (matmul 0 (input x 1 512) (weight w1 512 256)) (matmul 0 (input y 1 512) (weight w2 512 256)))";
  const std::vector<FusedUnit> tanh = units_of("(relu (tanh " + cell + "))");
  ASSERT_EQ(tanh.size(), 1u);
  EXPECT_EQ(tanh[0].kind, OrtFusion::FusedGemmTanh);
  EXPECT_EQ(tanh[0].key, "ort:FusedGemmTanh|[1,512],[512,256],[1,256]");
  EXPECT_EQ(tanh[0].nodes.size(), 3u);
  EXPECT_DOUBLE_EQ(tanh[0].weight_bytes, 512 * 256 * 4);
  // A bias row, no activation: a plain Gemm; an activation other than relu, tanh and sigmoid stays outside.
  // The bias's broadcast is the add's numpy broadcasting in the file: C is the bias itself.
  const std::vector<FusedUnit> biased =
      units_of("(sqrt (ewadd (matmul 0 (input x 4 8) (weight w 8 16)) (broadcast 4 16 (weight b 1 16))))");
  ASSERT_EQ(biased.size(), 1u);
  EXPECT_EQ(biased[0].key, "ort:Gemm2d|[4,8],[8,16],[1,16]");
  EXPECT_EQ(biased[0].nodes.size(), 2u);
  // A matmul used twice, a matmul that is a graph output, and an added operand Gemm cannot broadcast: none.
  EXPECT_TRUE(units_of("(let m (matmul 0 (input x 4 8) (weight w 8 16))) (ewadd m (input b 4 16)) (relu m)").empty());
  EXPECT_TRUE(units_of("(let m (matmul 0 (input x 4 8) (weight w 8 16))) (ewadd m (input b 4 16)) m").empty());
  EXPECT_EQ(units_of("(ewadd (matmul 0 (input x 4 8) (weight w 8 16)) (broadcast 4 16 (input b 4 1)))").size(), 1u);  // (M,1)
  EXPECT_TRUE(units_of("(ewadd (matmul 0 (input x 4 8) (weight w 8 16)) (broadcast 4 16 (input b 1 1)))").empty());
}

TEST(OrtFusions, KeysParseBackAndMalformedOnesDoNot) {
  for (const std::string key : {"ort:SkipLayerNormalization|[2,16,64]", "ort:Gemm|[32,64],[64,192]", "ort:Gelu|[7]", "ort:FastGelu|[1,64,3072]",
                                "ort:FusedGemmSigmoid|[1,512],[512,512],[1,512]", "ort:Gemm2d|[4,8],[8,16],[16]"}) {
    const auto parsed = parse_fused_unit_key(key);
    ASSERT_TRUE(parsed) << key;
    EXPECT_EQ(fused_unit_key(parsed->first, parsed->second), key);
  }
  for (const std::string key : {"ort:Gemm|[32,64]", "ort:Gemm2d|[4,8],[8,16]", "ort:Gelu|[2],[3]", "ort:Gelu|[]", "ort:Gelu|[2,]", "ort:Gelu|2",
                                "Gelu|[2]", "ort:Gelu", "ort:Gelu|[2]x"})
    EXPECT_FALSE(parse_fused_unit_key(key)) << key;
}

TEST(OrtFusions, ADbWithAFusedEntryPricesTheUnitAsTheFusedKernel) {
  const Analysed a = analyse(layer_norm(kResidual, true, "(relu %)"));
  const MeasuredCostModel model = db_model({{"ort:SkipLayerNormalization|[2,16,64]", 0.004}});
  const GraphCost cost = graph_cost_detail(a.graph, model);
  EXPECT_EQ(model.stats().fused_hits, 1u);
  EXPECT_EQ(cost.units, 1u);
  EXPECT_DOUBLE_EQ(cost.fused, 2 * 16 * 64 + 0.004e-3);  // the relu (1 s per element), then the kernel
  EXPECT_GT(cost.unfused, 12 * 2 * 16);                 // every node priced alone
  EXPECT_DOUBLE_EQ(graph_cost(a.graph, model), cost.fused);
}

TEST(OrtFusions, ADbWithoutFusedEntriesPricesNodeByNodeAndListsTheUnits) {
  const Analysed a = analyse(layer_norm(kResidual));
  const MeasuredCostModel model = db_model({});
  const GraphCost cost = graph_cost_detail(a.graph, model);
  EXPECT_EQ(cost.units, 0u);
  EXPECT_DOUBLE_EQ(cost.fused, cost.unfused);
  ASSERT_EQ(model.missed_fused().size(), 1u);  // what bench/ort_cost_db.py times next (--cost-misses)
  EXPECT_EQ(model.missed_fused()[0].key, "ort:SkipLayerNormalization|[2,16,64]");
  EXPECT_EQ(model.stats().missed_fused_keys, std::vector<std::string>{"ort:SkipLayerNormalization|[2,16,64]"});
}

nlohmann::json db_json(nlohmann::json fused) {
  nlohmann::json j = {{"format", "tensor-eqsat-costs"}, {"version", 1}, {"entries", {{"relu||[2]", 0.001}}}};
  if (!fused.is_null()) j["fused_entries"] = std::move(fused);
  return j;
}

TEST(OrtFusions, OldDbsLoadAndFusedEntriesRoundTrip) {
  const CostDb old = CostDb::from_json(db_json(nullptr), "old.json");  // written before fused entries existed
  EXPECT_TRUE(old.fused_ms.empty());
  EXPECT_FALSE(old.to_json().contains("fused_entries"));  // saved again, it stays the old format
  const CostDb db = CostDb::from_json(db_json({{"ort:Gelu|[2,16,128]", 0.0028}}), "new.json");
  EXPECT_EQ(db.fused_ms, (std::map<std::string, double>{{"ort:Gelu|[2,16,128]", 0.0028}}));
  EXPECT_EQ(CostDb::from_json(db.to_json(), "again.json").fused_ms, db.fused_ms);
}

TEST(OrtFusions, MalformedFusedEntriesAreRefusedByName) {
  auto expect_error = [](const nlohmann::json& fused, const std::string& needle) {
    try {
      CostDb::from_json(db_json(fused), "costs.json");
      ADD_FAILURE() << "accepted " << fused.dump();
    } catch (const CostDbError& e) {
      EXPECT_NE(std::string(e.what()).find("costs.json: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(nlohmann::json::array(), "\"fused_entries\" must be an object");
  expect_error({{"ort:FastLayerNorm|[2,16,64]", 0.01}}, "fused entry \"ort:FastLayerNorm|[2,16,64]\": not a fused unit key");
  expect_error({{"ort:Gelu|[2,x]", 0.01}}, "SkipLayerNormalization");  // the message lists the valid forms
  expect_error({{"relu||[2]", 0.01}}, "not a fused unit key");          // a node key in the wrong table
  expect_error({{"ort:Gelu|[2,16]", -1.0}}, "non-negative number of milliseconds");
  expect_error({{"ort:Gelu|[2,16]", "fast"}}, "ort:Gelu|[2,16]");
}

TEST(OrtFusions, AModelLargerThanTheCacheIsPricedFromStreamedEntries) {
  // NasRNN's weights (84 MB) outgrow the cache: a matrix-vector product and its fused Gemm are priced from the
  // "streamed:" entries (timed with the weight cold), and what the DB lacks is listed under that key.
  const std::string gemm = "(tanh (ewadd (matmul 0 (input x 1 512) (weight w1 512 512)) (matmul 0 (input y 1 512) (weight w2 512 512))))";
  const std::string mv = "matmul|0|[1,512],[512,512]";
  CostDb db;
  db.cache_bytes = 32 << 20;
  db.entries_ms = {{mv, 0.02}, {std::string(kStreamedKeyPrefix) + mv, 0.06}};
  db.fused_ms = {{"streamed:ort:FusedGemmTanh|[1,512],[512,512],[1,512]", 0.065}};
  const CostDb saved = CostDb::from_json(db.to_json(), "db.json");
  EXPECT_EQ(saved.cache_bytes, db.cache_bytes);
  EXPECT_EQ(saved.fused_ms, db.fused_ms);
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "teq_streamed_db.json";
  saved.save(file);
  auto model_for = [&](double weight_bytes) {
    return make_db_cost_model(file, std::make_unique<ElementCost>(), ModelFootprint{.weight_bytes = weight_bytes});
  };
  const std::unique_ptr<MeasuredCostModel> small = model_for(1e6), large = model_for(84e6);
  std::filesystem::remove(file);
  EXPECT_FALSE(small->streams_weights());
  EXPECT_TRUE(large->streams_weights());
  const Analysed a = analyse(gemm);
  // Cached: both matmuls at 0.02 ms, the add an epilogue of theirs, the tanh (not fused: ElementCost does
  // not fuse) 512 s at 1 s per element; streamed: the FusedGemm unit replaces the first matmul, the add and
  // the tanh, the second matmul is streamed.
  EXPECT_DOUBLE_EQ(graph_cost(a.graph, *small), 2 * 0.02e-3 + 512 + 512);
  EXPECT_NEAR(graph_cost(a.graph, *large), 0.065e-3 + 0.06e-3, 1e-12);
  const Analysed other = analyse("(matmul 0 (input x 1 1024) (weight w 1024 512))");
  graph_cost(other.graph, *large);
  const std::vector<CostKey> missed = large->missed();
  const auto it = std::ranges::find(missed, std::string("streamed:matmul|0|[1,1024],[1024,512]"), &CostKey::text);
  ASSERT_NE(it, missed.end());
  EXPECT_TRUE(it->streamed);
  EXPECT_TRUE(std::ranges::none_of(missed, [](const CostKey& k) { return k.text.starts_with("matmul"); }));
}

}  // namespace
}  // namespace teq
