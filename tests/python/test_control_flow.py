"""eqsat-run on models with control flow, which stays an opaque region with its subgraphs.

An If (with a nested If) and a Loop under a symbolic batch, a part outside the control flow the rules can
improve (a product with a constant scale moved through a MatMul), and subgraphs that read tensors of the
enclosing graph by name. For each: eqsat-run (default check) must exit 0 and write a file that onnxruntime runs
with the original's outputs at batch 1 and 3, with inputs that take each branch; the check evaluates If branch by
branch and Loop iteration by iteration. The Loop's carried value keeps its shape through the body, which the
import finds (libonnx 1.12's inference leaves a Loop's carried outputs unknown). An If whose condition compares
the sequence length with a threshold must take the other branch at a short sequence, as the original. (A Loop
whose carried value changes shape, and Scan: tests/python/test_dynamic_shapes.py.)
Usage: test_control_flow.py EQSAT_RUN WORKDIR
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
rng = np.random.default_rng(43)
F = TP.FLOAT


def init(name, shape):
    return NH.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)


def common():
    # x [N, 8] -> h = (x * 2) @ w  (the rules move the scale onto the weight), cond = sum(x) > 0
    nodes = [H.make_node("Mul", ["x", "two"], ["xs"]), H.make_node("MatMul", ["xs", "w"], ["h"]),
             H.make_node("ReduceSum", ["x"], ["s"], keepdims=0), H.make_node("Greater", ["s", "zero"], ["cond"])]
    inits = [init("w", (8, 8)), init("v", (8, 8)), NH.from_array(np.array(2, np.float32), "two"),
             NH.from_array(np.array(0, np.float32), "zero")]
    return nodes, inits


def if_model():
    nodes, inits = common()
    then_g = H.make_graph([H.make_node("MatMul", ["h", "v"], ["t0"]), H.make_node("Relu", ["t0"], ["t"])], "then", [],
                          [H.make_tensor_value_info("t", F, None)])
    # A nested If in the else branch, reading the outer h and the branch's own value.
    inner_then = H.make_graph([H.make_node("Neg", ["e0"], ["i"])], "inner_then", [], [H.make_tensor_value_info("i", F, None)])
    inner_else = H.make_graph([H.make_node("Add", ["e0", "h"], ["j"])], "inner_else", [], [H.make_tensor_value_info("j", F, None)])
    else_g = H.make_graph([H.make_node("Tanh", ["h"], ["e0"]),
                           H.make_node("If", ["cond"], ["e"], then_branch=inner_then, else_branch=inner_else)],
                          "else", [], [H.make_tensor_value_info("e", F, None)])
    nodes.append(H.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g))
    return nodes, inits


def shape_condition_model():
    # The condition is computed from the input's shape (seq > 6): folded at the default sizes it is a constant,
    # and it agrees at the probe and check sizes too (all above 6), so only its derivation from a symbolic
    # dimension can keep it computed. Folded, the file would take the then-branch at seq 5 as well.
    nodes = [H.make_node("Mul", ["x", "two"], ["xs"]), H.make_node("MatMul", ["xs", "w"], ["h"]),
             H.make_node("Shape", ["x"], ["s"]), H.make_node("Gather", ["s", "one"], ["n"], axis=0),
             H.make_node("Greater", ["n", "six"], ["cond"])]
    inits = [init("w", (8, 8)), NH.from_array(np.array(2, np.float32), "two"),
             NH.from_array(np.array(1, np.int64), "one"), NH.from_array(np.array(6, np.int64), "six")]
    then_g = H.make_graph([H.make_node("Relu", ["h"], ["t"])], "then", [], [H.make_tensor_value_info("t", F, None)])
    else_g = H.make_graph([H.make_node("Neg", ["h"], ["e"])], "else", [], [H.make_tensor_value_info("e", F, None)])
    nodes.append(H.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g))
    return nodes, inits


def loop_model():
    # A Loop of three iterations whose body reads the outer h: acc <- tanh(acc + h) (the carried value), and
    # the checks evaluate it iteration by iteration.
    nodes, inits = common()
    nodes = nodes[:2]  # the scaled product h only
    inits = inits[:1] + inits[2:3]  # w, two
    inits += [NH.from_array(np.array(3, np.int64), "trips"), NH.from_array(np.array(True), "go")]
    body = H.make_graph([H.make_node("Add", ["acc_in", "h"], ["s"]), H.make_node("Tanh", ["s"], ["acc_out"]),
                         H.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
                        [H.make_tensor_value_info("i", TP.INT64, []), H.make_tensor_value_info("cond_in", TP.BOOL, []),
                         H.make_tensor_value_info("acc_in", F, None)],
                        [H.make_tensor_value_info("cond_out", TP.BOOL, []), H.make_tensor_value_info("acc_out", F, None)])
    nodes.append(H.make_node("Loop", ["trips", "go", "h"], ["y"], body=body))
    return nodes, inits


failures = []
# name, graph, input dims, (batch, seq) test shapes (seq: the second axis of a rank-3 x), evaluated by the check
cases = [("if", if_model, ["N", 8], [(1, None), (3, None)], True),
         ("loop", loop_model, ["N", 8], [(1, None), (3, None)], True),
         ("shape_condition", shape_condition_model, ["batch", "seq", 8], [(1, 5), (3, 5), (1, 9), (2, 64)], True)]
for name, build, dims, shapes, evaluated in cases:
    nodes, inits = build()
    graph = H.make_graph(nodes, name, [H.make_tensor_value_info("x", F, dims)],
                         [H.make_tensor_value_info("y", F, dims)], initializer=inits)
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    src, out, report = (os.path.join(work, f"{name}{s}") for s in (".onnx", ".opt.onnx", ".json"))
    onnx.save(model, src)
    r = subprocess.run([eqsat_run, src, "-o", out, "--report", report], capture_output=True, text=True)
    print(f"{name}: exit {r.returncode}")
    print(r.stderr)
    if r.returncode != 0:
        failures.append(f"{name}: exit {r.returncode}")
        continue
    rep = json.load(open(report))
    check = rep.get("check", {})
    if evaluated and not (check.get("evaluated") and check.get("passed")):
        failures.append(f"{name}: the check did not run and pass: {check.get('reason')}")
    if evaluated and not rep.get("rules_used"):
        failures.append(f"{name}: nothing outside the control flow was optimized")
    a, b = ort.InferenceSession(src), ort.InferenceSession(out)
    for n, seq in shapes:
        for sign in (1, -1):  # each branch
            shape = (n, 8) if seq is None else (n, seq, 8)
            x = (sign * np.abs(rng.uniform(0.1, 1, shape))).astype(np.float32)
            want, got = a.run(None, {"x": x})[0], b.run(None, {"x": x})[0]
            diff = float(np.abs(want - got).max())
            print(f"  x {shape}, sign {sign:+d}: max abs diff {diff:.3g}")
            if diff > 1e-4 * max(1.0, float(np.abs(want).max())):
                failures.append(f"{name}: x {shape} sign {sign}: differs by {diff}")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("ok")
