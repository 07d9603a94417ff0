#!/usr/bin/env python3
"""Compare original vs written in onnxruntime (ORT_DISABLE_ALL, as tests/python/test_hf_models.py) at 4 shapes."""
import os, sys, json
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))
import numpy as np, onnx
from test_hf_models import feeds_for, session, shapes, RTOL, ATOL

orig_path, out_path = sys.argv[1], sys.argv[2]
original = onnx.load(orig_path, load_external_data=False)
ref, cand = session(orig_path), session(out_path)
res = []
for k, (b, s) in enumerate(shapes(original, [128, 64])):
    label = f"b{b}" + (f"s{s}" if s else "")
    feeds = feeds_for(original, b, s, seed=1000 + k)
    try:
        exp = ref.run(None, feeds)
    except Exception as e:
        res.append({"shape": label, "result": "original fails: " + str(e).splitlines()[0][:200]}); continue
    try:
        got = cand.run(None, feeds)
    except Exception as e:
        res.append({"shape": label, "result": "FAIL: " + str(e).splitlines()[0][:300]}); continue
    worst, ok = 0.0, True
    for e_, g in zip(exp, got):
        if e_.shape != g.shape:
            ok = False; res.append({"shape": label, "result": f"FAIL shape {g.shape} vs {e_.shape}"}); break
        e64, g64 = e_.astype(np.float64), g.astype(np.float64)
        d = np.abs(g64 - e64)
        bound = RTOL * np.abs(e64) + ATOL * max(1.0, float(np.abs(e64).max()))
        worst = max(worst, float(d.max()))
        ok = ok and bool(np.all(d <= bound))
    else:
        res.append({"shape": label, "maxdiff": worst, "within_tol": ok, "result": f"{worst:.2g}" + ("" if ok else " (OUT OF TOL)")})
print(json.dumps(res))
