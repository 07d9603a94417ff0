#!/usr/bin/env python3
"""Shapes computed from constants and from the shapes of weights, as the random-model campaign of issue 43 found
them refused ("cannot infer the shape"), and a Slice the check's evaluator read wrong. Each model is built here:

  constantofshape_concat       ConstantOfShape (float fill) of a Concat of two integer initializers: no Shape in
                               the graph, so the folder never ran and ONNX inference left the shape unknown.
  expand_shape_of_initializer  Expand to the Shape of a float initializer (the folder knew only the shapes of
                               graph inputs and computed tensors, not of initializers).
  range_mask_where             A causal mask from Range over a dimension of a weight, compared, fed to Where.
  slice_to_end_step2           Slice with step 2, end INT64_MAX and a negative axis: the check's evaluator turned
                               INT64_MAX into INT64_MIN (via double) and computed an empty slice (exit 4 before).
  ceil_mode_pool_window_in_padding  MaxPool ceil_mode whose last window would start in the end padding: ONNX's
                               shape inference counts it, onnxruntime does not; the check could not run.
  ceil_mode_pool_counted_extent_declared, ceil_mode_pool_window_larger_than_input  the same where the import
                               cannot take onnxruntime's extent (the file declares ONNX's; or no floor-mode
                               stand-in gives it): the check could not run (exit 4 under --check).

For each: eqsat-run with its defaults exits 0, the report says the check ran and passed, and the written file
gives the original's outputs in onnxruntime (at batch 1 and 3 where the batch is symbolic).

Usage: test_computed_shapes.py EQSAT_RUN WORK_DIR. Exits 77 (skipped) without numpy/onnx/onnxruntime.
"""
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as TP
    from onnx import helper as H
    from onnx import numpy_helper as NH
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: {e} (run tools/setup-python.sh)")
    sys.exit(77)

eqsat_run, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
rng = np.random.default_rng(43)


def ints(name, v):
    return NH.from_array(np.asarray(v, dtype=np.int64), name)


def floats(name, v):
    return NH.from_array(np.asarray(v, dtype=np.float32), name)


def vi(name, dims):
    return H.make_tensor_value_info(name, TP.FLOAT, dims)


def constantofshape_concat():
    nodes = [H.make_node("Concat", ["a", "b"], ["s"], axis=0),
             H.make_node("ConstantOfShape", ["s"], ["c"], value=floats("v", [0.5])),
             H.make_node("Mul", ["c", "x"], ["y"])]
    return nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], [ints("a", [2]), ints("b", [1])]


def expand_shape_of_initializer():
    nodes = [H.make_node("Shape", ["k"], ["s"]), H.make_node("Expand", ["w", "s"], ["e"]),
             H.make_node("Add", ["x", "e"], ["y"])]
    return nodes, [vi("x", ["batch", 2, 3])], [vi("y", ["batch", 2, 3])], [
        floats("k", rng.uniform(-1, 1, (2, 3))), floats("w", [0.5, 1.0, 2.0])]


def range_mask_where():
    nodes = [H.make_node("Shape", ["k"], ["s"]), H.make_node("Gather", ["s", "one"], ["n"], axis=0),
             H.make_node("Range", ["zero", "n", "one"], ["r"]), H.make_node("Unsqueeze", ["r", "a1"], ["i"]),
             H.make_node("Unsqueeze", ["r", "a0"], ["j"]), H.make_node("Greater", ["j", "i"], ["m"]),
             H.make_node("Where", ["m", "neg", "x"], ["y"])]
    return nodes, [vi("x", ["batch", 3, 3])], [vi("y", ["batch", 3, 3])], [
        ints("one", 1), ints("zero", 0), ints("a1", [1]), ints("a0", [0]), floats("neg", -1e4),
        floats("k", rng.uniform(-1, 1, (2, 3, 2)))]


def slice_to_end_step2():
    nodes = [H.make_node("Relu", ["x"], ["r"]), H.make_node("Slice", ["r", "st", "en", "ax", "sp"], ["y"])]
    return nodes, [vi("x", ["batch", 3, 2])], [vi("y", ["batch", 3, 1])], [
        ints("st", [1]), ints("en", [2**63 - 1]), ints("ax", [-1]), ints("sp", [2])]


def ceil_mode_pool_window_in_padding():
    # ceil_mode with a last window that would start in the end padding: ONNX's shape inference counts it (4
    # along W), onnxruntime drops it (3); the import must take onnxruntime's extent for the check to run.
    nodes = [H.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], pads=[0, 1, 0, 1], strides=[3, 3], ceil_mode=1),
             H.make_node("Relu", ["p"], ["r"]), H.make_node("Relu", ["r"], ["y"])]
    return nodes, [vi("x", ["batch", 3, 8, 8])], [vi("y", ["batch", 3, "oh", "ow"])], []


def ceil_mode_pool_counted_extent_declared():
    # The same pooling, its output also a graph output declared with ONNX's counted extent (4 along W): the
    # import cannot take onnxruntime's extent, so the pooling's outputs and their readers are read as shapes that
    # depend on values (the check takes onnxruntime's extent from its evaluation).
    nodes = [H.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], pads=[0, 1, 0, 1], strides=[3, 3], ceil_mode=1),
             H.make_node("Relu", ["p"], ["r"]), H.make_node("Relu", ["r"], ["y"])]
    return nodes, [vi("x", ["batch", 3, 8, 8])], [vi("y", ["batch", 3, "oh", "ow"]), vi("p", ["batch", 3, 3, 4])], []


def ceil_mode_pool_window_larger_than_input():
    # ceil_mode where one axis's window is larger than the padded input (H: 1 < 3) and the other's last window
    # starts in the end padding (W: ONNX counts 2, onnxruntime 1): no floor-mode stand-in gives the true extent.
    nodes = [H.make_node("Relu", ["x"], ["xr"]),
             H.make_node("MaxPool", ["xr"], ["p"], kernel_shape=[3, 3], pads=[0, 2, 0, 2], strides=[3, 3], ceil_mode=1),
             H.make_node("Relu", ["p"], ["r"]), H.make_node("Relu", ["r"], ["y"])]
    return nodes, [vi("x", ["batch", 4, 1, 1])], [vi("y", ["batch", 4, "oh", "ow"])], []


failures = []
for build in (constantofshape_concat, expand_shape_of_initializer, range_mask_where, slice_to_end_step2,
              ceil_mode_pool_window_in_padding, ceil_mode_pool_counted_extent_declared,
              ceil_mode_pool_window_larger_than_input):
    name = build.__name__
    nodes, inputs, outputs, inits = build()
    model = H.make_model(H.make_graph(nodes, name, inputs, outputs, initializer=inits),
                         opset_imports=[H.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    src, out, report = (os.path.join(work, name + s) for s in (".onnx", ".opt.onnx", ".json"))
    onnx.save(model, src)
    r = subprocess.run([eqsat_run, src, "-o", out, "--report", report], capture_output=True, text=True)
    print(f"{name}: exit {r.returncode}\n{r.stderr}")
    if r.returncode != 0:
        failures.append(f"{name}: exit {r.returncode}")
        continue
    check = json.load(open(report)).get("check", {})
    if not (check.get("evaluated") and check.get("passed")):
        failures.append(f"{name}: the check did not run and pass: {check.get('reason')}")
    onnx.checker.check_model(onnx.load(out), full_check=True)
    a, b = ort.InferenceSession(src), ort.InferenceSession(out)
    dims = [d.dim_param or d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    for batch in (1, 3):
        shape = [batch if isinstance(d, str) else d for d in dims]
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        want, got = a.run(None, {"x": x})[0], b.run(None, {"x": x})[0]
        if want.shape != got.shape or not np.allclose(want, got, rtol=1e-5, atol=1e-5):
            failures.append(f"{name}: x {shape}: the written file differs from the original")
        print(f"  x {shape}: equal")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("ok")
