"""eqsat-run on models whose tensor shapes depend on tensor values, which stay an opaque region.

NonZero (its count added back, or its indices a graph output), Unique, TopK with a computed k, Compress with a
computed condition, a Loop whose loop-carried value grows by one row per iteration (a trip count from the
data, a scan output), a Scan over the rows, a
Reshape to a target computed from the data, an If whose branches differ in shape, and a zero-size tensor
between two nodes: the import knows no shape for
such a tensor, so the nodes computing and reading it are written back as the file has them, while the part
around them (a product with a constant scale moved through a MatMul) is still optimized. For each: eqsat-run
--check must exit 0, the check must run and pass (it computes the real shapes), and onnxruntime must give the
written file the original's outputs at batch 1 and 3.
Usage: test_dynamic_shapes.py EQSAT_RUN WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

eqsat_run, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
rng = np.random.default_rng(7)
F = TP.FLOAT


def common():
    # x [N, 8] -> h = (x * 2) @ w  (the rules move the scale onto the weight)
    nodes = [H.make_node("Mul", ["x", "two"], ["xs"]), H.make_node("MatMul", ["xs", "w"], ["h"])]
    inits = [NH.from_array(rng.uniform(-1, 1, (8, 8)).astype(np.float32), "w"),
             NH.from_array(np.array(2, np.float32), "two"), NH.from_array(np.array([1], np.int64), "ax1"),
             NH.from_array(np.array([0], np.int64), "ax0")]
    return nodes, inits


def nonzero_model():
    # The repro around h: y = relu(h) + count(nonzero(relu(h))).
    nodes, inits = common()
    nodes += [H.make_node("Relu", ["h"], ["r"]), H.make_node("NonZero", ["r"], ["nz"]),
              H.make_node("Cast", ["nz"], ["nzf"], to=F), H.make_node("ReduceSum", ["nzf"], ["s"], keepdims=0),
              H.make_node("Add", ["r", "s"], ["y"])]
    return nodes, inits


def unique_model():
    # y = h + max(unique(round(3x))) + count of distinct values
    nodes, inits = common()
    inits.append(NH.from_array(np.array(3, np.float32), "three"))
    nodes += [H.make_node("Mul", ["x", "three"], ["x3"]), H.make_node("Round", ["x3"], ["q"]),
              H.make_node("Unique", ["q"], ["u", "ui", "uinv", "uc"], sorted=1),
              H.make_node("ReduceMax", ["u"], ["umax"], keepdims=0), H.make_node("Size", ["u"], ["un"]),
              H.make_node("Cast", ["un"], ["unf"], to=F), H.make_node("Add", ["h", "umax"], ["y0"]),
              H.make_node("Add", ["y0", "unf"], ["y"])]
    return nodes, inits


def topk_model():
    # k = argmax(x[0]) + 1, the sum of each row's k largest entries of h added to h.
    nodes, inits = common()
    inits += [NH.from_array(np.array([0], np.int64), "zero_i"), NH.from_array(np.array([1], np.int64), "one_i")]
    nodes += [H.make_node("Gather", ["x", "zero_i"], ["row"], axis=0),
              H.make_node("ArgMax", ["row"], ["am"], axis=1, keepdims=0), H.make_node("Add", ["am", "one_i"], ["k"]),
              H.make_node("TopK", ["h", "k"], ["tv", "ti"], axis=1),
              H.make_node("ReduceSum", ["tv", "ax1"], ["ts"], keepdims=1), H.make_node("Add", ["h", "ts"], ["y"])]
    return nodes, inits


def compress_model():
    # The columns of h whose column sum of x is positive, summed per row and added to h.
    nodes, inits = common()
    inits.append(NH.from_array(np.array(0, np.float32), "zero"))
    nodes += [H.make_node("ReduceSum", ["x", "ax0"], ["cs"], keepdims=0), H.make_node("Greater", ["cs", "zero"], ["c"]),
              H.make_node("Compress", ["h", "c"], ["hc"], axis=1),
              H.make_node("ReduceSum", ["hc", "ax1"], ["hs"], keepdims=1), H.make_node("Add", ["h", "hs"], ["y"])]
    return nodes, inits


def loop_grow_model():
    # acc starts as h's first row [1, 8]; each iteration appends tanh(last row + i): a shape the import cannot
    # know (it changes across iterations). The trip count comes from the data (1 or 3, from the sign of sum(x)),
    # and each iteration's new row is also a scan output ([trips, 1, 8]). acc's column sums and the scan
    # output's sum are added to h.
    nodes, inits = common()
    inits += [NH.from_array(np.array(True), "go"), NH.from_array(np.array(0, np.float32), "zero"),
              NH.from_array(np.array(2, np.int64), "two_i"), NH.from_array(np.array(1, np.int64), "one_i"),
              NH.from_array(np.array([0], np.int64), "zero_i"), NH.from_array(np.array([-1], np.int64), "minus1"),
              NH.from_array(np.array([2**62], np.int64), "end"), NH.from_array(np.array([0, 1], np.int64), "ax01")]
    body = H.make_graph([H.make_node("Slice", ["acc_in", "minus1", "end", "ax0"], ["last"]),
                         H.make_node("Cast", ["i"], ["fi"], to=F), H.make_node("Add", ["last", "fi"], ["nxt0"]),
                         H.make_node("Tanh", ["nxt0"], ["nxt"]),
                         H.make_node("Concat", ["acc_in", "nxt"], ["acc_out"], axis=0),
                         H.make_node("Identity", ["cond_in"], ["cond_out"]), H.make_node("Identity", ["nxt"], ["row"])],
                        "body",
                        [H.make_tensor_value_info("i", TP.INT64, []), H.make_tensor_value_info("cond_in", TP.BOOL, []),
                         H.make_tensor_value_info("acc_in", F, None)],
                        [H.make_tensor_value_info("cond_out", TP.BOOL, []), H.make_tensor_value_info("acc_out", F, None),
                         H.make_tensor_value_info("row", F, None)])
    nodes += [H.make_node("ReduceSum", ["x"], ["sx"], keepdims=0), H.make_node("Greater", ["sx", "zero"], ["pos"]),
              H.make_node("Cast", ["pos"], ["posi"], to=TP.INT64), H.make_node("Mul", ["posi", "two_i"], ["p2"]),
              H.make_node("Add", ["p2", "one_i"], ["trips"]),
              H.make_node("Gather", ["h", "zero_i"], ["first"], axis=0),
              H.make_node("Loop", ["trips", "go", "first"], ["acc", "rows"], body=body),
              H.make_node("ReduceSum", ["acc", "ax0"], ["colsum"], keepdims=1),
              H.make_node("ReduceSum", ["rows", "ax01"], ["rowsum"], keepdims=0),
              H.make_node("Add", ["h", "colsum"], ["y0"]), H.make_node("Add", ["y0", "rowsum"], ["y"])]
    return nodes, inits


def scan_model():
    # A running sum over the rows of h (state [8]), each step's tanh stacked: y = scan output + h.
    nodes, inits = common()
    inits.append(NH.from_array(np.zeros(8, np.float32), "s0"))
    body = H.make_graph([H.make_node("Add", ["acc_in", "row"], ["acc_out"]), H.make_node("Tanh", ["acc_out"], ["o"])],
                        "body", [H.make_tensor_value_info("acc_in", F, [8]), H.make_tensor_value_info("row", F, [8])],
                        [H.make_tensor_value_info("acc_out", F, [8]), H.make_tensor_value_info("o", F, [8])])
    nodes += [H.make_node("Scan", ["s0", "h"], ["final", "steps"], body=body, num_scan_inputs=1),
              H.make_node("Add", ["steps", "h"], ["y"])]
    return nodes, inits


def reshape_data_model():
    # h reshaped to [1 + (sum(x) > 0), -1]: a target computed from the data; the graph output's shape is unknown.
    nodes, inits = common()
    inits += [NH.from_array(np.array([1], np.int64), "one"), NH.from_array(np.array([-1], np.int64), "m1"),
              NH.from_array(np.array(0, np.float32), "zero")]
    nodes += [H.make_node("ReduceSum", ["x"], ["s"], keepdims=1), H.make_node("Greater", ["s", "zero"], ["g"]),
              H.make_node("Cast", ["g"], ["gi"], to=TP.INT64), H.make_node("Reshape", ["gi", "one"], ["gi1"]),
              H.make_node("Add", ["gi1", "one"], ["d0"]), H.make_node("Concat", ["d0", "m1"], ["tgt"], axis=0),
              H.make_node("Reshape", ["h", "tgt"], ["hr"]), H.make_node("Relu", ["hr"], ["y"])]
    return nodes, inits, [H.make_tensor_value_info("y", F, [None, None])]


def if_shapes_model():
    # An If whose branches give different shapes (h, or h stacked twice), its row sums added to h.
    nodes, inits = common()
    inits.append(NH.from_array(np.array(0, np.float32), "zero"))
    tb = H.make_graph([H.make_node("Relu", ["h"], ["t"])], "t", [], [H.make_tensor_value_info("t", F, None)])
    eb = H.make_graph([H.make_node("Concat", ["h", "h"], ["e"], axis=0)], "e", [], [H.make_tensor_value_info("e", F, None)])
    nodes += [H.make_node("ReduceSum", ["x"], ["s"], keepdims=0), H.make_node("Greater", ["s", "zero"], ["c"]),
              H.make_node("If", ["c"], ["o"], then_branch=tb, else_branch=eb),
              H.make_node("ReduceSum", ["o", "ax0"], ["os"], keepdims=1), H.make_node("Add", ["h", "os"], ["y"])]
    return nodes, inits


def nonzero_output_model():
    # NonZero's int64 indices are a graph output themselves, beside relu(h).
    nodes, inits = common()
    nodes += [H.make_node("NonZero", ["h"], ["nz"]), H.make_node("Relu", ["h"], ["y"])]
    return nodes, inits, [H.make_tensor_value_info("nz", TP.INT64, [2, None]), H.make_tensor_value_info("y", F, ["N", 8])]


def zero_size_model():
    # An empty slice of h concatenated back onto it: a zero-size tensor between two nodes.
    nodes, inits = common()
    inits += [NH.from_array(np.array([0], np.int64), "zero_i"), NH.from_array(np.array([1], np.int64), "one")]
    nodes += [H.make_node("Slice", ["h", "zero_i", "zero_i", "one"], ["e"]),
              H.make_node("Concat", ["h", "e"], ["c"], axis=1), H.make_node("Relu", ["c"], ["y"])]
    return nodes, inits


failures = []
cases = [("nonzero", nonzero_model), ("unique", unique_model), ("topk", topk_model), ("compress", compress_model),
         ("loop_grow", loop_grow_model), ("scan", scan_model), ("reshape_data", reshape_data_model),
         ("if_shapes", if_shapes_model), ("nonzero_output", nonzero_output_model), ("zero_size", zero_size_model)]
only = set(sys.argv[3:])
for name, build in cases:
    if only and name not in only:
        continue
    built = build()
    nodes, inits = built[:2]
    outputs = built[2] if len(built) > 2 else [H.make_tensor_value_info("y", F, ["N", 8])]
    graph = H.make_graph(nodes, name, [H.make_tensor_value_info("x", F, ["N", 8])], outputs, initializer=inits)
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    src, out, report = (os.path.join(work, f"{name}{s}") for s in (".onnx", ".opt.onnx", ".json"))
    onnx.save(model, src)
    r = subprocess.run([eqsat_run, src, "-o", out, "--check", "--report", report], capture_output=True, text=True)
    print(f"{name}: exit {r.returncode}")
    print(r.stderr)
    if r.returncode != 0:
        failures.append(f"{name}: exit {r.returncode}")
        continue
    rep = json.load(open(report))
    check = rep.get("check", {})
    if not (check.get("evaluated") and check.get("passed")):
        failures.append(f"{name}: the check did not run and pass: {check.get('reason')}")
    if not rep.get("rules_used"):
        failures.append(f"{name}: nothing around the opaque region was optimized")
    a, b = ort.InferenceSession(src), ort.InferenceSession(out)
    for n in (1, 3):
        for trial in range(2):
            x = rng.uniform(-1, 1, (n, 8)).astype(np.float32)
            for k, (want, got) in enumerate(zip(a.run(None, {"x": x}), b.run(None, {"x": x}))):
                if want.shape != got.shape:
                    failures.append(f"{name}: x {x.shape}: output {k} of shape {got.shape}, original {want.shape}")
                    continue
                diff = float(np.abs(want.astype(np.float64) - got).max()) if want.size else 0.0
                print(f"  x {x.shape}: output {k}: max abs diff {diff:.3g}")
                if diff > 1e-4 * max(1.0, float(np.abs(want).max()) if want.size else 1.0):
                    failures.append(f"{name}: x {x.shape}: output {k} differs by {diff}")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("ok")
