# Hugging Face transformers exports in corpus/models/hf/ (tools/make_hf_models.py --size tiny: BERT, DistilBERT,
# GPT-2, a LLaMA-style decoder, ViT, the T5 encoder, a Whisper encoder, ConvNeXt; each by the TorchScript exporter
# (opset 17, dynamic_axes) and by the dynamo exporter (torch.export.Dim), with symbolic batch and sequence) through
# eqsat-run with no --dim and the default check, then onnxruntime comparing the original and the written file at
# four shapes (tests/python/test_hf_models.py): one test per file, eqsat_run.hf.NAME.EXPORTER. Needs only the
# .venv of tools/setup-python.sh (onnx, onnxruntime), not torch; skipped (77) without it. Issue 43, item 6.
if(NOT TARGET eqsat-run)
  return()
endif()

set(TEQ_HF_MODELS_DIR ${PROJECT_SOURCE_DIR}/corpus/models/hf)
set(TEQ_HF_MODELS_VENV ${PROJECT_SOURCE_DIR}/.venv/bin/python)
file(GLOB TEQ_HF_MODELS CONFIGURE_DEPENDS ${TEQ_HF_MODELS_DIR}/*.onnx)
foreach(model ${TEQ_HF_MODELS})
  get_filename_component(file ${model} NAME)
  string(REGEX REPLACE "\\.onnx$" "" name ${file})
  add_test(NAME eqsat_run.hf.${name}
           COMMAND sh -c "if [ -x '${TEQ_HF_MODELS_VENV}' ]; then exec '${TEQ_HF_MODELS_VENV}' \"$@\"; else echo 'skipped: no .venv with onnx and onnxruntime (run tools/setup-python.sh)'; exit 77; fi"
                   sh ${PROJECT_SOURCE_DIR}/tests/python/test_hf_models.py $<TARGET_FILE:eqsat-run> ${model}
                   ${CMAKE_CURRENT_BINARY_DIR}/eqsat_run/hf --rules ${PROJECT_SOURCE_DIR}/corpus/rules.json
                   --timeout 240)
  set_tests_properties(eqsat_run.hf.${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()

# The linear layers written as Reshape, Gemm, Reshape (cost-model.md, "Linear layers of a symbolic shape"): the tiny
# BERT's layers reach the form's size bound at --dim batch=8 (8 x 128 x 48 elements), and the written file must
# hold a Gemm and agree with the original in onnxruntime at the four shapes, none of them batch 8.
foreach(exporter dynamo torchscript)
  set(model ${TEQ_HF_MODELS_DIR}/bert.${exporter}.onnx)
  if(EXISTS ${model})
    add_test(NAME eqsat_run.hf_gemm.bert.${exporter}
             COMMAND sh -c "if [ -x '${TEQ_HF_MODELS_VENV}' ]; then exec '${TEQ_HF_MODELS_VENV}' \"$@\"; else echo 'skipped: no .venv with onnx and onnxruntime (run tools/setup-python.sh)'; exit 77; fi"
                     sh ${PROJECT_SOURCE_DIR}/tests/python/test_hf_models.py $<TARGET_FILE:eqsat-run> ${model}
                     ${CMAKE_CURRENT_BINARY_DIR}/eqsat_run/hf_gemm --rules ${PROJECT_SOURCE_DIR}/corpus/rules.json
                     --timeout 240 --eqsat-args "--dim batch=8" --expect-op Gemm)
    set_tests_properties(eqsat_run.hf_gemm.bert.${exporter} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
endforeach()
