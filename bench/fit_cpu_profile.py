#!/usr/bin/env python3
"""Fits the analytical cost model's device profile for onnxruntime on this machine's CPU (docs/cost-model.md).

Times single-operator ONNX models in onnxruntime (CPU execution provider, one intra-op thread, fastest of RUNS
runs after warm-up (the least disturbed on a shared machine), less the overhead of a session.run call, which a whole graph pays once) and fits the three figures of the roofline model
    time = max(FLOPs / rate, bytes / bandwidth) + overhead
to them: the per-operator overhead from tiny operators, the matmul/conv rate from convolutions and matrix
products of the sizes the benchmark models use, and the bandwidth from large element-wise and copy operators.
Every measured point and the model's prediction for it are printed (and stored in the profile), so the fit can
be judged: the profile is only as good as its worst points.

It also fits weight_stream_gbs, the rate at which a matrix-vector product reads a weight that is not in cache
(a model whose weights outgrow the last-level cache, cache_bytes, reads every weight from memory on every run),
from 1-row matrix products timed with their weights cold (bench/ort_cost_db.py's streamed timing).

It also measures norm_kernel_passes: what onnxruntime's normalization kernels (the SimplifiedLayerNormalization,
LayerNormalization and SkipLayerNormalization its fusions make of a decomposed norm) cost, in element-wise passes
(a Mul of two tensors of the normalized shape), the median over transformer-sized shapes.

Writes a device profile (format tensor-eqsat-device) that `eqsat-run --cost analytical:NAME` reads from
corpus/devices/NAME.json. Usage: fit_cpu_profile.py [--out corpus/devices/cpu-ort.json] [--runs 30]
[--streamed-only: refit only cache_bytes and weight_stream_gbs of the existing --out profile]
[--norms-only: refit only norm_kernel_passes of the existing --out profile]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError as e:  # pragma: no cover
    print(f"fit_cpu_profile: error: {e} (run tools/setup-python.sh and use .venv/bin/python)", file=sys.stderr)
    sys.exit(2)

OPSET = 17
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_cost_db import (NORM_KERNELS, cache_bytes, fused_kernel, identity_chain, op_seconds,  # noqa: E402
                         op_seconds_streamed, run_overhead, session, streamed_copies)  # (one timing method for both)

# The normalized shapes of the transformers the project measures (BERT/ViT/GPT-2 at sequence 64-197, a
# LLaMA-style hidden 2048), and the kernels whose cost norm_kernel_passes gives.
NORM_SHAPES = ([1, 64, 768], [1, 128, 768], [1, 197, 768], [2, 32, 512], [1, 128, 2048])
NORM_KINDS = ("SimplifiedLayerNormalization", "LayerNormalization", "SkipLayerNormalization")


def model_of(op, in_shapes, out_shape, attrs=None, const_inputs=None):
    """One node reading graph inputs x0.. (and constant initializers), writing y."""
    inputs, inits, names = [], [], []
    for k, s in enumerate(in_shapes):
        name = f"x{k}"
        names.append(name)
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, s))
    for k, (vals, dtype) in enumerate(const_inputs or []):
        name = f"c{k}"
        names.append(name)
        inits.append(helper.make_tensor(name, dtype, [len(vals)], vals))
    node = helper.make_node(op, names, ["y"], **(attrs or {}))
    graph = helper.make_graph([node], op, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def time_model(model, runs, rng):
    """Seconds of one session.run (fastest run), less the runtime's per-run overhead (measured once in main)."""
    return op_seconds(session(model.SerializeToString()), runs, rng)


def numel(s):
    return int(np.prod(s)) if s else 1


def cases():
    """(label, kind, model, flops, bytes): kind 'tiny', 'compute' or 'memory'. FLOPs count 2 per multiply-add."""
    out = []

    def conv(n, c, h, w, o, k, stride=1, group=1):
        pad = k // 2
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        m = model_of("Conv", [[n, c, h, w], [o, c // group, k, k]], [n, o, oh, ow],
                     {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [pad] * 4, "group": group})
        macs = n * o * oh * ow * (c // group) * k * k
        byts = 4 * (n * c * h * w + o * (c // group) * k * k + n * o * oh * ow)
        out.append((f"conv {c}->{o} {k}x{k} s{stride} g{group} @{h}x{w}", "compute", m, 2 * macs, byts))

    def matmul(m_, k, n):
        mdl = model_of("MatMul", [[m_, k], [k, n]], [m_, n])
        out.append((f"matmul {m_}x{k}x{n}", "compute", mdl, 2 * m_ * k * n, 4 * (m_ * k + k * n + m_ * n)))

    def unary(op, shape, kind):
        out.append((f"{op.lower()} {shape}", kind, model_of(op, [shape], shape), numel(shape), 8 * numel(shape)))

    def add(shape, kind):
        out.append((f"add {shape}", kind, model_of("Add", [shape, shape], shape), numel(shape), 12 * numel(shape)))

    for shape in ([1, 8], [1, 64], [4, 16]):
        unary("Relu", shape, "tiny")
    add([1, 32], "tiny")
    conv(1, 3, 224, 224, 64, 7, stride=2)
    conv(1, 64, 56, 56, 64, 3)
    conv(1, 64, 56, 56, 64, 1)
    conv(1, 64, 56, 56, 256, 1)
    conv(1, 128, 28, 28, 128, 3)
    conv(1, 256, 14, 14, 256, 3)
    conv(1, 512, 7, 7, 512, 3)
    conv(1, 16, 55, 55, 64, 1)
    conv(1, 16, 55, 55, 64, 3)
    conv(1, 32, 27, 27, 128, 3)
    conv(1, 64, 13, 13, 256, 1)
    matmul(64, 64, 64)
    matmul(128, 768, 768)
    matmul(128, 768, 3072)
    matmul(1, 1024, 1024)
    matmul(16, 512, 2048)
    for shape in ([1, 64, 112, 112], [1, 256, 56, 56], [1, 128, 28, 28], [1, 512, 14, 14]):
        unary("Relu", shape, "memory")
        add(shape, "memory")
    s = [1, 256, 56, 56]
    out.append(("transpose [1,256,56,56]", "memory",
                model_of("Transpose", [s], [1, 56, 56, 256], {"perm": [0, 2, 3, 1]}), 0, 8 * numel(s)))
    out.append(("concat 2x[1,128,56,56]", "memory",
                model_of("Concat", [[1, 128, 56, 56], [1, 128, 56, 56]], s, {"axis": 1}), 0, 8 * numel(s)))
    out.append(("slice [1,256,56,56]->[1,128,56,56]", "memory",
                model_of("Slice", [s], [1, 128, 56, 56], None,
                         [([0], TensorProto.INT64), ([128], TensorProto.INT64), ([1], TensorProto.INT64)]),
                0, 8 * numel([1, 128, 56, 56])))
    return out


def fit_streamed(runs, rng, cache, overhead):
    """weight_stream_gbs from 1-row matrix products whose [K, N] weight is read from memory: the median of
    weight bytes / (time - per-operator overhead) over the points, and the points."""
    ref = session(identity_chain(1))
    points = []
    for k, n in ((512, 512), (1024, 512), (512, 1024), (1024, 1024), (2048, 1024)):
        model = model_of("MatMul", [[1, k]], [1, n])
        w = helper.make_tensor("w", TensorProto.FLOAT, [k, n], rng.uniform(-1, 1, (k, n)).astype(np.float32).ravel())
        model.graph.initializer.append(w)
        model.graph.node[0].input.append("w")
        copies = streamed_copies(model.SerializeToString(), cache, rng)
        t, t_ref = op_seconds_streamed([session(c) for c in copies], ref, runs, rng)
        seconds = max(t - t_ref, 1e-9) + overhead
        points.append({"label": f"matmul 1x{k}x{n}, weight cold", "kind": "streamed", "flops": 2 * k * n,
                       "bytes": 4 * k * n, "seconds": seconds})
        print(f"  {points[-1]['label']:40s} {seconds * 1e6:10.1f} us", file=sys.stderr)
    rate = statistics.median(pt["bytes"] / max(pt["seconds"] - overhead, 1e-9) for pt in points)
    for pt in points:
        pt["predicted_seconds"] = pt["bytes"] / rate + overhead
    return rate, points


def fit_norm_kernels(runs, rng, overhead):
    """norm_kernel_passes: each kernel's time in a graph (a one-node model's, less session.run's own cost and
    the feeding of its inputs) less the per-operator overhead, over a Mul's of the same shape so measured, the
    median over NORM_SHAPES; and the points."""
    assert all(k in NORM_KERNELS for k in NORM_KINDS)
    run_cost, dispatch, per_input = run_overhead(runs, rng)

    def in_graph(t, inputs):
        return max(t - run_cost - inputs * per_input, dispatch)

    points, ratios = [], {k: [] for k in NORM_KINDS}
    for shape in NORM_SHAPES:
        mul = model_of("Mul", [shape, shape], shape)
        t_mul = in_graph(min(time_model(mul, runs, rng) for _ in range(3)), 2)
        for kind in NORM_KINDS:
            t = min(op_seconds(session(fused_kernel(kind, [shape], rng)), runs, rng) for _ in range(3))
            t = in_graph(t, len(NORM_KERNELS[kind][1]))
            ratios[kind].append(max(t - overhead, 1e-9) / max(t_mul - overhead, 1e-9))
            points.append({"label": f"{kind} {shape}", "kind": "norm", "seconds": t, "mul_seconds": t_mul})
            print(f"  {points[-1]['label']:48s} {t * 1e6:9.1f} us, Mul {t_mul * 1e6:8.1f} us: "
                  f"{ratios[kind][-1]:.2f} passes", file=sys.stderr)
    return {k: round(statistics.median(v), 2) for k, v in ratios.items()}, points


def refit_part(path, kind, field, points, source, fields):
    """Rewrites the profile at `path` with `fields` set, its fit points of `kind` replaced by `points` and its
    source naming `field` replaced by `source`: a refit of one part keeps the rest of the profile."""
    with open(path) as f:
        profile = json.load(f)
    profile.pop("fuses_rms_norm", None)  # the boolean norm_kernel_passes replaced
    profile.update(fields)
    profile["fit_points"] = [pt for pt in profile.get("fit_points", []) if pt.get("kind") != kind] + points
    profile["sources"] = [s for s in profile["sources"] if field not in s] + [source]
    with open(path, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")


def launch_overhead(path):
    with open(path) as f:
        return json.load(f)["launch_overhead_us"] * 1e-6


def norms_only(a, rng):
    passes, points = fit_norm_kernels(a.runs, rng, launch_overhead(a.out))
    refit_part(a.out, "norm", "norm_kernel_passes", points,
               f"bench/fit_cpu_profile.py --norms-only, {datetime.date.today().isoformat()}: norm_kernel_passes, each "
               f"kernel's time over a Mul's of its shape (fastest of 3x{a.runs} runs, less the per-operator overhead), "
               f"median over {len(NORM_SHAPES)} shapes", {"norm_kernel_passes": passes})
    print(f"fit_cpu_profile: wrote {a.out}: norm_kernel_passes {passes}")
    return 0


def streamed_only(a, rng):
    cache = cache_bytes()
    if not cache:
        print("fit_cpu_profile: error: sysfs reports no CPU cache size", file=sys.stderr)
        return 1
    rate, points = fit_streamed(a.runs, rng, cache, launch_overhead(a.out))
    refit_part(a.out, "streamed", "weight_stream_gbs", points,
               f"bench/fit_cpu_profile.py --streamed-only, {datetime.date.today().isoformat()}: weight_stream_gbs from "
               f"{len(points)} 1-row matrix products with their weights cold (median run over copies filling twice the "
               f"{cache // 2**20} MiB cache)", {"cache_bytes": cache, "weight_stream_gbs": rate / 1e9})
    print(f"fit_cpu_profile: wrote {a.out}: weights read from memory at {rate / 1e9:.1f} GB/s, cache {cache} bytes")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="corpus/devices/cpu-ort.json")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--streamed-only", action="store_true",
                   help="refit only cache_bytes and weight_stream_gbs of the existing --out profile")
    p.add_argument("--norms-only", action="store_true",
                   help="refit only norm_kernel_passes of the existing --out profile")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    if a.streamed_only:
        return streamed_only(a, rng)
    if a.norms_only:
        return norms_only(a, rng)
    # A graph pays session.run's own overhead once, not per operator: take it off every point.
    run_cost, dispatch, _ = run_overhead(a.runs, rng)
    print(f"  session.run overhead {run_cost * 1e6:.1f} us, per-node dispatch {dispatch * 1e6:.2f} us", file=sys.stderr)
    points = []
    for label, kind, model, flops, byts in cases():
        onnx.checker.check_model(model)
        t = max(time_model(model, a.runs, rng) - run_cost, dispatch)
        points.append({"label": label, "kind": kind, "flops": flops, "bytes": byts, "seconds": t})
        print(f"  {label:40s} {t * 1e6:10.1f} us", file=sys.stderr)
    overhead = statistics.median(p["seconds"] for p in points if p["kind"] == "tiny")
    rate = statistics.median(p["flops"] / max(p["seconds"] - overhead, 1e-9) for p in points if p["kind"] == "compute")
    bandwidth = statistics.median(p["bytes"] / max(p["seconds"] - overhead, 1e-9) for p in points if p["kind"] == "memory")
    worst = 0.0
    for pt in points:
        pred = max(pt["flops"] / rate, pt["bytes"] / bandwidth)  # as AnalyticalCostModel::node_cost
        pt["predicted_seconds"] = pred + overhead
        err = pt["predicted_seconds"] / pt["seconds"] - 1
        worst = max(worst, abs(err))
        print(f"  {pt['label']:40s} measured {pt['seconds'] * 1e6:9.1f} us, predicted {pt['predicted_seconds'] * 1e6:9.1f} us "
              f"({err:+.0%})", file=sys.stderr)
    cache = cache_bytes()
    stream_rate, stream_points = fit_streamed(a.runs, rng, cache, overhead) if cache else (0, [])
    points += stream_points
    norm_passes, norm_points = fit_norm_kernels(a.runs, rng, overhead)
    points += norm_points
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    profile = {
        "format": "tensor-eqsat-device",
        "version": 1,
        "device": f"onnxruntime {ort.__version__} CPU execution provider, 1 thread, on {cpu}",
        "fp32_tflops": rate / 1e12,
        "tf32_tensor_tflops": 0,
        "fp16_tensor_tflops": 0,
        "memory_bandwidth_gbs": bandwidth / 1e9,
        "launch_overhead_us": overhead * 1e6,
        **({"cache_bytes": cache, "weight_stream_gbs": stream_rate / 1e9} if cache else {}),
        # onnxruntime's CPU FusedConv and FusedGemm (ConvActivationFusion, GemmActivationFusion) take tanh and
        # sigmoid as well as relu: a fact of the runtime, not a fit.
        "fuses_tanh_sigmoid": True,
        # onnxruntime's MatMulAddFusion rewrites a MatMul of a rank-3 activation and its bias Add into Reshape,
        # Gemm, Reshape only when the shape is concrete (matmul_add_fusion.cc): in an export with a symbolic batch
        # or sequence they run apart, and written as Reshape, Gemm, Reshape they run as one Gemm: a fact of the
        # runtime, not a fit (docs/cost-model.md, "Linear layers of a symbolic shape").
        "batched_linear_as_gemm": True,
        "norm_kernel_passes": norm_passes,
        "sources": [f"bench/fit_cpu_profile.py, {datetime.date.today().isoformat()}: fastest of {a.runs} runs of each of "
                    f"{len(points)} single-operator models in onnxruntime {ort.__version__}, less the "
                    f"{run_cost * 1e6:.1f} us overhead of a session.run call"],
        "notes": "Fitted, not a data sheet: fp32_tflops is the achieved matmul/conv rate of ORT's CPU kernels (MLAS) "
                 "at the benchmark models' sizes, memory_bandwidth_gbs the achieved rate of element-wise and copy "
                 f"operators, launch_overhead_us the time of a tiny operator inside a graph (session.run's own overhead, paid once per run, taken off), "
                 "weight_stream_gbs the rate of a 1-row matrix product reading its weight from memory. "
                 f"Worst point error {worst:.0%} (before the streamed points).",
        "fit_points": points,
    }
    with open(a.out, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")
    print(f"fit_cpu_profile: wrote {a.out}: {rate / 1e9:.1f} GFLOP/s matmul/conv, {bandwidth / 1e9:.1f} GB/s, "
          f"{overhead * 1e6:.1f} us per operator; worst point {worst:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
