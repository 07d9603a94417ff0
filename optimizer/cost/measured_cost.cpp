#include "optimizer/cost/measured_cost.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "rules/shape.h"
#include "rules/work.h"

#if TEQ_HAVE_CUDA
#include "optimizer/cuda/gpu_runtime.h"
#endif

namespace teq {
namespace {

constexpr const char* kFormat = "tensor-eqsat-costs";
constexpr int kVersion = 1;
constexpr size_t kMaxListed = 100;

std::string key_text(OpKind op, const std::vector<int64_t>& attrs, const std::vector<Shape>& inputs) {
  std::string s(op_name(op));
  s += '|';
  const char* sep = "";
  for (int64_t a : attrs) s += std::exchange(sep, ",") + std::to_string(a);
  s += '|';
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? "," : "") + to_string(inputs[i]);
  return s;
}

}  // namespace

CostKey canonical_cost_key(OpKind op, AttrSpan attrs, std::span<const Shape> inputs) {
  ops::WorkKey w = work_key(op, attrs, inputs);
  CostKey k{.op = w.op, .attrs = std::move(w.attrs), .inputs = std::move(w.inputs), .text = {}};
  k.text = key_text(k.op, k.attrs, k.inputs);
  return k;
}

// ---- the DB file --------------------------------------------------------------------------------------

nlohmann::json CostDb::to_json() const {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [key, ms] : entries_ms) entries[key] = ms;
  nlohmann::json j = {{"format", kFormat},
          {"version", kVersion},
          {"device", device},
          {"precision", precision},
          {"unit", "ms"},
          {"timing", {{"warmup", warmup}, {"repeats", repeats}, {"statistic", "median"}}},
          {"fallback", fallback},
          {"entries", entries}};
  if (!fused_ms.empty()) j["fused_entries"] = fused_ms;  // absent otherwise: the file as before the field
  if (cache_bytes > 0) j["cache_bytes"] = cache_bytes;
  return j;
}

namespace {

/// The object `field` of `j`, {key: non-negative ms}; `what` names one entry in messages, `key_problem`
/// (optional) says what is wrong with a key (empty: nothing).
std::map<std::string, double> read_ms_table(const nlohmann::json& j, const std::string& field, const std::string& what,
                                            const std::function<std::string(const std::string&)>& key_problem,
                                            const std::function<CostDbError(const std::string&)>& fail) {
  const nlohmann::json& table = j[field];
  if (!table.is_object()) throw fail("\"" + field + "\" must be an object");
  std::map<std::string, double> out;
  for (const auto& [key, value] : table.items()) {
    if (key_problem)
      if (std::string problem = key_problem(key); !problem.empty()) throw fail(what + " \"" + key + "\": " + problem);
    if (!value.is_number() || value.get<double>() < 0)
      throw fail(what + " \"" + key + "\" must be a non-negative number of milliseconds");
    out.emplace(key, value.get<double>());
  }
  return out;
}

}  // namespace

CostDb CostDb::from_json(const nlohmann::json& j, const std::string& origin) {
  auto fail = [&](const std::string& what) { return CostDbError(origin + ": " + what); };
  if (!j.is_object()) throw fail("not a JSON object");
  if (j.value("format", std::string()) != kFormat) throw fail(std::string("\"format\" must be \"") + kFormat + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kVersion)
    throw fail("unsupported \"version\" (expected " + std::to_string(kVersion) + ")");
  if (j.contains("unit") && j["unit"] != "ms") throw fail("\"unit\" must be \"ms\"");
  if (!j.contains("entries") || !j["entries"].is_object()) throw fail("\"entries\" must be an object");
  CostDb db;
  db.device = j.value("device", std::string());
  db.precision = j.value("precision", std::string("fp32"));
  if (j.contains("fallback") && !j["fallback"].is_string()) throw fail("\"fallback\" must be a cost model spec (a string)");
  db.fallback = j.value("fallback", std::string());
  if (db.fallback.starts_with("db:") || db.fallback.starts_with("measured"))
    throw fail("\"fallback\" must be an analytical or flops model, not '" + db.fallback + "'");
  if (j.contains("timing") && j["timing"].is_object()) {
    db.warmup = j["timing"].value("warmup", 0);
    db.repeats = j["timing"].value("repeats", 0);
  }
  if (j.contains("cache_bytes")) {
    if (!j["cache_bytes"].is_number() || j["cache_bytes"].get<double>() < 0)
      throw fail("\"cache_bytes\" must be a non-negative number of bytes");
    db.cache_bytes = j["cache_bytes"].get<double>();
  }
  db.entries_ms = read_ms_table(j, "entries", "entry", {}, fail);
  if (j.contains("fused_entries"))
    db.fused_ms = read_ms_table(j, "fused_entries", "fused entry", [](std::string_view key) {
      if (key.starts_with(kStreamedKeyPrefix)) key.remove_prefix(kStreamedKeyPrefix.size());
      return parse_fused_unit_key(key) ? std::string() : "not a fused unit key (" + fused_unit_key_forms() + ")";
    }, fail);
  return db;
}

CostDb CostDb::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw CostDbError(file.string() + ": cannot open cost DB");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw CostDbError(file.string() + ": not valid JSON: " + e.what());
  }
  return from_json(j, file.string());
}

void CostDb::save(const std::filesystem::path& file) const {
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw CostDbError(file.string() + ": cannot write cost DB");
    out << to_json().dump(2) << '\n';
    if (!out) throw CostDbError(file.string() + ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw CostDbError(file.string() + ": " + ec.message());
}

nlohmann::json CostLookupStats::to_json() const {
  return {{"lookups", lookups},          {"hits", hits},       {"measured", measured},
          {"misses", misses},            {"distinct_misses", missed_keys.size()},
          {"unmeasurable", unmeasurable}, {"missed_keys", missed_keys}, {"errors", errors},
          {"fused_hits", fused_hits},    {"fused_misses", fused_misses}, {"missed_fused_keys", missed_fused_keys}};
}

// ---- the model ------------------------------------------------------------------------------------------

MeasuredCostModel::MeasuredCostModel(CostDb db, NodeTimer timer, std::unique_ptr<const CostModel> fallback,
                                     Config config)
    : db_(std::move(db)), timer_(std::move(timer)), fallback_(std::move(fallback)), config_(std::move(config)) {}

MeasuredCostModel::~MeasuredCostModel() {
  if (!dirty_ || config_.save_path.empty()) return;
  try {
    save();
  } catch (const std::exception& e) {  // a destructor must not throw; the measurements are lost, say so
    std::cerr << "warning: " << e.what() << '\n';
  }
}

double MeasuredCostModel::node_cost(const NodeContext& node) const {
  const OpKind op = node.op;
  if (is_leaf(op)) return 0;
  const CostKey key = lookup_key(op, node.attrs, node.inputs);
  std::unique_lock lock(mutex_);
  ++stats_.lookups;
  auto use_fallback = [&]() -> double {
    if (!fallback_) throw std::out_of_range("cost DB has no entry for " + key.text + " and there is no fallback model");
    return fallback_->node_cost(node);
  };
  if (op == OpKind::Opaque) {
    ++stats_.unmeasurable;
    return use_fallback();
  }
  if (auto it = db_.entries_ms.find(key.text); it != db_.entries_ms.end()) {
    ++stats_.hits;
    return it->second * 1e-3;
  }
  if (timer_) {
    try {
      const double ms = timer_(key.op, key.attrs, key.inputs);
      db_.entries_ms.emplace(key.text, ms);
      dirty_ = true;
      ++stats_.measured;
      return ms * 1e-3;
    } catch (const GpuUnavailableError&) {
      throw;
    } catch (const std::exception& e) {
      ++stats_.unmeasurable;
      if (stats_.errors.size() < 20) stats_.errors.push_back(key.text + ": " + e.what());
      return use_fallback();
    }
  }
  ++stats_.misses;
  if (missed_set_.emplace(key.text, key).second && stats_.missed_keys.size() < kMaxListed)
    stats_.missed_keys.push_back(key.text);
  return use_fallback();
}

CostKey MeasuredCostModel::lookup_key(OpKind op, AttrSpan attrs, std::span<const Shape> inputs) const {
  CostKey key = canonical_cost_key(op, attrs, inputs);
  if (const std::optional<size_t> k = weight_operand(key.op, key.inputs); config_.streams_weights && k &&
      4.0 * static_cast<double>(num_elements(key.inputs[*k])) >= kStreamedWeightMinBytes) {
    key.streamed = true;
    key.text = std::string(kStreamedKeyPrefix) + key.text;
  }
  return key;
}

RuntimePolicy MeasuredCostModel::runtime_policy(RuntimePolicy fallback) const {
  RuntimePolicy policy{.fuses_epilogues = fallback.fuses_epilogues,
                       .fuses_tanh_sigmoid = fallback.fuses_tanh_sigmoid,
                       .batched_linear_as_gemm = fallback.batched_linear_as_gemm,
                       .weight_stream_penalty = {}};
  if (!config_.streams_weights) return policy;
  policy.weight_stream_penalty = [this, penalty = std::move(fallback.weight_stream_penalty)](const NodeContext& node) {
    if (!penalty || !fallback_ || is_leaf(node.op)) return 0.0;
    // Most nodes read no weight: no key to build and look up for them (extraction asks for every e-node).
    if (std::ranges::none_of(node.operands, [](const OperandFacts& f) { return f.precomputable; })) return 0.0;
    std::vector<OperandFacts> uncovered(node.operands.begin(), node.operands.end());
    if (const CostKey key = lookup_key(node.op, node.attrs, node.inputs); key.streamed) {
      std::unique_lock lock(mutex_);
      // The entry timed the weight operand cold (the canonical key keeps the operands in place).
      if (db_.entries_ms.contains(key.text))
        if (const std::optional<size_t> k = weight_operand(node.op, node.inputs); k && *k < uncovered.size())
          uncovered[*k].precomputable = false;
    }
    return penalty(NodeContext{node.op, node.attrs, node.inputs, node.output, uncovered, node.elem_type,
                               node.operand_elem_type});
  };
  return policy;
}

std::vector<PricedUnit> MeasuredCostModel::fused_units(const Expr& graph, std::span<const Shape> shapes,
                                                       const std::vector<bool>& precomputable) const {
  std::vector<PricedUnit> priced;
  // Timing on this GPU (--cost measured): the runtime is ours, node by node, not onnxruntime.
  if (timer_) return priced;
  for (FusedUnit& unit : find_ort_fusions(graph, shapes, precomputable)) {
    if (config_.streams_weights && unit.weight_bytes >= kStreamedWeightMinBytes) {
      unit.streamed = true;
      unit.key = std::string(kStreamedKeyPrefix) + unit.key;
    }
    std::unique_lock lock(mutex_);
    if (auto it = db_.fused_ms.find(unit.key); it != db_.fused_ms.end()) {
      ++stats_.fused_hits;
      priced.push_back({std::move(unit.nodes), it->second * 1e-3});
      continue;
    }
    ++stats_.fused_misses;
    if (!missed_fused_.contains(unit.key) && stats_.missed_fused_keys.size() < kMaxListed)
      stats_.missed_fused_keys.push_back(unit.key);
    missed_fused_.emplace(unit.key, std::move(unit));
  }
  return priced;
}

std::vector<FusedUnit> MeasuredCostModel::missed_fused() const {
  std::unique_lock lock(mutex_);
  std::vector<FusedUnit> units;
  for (const auto& [key, unit] : missed_fused_) units.push_back(unit);
  return units;
}

CostLookupStats MeasuredCostModel::stats() const {
  std::unique_lock lock(mutex_);
  return stats_;
}

std::vector<CostKey> MeasuredCostModel::missed() const {
  std::unique_lock lock(mutex_);
  std::vector<CostKey> keys;
  for (const auto& [text, key] : missed_set_) keys.push_back(key);
  return keys;
}

CostDb MeasuredCostModel::db() const {
  std::unique_lock lock(mutex_);
  return db_;
}

void MeasuredCostModel::save() const {
  if (config_.save_path.empty()) return;
  std::unique_lock lock(mutex_);
  db_.save(config_.save_path);
  dirty_ = false;
}

std::unique_ptr<MeasuredCostModel> make_db_cost_model(const std::filesystem::path& file,
                                                      std::unique_ptr<const CostModel> fallback,
                                                      const ModelFootprint& footprint) {
  CostDb db = CostDb::load(file);
  const bool streams = db.cache_bytes > 0 && footprint.weight_bytes > db.cache_bytes;
  return std::make_unique<MeasuredCostModel>(
      std::move(db), NodeTimer{}, std::move(fallback),
      MeasuredCostModel::Config{.name = "db:" + file.string(), .save_path = {}, .streams_weights = streams});
}

nlohmann::json LatencyComparison::to_json() const {
  auto one = [](const GraphLatency& l) {
    return nlohmann::json{{"median_ms", l.median_ms}, {"min_ms", l.min_ms}, {"max_ms", l.max_ms}, {"repeats", l.repeats}};
  };
  return {{"device", device}, {"precision", precision}, {"original", one(original)},
          {"optimized", one(optimized)}, {"speedup", speedup}};
}

// ---- the GPU side: real with CUDA, a clear refusal without ---------------------------------------------

#if TEQ_HAVE_CUDA

namespace {

gpu::RuntimeOptions runtime_options(const GpuMeasureOptions& o) {
  return gpu::RuntimeOptions{.tf32 = o.tf32,
                             .conv_algo_search = o.conv_algo_search,
                             .warmup = o.warmup,
                             .repeats = o.repeats};
}

std::shared_ptr<gpu::GpuRuntime> open_runtime(const GpuMeasureOptions& o, const char* purpose) {
  const gpu::Availability a = gpu::GpuRuntime::available();
  if (!a.ok)
    throw GpuUnavailableError(std::string(purpose) + " needs an NVIDIA GPU: " + a.reason +
                              " (a cost DB measured elsewhere works anywhere: --cost db:FILE)");
  try {
    return std::make_shared<gpu::GpuRuntime>(runtime_options(o));
  } catch (const gpu::GpuError& e) {  // a device that answers but cannot start (driver, cuDNN, cuBLAS)
    throw GpuUnavailableError(std::string(purpose) + " needs a working NVIDIA GPU: " + e.what());
  }
}

GraphLatency latency_of(const gpu::Timing& t) {
  return GraphLatency{.median_ms = t.median_ms, .min_ms = t.min_ms, .max_ms = t.max_ms, .repeats = t.repeats};
}

}  // namespace

GpuStatus gpu_status() {
  const gpu::Availability a = gpu::GpuRuntime::available();
  return GpuStatus{.compiled = true, .available = a.ok, .device = a.device, .reason = a.reason};
}

std::unique_ptr<MeasuredCostModel> make_measured_cost_model(const GpuMeasureOptions& options,
                                                            std::unique_ptr<const CostModel> fallback,
                                                            const std::filesystem::path& cache) {
  std::shared_ptr<gpu::GpuRuntime> runtime = open_runtime(options, "--cost measured");
  const std::string precision = options.tf32 ? "tf32" : "fp32";
  CostDb db;
  if (!cache.empty() && std::filesystem::exists(cache)) {
    CostDb old = CostDb::load(cache);
    if (old.device == runtime->device_name() && old.precision == precision) db = std::move(old);
    else
      std::cerr << "note: " << cache.string() << " was measured on " << old.device << " (" << old.precision
                << "); measuring afresh for " << runtime->device_name() << " (" << precision << ")\n";
  }
  db.device = runtime->device_name();
  db.precision = precision;
  db.warmup = options.warmup;
  db.repeats = options.repeats;
  NodeTimer timer = [runtime](OpKind op, AttrSpan attrs, std::span<const Shape> inputs) {
    return runtime->time_node(op, attrs, inputs).median_ms;
  };
  return std::make_unique<MeasuredCostModel>(
      std::move(db), std::move(timer), std::move(fallback),
      MeasuredCostModel::Config{.name = "measured:" + runtime->device_name(), .save_path = cache});
}

LatencyComparison measure_latency(const Expr& original, const Expr& optimized, const GpuMeasureOptions& options) {
  std::shared_ptr<gpu::GpuRuntime> runtime = open_runtime(options, "--measure");
  LatencyComparison c;
  c.device = runtime->device_name();
  c.precision = options.tf32 ? "tf32" : "fp32";
  c.original = latency_of(runtime->time_graph(original));
  c.optimized = latency_of(runtime->time_graph(optimized));
  c.speedup = c.optimized.median_ms > 0 ? c.original.median_ms / c.optimized.median_ms : 0;
  return c;
}

#else  // !TEQ_HAVE_CUDA

namespace {
constexpr const char* kNoCuda =
    "this build has no CUDA runtime (configure on a machine with the CUDA toolkit and cuDNN, -DTEQ_CUDA=ON)";
}

GpuStatus gpu_status() { return GpuStatus{.compiled = false, .available = false, .device = {}, .reason = kNoCuda}; }

std::unique_ptr<MeasuredCostModel> make_measured_cost_model(const GpuMeasureOptions&, std::unique_ptr<const CostModel>,
                                                            const std::filesystem::path&) {
  throw GpuUnavailableError(std::string("--cost measured needs an NVIDIA GPU: ") + kNoCuda +
                            " (a cost DB measured elsewhere works anywhere: --cost db:FILE)");
}

LatencyComparison measure_latency(const Expr&, const Expr&, const GpuMeasureOptions&) {
  throw GpuUnavailableError(std::string("--measure needs an NVIDIA GPU: ") + kNoCuda);
}

#endif

}  // namespace teq
