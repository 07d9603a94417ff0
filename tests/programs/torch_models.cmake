# PyTorch exports in corpus/models/torch/ (tools/make_torch_models.py; weights are graph inputs) through
# eqsat-run with the default rules (corpus/rules.json, both ways) and cost model, then onnx.checker and onnxruntime
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
                   ${PROJECT_SOURCE_DIR}/corpus/rules.json ${CMAKE_CURRENT_BINARY_DIR}/eqsat_run/torch ${model}
                   --weights-as-inputs "--eqsat-args=--node-limit 10000 --ilp-time-limit 3")
  set_tests_properties(eqsat_run.torch.${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()

# The same networks exported at opset 17 with a symbolic batch (corpus/models/torch/opset17-dynamic/), their
# weights made initializers, in four forms (opset 17, 18 and 21, external data: tests/python/test_variants.py):
# each optimized with --dim batch=1 must run in onnxruntime at batch 1 and 2 with the original's outputs, and
# every form, and the fixed-shape opset-13 export of the same network, must give the same speedup and rules. Greedy extraction: the ILP's time limit would make the
# comparison depend on the machine's load. To keep the suite's time: the plain convolution networks skip
# opset 18 (none of their operators changes between 17 and 18; Inception-v3's and DenseNet-121's Pad does), and
# VGG-19 (548 MB of weights, 80 s for one form on 2 cores) is left out: its operators and its Flatten over the
# batch are ResNet-50's (docs/eqsat-run.md).
# The cost model is pinned (analytical:h200, the default before `auto`): what is compared is the forms, and
# the CPU model's smaller gains fall under --min-gain in some forms and not others.
set(TEQ_TORCH_VARIANTS_resnet50 opset17,opset21,external)
set(TEQ_TORCH_VARIANTS_resnext50 opset17,opset21,external)
file(GLOB TEQ_TORCH_DYNAMIC_MODELS CONFIGURE_DEPENDS ${TEQ_TORCH_MODELS_DIR}/opset17-dynamic/*.onnx)
foreach(model ${TEQ_TORCH_DYNAMIC_MODELS})
  get_filename_component(name ${model} NAME_WE)
  if(name STREQUAL "vgg19")
    continue()
  endif()
  set(variants opset17,opset18,opset21,external)
  if(DEFINED TEQ_TORCH_VARIANTS_${name})
    set(variants ${TEQ_TORCH_VARIANTS_${name}})
  endif()
  add_test(NAME eqsat_run.torch_variants.${name}
           COMMAND sh -c "if [ -x '${TEQ_TORCH_MODELS_VENV}' ]; then exec '${TEQ_TORCH_MODELS_VENV}' \"$@\"; else echo 'skipped: no .venv with onnx and onnxruntime (run tools/setup-python.sh)'; exit 77; fi"
                   sh ${PROJECT_SOURCE_DIR}/tests/python/test_variants.py $<TARGET_FILE:eqsat-run> ${model}
                   ${PROJECT_SOURCE_DIR}/corpus/rules.json ${CMAKE_CURRENT_BINARY_DIR}/eqsat_run/torch_variants
                   --variants ${variants} --fixed ${TEQ_TORCH_MODELS_DIR}/${name}.onnx
                   "--eqsat-args=--node-limit 10000 --extract greedy --cost analytical:h200")
  set_tests_properties(eqsat_run.torch_variants.${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
