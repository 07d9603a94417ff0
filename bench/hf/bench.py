#!/usr/bin/env python3
"""Latency original vs optimized in onnxruntime CPU, ORT_ENABLE_ALL, 1 intra-op thread, (batch, seq) = (1, 128)
(vision/Whisper: batch 1). Interleaved A B A' per iteration (A' = a second session of the original: A/A noise).
Per pass: median of RUNS runs per model; PASSES passes. Prints speedup = median(A)/median(B) and A/A = median(A)/median(A')."""
import os, sys, json, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))
import numpy as np, onnx, onnxruntime as ort
from test_hf_models import feeds_for, shapes

orig_path, opt_path = sys.argv[1], sys.argv[2]
PASSES = int(sys.argv[3]) if len(sys.argv) > 3 else 5
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 15

def sess(p):
    o = ort.SessionOptions()
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    o.log_severity_level = 3
    return ort.InferenceSession(p, o, providers=["CPUExecutionProvider"])

original = onnx.load(orig_path, load_external_data=False)
b, s = shapes(original, [128, 64])[0]
feeds = feeds_for(original, b, s, seed=1000)
A, B, A2 = sess(orig_path), sess(opt_path), sess(orig_path)
ra, rb = A.run(None, feeds), B.run(None, feeds)
maxdiff = max(float(np.abs(x.astype(np.float64) - y).max()) for x, y in zip(ra, rb))
for _ in range(3):
    for m in (A, B, A2): m.run(None, feeds)
passes = []
for p in range(PASSES):
    t = {"A": [], "B": [], "A2": []}
    for i in range(RUNS):
        for k, m in (("A", A), ("B", B), ("A2", A2)):
            s0 = time.perf_counter(); m.run(None, feeds); t[k].append(time.perf_counter() - s0)
    med = {k: float(np.median(v)) for k, v in t.items()}
    passes.append({"median_ms": {k: v * 1e3 for k, v in med.items()}, "speedup": med["A"] / med["B"], "aa": med["A"] / med["A2"]})
    print(json.dumps(passes[-1]), file=sys.stderr, flush=True)
sp = [x["speedup"] for x in passes]; aa = [x["aa"] for x in passes]
print(json.dumps({"shape": [b, s], "enable_all_maxdiff": maxdiff, "passes": passes,
                  "speedup_median": float(np.median(sp)), "speedup_min": min(sp), "speedup_max": max(sp),
                  "aa_median": float(np.median(aa)), "aa_min": min(aa), "aa_max": max(aa)}))
