#!/usr/bin/env python3
"""The distributed rulegen (tools/rulegen_ray.py) on a local Ray cluster of two worker nodes gives the corpus
of one `rulegen` process, rule for rule (ids, sides, conditions, verdicts), and still does when a worker node
is killed while it runs a shard: Ray runs the lost task again on the other node.

Usage: rulegen_ray_cluster.py RULEGEN   (ctest rulegen_ray.two_workers; exit 77 = skipped: no ray)
Three runs of a small vocabulary at --max-ops 2: one process; the launcher with proofs deferred to merge;
the launcher with proofs in the shards, its second worker node killed (SIGKILL of its raylet and workers)
once a shard's rulegen has run there for a moment.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ["--ops", "matmul,ewadd,ewmul,relu,tanh,transpose,concat,split", "--max-ops", "2"]
start = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - start:5.1f} s] {msg}", flush=True)


def rules_of(path: Path) -> list[dict]:
    """The corpus's rules less the proofs' milliseconds (timings, not results)."""
    rules = json.loads(path.read_text())["rules"]
    for r in rules:
        r.get("verification", {}).pop("ms", None)
    return rules


def same_corpus(name: str, got: Path, want: list[dict]) -> bool:
    have = rules_of(got)
    if have == want:
        say(f"{name}: {len(have)} rules, identical to one process's")
        return True
    say(f"{name}: FAIL: {len(have)} rules, one process {len(want)}")
    for a, b in zip(have, want):
        if a != b:
            say(f"  first difference: {a} vs {b}")
            break
    return False


def descendants_named(root_pid: int, name: str) -> list[int]:
    """Processes called `name` below `root_pid` (from /proc: no psutil needed)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
                parent[int(d)] = (int(stat.rsplit(")", 1)[1].split()[1]), stat[stat.index("(") + 1 : stat.rindex(")")])
            except (OSError, ValueError, IndexError):
                pass
    found = []
    for pid, (_, comm) in parent.items():
        if comm != name:
            continue
        p = pid
        while p in parent and p > 1:
            p = parent[p][0]
            if p == root_pid:
                found.append(pid)
                break
    return found


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: rulegen_ray_cluster.py RULEGEN", file=sys.stderr)
        return 2
    rulegen = sys.argv[1]
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError as e:
        print(f"skipped: ray is not installed in {sys.prefix} ({e}); tools/setup-python.sh installs the pinned "
              "ray and says why it could not", flush=True)
        return 77

    tmp = Path(tempfile.mkdtemp(prefix="rulegen_ray_test_"))
    subprocess.run([rulegen, *GEN, "--threads", "1", "--out", str(tmp / "one.json")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    want = rules_of(tmp / "one.json")
    say(f"one process: {len(want)} rules")

    # The head schedules nothing (0 CPUs); the two worker nodes have one CPU each. A node's death is noticed
    # after about a second (the default health check takes 30 s).
    # Object stores of Ray's minimum size (the default takes 30% of the memory per node, lazily).
    store = 80 * 1024 * 1024
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": store,
        "_system_config": {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
                           "health_check_failure_threshold": 2}})
    workers = [cluster.add_node(num_cpus=1, object_store_memory=store) for _ in range(2)]
    cluster.wait_for_nodes()
    say(f"cluster: head and {len(workers)} worker nodes at {cluster.address}")
    launcher = [sys.executable, str(ROOT / "tools" / "rulegen_ray.py"), "--address", cluster.address, "--rulegen",
                rulegen, "--shards", "4", *GEN]
    ok = True
    try:
        r = subprocess.run([*launcher, "--out", str(tmp / "deferred.json")], capture_output=True, text=True)
        if r.returncode != 0:
            say(f"launcher (proofs deferred) failed, exit {r.returncode}:\n{r.stderr}")
            return 1
        ok &= same_corpus("2 workers, proofs deferred to merge", tmp / "deferred.json", want)

        proc = subprocess.Popen([*launcher, "--proofs", "in-shards", "--out", str(tmp / "killed.json")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        victim = workers[1]
        raylet = victim.all_processes["raylet"][0].process.pid
        killed = None
        seen = {}
        while proc.poll() is None and killed is None:
            now = time.monotonic()
            for pid in descendants_named(raylet, "rulegen"):
                seen.setdefault(pid, now)
                if now - seen[pid] >= 0.3:  # mid-run: it has been proving for a while
                    killed = pid
            time.sleep(0.05)
        if killed is None:
            say("FAIL: the run ended before a shard ran on the second worker node; nothing was killed")
            proc.wait()
            return 1
        cluster.remove_node(victim, allow_graceful=False)
        say(f"killed the second worker node (raylet {raylet}) while its rulegen {killed} ran a shard")
        log, _ = proc.communicate()
        if proc.returncode != 0:
            say(f"launcher (worker killed) failed, exit {proc.returncode}:\n{log}")
            return 1
        for line in log.splitlines():  # the launcher's progress: which node ran each shard, the retry's too
            if line.startswith("rulegen_ray:"):
                say(f"  {line}")
        if Path(f"/proc/{killed}").exists():
            say(f"FAIL: rulegen {killed} outlived its worker")
            ok = False
        ok &= same_corpus("2 workers, one killed mid-run, proofs in the shards", tmp / "killed.json", want)
    finally:
        cluster.shutdown()
    if ok:
        shutil.rmtree(tmp)  # kept when the test fails, for a look at the corpora
    say("PASS" if ok else f"FAIL (corpora in {tmp})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
