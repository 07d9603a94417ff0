#!/usr/bin/env python3
"""eqsat-run on every bundled model (corpus/models/*.onnx), checked with ONNX's own tools.

For each model: optimize it with eqsat-run, then
  - the optimized model passes onnx.checker (full check, with shape inference),
  - it declares the same graph inputs and outputs (names, order, element types, shapes),
  - onnxruntime gives the same outputs as for the original on seeded random inputs (within tolerance),
  - opaque operators (outside the vocabulary) are still there with their attributes (with --check such a
    model exits 4, "--check could not run", and writes the input unchanged, which is checked; the optimized
    model is then made with --no-check and onnxruntime alone decides),
  - the --report JSON has the documented fields.
Run by ctest with the project's .venv (tools/setup-python.sh); exits 77 (skipped) without onnxruntime.

Usage: test_models.py EQSAT_RUN MODELS_DIR RULES WORK_DIR [MODEL ...] [--weights-as-inputs] [--no-eval-check]
                      [--eqsat-args "ARG ..."]
  MODEL ...            models to test (default: MODELS_DIR/*.onnx)
  --weights-as-inputs  the first graph input is data, the others are weights (PyTorch exports made with
                       export_params=False, tools/make_torch_models.py): weights of rank >= 2 are fed
                       uniform values of variance 2/fan-in (He), others uniform in [-0.1, 0.1], so that the
                       outputs of deep networks keep a scale near 1 and the tolerance means something
  --no-eval-check      pass --no-check (the reference evaluator is exact but slow on full-size images)
  --eqsat-args "..."   eqsat-run options replacing the default "--cost flops --time-limit 30 --ilp-time-limit 30"
"""
import argparse
import glob
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

REPORT_FIELDS = ["model", "original_cost", "optimized_cost", "speedup", "cost_model", "seconds", "iterations",
                 "enodes", "eclasses", "stop_reason", "rules_used", "extraction", "check"]
RTOL, ATOL = 1e-4, 1e-5  # atol is relative to max(1, largest |output|)
ORT_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}


def io_signature(model):
    def sig(values):
        return [(v.name, v.type.tensor_type.elem_type,
                 [d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]) for v in values]
    inits = {t.name for t in model.graph.initializer}
    return sig([i for i in model.graph.input if i.name not in inits]), sig(model.graph.output)


def run(path, feeds):
    options = ort.SessionOptions()
    # No graph rewriting by onnxruntime: compare the two graphs as written.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def random_feeds(path, seed, weights_as_inputs=False):
    rng = np.random.default_rng(seed)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    # Batch-norm variances must be positive (a model's are): uniform in [0.5, 1.5] (bench/with_weights.py too).
    variances = {n.input[4] for n in onnx.load(path).graph.node if n.op_type == "BatchNormalization" and len(n.input) > 4}
    feeds = {}
    for k, i in enumerate(session.get_inputs()):
        value = rng.uniform(-1, 1, i.shape)
        if weights_as_inputs and k > 0:
            fan_in = int(np.prod(i.shape[1:])) if len(i.shape) >= 2 else 0
            value *= np.sqrt(6.0 / fan_in) if fan_in else 0.1  # uniform(-a, a) has variance a^2 / 3
            if i.name in variances:
                value = rng.uniform(0.5, 1.5, i.shape)
        feeds[i.name] = value.astype(ORT_TYPES[i.type])
    return feeds


DEFAULT_EQSAT_ARGS = ["--cost", "flops", "--time-limit", "30", "--ilp-time-limit", "30"]


def check_model(exe, model_path, rules, work, numeric_check=True, weights_as_inputs=False, eqsat_args=None):
    os.makedirs(work, exist_ok=True)
    name = os.path.splitext(os.path.basename(model_path))[0]
    out, report = os.path.join(work, name + ".opt.onnx"), os.path.join(work, name + ".report.json")
    cmd = ([exe, model_path, "-o", out, "--rules", rules, "--report", report, "-q"] +
           (DEFAULT_EQSAT_ARGS if eqsat_args is None else eqsat_args))
    proc = subprocess.run(cmd + (["--check"] if numeric_check else ["--no-check"]), capture_output=True, text=True)
    failures = []
    # Exit 4: --check could not run, which is right only for a model with operators outside the vocabulary.
    # Then OUT is the input model unchanged (nothing vouches for the optimized one); the optimized model is
    # made again with --no-check, for onnxruntime to judge below.
    check_not_run = (proc.returncode == 4 and numeric_check and "--check could not run" in proc.stderr and
                     os.path.exists(report) and json.load(open(report)).get("opaque_operators", 0) > 0)
    if proc.returncode != 0 and not check_not_run:
        return [f"{name}: eqsat-run exited {proc.returncode}: {proc.stderr.strip()}"]
    if check_not_run:
        if json.load(open(report)).get("written") != "input":
            failures.append(f"{name}: --check could not run, yet the report says OUT is not the input")
        if not onnx.load(model_path, load_external_data=False).graph.initializer or not any(
                t.data_location == onnx.TensorProto.EXTERNAL
                for t in onnx.load(model_path, load_external_data=False).graph.initializer):
            if open(out, "rb").read() != open(model_path, "rb").read():
                failures.append(f"{name}: --check could not run, yet OUT is not the input byte for byte")
        proc = subprocess.run(cmd + ["--no-check"], capture_output=True, text=True)
        if proc.returncode != 0:
            return failures + [f"{name}: eqsat-run --no-check exited {proc.returncode}: {proc.stderr.strip()}"]
    original, optimized = onnx.load(model_path), onnx.load(out)
    # A model that keeps its weights in an external file is written back so: out.onnx + out.onnx.data.
    def external(path):
        return [t.name for t in onnx.load(path, load_external_data=False).graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL]
    if external(model_path):
        locations = {e.value for t in onnx.load(out, load_external_data=False).graph.initializer
                     for e in t.external_data if e.key == "location"}
        if not external(out) or locations != {os.path.basename(out) + ".data"} or not os.path.exists(out + ".data"):
            failures.append(f"{name}: the input keeps external data, the output does not keep it in "
                            f"{os.path.basename(out)}.data (locations {sorted(locations)})")
    try:
        onnx.checker.check_model(optimized, full_check=True)
    except Exception as e:  # onnx raises several types
        failures.append(f"{name}: onnx.checker rejects the optimized model: {e}")
    if io_signature(original) != io_signature(optimized):
        failures.append(f"{name}: inputs/outputs differ: {io_signature(original)} vs {io_signature(optimized)}")
    if [o.version for o in original.opset_import] != [o.version for o in optimized.opset_import]:
        failures.append(f"{name}: opset imports differ")
    known = {"Conv", "Relu", "Add", "Sub", "Mul", "Div", "MatMul", "Gemm", "Sigmoid", "Tanh", "MaxPool",
             "AveragePool", "GlobalAveragePool", "Concat", "Split", "Slice", "Transpose", "Reshape", "Flatten",
             "BatchNormalization", "Softmax", "Identity", "Dropout", "Constant", "Expand", "Pad", "Erf", "Clip",
             "Squeeze", "Unsqueeze", "Sqrt", "ReduceMean", "LayerNormalization",
             # Gelu (opset 20) is gelu or gelu_tanh, the latter written as its decomposition.
             "Gelu",
             # Pow with exponent 2, 0.5 or 1 becomes Mul, Sqrt or nothing; other exponents stay opaque.
             "Pow"}

    def opaque(m):
        # Integer shape arithmetic (Shape, Gather, ... on shapes) is folded into constants by the importer.
        g = onnx.shape_inference.infer_shapes(m).graph
        types = {v.name: v.type.tensor_type.elem_type for v in list(g.value_info) + list(g.output)}
        integer = (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
        return sorted((n.op_type, str(n.attribute)) for n in m.graph.node if n.op_type not in known and
                      not all(types.get(o) in integer for o in n.output))
    if opaque(original) != opaque(optimized):
        failures.append(f"{name}: opaque operators changed: {opaque(original)} vs {opaque(optimized)}")
    feeds = random_feeds(model_path, seed=7, weights_as_inputs=weights_as_inputs)
    want, got = run(model_path, feeds), run(out, feeds)
    for k, (w, g) in enumerate(zip(want, got)):
        # Reassociated sums round differently: the absolute tolerance scales with the output's magnitude.
        atol = ATOL * max(1.0, float(np.max(np.abs(w)))) if w.size else ATOL
        if not np.all(np.isfinite(w)):
            failures.append(f"{name}: output {k} of the original is not finite on the random inputs")
        elif w.shape != g.shape or not np.allclose(g, w, rtol=RTOL, atol=atol):
            diff = np.max(np.abs(g - w)) if w.shape == g.shape else "shape"
            failures.append(f"{name}: output {k} differs from the original's (max abs diff {diff}, "
                            f"largest output {np.max(np.abs(w)):.3g})")
    with open(report) as f:
        data = json.load(f)
    # The check's fields are in the first run's report; the --no-check run (made when it could not run) has none.
    missing = [k for k in REPORT_FIELDS if k not in data and ((numeric_check and not check_not_run) or k != "check")]
    if missing:
        failures.append(f"{name}: report lacks {missing}")
    nodes = (len(original.graph.node), len(optimized.graph.node))
    scale = max(float(np.max(np.abs(w))) for w in want)
    print(f"{name}: ok ({nodes[0]} -> {nodes[1]} nodes, speedup {data.get('speedup', 0):.3f}, "
          f"largest output {scale:.3g}, rules {data.get('rules_used')})" if not failures else f"{name}: FAILED")
    return failures


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("exe")
    parser.add_argument("models_dir")
    parser.add_argument("rules")
    parser.add_argument("work")
    parser.add_argument("models", nargs="*")
    parser.add_argument("--weights-as-inputs", action="store_true")
    parser.add_argument("--no-eval-check", action="store_true")
    parser.add_argument("--eqsat-args")
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    models = a.models or sorted(glob.glob(os.path.join(a.models_dir, "*.onnx")))
    if not models:
        print(f"no models in {a.models_dir}")
        return 1
    eqsat_args = a.eqsat_args.split() if a.eqsat_args is not None else None
    failures = []
    for m in models:
        failures += check_model(a.exe, m, a.rules, a.work, numeric_check=not a.no_eval_check,
                                weights_as_inputs=a.weights_as_inputs, eqsat_args=eqsat_args)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
