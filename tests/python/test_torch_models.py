#!/usr/bin/env python3
"""eqsat-run on PyTorch exports of torchvision ResNet-50, SqueezeNet 1.1, Inception-v3, MobileNet-v2 and a
BERT-style nn.TransformerEncoder: each optimized model must pass onnx.checker and give onnxruntime outputs
equal to the original's (test_models.check_model). The models are exported by export_torch_models.py with
Debian's python3-torch (/usr/bin/python3) into WORK_DIR; nothing large is committed.

PyTorch 1.13 exports the encoder's attention with shape arithmetic (Shape, Gather, Slice on int64 tensors)
that ONNX 1.12 shape inference cannot resolve, so that model is first constant-folded by onnxruntime's basic
graph optimizations (standard ONNX operators only), as onnx-simplifier would.

Usage: test_torch_models.py EQSAT_RUN RULES WORK_DIR [TORCH_PYTHON]   exits 77 without torch or onnxruntime
"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import test_models  # noqa: E402  (exits 77 itself without onnx/onnxruntime)

ort = test_models.ort


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    exe, rules, work = sys.argv[1:4]
    torch_python = sys.argv[4] if len(sys.argv) > 4 else "/usr/bin/python3"
    models_dir = os.path.join(work, "models")
    proc = subprocess.run([torch_python, os.path.join(here, "export_torch_models.py"), models_dir])
    if proc.returncode != 0:
        return proc.returncode  # 77: no torch
    models = [os.path.join(models_dir, m + ".onnx") for m in ("resnet50", "squeezenet1_1", "inception_v3",
                                                              "mobilenet_v2")]
    bert = os.path.join(models_dir, "bert_encoder.onnx")
    folded = os.path.join(models_dir, "bert_encoder.folded.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = folded
    ort.InferenceSession(bert, options, providers=["CPUExecutionProvider"])
    models.append(folded)
    failures = []
    for m in models:
        # The reference evaluator is exact but slow on full-size images: onnxruntime decides here.
        failures += test_models.check_model(exe, m, rules, os.path.join(work, "out"),
                                            numeric_check=os.path.getsize(m) < 1_000_000)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
