#!/usr/bin/env python3
"""rulegen on a Ray cluster: the C++ rulegen is the worker, Ray schedules, retries and reports.

Stages (docs/rulegen.md, "Distributed"):
  1. shard tasks, one Ray task per `rulegen --shard i/N`: enumeration and fingerprints (the last size split by
     output shape, so equal terms meet in one shard), the candidates (renamings, common subgraphs), the cheap
     refutation on set C, and, with --proofs in-shards, the Z3 proof of every candidate;
  2. one merge task, `rulegen merge`: the candidates of all shards together, pairing, the proofs one process
     makes (with --proofs deferred) and minimization, which must see every candidate.
Shard files travel through Ray's object store (no shared file system); a task lost with its worker is run
again by Ray (max_retries) and, being a deterministic program on the same inputs, gives the same file, so
the corpus is rulegen's own whatever the workers, their number or their failures.

Every node needs the same rulegen build at the same path (--rulegen; checked by its SHA-256) and this
Python environment with ray. Usage:
  tools/rulegen_ray.py --max-ops 3 --out rules.json                 # a local Ray on this machine
  tools/rulegen_ray.py --address auto --max-ops 4 --out rules.json  # the cluster `ray start` made
Exit status: 0, 2 for bad options, 1 when a task failed (its rulegen's message is printed).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROG = "rulegen_ray"


def fail(message: str, status: int = 2) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(status)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="rulegen_ray.py",
        description="Run rulegen's stages as Ray tasks (shards, then one merge) and write the corpus one "
        "`rulegen` process writes with the same options.",
        epilog="Generation options are rulegen's own (docs/rulegen.md). Progress goes to stderr, one line per "
        "finished task; Ray's dashboard and `ray list tasks` show the tasks too.",
    )
    p.add_argument("--out", required=True, help="output corpus (JSON); OUT.rejected.json gets the unproved candidates")
    p.add_argument("--ops", help="comma-separated operators (default: rulegen's vocabulary)")
    p.add_argument("--max-ops", type=int, default=3, help="operators per graph (default 3)")
    p.add_argument("--max-inputs", type=int, help="distinct input tensors per graph (rulegen's default)")
    p.add_argument("--seed", type=int, help="seed of the fingerprint inputs (rulegen's default)")
    p.add_argument("--max-shapes", type=int, help="rulegen --max-shapes")
    p.add_argument(
        "--max-last-size-candidates",
        type=int,
        help="rulegen's cap (default 200000, 0 = all): each shard keeps its own lowest hashes and merge the "
        "lowest of all, one process's sample",
    )
    p.add_argument("--shards", type=int, help="shard tasks (default: one per CPU of the cluster, at least 2: every "
                   "shard runs the last size's loop over first operands whole, so more shards cost more)")
    p.add_argument(
        "--proofs",
        choices=["deferred", "in-shards"],
        default="deferred",
        help="deferred (default): shards prove nothing, merge proves what one process proves; in-shards: every "
        "shard proves all its candidates (many more proofs, spread over the workers)",
    )
    p.add_argument("--task-threads", type=int, default=1, help="rulegen --threads (and Ray CPUs) per shard task")
    p.add_argument("--merge-threads", type=int, help="rulegen --threads of the merge task (default: the CPUs of the largest node)")
    p.add_argument("--address", help="Ray cluster to join ('auto': the one `ray start` made here; default: start a local one)")
    p.add_argument("--num-cpus", type=int, help="CPUs of the local Ray started without --address (default: all)")
    p.add_argument("--max-retries", type=int, default=3, help="Ray's retries of a task whose worker was lost (default 3)")
    p.add_argument("--rulegen", default=str(ROOT / "build" / "bin" / "rulegen"), help="the rulegen program, same path on every node")
    a = p.parse_args(argv)
    if a.max_ops < 1 or a.max_ops > 5:
        fail(f"--max-ops must be in 1..5, got {a.max_ops}")
    for name in ("shards", "task_threads", "merge_threads", "num_cpus"):
        v = getattr(a, name)
        if v is not None and v < 1:
            fail(f"--{name.replace('_', '-')} must be at least 1, got {v}")
    if a.shards is not None and a.shards < 2:
        fail("--shards must be at least 2 (one shard is one rulegen process: run rulegen)")
    if a.max_retries < 0:
        fail(f"--max-retries must be at least 0, got {a.max_retries}")
    a.rulegen = str(Path(a.rulegen).resolve())  # the tasks run in directories of their own
    if not os.access(a.rulegen, os.X_OK):
        fail(f"{a.rulegen}: not an executable rulegen (build it with tools/build.sh or pass --rulegen)")
    return a


def generation_options(a: argparse.Namespace) -> list[str]:
    opts = ["--max-ops", str(a.max_ops)]
    for flag, value in (
        ("--ops", a.ops),
        ("--max-inputs", a.max_inputs),
        ("--seed", a.seed),
        ("--max-shapes", a.max_shapes),
        ("--max-last-size-candidates", a.max_last_size_candidates),
    ):
        if value is not None:
            opts += [flag, str(value)]
    return opts


def check_options(rulegen: str, gen: list[str]) -> None:
    """Runs rulegen here on the options at size 1 (a fraction of a second), so that a bad option stops the
    launcher with rulegen's own message before any task starts."""
    small = list(gen)
    small[small.index("--max-ops") + 1] = "1"
    with tempfile.TemporaryDirectory(prefix="rulegen_ray_check_") as d:
        r = subprocess.run([rulegen, *small, "--shard", "0/2", "--defer-proofs", "--no-minimize", "--threads", "1",
                            "--out", str(Path(d, "check.json"))], capture_output=True, text=True)
    if r.returncode != 0:
        message = [l for l in r.stderr.splitlines() if not l.startswith("rulegen: phase")]
        fail(f"rulegen refused the options (exit {r.returncode}): {' '.join(message[-3:])}")


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class TaskResult:
    """What a task sends back: its output files' bytes and what it cost on its worker."""

    name: str
    node: str
    files: dict[str, bytes]
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    log_tail: str
    stats: dict = field(default_factory=dict)


def run_rulegen(name: str, rulegen: str, digest: str, args: list[str], inputs: dict[str, bytes], outputs: list[str],
                echo: bool = False) -> TaskResult:
    """Runs one rulegen command in a fresh directory on this worker: `inputs` are written there first,
    `outputs` read back. With `echo` its progress lines go to the worker's stdout, which Ray forwards to the
    driver. A rulegen failure raises (Ray does not retry it: the same inputs fail the same way)."""
    import ray  # inside the task: the worker's import

    if sha256(rulegen) != digest:
        raise RuntimeError(f"{name}: {rulegen} on node {ray.get_runtime_context().get_node_id()[:8]} is another "
                           "build than the driver's (SHA-256 differs); build the same commit on every node")
    with tempfile.TemporaryDirectory(prefix="rulegen_ray_") as d:
        for fname, data in inputs.items():
            Path(d, fname).write_bytes(data)
        start = time.monotonic()
        # The rulegen process dies with the worker that started it (PR_SET_PDEATHSIG): a lost worker leaves
        # no orphan proving on, and the retry is the only copy.
        proc = subprocess.Popen([rulegen, *args], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)
        peak_kb, finished = [0], threading.Event()
        watcher = threading.Thread(target=_watch_peak, args=(proc.pid, finished, peak_kb), daemon=True)
        watcher.start()
        lines = []
        for raw in proc.stdout:
            lines.append(raw.decode(errors="replace").rstrip("\n"))
            if echo:
                print(f"{name}: {lines[-1]}", flush=True)
        finished.set()
        watcher.join()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        tail = "\n".join(lines[-20:])
        if proc.returncode != 0:
            raise RuntimeError(f"{name}: rulegen exited with status {proc.returncode}:\n{tail}")
        files = {f: Path(d, f).read_bytes() for f in outputs}
    return TaskResult(name, ray.get_runtime_context().get_node_id(), files, wall, usage.ru_utime + usage.ru_stime,
                      peak_kb[0] / 1024, tail)


def _watch_peak(pid: int, finished: threading.Event, peak_kb: list[int]) -> None:
    """The process's own peak resident memory (VmHWM), read every 0.2 s until its output ends. Not ru_maxrss:
    Linux keeps across exec the peak of the Ray worker that forked it (about 50 MB)."""
    status = Path(f"/proc/{pid}/status")
    while not finished.is_set():
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb[0] = max(peak_kb[0], int(line.split()[1]))
        except (OSError, ValueError):
            pass
        finished.wait(0.2)


def _die_with_parent() -> None:
    """Linux's PR_SET_PDEATHSIG; elsewhere nothing (a lost worker's rulegen then runs to its end unheard)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def cluster_cpus(ray) -> tuple[int, int]:
    """CPUs of the whole cluster and of its largest node."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    per_node = [int(n.get("Resources", {}).get("CPU", 0)) for n in nodes]
    return sum(per_node), max(per_node, default=0)


def stats_of(corpus_bytes: bytes) -> dict:
    return json.loads(corpus_bytes).get("generator", {}).get("stats", {})


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    try:
        import ray
    except ImportError:
        fail("ray is not installed in this Python; run tools/setup-python.sh (it pins ray) and use .venv/bin/python", 2)

    began = time.monotonic()
    check_options(a.rulegen, generation_options(a))
    digest = sha256(a.rulegen)
    init_args = {"address": a.address} if a.address else {"num_cpus": a.num_cpus, "include_dashboard": False}
    ray.init(**init_args, logging_level="ERROR")
    total_cpus, node_cpus = cluster_cpus(ray)
    if node_cpus < a.task_threads:
        fail(f"no node has {a.task_threads} CPUs for a shard task (largest: {node_cpus})", 2)
    shards = a.shards or max(2, total_cpus // a.task_threads)
    merge_threads = min(a.merge_threads or node_cpus, node_cpus)
    gen = generation_options(a)
    log = lambda s: print(f"{PROG}: {s}", file=sys.stderr, flush=True)
    log(f"{len(ray.nodes())} node(s), {total_cpus} CPUs; {shards} shard tasks of {a.task_threads} thread(s), "
        f"proofs {a.proofs}, merge on {merge_threads} thread(s); rulegen {' '.join(gen)}")

    task = ray.remote(max_retries=a.max_retries, retry_exceptions=False)(run_rulegen)
    shard_refs = {}
    for i in range(shards):
        name = f"shard-{i:03d}.json"
        args = [*gen, "--shard", f"{i}/{shards}", "--threads", str(a.task_threads), "--out", name]
        if a.proofs == "deferred":
            args.append("--defer-proofs")
        ref = task.options(num_cpus=a.task_threads, name=f"rulegen shard {i}/{shards}").remote(
            f"shard {i}/{shards}", a.rulegen, digest, args, {}, [name])
        shard_refs[ref] = i
    results: dict[int, TaskResult] = {}
    pending = list(shard_refs)
    shard_start = time.monotonic()
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        i = shard_refs[done[0]]
        try:
            r = ray.get(done[0])
        except Exception as e:  # a rulegen error or retries exhausted: the message says which
            log(f"shard {i}/{shards} failed: {e}")
            return 1
        r.stats = stats_of(r.files[f"shard-{i:03d}.json"])
        results[i] = r
        spent = time.monotonic() - shard_start
        left = spent / len(results) * (shards - len(results))
        log(f"shard {i}/{shards} done on node {r.node[:8]}: {r.wall_s:.1f} s, {r.cpu_s:.1f} s CPU, "
            f"peak {r.peak_rss_mb:.0f} MB; {len(results)}/{shards} shards, about {left:.0f} s left of the shards")

    inputs = {f"shard-{i:03d}.json": results[i].files[f"shard-{i:03d}.json"] for i in sorted(results)}
    log(f"merge: {len(inputs)} shard files, {sum(map(len, inputs.values())) / 1e6:.1f} MB, on {merge_threads} thread(s)")
    merge_ref = task.options(num_cpus=merge_threads, name="rulegen merge").remote(
        "merge", a.rulegen, digest,
        ["merge", *inputs, "--threads", str(merge_threads), "--out", "merged.json", "--rejected", "merged.rejected.json"],
        inputs, ["merged.json", "merged.rejected.json"], True)
    try:
        m = ray.get(merge_ref)
    except Exception as e:
        log(f"merge failed: {e}")
        return 1
    corpus = json.loads(m.files["merged.json"])
    corpus["generator"]["command"] = "rulegen_ray.py " + " ".join(argv)
    corpus["generator"]["distributed"] = {
        "engine": f"ray {ray.__version__}",
        "shards": shards,
        "proofs": a.proofs,
        "tasks": [{"task": r.name, "wall_s": round(r.wall_s, 2), "cpu_s": round(r.cpu_s, 2), "peak_rss_mb": round(r.peak_rss_mb)}
                  for r in [*(results[i] for i in sorted(results)), m]],
    }
    out = Path(a.out)
    out.write_text(json.dumps(corpus, indent=1) + "\n")
    Path(str(out) + ".rejected.json").write_bytes(m.files["merged.rejected.json"])
    wall = time.monotonic() - began
    shard_cpu = sum(r.cpu_s for r in results.values())
    st = corpus["generator"].get("stats", {})
    log(f"merge done on node {m.node[:8]}: {m.wall_s:.1f} s, {m.cpu_s:.1f} s CPU, peak {m.peak_rss_mb:.0f} MB")
    print(f"{PROG}: summary: {st.get('kept')} rules kept ({st.get('kept_multi')} two-pattern) in {out}; {wall:.1f} s wall; "
          f"{shards} shards: {shard_cpu:.1f} s CPU, longest {max(r.wall_s for r in results.values()):.1f} s, peak "
          f"{max(r.peak_rss_mb for r in results.values()):.0f} MB; merge: {m.wall_s:.1f} s, {m.cpu_s:.1f} s CPU, peak "
          f"{m.peak_rss_mb:.0f} MB; driver peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB",
          file=sys.stderr)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
