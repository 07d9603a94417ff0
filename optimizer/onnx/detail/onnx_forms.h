// An operator family's ONNX forms: which ONNX node types (in which opsets) import onto its terms, and how each
// of its operators is written back. Each family keeps one table, in optimizer/onnx/forms/<family>.cpp beside
// its definition in rules/ops/<family>.h; the importer (detail/import_operators.cpp) and the exporter
// (onnx_export.cpp) look operators up here and name none themselves. Not an API: onnx_import.h and
// onnx_export.h are.
#pragma once

#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "rules/expr.h"

namespace teq::onnx_io::detail {

class Importer;
class Exporter;

/// The last opset of an open-ended range.
inline constexpr int64_t kLatestOpset = std::numeric_limits<int64_t>::max();

/// ONNX -> term: a node of `op_type` (default domain) in a model of opset first_opset..last_opset maps onto
/// the vocabulary through `map`, which throws NotInVocabulary (detail/importer.h) when this node does not fit.
struct ImportForm {
  std::string_view op_type;
  int64_t first_opset = 1, last_opset = kLatestOpset;
  void (*map)(Importer&, const onnx::NodeProto&) = nullptr;
};

/// Term -> ONNX: `write` emits the nodes computing term node `id` (an `op`) and returns the name of its value.
/// Throws OnnxError when the model's opset has no form for it.
struct ExportForm {
  OpKind op;
  std::string (*write)(Exporter&, ExprId id) = nullptr;
};

/// Term -> ONNX for several term nodes at once (conv2d and its bias add as one Conv): tried on a node of
/// operator `root` before that operator's own form; nullopt when the pattern is not there.
struct ExportFusion {
  OpKind root;
  std::optional<std::string> (*try_write)(Exporter&, ExprId id) = nullptr;
};

/// One family's table.
struct FamilyForms {
  std::span<const ImportForm> imports;
  std::span<const ExportForm> exports;
  std::span<const ExportFusion> fusions;
};

// The families (optimizer/onnx/forms/*.cpp), one per header of rules/ops/ that has ONNX forms.
FamilyForms elementwise_forms();
FamilyForms matmul_forms();
FamilyForms conv_forms();
FamilyForms pool_forms();
FamilyForms layout_forms();
FamilyForms reduce_forms();
FamilyForms norm_forms();

/// The import form for a node of `op_type` in a model of `opset`, or nullptr when the vocabulary has none.
const ImportForm* find_import_form(std::string_view op_type, int64_t opset);
/// The export form of `op`, or nullptr (leaves, constants and opaque nodes, which the exporter writes itself).
const ExportForm* find_export_form(OpKind op);
/// The fusions rooted at `op`, in the order they are tried.
std::span<const ExportFusion* const> export_fusions(OpKind op);

}  // namespace teq::onnx_io::detail
