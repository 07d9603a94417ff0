#include "optimizer/eqsat_report.h"

#include <cmath>

#include "optimizer/cost/ort_fusions.h"
#include "optimizer/detail/text.h"

namespace teq {

namespace {

using detail::data_note;
using detail::fmt;

/// The rules the written graph was made with: none when the original is written.
std::map<std::string, size_t> rules_used(const EqsatResult& result) {
  return result.output.kept_original ? std::map<std::string, size_t>{} : result.report.rules_used;
}

/// The ONNX nodes the import kept opaque, counted by type ("domain.Type" outside the default domain): what a
/// user reads to see which operators keep a model from the optimizer.
std::map<std::string, size_t> opaque_by_type(const onnx_io::OnnxModel& model) {
  std::map<std::string, size_t> counts;
  for (const onnx_io::OpaqueNode& n : model.opaque) ++counts[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
  return counts;
}

const char* method_name(ExtractMethod m) {
  switch (m) {
    case ExtractMethod::Greedy: return "greedy";
    case ExtractMethod::DagGreedy: return "dag-greedy";
    case ExtractMethod::Ilp: return "ilp";
  }
  return "?";
}

nlohmann::json check_json(const onnx_io::CheckResult& c, const onnx_io::CheckOptions& o) {
  nlohmann::json j = {{"evaluated", c.evaluated}, {"passed", c.passed}, {"max_abs_diff", c.max_abs_diff},
                      {"max_rel_diff", c.max_rel_diff}, {"elements", c.elements},
                      {"rtol", c.rtol > 0 ? c.rtol : o.rtol}, {"atol", c.atol > 0 ? c.atol : o.atol}, {"seed", o.seed}, {"seconds", c.seconds}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.note.empty()) j["note"] = c.note;
  if (!c.not_needed.empty()) j["not_needed"] = c.not_needed;
  j["identical"] = c.identical;
  for (const onnx_io::SizeCheck& s : c.sizes)
    j["sizes"].push_back({{"dim", s.dim}, {"value", s.value}, {"evaluated", s.evaluated}, {"passed", s.passed},
                          {"max_abs_diff", s.max_abs_diff}, {"elements", s.elements}, {"reason", s.reason},
                          {"identical", s.identical}});
  return j;
}

void print_check(std::ostream& log, const onnx_io::CheckResult& c, const onnx_io::CheckOptions& options) {
  if (!c.not_needed.empty())
    log << "  check: not needed: " << c.not_needed << "\n";
  else if (!c.evaluated)
    log << "  check: could not run: " << c.reason << "\n";
  else if (c.identical)
    log << "  check: passed without evaluating, " << fmt("%.2f", c.seconds) << " s\n";
  else
    log << "  check: " << c.elements << " output elements, max abs diff " << fmt("%.3g", c.max_abs_diff)
        << ", max rel diff " << fmt("%.3g", c.max_rel_diff) << ": "
        << (c.passed_imported_size ? "equal within tolerance" : "DIFFERENT beyond tolerance") << " (rtol "
        << fmt("%g", c.rtol > 0 ? c.rtol : options.rtol) << ", atol " << fmt("%g", c.atol > 0 ? c.atol : options.atol) << "), " << fmt("%.2f", c.seconds) << " s\n";
  if (!c.note.empty()) log << "  check: note: " << c.note << "\n";
  for (const onnx_io::SizeCheck& s : c.sizes)
    log << "  check at " << s.dim << "=" << s.value << ": "
        << (!s.evaluated  ? "not checked: " + s.reason
            : s.identical ? std::string("the same graph, passed without evaluating")
            : s.passed    ? std::to_string(s.elements) + " output elements, equal within tolerance"
                         : "FAILED: " + s.reason)
        << "\n";
}

}  // namespace

nlohmann::json report_json(const EqsatConfig& config, const EqsatResult& result, const RunFacts& f) {
  const OptimizeReport& r = result.report;
  const OutputChoice& out = result.output;
  const double speedup = out.cost > 0 ? r.original_cost / out.cost : 1.0;
  nlohmann::json j = {{"model", f.model_name},
                      {"search", config.search == SearchMethod::Sequential ? "sequential" : "saturation"},
                      {"output", config.output.string()},
                      {"rules", f.rules_text},
                      {"original_cost", r.original_cost},
                      {"optimized_cost", out.cost},
                      {"speedup", speedup},
                      {"cost_model", f.cost->name()},
                      {"cost_model_choice", f.cost_choice},
                      {"weights_streamed", f.cost.streams_weights},
                      {"saturation_cost", out.claimed_cost},
                      {"exported_cost", out.exported_cost},
                      {"kept_original", out.kept_original},
                      {"rounds_stopped_by_clock", r.rounds_stopped_by_clock},
                      {"seconds", {{"import", f.import_seconds}, {"saturate", r.saturate_seconds},
                                   {"extract", r.extract_seconds}, {"export_and_read_back", f.decide_seconds},
                                   {"check", f.check_seconds}, {"write", f.write_seconds}, {"total", f.total_seconds}}},
                      {"iterations", r.iterations},
                      {"rounds", r.rounds},
                      {"enodes", r.enodes},
                      {"eclasses", r.eclasses},
                      {"stop_reason", to_string(r.stop)},
                      {"rules_used", rules_used(result)},
                      {"own_output_skipped", r.own_output_skipped},
                      {"extraction",
                       {{"method", r.extraction.method},
                        {"objective", r.extraction.objective},
                        {"bound", r.extraction.bound},
                        {"gap", r.extraction.gap},
                        {"status", r.extraction.status}}},
                      {"operators", {{"original", result.model.graph.num_ops()}, {"optimized", out.graph.num_ops()}}},
                      {"opaque_operators", result.model.opaque.size()},
                      {"opaque_by_type", opaque_by_type(result.model)},
                      {"import_folded", result.model.folded},
                      {"unfused_cost", {{"original", out.original_detail.unfused}, {"exported", out.exported_detail.unfused}}},
                      {"fused_units", {{"original", out.original_detail.units}, {"exported", out.exported_detail.units}}},
                      {"ort_fusions", {{"original", count_ort_fusions(result.model.graph)},
                                       {"exported", count_ort_fusions(out.exported_graph)}}},
                      {"folded_shape_nodes",
                       {{"original", result.model.shape_nodes_folded}, {"exported", out.exported_shape_nodes}}}};
  if (!f.output_data.empty()) j["output_data"] = f.output_data.string();
  j["check_mode"] = config.check == CheckMode::Off ? "off" : config.check == CheckMode::Required ? "required" : "default";
  j["rejected"] = !result.rejected.empty();
  if (!result.rejected.empty()) j["rejected_reason"] = result.rejected;
  // Which model the output path got: the input unchanged (rejected, or nothing to improve) or the export.
  j["written"] = config.output.empty()                                          ? "none"
                 : !result.rejected.empty() || out.writes_input_as_is() ? "input"
                                                                             : "export";
  if (result.check) j["check"] = check_json(*result.check, config.check_options);
  if (f.latency) j["latency"] = f.latency->to_json();
  if (f.cost.stats) j["cost_stats"] = f.cost.stats();
  return j;
}

void print_summary(std::ostream& log, const EqsatConfig& config, const EqsatResult& result, const RunFacts& f) {
  const OptimizeReport& r = result.report;
  const OutputChoice& out = result.output;
  const double speedup = out.cost > 0 ? r.original_cost / out.cost : 1.0;
  log << "eqsat-run: cost " << fmt("%.6g", r.original_cost) << " -> " << fmt("%.6g", out.cost) << " ("
      << f.cost->name() << "), speedup " << fmt("%.3f", speedup) << "x; " << result.model.graph.num_ops() << " -> "
      << out.graph.num_ops() << " operators\n"
      << "  e-graph: " << r.enodes << " e-nodes, " << r.eclasses << " e-classes (largest round) after "
      << r.iterations << " iterations in " << r.rounds << " round(s); stop reason: " << to_string(r.stop) << "\n"
      << "  extraction (" << (r.extraction.method.empty() ? method_name(config.optimize.extract) : r.extraction.method)
      << "): objective " << fmt("%.6g", r.extraction.objective) << ", bound " << fmt("%.6g", r.extraction.bound)
      << ", gap " << fmt("%.4f", r.extraction.gap) << "\n"
      << "  seconds: import " << fmt("%.3f", f.import_seconds) << ", saturate " << fmt("%.3f", r.saturate_seconds)
      << ", extract " << fmt("%.3f", r.extract_seconds) << ", export and read back " << fmt("%.3f", f.decide_seconds)
      << ", check " << fmt("%.3f", f.check_seconds) << ", write " << fmt("%.3f", f.write_seconds) << ", total "
      << fmt("%.3f", f.total_seconds) << "\n";
  if (std::abs(out.claimed_cost - out.exported_cost) > 1e-9 * std::abs(out.claimed_cost))
    log << "  read back from the ONNX export the optimized graph costs " << fmt("%.6g", out.exported_cost)
        << " (extraction's figure: " << fmt("%.6g", out.claimed_cost) << ")\n";
  if (!r.rounds_stopped_by_clock.empty()) {
    log << "  note: the saturation's wall-clock guard (--time-limit " << fmt("%g", config.optimize.saturation.time_limit_s)
        << " s, shared by all rounds) stopped round(s)";
    for (size_t round : r.rounds_stopped_by_clock) log << " " << round;
    log << ": this result may differ on a faster or slower machine; lower --node-limit or --iter-limit so that a "
           "count decides\n";
  }
  for (const std::string& note : out.notes) log << "  " << note << "\n";
  if (!r.own_output_skipped.empty()) {
    log << "  rules that match their own output, applied one generation deep (matches skipped):";
    for (const auto& [id, n] : r.own_output_skipped) log << " " << id << " (" << n << ")";
    log << "\n";
  }
  log << "  rules used:";
  const auto used = rules_used(result);
  if (used.empty()) log << " none";
  for (const auto& [id, n] : used) log << " " << id << " (" << n << ")";
  log << "\n";
  if (result.check) print_check(log, *result.check, config.check_options);
  if (f.latency)
    log << "  measured on " << f.latency->device << ": " << fmt("%.3f", f.latency->original.median_ms) << " ms -> "
        << fmt("%.3f", f.latency->optimized.median_ms) << " ms, speedup " << fmt("%.3f", f.latency->speedup) << "x\n";
  // A difference rejects the optimization; a check that could not run only withholds it.
  const bool not_run = result.check && !result.check->evaluated;
  if (!result.rejected.empty()) log << (not_run ? "  kept the input model: " : "  REJECTED: ") << result.rejected << "\n";
  if (!config.output.empty())
    log << "  wrote " << config.output.string() << data_note(f.output_data)
        << (result.rejected.empty() ? "" : " (the input model, unchanged)") << "\n";
  if (config.check == CheckMode::Off) log << "  not checked (--no-check)\n";
  if (!config.report.empty()) log << "  report " << config.report.string() << "\n";
}


}  // namespace teq
