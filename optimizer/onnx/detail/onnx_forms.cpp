#include "optimizer/onnx/detail/onnx_forms.h"

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

namespace teq::onnx_io::detail {

namespace {

/// Every family's table, in the order their fusions are tried: the layer norm (norm) before Conv's and
/// Gemm's bias inputs (conv, matmul), which it contains.
std::span<const FamilyForms> families() {
  static const std::array<FamilyForms, 7> kFamilies{norm_forms(),   conv_forms(),   matmul_forms(), elementwise_forms(),
                                                    pool_forms(),   layout_forms(), reduce_forms()};
  return kFamilies;
}

/// The export side of the tables by operator: one form each (a second is a programming error), fusions in
/// family order.
struct ExportIndex {
  std::vector<const ExportForm*> form;
  std::vector<std::vector<const ExportFusion*>> fusions;

  ExportIndex() : form(all_ops().size(), nullptr), fusions(all_ops().size()) {
    for (const FamilyForms& family : families()) {
      for (const ExportForm& f : family.exports) {
        const auto k = static_cast<size_t>(f.op);
        if (form[k]) throw std::logic_error("onnx forms: two export forms for " + std::string(op_name(f.op)));
        form[k] = &f;
      }
      for (const ExportFusion& f : family.fusions) fusions[static_cast<size_t>(f.root)].push_back(&f);
    }
  }
};

const ExportIndex& export_index() {
  static const ExportIndex kIndex;
  return kIndex;
}

}  // namespace

const ImportForm* find_import_form(std::string_view op_type, int64_t opset) {
  for (const FamilyForms& family : families())
    for (const ImportForm& f : family.imports)
      if (f.op_type == op_type && f.first_opset <= opset && opset <= f.last_opset) return &f;
  return nullptr;
}

const ExportForm* find_export_form(OpKind op) { return export_index().form[static_cast<size_t>(op)]; }

std::span<const ExportFusion* const> export_fusions(OpKind op) {
  return export_index().fusions[static_cast<size_t>(op)];
}

}  // namespace teq::onnx_io::detail
