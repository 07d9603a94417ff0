#!/usr/bin/env python3
"""Random valid ONNX models over eqsat-run's vocabulary, and a differential campaign against eqsat-run.

  random_models.py generate SEED... [-o DIR]           write seed-N.onnx for each seed (SEED or A-B ranges)
  random_models.py campaign --binary EQSAT_RUN ...     generate, optimize, compare in onnxruntime, classify

Every generated model passes onnx.checker.check_model(full_check=True) and runs in onnxruntime at every value of
its symbolic dimensions that the campaign compares (batch 1 and 3, seq 8 and 5, every combination, by default).
Models are float32 (token ids int64), opset 13, 17 or 18, with weights as initializers and a symbolic batch
dimension on some inputs (and a symbolic seq on some [batch, seq, d] ones). The generator favours the
structures the corpus's rules rewrite: several Convs or MatMuls reading one tensor (grouped, depthwise, strided,
padded, dilated), their outputs concatenated or summed, shared weights, Concat/Split pairs, chains of
Conv/BatchNormalization/activation, Transpose/Reshape pairs, broadcasting element-wise algebra, poolings with
every setting ONNX has. A model is deterministic in its seed (numpy's PCG64 seeded with it; the onnx and
onnxruntime versions only decide whether a candidate is valid).

--extended adds what exporters write around those (issue 43), the EXTENDED motifs:
  If            condition from the data (ReduceSum(t) > 0) or from a shape (Shape->Gather->Greater/Less/Equal
                against the batch or seq, so the branch taken changes between the compared sizes); then/else
                branches of the same shape whose nodes read tensors and weights of the outer graph by name,
                local initializers or Constants, MatMul/Conv with outer weights, and sometimes a nested If
  computed shapes  Expand(w, Shape(x)); torch's cls.expand(x.size(0), -1, -1) (Concat of the batch and -1s,
                ConstantOfShape, Equal, Where on that shape, then Expand), concatenated or added; ConstantOfShape
                of Shape(x) or of the batch concatenated with constants; Range over a length from Shape (cast and
                added, or gathered from a position table); CumSum of a float tensor and position ids from
                CumSum(ConstantOfShape(Shape(x)[:2])) - 1; Where with broadcasting, and a causal mask from
                Range(seq) in an attention head; Reshape targets from Shape/Gather/Concat (x.view(x.size(0), -1),
                multi-head split and merge)
  value-shaped  NonZero, Compress by a computed mask, Unique, TopK with a computed k (reduced back to a known
                shape), a Loop whose carried value grows each iteration (constant or data-dependent trip count),
                Scan over the first axis (state and stacked scan output)
  inputs        more symbolic batches and [batch, seq, d] inputs, token ids (int64 [batch, seq]) gathered from an
                embedding table
Shapes ONNX cannot infer (Range, Where on a computed shape) are declared to the generator's own inference; 30% of
such models also carry them as value_info.

The campaign runs `eqsat-run MODEL -o OUT --report R` (no --dim: eqsat-run picks the values itself; --auto-dim V
passes `--dim NAME=V` for each symbolic dimension, as binaries before issue 43 needed, plus each --config's
options), then runs the original and the written file in onnxruntime on the same seeded inputs at each --sizes
point of the symbolic dimensions and classifies the run (docs/hardening.md):

  ok-optimized  exit 0 (or 4, check could not run), a rewritten file equal to the original in onnxruntime
  ok-kept       as above, eqsat-run kept the original graph (report's kept_original, or no rule used)
  refused       exit 2 (bad input / unsupported)
  rejected      exit 5 (its own check found a difference; the input is written) or exit 1 (binaries before the check-by-default)
  crash         exit 3, another exit status, or a signal
  hang          ran past --timeout
  WRONG         the written file differs from the original beyond tolerance, fails (invalid, or onnxruntime
                rejects it) at a shape the original runs at, or changed the model's inputs/outputs; whatever the
                exit status was (a file known to be wrong must not be left at the output path)

Tolerance: an output element passes when |opt - orig| <= atol + rtol * max|orig| (max over that output tensor),
rtol 1e-3 and atol 1e-5 by default: float32 re-association of sums stays orders of magnitude below it, a wrong
rewrite (channels sent to the wrong group, a constant baked in) is of the order of the values themselves.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH = "batch"
SEQ = "seq"
SYMBOLS = (BATCH, SEQ)
INT64_MAX = 2**63 - 1


# ----------------------------------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------------------------------

class Reject(Exception):
    """A candidate node or model that is not valid; the generator tries something else."""


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


class Builder:
    """One model under construction: inputs, initializers, nodes, and every tensor's inferred shape."""

    def __init__(self, rng: np.random.Generator, opset: int):
        self.rng = rng
        self.opset = opset
        self.inputs: list[onnx.ValueInfoProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.nodes: list[onnx.NodeProto] = []
        self.shapes: dict[str, tuple] = {}   # tensor -> dims, each an int or the str BATCH
        self.pool: list[str] = []            # float tensors nodes may read (inputs and node outputs)
        self.consumers: dict[str, int] = {}
        self.ranges: dict[str, tuple] = {}   # input -> (lo, hi) of its random values, when not [-1, 1)
        self.counter = 0
        self.motifs: list[str] = []
        self.declared: dict[str, tuple] = {}  # float tensors whose shape ONNX cannot infer (Range, Where, ...)
        self.conds: list[str] = []            # bool scalars an If may read

    # names ------------------------------------------------------------------------------------------------------
    def name(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    # leaves -----------------------------------------------------------------------------------------------------
    def add_input(self, shape, lo=-1.0, hi=1.0, dtype=TensorProto.FLOAT):
        n = self.name("in")
        dims = [d if isinstance(d, int) else d for d in shape]
        self.inputs.append(helper.make_tensor_value_info(n, dtype, dims))
        self.shapes[n] = tuple(shape)
        if dtype == TensorProto.FLOAT:
            self.pool.append(n)
        if (lo, hi) != (-1.0, 1.0):
            self.ranges[n] = (lo, hi)
        return n

    def weight(self, shape, scale=None, values=None, prefix="w"):
        n = self.name(prefix)
        if values is None:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            s = scale if scale is not None else 1.0 / math.sqrt(max(fan_in, 1))
            values = self.rng.standard_normal(shape) * s
        arr = np.asarray(values, dtype=np.float32).reshape(shape)
        self.inits.append(numpy_helper.from_array(arr, n))
        self.shapes[n] = tuple(int(d) for d in shape)
        return n

    def ints(self, values, prefix="i"):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), n))
        return n

    # nodes ------------------------------------------------------------------------------------------------------
    def node(self, op, inputs, n_out=1, shape_value=False, shape=None, implicit=(), hidden=False, **attrs):
        """Adds a node if ONNX shape inference gives its outputs a known shape; returns the outputs or raises.
        shape_value: an integer or bool node (a shape computation: Shape, Gather, Concat of int64; a condition),
        not a pool tensor. shape: the one output's shape where ONNX cannot infer it (Range, Where of a computed
        mask, Expand to a Where): declared to the generator's shape inference only. implicit: outer tensors
        that the node's subgraphs read by name. hidden: a float tensor inside a motif whose shape the generator
        cannot name (a product of symbolic dimensions, [batch * heads, seq, d]): checked, not a pool tensor."""
        outs = [self.name(op.lower() + "_") for _ in range(n_out)]
        nd = helper.make_node(op, inputs, outs, **attrs)
        if shape_value or hidden:
            self._check(nd)
            shapes = [None] * n_out
        elif shape is not None:
            self._check(nd)
            shapes = [tuple(shape)]
            self.declared[outs[0]] = tuple(shape)
        else:
            shapes = self._infer(nd)
        self.nodes.append(nd)
        for i in list(inputs) + list(implicit):
            if i:
                self.consumers[i] = self.consumers.get(i, 0) + 1
        if shape_value or hidden:
            return outs if n_out > 1 else outs[0]
        for o, s in zip(outs, shapes):
            self.shapes[o] = s
            self.pool.append(o)
        return outs if n_out > 1 else outs[0]

    def _graph(self, nodes, outputs):
        vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)) for k, v in self.declared.items()]
        return helper.make_graph(nodes, "random", self.inputs, outputs, initializer=self.inits, value_info=vi)

    def _check(self, nd):
        """ONNX shape inference (strict) accepts the graph with nd: types and ranks agree."""
        m = self._model(self._graph(self.nodes + [nd], []))
        try:
            onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        except Exception as e:  # noqa: BLE001
            raise Reject(f"{nd.op_type}: {e}") from None

    def _model(self, graph):
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="tensor-eqsat random_models.py")
        m.ir_version = 8
        return m

    def _infer(self, nd):
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in nd.output]
        m = self._model(self._graph(self.nodes + [nd], outs))
        try:
            inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        except Exception as e:  # noqa: BLE001 (onnx raises several kinds)
            raise Reject(f"{nd.op_type}: {e}") from None
        by_name = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        shapes = []
        for o in nd.output:
            v = by_name.get(o)
            if v is None or not v.type.tensor_type.HasField("shape"):
                raise Reject(f"{nd.op_type}: no shape")
            if v.type.tensor_type.elem_type != TensorProto.FLOAT:
                raise Reject(f"{nd.op_type}: not float")
            dims = []
            for d in v.type.tensor_type.shape.dim:
                if d.HasField("dim_value") and d.dim_value > 0:
                    dims.append(int(d.dim_value))
                elif d.HasField("dim_param") and d.dim_param in SYMBOLS:
                    dims.append(d.dim_param)
                else:
                    raise Reject(f"{nd.op_type}: unknown or empty dimension")
            if int(np.prod([x for x in dims if isinstance(x, int)] or [1])) > 200_000:
                raise Reject("too large")
            shapes.append(tuple(dims))
        return shapes

    def try_(self, fn, *args):
        """Runs a motif; on Reject undoes whatever it added."""
        state = (len(self.inputs), len(self.inits), len(self.nodes), len(self.pool), dict(self.consumers),
                 dict(self.ranges), len(self.motifs), dict(self.declared), len(self.conds))
        try:
            return fn(*args)
        except Reject:
            ni, nw, nn, npool, cons, rng_, nm, decl, nc = state
            del self.inputs[ni:], self.inits[nw:], self.nodes[nn:], self.pool[npool:], self.motifs[nm:]
            del self.conds[nc:]
            self.consumers, self.ranges, self.declared = cons, rng_, decl
            return None

    # model ------------------------------------------------------------------------------------------------------
    def finish(self):
        used = set(self.consumers)
        produced = [o for nd in self.nodes for o in nd.output]
        outs = [o for o in produced if o not in used and o in self.pool]
        if not outs:
            raise Reject("no outputs")
        outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(self.shapes[o])) for o in outs]
        inputs = [i for i in self.inputs if i.name in used]
        if not inputs:
            raise Reject("no inputs")
        # the shapes declared for the generator's own inference go into the file in some models (exporters write
        # value_info), so eqsat-run is tested both with and without them
        vi = []
        if self.declared and self.rng.random() < 0.3:
            vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)) for k, v in self.declared.items()
                  if k in set(produced)]
        g = helper.make_graph(self.nodes, "random", inputs, outputs, initializer=self.inits, value_info=vi)
        m = self._model(g)
        for k, (lo, hi) in self.ranges.items():
            if k in used:
                p = m.metadata_props.add()
                p.key, p.value = f"eqsat.input_range.{k}", f"{lo},{hi}"
        p = m.metadata_props.add()
        p.key, p.value = "eqsat.motifs", ",".join(self.motifs)
        return m


# ---------------------------------------------------------------------------------------------------------------
# Picking operands
# ---------------------------------------------------------------------------------------------------------------

def _concrete(shape, axes):
    return all(isinstance(shape[a], int) for a in axes)


def _pick(b: Builder, pred, recent=True):
    """A pool tensor satisfying pred, favouring recent ones (so graphs grow deep) and ones already read (so
    tensors get several readers)."""
    cands = [t for t in b.pool if pred(b.shapes[t])]
    if not cands:
        raise Reject("no operand")
    if recent and b.rng.random() < 0.6:
        cands = cands[-3:]
    return cands[int(b.rng.integers(len(cands)))]


def _image(s):
    return len(s) == 4 and _concrete(s, [1, 2, 3])


def _choice(b, seq, p=None):
    seq = list(seq)
    if p is not None:
        p = np.asarray(p, dtype=float)
        p = p / p.sum()
    return seq[int(b.rng.choice(len(seq), p=p))]


# ---------------------------------------------------------------------------------------------------------------
# Convolutions and poolings
# ---------------------------------------------------------------------------------------------------------------

def _conv_params(b: Builder, c, h, w, rewritable=False):
    """Shared settings of one or several Convs reading a [N, c, h, w] tensor. rewritable: more often the forms
    the corpus's conv rules are written for (SAME padding, equal strides 1 or 2, no dilation)."""
    r = b.rng
    if rewritable and r.random() < 0.6:
        divs = _divisors(c)
        u = r.random()
        g = 1 if u < 0.25 else c if u < 0.65 else _choice(b, divs)
        k = _choice(b, [1, 3, 5], [2, 4, 1])
        s = _choice(b, [1, 2])
        attrs = {"kernel_shape": [k, k], "group": int(g), "strides": [s, s]}
        if r.random() < 0.3:
            attrs["auto_pad"] = "SAME_UPPER"
        elif k > 1:
            attrs["pads"] = [k // 2] * 4
        return attrs, g
    divs = _divisors(c)
    u = r.random()
    g = 1 if u < 0.35 else c if u < 0.7 else _choice(b, divs)
    k = _choice(b, [1, 2, 3, 5], [2, 1, 4, 1])
    kh, kw = (k, k) if r.random() < 0.85 else (_choice(b, [1, 3]), _choice(b, [1, 3, 5]))
    s = _choice(b, [1, 2, 3], [5, 3, 1])
    sh, sw = (s, s) if r.random() < 0.9 else (1, 2)
    dil = (1, 1) if r.random() < 0.8 else (_choice(b, [1, 2]), 2)
    attrs = {"kernel_shape": [kh, kw], "group": int(g)}
    if (sh, sw) != (1, 1) or r.random() < 0.5:
        attrs["strides"] = [sh, sw]
    if dil != (1, 1):
        attrs["dilations"] = list(dil)
    mode = _choice(b, ["none", "sym", "same", "asym", "auto_same_upper", "auto_same_lower", "auto_valid"],
                   [2, 4, 3, 1, 1, 1, 1])
    ekh, ekw = (kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1
    if mode == "sym":
        ph, pw = int(r.integers(0, ekh // 2 + 2)), int(r.integers(0, ekw // 2 + 2))
        attrs["pads"] = [ph, pw, ph, pw]
    elif mode == "same":
        th, tw = ekh - 1, ekw - 1
        attrs["pads"] = [th // 2, tw // 2, th - th // 2, tw - tw // 2]
    elif mode == "asym":
        attrs["pads"] = [int(x) for x in r.integers(0, 3, size=4)]
    elif mode.startswith("auto_") and (dil == (1, 1) or mode == "auto_valid"):
        attrs["auto_pad"] = mode[5:].upper()   # onnxruntime has no dilated SAME_UPPER/LOWER
    return attrs, g


def _conv(b: Builder, x, attrs, g, out_ch=None, wname=None, bias=None):
    c = b.shapes[x][1]
    kh, kw = attrs["kernel_shape"]
    o = out_ch if out_ch is not None else g * _choice(b, [1, 2, 3] if g > 1 else [2, 4, 6, 8, 16])
    w = wname or b.weight([o, c // g, kh, kw])
    ins = [x, w]
    if bias is None:
        bias = b.rng.random() < 0.5
    if bias:
        ins.append(b.weight([o], scale=0.3))
    return b.node("Conv", ins, **attrs)


def m_conv(b: Builder):
    x = _pick(b, _image)
    _, c, h, w = b.shapes[x]
    attrs, g = _conv_params(b, c, h, w)
    y = _conv(b, x, attrs, g)
    b.motifs.append("conv")
    if b.rng.random() < 0.4:
        y = _activation(b, y)
    return y


def m_parallel_conv(b: Builder):
    """Two or three Convs with the same settings reading one tensor, concatenated on channels or summed: the
    pattern of the corpus's conv-concat and merge rules (grouped ones included: issue 42)."""
    x = _pick(b, _image)
    _, c, h, w = b.shapes[x]
    attrs, g = _conv_params(b, c, h, w, rewritable=True)
    n = _choice(b, [2, 3], [3, 1])
    same_o = b.rng.random() < 0.5
    o = g * _choice(b, [1, 2]) if g > 1 else _choice(b, [2, 4, 8])
    shared = b.rng.random() < 0.2
    wname = b.weight([o, c // g] + attrs["kernel_shape"]) if shared else None
    bias = b.rng.random() < 0.4
    ys = []
    for _ in range(n):
        oc = o if (same_o or shared) else g * _choice(b, [1, 2]) if g > 1 else _choice(b, [2, 4, 8])
        ys.append(_conv(b, x, attrs, g, out_ch=oc, wname=wname, bias=bias))
    u = b.rng.random()
    if u < 0.65:
        y = b.node("Concat", ys, axis=_choice(b, [1, -3], [4, 1]))
        b.motifs.append(f"parallel-conv-concat(g={g})")
    elif u < 0.85 and len({b.shapes[t] for t in ys}) == 1:
        y = b.node("Add", ys[:2])
        b.motifs.append(f"parallel-conv-add(g={g})")
    else:
        y = ys[-1]
        b.motifs.append(f"parallel-conv(g={g})")
    if b.rng.random() < 0.3:
        y = _activation(b, y)
    return y


def m_shared_weight_conv(b: Builder):
    """One weight read by Convs of two different tensors of the same channel count."""
    x = _pick(b, _image)
    c = b.shapes[x][1]
    others = [t for t in b.pool if t != x and _image(b.shapes[t]) and b.shapes[t][1] == c]
    if not others:
        y = b.node("Relu", [x])  # a second reader of the same channels
        others = [y]
    z = others[int(b.rng.integers(len(others)))]
    attrs, g = _conv_params(b, c, 0, 0)
    o = g * _choice(b, [1, 2]) if g > 1 else _choice(b, [2, 4])
    wname = b.weight([o, c // g] + attrs["kernel_shape"])
    y1 = _conv(b, x, attrs, g, out_ch=o, wname=wname, bias=False)
    y2 = _conv(b, z, attrs, g, out_ch=o, wname=wname, bias=False)
    b.motifs.append("shared-weight-conv")
    if b.shapes[y1] == b.shapes[y2] and b.rng.random() < 0.5:
        return b.node("Add", [y1, y2])
    return y2


def m_pool(b: Builder):
    x = _pick(b, _image)
    _, c, h, w = b.shapes[x]
    r = b.rng
    op = _choice(b, ["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"], [5, 5, 1.5, 0.5])
    if op.startswith("Global"):
        b.motifs.append(op)
        return b.node(op, [x])
    k = _choice(b, [1, 2, 3, 5], [1, 4, 4, 1])
    kh, kw = (k, k) if r.random() < 0.85 else (_choice(b, [1, 2, 3]), _choice(b, [2, 3]))
    s = _choice(b, [1, 2, 3], [3, 4, 1])
    attrs = {"kernel_shape": [kh, kw]}
    if s != 1 or r.random() < 0.5:
        attrs["strides"] = [s, s]
    mode = _choice(b, ["none", "sym", "asym", "auto_same_upper", "auto_same_lower", "auto_valid"], [3, 4, 1, 1, 1, 1])
    if mode == "sym":
        ph, pw = int(r.integers(0, kh)), int(r.integers(0, kw))
        attrs["pads"] = [ph, pw, ph, pw]
    elif mode == "asym":
        attrs["pads"] = [int(r.integers(0, kh)), int(r.integers(0, kw)), int(r.integers(0, kh)), int(r.integers(0, kw))]
    elif mode.startswith("auto_"):
        attrs["auto_pad"] = mode[5:].upper()
    if r.random() < 0.2:
        attrs["ceil_mode"] = 1
    if op == "AveragePool" and r.random() < 0.5:
        attrs["count_include_pad"] = 1
    if op == "MaxPool" and r.random() < 0.08:
        attrs["dilations"] = [2, 2]
    b.motifs.append(op + ("-ceil" if attrs.get("ceil_mode") else ""))
    return b.node(op, [x], **attrs)


def m_pad_then_window(b: Builder):
    """A zero Pad of the spatial axes before a Conv or AveragePool (PyTorch's form, folded by the importer)."""
    x = _pick(b, _image)
    r = b.rng
    sp = [int(v) for v in r.integers(0, 3, size=4)]
    pads = [0, 0, sp[0], sp[1], 0, 0, sp[2], sp[3]]
    y = b.node("Pad", [x, b.ints(pads)], mode="constant")
    _, c, h, w = b.shapes[y]
    if r.random() < 0.5:
        attrs, g = _conv_params(b, c, h, w)
        attrs.pop("pads", None), attrs.pop("auto_pad", None)
        b.motifs.append("pad-conv")
        return _conv(b, y, attrs, g)
    attrs = {"kernel_shape": [3, 3], "strides": [_choice(b, [1, 2])] * 2}
    if r.random() < 0.5:
        attrs["count_include_pad"] = 1
    b.motifs.append("pad-avgpool")
    return b.node("AveragePool", [y], **attrs)


def m_batchnorm(b: Builder):
    x = _pick(b, lambda s: len(s) >= 2 and isinstance(s[1], int) and len(s) <= 4)
    c = b.shapes[x][1]
    r = b.rng
    ins = [x, b.weight([c], values=1 + 0.2 * r.standard_normal(c)), b.weight([c], scale=0.2),
           b.weight([c], scale=0.2), b.weight([c], values=0.5 + r.random(c))]
    b.motifs.append("batchnorm")
    y = b.node("BatchNormalization", ins, epsilon=float(_choice(b, [1e-5, 1e-3])))
    if r.random() < 0.5:
        y = _activation(b, y)
    return y


def m_conv_bn_relu(b: Builder):
    x = _pick(b, _image)
    _, c, h, w = b.shapes[x]
    attrs, g = _conv_params(b, c, h, w)
    y = _conv(b, x, attrs, g)
    o = b.shapes[y][1]
    r = b.rng
    ins = [y, b.weight([o], values=1 + 0.2 * r.standard_normal(o)), b.weight([o], scale=0.2),
           b.weight([o], scale=0.2), b.weight([o], values=0.5 + r.random(o))]
    y = b.node("BatchNormalization", ins)
    b.motifs.append("conv-bn-act")
    return _activation(b, y)


# ---------------------------------------------------------------------------------------------------------------
# Matrix products
# ---------------------------------------------------------------------------------------------------------------

def _matrixish(s):
    return 2 <= len(s) <= 4 and _concrete(s, [len(s) - 1])


def m_matmul(b: Builder):
    x = _pick(b, _matrixish)
    s = b.shapes[x]
    k = s[-1]
    n = _choice(b, [1, 2, 4, 8, 16])
    r = b.rng
    if r.random() < 0.2 and len(s) >= 3 and isinstance(s[-3], int):
        wshape = [s[-3], k, n]   # batched weight, broadcast against x's leading dims
    else:
        wshape = [k, n]
    y = b.node("MatMul", [x, b.weight(wshape)])
    b.motifs.append("matmul")
    if r.random() < 0.5:
        y = b.node("Add", [y, b.weight([n], scale=0.3)])
    if r.random() < 0.4:
        y = _activation(b, y)
    return y


def m_parallel_matmul(b: Builder):
    """Several MatMuls of one tensor, concatenated on the last axis or summed (the merge rules)."""
    x = _pick(b, _matrixish)
    k = b.shapes[x][-1]
    cnt = _choice(b, [2, 3], [3, 1])
    same = b.rng.random() < 0.5
    n0 = _choice(b, [2, 4, 8])
    shared = b.weight([k, n0]) if b.rng.random() < 0.15 else None
    ys = []
    for _ in range(cnt):
        n = n0 if (same or shared) else _choice(b, [2, 4, 8])
        ys.append(b.node("MatMul", [x, shared or b.weight([k, n])]))
    u = b.rng.random()
    if u < 0.6:
        y = b.node("Concat", ys, axis=-1 if b.rng.random() < 0.7 else len(b.shapes[x]) - 1)
        b.motifs.append("parallel-matmul-concat")
    elif u < 0.85 and len({b.shapes[t] for t in ys}) == 1:
        y = b.node("Add", ys[:2])
        b.motifs.append("parallel-matmul-add")
    else:
        y = ys[0]
        b.motifs.append("parallel-matmul")
    return y


def m_matmul_pair(b: Builder):
    """A product of two computed tensors (attention's Q K^T), the second transposed if needed."""
    x = _pick(b, lambda s: 2 <= len(s) <= 4 and _concrete(s, [len(s) - 1, len(s) - 2]))
    s = b.shapes[x]
    perm = list(range(len(s)))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    xt = b.node("Transpose", [x], perm=perm)
    b.motifs.append("matmul-pair")
    y = b.node("MatMul", [x, xt])
    if b.rng.random() < 0.5:
        y = b.node("Softmax", [y], axis=-1)
    return y


def m_gemm(b: Builder):
    x = _pick(b, lambda s: len(s) == 2 and isinstance(s[1], int))
    k = b.shapes[x][1]
    n = _choice(b, [2, 4, 8, 16])
    r = b.rng
    attrs = {}
    trans_b = r.random() < 0.5
    if trans_b:
        attrs["transB"] = 1
    w = b.weight([n, k] if trans_b else [k, n])
    ins = [x, w]
    if r.random() < 0.7:
        ins.append(b.weight(_choice(b, [[n], [1, n], [1]]), scale=0.3))
        if r.random() < 0.3:
            attrs["beta"] = float(_choice(b, [0.5, 2.0]))
    if r.random() < 0.3:
        attrs["alpha"] = float(_choice(b, [0.5, 0.25, 2.0]))
    b.motifs.append("gemm")
    return b.node("Gemm", ins, **attrs)


# ---------------------------------------------------------------------------------------------------------------
# Element-wise
# ---------------------------------------------------------------------------------------------------------------

def _activation(b: Builder, x):
    op = _choice(b, ["Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "Erf", "SqrtSig", "Pow2", "Identity", "Neg",
                     "RecipSig", "Cos", "Sin"],
                 [6, 3, 3, 1.5, 0.7, 0.5, 0.5, 0.5, 0.3, 0.5, 0.5, 0.4, 0.4])
    if op == "Clip":
        lo, hi = _choice(b, [(0.0, 6.0), (-1.0, 1.0), (0.0, None), (-0.5, 0.75), (0.1, 0.9)])
        ins = [x, b.weight([], values=lo, prefix="c")]
        if hi is not None:
            ins.append(b.weight([], values=hi, prefix="c"))
        return b.node("Clip", ins)
    if op == "LeakyRelu":
        return b.node("LeakyRelu", [x], alpha=0.1)
    if op == "SqrtSig":
        return b.node("Sqrt", [b.node("Sigmoid", [x])])
    if op == "RecipSig":  # 1 / sigmoid(x): bounded away from 1/0
        return b.node("Reciprocal", [b.node("Sigmoid", [x])])
    if op == "Pow2":
        return b.node("Pow", [x, b.weight([], values=2.0, prefix="c")])
    return b.node(op, [x])


def m_activation(b: Builder):
    x = _pick(b, lambda s: True)
    b.motifs.append("act")
    return _activation(b, x)


def _broadcast_shape(b: Builder, s):
    """A shape that broadcasts to s: leading dims dropped, some dims 1; the batch dimension always 1 or dropped."""
    r = b.rng
    drop = int(r.integers(0, len(s) + 1))
    out = []
    for i, d in enumerate(s):
        if i < drop:
            continue
        out.append(1 if (not isinstance(d, int) or r.random() < 0.5) else d)
    return out


def m_binary(b: Builder):
    op = _choice(b, ["Add", "Mul", "Sub", "Div"], [4, 3, 2, 1.5])
    x = _pick(b, lambda s: True)
    s = b.shapes[x]
    r = b.rng
    u = r.random()
    if u < 0.35 and op != "Div":
        # another computed tensor that broadcasts with x, in either order
        others = [t for t in b.pool if t != x and _broadcasts(b.shapes[t], s)]
        if not others:
            raise Reject("no partner")
        y = others[int(r.integers(len(others)))]
        ins = [x, y] if r.random() < 0.5 else [y, x]
        b.motifs.append(op + "-tensors")
    elif u < 0.5:
        # a graph input that broadcasts (symbolic batch or 1)
        shp = _broadcast_shape(b, s)
        if op == "Div":
            y = b.add_input(shp, 0.5, 1.5)
        else:
            y = b.add_input(shp)
        ins = [x, y]
        b.motifs.append(op + "-input")
    elif u < 0.6:
        # the neutral constant (x*1, x+0), or a 0-d scalar
        val = 1.0 if op in ("Mul", "Div") else 0.0
        shp = [] if r.random() < 0.5 else _broadcast_shape(b, s)
        y = b.weight(shp, values=np.full(shp, val) if r.random() < 0.6 else None, scale=0.5)
        ins = [x, y] if op in ("Div", "Sub") or r.random() < 0.5 else [y, x]
        b.motifs.append(op + "-const")
    else:
        shp = _broadcast_shape(b, s)
        vals = None
        if op == "Div":
            n = int(np.prod(shp)) if shp else 1
            vals = (0.5 + 1.5 * r.random(n)) * r.choice([-1, 1], size=n)
        y = b.weight(shp, values=vals, scale=0.5)
        ins = [x, y] if op == "Div" or r.random() < 0.5 else [y, x]
        b.motifs.append(op + "-weight")
    return b.node(op, ins)


def _broadcasts(a, s):
    """a broadcasts with s to exactly s's shape at every batch value (batch only against batch or 1)."""
    if len(a) > len(s):
        return False
    for da, ds in zip(reversed(a), reversed(s)):
        if da == ds or da == 1:
            continue
        return False
    return True


def m_scale_algebra(b: Builder):
    """(x*s)+(y*s), x*a+x*b: the distributivity rules."""
    x = _pick(b, lambda s: True)
    s = b.shapes[x]
    sc = b.weight([] if b.rng.random() < 0.5 else _broadcast_shape(b, s), scale=0.7)
    y = b.node("Relu", [x]) if b.rng.random() < 0.5 else x
    p = b.node("Mul", [x, sc])
    q = b.node("Mul", [y, sc if b.rng.random() < 0.6 else b.weight([], scale=0.7)])
    b.motifs.append("scale-algebra")
    return b.node(_choice(b, ["Add", "Sub"]), [p, q])


# ---------------------------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------------------------

def m_concat(b: Builder):
    x = _pick(b, lambda s: len(s) >= 1)
    s = b.shapes[x]
    axes = [a for a in range(len(s)) if isinstance(s[a], int)]
    if not axes:
        raise Reject("no axis")
    a = _choice(b, axes)
    others = [t for t in b.pool if t != x and len(b.shapes[t]) == len(s)
              and all(b.shapes[t][i] == s[i] for i in range(len(s)) if i != a) and isinstance(b.shapes[t][a], int)]
    r = b.rng
    ins = [x]
    if others:
        ins += [others[int(r.integers(len(others)))] for _ in range(int(r.integers(1, 3)))]
    else:
        ins.append(b.node(_choice(b, ["Relu", "Sigmoid", "Tanh"]), [x]))
    if r.random() < 0.2:
        ins.append(x)   # the same tensor twice
    r.shuffle(ins)
    b.motifs.append("concat")
    return b.node("Concat", ins, axis=a if r.random() < 0.7 else a - len(s))


def m_concat_split(b: Builder):
    """A Concat whose parts are split again, at its own boundaries or elsewhere."""
    y = m_concat(b)
    nd = b.nodes[-1]
    a = nd.attribute[0].i % len(b.shapes[y])
    parts = [b.shapes[t][a] for t in nd.input]
    r = b.rng
    if r.random() < 0.5 or len(parts) < 2:
        total = b.shapes[y][a]
        if total < 2:
            raise Reject("too small")
        cut = int(r.integers(1, total))
        parts = [cut, total - cut]
    outs = _split(b, y, a, parts)
    b.motifs.append("concat-split")
    return outs[-1]


def _split(b: Builder, x, axis, parts):
    s = b.shapes[x]
    rk = len(s)
    ax = axis if b.rng.random() < 0.7 else axis - rk
    if b.opset >= 18 and b.rng.random() < 0.3 and len(set(parts)) == 1:
        return b.node("Split", [x], n_out=len(parts), axis=ax, num_outputs=len(parts))
    if len(set(parts)) == 1 and b.rng.random() < 0.3 and b.opset < 18:
        return b.node("Split", [x], n_out=len(parts), axis=ax)
    return b.node("Split", [x, b.ints(parts)], n_out=len(parts), axis=ax)


def m_split(b: Builder):
    x = _pick(b, lambda s: any(isinstance(d, int) and d >= 2 for d in s))
    s = b.shapes[x]
    axes = [a for a in range(len(s)) if isinstance(s[a], int) and s[a] >= 2]
    a = _choice(b, axes)
    d = s[a]
    r = b.rng
    k = 2 if d < 3 or r.random() < 0.7 else 3
    cuts = sorted(r.choice(np.arange(1, d), size=k - 1, replace=False).tolist())
    parts = [hi - lo for lo, hi in zip([0] + cuts, cuts + [d])]
    outs = _split(b, x, a, parts)
    b.motifs.append("split")
    return outs[int(r.integers(len(outs)))]


def m_slice(b: Builder):
    x = _pick(b, lambda s: any(isinstance(d, int) and d >= 2 for d in s))
    s = b.shapes[x]
    axes = [a for a in range(len(s)) if isinstance(s[a], int) and s[a] >= 2]
    r = b.rng
    a = _choice(b, axes)
    d = s[a]
    st = int(r.integers(0, d))
    en = int(r.integers(st + 1, d + 1))
    if r.random() < 0.2:
        st -= d   # negative start
    if en == d and r.random() < 0.3:
        en = INT64_MAX
    ins = [x, b.ints([st]), b.ints([en]), b.ints([a if r.random() < 0.7 else a - len(s)])]
    if r.random() < 0.15:
        ins.append(b.ints([_choice(b, [1, 2])]))
    b.motifs.append("slice")
    return b.node("Slice", ins)


def m_transpose(b: Builder):
    x = _pick(b, lambda s: len(s) >= 2)
    s = b.shapes[x]
    r = b.rng
    perm = r.permutation(len(s)).tolist()
    y = b.node("Transpose", [x], perm=perm)
    b.motifs.append("transpose")
    if r.random() < 0.35:
        inv = np.argsort(perm).tolist() if r.random() < 0.6 else r.permutation(len(s)).tolist()
        y = b.node("Transpose", [y], perm=inv)
        b.motifs.append("transpose-transpose")
    return y


def _factor(b: Builder, n, parts):
    """n as a product of `parts` positive integers."""
    out = []
    for _ in range(parts - 1):
        ds = _divisors(n)
        d = _choice(b, ds)
        out.append(d)
        n //= d
    out.append(n)
    b.rng.shuffle(out)
    return out


def m_reshape(b: Builder):
    x = _pick(b, lambda s: all(isinstance(d, int) for d in s[1:]) and len(s) >= 1)
    s = b.shapes[x]
    r = b.rng
    sym = not isinstance(s[0], int)
    u = r.random()
    if u < 0.2 and len(s) >= 2:
        y = b.node("Flatten", [x], axis=1 if sym or r.random() < 0.6 else int(r.integers(0, len(s) + 1)))
        b.motifs.append("flatten")
        return y
    if u < 0.3:
        a = int(r.integers(0, len(s) + 1))
        if b.opset >= 13:
            y = b.node("Unsqueeze", [x, b.ints([a])])
        else:
            y = b.node("Unsqueeze", [x], axes=[a])
        b.motifs.append("unsqueeze")
        if r.random() < 0.5:
            y = b.node("Squeeze", [y, b.ints([a])])
            b.motifs.append("squeeze")
        return y
    rest = int(np.prod(s[1:])) if len(s) > 1 else 1
    if sym:
        dims = [0] + _factor(b, rest, int(r.integers(1, 4)))
        if r.random() < 0.3 and len(dims) > 1:
            dims[int(r.integers(1, len(dims)))] = -1
    else:
        total = int(np.prod(s)) if s else 1
        dims = _factor(b, total, int(r.integers(1, 5)))
        if r.random() < 0.3:
            dims[int(r.integers(len(dims)))] = -1
    y = b.node("Reshape", [x, b.ints(dims)])
    b.motifs.append("reshape")
    if r.random() < 0.3:
        y = b.node("Reshape", [y, b.ints(list(s) if not sym else [0] + list(s[1:]))])
        b.motifs.append("reshape-back")
    return y


# ---------------------------------------------------------------------------------------------------------------
# Reductions and normalizations
# ---------------------------------------------------------------------------------------------------------------

def m_reduce_mean(b: Builder):
    x = _pick(b, lambda s: len(s) >= 1)
    s = b.shapes[x]
    r = b.rng
    k = int(r.integers(1, len(s) + 1))
    axes = sorted(r.choice(len(s), size=k, replace=False).tolist())
    axes = [a - len(s) if r.random() < 0.3 else a for a in axes]
    if r.random() < 0.3:
        r.shuffle(axes)
    keep = int(r.random() < 0.6)
    b.motifs.append("reducemean")
    if b.opset >= 18:
        return b.node("ReduceMean", [x, b.ints(axes)], keepdims=keep)
    return b.node("ReduceMean", [x], axes=axes, keepdims=keep)


def m_softmax(b: Builder):
    x = _pick(b, lambda s: len(s) >= 1)
    s = b.shapes[x]
    r = b.rng
    attrs = {}
    if r.random() < 0.7:
        attrs["axis"] = int(r.integers(-len(s), len(s)))
    b.motifs.append("softmax")
    return b.node("Softmax", [x], **attrs)


def m_layernorm(b: Builder):
    if b.opset < 17:
        raise Reject("opset")
    x = _pick(b, lambda s: len(s) >= 2 and isinstance(s[-1], int))
    d = b.shapes[x][-1]
    b.motifs.append("layernorm")
    return b.node("LayerNormalization", [x, b.weight([d], values=1 + 0.1 * b.rng.standard_normal(d)),
                                         b.weight([d], scale=0.1)], axis=-1, epsilon=1e-5)


def m_rms_norm(b: Builder):
    """LLaMA's and T5's RMS norm as PyTorch exports it: x * Reciprocal(Sqrt(mean(x^2 over the last axis) + eps))
    times a weight, the products in either order; sometimes the reduction takes two axes (then it is no RMS norm,
    only a product with a reciprocal). Its intermediate values join the pool: a later motif may read the
    Reciprocal's too."""
    x = _pick(b, lambda s: len(s) >= 2 and isinstance(s[-1], int))
    s = b.shapes[x]
    r = b.rng
    d = s[-1]
    sq = b.node("Pow", [x, b.weight([], values=2.0, prefix="c")])
    axes = [-1] if r.random() < 0.8 else [len(s) - 2, len(s) - 1]
    ms = (b.node("ReduceMean", [sq, b.ints(axes)], keepdims=1) if b.opset >= 18
          else b.node("ReduceMean", [sq], axes=axes, keepdims=1))
    sd = b.node("Sqrt", [b.node("Add", [ms, b.weight([], values=1e-6, prefix="c")])])
    inv = b.node("Reciprocal", [sd])
    normed = b.node("Mul", [x, inv] if r.random() < 0.6 else [inv, x])
    w = b.weight([d], values=1 + 0.1 * r.standard_normal(d))
    b.motifs.append("rms_norm")
    return b.node("Mul", [w, normed] if r.random() < 0.5 else [normed, w])


def m_gelu_tanh(b: Builder):
    """GELU's tanh approximation as the exporters write it: x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    with the cube as Pow(x, 3) (dynamo, GPT-2's gelu_new) or x * (x * x) (TorchScript), the products grouped
    either way; its intermediate values join the pool, so another motif may read one (then it is not one GELU)."""
    x = _pick(b, lambda s: True)
    r = b.rng
    const = lambda v: b.weight([], values=v, prefix="c")  # noqa: E731
    if r.random() < 0.5:
        cube = b.node("Pow", [x, const(3.0)])
        form = "pow"
    else:
        cube = b.node("Mul", [x, b.node("Mul", [x, x])])
        form = "mul"
    inner = b.node("Mul", [b.node("Add", [x, b.node("Mul", [cube, const(0.044715)])]), const(math.sqrt(2 / math.pi))])
    one_plus = b.node("Add", [b.node("Tanh", [inner]), const(1.0)])
    b.motifs.append(f"gelu-tanh({form})")
    if r.random() < 0.5:
        return b.node("Mul", [b.node("Mul", [x, const(0.5)]), one_plus])
    return b.node("Mul", [const(0.5), b.node("Mul", [x, one_plus])])


def m_cast_fp16(b: Builder):
    """A step in float16 between two Casts (the mixed precision exporters write, here the other way round): an
    activation, or a product or sum with a float16 weight; the float16 tensors stay out of the pool."""
    x = _pick(b, lambda s: True)
    r = b.rng
    h = b.node("Cast", [x], shape_value=True, to=TensorProto.FLOAT16)
    op = _choice(b, ["Relu", "Sigmoid", "Mul", "Add"])
    if op in ("Mul", "Add"):
        shape = _broadcast_shape(b, b.shapes[x])
        n = b.name("h")
        b.inits.append(numpy_helper.from_array(np.asarray(0.5 + r.random(shape), dtype=np.float16), n))
        y = b.node(op, [h, n], shape_value=True)
    else:
        y = b.node(op, [h], shape_value=True)
    b.motifs.append(f"cast-fp16-{op.lower()}")
    return b.node("Cast", [y], to=TensorProto.FLOAT)


def m_constant(b: Builder):
    """A constant operand for the ops that follow: an initializer or a Constant node, shaped like a tensor of
    the graph (batch 1) or small and random, sometimes with all elements equal (folding paths)."""
    r = b.rng
    if r.random() < 0.6:
        x = _pick(b, lambda s: True)
        shape = [d if isinstance(d, int) else 1 for d in b.shapes[x]]
    else:
        shape = [int(_choice(b, [1, 2, 3, 4, 6])) for _ in range(int(r.integers(0, 5)))]
    n = int(np.prod(shape)) if shape else 1
    vals = np.full(n, r.standard_normal()) if r.random() < 0.3 else r.standard_normal(n)
    if r.random() < 0.5:
        t = b.weight(shape, values=vals, prefix="k")
        b.pool.append(t)
        b.motifs.append("initializer")
        return t
    nm = b.name("const_")
    t = numpy_helper.from_array(np.asarray(vals, dtype=np.float32).reshape(shape), nm)
    y = b.node("Constant", [], value=t)
    b.motifs.append("Constant")
    return y


def m_computed_reshape(b: Builder):
    """A Reshape whose target is computed from the input's shape (Shape, Gather/Slice, Concat), as PyTorch
    exports x.view(x.size(0), -1): the symbolic batch stays symbolic (issue 43)."""
    x = _pick(b, lambda s: len(s) >= 2 and not isinstance(s[0], int) and _concrete(s, range(1, len(s))))
    s = b.shapes[x]
    sh = b.node("Shape", [x], shape_value=True)
    if b.rng.random() < 0.5:
        lead = b.node("Slice", [sh, b.ints([0]), b.ints([1])], shape_value=True)
    else:
        lead = b.node("Unsqueeze", [b.node("Gather", [sh, b.ints(0)], shape_value=True, axis=0), b.ints([0])],
                      shape_value=True)
    rest = int(np.prod(s[1:]))
    tail = _factor(b, rest, int(b.rng.integers(1, 3)))
    if b.rng.random() < 0.5:
        tail[0] = -1
    tgt = b.node("Concat", [lead, b.ints(tail)], shape_value=True, axis=0)
    b.motifs.append("computed-reshape")
    return b.node("Reshape", [x, tgt])


# ---------------------------------------------------------------------------------------------------------------
# Extended: computed shapes and control flow (issue 43 items 1, 7, 8)
# ---------------------------------------------------------------------------------------------------------------

def _sym_axis_first(b: Builder, s):
    """An axis of s: a symbolic one when s has one (most often), else any."""
    syms = [a for a, d in enumerate(s) if not isinstance(d, int)]
    if syms and b.rng.random() < 0.8:
        return _choice(b, syms)
    return int(b.rng.integers(len(s)))


def _dim1(b: Builder, x, axis):
    """Dimension `axis` of x as a 1-d int64 [1], the ways exporters write it: Shape+Slice, Shape+Gather+Unsqueeze,
    or Shape(start, end) (opset 15+)."""
    u = b.rng.random()
    if b.opset >= 15 and u < 0.25:
        return b.node("Shape", [x], shape_value=True, start=axis, end=axis + 1)
    sh = b.node("Shape", [x], shape_value=True)
    if u < 0.55:
        return b.node("Slice", [sh, b.ints([axis]), b.ints([axis + 1])], shape_value=True)
    g = b.node("Gather", [sh, b.ints(axis)], shape_value=True, axis=0)
    return b.node("Unsqueeze", [g, b.ints([0])], shape_value=True)


def _dim0d(b: Builder, x, axis):
    """Dimension `axis` of x as a 0-d int64 (Shape, Gather with a scalar index)."""
    sh = b.node("Shape", [x], shape_value=True)
    return b.node("Gather", [sh, b.ints(axis)], shape_value=True, axis=0)


def _seq_like(s):
    return len(s) == 3 and isinstance(s[2], int)


def m_expand(b: Builder):
    """Expand to a shape computed from an input's shape: Expand(w, Shape(x)), and the class-token form
    torch.onnx writes for cls.expand(x.size(0), -1, -1) (Concat of the batch and -1s, ConstantOfShape, Equal,
    Where on that shape, then Expand)."""
    x = _pick(b, lambda s: len(s) >= 2)
    s = b.shapes[x]
    r = b.rng
    if r.random() < 0.45:
        w = b.weight(_broadcast_shape(b, s), scale=0.5)
        y = b.node("Expand", [w, b.node("Shape", [x], shape_value=True)])
        b.motifs.append("expand-shape")
        return b.node(_choice(b, ["Add", "Mul", "Sub"]), [x, y] if r.random() < 0.5 else [y, x])
    tok = [1] + [d if isinstance(d, int) and r.random() < 0.6 else 1 for d in s[1:]]
    if len(s) == 3 and isinstance(s[2], int):
        tok = [1, 1, s[2]]
    w = b.weight(tok, scale=0.5, prefix="cls")
    parts = [_dim1(b, x, 0), b.ints([-1] * (len(s) - 1))]
    tgt = b.node("Concat", parts, shape_value=True, axis=0)
    if r.random() < 0.7:
        # expand(..., -1): ConstantOfShape(Shape(tgt)), Mul -1, Equal, Where
        ones = b.node("ConstantOfShape", [b.node("Shape", [tgt], shape_value=True)], shape_value=True,
                      value=numpy_helper.from_array(np.array([1], dtype=np.int64)))
        neg = b.node("Mul", [ones, b.ints(-1)], shape_value=True)
        eq = b.node("Equal", [tgt, neg], shape_value=True)
        tgt = b.node("Where", [eq, ones, tgt], shape_value=True)
    else:
        tgt = b.node("Concat", [_dim1(b, x, 0), b.ints(tok[1:])], shape_value=True, axis=0)
    y = b.node("Expand", [w, tgt], shape=[s[0]] + tok[1:])
    b.motifs.append("expand-cls")
    if len(s) >= 2 and isinstance(s[1], int) and all(tok[i] == s[i] for i in range(2, len(s))) \
            and r.random() < 0.6:
        b.motifs.append("expand-cls-concat")
        return b.node("Concat", [y, x] if r.random() < 0.7 else [x, y], axis=1)
    return b.node("Add", [x, y])


def m_constant_of_shape(b: Builder):
    """ConstantOfShape of a computed shape (Shape of x, or the batch concatenated with constants), combined with
    x or with another tensor of that shape."""
    x = _pick(b, lambda s: len(s) >= 1)
    s = b.shapes[x]
    r = b.rng
    val = float(_choice(b, [0.0, 1.0, 0.5, -2.0]))
    v = numpy_helper.from_array(np.array([val], dtype=np.float32))
    if r.random() < 0.5 or len(s) < 2:
        shp = b.node("Shape", [x], shape_value=True)
        out_shape = list(s)
    else:
        k = int(r.integers(1, len(s)))
        shp = b.node("Concat", [_dim1(b, x, a) if not isinstance(s[a], int) or r.random() < 0.5
                                else b.ints([s[a]]) for a in range(k)] + [b.ints([1] * (len(s) - k))],
                     shape_value=True, axis=0)
        out_shape = list(s[:k]) + [1] * (len(s) - k)
    c = b.node("ConstantOfShape", [shp], value=v, shape=out_shape)
    b.motifs.append("constantofshape")
    op = _choice(b, ["Add", "Mul", "Sub"])
    return b.node(op, [x, c] if r.random() < 0.5 else [c, x])


def m_range(b: Builder):
    """Range over a length taken from a shape (position ids): cast to float and added along that axis, or
    gathered from a position table (as exporters write learned position embeddings)."""
    x = _pick(b, lambda s: len(s) >= 2)
    s = b.shapes[x]
    r = b.rng
    a = _sym_axis_first(b, s)
    n = _dim0d(b, x, a)
    start = int(_choice(b, [0, 0, 1]))
    ids = b.node("Range", [b.ints(start), b.node("Add", [n, b.ints(start)], shape_value=True) if start else n,
                           b.ints(1)], shape_value=True)
    if a == len(s) - 2 and isinstance(s[-1], int) and r.random() < 0.6:
        d = s[-1]
        table = b.weight([160, d], scale=0.5, prefix="pos")
        pe = b.node("Gather", [table, ids], axis=0, shape=[s[a], d])
        b.motifs.append("range-gather")
        return b.node("Add", [x, pe])
    f = b.node("Cast", [ids], shape_value=True, to=TensorProto.FLOAT)
    f = b.node("Mul", [f, b.weight([], values=float(_choice(b, [0.1, 0.05, -0.2])), prefix="c")],
               shape=[s[a]])
    tail = len(s) - 1 - a
    if tail:
        f = b.node("Unsqueeze", [f, b.ints(list(range(1, tail + 1)))], shape=[s[a]] + [1] * tail)
    b.motifs.append("range")
    return b.node("Add", [x, f] if r.random() < 0.5 else [f, x])


def m_cumsum(b: Builder):
    """CumSum: of a float tensor (exclusive, reverse), or position ids from a mask of ones
    (CumSum(ConstantOfShape(Shape(x)[:2]), 1) - 1) gathered from a position table."""
    r = b.rng
    if r.random() < 0.5:
        x = _pick(b, lambda s: len(s) >= 1)
        s = b.shapes[x]
        attrs = {}
        if r.random() < 0.3:
            attrs["exclusive"] = 1
        if r.random() < 0.3:
            attrs["reverse"] = 1
        ax = int(r.integers(-len(s), len(s)))
        b.motifs.append("cumsum")
        y = b.node("CumSum", [x, b.ints(ax) if r.random() < 0.5 else b.ints([ax])], **attrs)
        return b.node("Mul", [y, b.weight([], values=0.25, prefix="c")])
    x = _pick(b, _seq_like)
    s = b.shapes[x]
    if b.opset >= 15 and r.random() < 0.5:
        bs = b.node("Shape", [x], shape_value=True, start=0, end=2)
    else:
        bs = b.node("Slice", [b.node("Shape", [x], shape_value=True), b.ints([0]), b.ints([2])], shape_value=True)
    ones = b.node("ConstantOfShape", [bs], shape_value=True,
                  value=numpy_helper.from_array(np.array([1], dtype=np.int64)))
    pos = b.node("CumSum", [ones, b.ints(1)], shape_value=True)
    pos = b.node("Sub", [pos, b.ints(1)], shape_value=True)
    table = b.weight([160, s[2]], scale=0.5, prefix="pos")
    pe = b.node("Gather", [table, pos], axis=0, shape=list(s))
    b.motifs.append("cumsum-position-ids")
    return b.node("Add", [x, pe])


def m_where(b: Builder):
    """Where with broadcasting: a condition from the data (x > 0, a broadcast weight > 0), or a causal mask
    from Range over the sequence length in an attention block."""
    r = b.rng
    if r.random() < 0.45:
        cands = [t for t in b.pool if _seq_like(b.shapes[t])]
        if cands:
            return _causal_attention(b, cands[-1] if r.random() < 0.6 else _choice(b, cands))
    x = _pick(b, lambda s: len(s) >= 1)
    s = b.shapes[x]
    if r.random() < 0.5:
        cond = b.node("Greater", [x, b.weight([], values=0.0, prefix="c")], shape_value=True)
        cshape = list(s)
    else:
        cshape = _broadcast_shape(b, s)
        cond = b.node("Less", [b.weight(cshape, scale=1.0), b.weight([], values=0.0, prefix="c")],
                      shape_value=True)
    others = [t for t in b.pool if t != x and _broadcasts(b.shapes[t], s)]
    other = _choice(b, others) if others and r.random() < 0.5 else b.weight(
        [] if r.random() < 0.5 else _broadcast_shape(b, s), scale=0.5)
    ins = [cond, x, other] if r.random() < 0.5 else [cond, other, x]
    b.motifs.append("where")
    return b.node("Where", ins)


def _causal_attention(b: Builder, x):
    """One attention head on [B, S, d] with a causal mask computed from Range(S) (Where(mask, -1e4, scores))."""
    s = b.shapes[x]
    d = s[2]
    dk = int(_choice(b, [2, 4, 8]))
    q = b.node("MatMul", [x, b.weight([d, dk])])
    k = b.node("MatMul", [x, b.weight([d, dk])])
    v = b.node("MatMul", [x, b.weight([d, dk])])
    sc = b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 2, 1])])
    sc = b.node("Mul", [sc, b.weight([], values=1.0 / math.sqrt(dk), prefix="c")])
    n = _dim0d(b, x, 1)
    ids = b.node("Range", [b.ints(0), n, b.ints(1)], shape_value=True)
    i = b.node("Unsqueeze", [ids, b.ints([1])], shape_value=True)
    j = b.node("Unsqueeze", [ids, b.ints([0])], shape_value=True)
    mask = b.node("Greater", [j, i], shape_value=True)
    sc = b.node("Where", [mask, b.weight([], values=-1e4, prefix="c"), sc], shape=[s[0], s[1], s[1]])
    p = b.node("Softmax", [sc], axis=-1)
    b.motifs.append("causal-attention")
    return b.node("MatMul", [p, v])


def m_heads_reshape(b: Builder):
    """Multi-head reshapes with targets from Shape/Gather/Concat: [B, S, d] -> [B, S, h, d/h] -> transpose ->
    back, the batch and sequence read from the input's shape (or 0 / -1 as Reshape allows)."""
    x = _pick(b, lambda s: _seq_like(s) and s[2] % 2 == 0)
    s = b.shapes[x]
    d = s[2]
    h = _choice(b, [h for h in (2, 4, 8) if d % h == 0 and d // h >= 1])
    r = b.rng
    tgt = b.node("Concat", [_dim1(b, x, 0), _dim1(b, x, 1), b.ints([h, -1 if r.random() < 0.5 else d // h])],
                 shape_value=True, axis=0)
    # PyTorch's dynamo exporter writes its views with allowzero=1 (no 0 in these targets, so the same shape).
    y = b.node("Reshape", [x, tgt], **({"allowzero": 1} if b.opset >= 14 and r.random() < 0.5 else {}))
    y = b.node("Transpose", [y], perm=[0, 2, 1, 3])
    if r.random() < 0.5:
        y = b.node(_choice(b, ["Relu", "Tanh", "Sigmoid"]), [y])
    if r.random() < 0.5:
        # Around a batched MatMul, as the dynamo exporter writes attention: [B, h, S, dh] folded to [B*h, S, dh]
        # (the sequence moves from axis 2 to 1, read from a Shape), scores [B*h, S, S] or a projection, unfolded
        # to [B, h, S, .] (the batch from the input's Shape or -1).
        dh = d // h
        fold = b.node("Reshape", [y, b.node("Concat", [b.ints([-1]), _dim1(b, y, 2), b.ints([dh])],
                                             shape_value=True, axis=0)], hidden=True)
        if r.random() < 0.5:
            scores = b.node("MatMul", [fold, b.node("Transpose", [fold], hidden=True, perm=[0, 2, 1])], hidden=True)
            ctx = b.node("MatMul", [b.node("Softmax", [scores], hidden=True, axis=-1), fold], hidden=True)
        else:
            ctx = b.node("MatMul", [fold, b.weight([dh, dh], prefix="wh")], hidden=True)
        lead = _dim1(b, x, 0) if r.random() < 0.5 else b.ints([-1])
        y = b.node("Reshape", [ctx, b.node("Concat", [lead, b.ints([h]), _dim1(b, ctx, 1), b.ints([dh])],
                                            shape_value=True, axis=0)], shape=[s[0], h, s[1], dh])
        b.motifs.append("heads-fold")
    y = b.node("Transpose", [y], perm=[0, 2, 1, 3])
    u = r.random()
    if u < 0.5:
        back = b.node("Concat", [_dim1(b, y, 0), _dim1(b, y, 1), b.ints([d])], shape_value=True, axis=0)
    elif u < 0.8:
        back = b.ints([0, 0, -1])
    else:
        back = b.node("Concat", [_dim1(b, x, 0), b.ints([-1, d])], shape_value=True, axis=0)
    b.motifs.append("heads-reshape")
    return b.node("Reshape", [y, back])


def m_view_back(b: Builder):
    """GPT-2's Conv1D as the dynamo exporter writes it: [B, S, d] viewed as [-1, d] (a constant target), a
    MatMul (+ bias, as addmm), and viewed back to Concat(B, S, n) read from the input's shape (or B and -1): the
    view back's changing extents are the symbolic dimensions themselves, which its input [B*S, n] lacks."""
    x = _pick(b, _seq_like)
    s = b.shapes[x]
    d = s[2]
    r = b.rng
    n = int(_choice(b, [2, 4, 6, 8]))
    view = {"allowzero": 1} if b.opset >= 14 and r.random() < 0.6 else {}
    flat = b.node("Reshape", [x, b.ints([-1, d])], hidden=True, **view)
    y = b.node("MatMul", [flat, b.weight([d, n])], hidden=True)
    if r.random() < 0.5:
        y = b.node("Add", [y, b.weight([n], scale=0.3)], hidden=True)
    u = r.random()
    if u < 0.6:
        back = b.node("Concat", [_dim1(b, x, 0), _dim1(b, x, 1), b.ints([n])], shape_value=True, axis=0)
    elif u < 0.8:
        back = b.node("Concat", [_dim1(b, x, 0), b.ints([-1, n])], shape_value=True, axis=0)
    else:
        back = b.node("Concat", [b.ints([-1]), _dim1(b, x, 1), b.ints([n])], shape_value=True, axis=0)
    b.motifs.append("view-back")
    y = b.node("Reshape", [y, back], shape=[s[0], s[1], n], **view)
    if r.random() < 0.5:
        y = _activation(b, y)
    return y


def _embedding_input(b: Builder, batch):
    """An int64 input (token ids, [batch, seq] or [batch, n]) gathered from an embedding table."""
    seq = SEQ if not isinstance(batch, int) and b.rng.random() < 0.7 else int(_choice(b, [3, 5, 8]))
    vocab = int(_choice(b, [11, 32, 50]))
    d = int(_choice(b, [4, 8, 16]))
    ids = b.add_input([batch, seq], 0, vocab - 1, dtype=TensorProto.INT64)
    table = b.weight([vocab, d], scale=1.0, prefix="emb")
    b.motifs.append("embedding")
    return b.node("Gather", [table, ids], axis=0)


def _cond(b: Builder):
    """A bool scalar for If: from the data (ReduceSum(t) > 0) or from a shape (Shape->Gather->Greater: the
    branch taken changes with the batch or sequence length)."""
    r = b.rng
    if b.conds and r.random() < 0.2:
        return _choice(b, b.conds), "shared"
    if r.random() < 0.5:
        t = _pick(b, lambda s: True)
        red = b.node("ReduceSum", [t], shape_value=True, keepdims=0)
        c = b.node(_choice(b, ["Greater", "Less"]), [red, b.weight([], values=0.0, prefix="c")], shape_value=True)
        kind = "data"
    else:
        t = _pick(b, lambda s: len(s) >= 1)
        s = b.shapes[t]
        a = _sym_axis_first(b, s)
        thr = 1 if s[a] == BATCH else 6 if s[a] == SEQ else int(r.integers(max(0, s[a] - 2), s[a] + 2))
        g = _dim0d(b, t, a)
        op = _choice(b, ["Greater", "Less", "Equal"], [3, 1, 1])
        c = b.node(op, [g, b.ints(thr)], shape_value=True)
        kind = "shape"
    b.conds.append(c)
    return c, kind


def _branch(b: Builder, base, s, depth, outer_conds):
    """A then/else subgraph: no inputs, one output of shape s, nodes reading base and other tensors of the
    enclosing graphs by name (activations, broadcasting algebra with outer tensors and weights, MatMul or Conv
    with an outer weight, a local initializer or Constant, a nested If). Returns (graph, outer names read)."""
    r = b.rng
    nodes, inits, reads = [], [], {base}
    cur = base

    def add(op, ins, **attrs):
        out = b.name(op.lower() + "_")
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    steps = int(r.integers(1, 4))
    for _ in range(steps):
        u = r.random()
        if u < 0.25:
            cur = add(_choice(b, ["Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Identity"]), [cur])
        elif u < 0.45:
            others = [t for t in b.pool if _broadcasts(b.shapes[t], s) and t != base]
            if others:
                t = _choice(b, others[-6:])
            else:
                t = b.weight(_broadcast_shape(b, s), scale=0.5)
            reads.add(t)
            cur = add(_choice(b, ["Add", "Mul", "Sub"]), [cur, t] if r.random() < 0.5 else [t, cur])
        elif u < 0.58:
            shp = _broadcast_shape(b, s)
            nm = b.name("local")
            arr = (r.standard_normal(shp) * 0.5).astype(np.float32)
            if r.random() < 0.5:
                inits.append(numpy_helper.from_array(arr, nm))
                c = nm
            else:
                c = add("Constant", [], value=numpy_helper.from_array(arr, nm))
            cur = add(_choice(b, ["Add", "Mul"]), [cur, c])
        elif u < 0.72 and len(s) >= 2 and isinstance(s[-1], int):
            k = s[-1]
            w = b.weight([k, k])
            reads.add(w)
            cur = add("MatMul", [cur, w])
        elif u < 0.8 and _image(s):
            c = s[1]
            g = c if r.random() < 0.4 else 1
            w = b.weight([c, c // g, 3, 3])
            reads.add(w)
            cur = add("Conv", [cur, w], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=g)
        elif u < 0.9 and depth == 0:
            conds = list(outer_conds)
            if conds and r.random() < 0.5:
                c = _choice(b, conds)
                reads.add(c)
            else:
                red = add("ReduceSum", [cur], keepdims=0)
                zero = b.name("local")
                inits.append(numpy_helper.from_array(np.array(0.0, dtype=np.float32), zero))
                c = add("Greater", [red, zero])
            tg, tr = _branch(b, cur, s, depth + 1, outer_conds)
            eg, er = _branch(b, cur, s, depth + 1, outer_conds)
            reads |= (tr | er) - {cur}
            cur = add("If", [c], then_branch=tg, else_branch=eg)
            b.motifs.append("nested-if")
        else:
            if len(s) >= 1 and r.random() < 0.5:
                cur = add("Softmax", [cur], axis=-1)
            else:
                cur = add("Relu", [cur])
    produced = {o for nd in nodes for o in nd.output}
    reads = {t for t in reads if t not in produced}
    g = helper.make_graph(nodes, b.name("branch"), [], [helper.make_tensor_value_info(cur, TensorProto.FLOAT,
                                                                                       list(s))],
                          initializer=inits)
    return g, reads


def m_if(b: Builder):
    """If on a condition from the data or from a shape; both branches read tensors of the outer graph by name
    (and outer weights), return the same shape, and sometimes hold an If of their own."""
    x = _pick(b, lambda s: True)
    s = b.shapes[x]
    cond, kind = _cond(b)
    outer = [c for c in b.conds if c != cond]
    tg, tr = _branch(b, x, s, 0, outer)
    eg, er = _branch(b, x, s, 0, outer)
    b.motifs.append(f"if-{kind}")
    return b.node("If", [cond], implicit=sorted(tr | er), then_branch=tg, else_branch=eg)


def m_value_shaped(b: Builder):
    """A tensor whose shape depends on the values (NonZero, Compress by a computed mask, Unique, TopK with a
    computed k) reduced back to a known shape and added to its source: eqsat-run keeps such a region as the
    file has it and optimizes around it."""
    r = b.rng
    x = _pick(b, lambda s: len(s) >= 1)
    s = b.shapes[x]
    zero = b.weight([], values=0.0, prefix="c")
    kind = _choice(b, ["nonzero", "compress", "unique", "topk"] if isinstance(s[-1], int) else
                   ["nonzero", "compress", "unique"])
    if kind == "nonzero":
        nz = b.node("NonZero", [b.node("Greater", [x, zero], shape_value=True)], shape_value=True)
        v = b.node("Cast", [nz], shape_value=True, to=TensorProto.FLOAT)
    elif kind == "compress":
        mask = b.node("Reshape", [b.node("Greater", [x, zero], shape_value=True), b.ints([-1])], shape_value=True)
        v = b.node("Compress", [x, mask], shape_value=True)
    elif kind == "unique":
        q = b.node("Round", [b.node("Mul", [x, b.weight([], values=4.0, prefix="c")], shape_value=True)],
                   shape_value=True)
        u = b.node("Unique", [q], n_out=4, shape_value=True, sorted=int(r.integers(0, 2)))
        v = u[0] if r.random() < 0.6 else b.node("Cast", [u[3]], shape_value=True, to=TensorProto.FLOAT)
    else:  # TopK along the last axis, k = clamp(number of positive elements, 1, extent)
        pos = b.node("Cast", [b.node("Greater", [x, zero], shape_value=True)], shape_value=True, to=TensorProto.INT64)
        cnt = b.node("Reshape", [b.node("ReduceSum", [pos], shape_value=True, keepdims=1), b.ints([1])],
                     shape_value=True)
        k = b.node("Max", [b.node("Min", [cnt, b.ints([s[-1]])], shape_value=True), b.ints([1])], shape_value=True)
        vals = b.node("TopK", [x, k], n_out=2, shape_value=True, axis=-1, largest=int(r.integers(0, 2)))[0]
        v = b.node("ReduceSum", [vals, b.ints([-1])], shape_value=True, keepdims=1)
    if kind != "topk":
        v = b.node("ReduceSum", [v], shape_value=True, keepdims=0)
    b.motifs.append(f"value-shaped-{kind}")
    return b.node("Add", [x, b.node("Mul", [v, b.weight([], values=0.01, prefix="c")], shape_value=True)],
                  shape=list(s))


def m_loop_grow(b: Builder):
    """A Loop whose loop-carried value grows by a row each iteration (its shape changes, so no inference knows
    it), reduced over the grown axis and added back; sometimes the trip count comes from the data."""
    r = b.rng
    x = _pick(b, lambda s: len(s) >= 1 and all(isinstance(d, int) for d in s[1:]))
    s = b.shapes[x]
    nodes = [helper.make_node("Slice", ["acc_in", b.ints([-1]), b.ints([INT64_MAX]), b.ints([0])], ["last"]),
             helper.make_node(_choice(b, ["Tanh", "Sigmoid", "Neg"]), ["last"], ["nxt"]),
             helper.make_node("Concat", ["acc_in", "nxt"], ["acc_out"], axis=0),
             helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body = helper.make_graph(nodes, b.name("body"),
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, None)])
    if r.random() < 0.5:
        trips = b.ints(int(r.integers(1, 4)))
        kind = "const"
    else:  # 1 or 2 iterations, from the sign of the sum of x
        red = b.node("ReduceSum", [x], shape_value=True, keepdims=0)
        gt = b.node("Cast", [b.node("Greater", [red, b.weight([], values=0.0, prefix="c")], shape_value=True)],
                    shape_value=True, to=TensorProto.INT64)
        trips = b.node("Add", [gt, b.ints(1)], shape_value=True)
        kind = "data"
    go = b.name("go")
    b.inits.append(numpy_helper.from_array(np.array(True), go))
    acc = b.node("Loop", [trips, go, x], shape_value=True, body=body)
    m = b.node("ReduceMean", [acc], shape_value=True, axes=[0], keepdims=1) if b.opset < 18 else \
        b.node("ReduceMean", [acc, b.ints([0])], shape_value=True, keepdims=1)
    b.motifs.append(f"loop-grow-{kind}")
    return b.node("Add", [x, m], shape=list(s))


def m_scan(b: Builder):
    """Scan over the first axis: a running sum (the state) and each step's activation stacked (the scan
    output), added back to the input."""
    r = b.rng
    x = _pick(b, lambda s: len(s) >= 2 and all(isinstance(d, int) for d in s[1:]))
    s = b.shapes[x]
    inner = list(s[1:])
    s0 = b.weight(inner, scale=0.1)
    act = _choice(b, ["Tanh", "Sigmoid", "Relu"])
    body = helper.make_graph([helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
                              helper.make_node(act, ["acc_out"], ["o"])], b.name("body"),
                             [helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, inner),
                              helper.make_tensor_value_info("row", TensorProto.FLOAT, inner)],
                             [helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, inner),
                              helper.make_tensor_value_info("o", TensorProto.FLOAT, inner)])
    attrs = {"num_scan_inputs": 1}
    if r.random() < 0.3:
        attrs["scan_input_directions"] = [1]
    final, steps = b.node("Scan", [s0, x], n_out=2, shape_value=True, body=body, **attrs)
    b.motifs.append("scan")
    return b.node("Add", [x, steps], shape=list(s))


EXTENDED = [(m_computed_reshape, 4), (m_if, 9), (m_expand, 5), (m_constant_of_shape, 3), (m_range, 4),
            (m_cumsum, 3), (m_where, 5), (m_heads_reshape, 4), (m_value_shaped, 4), (m_loop_grow, 2), (m_scan, 2),
            (m_view_back, 3), (m_rms_norm, 3)]

MOTIFS = [
    (m_conv, 10), (m_parallel_conv, 14), (m_shared_weight_conv, 2), (m_pool, 6), (m_pad_then_window, 2),
    (m_batchnorm, 2), (m_conv_bn_relu, 3), (m_matmul, 5), (m_parallel_matmul, 5), (m_matmul_pair, 1.5),
    (m_gemm, 2), (m_activation, 4), (m_binary, 7), (m_scale_algebra, 2), (m_concat, 5), (m_concat_split, 3),
    (m_split, 3), (m_slice, 2), (m_transpose, 3), (m_reshape, 4), (m_reduce_mean, 2), (m_softmax, 2),
    (m_layernorm, 1), (m_constant, 1.5), (m_gelu_tanh, 1.5), (m_cast_fp16, 1.5),
]


def _start(b: Builder, extended: bool = False):
    """The first input: an image (most models) or a matrix/sequence, its batch symbolic or not. extended: more
    symbolic batches and sequences ([batch, seq, d]), and token ids gathered from an embedding table."""
    r = b.rng
    if extended and r.random() < 0.15:
        _embedding_input(b, BATCH if r.random() < 0.8 else int(_choice(b, [1, 2])))
        return
    sym = r.random() < (0.65 if extended else 0.45)
    batch = BATCH if sym else int(_choice(b, [1, 1, 2]))
    if r.random() < (0.45 if extended else 0.65):
        c = _choice(b, [1, 2, 3, 4, 6, 8, 12, 16])
        h = int(r.integers(3, 13))
        w = h if r.random() < 0.7 else int(r.integers(3, 13))
        b.add_input([batch, c, h, w])
        b.motifs.append("image")
    else:
        rank = _choice(b, [2, 3, 4], [3, 5, 1] if extended else [3, 3, 1])
        shape = [batch] + [int(_choice(b, [2, 3, 4, 5, 8, 16])) for _ in range(rank - 1)]
        if sym and rank == 3 and r.random() < (0.7 if extended else 0.4):
            shape[1] = SEQ   # [batch, seq, d], a transformer's activations
        b.add_input(shape)
        b.motifs.append("matrix")
    if r.random() < 0.2:
        # a second input of the same shape (two branches meet)
        b.add_input(list(b.shapes[b.pool[0]]))


def motif_weights(overrides=None, extended: bool = False):
    """(motif functions, their weights): MOTIFS (and EXTENDED) with `overrides` ({"heads_reshape": 80}, the
    name without its m_) in place of the tables' weights, to aim a campaign at some motifs."""
    table = MOTIFS + (EXTENDED if extended else [])
    names = {fn.__name__[2:] for fn, _ in table}
    unknown = sorted(set(overrides or {}) - names)
    if unknown:
        raise ValueError(f"unknown motif {', '.join(unknown)} (motifs{' with --extended' if extended else ''}: "
                         f"{', '.join(sorted(names))})")
    return zip(*((fn, (overrides or {}).get(fn.__name__[2:], w)) for fn, w in table))


def parse_motif_weights(items):
    """--motif-weight NAME=W (repeatable) as a dict."""
    out = {}
    for item in items or []:
        name, sep, w = item.partition("=")
        try:
            out[name] = float(w)
        except ValueError:
            sep = ""
        if not sep or out[name] < 0:
            raise ValueError(f"--motif-weight {item!r}: expected NAME=W with W >= 0")
    return out


def generate(seed: int, extended: bool = False, max_attempts: int = 50, weights=None) -> onnx.ModelProto:
    """The model of this seed: deterministic; tries sub-seeds until a candidate is valid in onnx and ORT.
    extended: also constructs eqsat-run refused when this was written (shapes computed from tensors).
    weights: motif weights overriding the tables' (motif_weights)."""
    for attempt in range(max_attempts):
        rng = np.random.default_rng([seed, attempt])
        opset = int(_choice_rng(rng, [13, 17, 18], [1, 3, 1]))
        b = Builder(rng, opset)
        _start(b, extended)
        steps = int(rng.integers(2, 9))
        fns, table_weights = motif_weights(weights, extended)
        p = np.asarray(table_weights, dtype=float)
        p /= p.sum()
        done = 0
        for _ in range(steps * 4):
            if done >= steps:
                break
            fn = fns[int(rng.choice(len(fns), p=p))]
            if b.try_(fn, b) is not None:
                done += 1
        if done == 0:
            continue
        try:
            m = b.finish()
            validate(m)
        except Reject:
            continue
        return m
    raise RuntimeError(f"seed {seed}: no valid model in {max_attempts} attempts")


def _choice_rng(rng, seq, p):
    p = np.asarray(p, dtype=float)
    return seq[int(rng.choice(len(seq), p=p / p.sum()))]


# ---------------------------------------------------------------------------------------------------------------
# Running models in onnxruntime
# ---------------------------------------------------------------------------------------------------------------

def symbolic_dims(m: onnx.ModelProto):
    names = []
    for i in m.graph.input:
        for d in i.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param and d.dim_param not in names:
                names.append(d.dim_param)
    return names


def input_ranges(m: onnx.ModelProto):
    out = {}
    for p in m.metadata_props:
        if p.key.startswith("eqsat.input_range."):
            lo, hi = p.value.split(",")
            out[p.key[len("eqsat.input_range."):]] = (float(lo), float(hi))
    return out


def make_feeds(m: onnx.ModelProto, dims: dict, seed: int):
    rng = np.random.default_rng([seed, 7919] + sorted(dims.values()))
    ranges = input_ranges(m)
    inits = {t.name for t in m.graph.initializer}
    feeds = {}
    for i in m.graph.input:
        if i.name in inits:
            continue
        shape = []
        for d in i.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(dims[d.dim_param])
            else:
                raise Reject(f"input {i.name}: a dimension without value")
        lo, hi = ranges.get(i.name, (-1.0, 1.0))
        if i.type.tensor_type.elem_type == TensorProto.INT64:
            feeds[i.name] = rng.integers(int(lo), int(hi) + 1, size=shape).astype(np.int64)
        else:
            feeds[i.name] = rng.uniform(lo, hi, size=shape).astype(np.float32)
    return feeds


def ort_session(model_bytes):
    import onnxruntime as ort
    ort.set_default_logger_severity(4)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


DEFAULT_SIZES = "batch=1,3/seq=8,5"


def parse_sizes(text):
    """--sizes: "1,3" (every symbolic dimension takes each value, all at once) or "NAME=V,V/NAME=V,V" (each
    named dimension its own values, every combination; a dimension not named takes the first one's values)."""
    if "=" not in text:
        return [int(v) for v in text.split(",")]
    out = {}
    for part in text.replace(" ", "/").split("/"):
        if part:
            k, v = part.split("=", 1)
            out[k] = [int(x) for x in v.split(",")]
    return out


def size_points(m, sizes):
    names = symbolic_dims(m)
    if not names:
        return [{}]
    if isinstance(sizes, str):
        sizes = parse_sizes(sizes)
    if not isinstance(sizes, dict):
        return [{n: v for n in names} for v in sizes]
    first = next(iter(sizes.values()))
    points = [{}]
    for n in names:
        points = [dict(p, **{n: v}) for p in points for v in sizes.get(n, first)]
    return points


def validate(m: onnx.ModelProto, sizes=DEFAULT_SIZES):
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:  # noqa: BLE001
        raise Reject(f"checker: {e}") from None
    try:
        sess = ort_session(m.SerializeToString())
        for dims in size_points(m, sizes):
            outs = sess.run(None, make_feeds(m, dims, 0))
            for o in outs:
                if not np.all(np.isfinite(o)):
                    raise Reject("non-finite output")
    except Reject:
        raise
    except Exception as e:  # noqa: BLE001
        raise Reject(f"onnxruntime: {e}") from None


# ---------------------------------------------------------------------------------------------------------------
# Campaign
# ---------------------------------------------------------------------------------------------------------------

CLASSES = ["ok-optimized", "ok-kept", "refused", "rejected", "crash", "hang", "WRONG"]


def compare(orig: onnx.ModelProto, out_path: str, sizes, seed, rtol, atol):
    """None when the written file computes the original's outputs at every size, else why not."""
    try:
        opt = onnx.load(out_path)
    except Exception as e:  # noqa: BLE001
        return f"the written file does not load: {e}"
    try:
        onnx.checker.check_model(opt, full_check=True)
    except Exception as e:  # noqa: BLE001
        return f"the written file fails onnx.checker: {str(e).splitlines()[0][:300]}"
    oi = [(i.name) for i in orig.graph.input if i.name not in {t.name for t in orig.graph.initializer}]
    pi = [(i.name) for i in opt.graph.input if i.name not in {t.name for t in opt.graph.initializer}]
    if sorted(oi) != sorted(pi):
        return f"graph inputs changed: {oi} -> {pi}"
    oo = [o.name for o in orig.graph.output]
    po = [o.name for o in opt.graph.output]
    if oo != po:
        return f"graph outputs changed: {oo} -> {po}"
    s_orig = ort_session(orig.SerializeToString())
    try:
        s_opt = ort_session(opt.SerializeToString())
    except Exception as e:  # noqa: BLE001
        return f"onnxruntime cannot load the written file: {str(e).splitlines()[0][:300]}"
    worst = None
    for dims in size_points(orig, sizes):
        feeds = make_feeds(orig, dims, seed)
        try:
            a = s_orig.run(None, feeds)
        except Exception:  # noqa: BLE001  a size the original does not admit (only with other --sizes)
            continue
        where = ",".join(f"{k}={v}" for k, v in dims.items()) or "static"
        try:
            bb = s_opt.run(None, feeds)
        except Exception as e:  # noqa: BLE001
            return f"at {where} the written file fails in onnxruntime: {str(e).splitlines()[0][:300]}"
        for name, x, y in zip(oo, a, bb):
            if x.shape != y.shape:
                return f"at {where} output {name} has shape {list(y.shape)}, the original {list(x.shape)}"
            if x.size == 0:
                continue
            nan_x, nan_y = np.isnan(x), np.isnan(y)
            if (nan_x != nan_y).any():
                return f"at {where} output {name}: NaN in one file only"
            xf, yf = np.where(nan_x, 0, x).astype(np.float64), np.where(nan_y, 0, y).astype(np.float64)
            scale = float(np.max(np.abs(xf)))
            diff = float(np.max(np.abs(xf - yf)))
            if diff > atol + rtol * scale:
                msg = f"at {where} output {name} differs: max abs diff {diff:.3g}, max |orig| {scale:.3g}"
                worst = worst or msg
    return worst


def run_one(task):
    """One (seed, config) run; returns a result row. Runs in a worker process."""
    seed, cfg_index, cfg, a = task
    row = {"seed": seed, "config": cfg_index, "options": " ".join(cfg), "class": "", "rc": None, "seconds": 0.0,
           "speedup": None, "rules_used": "", "motifs": "", "nodes": 0, "symbolic": "", "detail": ""}
    m = generate(seed, a["extended"], weights=a["motif_weights"])
    row["motifs"] = next((p.value for p in m.metadata_props if p.key == "eqsat.motifs"), "")
    row["nodes"] = len(m.graph.node)
    syms = symbolic_dims(m)
    row["symbolic"] = ",".join(syms)
    work = tempfile.mkdtemp(prefix=f"rm-{seed}-{cfg_index}-", dir=a["work"])
    model_path = os.path.join(work, "model.onnx")
    out_path = os.path.join(work, "out.onnx")
    report_path = os.path.join(work, "report.json")
    onnx.save(m, model_path)
    cmd = [a["binary"], model_path, "-o", out_path, "--report", report_path]
    if a["auto_dim"] is not None:
        for n in syms:
            cmd += ["--dim", f"{n}={a['auto_dim']}"]
    cmd += cfg
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=a["cwd"], capture_output=True, text=True, timeout=a["timeout"],
                           start_new_session=True)
        rc, log = p.returncode, p.stderr + p.stdout
    except subprocess.TimeoutExpired as e:
        rc, log = None, (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    row["seconds"] = round(time.monotonic() - t0, 3)
    row["rc"] = rc
    report = {}
    if os.path.exists(report_path):
        try:
            with open(report_path) as f:
                report = json.load(f)
        except Exception:  # noqa: BLE001
            report = {}
    rules = report.get("rules_used") or {}
    row["rules_used"] = " ".join(sorted(rules))
    row["speedup"] = report.get("speedup")
    wrong = None
    if rc is not None and os.path.exists(out_path):
        try:
            wrong = compare(m, out_path, a["sizes"], seed, a["rtol"], a["atol"])
        except Exception as e:  # noqa: BLE001
            wrong = f"comparison failed: {e}"
    if wrong:
        cls, detail = "WRONG", wrong + (f" (exit {rc})" if rc else "")
    elif rc is None:
        cls, detail = "hang", f"timeout after {a['timeout']} s"
    elif rc == 2:
        cls, detail = "refused", _last_error(log)
    elif rc in (1, 5):
        cls, detail = "rejected", _last_error(log)
    elif rc in (0, 4):
        if not os.path.exists(out_path):
            cls, detail = "crash", f"exit {rc} and no file written"
        elif report.get("kept_original") or not rules:
            cls, detail = "ok-kept", "" if rc == 0 else "exit 4: " + _last_error(log)
        else:
            cls, detail = "ok-optimized", "" if rc == 0 else "exit 4: " + _last_error(log)
    else:
        cls = "crash"
        detail = (f"signal {-rc}" if rc < 0 else f"exit {rc}") + ": " + _last_error(log)
    row["class"], row["detail"] = cls, detail
    keep = cls in ("WRONG", "crash", "hang") or (a["save_refused"] and cls == "refused")
    if keep:
        dest = os.path.join(a["out"], "failures", f"seed-{seed}-cfg{cfg_index}-{cls}")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(work, dest)
        with open(os.path.join(dest, "command.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n")
        with open(os.path.join(dest, "log.txt"), "w") as f:
            f.write(log or "")
        row["saved"] = dest
    shutil.rmtree(work, ignore_errors=True)
    return row


def _last_error(log):
    """The last line of the log that names an error (else its last line), at most 300 characters."""
    all_lines = (log or "").strip().splitlines()
    lines = [ln for ln in all_lines if "error" in ln.lower() or "FAILED" in ln or "DIFFERENT" in ln]
    return (lines[-1] if lines else all_lines[-1] if all_lines else "")[:300]


def parse_seeds(specs):
    seeds = []
    for s in specs:
        for part in s.split(","):
            if "-" in part[1:]:
                lo, hi = part.split("-", 1)
                seeds += range(int(lo), int(hi) + 1)
            elif part:
                seeds.append(int(part))
    return seeds


def _init_worker():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def campaign(args):
    if not os.path.exists(args.binary):
        sys.exit(f"random_models: no eqsat-run at {args.binary}")
    seeds = list(range(args.start, args.start + args.n)) if args.seeds is None else parse_seeds(args.seeds)
    configs = [[] if c.strip() in ("", "default") else c.split() for c in args.config] if args.config else [[]]
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    a = {"binary": os.path.abspath(args.binary), "cwd": args.cwd, "timeout": args.timeout,
         "sizes": parse_sizes(args.sizes), "rtol": args.rtol, "atol": args.atol,
         "auto_dim": None if args.no_auto_dim else args.auto_dim, "out": os.path.abspath(args.out),
         "work": os.path.abspath(work), "save_refused": args.save_refused, "extended": args.extended,
         "motif_weights": args.motif_weights}
    tasks = [(s, ci, cfg, a) for s in seeds for ci, cfg in enumerate(configs)]
    rows, counts = [], {c: 0 for c in CLASSES}
    t0 = time.monotonic()
    print(f"random_models: {len(seeds)} seeds x {len(configs)} config(s), {args.jobs} job(s), binary {a['binary']}",
          flush=True)
    with ProcessPoolExecutor(max_workers=args.jobs, initializer=_init_worker) as ex:
        futs = {ex.submit(run_one, t): t for t in tasks}
        for k, f in enumerate(as_completed(futs), 1):
            seed, ci = futs[f][0], futs[f][1]
            try:
                row = f.result()
            except Exception as e:  # noqa: BLE001  a generator or harness failure, not eqsat-run's
                row = {"seed": seed, "config": ci, "class": "harness-error", "detail": repr(e)[:300]}
                counts.setdefault("harness-error", 0)
            counts[row["class"]] += 1
            rows.append(row)
            bad = row["class"] in ("WRONG", "crash", "hang", "harness-error")
            if bad or (not args.quiet and (k % max(1, args.progress) == 0 or k == len(tasks))):
                el = time.monotonic() - t0
                summary = " ".join(f"{c} {n}" for c, n in counts.items() if n)
                print(f"[{k}/{len(tasks)} {el:.0f}s] {summary}", flush=True)
                if bad:
                    print(f"  seed {seed} cfg {ci}: {row['class']}: {row.get('detail', '')}"
                          f"{'; rules ' + row['rules_used'] if row.get('rules_used') else ''}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    rows.sort(key=lambda r: (r["seed"], r["config"]))
    elapsed = time.monotonic() - t0
    wrong_rules = {}
    for r in rows:
        if r["class"] == "WRONG":
            for rule in (r.get("rules_used") or "").split():
                wrong_rules[rule] = wrong_rules.get(rule, 0) + 1
    by_config = [{} for _ in configs]
    for r in rows:
        by_config[r["config"]][r["class"]] = by_config[r["config"]].get(r["class"], 0) + 1
    result = {"binary": a["binary"], "seeds": [seeds[0], seeds[-1]] if seeds else [], "models": len(seeds),
              "configs": [" ".join(c) for c in configs], "runs": len(rows), "seconds": round(elapsed, 1),
              "sizes": a["sizes"], "rtol": args.rtol, "atol": args.atol, "counts": counts,
              "counts_by_config": by_config,
              "wrong_models": sorted({r["seed"] for r in rows if r["class"] == "WRONG"}), "wrong_rules": dict(sorted(wrong_rules.items(), key=lambda kv: -kv[1])), "rows": rows}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    fields = ["seed", "config", "class", "rc", "seconds", "speedup", "nodes", "symbolic", "rules_used", "motifs",
              "detail", "options"]
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    print(f"\n{len(seeds)} models, {len(rows)} runs in {elapsed:.1f} s ({args.out}/results.json, results.csv)")
    print(f"{'class':<14}{'runs':>7}" + "".join(f"{'cfg ' + str(i):>8}" for i in range(len(configs)))
          if len(configs) > 1 else f"{'class':<14}{'runs':>7}")
    for c, n in counts.items():
        line = f"{c:<14}{n:>7}"
        if len(configs) > 1:
            line += "".join(f"{by_config[i].get(c, 0):>8}" for i in range(len(configs)))
        print(line)
    if len(configs) > 1:
        for i, cfg in enumerate(configs):
            print(f"  cfg {i}: {' '.join(cfg) or '(eqsat-run defaults)'}")
    wrong_models = {r["seed"] for r in rows if r["class"] == "WRONG"}
    if wrong_models:
        print(f"{len(wrong_models)} of {len(seeds)} models written wrong in at least one configuration")
    if wrong_rules:
        print("rules used by the WRONG runs (runs):", ", ".join(f"{k} ({v})" for k, v in wrong_rules.items()))
    fail = [c for c in args.fail_on.split(",") if c and counts.get(c, 0)]
    if fail:
        print(f"random_models: FAILED: {', '.join(f'{counts[c]} {c}' for c in fail)}; models saved in "
              f"{args.out}/failures/")
        return 1
    return 0


def cmd_generate(args):
    os.makedirs(args.out, exist_ok=True)
    for s in parse_seeds(args.seeds):
        m = generate(s, args.extended, weights=args.motif_weights)
        path = os.path.join(args.out, f"seed-{s}.onnx")
        onnx.save(m, path)
        if args.verbose:
            motifs = next((p.value for p in m.metadata_props if p.key == "eqsat.motifs"), "")
            print(f"{path}: opset {m.opset_import[0].version}, {len(m.graph.node)} nodes "
                  f"({', '.join(sorted({n.op_type for n in m.graph.node}))}); symbolic {symbolic_dims(m)}; {motifs}")
    return 0


def main(argv=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write the models of some seeds")
    g.add_argument("seeds", nargs="+", help="seeds: N, A-B, or comma-separated")
    g.add_argument("-o", "--out", default="random-models")
    g.add_argument("-v", "--verbose", action="store_true")
    g.add_argument("--extended", action="store_true", help="also If (nested, outer-scope reads) and computed shapes (Expand, ConstantOfShape, Range, CumSum, "
                        "Where, Reshape from Shape/Gather/Concat), token-id inputs, more symbolic batch/seq")
    weight_help = ("NAME=W: motif NAME (its function's name without m_, e.g. heads_reshape) drawn with weight W "
                   "instead of its table's (repeatable): a campaign aimed at some motifs")
    g.add_argument("--motif-weight", action="append", help=weight_help)
    c = sub.add_parser("campaign", help="generate, optimize with eqsat-run, compare in onnxruntime")
    c.add_argument("--motif-weight", action="append", help=weight_help)
    c.add_argument("--binary", required=True, help="the eqsat-run executable")
    c.add_argument("-n", type=int, default=100, help="number of seeds (from --start)")
    c.add_argument("--start", type=int, default=0)
    c.add_argument("--seeds", nargs="+", help="explicit seeds or ranges instead of -n/--start")
    c.add_argument("--config", action="append",
                   help="eqsat-run options of one configuration, e.g. '--cost analytical:cpu-ort' (repeatable: "
                        "each model runs under each; 'default': no options, the default)")
    c.add_argument("--jobs", type=int, default=1)
    c.add_argument("--timeout", type=float, default=120, help="seconds per eqsat-run before 'hang'")
    c.add_argument("--sizes", default=DEFAULT_SIZES,
                   help="values of the symbolic dimensions to compare at: NAME=V,V/NAME=V,V (every combination; "
                        f"default {DEFAULT_SIZES}), or V,V for every dimension at once")
    c.add_argument("--auto-dim", type=int, default=None, metavar="V",
                   help="pass --dim NAME=V for each symbolic dimension of the model (binaries before issue 43 "
                        "needed it); default: no --dim, eqsat-run picks its own values")
    c.add_argument("--no-auto-dim", action="store_true", help="pass no --dim (the default; kept for old commands)")
    c.add_argument("--rtol", type=float, default=1e-3)
    c.add_argument("--atol", type=float, default=1e-5)
    c.add_argument("--cwd", default=root, help="working directory of eqsat-run (where it finds corpus/)")
    c.add_argument("-o", "--out", default="random-campaign", help="results.json, results.csv, failures/")
    c.add_argument("--fail-on", default="WRONG,crash,hang,harness-error",
                   help="classes that make the exit status 1")
    c.add_argument("--extended", action="store_true",
                   help="generate also If and computed shapes (the EXTENDED motifs: see the module docstring)")
    c.add_argument("--save-refused", action="store_true", help="also keep the refused models")
    c.add_argument("--progress", type=int, default=25, help="a progress line every N runs")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress lines: only failures and the summary")
    args = ap.parse_args(argv)
    try:
        args.motif_weights = parse_motif_weights(args.motif_weight)
        list(motif_weights(args.motif_weights, args.extended))
    except ValueError as e:
        ap.error(str(e))
    if args.cmd == "generate":
        return cmd_generate(args)
    args.cwd = os.path.abspath(args.cwd)
    return campaign(args)


if __name__ == "__main__":
    sys.exit(main())
