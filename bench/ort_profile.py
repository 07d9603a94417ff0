#!/usr/bin/env python3
"""Where onnxruntime spends a model's time, by operator type: the headroom a graph rewrite has.

Runs MODEL in onnxruntime's CPU execution provider (one intra-op thread unless --threads, ORT_ENABLE_ALL unless
--level disable) with the inputs bench/ort_latency.py feeds (same seed, same --dim values), warm-up runs, then
RUNS profiled runs, and prints each operator type of the session's graph (after onnxruntime's own fusions) with
its kernel time per run, its share of all kernel time and its node count; for MatMul, Gemm and FusedMatMul also
the rate they reach (2 m k n multiply-adds per product, from the shapes onnxruntime records). A graph rewrite
can only gain from the kernels it removes or makes cheaper: where the matrix products are most of the time and
run near the machine's rate, what is left is the rest (docs/benchmarks-measured.md, issue 49's "search").

Usage: ort_profile.py MODEL [--dim NAME=VALUE ...] [--runs 20] [--warmup 3] [--threads 1] [--level all|disable]
       [--top 25] [--json OUT]
Exit 0 on success, 2 on bad input.
"""
import argparse
import collections
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_latency import LEVELS, graph_inputs, make_feeds  # noqa: E402  (the same inputs as the timings)

import onnxruntime as ort  # noqa: E402

PRODUCTS = {"MatMul", "Gemm", "FusedMatMul"}


def product_flops(inputs, outputs):
    """2 k multiply-adds per output element, k the first operand's last extent (onnxruntime leaves a pre-packed
    weight out of the recorded input shapes, so the output's shape and the first operand's are what is there; an
    operand transposed by the kernel (Gemm's transA, FusedMatMul's) is not seen: such rates are approximate)."""
    if not inputs or not outputs or not inputs[0]:
        return 0
    return 2 * math.prod(outputs[0]) * inputs[0][-1]


def parse_dims(items):
    dims = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not value.isdigit():
            raise SystemExit(f"ort_profile: error: --dim wants NAME=VALUE, got '{item}'")
        dims[name] = int(value)
    return dims


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--dim", action="append", help="NAME=VALUE for a symbolic input dimension (default 1)")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="intra-op threads (0: onnxruntime's default)")
    p.add_argument("--level", choices=sorted(LEVELS), default="all")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="write the table here as JSON")
    a = p.parse_args()
    if not os.path.isfile(a.model):
        print(f"ort_profile: error: {a.model}: no such file", file=sys.stderr)
        return 2
    if a.runs < 1:
        print("ort_profile: error: --runs must be at least 1", file=sys.stderr)
        return 2
    dims = parse_dims(a.dim)
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.graph_optimization_level = LEVELS[a.level]
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory(prefix="ort_profile_") as work:
        so.profile_file_prefix = os.path.join(work, "profile")
        feeds = make_feeds(graph_inputs(a.model), a.seed, dims, [])
        so.enable_profiling = True
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        for _ in range(a.warmup + a.runs):
            sess.run(None, feeds)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    # Only the kernels of the last RUNS runs (each run is one "model_run" event; the warm-up ones come first).
    starts = sorted(e["ts"] for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    if len(starts) < a.runs:
        print("ort_profile: error: onnxruntime's profile holds fewer runs than were made", file=sys.stderr)
        return 2
    first = starts[-a.runs]
    kernel = collections.Counter()
    nodes = collections.Counter()
    flops = collections.Counter()
    for e in events:
        if e.get("ts", 0) < first or e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        op = e["args"]["op_name"]
        kernel[op] += e["dur"]
        nodes[op] += 1
        if op in PRODUCTS:
            inputs = [next(iter(s.values())) for s in e["args"].get("input_type_shape", [])]
            outputs = [next(iter(s.values())) for s in e["args"].get("output_type_shape", [])]
            flops[op] += product_flops(inputs, outputs)
    runs = a.runs
    total_us = sum(kernel.values())
    if total_us == 0:
        print("ort_profile: error: no kernel events in onnxruntime's profile", file=sys.stderr)
        return 2
    rows = []
    for op, us in kernel.most_common():
        row = {"op": op, "ms_per_run": us / runs / 1000, "share": us / total_us, "nodes": round(nodes[op] / runs)}
        if flops[op]:
            row["gflops"] = flops[op] / (us * 1e-6) / 1e9
        rows.append(row)
    print(f"{os.path.basename(a.model)}: {total_us / runs / 1000:.2f} ms of kernels a run ({runs} runs, "
          f"{a.threads or 'default'} thread(s), level {a.level}, dims {dims or 'all 1'})")
    print(f"{'operator':32s} {'ms/run':>9s} {'share':>7s} {'nodes':>6s}  rate")
    for row in rows[:a.top]:
        rate = f"{row['gflops']:.1f} GFLOP/s" if "gflops" in row else ""
        print(f"{row['op']:32s} {row['ms_per_run']:9.3f} {100 * row['share']:6.1f}% {row['nodes']:6d}  {rate}")
    products = sum(r["share"] for r in rows if r["op"] in PRODUCTS)
    print(f"matrix products: {100 * products:.1f}% of kernel time; everything else: {100 * (1 - products):.1f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "dims": dims, "threads": a.threads, "level": a.level, "runs": runs,
                       "kernel_ms_per_run": total_us / runs / 1000, "operators": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
