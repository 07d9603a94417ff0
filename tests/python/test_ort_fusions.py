#!/usr/bin/env python3
"""eqsat-run's ONNX export keeps onnxruntime's own fusions: the model re-exported unchanged (eqsat-run --export)
and the original, both optimized by onnxruntime at ORT_ENABLE_ALL, must give the same operators (same count of
each op type). A layer norm written as Mul(d, d) instead of Pow(d, 2), or a GELU as x * 0.7071 instead of
x / sqrt 2, is not fused by onnxruntime and ran 17% slower (docs/benchmarks-measured.md).

Usage: test_ort_fusions.py EQSAT_RUN MODEL.onnx WORK_DIR
"""
import collections
import os
import subprocess
import sys

import onnx
import onnxruntime as ort


def fused_ops(path, work):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    out = os.path.join(work, os.path.basename(path) + ".ort.onnx")
    options.optimized_model_filepath = out
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return collections.Counter(n.op_type for n in onnx.load(out).graph.node)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    exe, model, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    exported = os.path.join(work, "roundtrip.onnx")
    subprocess.run([exe, model, "--export", exported, "-q"], check=True)
    a, b = fused_ops(model, work), fused_ops(exported, work)
    print(f"original at ORT_ENABLE_ALL: {sum(a.values())} nodes {sorted(a.items())}")
    print(f"re-export at ORT_ENABLE_ALL: {sum(b.values())} nodes {sorted(b.items())}")
    if a != b:
        print("FAILED: onnxruntime fuses the re-exported model differently", file=sys.stderr)
        return 1
    print("ok: the same fused operators")
    return 0


if __name__ == "__main__":
    sys.exit(main())
