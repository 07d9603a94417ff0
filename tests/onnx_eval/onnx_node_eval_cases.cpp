// onnx_node_eval_cases: runs --check's ONNX node evaluator (optimizer/onnx/detail/onnx_node_eval.h) over test
// cases in the layout of ONNX's backend node tests, CASE/model.onnx and CASE/test_data_set_N/{input,output}_K.pb,
// interpreting each model's nodes in order, and compares every output (element type, shape, values) with the
// expected one. tests/python/test_onnx_node_eval.py writes the cases (ONNX's own node tests and onnxruntime's
// outputs on hand-made models) and reads the verdicts.
// Usage: onnx_node_eval_cases --list            the operators covered, one a line
//        onnx_node_eval_cases CASE_DIR...       one line per case: "PASS name", "FAIL name: why",
//                                               "SKIP name: why"; exit 1 when any failed
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "optimizer/onnx/detail/onnx_node_eval.h"

namespace fs = std::filesystem;
using teq::onnx_io::detail::OnnxValue;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

OnnxValue load_tensor(const fs::path& p) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read(p))) throw Skip(p.filename().string() + " is not a tensor");
  try {
    return teq::onnx_io::detail::decode_tensor(t);
  } catch (const std::exception& e) {
    throw Skip(e.what());
  }
}

/// Empty when `got` matches `want`, else why not.
std::string compare(const OnnxValue& got, const OnnxValue& want) {
  namespace TP = onnx;
  if (got.type != want.type)
    return "element type " + std::to_string(got.type) + ", expected " + std::to_string(want.type);
  if (got.t.shape != want.t.shape) return "shape " + teq::to_string(got.t.shape) + ", expected " + teq::to_string(want.t.shape);
  const bool half = want.type == onnx::TensorProto::FLOAT16 || want.type == onnx::TensorProto::BFLOAT16;
  const double rtol = half ? 1e-2 : 1e-4, atol = half ? 1e-3 : 1e-6;
  for (size_t i = 0; i < got.t.data.size(); ++i) {
    const double a = got.t.data[i], b = want.t.data[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b)))
      return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(b);
  }
  return "";
}

std::string run_case(const fs::path& dir) {
  onnx::ModelProto m;
  if (!m.ParseFromString(read(dir / "model.onnx"))) throw Skip("model.onnx does not parse");
  int64_t opset = 0;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  const auto& g = m.graph();
  for (const auto& n : g.node())
    if (!teq::onnx_io::detail::onnx_node_evaluable(n)) throw Skip("operator " + n.op_type() + " not covered");
  std::string failures;
  for (int set = 0; fs::exists(dir / ("test_data_set_" + std::to_string(set))); ++set) {
    const fs::path data = dir / ("test_data_set_" + std::to_string(set));
    std::map<std::string, OnnxValue> values;
    for (const auto& t : g.initializer()) values[t.name()] = teq::onnx_io::detail::decode_tensor(t);
    int k = 0;
    for (const auto& in : g.input()) {
      if (values.count(in.name())) continue;
      if (!in.type().has_tensor_type()) throw Skip("input '" + in.name() + "' is not a tensor");
      const fs::path p = data / ("input_" + std::to_string(k++) + ".pb");
      if (!fs::exists(p)) throw Skip("no " + p.filename().string());
      values[in.name()] = load_tensor(p);
    }
    for (const auto& n : g.node()) {
      std::vector<const OnnxValue*> inputs;
      for (const auto& name : n.input()) {
        auto it = values.find(name);
        if (!name.empty() && it == values.end()) throw Skip("no value for '" + name + "'");
        inputs.push_back(name.empty() ? nullptr : &it->second);
      }
      std::vector<OnnxValue> outs;
      try {
        teq::onnx_io::detail::OuterValues outer;  // what a subgraph (If, Loop) reads from this graph
        for (const auto& [name, v] : values) outer[name] = &v;
        outs = teq::onnx_io::detail::evaluate_onnx_node(n, inputs, opset, outer);
      } catch (const teq::onnx_io::detail::NotEvaluable& e) {
        throw Skip(e.what());
      }
      for (int o = 0; o < n.output_size() && static_cast<size_t>(o) < outs.size(); ++o)
        if (!n.output(o).empty()) values[n.output(o)] = std::move(outs[static_cast<size_t>(o)]);
    }
    for (int o = 0; o < g.output_size(); ++o) {
      const fs::path p = data / ("output_" + std::to_string(o) + ".pb");
      const std::string& name = g.output(o).name();
      if (!values.count(name)) return "output '" + name + "' not computed";
      const std::string why = compare(values[name], load_tensor(p));
      if (!why.empty()) failures += (failures.empty() ? "" : "; ") + ("data set " + std::to_string(set) + " output '" + name + "': " + why);
    }
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const std::string& op : teq::onnx_io::detail::operators_evaluated()) std::cout << op << "\n";
    std::cout << "If\nLoop\nScan\n";  // control flow: evaluated through its subgraphs (when their nodes are)
    return 0;
  }
  int failed = 0;
  for (int a = 1; a < argc; ++a) {
    fs::path dir = argv[a];
    if (dir.filename().empty()) dir = dir.parent_path();  // "case/"
    const std::string name = dir.filename().string();
    try {
      const std::string why = run_case(dir);
      if (why.empty()) {
        std::cout << "PASS " << name << std::endl;
      } else {
        std::cout << "FAIL " << name << ": " << why << std::endl;
        ++failed;
      }
    } catch (const Skip& e) {
      std::cout << "SKIP " << name << ": " << e.what() << std::endl;
    } catch (const std::exception& e) {
      std::cout << "FAIL " << name << ": " << e.what() << std::endl;
      ++failed;
    }
  }
  return failed ? 1 : 0;
}
