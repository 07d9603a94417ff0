#include "optimizer/onnx/detail/merge_duplicates.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "optimizer/onnx/detail/proto_util.h"

namespace teq::onnx_io::detail {
namespace {

bool has_subgraph(const onnx::NodeProto& n) {
  return std::any_of(n.attribute().begin(), n.attribute().end(),
                     [](const onnx::AttributeProto& a) { return a.has_g() || a.graphs_size() > 0; });
}

// A node's key holds its attributes' bytes: a Constant holding a weight would be copied whole into it, so
// nodes with more than this many attribute bytes are not merged (memory stays bounded by the model's own).
constexpr size_t kMaxKeyedAttributeBytes = 4096;

bool may_merge(const onnx::NodeProto& n) {
  static const std::set<std::string> kNotPure = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                                                 "RandomUniformLike", "Bernoulli", "Multinomial", "Dropout"};
  const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
  size_t attribute_bytes = 0;
  for (const auto& a : n.attribute()) attribute_bytes += a.ByteSizeLong();
  return default_domain && n.output_size() > 0 && !has_subgraph(n) && !kNotPure.count(n.op_type()) &&
         attribute_bytes <= kMaxKeyedAttributeBytes;
}

// What makes two nodes compute the same values: operator, inputs by name, attributes by name (serialized),
// and the number of outputs. The node's own name and doc string do not count.
std::string node_key(const onnx::NodeProto& n) {
  std::vector<std::string> attributes;
  for (const auto& a : n.attribute()) {
    onnx::AttributeProto copy = a;
    copy.clear_doc_string();
    attributes.push_back(copy.SerializeAsString());
  }
  std::sort(attributes.begin(), attributes.end());
  std::string key = n.op_type() + '\0' + std::to_string(n.output_size()) + '\0';
  for (const auto& in : n.input()) key += in + '\0';
  key += '\x01';
  for (const auto& a : attributes) key += std::to_string(a.size()) + ':' + a;
  return key;
}

}  // namespace

int merge_duplicate_nodes(onnx::GraphProto& graph) {
  std::unordered_set<std::string> graph_outputs;
  for (const auto& out : graph.output()) graph_outputs.insert(out.name());
  std::unordered_map<std::string, std::string> renamed;  // removed output -> the kept node's output
  std::unordered_map<std::string, int> first_with_key;   // key -> index into `kept`
  std::vector<onnx::NodeProto> kept;
  kept.reserve(static_cast<size_t>(graph.node_size()));
  int removed = 0;
  for (auto& node : *graph.mutable_node()) {
    for (auto& in : *node.mutable_input())
      if (auto it = renamed.find(in); it != renamed.end()) in = it->second;
    if (has_subgraph(node))
      for (const std::string& outer : outer_references(node))
        if (auto it = renamed.find(outer); it != renamed.end()) rename_outer_reference(node, outer, it->second);
    const bool computes_output = std::any_of(node.output().begin(), node.output().end(),
                                             [&](const std::string& o) { return graph_outputs.count(o) > 0; });
    if (!may_merge(node)) {
      kept.push_back(std::move(node));
      continue;
    }
    const std::string key = node_key(node);
    auto it = first_with_key.find(key);
    if (it == first_with_key.end() || computes_output) {
      if (it == first_with_key.end()) first_with_key.emplace(key, static_cast<int>(kept.size()));
      kept.push_back(std::move(node));
      continue;
    }
    const onnx::NodeProto& first = kept[static_cast<size_t>(it->second)];
    bool outputs_match = true;  // an optional output the first node leaves unnamed cannot stand for this one's
    for (int k = 0; k < node.output_size(); ++k) outputs_match &= node.output(k).empty() || !first.output(k).empty();
    if (!outputs_match) {
      kept.push_back(std::move(node));
      continue;
    }
    for (int k = 0; k < node.output_size(); ++k)
      if (!node.output(k).empty()) renamed[node.output(k)] = first.output(k);
    ++removed;
  }
  graph.clear_node();  // the nodes were moved into `kept`
  for (auto& node : kept) *graph.add_node() = std::move(node);
  return removed;
}

}  // namespace teq::onnx_io::detail
