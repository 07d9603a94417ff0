// Numeric check of an optimization: evaluates the original and the optimized graph of an imported model
// on the same seeded random inputs with the reference evaluator (double precision, the fast strategy of
// fast_eval.h) and compares their outputs. Weights come from the model's initializers; float graph inputs
// get uniform values in [-1, 1], integer and boolean ones (token ids, masks) 0 or 1. Opaque operators (ONNX
// nodes outside the vocabulary) are evaluated from their NodeProto by detail/onnx_node_eval.h, with
// passed-through initializers as inputs; a graph holding an operator that evaluator does not cover is not
// evaluated (evaluated = false, the operator named in reason).
//
// A model whose graph inputs have symbolic dimensions (dim_param, or unnamed ones given by input and axis)
// is checked at the value they were imported with and again at a second value of each, one at a time
// (second_value: 1 -> 2, 2 -> 1, v -> v/2), and, when there are two or more, with all of them at their
// second values at once: the optimized graph is exported to ONNX, and that export and the original file are
// both imported at that size and compared. An optimized model that only works at the size it was optimized
// for fails there. Opaque operators do not stop this, nor one that the importer keeps opaque at that size
// but not at the imported one (a form whose condition holds at one size only, or a shape with no meaning
// there): that size is evaluated too, and is "not checked" only when the original's own evaluation fails
// there (it does not work at that size); such an operator in the export fails the size unless its
// evaluation shows that it works.
// Usage:
//   CheckResult c = check_optimization_file(model, report.optimized, "model.onnx", import_options, {});
//   if (!c.evaluated) ... c.reason says why nothing could be compared
//   else if (!c.passed) ...   // c.max_abs_diff, c.max_rel_diff, c.reason say where and by how much
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "optimizer/onnx/model.h"
#include "optimizer/onnx/onnx_import.h"

namespace teq::onnx_io {

struct CheckOptions {
  uint64_t seed = 1;
  /// An element passes when |optimized - original| <= rtol * |original| + atol * max(1, S), S the largest
  /// magnitude in that output tensor of the original (its L-inf norm): float32 rounds a sum relative to the
  /// values summed, so an element near 0 among large ones carries the error of the large ones. The original
  /// is evaluated in double; the optimized file's folded weights are float32. docs/eqsat-run.md, "--check".
  double rtol = 1e-4;
  double atol = 1e-5;
  /// Progress of a long check, at most every `progress_seconds`: a line such as
  /// "optimized graph: 120/300 operators (40%), 6.0 s". Empty: silent.
  std::function<void(const std::string&)> on_progress;
  double progress_seconds = 2;
};

/// The tolerance an output of ONNX element type `elem_type` is compared at: `options` for FLOAT; for FLOAT16
/// rtol and atol at least 2^-8 (about 3.9e-3, four units in the last place at 1), for BFLOAT16 at least 2^-5
/// (about 3.1e-2). Both graphs are evaluated in double from the same values; the difference is the rounding
/// of what the optimized file stores in the 16-bit type (folded weights, constants). docs/eqsat-run.md.
CheckOptions tolerance_for(const CheckOptions& options, int32_t elem_type);

/// The check at a second size: one symbolic dimension at its second value, or all of them at once.
struct SizeCheck {
  std::string dim;        // the dim_param, or "INPUT:AXIS" for a dimension given by input and axis; for all
                          // dimensions at once the others with their values first ("batch=2, seq"), so that
                          // dim + "=" + value reads as `at`
  int64_t value = 0;      // the second value (of the last dimension named in dim)
  std::string at;         // every dimension changed, with its value: "batch=2" or "batch=2, seq=64"
  bool evaluated = false; // false: the original model itself does not import or evaluate at this value
  bool passed = false;
  std::string reason;     // why not evaluated, or what differs
  double max_abs_diff = 0, max_rel_diff = 0;
  size_t elements = 0;
  bool identical = false; // both read back as the same graph (same operators, attributes, weights): passed
                          // without evaluating (check_models)
};

struct CheckResult {
  bool evaluated = false;   // false: some operator cannot be evaluated (see reason); nothing compared
  std::string reason;       // why not evaluated, or the first difference found
  bool passed = false;      // evaluated and every element within tolerance, at every size checked
  bool passed_imported_size = false;  // every element within tolerance at the imported size
  double max_abs_diff = 0;
  double max_rel_diff = 0;  // |diff| / max(|original|, atol)
  size_t elements = 0;      // output elements compared (at the imported size)
  /// The loosest tolerance an output was compared at (tolerance_for its element type: CheckOptions' own for
  /// float32 outputs); 0 when nothing was compared.
  double rtol = 0, atol = 0;
  double seconds = 0;
  std::vector<SizeCheck> sizes;  // one per symbolic dimension, then one for all at once when there are two
                                 // or more (check_optimization)
  std::string note;         // how the imported size was checked when not by evaluating the written file: on
                            // the term, or not at all because both graphs are the same (identical)
  bool identical = false;   // the two models were found to be the same computation (check_models): passed
                            // with nothing evaluated (elements 0), since the evaluation is deterministic
  /// Non-empty when nothing had to be evaluated, and why: the file written is the input itself, byte for
  /// byte (evaluated and passed are then true, with no elements compared).
  std::string not_needed;
  /// Not evaluated because evaluating the original failed (an operator's inputs do not fit it at these
  /// sizes), not because some operator has no evaluation: the original does not work there.
  bool original_failed = false;
  /// Not evaluated because evaluating the optimized graph failed where the original's did not.
  bool optimized_failed = false;
};

/// Compares `optimized` (same leaves and roots as model.graph) against model.graph at the imported sizes.
/// Never throws for opaque operators: it reports evaluated = false with the operator named in `reason`.
CheckResult check_equivalent(const OnnxModel& model, const Expr& optimized, const CheckOptions& options = {});

/// The outputs of `model`'s graph on `inputs` (every graph input that is not a weight, by name) and its own
/// weights, evaluated as the check evaluates them (double precision, opaque operators through
/// detail/onnx_node_eval.h). Throws ShapeError for a missing input or wrong shape, detail::NotEvaluable for an
/// operator the check cannot evaluate.
std::vector<Tensor<double>> evaluate_model(const OnnxModel& model, const std::map<std::string, Tensor<double>>& inputs);

/// Compares two separately imported models with the same declared graph inputs and outputs (an original
/// and an optimized export): the same random values for the inputs of `original`, each model its own weights.
/// Two models with the same Expr whose weights are the same values (the same bytes of the same file, or equal
/// held tensors) and whose opaque nodes are the same operators (attributes, passed-through inputs) are
/// passed without evaluating (`identical`): the evaluation is deterministic, so it could only find them equal.
CheckResult check_models(const OnnxModel& original, const OnnxModel& optimized, const CheckOptions& options = {});

/// The symbolic dimensions of the graph inputs (not weights) that `model` was imported with, in order of
/// first appearance, each with the value it was bound to (`import.axis_dims`, labelled "INPUT:AXIS", else
/// `import.dims`, else `import.default_dim`).
std::vector<std::pair<std::string, int64_t>> symbolic_dims(const OnnxModel& model, const ImportOptions& import);
/// The second value a symbolic dimension is checked at: 2 when it was bound to 1, 1 when bound to 2, else
/// half the value (rounded down): batch 1 -> 2, sequence 128 -> 64.
int64_t second_value(int64_t value);

/// check_equivalent, then, at each second size (each symbolic dimension at its second value, then all at
/// once when there are two or more), the original (`original_bytes`, the serialized model file `model` was
/// imported from with `import`) and the export of `optimized` imported there and compared with
/// check_models. passed only when every size passed; a size where the optimized export does not import, or
/// computes other values, fails with a reason naming the dimensions. A size where the original itself does
/// not import, or fails to evaluate with an operator kept opaque there only, is recorded as not evaluated and
/// does not change the verdict. With empty `original_bytes` (a built-in model) only check_equivalent runs.
/// `optimized_bytes`: the export of `optimized` when the caller has it already (empty: exported here); when
/// given, the imported size is checked on that file read back (check_models), not on the term, so that the
/// verdict is the written file's (float32 weights, the exporter's forms).
CheckResult check_optimization(const OnnxModel& model, const Expr& optimized, std::string_view original_bytes,
                               const ImportOptions& import, const CheckOptions& options = {},
                               std::string_view optimized_bytes = {});
/// As above with the model file's path (empty: a built-in model, no second sizes). Throws OnnxError when
/// the file can no longer be read.
CheckResult check_optimization_file(const OnnxModel& model, const Expr& optimized, const std::filesystem::path& original,
                               const ImportOptions& import, const CheckOptions& options = {},
                               std::string_view optimized_bytes = {});

/// A model file read again: its bytes, and the import options with its folder as the external data folder.
struct OriginalFile {
  std::string bytes;  // empty for an empty path (a built-in model)
  ImportOptions import;
};
/// Throws OnnxError when the file can no longer be read.
OriginalFile read_original_file(const std::filesystem::path& path, const ImportOptions& import);

/// Reshape targets that follow the symbolic dimensions (ExportOptions::reshape_targets): the original
/// imported again at the second value of each symbolic dimension shows, for each of its reshapes, which output
/// dimensions change with it; those are written as 0 (a copy of the input's dimension at that axis), as a copy
/// of the input's dimension at another axis (equal to it at every size tried), or -1 (inferred, at most one).
/// Empty for a model without symbolic dimensions or reshapes.
ReshapeTargets symbolic_reshape_targets(const OnnxModel& model, std::string_view original_bytes,
                                        const ImportOptions& import);

/// Why the optimized export `optimized_bytes` is valid only at the size it was optimized for: the reason for
/// the first second size (as check_optimization tries them) at which the original imports and the export
/// does not, or holds an operator kept opaque there only (a shape that no longer fits, naming the
/// dimensions), or empty. Where the original too holds an operator kept opaque there only, it is evaluated
/// there, and the size counts only if it works; otherwise nothing is evaluated. eqsat-run keeps
/// the original graph when this is not empty, with or without --check.
std::string fixed_size_reason(const OnnxModel& model, std::string_view original_bytes, std::string_view optimized_bytes,
                              const ImportOptions& import);

}  // namespace teq::onnx_io
