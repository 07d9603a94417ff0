# The onnxruntime measurement scripts of bench/ on tiny inputs (a few seconds; no timing targets: the figures
# are the benchmark report's, docs/benchmarks-measured.md). Need the .venv of tools/setup-python.sh; skipped (77)
# without it.
if(NOT TARGET eqsat-run)
  return()
endif()
set(TEQ_BENCH_VENV ${PROJECT_SOURCE_DIR}/.venv/bin/python)
set(TEQ_BENCH_SKIP "if [ ! -x '${TEQ_BENCH_VENV}' ]; then echo 'skipped: no .venv with onnx and onnxruntime (run tools/setup-python.sh)'; exit 77; fi")
set(TEQ_BENCH_WORK ${CMAKE_CURRENT_BINARY_DIR}/bench)

# eqsat-run's export keeps onnxruntime's fusions (SkipLayerNormalization, Gelu): the encoder re-exported
# unchanged is fused as the original is.
add_test(NAME eqsat_run.ort_fusions
         COMMAND sh -c "${TEQ_BENCH_SKIP}; exec '${TEQ_BENCH_VENV}' \"$@\"" sh
                 ${PROJECT_SOURCE_DIR}/tests/python/test_ort_fusions.py $<TARGET_FILE:eqsat-run>
                 ${PROJECT_SOURCE_DIR}/corpus/models/encoder.onnx ${TEQ_BENCH_WORK}/fusions)
set_tests_properties(eqsat_run.ort_fusions PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# bench/ort_report.sh --db on a tiny model: builds the cost DB (bench/ort_cost_db.py), optimizes with it, times
# both files and prints a well-formed row (tests/python/test_ort_report.py).
add_test(NAME bench.ort_report_db
         COMMAND sh -c "${TEQ_BENCH_SKIP}; exec '${TEQ_BENCH_VENV}' \"$@\"" sh
                 ${PROJECT_SOURCE_DIR}/tests/python/test_ort_report.py $<TARGET_FILE_DIR:eqsat-run>/..
                 ${PROJECT_SOURCE_DIR}/corpus/models/mlp.onnx ${TEQ_BENCH_WORK}/report)
set_tests_properties(bench.ort_report_db PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# The units the DB cost model prices as onnxruntime's fused kernels (SkipLayerNormalization, Gelu, Gemm,
# FusedMatMul, ...) are those onnxruntime makes at ORT_ENABLE_ALL, and bench/ort_cost_db.py times each
# (tests/python/test_ort_fused_units.py).
add_test(NAME bench.ort_fused_units
         COMMAND sh -c "${TEQ_BENCH_SKIP}; exec '${TEQ_BENCH_VENV}' \"$@\"" sh
                 ${PROJECT_SOURCE_DIR}/tests/python/test_ort_fused_units.py $<TARGET_FILE:eqsat-run>
                 ${PROJECT_SOURCE_DIR}/corpus/models/encoder.onnx ${TEQ_BENCH_WORK}/fused_units)
set_tests_properties(bench.ort_fused_units PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)

# A model whose weights outgrow the cache (the NAS-RNN export with seeded weights, 84 MB) is priced reading them
# from memory, by the CPU profile and by a DB bench/ort_cost_db.py builds with "streamed:" entries; its
# FusedGemm units are onnxruntime's; and the CPU profile does not claim the merged matmuls that onnxruntime
# does not run faster (tests/python/test_ort_streamed.py).
add_test(NAME bench.ort_streamed_weights
         COMMAND sh -c "${TEQ_BENCH_SKIP}; exec '${TEQ_BENCH_VENV}' \"$@\"" sh
                 ${PROJECT_SOURCE_DIR}/tests/python/test_ort_streamed.py $<TARGET_FILE:eqsat-run>
                 ${PROJECT_SOURCE_DIR}/corpus/models/torch/nasrnn.onnx ${PROJECT_SOURCE_DIR}/corpus/models/mlp.onnx
                 ${TEQ_BENCH_WORK}/streamed)
set_tests_properties(bench.ort_streamed_weights PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
