#!/usr/bin/env python3
"""The units eqsat-run prices as onnxruntime's fused kernels (optimizer/cost/ort_fusions.h) are the ones
onnxruntime makes: for the model and for the file eqsat-run writes, the report's ort_fusions count each kind as
often as onnxruntime's graph at ORT_ENABLE_ALL holds that operator (a Gemm, whether the file's own or made from a
MatMul and an Add; a FusedGemm, a Gemm with its activation). Then bench/ort_cost_db.py on a fresh DB times every fused unit as its kernel, and
eqsat-run with that DB prices every unit from it (no fused misses), so the graph's cost is not the sum of its
nodes. No timing target.

Usage: test_ort_fused_units.py EQSAT_RUN MODEL.onnx WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


from test_ort_fusions import fused_ops  # onnxruntime's graph at ORT_ENABLE_ALL, op counts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["SkipLayerNormalization", "LayerNormalization", "SimplifiedLayerNormalization", "Gelu", "FastGelu", "FusedMatMul"]
LIMITS = ["--extract", "greedy", "--node-limit", "10000", "--iter-limit", "30", "--rounds", "8"]


def onnxruntime_fusions(path, work):
    """What onnxruntime's graph at ORT_ENABLE_ALL holds, by the unit kinds of ort_fusions.h: every Gemm (the
    file's own, which eqsat-run imports as a matmul and an add, and those onnxruntime made of a MatMul and an
    Add) and every FusedGemm (a Gemm and its activation)."""
    fused = fused_ops(path, work)
    return {k: fused[k] for k in KINDS + ["Gemm", "FusedGemm"] if fused[k]}


def by_onnxruntime_op(units):
    """eqsat-run's unit counts by the operator onnxruntime writes: Gemm (rank-3 with its reshapes, or 2-d) and
    FusedGemm (with a relu, tanh or sigmoid)."""
    counts = {}
    for kind, n in units.items():
        op = "Gemm" if kind in ("Gemm", "Gemm2d") else "FusedGemm" if kind.startswith("FusedGemm") else kind
        counts[op] = counts.get(op, 0) + n
    return counts


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    return 1


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    exe, model, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    opt, rep = os.path.join(work, "opt.onnx"), os.path.join(work, "rep.json")
    subprocess.run([exe, model, "--cost", "analytical:cpu-ort", *LIMITS, "-q", "-o", opt, "--report", rep], check=True)
    ours = json.load(open(rep))["ort_fusions"]
    for side, path in (("original", model), ("exported", opt)):
        theirs = onnxruntime_fusions(path, work)
        print(f"{side}: eqsat-run {ours[side]}, onnxruntime {theirs}")
        if by_onnxruntime_op(ours[side]) != theirs:
            return fail(f"{side}: eqsat-run recognizes {ours[side]}, onnxruntime fuses {theirs}")
    if not ours["original"]:
        return fail("the model has no fusion to check")

    db = os.path.join(work, "db.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ort_cost_db.py"), db, model, "--runs", "3",
                    "--eqsat", exe, "--eqsat-args", " ".join(LIMITS)], check=True)
    facts = json.load(open(db))
    fused = facts.get("fused_entries", {})
    if set(k.split("|")[0][len("ort:"):] for k in fused) < set(ours["original"]):
        return fail(f"{db}: fused entries {sorted(fused)} miss kinds of {ours['original']}")
    if any(not isinstance(v, (int, float)) or v <= 0 for v in fused.values()) or facts.get("shape_node_ms", 0) <= 0:
        return fail(f"{db}: fused entries {fused}, shape_node_ms {facts.get('shape_node_ms')}")
    again = os.path.join(work, "again.json")
    subprocess.run([exe, model, "--cost", f"db:{db}", *LIMITS, "-q", "--report", again], check=True)
    r = json.load(open(again))
    stats = r["cost_stats"]
    if stats["fused_misses"] or not stats["fused_hits"] or r["fused_units"]["original"] != sum(ours["original"].values()):
        return fail(f"priced with the DB: {stats}, fused_units {r['fused_units']}")
    if r["original_cost"] == r["unfused_cost"]["original"]:
        return fail("the fused units did not change the original's cost")
    print(f"ok: {sum(ours['original'].values())} fused units as onnxruntime makes them; {len(fused)} fused entries timed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
