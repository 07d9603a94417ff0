#!/usr/bin/env python3
"""Writes the malformed ONNX models of the bad-input table (docs/errors.md, tests/programs/errors.cmake).

Usage: .venv/bin/python tests/programs/bad_inputs/make_bad_inputs.py   (tools/setup-python.sh makes .venv)
The output is deterministic; the .onnx files are committed, so the tests do not need Python.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tensor-eqsat")
    model.ir_version = 8
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def weight(name, shape):
    return numpy_helper.from_array(np.full(shape, 0.5, dtype=np.float32), name)


def main():
    # An operator no ONNX opset defines.
    save("unknown_op", [helper.make_node("Frobnicate", ["x"], ["y"], name="frob")], [tensor("x", [2, 3])],
         [tensor("y", [2, 3])])
    # Relu with two inputs.
    save("wrong_arity", [helper.make_node("Relu", ["x", "x"], ["y"], name="relu2")], [tensor("x", [2, 3])],
         [tensor("y", [2, 3])])
    # MatMul of [2,3] by [4,5].
    save("shape_mismatch", [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [tensor("x", [2, 3])],
         [tensor("y", [2, 5])], [weight("w", [4, 5])])
    # Two nodes that feed each other: not a DAG.
    save("cyclic", [helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2"),
                    helper.make_node("Add", ["x", "b"], ["y"], name="add")],
         [tensor("x", [2, 3])], [tensor("y", [2, 3])])
    # An input with 2^31 * 2^31 * 4 elements: the element count does not fit in 64 bits of bytes.
    save("huge_dim", [helper.make_node("Relu", ["x"], ["y"], name="relu")], [tensor("x", [2**31, 2**31, 4])],
         [tensor("y", [2**31, 2**31, 4])])
    # A convolution with stride -1.
    save("negative_stride", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3],
                                              strides=[-1, -1], pads=[1, 1, 1, 1])],
         [tensor("x", [1, 2, 6, 6])], [tensor("y", [1, 4, 6, 6])], [weight("w", [4, 2, 3, 3])])
    # The first half of a bundled model.
    with open(os.path.join(OUT, "..", "..", "..", "corpus", "models", "mlp.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])


if __name__ == "__main__":
    main()
