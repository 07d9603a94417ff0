#!/usr/bin/env python3
"""Textbook improvements on tiny graphs: each is made by eqsat-run with the default rules and cost model.

  conv_bn           Conv -> BatchNormalization with constant weights: the batch norm is folded into the
                    convolution's weights and bias at import (the form runtimes run it in): no
                    BatchNormalization in the output.
  double_transpose  Transpose(0,2,1) twice on a 3-d tensor: the pair cancels (rule transpose-swap-last-twice).
  mul_one_add_zero  x * 1 + 0 with constant ones and zeros: both removed at import.
  shared_matmuls_*  two MatMuls of one input, concatenated or summed: one MatMul of the merged weights.
For each: the output has fewer nodes than the input and none of the removed operator types, passes
onnx.checker, eqsat-run --check passes, and onnxruntime gives the original's outputs.

Usage: test_tiny_rewrites.py EQSAT_RUN RULES WORK_DIR. Exits 77 (skipped) without numpy/onnx/onnxruntime.
"""
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: {e} (run tools/setup-python.sh)")
    sys.exit(77)


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def constant(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def models():
    rng = np.random.default_rng(0)
    yield ("conv_bn", {"BatchNormalization"},
           [helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
           [tensor("x", [1, 4, 8, 8])], [tensor("y", [1, 6, 8, 8])],
           [constant("w", rng.normal(size=(6, 4, 3, 3))), constant("cb", rng.normal(size=6)),
            constant("s", rng.uniform(0.5, 1.5, 6)), constant("b", rng.normal(size=6)),
            constant("m", rng.normal(size=6)), constant("v", rng.uniform(0.5, 1.5, 6))])
    yield ("double_transpose", {"Transpose"},
           [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
            helper.make_node("Transpose", ["t"], ["u"], perm=[0, 2, 1]),
            helper.make_node("Relu", ["u"], ["y"])],
           [tensor("x", [2, 3, 4])], [tensor("y", [2, 3, 4])], [])
    # Two MatMuls sharing their input whose results are concatenated, or summed: one MatMul of the
    # concatenated (or summed) weights, computed once at load time (matmul-concat-columns-merge,
    # matmul-factor-left).
    for consumer in ("Concat", "Add"):
        yield (f"shared_matmuls_{consumer.lower()}", {"Concat", "Add"},
               [helper.make_node("MatMul", ["x", "w1"], ["a"]), helper.make_node("MatMul", ["x", "w2"], ["b"]),
                helper.make_node(consumer, ["a", "b"], ["y"], **({"axis": 1} if consumer == "Concat" else {}))],
               [tensor("x", [64, 256])], [tensor("y", [64, 512 if consumer == "Concat" else 256])],
               [constant("w1", rng.normal(size=(256, 256))), constant("w2", rng.normal(size=(256, 256)))])
    yield ("mul_one_add_zero", {"Mul", "Add"},
           [helper.make_node("Mul", ["x", "one"], ["t"]), helper.make_node("Add", ["t", "zero"], ["u"]),
            helper.make_node("Tanh", ["u"], ["y"])],
           [tensor("x", [2, 3, 4])], [tensor("y", [2, 3, 4])],
           [constant("one", np.ones(1)), constant("zero", np.zeros((3, 4)))])


def run(path, feeds):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def main():
    exe, rules, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = []
    for name, removed, nodes, inputs, outputs, inits in models():
        model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, inits),
                                  opset_imports=[helper.make_opsetid("", 13)])
        onnx.checker.check_model(model, full_check=True)
        source, out = os.path.join(work, name + ".onnx"), os.path.join(work, name + ".opt.onnx")
        onnx.save(model, source)
        proc = subprocess.run([exe, source, "--rules", rules, "-o", out, "--check"], capture_output=True, text=True)
        if proc.returncode != 0:
            failures.append(f"{name}: eqsat-run exited {proc.returncode}: {proc.stderr.strip()}")
            continue
        optimized = onnx.load(out)
        onnx.checker.check_model(optimized, full_check=True)
        types = [n.op_type for n in optimized.graph.node]
        if len(types) >= len(nodes) or removed & set(types):
            failures.append(f"{name}: not improved: {[n.op_type for n in nodes]} -> {types}")
        shape = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
        feeds = {"x": np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)}
        want, got = run(source, feeds), run(out, feeds)
        if not all(np.allclose(g, w, rtol=1e-4, atol=1e-5) for w, g in zip(want, got)):
            failures.append(f"{name}: onnxruntime gives other outputs for the optimized model")
        print(f"{name}: {[n.op_type for n in nodes]} -> {types}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
