#!/usr/bin/env python3
"""eqsat-run on a Hugging Face transformers export (tools/make_hf_models.py), checked in onnxruntime (issue 43).

For MODEL:
  - eqsat-run MODEL -o OUTDIR/NAME.opt.onnx --report OUTDIR/NAME.report.json, with no --dim and the default
    check (on, not required), must exit 0;
  - the written file and the original are run in onnxruntime (no graph optimizations: the graphs as written) at
    four shapes: (batch, seq) = (1, S1), (2, S1), (1, S2), (2, S2) for text models, batch 1 and 2 for models
    whose only symbolic dimension is the batch (vision, Whisper). Inputs are seeded: input_ids uniform in
    [0, vocabulary) (the vocabulary is the row count of the embedding table the ids index), attention_mask ones
    with zeros at the end of every row after the first, float inputs standard normal;
  - the outputs must agree: |optimized - original| <= rtol * |original| + atol * max(1, largest |original|)
    (rtol 1e-3, atol 1e-4), and the written file must run at every shape the original runs at.
One summary line per model: nodes in and out, opaque operators (the report's), exit code, which file was written
(the report's `written`), largest difference per shape.
Run by ctest with the project's .venv (tools/setup-python.sh; torch is not needed); exits 77 (skipped) without
onnxruntime.

Usage: test_hf_models.py EQSAT_RUN MODEL OUTDIR [--rules RULES] [--seq S1,S2] [--timeout SECONDS]
                         [--eqsat-args "ARG ..."] [--expect-op OP]
  --rules        rule corpus (default: eqsat-run's own default)
  --seq          the two sequence lengths (default 16,8; the full-size models: 128,64)
  --eqsat-args   further eqsat-run options, e.g. "--node-limit 10000"
  --expect-op    the written file must hold a node of this ONNX type (a form the run is meant to exercise)
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: {e} (run tools/setup-python.sh)")
    sys.exit(77)

RTOL, ATOL = 1e-3, 1e-4
NUMPY_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64,
               onnx.TensorProto.INT32: np.int32, onnx.TensorProto.BOOL: np.bool_}


def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def vocabulary(model, input_name):
    """Rows of the embedding table a Gather indexes with input_name (directly or through a Cast)."""
    inits = {t.name: t for t in model.graph.initializer}
    names = {input_name}
    for node in model.graph.node:  # ids cast to int32 first, as some exports do
        if node.op_type == "Cast" and node.input[0] in names:
            names.update(node.output)
    rows = [inits[n.input[0]].dims[0] for n in model.graph.node
            if n.op_type == "Gather" and len(n.input) > 1 and n.input[1] in names and n.input[0] in inits]
    return min(rows) if rows else 2


def feeds_for(model, batch, seq, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in graph_inputs(model):
        t = value.type.tensor_type
        shape = []
        for axis, d in enumerate(t.shape.dim):
            if d.dim_value:
                shape.append(d.dim_value)
            else:
                shape.append(batch if axis == 0 else seq)
        dtype = NUMPY_TYPES[t.elem_type]
        if value.name == "attention_mask" or "mask" in value.name:
            mask = np.ones(shape, dtype=dtype)
            for b in range(1, shape[0]):
                mask[b, shape[1] - b * (shape[1] // 4):] = 0
            feeds[value.name] = mask
        elif dtype in (np.int64, np.int32):
            feeds[value.name] = rng.integers(0, vocabulary(model, value.name), size=shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[value.name] = np.ones(shape, dtype=dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def session(path):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def shapes(model, seqs):
    """(batch, seq) pairs; seq None when no input has a symbolic dimension beyond the batch."""
    has_seq = any(not d.dim_value for v in graph_inputs(model) for d in list(v.type.tensor_type.shape.dim)[1:])
    if not has_seq:
        return [(1, None), (2, None)]
    return [(b, s) for s in seqs for b in (1, 2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("eqsat_run")
    parser.add_argument("model")
    parser.add_argument("outdir")
    parser.add_argument("--rules")
    parser.add_argument("--seq", default="16,8")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--eqsat-args", default="")
    parser.add_argument("--expect-op", default="")
    a = parser.parse_args()
    seqs = [int(s) for s in a.seq.split(",")]
    os.makedirs(a.outdir, exist_ok=True)
    name = os.path.basename(a.model)
    name = name[:-len(".onnx")] if name.endswith(".onnx") else name
    out = os.path.join(a.outdir, name + ".opt.onnx")
    report_path = os.path.join(a.outdir, name + ".report.json")
    for stale in (out, out + ".data", report_path):
        if os.path.exists(stale):
            os.remove(stale)

    cmd = [a.eqsat_run, a.model, "-o", out, "--report", report_path]
    if a.rules:
        cmd += ["--rules", a.rules]
    cmd += shlex.split(a.eqsat_args)
    print("running:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    start = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        print(f"FAIL {name}: eqsat-run ran past {a.timeout:.0f} s")
        return 1
    seconds = time.time() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-6000:])
        print(f"FAIL {name}: eqsat-run exited {proc.returncode} (expected 0) after {seconds:.1f} s: "
              f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}")
        return 1
    notes = {}
    for line in proc.stderr.splitlines():
        if "stays opaque:" in line:  # "note: node 'N' (OP) stays opaque: REASON": counted by operator and reason
            op = line.split("(", 1)[1].split(")", 1)[0] if "(" in line else "?"
            reason = line.split("stays opaque:", 1)[1].strip()
            if "symbolic input dimensions" in reason:
                reason = "reads a value computed from the symbolic input dimensions"
            elif "is not a float tensor" in reason:
                reason = "output is not a float tensor"
            notes[(op, reason)] = notes.get((op, reason), 0) + 1
        elif "note" in line or "warning" in line:
            print("  eqsat-run:", line.strip())
    for (op, reason), n in sorted(notes.items()):
        print(f"  eqsat-run note: {n} x {op} stays opaque: {reason}")

    report = {}
    if os.path.exists(report_path):
        with open(report_path) as f:
            report = json.load(f)
    original = onnx.load(a.model, load_external_data=False)
    written = onnx.load(out, load_external_data=False)
    failures = []
    if a.expect_op and not any(n.op_type == a.expect_op for n in written.graph.node):
        failures.append(f"the written file has no {a.expect_op} node (written: {report.get('written', '?')})")
    if [o.name for o in written.graph.output] != [o.name for o in original.graph.output]:
        failures.append(f"outputs {[o.name for o in written.graph.output]}, original "
                        f"{[o.name for o in original.graph.output]}")
    if [i.name for i in graph_inputs(written)] != [i.name for i in graph_inputs(original)]:
        failures.append(f"inputs {[i.name for i in graph_inputs(written)]}, original "
                        f"{[i.name for i in graph_inputs(original)]}")

    by_type = report.get("opaque_by_type", {})
    if report and sum(by_type.values()) != report.get("opaque_operators"):
        failures.append(f"opaque_by_type {by_type} does not add up to opaque_operators {report.get('opaque_operators')}")
    if set(by_type) - {n.op_type for n in original.graph.node}:
        failures.append(f"opaque_by_type names types the model does not have: {sorted(set(by_type) - {n.op_type for n in original.graph.node})}")

    reference, candidate = session(a.model), session(out)
    diffs = []
    for k, (batch, seq) in enumerate(shapes(original, seqs)):
        label = f"b{batch}" + (f"s{seq}" if seq else "")
        feeds = feeds_for(original, batch, seq, seed=1000 + k)
        try:
            expected = reference.run(None, feeds)
        except Exception as e:  # the original does not admit this shape: nothing to compare
            diffs.append(f"{label}: original fails ({str(e).splitlines()[0][:80]})")
            continue
        try:
            got = candidate.run(None, feeds)
        except Exception as e:
            failures.append(f"{label}: the written file does not run where the original does: "
                            f"{str(e).splitlines()[0][:300]}")
            diffs.append(f"{label}: FAILS")
            continue
        worst = 0.0
        for e, g, o in zip(expected, got, original.graph.output):
            if e.shape != g.shape:
                failures.append(f"{label}: output {o.name} has shape {g.shape}, original {e.shape}")
                continue
            e64, g64 = e.astype(np.float64), g.astype(np.float64)
            bound = RTOL * np.abs(e64) + ATOL * max(1.0, float(np.abs(e64).max()) if e64.size else 1.0)
            diff = np.abs(g64 - e64)
            worst = max(worst, float(diff.max()) if diff.size else 0.0)
            if not np.all(diff <= bound):
                failures.append(f"{label}: output {o.name} differs: max |diff| {float(diff.max()):.3g}")
        diffs.append(f"{label} {worst:.2g}")

    # Which operators stay opaque: eqsat-run --export writes the imported graph back, opaque nodes under their
    # own names and the vocabulary's under new ones.
    exported = os.path.join(a.outdir, name + ".import.onnx")
    opaque = ""
    try:
        if subprocess.run([a.eqsat_run, a.model, "--export", exported, "-q"], capture_output=True,
                          timeout=a.timeout).returncode == 0:
            own = {n.name for n in original.graph.node}
            counts = {}
            for n in onnx.load(exported, load_external_data=False).graph.node:
                if n.name in own:
                    counts[n.op_type] = counts.get(n.op_type, 0) + 1
            opaque = " (" + " ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) + ")"
    except subprocess.TimeoutExpired:
        pass
    for stale in (exported, exported + ".data"):
        if os.path.exists(stale):
            os.remove(stale)

    operators = report.get("operators", {})
    nodes_in = operators.get("original", len(original.graph.node))
    nodes_out = len(written.graph.node)
    print(f"{'FAIL' if failures else 'ok'} {name}: exit 0, {seconds:.1f} s, nodes {len(original.graph.node)} -> "
          f"{nodes_out} (operators {nodes_in} -> {operators.get('optimized', '?')}), opaque "
          f"{report.get('opaque_operators', '?')}{opaque}, written {report.get('written', '?')}, check "
          f"{'passed' if report.get('check', {}).get('passed') else report.get('check', {}).get('reason', 'n/a')}; "
          f"max diff {', '.join(diffs)}")
    for f in failures:
        print(f"  FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
