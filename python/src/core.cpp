// tensor_eqsat._core: the Python package's bridge to the library calls the programs make: optimize_model
// (what eqsat-run runs) and run_ruleverify (what ruleverify runs). Options arrive as a dict whose keys are
// the programs' option names; the Python layer (python/tensor_eqsat/_api.py) turns models into files and
// back and results into exceptions. No option is interpreted twice: --dim goes through bind_symbolic_dim,
// the cost model through optimize_model's own --target/--cost handling.
#include <algorithm>
#include <map>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "optimizer/eqsat_app.h"
#include "verify/ruleverify_app.h"

namespace nb = nanobind;

namespace {

/// Hands each complete line written to it to a Python callable. The library writes from the thread that
/// called it, with the GIL released: the GIL is taken for the call only. An exception the callable raises
/// stops further calls and is re-raised once the library call returns (an ostream would swallow it).
class LineSink : public std::streambuf {
 public:
  explicit LineSink(nb::object callback) : callback_(std::move(callback)) {}
  /// The callable's first error, if any; call with the GIL held.
  void rethrow() {
    finish();
    if (!error_.empty()) throw std::runtime_error("the progress callback raised: " + error_);
  }
  void finish() {
    if (!line_.empty()) emit();
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return 0;
    if (c == '\n')
      emit();
    else
      line_.push_back(static_cast<char>(c));
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(static_cast<unsigned char>(s[i]));
    return n;
  }

 private:
  void emit() {
    std::string line;
    line.swap(line_);
    if (callback_.is_none() || !error_.empty()) return;
    nb::gil_scoped_acquire gil;
    try {
      callback_(line);
    } catch (const nb::python_error& e) {
      error_ = e.what();
    }
  }

  nb::object callback_;
  std::string line_;
  std::string error_;
};

/// options[key] as T when present; a value of the wrong type raises TypeError naming the option.
template <typename T>
bool take(nb::dict options, const char* key, T& into) {
  if (!options.contains(key)) return false;
  nb::object value = options[key];
  if (value.is_none()) return false;
  if (!nb::try_cast<T>(value, into)) throw nb::type_error(("option '" + std::string(key) + "' has the wrong type").c_str());
  return true;
}

void check_known(nb::dict options, const std::vector<std::string>& known) {
  for (auto [key, value] : options) {
    const std::string name = nb::cast<std::string>(key);
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw nb::value_error(("unknown option '" + name + "'").c_str());
  }
}

teq::EqsatConfig eqsat_config(const std::string& model, const std::string& output, nb::dict options) {
  check_known(options, {"target", "cost", "rules", "corpus_dir", "check", "dims", "node_limit", "iter_limit",
                        "rounds", "min_gain", "both_ways", "seed", "rtol", "atol", "extract", "report"});
  teq::EqsatConfig c;
  c.model = model;
  c.output = output;
  take(options, "target", c.target);
  take(options, "cost", c.cost);
  std::vector<std::string> rules;
  if (take(options, "rules", rules)) c.rules.assign(rules.begin(), rules.end());
  std::string path;
  if (take(options, "corpus_dir", path)) c.corpus_dir = path;
  if (take(options, "report", path)) c.report = path;
  std::string check;
  if (take(options, "check", check)) {
    if (check == "default") c.check = teq::CheckMode::Default;
    else if (check == "required") c.check = teq::CheckMode::Required;
    else if (check == "off") c.check = teq::CheckMode::Off;
    else throw nb::value_error(("check must be default, required or off, not '" + check + "'").c_str());
  }
  std::vector<std::string> dims;
  if (take(options, "dims", dims))
    for (const std::string& d : dims)
      if (std::string error = teq::bind_symbolic_dim(d, c.import); !error.empty()) throw teq::EqsatError(error);
  take(options, "node_limit", c.optimize.saturation.node_limit);
  take(options, "iter_limit", c.optimize.saturation.iter_limit);
  take(options, "rounds", c.optimize.rounds);
  take(options, "min_gain", c.min_gain);
  take(options, "both_ways", c.both_ways);
  take(options, "seed", c.check_options.seed);
  take(options, "rtol", c.check_options.rtol);
  take(options, "atol", c.check_options.atol);
  std::string extract;
  if (take(options, "extract", extract)) {
    if (extract == "greedy") c.optimize.extract = teq::ExtractMethod::Greedy;
    else if (extract == "dag-greedy") c.optimize.extract = teq::ExtractMethod::DagGreedy;
    else if (extract == "ilp") c.optimize.extract = teq::ExtractMethod::Ilp;
    else throw nb::value_error(("extract must be greedy, dag-greedy or ilp, not '" + extract + "'").c_str());
  }
  return c;
}

/// optimize_model on files. Returns {"exit_code", "error" (EqsatError's message: what eqsat-run prints after
/// "eqsat-run: error: "), "rejected", "check_reason", "report" (the JSON --report writes, as text)}.
nb::dict optimize(const std::string& model, const std::string& output, nb::dict options, nb::object progress) {
  LineSink sink(progress);
  std::ostream log(&sink);
  nb::dict out;
  try {
    teq::EqsatConfig config = eqsat_config(model, output, options);
    config.log = &log;
    teq::EqsatResult result;
    {
      nb::gil_scoped_release release;
      result = teq::optimize_model(config);
    }
    out["exit_code"] = result.exit_code;
    out["rejected"] = result.rejected;
    out["check_reason"] = result.check ? result.check->reason : std::string();
    out["report"] = result.report_json.dump();
    out["error"] = nb::none();
  } catch (const teq::EqsatError& e) {
    out["exit_code"] = e.exit_code();
    out["error"] = std::string(e.what());
  }
  sink.rethrow();
  return out;
}

/// run_ruleverify on rule files, its per-rule lines and summary to `progress`. Returns its exit status.
int verify(const std::vector<std::string>& files, const std::string& json_path, nb::dict options,
           nb::object progress) {
  check_known(options, {"rules", "jobs", "rlimit", "axiom_rlimit", "use_axioms"});
  teq::RuleverifyConfig config;
  config.files = files;
  config.json_path = json_path;
  take(options, "rules", config.only);
  take(options, "jobs", config.options.jobs);
  take(options, "rlimit", config.options.elementwise.rlimit);
  take(options, "axiom_rlimit", config.options.axiom_rlimit);
  take(options, "use_axioms", config.options.use_axioms);
  LineSink sink(progress);
  std::ostream stream(&sink);
  config.out = &stream;
  config.err = &stream;
  int status = 0;
  {
    nb::gil_scoped_release release;
    status = teq::run_ruleverify(config);
  }
  sink.rethrow();
  return status;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "tensor-eqsat's library calls (use the tensor_eqsat package, not this module)";
  m.def("optimize", &optimize, nb::arg("model"), nb::arg("output"), nb::arg("options"), nb::arg("progress").none());
  m.def("verify", &verify, nb::arg("files"), nb::arg("json_path"), nb::arg("options"), nb::arg("progress").none());
  m.def("installed_corpus_dir", [] { return std::string(teq::kInstalledCorpusDir); });
  m.attr("EXIT_REJECTED") = teq::kExitRejected;
  m.attr("EXIT_CHECK_NOT_RUN") = teq::kExitCheckNotRun;
}
