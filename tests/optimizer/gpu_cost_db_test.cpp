// The measured cost model's CPU side: canonical keys, the JSON cost DB, misses and the fallback, and
// the measuring path with an injected timer. Runs on every machine; the real GPU timer is exercised by
// gpu_runtime_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "optimizer/cost/cost_models.h"
#include "optimizer/cost/measured_cost.h"

namespace teq {
namespace {

/// A fallback with a recognizable answer: 1 second per output element.
class ElementCost final : public CostModel {
 public:
  std::string name() const override { return "elements"; }
  using CostModel::node_cost;
  double node_cost(const NodeContext& node) const override {
    ++calls;
    return static_cast<double>(num_elements(node.output));
  }
  mutable std::atomic<int> calls{0};
};

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("teq-gpu-cost-" + std::to_string(::getpid()) + "-" + name);
}

TEST(GpuCostKey, IsStableAndReadable) {
  const std::vector<Shape> in = {{1, 64, 56, 56}, {64, 64, 3, 3}};
  const std::vector<int64_t> attrs = {1, 1, -1, -1, 2};
  EXPECT_EQ(canonical_cost_key(OpKind::Conv2d, attrs, in).text, "conv2d|1,1,-1,-1,2|[1,64,56,56],[64,64,3,3]");
  EXPECT_EQ(canonical_cost_key(OpKind::Relu, {}, std::vector<Shape>{{2, 3}}).text, "relu||[2,3]");
  EXPECT_EQ(canonical_cost_key(OpKind::Smul, {}, std::vector<Shape>{{4}, {}}).text, "smul||[4],[]");
}

TEST(GpuCostKey, NormalizesEquivalentNodes) {
  // Negative and positive axes name the same work.
  const std::vector<Shape> cat = {{2, 3, 4}, {2, 3, 5}};
  EXPECT_EQ(canonical_cost_key(OpKind::Concat, std::vector<int64_t>{-1}, cat).text,
            canonical_cost_key(OpKind::Concat, std::vector<int64_t>{2}, cat).text);
  EXPECT_NE(canonical_cost_key(OpKind::Concat, std::vector<int64_t>{1}, std::vector<Shape>{{2, 3, 4}, {2, 5, 4}}).text,
            canonical_cost_key(OpKind::Concat, std::vector<int64_t>{2}, cat).text);
  // A split is the slice it selects; the reference tensor only contributes its cut.
  const CostKey split = canonical_cost_key(OpKind::Split, std::vector<int64_t>{1, 1, -1},
                                           std::vector<Shape>{{2, 7, 3}, {9, 3}});
  EXPECT_EQ(split.op, OpKind::Slice);
  EXPECT_EQ(split.text, "slice|1,3,7|[2,7,3]");
  EXPECT_EQ(split.text, canonical_cost_key(OpKind::Slice, std::vector<int64_t>{-2, 3, 7},
                                           std::vector<Shape>{{2, 7, 3}}).text);
  // Constants depend on one dimension of their reference only.
  EXPECT_EQ(canonical_cost_key(OpKind::Eye, {}, std::vector<Shape>{{5, 6, 8}}).text, "eye||[8]");
  EXPECT_EQ(canonical_cost_key(OpKind::IConv, std::vector<int64_t>{3, 3}, std::vector<Shape>{{1, 16, 7, 7}}).text,
            "iconv|3,3|[1,16]");
}

TEST(GpuCostDb, RoundTripsThroughAFile) {
  CostDb db;
  db.device = "Test GPU (sm_90, 1 GiB)";
  db.precision = "tf32";
  db.warmup = 2;
  db.repeats = 7;
  db.fallback = "analytical:cpu-ort";
  db.entries_ms = {{"relu||[2,3]", 0.004}, {"conv2d|1,1,0,0,0|[1,3,8,8],[4,3,1,1]", 0.0125}};
  const auto file = temp_file("roundtrip.json");
  db.save(file);
  const CostDb back = CostDb::load(file);
  EXPECT_EQ(back.device, db.device);
  EXPECT_EQ(back.precision, "tf32");
  EXPECT_EQ(back.warmup, 2);
  EXPECT_EQ(back.repeats, 7);
  EXPECT_EQ(back.fallback, "analytical:cpu-ort");
  EXPECT_EQ(back.entries_ms, db.entries_ms);
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["format"], "tensor-eqsat-costs");
  EXPECT_EQ(j["unit"], "ms");
  std::filesystem::remove(file);
}

TEST(GpuCostDb, RejectsBrokenFilesNamingTheProblem) {
  EXPECT_THROW(CostDb::load("/nonexistent/costs.json"), CostDbError);
  auto expect_error = [](const nlohmann::json& j, const std::string& needle) {
    try {
      CostDb::from_json(j, "costs.json");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const CostDbError& e) {
      EXPECT_NE(std::string(e.what()).find("costs.json: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{"format", "something"}, {"version", 1}, {"entries", nlohmann::json::object()}}, "format");
  expect_error({{"format", "tensor-eqsat-costs"}, {"version", 2}, {"entries", nlohmann::json::object()}}, "version");
  expect_error({{"format", "tensor-eqsat-costs"}, {"version", 1}}, "entries");
  expect_error({{"format", "tensor-eqsat-costs"}, {"version", 1}, {"entries", {{"relu||[2]", -1.0}}}}, "relu||[2]");
  expect_error({{"format", "tensor-eqsat-costs"}, {"version", 1}, {"fallback", 3}, {"entries", nlohmann::json::object()}},
               "fallback");
  expect_error({{"format", "tensor-eqsat-costs"}, {"version", 1}, {"fallback", "db:other.json"},
                {"entries", nlohmann::json::object()}},
               "fallback");
  const auto file = temp_file("notjson.json");
  std::ofstream(file) << "{ not json";
  EXPECT_THROW(CostDb::load(file), CostDbError);
  std::filesystem::remove(file);
}

TEST(GpuCostModel, DbHitsMissesAndFallback) {
  CostDb db;
  db.entries_ms = {{"relu||[2,3]", 0.5}};
  const auto file = temp_file("db.json");
  db.save(file);
  auto fallback = std::make_unique<ElementCost>();
  const ElementCost* fb = fallback.get();
  auto model = make_db_cost_model(file, std::move(fallback));
  EXPECT_EQ(model->name(), "db:" + file.string());

  const std::vector<Shape> small = {{2, 3}}, big = {{4, 5}};
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Relu, {}, small, {2, 3}), 0.5e-3);  // ms in the DB, seconds out
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Relu, {}, big, {4, 5}), 20.0);      // the fallback's answer
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Relu, {}, big, {4, 5}), 20.0);
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Input, std::vector<int64_t>{4, 5}, {}, {4, 5}), 0.0);  // leaves are free
  const std::vector<Shape> opaque_in = {{3}};
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Opaque, std::vector<int64_t>{0, 0, 7}, opaque_in, {7}), 7.0);

  const CostLookupStats s = model->stats();
  EXPECT_EQ(s.lookups, 4u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.unmeasurable, 1u);
  EXPECT_EQ(s.measured, 0u);
  EXPECT_EQ(s.missed_keys, std::vector<std::string>{"relu||[4,5]"});
  ASSERT_EQ(model->missed().size(), 1u);  // every distinct miss in canonical form, for --cost-misses
  EXPECT_EQ(model->missed()[0].op, OpKind::Relu);
  EXPECT_EQ(model->missed()[0].inputs, (std::vector<Shape>{{4, 5}}));
  EXPECT_EQ(fb->calls, 3);
  EXPECT_EQ(s.to_json()["distinct_misses"], 1);
  std::filesystem::remove(file);
}

TEST(GpuCostModel, TheDbNamesItsFallback) {
  // A DB measured in onnxruntime on a CPU falls back to a CPU model, not to the default GPU one.
  CostDb db;
  db.fallback = "flops";
  db.entries_ms = {{"relu||[2,3]", 0.5}};
  const auto file = temp_file("fallback.json");
  db.save(file);
  const auto corpus = std::filesystem::path(TEQ_SOURCE_DIR) / "corpus";
  auto model = make_cost_model("db:" + file.string(), corpus);
  const std::vector<Shape> in = {{4, 5}};
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Relu, {}, in, {4, 5}), FlopCostModel().node_cost(OpKind::Relu, {}, in, {4, 5}));
  db.fallback.clear();
  db.save(file);
  EXPECT_DOUBLE_EQ(make_cost_model("db:" + file.string(), corpus)->node_cost(OpKind::Relu, {}, in, {4, 5}),
                   make_cost_model(kDefaultCostSpec, corpus)->node_cost(OpKind::Relu, {}, in, {4, 5}));
  std::filesystem::remove(file);
}

TEST(GpuCostModel, MissWithoutFallbackNamesTheKey) {
  MeasuredCostModel model(CostDb{}, NodeTimer{}, nullptr, {.name = "db:empty", .save_path = {}});
  try {
    model.node_cost(OpKind::Tanh, {}, std::vector<Shape>{{8}}, {8});
    FAIL() << "a miss without a fallback must throw";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("tanh||[8]"), std::string::npos) << e.what();
  }
}

TEST(GpuCostModel, MeasuresEachCanonicalNodeOnceAndSavesTheDb) {
  std::vector<std::string> timed;
  NodeTimer timer = [&](OpKind op, AttrSpan attrs, std::span<const Shape> in) {
    timed.push_back(canonical_cost_key(op, attrs, in).text);
    return 0.25 * static_cast<double>(timed.size());
  };
  const auto file = temp_file("measured.json");
  {
    MeasuredCostModel model(CostDb{.device = "fake", .precision = "fp32", .warmup = 1, .repeats = 3, .fallback = {},
                                   .entries_ms = {}, .fused_ms = {}, .cache_bytes = 0},
                            timer, std::make_unique<ElementCost>(), {.name = "measured:fake", .save_path = file});
    const std::vector<Shape> x = {{2, 7, 3}, {9, 3}};
    EXPECT_DOUBLE_EQ(model.node_cost(OpKind::Split, std::vector<int64_t>{1, 0, 1}, x, {2, 3, 3}), 0.25e-3);
    // The same slice written as a slice: no second measurement.
    EXPECT_DOUBLE_EQ(model.node_cost(OpKind::Slice, std::vector<int64_t>{1, 0, 3}, std::vector<Shape>{{2, 7, 3}},
                                     {2, 3, 3}),
                     0.25e-3);
    EXPECT_DOUBLE_EQ(model.node_cost(OpKind::Relu, {}, std::vector<Shape>{{5}}, {5}), 0.5e-3);
    EXPECT_EQ(timed, (std::vector<std::string>{"slice|1,0,3|[2,7,3]", "relu||[5]"}));
    EXPECT_EQ(model.stats().measured, 2u);
    EXPECT_EQ(model.stats().hits, 1u);
  }  // destruction saves the new entries
  const CostDb saved = CostDb::load(file);
  EXPECT_EQ(saved.device, "fake");
  EXPECT_EQ(saved.entries_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(saved.entries_ms.at("relu||[5]"), 0.5);
  // A DB model over the saved file answers without measuring.
  auto db_model = make_db_cost_model(file, nullptr);
  EXPECT_DOUBLE_EQ(db_model->node_cost(OpKind::Relu, {}, std::vector<Shape>{{5}}, {5}), 0.5e-3);
  std::filesystem::remove(file);
}

TEST(GpuCostModel, TimingFailuresFallBackAndAreReported) {
  NodeTimer timer = [](OpKind, AttrSpan, std::span<const Shape>) -> double {
    throw std::runtime_error("cudnn said no");
  };
  MeasuredCostModel model(CostDb{}, timer, std::make_unique<ElementCost>(), {.name = "measured:x", .save_path = {}});
  EXPECT_DOUBLE_EQ(model.node_cost(OpKind::Relu, {}, std::vector<Shape>{{3}}, {3}), 3.0);
  const CostLookupStats s = model.stats();
  EXPECT_EQ(s.unmeasurable, 1u);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("cudnn said no"), std::string::npos);
}

TEST(GpuCostModel, MeasuredWithoutGpuFailsClearly) {
  const GpuStatus status = gpu_status();
  if (status.available) GTEST_SKIP() << "a GPU is present (" << status.device << "); this checks the refusal";
  EXPECT_FALSE(status.reason.empty());
  try {
    make_measured_cost_model({}, std::make_unique<ElementCost>());
    FAIL() << "--cost measured must refuse without a GPU";
  } catch (const GpuUnavailableError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--cost measured needs an NVIDIA GPU"), std::string::npos) << what;
    EXPECT_NE(what.find("db:FILE"), std::string::npos) << what;
  }
  EXPECT_THROW(measure_latency(Expr{}, Expr{}, {}), GpuUnavailableError);
}

}  // namespace
}  // namespace teq
