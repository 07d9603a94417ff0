// MeasuredCostModel: operator costs measured on the GPU (median of CUDA-event timed runs, see
// optimizer/cuda/gpu_runtime.h) and cached in a JSON cost DB keyed by a canonical string. A DB file
// answers on any machine; misses go to a fallback model (the analytical one) and are counted for the
// report. Also the CUDA-free facade for end-to-end GPU latency (eqsat-run --measure). Without a GPU
// (or in a build without CUDA) everything that needs one throws GpuUnavailableError with the reason.
// Usage:
//   auto cost = make_db_cost_model("costs/h200.json", std::make_unique<FlopCostModel>());
//   double s = cost->node_cost(OpKind::Relu, {}, shapes, out);   // seconds; a miss asks the fallback
//   cost->stats().misses;                                        // how often the fallback answered
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "optimizer/cost/ort_fusions.h"
#include "optimizer/cost/runtime_cost.h"
#include "rules/expr.h"

namespace teq {

/// No usable GPU (no device, no driver, or a build without CUDA); the message says which and what to
/// use instead. eqsat-run maps it to exit status 2.
class GpuUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A cost DB file that cannot be read or is malformed: "<file>: <problem>".
class CostDbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One node in canonical form: negative axes normalized, split written as the slice it selects,
/// constants reduced to the one dimension that fixes their value, noop to its first input. Nodes with
/// the same canonical form do the same device work, so they share one DB entry; the canonical form is
/// itself a valid node, and that is what gets timed.
struct CostKey {
  OpKind op = OpKind::Noop;
  std::vector<int64_t> attrs;
  std::vector<Shape> inputs;
  std::string text;  // "conv2d|1,1,-1,-1,2|[1,64,56,56],[64,64,3,3]": op|attributes|input shapes
  /// Priced with its weight operand read from memory (a model whose weights outgrow the DB's cache_bytes):
  /// its own entry, the text prefixed by kStreamedKeyPrefix, timed with the weight cold.
  bool streamed = false;
};
/// The prefix of a DB key (node or fused unit) timed with its weight read from memory: "streamed:matmul|...".
inline constexpr std::string_view kStreamedKeyPrefix = "streamed:";
CostKey canonical_cost_key(OpKind op, AttrSpan attrs, std::span<const Shape> inputs);

/// The JSON cost DB: {"format": "tensor-eqsat-costs", "version": 1, "device", "precision", "unit": "ms",
/// "timing": {...}, "entries": {key: median ms}, "fused_entries": {unit key: ms}}. "fused_entries" (optional,
/// absent in DBs written before it) holds the kernels a runtime fuses at load time, keyed by
/// fused_unit_key ("ort:SkipLayerNormalization|[2,16,64]", ort_fusions.h). "cache_bytes" (optional): the
/// last-level cache of the machine measured; a key prefixed "streamed:" was timed with its weight operand
/// read from memory, as in a model whose weights outgrow that cache (docs/cost-model.md).
struct CostDb {
  std::string device;            // where the entries were measured, e.g. "NVIDIA H200 (sm_90, 139 GiB)"
  std::string precision = "fp32";  // "fp32" or "tf32"
  int warmup = 0, repeats = 0;
  /// The cost model that answers for nodes the DB lacks (a spec for make_cost_model, e.g. "analytical:cpu-ort"
  /// for a DB measured in onnxruntime on a CPU); empty = the default analytical model.
  std::string fallback;
  std::map<std::string, double> entries_ms;
  std::map<std::string, double> fused_ms;  // fused units (ort_fusions.h); empty: every node priced alone
  double cache_bytes = 0;  // 0: unknown, every weight priced cache-resident

  nlohmann::json to_json() const;
  /// `origin` names the source in error messages.
  static CostDb from_json(const nlohmann::json& j, const std::string& origin);
  /// Throws CostDbError when the file is missing, not JSON, or not a cost DB.
  static CostDb load(const std::filesystem::path& file);
  /// Writes atomically (temporary file, then rename); throws CostDbError on failure.
  void save(const std::filesystem::path& file) const;
};

/// Times one node (canonical form) and returns milliseconds; throws on failure.
using NodeTimer = std::function<double(OpKind, AttrSpan, std::span<const Shape>)>;

struct CostLookupStats {
  size_t lookups = 0;       // node_cost calls for operator nodes
  size_t hits = 0;          // answered by the DB
  size_t measured = 0;      // new entries timed on the GPU
  size_t misses = 0;        // answered by the fallback because the DB had no entry (db mode)
  size_t unmeasurable = 0;  // answered by the fallback because the node cannot run on the GPU (opaque, failures)
  std::vector<std::string> missed_keys;  // distinct keys behind `misses`, first 100
  size_t fused_hits = 0;    // fused units priced from the DB's fused_entries
  size_t fused_misses = 0;  // fused units the DB had no entry for (priced node by node)
  std::vector<std::string> missed_fused_keys;  // distinct keys behind `fused_misses`, first 100
  std::vector<std::string> errors;       // timing failures, first 20
  nlohmann::json to_json() const;
};

class MeasuredCostModel final : public CostModel {
 public:
  struct Config {
    std::string name;                  // name() for reports, e.g. "measured:NVIDIA H200" or "db:costs.json"
    std::filesystem::path save_path;   // where save() (and the destructor, if new entries) write; may be empty
    /// Price weight operands from the DB's "streamed:" entries: the model's weights outgrow the DB's cache.
    bool streams_weights = false;
  };
  /// `timer` empty = DB only (misses go to the fallback). `fallback` may be null: a miss then throws
  /// std::out_of_range naming the key.
  MeasuredCostModel(CostDb db, NodeTimer timer, std::unique_ptr<const CostModel> fallback, Config config);
  ~MeasuredCostModel() override;

  using CostModel::node_cost;
  std::string name() const override { return config_.name; }
  /// Seconds (the DB stores milliseconds), the node alone. Leaves cost 0.
  double node_cost(const NodeContext& node) const override;
  /// How the runtime runs a graph, given the fallback model's policy (`fallback`): the DB times nodes one by
  /// one, and the runtime fuses epilogues into them as the fallback says; when streams_weights(), the
  /// fallback's weight-streaming penalty for the weight operands a "streamed:" entry did not time cold (all of
  /// them when the DB lacks the node).
  RuntimePolicy runtime_policy(RuntimePolicy fallback) const;
  /// Whether weight operands are priced from the DB's "streamed:" entries (Config::streams_weights).
  bool streams_weights() const { return config_.streams_weights; }
  /// The units onnxruntime fuses in `graph` (find_ort_fusions) that the DB's fused_entries price; a unit it
  /// lacks is priced node by node and listed in missed_fused(). None when timing on the GPU (a timer).
  std::vector<PricedUnit> fused_units(const Expr& graph, std::span<const Shape> shapes,
                                      const std::vector<bool>& precomputable) const override;

  CostLookupStats stats() const;
  /// Every distinct node the DB had no entry for (db mode), in canonical form: what bench/ort_cost_db.py
  /// measures next (eqsat-run --cost-misses DIR writes each as a one-node ONNX model).
  std::vector<CostKey> missed() const;
  /// Every distinct fused unit the DB had no entry for: what bench/ort_cost_db.py times next as the fused kernel.
  std::vector<FusedUnit> missed_fused() const;
  CostDb db() const;
  /// The key node_cost looks up: canonical_cost_key, "streamed:" when the weight operand is priced cold.
  CostKey lookup_key(OpKind op, AttrSpan attrs, std::span<const Shape> inputs) const;
  /// Writes the DB to config.save_path (no-op without one).
  void save() const;

 private:
  mutable std::mutex mutex_;
  mutable CostDb db_;
  mutable CostLookupStats stats_;
  mutable std::map<std::string, CostKey> missed_set_;
  mutable std::map<std::string, FusedUnit> missed_fused_;
  mutable bool dirty_ = false;
  NodeTimer timer_;
  std::unique_ptr<const CostModel> fallback_;
  Config config_;
};

/// How the GPU is timed.
struct GpuMeasureOptions {
  bool tf32 = false;
  int warmup = 3;
  int repeats = 20;
  bool conv_algo_search = true;
};

struct GpuStatus {
  bool compiled = false;   // this build has the CUDA runtime
  bool available = false;  // and a device answered
  std::string device;      // when available
  std::string reason;      // why not, when !available
};
GpuStatus gpu_status();

/// --cost measured: times each new distinct node on the local GPU. `cache` (optional) is read first when
/// it exists and was measured on the same device and precision, and written by save() and on
/// destruction. Throws GpuUnavailableError without a GPU.
std::unique_ptr<MeasuredCostModel> make_measured_cost_model(const GpuMeasureOptions& options,
                                                            std::unique_ptr<const CostModel> fallback,
                                                            const std::filesystem::path& cache = {});
/// --cost db:FILE: works on any machine. Throws CostDbError for an unreadable or malformed file. Weight
/// operands are priced from "streamed:" entries when `footprint`'s weights outgrow the DB's cache_bytes.
std::unique_ptr<MeasuredCostModel> make_db_cost_model(const std::filesystem::path& file,
                                                      std::unique_ptr<const CostModel> fallback,
                                                      const ModelFootprint& footprint = {});

/// End-to-end latency of one graph on the GPU, random inputs and weights (weight-only work folded).
struct GraphLatency {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int repeats = 0;
};
/// eqsat-run --measure: both graphs timed in one runtime; speedup = original / optimized median.
struct LatencyComparison {
  std::string device;
  std::string precision;
  GraphLatency original, optimized;
  double speedup = 0;
  nlohmann::json to_json() const;
};
/// Throws GpuUnavailableError without a GPU; ShapeError/std::runtime_error for graphs the GPU cannot
/// run (opaque operators).
LatencyComparison measure_latency(const Expr& original, const Expr& optimized, const GpuMeasureOptions& options);

}  // namespace teq
