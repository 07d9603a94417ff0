// The operator families' ONNX form tables (optimizer/onnx/detail/onnx_forms.h): every operator that runs has
// exactly one way out, and no two import forms claim the same ONNX node.
#include <gtest/gtest.h>

#include <array>

#include "optimizer/onnx/detail/onnx_forms.h"

namespace teq::onnx_io::detail {
namespace {

std::array<FamilyForms, 7> every_family() {
  return {elementwise_forms(), matmul_forms(), conv_forms(), pool_forms(), layout_forms(), reduce_forms(),
          norm_forms()};
}

TEST(OnnxForms, EveryOperatorThatRunsHasAnExportForm) {
  for (const OpInfo& info : all_ops()) {
    // Leaves are named, constants precomputed into initializers and opaque nodes written back as imported.
    const bool written_by_the_exporter =
        is_leaf(info.kind) || info.work == OpWorkKind::Constant || info.work == OpWorkKind::Opaque;
    const ExportForm* form = find_export_form(info.kind);
    EXPECT_EQ(form == nullptr, written_by_the_exporter) << info.name;
    if (form) EXPECT_EQ(form->op, info.kind) << info.name;
  }
}

TEST(OnnxForms, ImportFormsOfOneOpTypeCoverDisjointOpsets) {
  std::vector<const ImportForm*> all;
  for (const FamilyForms& family : every_family())
    for (const ImportForm& f : family.imports) all.push_back(&f);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_LE(all[i]->first_opset, all[i]->last_opset) << all[i]->op_type;
    for (size_t j = i + 1; j < all.size(); ++j)
      if (all[i]->op_type == all[j]->op_type)
        EXPECT_TRUE(all[i]->last_opset < all[j]->first_opset || all[j]->last_opset < all[i]->first_opset)
            << all[i]->op_type;
  }
}

TEST(OnnxForms, ImportLooksUpByOpTypeAndOpset) {
  ASSERT_NE(find_import_form("Clip", 10), nullptr);
  ASSERT_NE(find_import_form("Clip", 11), nullptr);
  EXPECT_NE(find_import_form("Clip", 10)->map, find_import_form("Clip", 11)->map);  // attributes, then inputs
  EXPECT_EQ(find_import_form("Conv", 17), find_import_form("Conv", 7));
  EXPECT_EQ(find_import_form("NonZero", 17), nullptr);  // outside the vocabulary: the node stays opaque
  EXPECT_EQ(find_import_form("Constant", 17), nullptr);  // a value, not an operator: the importer's own
}

TEST(OnnxForms, BiasAddFusionsComeAfterTheLayerNorm) {
  // The layer norm's final add contains the others' patterns' roots; tried first, it keeps the operator whole.
  const auto add = export_fusions(OpKind::EwAdd);
  ASSERT_EQ(add.size(), 3u);
  EXPECT_EQ(add[0], &norm_forms().fusions[0]);
  // A multiplication: the layer norm's, then the division by a reciprocal (elementwise), which it contains.
  const auto mul = export_fusions(OpKind::EwMul);
  ASSERT_EQ(mul.size(), 2u);
  EXPECT_EQ(mul[0], &norm_forms().fusions[1]);
  EXPECT_EQ(mul[1], &elementwise_forms().fusions[0]);
}

}  // namespace
}  // namespace teq::onnx_io::detail
