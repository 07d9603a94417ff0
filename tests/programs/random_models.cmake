# The random-model differential test (tools/random_models.py, docs/hardening.md): 60 seeded random valid ONNX
# models over the vocabulary (grouped/depthwise/strided/padded/dilated Convs, poolings with every setting,
# MatMul/Gemm, broadcasting element-wise ops, Concat/Split/Slice/Transpose/Reshape, ReduceMean, Softmax,
# normalizations; a symbolic batch on some inputs), each optimized by eqsat-run under three configurations and
# compared with its original in onnxruntime at batch 1,3 x seq 8,5 (--extended: If and computed shapes too). Fails on any written file that differs or fails
# where the original runs (WRONG), a crash or a hang; the failing models are kept in
# ${CMAKE_CURRENT_BINARY_DIR}/random_models/failures/. Needs the .venv of tools/setup-python.sh; skipped (77)
# without it. About 10 s on 2 cores.
if(NOT TARGET eqsat-run)
  return()
endif()
set(RANDOM_MODELS_VENV ${PROJECT_SOURCE_DIR}/.venv/bin/python)
add_test(NAME eqsat_run.random_models
         COMMAND sh -c "if [ -x '${RANDOM_MODELS_VENV}' ]; then exec '${RANDOM_MODELS_VENV}' \"$@\"; else echo 'skipped: no .venv with onnx and onnxruntime (run tools/setup-python.sh)'; exit 77; fi"
                 sh ${PROJECT_SOURCE_DIR}/tools/random_models.py campaign --binary $<TARGET_FILE:eqsat-run>
                 -n 60 --extended --jobs 2 --timeout 120 --quiet --cwd ${PROJECT_SOURCE_DIR}
                 --config default "--config=--cost analytical:cpu-ort --check" "--config=--cost flops"
                 -o ${CMAKE_CURRENT_BINARY_DIR}/random_models)
set_tests_properties(eqsat_run.random_models PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
