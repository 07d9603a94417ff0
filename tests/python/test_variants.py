#!/usr/bin/env python3
"""A real PyTorch export in the forms users bring it, through eqsat-run: every form gives the same result.

MODEL is an export with a symbolic batch dimension `batch` at opset 17 (corpus/models/torch/opset17-dynamic/,
tools/make_torch_models.py; weights are graph inputs there). Its weights become seeded random initializers
(bench/with_weights.py: the values a user's model has, so that weight-only rewrites count as they do for
them), and from that model the variants are made with onnx's own tools:
  opset17   as exported,
  opset18   onnx.version_converter to opset 18 (ReduceMean and Pad take their axes as inputs, ...),
  opset21   onnx.version_converter to opset 21,
  external  opset 17 with every tensor in an external data file (onnx.save_model save_as_external_data).
Each variant is optimized with `--dim batch=1`, and then:
  - eqsat-run exits 0 and the optimized model passes onnx.checker (full check) at the variant's opset,
  - an external-data input gives an external-data output (OUT.onnx + OUT.onnx.data),
  - onnxruntime gives the original's outputs at batch 1 AND at batch 2 (a model fixed to the size it was
    optimized at fails here),
  - the predicted speedup and the rules used are the same for every variant.
With --fixed FIXED.onnx (the opset-13 fixed-shape export of the same network, corpus/models/torch/) that
export must give the same rules and speedup (to 0.1 point: shape arithmetic differs between the two exports)
too: a symbolic batch must not cost an optimization.

Usage: test_variants.py EQSAT_RUN MODEL RULES WORK_DIR [--variants opset17,opset18,...] [--eqsat-args "..."]
Exits 77 (skipped) without numpy/onnx/onnxruntime (tools/setup-python.sh).
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
    from onnx import version_converter
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: {e} (run tools/setup-python.sh)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL, ATOL = 1e-4, 1e-5  # atol is relative to max(1, largest |output|)
ALL_VARIANTS = ["opset17", "opset18", "opset21", "external"]


def make_variant(with_weights, variant, path):
    model = onnx.load(with_weights)
    if variant in ("opset18", "opset21"):
        model = version_converter.convert_version(model, int(variant[5:]))
    if variant == "external":
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data", size_threshold=0)
    else:
        onnx.save(model, path)


def session(path):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graphs as written
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def feeds_at(model, batch, seed):
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        shape = [batch if d.dim_param == "batch" else d.dim_value for d in v.type.tensor_type.shape.dim]
        feeds[v.name] = rng.uniform(-1, 1, shape).astype(np.float32)
    return feeds


def check_variant(exe, rules, work, variant, source, eqsat_args):
    name = os.path.splitext(os.path.basename(source))[0]
    out, report = os.path.join(work, f"{name}.{variant}.opt.onnx"), os.path.join(work, f"{name}.{variant}.json")
    for f in (out, out + ".data", report):
        if os.path.exists(f):
            os.remove(f)
    cmd = [exe, source, "--dim", "batch=1", "-o", out, "--rules", rules, "--report", report, "-q"] + eqsat_args
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, [f"{variant}: eqsat-run exited {proc.returncode}: {proc.stderr.strip()}"]
    failures = []
    original, optimized = onnx.load(source), onnx.load(out)
    try:
        onnx.checker.check_model(out, full_check=True)  # by path: no copy of a large model
    except Exception as e:  # onnx raises several types
        failures.append(f"{variant}: onnx.checker rejects the optimized model: {e}")
    if [o.version for o in original.opset_import] != [o.version for o in optimized.opset_import]:
        failures.append(f"{variant}: opset imports differ")
    if variant == "external" and not os.path.exists(out + ".data"):
        failures.append(f"{variant}: the input keeps external data, the output has no {os.path.basename(out)}.data")
    want_session = session(source)
    try:
        got_session = session(out)
    except Exception as e:  # onnxruntime raises several types
        return None, failures + [f"{variant}: onnxruntime does not load the optimized model: {e}"]
    for batch in (1, 2):
        feeds = feeds_at(original, batch, seed=batch)
        want = want_session.run(None, feeds)
        try:
            got = got_session.run(None, feeds)
        except Exception as e:  # onnxruntime raises several types
            failures.append(f"{variant}: the optimized model does not run at batch {batch}: {e}")
            continue
        for k, (w, g) in enumerate(zip(want, got)):
            atol = ATOL * max(1.0, float(np.max(np.abs(w))))
            if not np.all(np.isfinite(w)):
                failures.append(f"{variant}: output {k} of the original is not finite at batch {batch}")
            elif w.shape != g.shape or not np.allclose(g, w, rtol=RTOL, atol=atol):
                diff = np.max(np.abs(g - w)) if w.shape == g.shape else f"shape {g.shape} vs {w.shape}"
                failures.append(f"{variant}: output {k} differs from the original's at batch {batch} ({diff})")
    with open(report) as f:
        data = json.load(f)
    result = (round(data["speedup"], 6), sorted(data["rules_used"].items()) if isinstance(data["rules_used"], dict)
              else data["rules_used"])
    print(f"{name} {variant}: {len(original.graph.node)} -> {len(optimized.graph.node)} nodes, speedup "
          f"{data['speedup']:.4f}, opaque {data.get('opaque_operators')}, rules {data['rules_used']}"
          + (f"; kept the original" if data.get("kept_original") else ""))
    return result, failures


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("exe")
    parser.add_argument("model")
    parser.add_argument("rules")
    parser.add_argument("work")
    parser.add_argument("--variants", default=",".join(ALL_VARIANTS))
    parser.add_argument("--fixed")
    parser.add_argument("--eqsat-args", default="")
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    name = os.path.splitext(os.path.basename(a.model))[0]
    with_weights = os.path.join(a.work, name + ".weights.onnx")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "with_weights.py"), a.model, with_weights], check=True)
    eqsat_args = a.eqsat_args.split()
    failures, results = [], {}
    for variant in a.variants.split(","):
        if variant not in ALL_VARIANTS:
            raise SystemExit(f"test_variants: unknown variant '{variant}' (known: {', '.join(ALL_VARIANTS)})")
        source = os.path.join(a.work, f"{name}.{variant}.onnx")
        make_variant(with_weights, variant, source)
        result, f = check_variant(a.exe, a.rules, a.work, variant, source, eqsat_args)
        failures += f
        if result is not None:
            results[variant] = result
    if len(set(map(repr, results.values()))) > 1:
        failures.append(f"the variants give different results: {results}")
    if a.fixed:
        fixed_w = os.path.join(a.work, name + ".fixed.onnx")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "with_weights.py"), a.fixed, fixed_w], check=True)
        report = os.path.join(a.work, name + ".fixed.json")
        subprocess.run([a.exe, fixed_w, "-q", "--rules", a.rules, "--report", report] + eqsat_args, check=True)
        with open(report) as f:
            data = json.load(f)
        fixed = (round(data["speedup"], 6), sorted(data["rules_used"].items()) if isinstance(data["rules_used"], dict)
                 else data["rules_used"])
        print(f"{name} opset 13, fixed shapes: speedup {data['speedup']:.4f}, rules {data['rules_used']}")
        for variant, result in results.items():
            if (round(result[0], 3), result[1]) != (round(fixed[0], 3), fixed[1]):
                failures.append(f"{variant} gives {result}, the fixed-shape export {fixed}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
