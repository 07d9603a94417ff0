#!/usr/bin/env python3
"""fp16 and bf16 models through eqsat-run (issue 45, item 2): terms of the vocabulary, written in their type.

Builds a small decoder-like block in DTYPE (float16 or bfloat16) with onnx.helper, weights in external data:
two MatMuls in a row (a product the optimizer folds into one weight, written back in DTYPE), a bias, an RMSNorm
computed in float32 between two Casts (the mixed-precision pattern exporters write), a scale weight, Softmax
and a residual Add, with a symbolic batch. Then:
  - eqsat-run MODEL -o OUT --check --report R must exit 0 with the check passed;
  - no operator may stay opaque (before issue 45 every DTYPE operator was: "is not a float tensor"; the two
    Casts were until the vocabulary had `cast`, the Reciprocal until it had `reciprocal`), and the optimized graph
    must be written with the two MatMuls folded into one weight product that the exporter made, stored in DTYPE,
    and the two Casts written again as Casts to float32 and back to DTYPE;
  - the written file passes ONNX's strict type and shape inference (an initializer of the wrong float type
    beside a DTYPE operand fails it), and the declared input and output keep DTYPE;
  - onnxruntime (no graph optimizations) runs the original and the written file at batch 1 and 3 and the outputs
    agree within rtol = atol = 1e-2 (times the output's largest magnitude) for float16. onnxruntime's CPU provider
    has no bfloat16 MatMul kernel: for bfloat16 that comparison is reported as skipped when the original does not
    load, and eqsat-run's own --check (every value read into double) is what vouches for the file.
Exits 77 (skipped) without numpy, onnx and onnxruntime.

Usage: test_fp16.py EQSAT_RUN OUTDIR [--dtype fp16|bf16] [--rules RULES]
"""
import argparse
import json
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: {e} (run tools/setup-python.sh)")
    sys.exit(77)

TYPES = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
SEQ, HIDDEN, INNER = 8, 16, 32
TOL = 1e-2


def bf16_tensor(name, values):
    """A BFLOAT16 initializer (numpy has no bfloat16: the upper halves of the float32 bits, rounded to nearest)."""
    bits = values.astype(np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.BFLOAT16
    t.dims.extend(values.shape)
    t.raw_data = rounded.tobytes()
    return t


def tensor(name, values, elem):
    if elem == TensorProto.FLOAT16:
        return numpy_helper.from_array(values.astype(np.float16), name)
    if elem == TensorProto.BFLOAT16:
        return bf16_tensor(name, values)
    return numpy_helper.from_array(values.astype(np.float32), name)


def make_model(elem, path):
    rng = np.random.default_rng(45)
    inits = [
        tensor("w1", 0.25 * rng.standard_normal((HIDDEN, INNER)), elem),
        tensor("w2", 0.25 * rng.standard_normal((INNER, HIDDEN)), elem),
        tensor("bias", 0.1 * rng.standard_normal((HIDDEN,)), elem),
        tensor("gamma", 1 + 0.1 * rng.standard_normal((HIDDEN,)), elem),
        tensor("eps", np.array(1e-6), TensorProto.FLOAT),
        tensor("two", np.array(2.0), elem),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="mm1"),
        helper.make_node("MatMul", ["h1", "w2"], ["h2"], name="mm2"),
        helper.make_node("Add", ["h2", "bias"], ["h3"]),
        # RMSNorm in float32, as exporters write it for fp16 models.
        helper.make_node("Cast", ["h3"], ["h3f"], name="to_float", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["h3f", "h3f"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        helper.make_node("Reciprocal", ["rms"], ["inv"], name="reciprocal"),
        helper.make_node("Mul", ["h3f", "inv"], ["normf"]),
        helper.make_node("Cast", ["normf"], ["norm"], name="to_dtype", to=elem),
        helper.make_node("Mul", ["norm", "gamma"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
        helper.make_node("Mul", ["x", "two"], ["x2"]),
        helper.make_node("Add", ["probs", "x2"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "fp16_block", [helper.make_tensor_value_info("x", elem, ["batch", SEQ, HIDDEN])],
                              [helper.make_tensor_value_info("y", elem, ["batch", SEQ, HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location=os.path.basename(path) + ".data", size_threshold=0)
    return model


def session(path):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("eqsat_run")
    parser.add_argument("outdir")
    parser.add_argument("--dtype", choices=sorted(TYPES), default="fp16")
    parser.add_argument("--rules")
    a = parser.parse_args()
    elem = TYPES[a.dtype]
    os.makedirs(a.outdir, exist_ok=True)
    src = os.path.join(a.outdir, f"block-{a.dtype}.onnx")
    out = os.path.join(a.outdir, f"block-{a.dtype}.opt.onnx")
    report_path = os.path.join(a.outdir, f"block-{a.dtype}.report.json")
    for stale in (src, src + ".data", out, out + ".data", report_path):
        if os.path.exists(stale):
            os.remove(stale)
    make_model(elem, src)

    cmd = [a.eqsat_run, src, "-o", out, "--check", "--report", report_path]
    if a.rules:
        cmd += ["--rules", a.rules]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    sys.stderr.write(proc.stderr[-4000:])
    failures = []
    if proc.returncode != 0:
        print(f"FAIL {a.dtype}: eqsat-run exited {proc.returncode} (expected 0)")
        return 1
    with open(report_path) as f:
        report = json.load(f)
    opaque = report.get("opaque_operators")
    if opaque != 0:
        failures.append(f"{opaque} opaque operators, expected 0; notes: "
                        f"{[l for l in proc.stderr.splitlines() if 'stays opaque' in l][:4]}")
    if not report.get("check", {}).get("passed"):
        failures.append(f"check did not pass: {report.get('check')}")
    if report.get("written") != "export":
        failures.append(f"written: {report.get('written')!r}, expected 'export' (the optimized model)")

    written = onnx.load(out, load_external_data=False)
    own = {"mm1", "mm2", "to_float", "reciprocal", "to_dtype"}
    kept = sorted(n.name for n in written.graph.node if n.name in own)
    if kept:
        failures.append(f"nodes of the file kept as they were: {kept}, expected none (every node is a term)")
    casts = sorted(next(a.i for a in n.attribute if a.name == "to") for n in written.graph.node if n.op_type == "Cast")
    if casts != sorted([TensorProto.FLOAT, elem]):
        failures.append(f"Casts written to types {casts}, expected one to float32 and one back to {elem}")
    matmuls = [n for n in written.graph.node if n.op_type == "MatMul"]
    inits = {t.name: t for t in written.graph.initializer}
    folded = [inits[n.input[1]] for n in matmuls if n.input[1] in inits and n.input[1] not in ("w1", "w2")]
    if len(matmuls) != 1 or len(folded) != 1 or folded[0].data_type != elem or list(folded[0].dims) != [HIDDEN, HIDDEN]:
        failures.append(f"expected one MatMul with the folded {HIDDEN}x{HIDDEN} weight product in type {elem}: "
                        f"{[(t.name, t.data_type, list(t.dims)) for t in folded]}, {len(matmuls)} MatMuls")
    for v in list(written.graph.input) + list(written.graph.output):
        if v.type.tensor_type.elem_type != elem:
            failures.append(f"declared {v.name} has type {v.type.tensor_type.elem_type}, expected {elem}")
    try:
        onnx.shape_inference.infer_shapes(onnx.load(out), check_type=True, strict_mode=True)
    except Exception as e:
        failures.append(f"the written file fails ONNX's strict type inference: {str(e).splitlines()[0][:300]}")

    diffs = []
    try:
        reference = session(src)
    except Exception as e:  # onnxruntime's CPU provider lacks the type's kernels (bfloat16 MatMul)
        reference = None
        diffs.append(f"onnxruntime comparison skipped: the original does not load ({str(e).splitlines()[0][:120]})")
    if reference is not None:
        candidate = session(out)
        rng = np.random.default_rng(7)
        for batch in (1, 3):
            x = rng.uniform(-1, 1, (batch, SEQ, HIDDEN)).astype(np.float16)
            want = reference.run(None, {"x": x})[0].astype(np.float64)
            got = candidate.run(None, {"x": x})[0].astype(np.float64)
            diff = np.abs(got - want)
            bound = TOL * np.abs(want) + TOL * max(1.0, float(np.abs(want).max()))
            diffs.append(f"batch {batch}: max |diff| {float(diff.max()):.3g}")
            if got.shape != want.shape or not np.all(diff <= bound):
                failures.append(f"batch {batch}: outputs differ (max |diff| {float(diff.max()):.3g})")
    ops = report.get("operators", {})
    print(f"{'FAIL' if failures else 'ok'} {a.dtype}: operators {ops.get('original')} -> {ops.get('optimized')}, "
          f"opaque {opaque}, written {report.get('written')}, check max abs diff "
          f"{report.get('check', {}).get('max_abs_diff')}; {'; '.join(diffs)}")
    for f in failures:
        print(f"  FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
