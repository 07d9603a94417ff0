#!/usr/bin/env python3
"""Wall time by phase and peak memory of eqsat-run on large decoder exports, beside onnxsim and onnxslim on the
same files (issue 45, item 4). Not a timed test: a report.

For each MODEL: `eqsat-run MODEL -o OUT --check --report R` under /usr/bin/time (wall, peak RSS; the report's
`seconds` by phase), then, unless --no-peers, onnxsim.simplify and onnxslim.slim on the same file in a child
process each (wall, peak RSS, or how they failed), each with --timeout seconds. The written files are run in
onnxruntime at (batch, seq) = (1, 8) and (2, 5) and compared with the input's outputs (float16 tolerance for a
float16 model) unless --no-run. Prints a Markdown table; the outputs are deleted after each model (they are as
large as the input).

--ort-level disable runs them at ORT_DISABLE_ALL (no constant folding of the Casts onnxruntime's CPU provider
inserts before float16 MatMuls: at its default level they widen the float16 weights when the session loads),
with the priority-based execution order and no CPU arena. Both matter at 32 layers: in the default order
onnxruntime runs many weight Casts (which read no input) ahead of their MatMuls, so their float32 copies live
together, and its arena keeps what it once held (8-layer fp16 model at (1, 8): peak RSS 7.27 GB with the
defaults, 5.94 GB without the arena, 3.51 GB with both, of which 3.2 GB are the memory-mapped weights). With the
defaults the 32-layer fp16 model was killed at 24.3 GB of anonymous memory on this 24 GB machine. It also turns off
the pre-packing of constant MatMul weights (session.disable_prepacking): pre-packed, the 32-layer float32 model's
26 GB of weights became anonymous copies and the kernel killed the run at 24 GB.

Usage: .venv/bin/python bench/llm/bench_llm.py [--eqsat-run build/bin/eqsat-run] [--no-peers] [--no-run]
       [--ort-level all|disable] [--timeout S] [--peer-memory-gb G] [--work DIR] MODEL...
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PEER = r"""
import sys, onnx
tool, src, dst = sys.argv[1:4]
model = onnx.load(src)
if tool == "onnxsim":
    import onnxsim
    model, ok = onnxsim.simplify(model)
    if not ok:
        sys.exit("onnxsim: its own check failed")
else:
    import onnxslim
    model = onnxslim.slim(model)
onnx.save(model, dst, save_as_external_data=True, location=dst.split("/")[-1] + ".data")
"""


def timed(cmd, timeout, memory_gb=None):
    """(exit status, wall seconds, peak RSS in GB, stderr tail) of cmd under /usr/bin/time; with memory_gb, its
    address space is capped there (a peer that needs more fails with MemoryError instead of swapping the machine)."""
    fmt = "TEQ_TIME %e %M"

    def cap():
        if memory_gb:
            import resource
            limit = int(memory_gb * 1e9)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        proc = subprocess.run(["/usr/bin/time", "-f", fmt] + cmd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=cap)
    except subprocess.TimeoutExpired:
        return None, timeout, None, f"did not finish in {timeout} s"
    wall = peak = None
    for line in proc.stderr.splitlines():
        if line.startswith("TEQ_TIME "):
            _, w, m = line.split()
            wall, peak = float(w), int(m) / 1e6
    tail = " ".join(l for l in proc.stderr.strip().splitlines()[-3:] if not l.startswith("TEQ_TIME"))
    return proc.returncode, wall, peak, tail


def run_outputs(path, feeds, level="all"):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                                        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}[level]
    if level == "disable":  # the low-memory setting: each weight Cast next to its MatMul, freed memory given back
        options.execution_order = ort.ExecutionOrder.PRIORITY_BASED
        options.enable_cpu_mem_arena = False
        # No pre-packed copies of the MatMul weights: they stay the memory-mapped file's pages (a 32-layer
        # float32 model was killed at 24 GB of anonymous memory with pre-packing).
        options.add_session_config_entry("session.disable_prepacking", "1")
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, feeds)


def compare(original, written, level="all"):
    """Max |difference| over two shapes, relative to the output's scale; None when it could not run."""
    import numpy as np
    worst = 0.0
    for batch, seq in ((1, 8), (2, 5)):
        rng = np.random.default_rng(batch * 100 + seq)
        feeds = {"input_ids": rng.integers(0, 32000, size=(batch, seq), dtype=np.int64),
                 "attention_mask": np.ones((batch, seq), dtype=np.int64)}
        want = run_outputs(original, feeds, level)[0]  # one session at a time: each holds the model's weights
        got = run_outputs(written, feeds, level)[0]
        if want.shape != got.shape:
            return float("inf")
        want, got = want.astype(np.float64), got.astype(np.float64)
        worst = max(worst, float(np.abs(want - got).max()) / max(1.0, float(np.abs(want).max())))
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--eqsat-run", default=os.path.join(ROOT, "build", "bin", "eqsat-run"))
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-run", action="store_true", help="do not run the written files in onnxruntime")
    parser.add_argument("--ort-level", choices=("all", "disable"), default="all",
                        help="onnxruntime's graph optimization level for the comparison (default all; disable: also the "
                             "priority-based order and no arena, what a 32-layer fp16 model needs to fit 24 GB)")
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--peer-memory-gb", type=float, default=20,
                        help="address-space cap of onnxsim and onnxslim (default 20 GB of this 24 GB machine)")
    parser.add_argument("--work", help="folder for the written files (default: a temporary one beside the model)")
    args = parser.parse_args()
    if not os.access(args.eqsat_run, os.X_OK):
        sys.exit(f"bench_llm: {args.eqsat_run} is not an executable (build it: tools/build.sh)")
    rows = []
    for model in args.models:
        if not os.path.isfile(model):
            sys.exit(f"bench_llm: {model}: no such file")
        data = model + ".data"
        size = os.path.getsize(data) / 1e9 if os.path.exists(data) else os.path.getsize(model) / 1e9
        work = args.work or tempfile.mkdtemp(prefix="bench_llm_", dir=os.path.dirname(os.path.abspath(model)))
        os.makedirs(work, exist_ok=True)
        out, report = os.path.join(work, "eqsat.onnx"), os.path.join(work, "eqsat.json")
        print(f"bench_llm: {model} ({size:.2f} GB of weights): eqsat-run --check", flush=True)
        rc, wall, peak, tail = timed([args.eqsat_run, model, "-o", out, "--check", "--report", report], args.timeout)
        phases = ""
        if rc == 0:
            with open(report) as f:
                r = json.load(f)
            s = r["seconds"]
            phases = ", ".join(f"{k} {s[k]:.1f}" for k in ("import", "saturate", "extract", "export_and_read_back",
                                                            "check", "write") if k in s)
            note = f"{r.get('written')}; {r.get('operators', {})}"
        else:
            note = f"exit {rc}: {tail}"
        diff = None if args.no_run or rc != 0 else compare(model, out, args.ort_level)
        rows.append((os.path.basename(model), f"{size:.2f}", "eqsat-run --check", wall, peak, phases, diff, note))
        print(f"  {wall} s, {peak} GB; {phases}; {note}", flush=True)
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        if not args.no_peers:
            for tool in ("onnxsim", "onnxslim"):
                dst = os.path.join(work, tool + ".onnx")
                print(f"bench_llm: {model}: {tool}", flush=True)
                rc, wall, peak, tail = timed([sys.executable, "-c", PEER, tool, model, dst], args.timeout,
                                             args.peer_memory_gb)
                ok = rc == 0 and os.path.exists(dst)
                diff = compare(model, dst, args.ort_level) if ok and not args.no_run else None
                rows.append((os.path.basename(model), f"{size:.2f}", tool, wall, peak, "", diff,
                             "written" if ok else (tail or f"exit {rc}")[:160]))
                print(f"  {wall} s, {peak} GB; {'written' if ok else tail}", flush=True)
                for f in os.listdir(work):
                    os.remove(os.path.join(work, f))
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print("\n| model | weights, GB | tool | wall, s | peak RSS, GB | phases, s | max diff / scale | result |")
    print("|---|---:|---|---:|---:|---|---:|---|")
    for name, size, tool, wall, peak, phases, diff, note in rows:
        w = "-" if wall is None else f"{wall:.1f}"
        p = "-" if peak is None else f"{peak:.2f}"
        d = "-" if diff is None else f"{diff:.2g}"
        print(f"| {name} | {size} | {tool} | {w} | {p} | {phases} | {d} | {note} |")


if __name__ == "__main__":
    main()
