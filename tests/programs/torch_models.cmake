# PyTorch exports in corpus/models/torch/ (tools/make_torch_models.py; weights are graph inputs) through
# eqsat-run with the default rules (corpus/seed.json) and cost model, then onnx.checker and onnxruntime
# (tests/python/test_models.py --weights-as-inputs): one test per model, eqsat_run.torch.NAME. Needs only the
# .venv of tools/setup-python.sh (onnx, onnxruntime), not torch; skipped (77) without it.
# Limits: --ilp-time-limit 3 (MobileNet-v2's ILP does not close its gap in minutes) and --node-limit 10000 (the
# encoder's e-graph reaches the default 100000 in 4 s, and the ILP on it then runs far past its time limit);
# the CNNs saturate below 10000. The reference evaluator's --check runs too (every operator of the five is in
# the vocabulary: 0 opaque), so it and onnxruntime both decide.
if(NOT TARGET eqsat-run)
  return()
endif()

set(TEQ_TORCH_MODELS_DIR ${PROJECT_SOURCE_DIR}/corpus/models/torch)
set(TEQ_TORCH_MODELS_VENV ${PROJECT_SOURCE_DIR}/.venv/bin/python)
file(GLOB TEQ_TORCH_MODELS CONFIGURE_DEPENDS ${TEQ_TORCH_MODELS_DIR}/*.onnx)
foreach(model ${TEQ_TORCH_MODELS})
  get_filename_component(name ${model} NAME_WE)
  add_test(NAME eqsat_run.torch.${name}
           COMMAND sh -c "if [ -x '${TEQ_TORCH_MODELS_VENV}' ]; then exec '${TEQ_TORCH_MODELS_VENV}' \"$@\"; else echo 'skipped: no .venv with onnx and onnxruntime (run tools/setup-python.sh)'; exit 77; fi"
                   sh ${PROJECT_SOURCE_DIR}/tests/python/test_models.py $<TARGET_FILE:eqsat-run> ${TEQ_TORCH_MODELS_DIR}
                   ${PROJECT_SOURCE_DIR}/corpus/seed.json ${CMAKE_CURRENT_BINARY_DIR}/eqsat_run/torch ${model}
                   --weights-as-inputs "--eqsat-args=--node-limit 10000 --ilp-time-limit 3")
  set_tests_properties(eqsat_run.torch.${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
