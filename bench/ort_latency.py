#!/usr/bin/env python3
"""Times an original and an optimized ONNX model side by side in onnxruntime (CPU execution provider).

Method (docs/benchmarks.md, "Measured in onnxruntime"): the same seeded inputs for both models, one intra-op
thread, warm-up runs, then PASSES passes in which the two models alternate run by run (A B A B ...); each pass
gives the median of RUNS runs per model and their ratio optimized/original. Both graph optimization levels
are timed: ORT_ENABLE_ALL (what users get by default) and ORT_DISABLE_ALL (what the graph itself costs).
The outputs of the two models are compared on every configuration; a difference is an error (exit 1).

Weights that arrive as graph inputs (PyTorch exports made with export_params=False) get seeded random values,
the same for both models: the first graph input is data unless --data-inputs names others.

--disable-fusions NAMES turns off onnxruntime's own graph transformers by name (e.g. SkipLayerNormFusion) in both
models, --disable-fusions-optimized NAMES in the optimized one only: `ort_latency.py M.onnx M.onnx
--disable-fusions-optimized SkipLayerNormFusion` measures what that fusion of onnxruntime's gains or costs on M.
onnxruntime ignores names it does not know, so a name that changes neither model's session graph is an error.

Usage: ort_latency.py ORIGINAL OPTIMIZED [--runs 20] [--passes 3] [--min-seconds S] [--seed 1] [--json OUT]
       [--levels all,disable] [--rtol 1e-3] [--atol 1e-4] [--dim NAME=VALUE ...]
       [--disable-fusions NAMES] [--disable-fusions-optimized NAMES]
Prints one line per level and pass; --json writes {"levels": {"all": {"ratios": [...], "median_ratio": r,
"original_ms": [...], "optimized_ms": [...]}, ...}}. Exit 0 on success, 1 if outputs differ, 2 on bad input.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"ort_latency: error: {e} (run tools/setup-python.sh and use .venv/bin/python)", file=sys.stderr)
    sys.exit(2)

LEVELS = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
NP_TYPES = {1: np.float32, 6: np.int32, 7: np.int64, 10: np.float16, 11: np.float64}


def graph_inputs(path):
    model = onnx.load(path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def make_feeds(inputs, seed, dims, data_inputs):
    rng = np.random.default_rng(seed)
    feeds = {}
    for k, vi in enumerate(inputs):
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(dims[d.dim_param])
            else:
                shape.append(1)
        dtype = NP_TYPES.get(tt.elem_type, np.float32)
        is_data = vi.name in data_inputs if data_inputs else k == 0
        if np.issubdtype(dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 2, size=shape).astype(dtype)
        elif is_data or len(shape) < 2:
            scale = 1.0 if is_data else 0.1
            feeds[vi.name] = rng.uniform(-scale, scale, size=shape).astype(dtype)
        else:
            # He-scaled weights keep deep networks' activations near 1, so tolerances mean something.
            fan_in = int(np.prod(shape[1:]))
            bound = float(np.sqrt(6.0 / max(fan_in, 1)))
            feeds[vi.name] = rng.uniform(-bound, bound, size=shape).astype(dtype)
    return feeds


def session(path, level, disabled=(), save_as=None):
    options = ort.SessionOptions()
    options.graph_optimization_level = LEVELS[level]
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    if save_as:
        options.optimized_model_filepath = save_as
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled))


def session_graph(path, disabled, work):
    """The node list onnxruntime runs for `path` at ORT_ENABLE_ALL with `disabled` transformers off."""
    out = os.path.join(work, f"session{len(os.listdir(work))}.onnx")
    ort.set_default_logger_severity(3)  # saving an ORT_ENABLE_ALL graph warns that it is machine-specific: it is
    session(path, "all", disabled, save_as=out)
    return [(n.op_type, tuple(n.input), tuple(n.output)) for n in onnx.load(out, load_external_data=False).graph.node]


def check_fusion_names(paths_and_disabled):
    """Each disabled name must change the session graph of at least one model it applies to: onnxruntime
    accepts unknown names silently, and a typo would time the default graph under another name."""
    with tempfile.TemporaryDirectory() as work:
        names = {n for _, disabled in paths_and_disabled for n in disabled}
        default = {path: session_graph(path, [], work) for path, disabled in paths_and_disabled if disabled}
        for name in sorted(names):
            if not any(name in disabled and session_graph(path, [name], work) != default[path]
                       for path, disabled in paths_and_disabled):
                return f"disabling '{name}' changes neither session graph (not an onnxruntime transformer, or it does not apply to these models)"
    return None


def timed(sess, feeds):
    t = time.perf_counter()
    out = sess.run(None, feeds)
    return (time.perf_counter() - t) * 1e3, out


def compare(a, b, rtol, atol):
    worst = 0.0
    for x, y in zip(a, b):
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            return False, f"shapes differ: {x.shape} vs {y.shape}"
        scale = max(1.0, float(np.max(np.abs(x))) if x.size else 1.0)
        diff = float(np.max(np.abs(x - y))) if x.size else 0.0
        worst = max(worst, diff / scale)
        if not np.allclose(y, x, rtol=rtol, atol=atol * scale):
            return False, f"max abs diff {diff:.3g} (scale {scale:.3g})"
    return True, f"max rel diff {worst:.3g}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("original")
    p.add_argument("optimized")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--min-seconds", type=float, default=0.0,
                   help="raise the runs per pass so that a pass times each model for at least this long (small "
                        "models: a median of 10 runs of 0.3 ms is mostly the noise of a shared machine)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--levels", default="all,disable")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--dim", action="append", default=[], help="NAME=VALUE for a symbolic dimension")
    p.add_argument("--data-inputs", default="", help="comma-separated names of the data inputs (default: the first)")
    p.add_argument("--disable-fusions", default="",
                   help="comma-separated onnxruntime graph transformers to turn off in both models (ORT_ENABLE_ALL)")
    p.add_argument("--disable-fusions-optimized", default="",
                   help="the same, in the optimized model only")
    p.add_argument("--json")
    a = p.parse_args()
    if a.runs < 1 or a.passes < 1:
        print("ort_latency: error: --runs and --passes must be >= 1", file=sys.stderr)
        return 2
    dims = {}
    for d in a.dim:
        name, _, value = d.partition("=")
        if not value.isdigit() or int(value) < 1:
            print(f"ort_latency: error: --dim {d}: expected NAME=POSITIVE_INTEGER", file=sys.stderr)
            return 2
        dims[name] = int(value)
    levels = [l for l in a.levels.split(",") if l]
    for l in levels:
        if l not in LEVELS:
            print(f"ort_latency: error: unknown level '{l}' (all, disable)", file=sys.stderr)
            return 2
    try:
        ins_a, ins_b = graph_inputs(a.original), graph_inputs(a.optimized)
    except Exception as e:  # onnx raises several types for unreadable files
        print(f"ort_latency: error: cannot read the models: {e}", file=sys.stderr)
        return 2
    if [i.name for i in ins_a] != [i.name for i in ins_b]:
        print("ort_latency: error: the two models declare different graph inputs", file=sys.stderr)
        return 2
    both_off = [x for x in a.disable_fusions.split(",") if x]
    disabled = {"original": both_off, "optimized": both_off + [x for x in a.disable_fusions_optimized.split(",") if x]}
    if disabled["optimized"]:
        problem = check_fusion_names([(a.original, disabled["original"]), (a.optimized, disabled["optimized"])])
        if problem:
            print(f"ort_latency: error: {problem}", file=sys.stderr)
            return 2
    data_inputs = set(x for x in a.data_inputs.split(",") if x)
    feeds = make_feeds(ins_a, a.seed, dims, data_inputs)
    result = {"original": a.original, "optimized": a.optimized, "runs": a.runs, "passes": a.passes,
              "threads": 1, "onnxruntime": ort.__version__, "disabled_fusions": disabled, "levels": {}}
    status = 0
    for level in levels:
        # Transformers only run at ORT_ENABLE_ALL; ORT_DISABLE_ALL has none to turn off.
        off = disabled if level == "all" else {"original": [], "optimized": []}
        sa, sb = session(a.original, level, off["original"]), session(a.optimized, level, off["optimized"])
        _, out_a = timed(sa, feeds)
        _, out_b = timed(sb, feeds)
        ok, how = compare(out_a, out_b, a.rtol, a.atol)
        if not ok:
            print(f"ort_latency: {level}: outputs differ: {how}", file=sys.stderr)
            status = 1
        warm = []
        for _ in range(a.warmup):
            warm.append(timed(sa, feeds)[0])
            timed(sb, feeds)
        runs = a.runs
        if a.min_seconds > 0 and warm:
            runs = max(runs, int(a.min_seconds * 1e3 / max(min(warm), 1e-3)) + 1)
        result.setdefault("runs_per_pass", {})[level] = runs
        ratios, med_a, med_b = [], [], []
        for k in range(a.passes):
            ta, tb = [], []
            for _ in range(runs):
                ta.append(timed(sa, feeds)[0])
                tb.append(timed(sb, feeds)[0])
            ma, mb = statistics.median(ta), statistics.median(tb)
            med_a.append(ma)
            med_b.append(mb)
            ratios.append(mb / ma)
            print(f"{level:7s} pass {k + 1}: original {ma:.3f} ms, optimized {mb:.3f} ms, ratio {mb / ma:.3f}")
        result["levels"][level] = {"ratios": ratios, "median_ratio": statistics.median(ratios),
                                   "original_ms": med_a, "optimized_ms": med_b, "outputs": how}
        print(f"{level:7s} median ratio optimized/original {statistics.median(ratios):.3f} ({how})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return status


if __name__ == "__main__":
    sys.exit(main())
