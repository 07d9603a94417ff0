#!/usr/bin/env python3
"""Issue 42's output-side repros (copied from ../shared/bugs/turn3/ into tests/python/data/), run with
eqsat-run's defaults (the numerical check on), each with its expected behaviour:

  export-concat-axis.onnx  a constant that repeats along every axis, ReduceMean(keepdims=0), Div by a 0-d input,
                           Add of a [1] input, Concat on axis 2. The export wrote the Div 0-d (both operands in
                           their lean, broadcast-free forms), so the Concat's axis was out of range: exit 3,
                           "the optimized model does not read back". Now: exit 0.
  check-false-alarm.onnx   MatMul chains folded into one weight product (rg-*-matmul-matmul) at unk__1=3: the
                           check at unk__1=1 rejected the reordered float32 sum (an element near 0.005 among
                           values near 20, off by 2e-6). Now: exit 0, and the optimized model is written.

And a rejected optimization of a model with external data (a deliberately wrong rule): exit 5, the input
written with its data in OUT.data, equal to the original in onnxruntime.

For each repro: exit 0, the report says the check passed, the written file passes onnx.checker and gives the
original's outputs in onnxruntime at two values of each symbolic dimension (or two input draws).

Usage: test_issue42_repros.py EQSAT_RUN DATA_DIR WORK_DIR. Exits 77 (skipped) without numpy/onnx/onnxruntime.
"""
import json
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: {e} (run tools/setup-python.sh)")
    sys.exit(77)

# (model, eqsat-run options, the two sizes of its symbolic dimension, what the report must say was written)
CASES = [
    ("export-concat-axis.onnx", ["--cost", "analytical:cpu-ort"], {}, None),
    ("check-false-alarm.onnx", ["--dim", "unk__1=3"], {"unk__1": (3, 1)}, "export"),
]


def feeds(session, dims, size_index, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for i in session.get_inputs():
        shape = [dims[d][size_index] if isinstance(d, str) else d for d in i.shape]
        out[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
    return out


def compare(name, original, written, dims):
    failures = []
    a = ort.InferenceSession(original, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(written, providers=["CPUExecutionProvider"])
    for k in range(2):  # two values of each symbolic dimension; two input draws without one
        x = feeds(a, dims, k, seed=11 + k)
        for n, (w, g) in enumerate(zip(a.run(None, x), b.run(None, x))):
            atol = 1e-5 * max(1.0, float(np.max(np.abs(w))))
            if w.shape != g.shape or not np.allclose(g, w, rtol=1e-4, atol=atol):
                failures.append(f"{name}: output {n} differs from the original's at draw {k}")
        print(f"{name}: draw {k} ({ {d: v[k] for d, v in dims.items()} }): same outputs in onnxruntime")
    return failures


def rejected_external(exe, data, work):
    """A wrong rule (tests/data/wrong_rule.json) on a model with external data: exit 5, and the input written
    again with its data beside the output, computing what the input does in onnxruntime."""
    rules = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "wrong_rule.json")
    out = os.path.join(work, "external_rejected.onnx")
    proc = subprocess.run([exe, os.path.join(data, "external_data.onnx"), "--rules", rules, "--cost", "flops",
                           "-o", out], capture_output=True, text=True)
    if proc.returncode != 5:
        return [f"external_data.onnx with a wrong rule: exit {proc.returncode}, expected 5: {proc.stderr.strip()}"]
    return compare("external_data.onnx (rejected)", os.path.join(data, "external_data.onnx"), out, {})


def optimized_external(exe, data, work):
    """An optimized model whose weights stay in the input's data file while eqsat-run runs (issue 45): the written
    file refers to its own data file only, which holds the weights copied over, and computes what the input does."""
    rules = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules_small.json")
    out = os.path.join(work, "external_optimized.onnx")
    proc = subprocess.run([exe, os.path.join(data, "external_data.onnx"), "--rules", rules, "--cost", "flops",
                           "-o", out], capture_output=True, text=True)
    if proc.returncode != 0 or "check: not needed" in proc.stderr:
        return [f"external_data.onnx optimized: exit {proc.returncode}, expected 0 with an optimized file: "
                f"{proc.stderr.strip()}"]
    model = onnx.load(out, load_external_data=False)
    locations = {e.value for t in model.graph.initializer for e in t.external_data if e.key == "location"}
    if locations != {"external_optimized.onnx.data"}:
        return [f"external_data.onnx optimized: the written file refers to {locations}, not its own data file"]
    return compare("external_data.onnx (optimized)", os.path.join(data, "external_data.onnx"), out, {})


def main():
    exe, data, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = []
    for model, args, dims, written in CASES:
        source = os.path.join(data, model)
        out, report = os.path.join(work, model.replace(".onnx", ".opt.onnx")), os.path.join(work, model + ".json")
        for f in (out, report):
            if os.path.exists(f):
                os.remove(f)
        proc = subprocess.run([exe, source, "-o", out, "--report", report] + args, capture_output=True, text=True)
        print(proc.stderr)
        if proc.returncode != 0:
            failures.append(f"{model}: eqsat-run exited {proc.returncode}, expected 0")
            continue
        with open(report) as f:
            r = json.load(f)
        if not r.get("check", {}).get("passed") or r.get("rejected"):
            failures.append(f"{model}: the report does not say the check passed: {r.get('check')}")
        if written and r.get("written") != written:
            failures.append(f"{model}: the report says '{r.get('written')}' was written, expected '{written}'")
        try:
            onnx.checker.check_model(onnx.load(out), full_check=True)
        except Exception as e:  # onnx raises several types
            failures.append(f"{model}: onnx.checker rejects the written model: {e}")
        failures += compare(model, source, out, dims)
    failures += rejected_external(exe, data, work)
    failures += optimized_external(exe, data, work)
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
