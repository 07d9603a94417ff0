# fp16 and bf16 models are terms of the vocabulary (issue 45, item 2): a small block in each type with a
# float32 RMSNorm between Casts, weights in external data, through eqsat-run --check, its written file compared
# with the original in onnxruntime at batch 1 and 3 (tests/python/test_fp16.py; bf16: onnxruntime's CPU provider
# lacks the kernels, so only eqsat-run's own check vouches for it). Needs the .venv of tools/setup-python.sh.
if(NOT TARGET eqsat-run)
  return()
endif()

set(TEQ_FP16_VENV ${PROJECT_SOURCE_DIR}/.venv/bin/python)
foreach(dtype fp16 bf16)
  add_test(NAME eqsat_run.${dtype}
           COMMAND sh -c "if [ -x '${TEQ_FP16_VENV}' ]; then exec '${TEQ_FP16_VENV}' \"$@\"; else echo 'skipped: no .venv with onnx and onnxruntime (run tools/setup-python.sh)'; exit 77; fi"
                   sh ${PROJECT_SOURCE_DIR}/tests/python/test_fp16.py $<TARGET_FILE:eqsat-run>
                   ${CMAKE_CURRENT_BINARY_DIR}/eqsat_run/fp16 --dtype ${dtype} --rules ${PROJECT_SOURCE_DIR}/corpus/rules.json)
  set_tests_properties(eqsat_run.${dtype} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
