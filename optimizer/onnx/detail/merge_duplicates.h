// Private to ONNX import: common-subexpression elimination on the file's own nodes, before anything else reads
// them. Exporters write the same shape computation once per use (PyTorch's TorchScript exporter: a
// Shape -> Gather -> Unsqueeze -> Concat chain for every reshape of every layer, and one Constant node per
// literal), and onnxsim/onnxslim merge them; so does the import, so that every later stage (folding, the
// e-graph, the exporter) sees each computation once, whether it stays an opaque node or not.
#pragma once

#include <onnx/onnx_pb.h>

namespace teq::onnx_io::detail {

/// Merges each node of the default ONNX domain into an earlier one with the same operator, attributes and
/// inputs (after the renames the merge made), renaming every later read of its outputs (in subgraphs too) to
/// the earlier node's. Kept as they are: nodes with subgraphs, the random operators (RandomNormal,
/// RandomUniform, their -Like forms, Bernoulli, Multinomial) and Dropout, nodes of other domains (their
/// determinism is not known), nodes with over 4 KiB of attributes (a Constant holding a weight: its key would
/// copy it), and nodes that compute a graph output (the output keeps its name).
/// Returns the number of nodes removed.
int merge_duplicate_nodes(onnx::GraphProto& graph);

}  // namespace teq::onnx_io::detail
