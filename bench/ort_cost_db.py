#!/usr/bin/env python3
"""Builds a measured cost DB for onnxruntime on this machine: `eqsat-run --cost db:FILE` then optimizes for
the runtime the model will run in (docs/cost-model.md, "A cost DB measured in onnxruntime").

For each model: eqsat-run runs with `--cost db:DB --cost-misses DIR`, which writes every node its e-graph
priced and the DB lacked as a one-node ONNX model (operands are graph inputs, a conv kernel or a rank-2 matmul
right operand an initializer); this script times each in onnxruntime (CPU execution provider, one thread,
ORT_DISABLE_ALL) and adds it to the DB; then again, until a run finds no new node (the extracted graph, and so
the next round's e-graph, can change once costs are known). A node is timed against a reference session with
as many graph inputs and a 4-element node, the two alternated run by run for at least RUNS runs and 50 ms, in the
thread's CPU time (so a run the scheduler interrupts is not charged for another process's time): the
entry is the fastest run less the reference's fastest, plus the per-node dispatch of a chain of Identity
nodes. What session.run and feeding the inputs cost drifts by several microseconds on a shared machine, more
than a small operator itself, so it is measured beside each node instead of once; a graph's cost is then the
sum of its nodes' entries, as in one session.run of the whole graph at ORT_DISABLE_ALL (plus the
session.run overhead, recorded as session_run_overhead_ms).

Usage: ort_cost_db.py DB.json MODEL [MODEL ...] [--runs 15] [--refresh] [--eqsat build/bin/eqsat-run] [--eqsat-args "..."]
  MODEL: a built-in model name or an .onnx file. DB.json is created when missing (fallback analytical:cpu-ort).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError as e:  # pragma: no cover
    print(f"ort_cost_db: error: {e} (run tools/setup-python.sh and use .venv/bin/python)", file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def session(model_bytes):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def op_seconds(sess, runs, rng, min_seconds=0.05, max_runs=5000):
    """The fastest of at least `runs` timed runs after warm-up, and of as many more as fit in `min_seconds`
    (up to max_runs): on a shared machine the least disturbed run is the best estimate of what one operator
    costs, and a 10 us operator needs hundreds of runs to meet one (whole models are compared by medians of
    interleaved runs instead, bench/ort_latency.py)."""
    feeds = {i.name: rng.uniform(-1, 1, size=i.shape).astype(np.float32) for i in sess.get_inputs()}
    for _ in range(3):
        sess.run(None, feeds)
    times = []
    start = time.perf_counter()
    while len(times) < runs or (time.perf_counter() - start < min_seconds and len(times) < max_runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t)
    return min(times)


def op_seconds_against(sess, ref, runs, rng, min_seconds=0.05, max_runs=5000):
    """The fastest run of `sess` and of `ref` (a one-node model of 4 elements fed as many graph inputs),
    alternated run by run so that both see the same state of a shared machine: their difference is the node's
    time without what session.run and feeding the inputs cost, which drifts by several microseconds over a
    run and is larger than a small operator itself."""
    feeds = {i.name: rng.uniform(-1, 1, size=i.shape).astype(np.float32) for i in sess.get_inputs()}
    ref_feeds = {i.name: rng.uniform(-1, 1, size=i.shape).astype(np.float32) for i in ref.get_inputs()}
    for _ in range(3):
        sess.run(None, feeds)
        ref.run(None, ref_feeds)
    best, best_ref, n = float("inf"), float("inf"), 0
    start = time.perf_counter()
    while n < runs or (time.perf_counter() - start < min_seconds and n < max_runs):
        t = clock()
        sess.run(None, feeds)
        best = min(best, clock() - t)
        t = clock()
        ref.run(None, ref_feeds)
        best_ref = min(best_ref, clock() - t)
        n += 1
    return best, best_ref


def op_seconds_streamed(sessions, ref, runs, rng, min_seconds=0.05, max_runs=5000):
    """The median run of `sessions` (copies of one node with different weights, taken in turn so that each
    finds its weight evicted by the others) and the median of `ref` alternated with them: a node that reads its
    weight from memory, as it does in a model whose weights outgrow the cache."""
    feeds = {i.name: rng.uniform(-1, 1, size=i.shape).astype(np.float32) for i in sessions[0].get_inputs()}
    ref_feeds = {i.name: rng.uniform(-1, 1, size=i.shape).astype(np.float32) for i in ref.get_inputs()}
    for sess in sessions:
        sess.run(None, feeds)
    times, ref_times = [], []
    start = time.perf_counter()
    n = 0
    while n < max(runs, 2 * len(sessions)) or (time.perf_counter() - start < min_seconds and n < max_runs):
        t = clock()
        sessions[n % len(sessions)].run(None, feeds)
        times.append(clock() - t)
        t = clock()
        ref.run(None, ref_feeds)
        ref_times.append(clock() - t)
        n += 1
    return float(np.median(times)), float(np.median(ref_times))


def cache_bytes():
    """The largest CPU cache sysfs reports (the last level), in bytes; 0 when it reports none."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best


STREAMED_MIN_BYTES = 64 * 1024  # kStreamedWeightMinBytes (optimizer/engine/cost_model.h)


def streamed_copies(model_bytes, cache, rng):
    """Copies of a one-node model whose initializers of at least STREAMED_MIN_BYTES get new random values,
    as many as fill twice the cache (at least 4, at most 256)."""
    model = onnx.load_from_string(model_bytes)
    weights = [t for t in model.graph.initializer if onnx.numpy_helper.to_array(t).nbytes >= STREAMED_MIN_BYTES]
    per_copy = sum(onnx.numpy_helper.to_array(t).nbytes for t in weights)
    count = min(256, max(4, -(-2 * cache // max(per_copy, 1))))
    copies = []
    for _ in range(count):
        for t in weights:
            shape = list(t.dims)
            t.CopyFrom(onnx.numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), t.name))
        copies.append(model.SerializeToString())
    return copies


# The calling thread's CPU time: with one intra-op thread onnxruntime computes on the thread that calls run,
# and a run the scheduler interrupts (every run of an operator longer than a time slice, on a loaded machine)
# is not charged for the time another process had the core.
clock = time.thread_time


def identity_chain(n):
    nodes = [helper.make_node("Identity", [f"t{k}"], [f"t{k + 1}"]) for k in range(n)]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def sum_of_inputs(n):
    ins = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [1, 4]) for k in range(n)]
    g = helper.make_graph([helper.make_node("Sum", [f"x{k}" for k in range(n)], ["y"])], "sum", ins,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def run_overhead(runs, rng):
    """Seconds a session.run costs beyond its nodes: one Identity minus the per-node time of a 64-chain; and
    what each further graph input costs to feed (a Sum of 5 inputs minus a Sum of 1, over 4). A node inside a
    graph is fed by the graph, not by session.run, so both come off a one-node model's time."""
    def best(model):  # the least disturbed of three long measurements
        return min(op_seconds(session(model), runs * 20, rng, min_seconds=0.3) for _ in range(3))
    one = best(identity_chain(1))
    chain = best(identity_chain(64))
    per_node = max((chain - one) / 63, 0.0)
    per_input = max((best(sum_of_inputs(5)) - best(sum_of_inputs(1))) / 4, 0.0)
    return max(one - per_node, 0.0), per_node, per_input


# The layer-norm family and GELU (exact and tanh) as onnxruntime runs them at ORT_ENABLE_ALL, for the units eqsat-run prices as
# one kernel (optimizer/cost/ort_fusions.h): kind -> (domain, per-run inputs of the normalized tensor's shape,
# initializers over its last axis, attributes).
NORM_KERNELS = {
    "SkipLayerNormalization": ("com.microsoft", ["x", "skip"], ["gamma", "beta"], {"epsilon": 1e-5}),
    "LayerNormalization": ("", ["x"], ["gamma", "beta"], {"epsilon": 1e-5, "axis": -1}),
    "SimplifiedLayerNormalization": ("", ["x"], ["gamma"], {"epsilon": 1e-5, "axis": -1}),
    "Gelu": ("com.microsoft", ["x"], [], {}),
    "FastGelu": ("com.microsoft", ["x"], [], {}),
}


def fused_model(nodes, inputs, output, inits, domain):
    g = helper.make_graph(nodes, "fused", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])], inits)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(g, opset_imports=opsets).SerializeToString()


def floats(name, shape, rng):
    return helper.make_tensor(name, TensorProto.FLOAT, shape, rng.uniform(0.5, 1.5, shape).astype(np.float32).ravel())


# A 2-d matmul, the add after it and the activation after that as onnxruntime runs them (MatMulAddFusion,
# GemmActivationFusion): kind -> the activation of its FusedGemm (None: a plain Gemm).
GEMM_2D = {"Gemm2d": None, "FusedGemmRelu": "Relu", "FusedGemmTanh": "Tanh", "FusedGemmSigmoid": "Sigmoid"}


def fused_kernel(kind, shapes, rng):
    """A model of the kernel onnxruntime runs for a fused unit, timed at ORT_DISABLE_ALL like any node: the
    contrib operator itself; for MatMulAddFusion's Gemm the Reshape, Gemm, Reshape it writes around it; a
    FusedMatMul of the two operands as the matmul reads them (its absorbed transposes not modelled); for a
    2-d Gemm the Gemm (or FusedGemm) of the operand, the weight and the added tensor."""
    if kind in GEMM_2D:
        (m, k), (_, n), c = shapes
        act = GEMM_2D[kind]
        if act:
            node = helper.make_node("FusedGemm", ["a", "w", "c"], ["y"], domain="com.microsoft", activation=act)
        else:
            node = helper.make_node("Gemm", ["a", "w", "c"], ["y"])
        return fused_model([node], [("a", [m, k]), ("c", list(c))], ("y", [m, n]), [floats("w", [k, n], rng)],
                           "com.microsoft" if act else "")
    if kind == "Gemm":
        (m, k), (_, n) = shapes
        ints = helper.make_tensor("in2d", TensorProto.INT64, [2], [m, k])
        out3d = helper.make_tensor("out3d", TensorProto.INT64, [3], [1, m, n])
        nodes = [helper.make_node("Reshape", ["x", "in2d"], ["x2"]), helper.make_node("Gemm", ["x2", "w", "b"], ["y2"]),
                 helper.make_node("Reshape", ["y2", "out3d"], ["y"])]
        return fused_model(nodes, [("x", [1, m, k])], ("y", [1, m, n]),
                           [ints, out3d, floats("w", [k, n], rng), floats("b", [n], rng)], "")
    if kind == "FusedMatMul":
        node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft", alpha=0.25)
        out = list(shapes[0][:-1]) + [shapes[1][-1]]
        return fused_model([node], [("a", shapes[0]), ("b", shapes[1])], ("y", out), [], "com.microsoft")
    if kind not in NORM_KERNELS:
        raise ValueError(f"unknown fused unit kind {kind!r}")
    domain, data, params, attrs = NORM_KERNELS[kind]
    shape = shapes[0]
    node = helper.make_node(kind, data + params, ["y"], domain=domain, **attrs)
    return fused_model([node], [(n, shape) for n in data], ("y", shape), [floats(n, [shape[-1]], rng) for n in params],
                       domain)


def shape_chain():
    """What a PyTorch export computes a reshape's target with, per attention layer: Shape, Gather, Add, Div and
    three Mul on int64 scalars. eqsat-run's import folds these into constants and onnxruntime folds them at
    ORT_ENABLE_ALL, but at ORT_DISABLE_ALL every inference runs them."""
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [1], [v])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["g"]),
             helper.make_node("Add", ["g", "one"], ["a"]), helper.make_node("Div", ["a", "three"], ["d"])]
    prev = "d"
    for k in range(3):
        nodes.append(helper.make_node("Mul", [prev, "one"], [f"m{k}"]))
        prev = f"m{k}"
    g = helper.make_graph(nodes, "shape_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 2, 192])],
                          [helper.make_tensor_value_info(prev, TensorProto.INT64, [1])],
                          [ints("i", 2), ints("one", 1), ints("three", 3)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(), len(nodes)


def load_db(path):
    if not os.path.exists(path):
        return {"format": "tensor-eqsat-costs", "version": 1,
                "device": f"onnxruntime {ort.__version__} CPU execution provider, 1 thread, ORT_DISABLE_ALL",
                "precision": "fp32", "unit": "ms", "fallback": "analytical:cpu-ort",
                "timing": {"warmup": 3, "repeats": 0, "statistic": "min"}, "entries": {}}
    with open(path) as f:
        return json.load(f)


def save_db(db, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(db, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("db")
    p.add_argument("models", nargs="+")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--rounds", type=int, default=4, help="eqsat-run passes per model at most")
    p.add_argument("--eqsat", default=os.path.join(ROOT, "build", "bin", "eqsat-run"))
    p.add_argument("--eqsat-args", default="", help="more eqsat-run options (limits, --rules ...)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cache-bytes", type=int, default=None,
                   help="last-level cache size to record (default: the largest cache sysfs reports)")
    p.add_argument("--refresh", action="store_true",
                   help="time every node of the models' e-graphs again, replacing the entries the DB has")
    a = p.parse_args()
    if not os.access(a.eqsat, os.X_OK):
        print(f"ort_cost_db: error: {a.eqsat} is not built (tools/build.sh)", file=sys.stderr)
        return 2
    rng = np.random.default_rng(a.seed)
    db = load_db(a.db)
    db["timing"]["repeats"] = a.runs
    db["timing"]["statistic"] = "min thread CPU time, less the min of a reference session alternated with it"
    db["timing"]["min_seconds"] = 0.05
    db["timing"]["streamed_statistic"] = ("median thread CPU time over copies with different weights taken in turn, "
                                          "less the median of a reference session alternated with them")
    cache = a.cache_bytes if a.cache_bytes is not None else cache_bytes()
    if cache:
        db["cache_bytes"] = cache
    save_db(db, a.db)
    overhead, per_node, per_input = run_overhead(a.runs, rng)
    db["session_input_overhead_ms"] = per_input * 1e3
    # A whole graph pays this once per session.run: bench/ort_report.sh adds it to both graphs' costs when it
    # turns the DB's prediction into a latency ratio (eqsat-run itself ignores the field).
    db["session_run_overhead_ms"] = overhead * 1e3
    print(f"ort_cost_db: session.run overhead {overhead * 1e6:.1f} us, {per_input * 1e6:.2f} us per further input, "
          f"per-node dispatch {per_node * 1e6:.2f} us", file=sys.stderr)
    # What one node of a PyTorch export's shape arithmetic costs at ORT_DISABLE_ALL: bench/ort_report.sh adds it,
    # times the report's folded_shape_nodes, to that level's prediction (eqsat-run ignores the field).
    chain, chain_nodes = shape_chain()
    t, ref = op_seconds_against(session(chain), session(identity_chain(1)), a.runs, rng)
    db["shape_node_ms"] = max(t - ref + per_node, per_node * chain_nodes) / chain_nodes * 1e3
    print(f"ort_cost_db: {db['shape_node_ms'] * 1e3:.2f} us per shape-arithmetic node", file=sys.stderr)
    scratch = tempfile.mkdtemp(prefix="ort_cost_db.")
    refs = {}  # number of graph inputs -> a session of the same inputs and a tiny node: what a one-node run costs
    for model in a.models:
        source = [model] if model.endswith(".onnx") else ["--model", model]
        # --refresh: this model's nodes are timed again, all of them: the passes run against a DB holding only
        # what this run has timed, and the results replace the old entries.
        timed = {}
        for round_ in range(1, a.rounds + 1):
            with tempfile.TemporaryDirectory() as work:
                db_arg = a.db
                if a.refresh:
                    db_arg = os.path.join(scratch, f"refresh-{round_}.json")
                    fused_keys = {k for k in timed if k.startswith(("ort:", "streamed:ort:"))}
                    save_db({**db, "entries": {k: v for k, v in timed.items() if k not in fused_keys},
                             "fused_entries": {k: timed[k] for k in fused_keys}}, db_arg)
                cmd = [a.eqsat, *source, "--cost", f"db:{db_arg}", "--cost-misses", work, "-q",
                       *shlex.split(a.eqsat_args)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"ort_cost_db: error: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-400:]}",
                          file=sys.stderr)
                    return 1
                with open(os.path.join(work, "index.json")) as f:
                    index = json.load(f)
                nodes = index["nodes"]
                def time_model(model_bytes, copies=None):
                    """copies: the same node with other weights, for a streamed entry."""
                    sess = session(model_bytes)
                    n_in = len(sess.get_inputs())
                    if n_in not in refs:
                        refs[n_in] = session(sum_of_inputs(n_in) if n_in > 1 else identity_chain(1))
                    if copies:
                        if not cache:
                            raise SystemExit("ort_cost_db: error: eqsat-run asked for streamed entries but the cache "
                                             "size is unknown (pass --cache-bytes)")
                        t, ref = op_seconds_streamed([session(c) for c in copies], refs[n_in], a.runs, rng)
                    else:
                        t, ref = op_seconds_against(sess, refs[n_in], a.runs, rng)
                    return max(t - ref + per_node, per_node) * 1e3
                for k, node in enumerate(nodes):
                    with open(os.path.join(work, node["file"]), "rb") as f:
                        model_bytes = f.read()
                    copies = streamed_copies(model_bytes, cache, rng) if node.get("streamed") else None
                    db["entries"][node["key"]] = time_model(model_bytes, copies)
                    timed[node["key"]] = db["entries"][node["key"]]
                    if (k + 1) % 50 == 0:
                        print(f"  {model}: {k + 1}/{len(nodes)} nodes timed", file=sys.stderr)
                fused = index.get("fused", [])  # absent from an older eqsat-run's index
                for unit in fused:
                    kernel = fused_kernel(unit["kind"], unit["shapes"], rng)
                    copies = streamed_copies(kernel, cache, rng) if unit.get("streamed") else None
                    db.setdefault("fused_entries", {})[unit["key"]] = time_model(kernel, copies)
                    timed[unit["key"]] = db["fused_entries"][unit["key"]]
                save_db(db, a.db)
                print(f"ort_cost_db: {model}: pass {round_}: {len(nodes)} new nodes and {len(fused)} fused units "
                      f"timed, {len(db['entries'])} entries in {a.db}", file=sys.stderr)
                if not nodes and not fused:
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
