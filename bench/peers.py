#!/usr/bin/env python3
"""eqsat-run beside onnxsim and onnxslim, timed in onnxruntime (issue 49).

For each model: eqsat-run with no options (its default target for this machine), onnxsim.simplify(model) and
onnxslim.slim(model) (each with its defaults, from PyPI: tools/setup-python.sh --with-peers), and, with
--compose, eqsat-run on onnxslim's file (a peer first, then eqsat-run). Every written file is run at two shapes
(--shape, twice) against the original: a file that fails or computes other values is reported and not timed.
Then all files are timed together in onnxruntime's CPU provider: a session per file and a second session of the
original (A/A: the noise), run round-robin (each round starting at the next file), PASSES passes, a median per file and pass, ratio to the
original's median, the median of those ratios; at both optimization levels (ORT_ENABLE_ALL, ORT_DISABLE_ALL) and
at one intra-op thread and onnxruntime's default threading. Prints a Markdown table (docs/benchmarks-measured.md).

Usage: bench/peers.py MODEL.onnx... [--passes 5] [--runs 15] [--min-seconds 0.3] [--shape batch=1,seq=64
       --shape batch=2,seq=32] [--compose] [--eqsat build/bin/eqsat-run] [--work DIR]
Ratios below 1 are faster. Exit 1 when a file of eqsat-run's computes other values than its original.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_latency import compare, graph_inputs, make_feeds  # noqa: E402  (the same inputs and comparison)

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEVELS = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}


def run_eqsat(eqsat, source, out):
    if not os.access(eqsat, os.X_OK):
        return f"{eqsat} missing (tools/build.sh)"
    run = subprocess.run([eqsat, source, "-o", out, "-q"], capture_output=True, text=True)
    if run.returncode != 0:
        return f"eqsat-run exit {run.returncode}: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ''}"
    return None


def run_onnxsim(source, out):
    import onnxsim
    model, ok = onnxsim.simplify(onnx.load(source))
    if not ok:
        return "onnxsim's own check failed"
    onnx.save(model, out)
    return None


def run_onnxslim(source, out):
    import onnxslim
    onnx.save(onnxslim.slim(onnx.load(source)), out)
    return None


def make_session(path, level, threads):
    options = ort.SessionOptions()
    options.graph_optimization_level = LEVELS[level]
    options.intra_op_num_threads = threads  # 0: onnxruntime's default
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def check_file(original, candidate, shapes, seed):
    """None when `candidate` computes the original's outputs at every shape, else why not."""
    for dims in shapes:
        feeds = make_feeds(graph_inputs(original), seed, dims, [])
        try:
            want = make_session(original, "disable", 1).run(None, feeds)
            got = make_session(candidate, "disable", 1).run(None, feeds)
        except Exception as e:  # noqa: BLE001 - onnxruntime raises several types; each is a failure to report
            return f"does not run at {dims}: {str(e).splitlines()[0][:120]}"
        same, detail = compare(want, got, 1e-3, 1e-4)
        if not same:
            return f"WRONG at {dims}: {detail}"
    return None


def time_files(paths, feeds, level, threads, passes, runs, min_seconds):
    """{name: median over passes of (median time / the original's median)} for each file, round-robin."""
    sessions = {name: make_session(path, level, threads) for name, path in paths.items()}
    for s in sessions.values():
        for _ in range(3):
            s.run(None, feeds)
    # Small models: enough runs that a pass times each file for at least min_seconds.
    t = time.perf_counter()
    sessions["original"].run(None, feeds)
    per_run = max(time.perf_counter() - t, 1e-6)
    runs = max(runs, int(min_seconds / per_run) + 1)
    ratios = {name: [] for name in sessions}
    names = list(sessions)
    for _ in range(passes):
        times = {name: [] for name in sessions}
        for r in range(runs):
            # Each round starts at another file: the first of a round runs on caches the last one filled, a
            # bias that a fixed order gives to one file (the A/A pair measured 0.93-0.98 with the original first).
            for name in names[r % len(names):] + names[:r % len(names)]:
                t = time.perf_counter()
                sessions[name].run(None, feeds)
                times[name].append(time.perf_counter() - t)
        base = statistics.median(times["original"])
        for name in sessions:
            ratios[name].append(statistics.median(times[name]) / base)
    return {name: statistics.median(r) for name, r in ratios.items() if name != "original"}


def parse_shape(text):
    dims = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        dims[name] = int(value)
    return dims


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--min-seconds", type=float, default=0.3)
    p.add_argument("--shape", action="append", type=parse_shape, default=[])
    p.add_argument("--compose", action="store_true", help="also eqsat-run on onnxslim's file")
    p.add_argument("--eqsat", default=os.path.join(ROOT, "build", "bin", "eqsat-run"))
    p.add_argument("--work", default=None)
    a = p.parse_args()
    shapes = a.shape or [{"batch": 1, "seq": 64}, {"batch": 2, "seq": 32}]
    work = a.work or tempfile.mkdtemp(prefix="peers_")
    os.makedirs(work, exist_ok=True)
    tools = [("eqsat-run", lambda s, o: run_eqsat(a.eqsat, s, o)), ("onnxsim", run_onnxsim),
             ("onnxslim", run_onnxslim)]
    columns = ["A/A"] + [name for name, _ in tools] + (["onnxslim+eqsat-run"] if a.compose else [])
    print("| model | threads | level | " + " | ".join(columns) + " |")
    print("|---|---|---|" + "---:|" * len(columns))
    status = 0
    for model in a.models:
        name = os.path.basename(model).removesuffix(".onnx")
        files, notes = {"original": model, "A/A": model}, {}
        for tool, run in tools:
            out = os.path.join(work, f"{name}.{tool}.onnx")
            try:
                why = run(model, out)
            except Exception as e:  # noqa: BLE001 - a peer's crash is a result to report
                why = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
            why = why or check_file(model, out, shapes, seed=7)
            if why:
                notes[tool] = why
                status = 1 if tool == "eqsat-run" and why.startswith("WRONG") else status
            else:
                files[tool] = out
        if a.compose and "onnxslim" in files:
            out = os.path.join(work, f"{name}.onnxslim+eqsat-run.onnx")
            why = run_eqsat(a.eqsat, files["onnxslim"], out) or check_file(model, out, shapes, seed=7)
            if why:
                notes["onnxslim+eqsat-run"] = why
            else:
                files["onnxslim+eqsat-run"] = out
        feeds = make_feeds(graph_inputs(model), 1, shapes[0], [])
        for threads in (1, 0):
            for level in ("all", "disable"):
                ratios = time_files(files, feeds, level, threads, a.passes, a.runs, a.min_seconds)
                cells = [f"{ratios[c]:.3f}" if c in ratios else notes.get(c, "—") for c in columns]
                print(f"| {name} | {threads or 'default'} | {level} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nRatios to the original's median latency, below 1 is faster; onnxruntime {ort.__version__}, CPU provider, "
          f"{a.passes} interleaved passes; timed at {shapes[0]}, outputs compared at {shapes}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    return status


if __name__ == "__main__":
    sys.exit(main())
