#include "verify/counterexample.h"

namespace teq {

std::string_view status_name(VerifyStatus status) {
  switch (status) {
    case VerifyStatus::Verified: return "verified";
    case VerifyStatus::Wrong: return "wrong";
    case VerifyStatus::Unknown: return "unknown";
  }
  return "?";
}

std::string format_nested(const Shape& shape, const std::vector<std::string>& elements) {
  if (shape.empty()) return elements.empty() ? "" : elements[0];
  std::string out;
  std::vector<int64_t> st = strides_of(shape);
  for (size_t i = 0; i < elements.size(); ++i) {
    // Open a bracket for every axis whose index starts at 0 here, close for every axis that ends.
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(i) % (st[d] * shape[d]) == 0) out += "[";
    out += elements[i];
    size_t closes = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if ((static_cast<int64_t>(i) + 1) % (st[d] * shape[d]) == 0) ++closes;
    out += std::string(closes, ']');
    if (i + 1 < elements.size()) out += ", ";
  }
  return out;
}

std::string format_counterexample(const Counterexample& cex) {
  std::string out = "counterexample (" + cex.source + ")";
  if (!cex.shapes.empty()) {
    out += " for shapes";
    for (const auto& [name, shape] : cex.shapes) out += " ?" + name + " " + to_string(shape);
  }
  out += ":\n";
  if (!cex.note.empty()) out += "  " + cex.note + "\n";
  for (const auto& [name, values] : cex.exact) {
    auto it = cex.shapes.find(name);
    out += "  ?" + name + " = " + format_nested(it != cex.shapes.end() ? it->second : Shape{}, values) + "\n";
  }
  if (!cex.lhs_value.empty())
    out += "  output " + std::to_string(cex.output) + " at " + to_string(cex.index) + ": lhs = " + cex.lhs_value +
           ", rhs = " + cex.rhs_value + "\n";
  return out;
}

nlohmann::json counterexample_to_json(const Counterexample& cex) {
  nlohmann::json j;
  j["source"] = cex.source;
  for (const auto& [name, shape] : cex.shapes) j["shapes"][name] = shape;
  for (const auto& [name, values] : cex.exact) j["inputs"][name] = values;
  if (!cex.lhs_value.empty()) {
    j["output"] = cex.output;
    j["index"] = cex.index;
    j["lhs"] = cex.lhs_value;
    j["rhs"] = cex.rhs_value;
  }
  if (!cex.note.empty()) j["note"] = cex.note;
  return j;
}

}  // namespace teq
