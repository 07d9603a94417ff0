#!/usr/bin/env python3
"""bench/ort_report.sh --db on a tiny model: it must build the cost DB (bench/ort_cost_db.py: every node of
the e-graph timed in onnxruntime), optimize with --cost db:, time original and optimized and print one
well-formed table row (predicted ratio at both levels, kept, both levels with every pass, the errors in points). No timing
target: the figures themselves belong to the benchmark report (docs/benchmarks-measured.md).

Usage: test_ort_report.py BUILD_DIR MODEL.onnx WORK_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM = r"[0-9]+\.[0-9]{3}"
CELL = rf"\*\*{NUM}\*\* \({NUM}, {NUM}\)"


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    build, model, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db = os.path.join(work, "db.json")
    name = os.path.basename(model)[:-len(".onnx")]
    cmd = [os.path.join(ROOT, "bench", "ort_report.sh"), "--db", db, "--runs", "3", "--passes", "2", "--min-seconds", "0",
           "--time-identical", model]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TEQ_BUILD_DIR": build})
    print(r.stdout)
    print(r.stderr, file=sys.stderr)
    if r.returncode != 0:
        print(f"FAILED: ort_report.sh exited {r.returncode}", file=sys.stderr)
        return 1
    # predicted at ENABLE_ALL and at DISABLE_ALL, kept, both levels measured, both errors
    row = (rf"^\| {re.escape(name)} \| db:\S*db\.json \| {NUM} \| {NUM} \| (yes|no)[^|]* \| {CELL} \| {CELL} \| "
           rf"[0-9]+\.[0-9] \| [0-9]+\.[0-9] \|$")
    if not re.search(row, r.stdout, re.M):
        print(f"FAILED: no table row matching {row}", file=sys.stderr)
        return 1
    entries = json.load(open(db))["entries"]
    if not entries or any(not isinstance(v, (int, float)) or v < 0 for v in entries.values()):
        print(f"FAILED: {db} has no valid entries", file=sys.stderr)
        return 1
    # The DB now answers every node of the model: a second eqsat-run with ort_report.sh's limits misses none.
    rep = os.path.join(work, "again.json")
    subprocess.run([os.path.join(build, "bin", "eqsat-run"), model, "--cost", f"db:{db}", "--extract", "ilp",
                    "--node-limit", "10000", "--rounds", "8", "-q", "--report", rep], check=True)
    misses = json.load(open(rep))["cost_stats"]["misses"]
    if misses:
        print(f"FAILED: the DB built by ort_report.sh still misses {misses} lookups", file=sys.stderr)
        return 1
    # onnxruntime ignores transformer names it does not know; ort_latency.py must not time the default graph
    # under a mistyped name.
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ort_latency.py"), model, model, "--runs", "1",
                        "--passes", "1", "--disable-fusions-optimized", "NoSuchFusion"], capture_output=True, text=True)
    if r.returncode != 2 or "NoSuchFusion" not in r.stderr:
        print(f"FAILED: an unknown onnxruntime transformer name gave exit {r.returncode}: {r.stderr}", file=sys.stderr)
        return 1
    print(f"ok: a well-formed row; {len(entries)} DB entries, 0 misses on a second run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
