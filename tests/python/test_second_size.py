#!/usr/bin/env python3
"""eqsat-run --check at the second batch size agrees with onnxruntime.

A model with a symbolic batch and a Flatten (tests/python/data/flatten_batch.onnx) is optimized at batch 1
with --check. The check also runs at batch 2 (the optimized model exported and imported there); its verdict
must be onnxruntime's on the optimized file (made again with --no-check, which writes it unchecked): it runs
at batch 2 and gives the original's outputs, or it does not. Whatever the exporter makes of the batch
dimension, the test stays meaningful: it fails when --check passes a model that onnxruntime rejects or
computes differently at batch 2, or fails one that works there. A failed check must exit 5 and leave the
input model, byte for byte, at the output path; so must a run that rewrites nothing (the check is then not
needed, and onnxruntime must still run the file at batch 2).

Usage: test_second_size.py EQSAT_RUN MODEL RULES WORK_DIR. Exits 77 (skipped) without onnxruntime.
"""
import json
import os
import subprocess
import sys

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: {e} (run tools/setup-python.sh)")
    sys.exit(77)


def run(path, x):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def main():
    exe, model, rules, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    out, report = os.path.join(work, "flatten_batch.opt.onnx"), os.path.join(work, "flatten_batch.json")
    for f in (out, report):
        if os.path.exists(f):
            os.remove(f)
    args = [exe, model, "--dim", "batch=1", "--rules", rules, "--cost", "flops", "-o", out]
    proc = subprocess.run(args + ["--check", "--report", report], capture_output=True, text=True)
    print(proc.stderr)
    with open(report) as f:
        check = json.load(f)["check"]
    sizes = check.get("sizes", [])
    failures = []
    if check.get("not_needed"):
        # Nothing rewritten: the output is the input itself, which needs no check at any size.
        if open(out, "rb").read() != open(model, "rb").read() or proc.returncode != 0:
            failures.append(f"check not needed ({check['not_needed']}), yet the output differs from the input "
                            f"or eqsat-run exited {proc.returncode}")
        sizes = [{"dim": "batch", "value": 2, "evaluated": True, "passed": True}]
    if [(s["dim"], s["value"], s["evaluated"]) for s in sizes] != [("batch", 2, True)]:
        failures.append(f"expected one evaluated check at batch=2, report has {sizes}")
    verdict = bool(sizes) and sizes[0]["passed"]
    if not verdict and open(out, "rb").read() != open(model, "rb").read():
        failures.append("the check failed, yet the output is not the input model byte for byte")
    # The optimized model itself, unchecked, for onnxruntime's verdict.
    unchecked = subprocess.run(args + ["--no-check"], capture_output=True, text=True)
    if unchecked.returncode != 0:
        failures.append(f"eqsat-run --no-check exited {unchecked.returncode}: {unchecked.stderr.strip()}")
    x = np.random.default_rng(3).uniform(-1, 1, (2, 3, 6, 6)).astype(np.float32)
    want = run(model, x)
    try:
        got = run(out, x)
        ort_ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        ort_says = f"runs at batch 2, {'same' if ort_ok else 'other'} outputs"
    except Exception as e:  # onnxruntime raises several types
        ort_ok, ort_says = False, f"fails at batch 2 ({str(e)[:120]})"
    print(f"onnxruntime: the optimized model {ort_says}; --check at batch=2: {'passed' if verdict else 'failed'}")
    if verdict != ort_ok:
        failures.append(f"--check at batch=2 {'passed' if verdict else 'failed'}, onnxruntime: {ort_says}")
    if proc.returncode != (0 if ort_ok else 5):
        failures.append(f"eqsat-run exited {proc.returncode}, expected {0 if ort_ok else 5}")
    if not ort_ok and "batch=2" not in proc.stderr:
        failures.append("the failure message does not name batch=2")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
