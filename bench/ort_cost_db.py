#!/usr/bin/env python3
"""Builds a measured cost DB for onnxruntime on this machine: `eqsat-run --cost db:FILE` then optimizes for
the runtime the model will run in (docs/cost-model.md, "A cost DB measured in onnxruntime").

For each model: eqsat-run runs with `--cost db:DB --cost-misses DIR`, which writes every node its e-graph
priced and the DB lacked as a one-node ONNX model (operands are graph inputs, a conv kernel or a rank-2 matmul
right operand an initializer); this script times each in onnxruntime (CPU execution provider, one thread,
fastest of RUNS runs after warm-up) and adds it to the DB; then again, until a run finds no new node (the
extracted graph, and so the next round's e-graph, can change once costs are known). Entries are the node's
time without the per-run overhead of a session.run call: that overhead (a session running one Identity,
minus the per-node time measured from a chain of 64 Identity nodes) is subtracted, so a graph's cost is the
sum of its nodes' entries as in one session.run of the whole graph at ORT_DISABLE_ALL.

Usage: ort_cost_db.py DB.json MODEL [MODEL ...] [--runs 15] [--eqsat build/bin/eqsat-run] [--eqsat-args "..."]
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


def op_seconds(sess, runs, rng):
    """The fastest of `runs` timed runs after warm-up: on a shared machine the least disturbed run is the best
    estimate of what one operator costs (whole models are compared by medians of interleaved runs instead,
    bench/ort_latency.py)."""
    feeds = {i.name: rng.uniform(-1, 1, size=i.shape).astype(np.float32) for i in sess.get_inputs()}
    for _ in range(3):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t)
    return min(times)


def identity_chain(n):
    nodes = [helper.make_node("Identity", [f"t{k}"], [f"t{k + 1}"]) for k in range(n)]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def run_overhead(runs, rng):
    """Seconds a session.run costs beyond its nodes: one Identity minus the per-node time of a 64-chain."""
    one = op_seconds(session(identity_chain(1)), runs * 4, rng)
    chain = op_seconds(session(identity_chain(64)), runs * 4, rng)
    per_node = max((chain - one) / 63, 0.0)
    return max(one - per_node, 0.0), per_node


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
    a = p.parse_args()
    if not os.access(a.eqsat, os.X_OK):
        print(f"ort_cost_db: error: {a.eqsat} is not built (tools/build.sh)", file=sys.stderr)
        return 2
    rng = np.random.default_rng(a.seed)
    db = load_db(a.db)
    db["timing"]["repeats"] = a.runs
    save_db(db, a.db)
    overhead, per_node = run_overhead(a.runs, rng)
    # A whole graph pays this once per session.run: bench/ort_report.sh adds it to both graphs' costs when it
    # turns the DB's prediction into a latency ratio (eqsat-run itself ignores the field).
    db["session_run_overhead_ms"] = overhead * 1e3
    print(f"ort_cost_db: session.run overhead {overhead * 1e6:.1f} us, per-node dispatch {per_node * 1e6:.2f} us",
          file=sys.stderr)
    for model in a.models:
        source = [model] if model.endswith(".onnx") else ["--model", model]
        for round_ in range(1, a.rounds + 1):
            with tempfile.TemporaryDirectory() as work:
                cmd = [a.eqsat, *source, "--cost", f"db:{a.db}", "--cost-misses", work, "-q",
                       *shlex.split(a.eqsat_args)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"ort_cost_db: error: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-400:]}",
                          file=sys.stderr)
                    return 1
                with open(os.path.join(work, "index.json")) as f:
                    nodes = json.load(f)["nodes"]
                for k, node in enumerate(nodes):
                    with open(os.path.join(work, node["file"]), "rb") as f:
                        t = op_seconds(session(f.read()), a.runs, rng)
                    db["entries"][node["key"]] = max(t - overhead, per_node) * 1e3
                    if (k + 1) % 50 == 0:
                        print(f"  {model}: {k + 1}/{len(nodes)} nodes timed", file=sys.stderr)
                save_db(db, a.db)
                print(f"ort_cost_db: {model}: pass {round_}: {len(nodes)} new nodes timed, "
                      f"{len(db['entries'])} entries in {a.db}", file=sys.stderr)
                if not nodes:
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
