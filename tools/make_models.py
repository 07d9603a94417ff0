#!/usr/bin/env python3
"""Builds the small bundled ONNX models in corpus/models/ with the onnx helper API.

Each model exercises a part of the importer and of the rule corpus (docs/eqsat-run.md):
  inception_block  convolutions with bias and relu side by side, max pooling, concat
  shared_matmul    two matmuls that share their input (the multi-pattern rule's case)
  mlp              Gemm (transB, bias, alpha), relu, softmax
  resnet_block     conv + batchnorm + relu, residual add, global average pool, flatten, Gemm
  attention        three projections of one input, transpose, scaled scores, softmax
  opaque_ops       LeakyRelu and Resize (outside the vocabulary) between convolutions

It also writes the malformed models of eqsat-run's error tests to tests/python/data/ (opset 22, an
unbound symbolic dimension, an unnamed one, an operator whose output shape cannot be inferred, external data
outside the model's folder or too short), the models with a symbolic batch of the check at a second batch size
(flatten_batch, row_norms, row_norms_mixed, batch_one_only, head_reshapes), models of opsets 18, 20 and 21, one whose
weights are external data (external_data.onnx + external_data.bin), and dilated_conv (dilated convolutions:
grouped, strided, padded, SAME, next to undilated ones on the same input).

Usage: .venv/bin/python tools/make_models.py [OUT_DIR]   (default corpus/models; tools/setup-python.sh
makes .venv). The output is deterministic: the same bytes on every run.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8  # readable by the ONNX 1.12 C++ library that eqsat-run links


class Builder:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def weight(self, name, shape, scale=0.3):
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, out=None, **attrs):
        self.count += 1
        out = out or f"{op.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{self.count}", **attrs))
        return out

    def conv(self, x, cin, cout, k, relu=True, bias=True, stride=1, out=None):
        w = self.weight(f"conv{self.count + 1}.w", (cout, cin, k, k))
        inputs = [x, w] + ([self.weight(f"conv{self.count + 1}.b", (cout,), 0.1)] if bias else [])
        y = self.node("Conv", inputs, None if relu else out, kernel_shape=[k, k], pads=[k // 2] * 4,
                      strides=[stride, stride])
        return self.node("Relu", [y], out) if relu else y

    def save(self, inputs, outputs, out_dir, opset=OPSET, ir_version=IR_VERSION):
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="tensor-eqsat make_models.py")
        model.ir_version = ir_version
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(out_dir, self.name + ".onnx")
        onnx.save(model, path)
        return path


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def inception_block(out_dir):
    b = Builder("inception_block", 1)
    x = "x"
    a = b.conv(x, 8, 8, 1)
    c = b.conv(x, 8, 8, 3)
    d = b.conv(b.conv(x, 8, 4, 1), 4, 8, 3)
    p = b.node("MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    e = b.conv(p, 8, 8, 1)
    cat = b.node("Concat", [a, c, d, e], axis=1)
    b.conv(cat, 32, 16, 1, out="y")
    return b.save([tensor("x", [1, 8, 12, 12])], [tensor("y", [1, 16, 12, 12])], out_dir)


def shared_matmul(out_dir):
    b = Builder("shared_matmul", 2)
    y1 = b.node("MatMul", ["x", b.weight("w1", (16, 24))])
    b.node("Relu", [y1], "y1")
    b.node("MatMul", ["x", b.weight("w2", (16, 24))], "y2")
    return b.save([tensor("x", [4, 16])], [tensor("y1", [4, 24]), tensor("y2", [4, 24])], out_dir)


def mlp(out_dir):
    b = Builder("mlp", 3)
    h = b.node("Gemm", ["x", b.weight("fc1.w", (32, 16)), b.weight("fc1.b", (32,), 0.1)], transB=1)
    h = b.node("Relu", [h])
    h = b.node("Gemm", [h, b.weight("fc2.w", (32, 32)), b.weight("fc2.b", (32,), 0.1)], alpha=0.5, beta=2.0)
    h = b.node("Relu", [h])
    h = b.node("Gemm", [h, b.weight("fc3.w", (10, 32)), b.weight("fc3.b", (10,), 0.1)], transB=1)
    b.node("Softmax", [h], "y", axis=-1)
    return b.save([tensor("x", [2, 16])], [tensor("y", [2, 10])], out_dir)


def resnet_block(out_dir):
    b = Builder("resnet_block", 4)

    def conv_bn(x, cin, cout, k, relu):
        y = b.conv(x, cin, cout, k, relu=False, bias=False)
        i = b.count
        bn = b.node("BatchNormalization", [y, b.weight(f"bn{i}.scale", (cout,)), b.weight(f"bn{i}.bias", (cout,)),
                                           b.weight(f"bn{i}.mean", (cout,), 0.1),
                                           b.const(f"bn{i}.var", b.rng.uniform(0.5, 1.5, cout).astype(np.float32))],
                    epsilon=1e-3)
        return b.node("Relu", [bn]) if relu else bn

    stem = conv_bn("x", 3, 8, 3, True)
    h = conv_bn(conv_bn(stem, 8, 8, 3, True), 8, 8, 3, False)
    h = b.node("Relu", [b.node("Add", [h, stem])])
    g = b.node("Flatten", [b.node("GlobalAveragePool", [h])], axis=1)
    b.node("Gemm", [g, b.weight("fc.w", (5, 8)), b.weight("fc.b", (5,), 0.1)], "y", transB=1)
    return b.save([tensor("x", [2, 3, 10, 10])], [tensor("y", [2, 5])], out_dir)


def attention(out_dir):
    b = Builder("attention", 5)
    d = 16
    q = b.node("MatMul", ["x", b.weight("wq", (d, d))])
    k = b.node("MatMul", ["x", b.weight("wk", (d, d))])
    v = b.node("MatMul", ["x", b.weight("wv", (d, d))])
    s = b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 2, 1])])
    s = b.node("Div", [s, b.const("scale", np.array(np.sqrt(d), dtype=np.float32))])
    a = b.node("MatMul", [b.node("Softmax", [s], axis=-1), v])
    b.node("Add", [b.node("MatMul", [a, b.weight("wo", (d, d))]), "x"], "y")
    return b.save([tensor("x", [2, 6, d])], [tensor("y", [2, 6, d])], out_dir)


def opaque_ops(out_dir):
    b = Builder("opaque_ops", 6)
    h = b.conv("x", 4, 8, 3)
    h = b.node("LeakyRelu", [h], alpha=0.1)
    sizes = b.const("sizes", np.array([1, 8, 12, 12], dtype=np.int64))
    h = b.node("Resize", [h, "", "", sizes], mode="nearest")
    h = b.conv(h, 8, 8, 1)
    b.conv(h, 8, 8, 1, out="y")
    return b.save([tensor("x", [1, 4, 6, 6])], [tensor("y", [1, 8, 12, 12])], out_dir)


def bad_models(out_dir):
    """Models eqsat-run must reject with exit code 2 (onnx.checker accepts them all)."""
    def save(name, graph, opset, domains=()):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] +
                                  [helper.make_opsetid(d, 1) for d in domains], producer_name="make_models.py")
        model.ir_version = IR_VERSION
        path = os.path.join(out_dir, name + ".onnx")
        onnx.save(model, path)
        return path

    relu = helper.make_node("Relu", ["x"], ["y"])
    # Opset 22 is newer than the importer reads (7 to 21).
    paths = [save("opset22", helper.make_graph([relu], "g", [tensor("x", [2, 3])], [tensor("y", [2, 3])]), 22)]
    # Relu twice: the rules remove one, so that the check has an optimized file to compare at each size.
    relu_twice = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    # A dimension with neither a value nor a name: given by input and axis (--dim x:0=VALUE).
    paths.append(save("unnamed_dim", helper.make_graph(relu_twice, "g", [tensor("x", [None, 3])],
                                                       [tensor("y", [None, 3])]), 13))
    # External data that must be refused: a location outside the model's folder, and a file too short.
    for name, location in (("external_escape", "../external_escape.bin"), ("external_short", "external_short.bin")):
        w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
        w.ClearField("raw_data")
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", "24")):
            entry = w.external_data.add()
            entry.key, entry.value = key, value
        add = helper.make_node("Add", ["x", "w"], ["y"])
        paths.append(save(name, helper.make_graph([add], "g", [tensor("x", [2, 3])], [tensor("y", [2, 3])], [w]), 13))
    with open(os.path.join(out_dir, "external_short.bin"), "wb") as f:
        f.write(np.zeros(2, np.float32).tobytes())  # 8 of the 24 bytes
    paths.append(os.path.join(out_dir, "external_short.bin"))
    paths.append(save("symbolic_dim", helper.make_graph(relu_twice, "g", [tensor("x", ["batch", 3])],
                                                        [tensor("y", ["batch", 3])]), 13))
    mystery = helper.make_node("MysteryOp", ["x"], ["y"], domain="com.example")
    paths.append(save("unknown_shape", helper.make_graph([mystery], "g", [tensor("x", [2, 3])],
                                                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                      13, ["com.example"]))
    return paths


def batch_models(out_dir):
    """Models with a symbolic batch for the check at a second batch size (tests/optimizer/onnx_check_test.cpp,
    tests/python/test_second_size.py)."""
    paths = []
    # Conv, Relu, Flatten, Gemm: the Flatten is where a batch fixed at import shows (a constant Reshape).
    b = Builder("flatten_batch", 11)
    h = b.conv("x", 3, 4, 3)
    f = b.node("Flatten", [h], axis=1)
    b.node("Gemm", [f, b.weight("fc.w", (5, 4 * 6 * 6), 0.1), b.weight("fc.b", (5,), 0.1)], "y", transB=1)
    paths.append(b.save([tensor("x", ["batch", 3, 6, 6])], [tensor("y", ["batch", 5])], out_dir))
    # y = x * |x|^2 row by row, and a graph equal to it at batch 1 only: x @ (x^T @ x) mixes the rows.
    b = Builder("row_norms", 12)
    sq = b.node("Mul", ["x", "x"])
    n = b.node("MatMul", [sq, b.const("ones", np.ones((3, 1), np.float32))])
    b.node("Mul", ["x", n], "y")
    paths.append(b.save([tensor("x", ["batch", 3])], [tensor("y", ["batch", 3])], out_dir))
    b = Builder("row_norms_mixed", 13)
    t = b.node("Transpose", ["x"], perm=[1, 0])
    g = b.node("MatMul", [t, "x"])
    b.node("MatMul", ["x", g], "y")
    paths.append(b.save([tensor("x", ["batch", 3])], [tensor("y", ["batch", 3])], out_dir))
    # Declares a symbolic batch but only works at batch 1 (Reshape to a constant [3]).
    b = Builder("batch_one_only", 14)
    r = b.node("Reshape", ["x", b.const("shape", np.array([3], np.int64))])
    b.node("Relu", [r], "y")
    paths.append(b.save([tensor("x", ["batch", 3])], [tensor("y", [3])], out_dir))
    # Attention-style reshapes of [seq, batch, embed] whose targets follow the batch: heads split
    # ([4, B, 8] -> [4, B*4, 2]), merged back, and seq and batch folded into rows ([4, B, 8] -> [4*B, 8]; at
    # batch 1 its first dimension equals the input's, though it is not a copy of it). The x*1 folds at import.
    b = Builder("head_reshapes", 15)
    heads = b.node("Reshape", ["x", b.const("split_heads", np.array([0, -1, 2], np.int64))])
    r = b.node("Relu", [heads])
    merged = b.node("Reshape", [r, b.const("merge_heads", np.array([0, -1, 8], np.int64))])
    one = b.node("Mul", [merged, b.const("one", np.ones((1,), np.float32))])
    rows = b.node("Reshape", [one, b.const("rows", np.array([-1, 8], np.int64))])
    b.node("MatMul", [rows, b.weight("proj", (8, 5))], "y")
    paths.append(b.save([tensor("x", [4, "batch", 8])], [tensor("y", ["rows", 5])], out_dir))
    return paths


def opset_models(out_dir):
    """Models of opsets 18, 20 and 21, whose operators changed after the opset 17 that the ONNX library linked by
    eqsat-run knows (tests/python/test_import_forms.py runs them through onnx.checker and onnxruntime)."""
    paths = []

    def save(b, inputs, outputs, opset, ir_version):
        paths.append(b.save(inputs, outputs, out_dir, opset, ir_version))

    # Opset 18: Reduce* take axes as an input, Split has num_outputs, Pad an optional axes input.
    b = Builder("opset18", 21)
    h = b.conv("x", 4, 8, 3)
    m = b.node("ReduceMean", [h, b.const("axes23", np.array([2, 3], np.int64))], keepdims=1)
    p1 = b.node("Split", [h], axis=1, num_outputs=2)
    b.nodes[-1].output.append("split_b")
    s = b.node("Add", [p1, "split_b"])
    s = b.node("Mul", [s, b.node("Slice", [m, b.const("s0", np.array([0], np.int64)),
                                           b.const("s4", np.array([4], np.int64)), b.const("s1", np.array([1], np.int64))])])
    b.node("Add", [s, b.node("ReduceSum", [h, b.const("axes1", np.array([1], np.int64))], keepdims=1)], "y")
    b.node("Pad", ["x", b.const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
                   b.const("pad_value", np.array(0.5, np.float32))], "z", mode="constant")
    save(b, [tensor("x", [2, 4, 6, 6])], [tensor("y", [2, 4, 6, 6]), tensor("z", [2, 4, 8, 8])], 18, 8)
    # Opset 20: Gelu (exact: the vocabulary's gelu; tanh: opaque), ReduceMin.
    b = Builder("opset20", 22)
    # Two matmuls of x: the rules merge them into one (written back as MatMul + Slice at opset 20).
    h = b.node("Gelu", [b.node("MatMul", ["x", b.weight("w1", (16, 16))])])
    h = b.node("Add", [h, b.node("MatMul", ["x", b.weight("w3", (16, 16))])])
    h = b.node("Gelu", [b.node("MatMul", [h, b.weight("w2", (16, 8))])], approximate="tanh")
    b.node("ReduceMin", [h, b.const("axes", np.array([1], np.int64))], "y", keepdims=1)
    save(b, [tensor("x", [3, 16])], [tensor("y", [3, 1])], 20, 9)
    # Opset 21: Flatten, Reshape, Transpose, Squeeze, Unsqueeze gained types; AveragePool (19) dilations.
    b = Builder("opset21", 23)
    h = b.conv("x", 3, 4, 3)
    h = b.node("AveragePool", [h], kernel_shape=[2, 2], strides=[2, 2], dilations=[1, 1])
    h = b.node("Transpose", [b.node("Reshape", [h, b.const("shape", np.array([2, 4, 16], np.int64))])], perm=[0, 2, 1])
    h = b.node("Unsqueeze", [b.node("Flatten", [h], axis=1), b.const("ax0", np.array([0], np.int64))])
    b.node("Gemm", [b.node("Squeeze", [h, "ax0"]), b.weight("fc", (5, 64), 0.1)], "y", transB=1)
    save(b, [tensor("x", [2, 3, 8, 8])], [tensor("y", [2, 5])], 21, 10)
    # External data: the weights in external_data.bin beside the model (onnx.save's own writer).
    b = Builder("external_data", 24)
    h = b.conv("x", 4, 8, 3)
    f = b.node("Flatten", [h], axis=1)
    g = b.node("Gemm", [f, b.weight("fc.w", (5, 8 * 6 * 6), 0.1), b.weight("fc.b", (5,), 0.1)], transB=1)
    b.node("Relu", [b.node("Relu", [g])], "y")  # one Relu too many: something for the check to compare
    graph = helper.make_graph(b.nodes, b.name, [tensor("x", [1, 4, 6, 6])], [tensor("y", [1, 5])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="tensor-eqsat make_models.py")
    model.ir_version = IR_VERSION
    path = os.path.join(out_dir, "external_data.onnx")
    if os.path.exists(os.path.join(out_dir, "external_data.bin")):
        os.remove(os.path.join(out_dir, "external_data.bin"))  # onnx.save appends to an existing data file
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="external_data.bin")
    onnx.checker.check_model(path, full_check=True)
    paths += [path, os.path.join(out_dir, "external_data.bin")]
    return paths


def torch_ops_model(out_dir):
    """The operators of real PyTorch exports at opset 17 (tests/programs/eqsat_run.cmake runs it through
    onnx.checker, onnxruntime and --check): a zero Pad folded into a counted AveragePool and one that stays
    (before a MaxPool), Clip with fractional bounds, ReduceMean, LayerNormalization, PyTorch's erf-form GELU,
    Pow by 2, 0.5 and 1, Sqrt, Erf."""
    b = Builder("torch_ops", 25)
    h = b.conv("x", 4, 8, 3)
    a = b.node("AveragePool", [b.node("Pad", [h, b.const("pads_hw", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])],
               kernel_shape=[3, 3])
    m = b.node("MaxPool", [b.node("Pad", [h, b.const("pads_low", np.array([0, 0, 0, 1, 0, 0, 1, 0], np.int64))])],
               kernel_shape=[2, 2], strides=[2, 2])
    c = b.node("Clip", [a, b.const("lo", np.array(-0.5, np.float32)), b.const("hi", np.array(1.25, np.float32))])
    s = b.node("Add", [b.node("ReduceMean", [c], axes=[2, 3], keepdims=0),
                       b.node("ReduceMean", [m], axes=[-1, -2], keepdims=0)])
    n = b.node("LayerNormalization", [s, b.weight("ln.scale", (8,)), b.weight("ln.bias", (8,), 0.1)], axis=-1,
               epsilon=1e-5)
    e = b.node("Erf", [b.node("Div", [n, b.const("sqrt2", np.array(1.4142135, np.float32))])])
    g = b.node("Mul", [b.node("Mul", [n, b.node("Add", [e, b.const("one", np.array(1.0, np.float32))])]),
                       b.const("half", np.array(0.5, np.float32))])
    p = b.node("Pow", [b.node("Pow", [g, b.const("two", np.array(2.0, np.float32))]), "half"])
    b.node("Pow", [b.node("Sqrt", [b.node("Add", [p, "one"])]), "one"], "y")
    b.node("Erf", [n], "z")
    graph = helper.make_graph(b.nodes, b.name, [tensor("x", [2, 4, 6, 6])], [tensor("y", [2, 8]), tensor("z", [2, 8])],
                              b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="tensor-eqsat make_models.py")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(out_dir, "torch_ops.onnx")
    onnx.save(model, path)
    return [path]


def dilated_models(out_dir):
    """Dilated convolutions (ONNX dilations): grouped, strided, padded (symmetric, and asymmetric = SAME), plus an
    undilated and a dilated conv of one input added together (a rule for undilated convs must not merge them)."""
    b = Builder("dilated_conv", 25)
    h = b.node("Conv", ["x", b.weight("c1.w", (8, 4, 3, 3)), b.weight("c1.b", (8,), 0.1)], kernel_shape=[3, 3],
               dilations=[2, 2], pads=[2, 2, 2, 2])
    h = b.node("Relu", [h])
    a = b.node("Conv", [h, b.weight("c2.w", (8, 8, 3, 3))], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    d = b.node("Conv", [h, b.weight("c3.w", (8, 8, 3, 3))], kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2])
    h = b.node("Add", [a, d])
    h = b.node("Conv", [h, b.weight("c4.w", (8, 2, 3, 3))], kernel_shape=[3, 3], dilations=[2, 1], pads=[1, 1, 1, 1],
               strides=[2, 2], group=4)
    # SAME as explicit pads (onnxruntime refuses auto_pad SAME with dilations): the dilated extent is 3x4, so
    # the columns get 1 before and 2 after, which the importer reads as SAME.
    h = b.node("Conv", [h, b.weight("c5.w", (8, 8, 3, 2))], kernel_shape=[3, 2], dilations=[1, 3], pads=[1, 1, 1, 2])
    h = b.node("Conv", [h, b.weight("c6.w", (4, 8, 1, 1))], kernel_shape=[1, 1])
    b.node("Relu", [b.node("Relu", [b.node("Tanh", [h])])], "y")  # one Relu too many: something for the check
    return [b.save([tensor("x", [1, 4, 12, 12])], [tensor("y", [1, 4, 5, 6])], out_dir)]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "corpus", "models")
    os.makedirs(out_dir, exist_ok=True)
    paths = [make(out_dir) for make in (inception_block, shared_matmul, mlp, resnet_block, attention, opaque_ops)]
    bad_dir = os.path.join(root, "tests", "python", "data")
    os.makedirs(bad_dir, exist_ok=True)
    for path in (paths + bad_models(bad_dir) + batch_models(bad_dir) + opset_models(bad_dir) + torch_ops_model(bad_dir)
                 + dilated_models(bad_dir)):
        print(f"make_models: {os.path.relpath(path, root)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
