#!/usr/bin/env python3
"""Makes a LLaMA-shaped decoder of any depth as PyTorch's default (dynamo) exporter writes it, without ever
holding all of its weights in memory (issue 45, item 4).

The model is transformers' LlamaModel built from a config in this file (no hub access) with seeded random
weights. Two layers are exported for real with torch.onnx.export(dynamo=True) (opset 20, Dim('batch') and
Dim('seq'), weights in external data); the second layer's nodes (those the exporter scoped under
'model.layers.1') are then cloned N-2 times in the ONNX graph, each clone with fresh seeded weights of the same
shapes and types, chained through the residual stream. The weights are streamed into the data file one tensor at
a time, so memory is bounded by the two-layer export (about two layers' weights), not by the model.

Widths:
  7b    LLaMA-7B's layer shapes: hidden 4096, intermediate 11008, 32 heads (no grouped-query attention),
        vocabulary 32000; 202 M parameters per layer (0.40 GB in fp16), embedding 131 M.
  tiny  hidden 64, intermediate 128, 4 heads, 2 key/value heads, vocabulary 256 (for tests of this script).

Files: OUT/llama-<width>-<layers>L-<dtype>.onnx and .onnx.data beside it. Running it twice gives the same
files. Usage:
  .venv/bin/python bench/llm/make_llama.py --layers 32 --dtype fp16 --out /tmp/llm [--width 7b] [--check]
--check runs the file in onnxruntime at (batch, seq) = (1, 8) and (2, 5) and, for up to 4 layers, compares it
with the PyTorch model it was exported from (deeper files are compared with nothing: the clones have no PyTorch
twin; they are only run).
"""
import argparse
import ast
import contextlib
import io
import os
import re
import sys
import tempfile
import time
import warnings

try:
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    from transformers import LlamaConfig, LlamaModel
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"make_llama: error: {e} (run tools/setup-python.sh --with-torch)")
    sys.exit(1)

SEED = 45
WIDTHS = {
    "7b": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_attention_heads=32,
               num_key_value_heads=32, max_position_embeddings=2048, rms_norm_eps=1e-6),
    "tiny": dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6),
}
DTYPES = {"fp16": torch.float16, "fp32": torch.float32}
LAYER_SCOPE = "model.layers.1"


class LastHiddenState(torch.nn.Module):
    """LlamaModel with inputs (input_ids, attention_mask) and one output, last_hidden_state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]


def build(width, dtype):
    config = LlamaConfig(num_hidden_layers=2, use_cache=False, **WIDTHS[width])
    torch.manual_seed(SEED)
    model = LlamaModel(config).eval()
    generator = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():  # norm scales away from one, as trained ones are
        for _, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn(p.shape, generator=generator) * 0.1)
    return LastHiddenState(model.to(DTYPES[dtype])).eval(), config


def sample_inputs(config, batch, seq, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config.vocab_size, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    for b in range(1, batch):  # later rows end in padding, as a batch of prompts of different lengths does
        mask[b, seq - b * max(1, seq // 4):] = 0
    return ids, mask


def export_two_layers(model, config, path):
    ids, mask = sample_inputs(config, 2, 16, SEED)
    batch = torch.export.Dim("batch", min=1, max=1024)
    seq = torch.export.Dim("seq", min=2, max=config.max_position_embeddings)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, (torch.from_numpy(ids), torch.from_numpy(mask)), dynamo=True,
                                    input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                                    dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}), optimize=True,
                                    verbose=False)
    for node in program.model.graph.all_nodes():
        node.metadata_props.pop("pkg.torch.onnx.stack_trace", None)  # absolute paths: not reproducible
    program.save(path, external_data=True)


def layer_level(value):
    """The scope of a node directly inside a layer ('model.layers.K'), or '' for one nested deeper or outside."""
    names = ast.literal_eval(value) if value.startswith("[") else []
    return names[2] if len(names) == 4 and names[2].startswith("model.layers.") else ""


def scopes(node):
    for p in node.metadata_props:
        if p.key == "pkg.torch.onnx.name_scopes":
            return p.value
    return ""


class DataWriter:
    """Appends tensors to the data file and points their protos at it (location, offset, length)."""

    def __init__(self, path):
        self.file = open(path, "wb")
        self.name = os.path.basename(path)
        self.offset = 0

    def add(self, tensor, raw):
        del tensor.external_data[:]
        tensor.ClearField("raw_data")
        for key, value in (("location", self.name), ("offset", str(self.offset)), ("length", str(len(raw)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        tensor.data_location = onnx.TensorProto.EXTERNAL
        self.file.write(raw)
        self.offset += len(raw)

    def close(self):
        self.file.close()


def stored_bytes(tensor, folder):
    """The bytes of an initializer of the exported file (inline or external)."""
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return numpy_helper.to_array(tensor).tobytes()
    info = {e.key: e.value for e in tensor.external_data}
    with open(os.path.join(folder, info["location"]), "rb") as f:
        f.seek(int(info.get("offset", 0)))
        return f.read(int(info["length"]))


def random_like(tensor, rng):
    """Seeded weights of `tensor`'s shape and type: N(0, 0.02) as LLaMA initializes, 1-D scales 1 + N(0, 0.1)."""
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
    shape = tuple(tensor.dims)
    if len(shape) == 1:
        values = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
    else:
        values = 0.02 * rng.standard_normal(shape, dtype=np.float32)
    return values.astype(dtype).tobytes()


def replicate(two_layer_path, out_path, layers):
    """Writes `out_path` (+ .data): the two-layer file with layer 1 cloned layers-2 times, fresh weights each."""
    folder = os.path.dirname(two_layer_path)
    model = onnx.load(two_layer_path, load_external_data=False)
    graph = model.graph
    nodes = list(graph.node)
    in_block = [f"'{LAYER_SCOPE}'" in scopes(n) for n in nodes]  # the value is a list's repr
    if not any(in_block):
        sys.exit(f"make_llama: no node of the export is scoped under {LAYER_SCOPE} (exporter changed?)")
    block = [n for n, b in zip(nodes, in_block) if b]
    produced = {o for n in block for o in n.output}
    producer_scope = {o: scopes(n) for n in nodes for o in n.output}
    consumers_outside = {i for n, b in zip(nodes, in_block) if not b for i in n.input}
    block_inputs = [i for n in block for i in n.input if i and i not in produced]
    # The residual stream: what a node at layer 0's top level (its residual Add, not a shared constant or
    # rotary table its attention made) gives to layer 1.
    residual_in = sorted({i for i in block_inputs if layer_level(producer_scope.get(i, "")) == "model.layers.0"})
    residual_out = sorted(produced & (consumers_outside | {o.name for o in graph.output}))
    if len(residual_in) != 1 or len(residual_out) != 1:
        sys.exit(f"make_llama: layer 1 reads {residual_in} from layer 0 and gives {residual_out} to the rest; "
                 "expected one residual stream each way")
    users = {}
    for n in nodes:
        for i in n.input:
            users.setdefault(i, set()).add(id(n))
    block_ids = {id(n) for n in block}
    initializers = {t.name: t for t in graph.initializer}
    own_weights = sorted(i for i in set(block_inputs) if i in initializers and users[i] <= block_ids)

    writer = DataWriter(out_path + ".data")
    for t in graph.initializer:  # the exported tensors, streamed one at a time
        if t.data_location == onnx.TensorProto.EXTERNAL:
            writer.add(t, stored_bytes(t, folder))
    previous = residual_out[0]
    clones = []
    for k in range(2, layers):
        rng = np.random.default_rng(SEED * 1000 + k)
        rename = {name: f"{name}__layer{k}" for name in produced}
        rename[residual_in[0]] = previous
        for w in own_weights:
            new_name = re.sub(r"layers\.1\.", f"layers.{k}.", w) if "layers.1." in w else f"{w}__layer{k}"
            rename[w] = new_name
            t = onnx.TensorProto()
            t.CopyFrom(initializers[w])
            t.name = new_name
            writer.add(t, random_like(initializers[w], rng))
            graph.initializer.append(t)
        for n in block:
            c = onnx.NodeProto()
            c.CopyFrom(n)
            c.name = f"{n.name}__layer{k}"
            c.input[:] = [rename.get(i, i) if i else i for i in n.input]
            c.output[:] = [rename[o] for o in n.output]
            for p in c.metadata_props:
                if p.key == "pkg.torch.onnx.name_scopes":
                    p.value = p.value.replace(LAYER_SCOPE, f"model.layers.{k}")
            clones.append(c)
        previous = rename[residual_out[0]]
    writer.close()
    # The clones go right after layer 1's last node; what read layer 1's output reads the last clone's.
    last = max(i for i, b in enumerate(in_block) if b)
    for n in nodes[last + 1:]:
        n.input[:] = [previous if i == residual_out[0] else i for i in n.input]
    for o in graph.output:
        if o.name == residual_out[0]:
            sys.exit("make_llama: layer 1's output is a graph output; nothing to chain")
    del graph.node[:]
    graph.node.extend(nodes[:last + 1] + clones + nodes[last + 1:])
    del graph.value_info[:]  # the exporter's shapes name layer-1 tensors only; onnxruntime infers the rest
    onnx.save(model, out_path)
    return len(block), len(own_weights)


def check(path, config, torch_model, layers):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    for batch, seq in ((1, 8), (2, 5)):
        ids, mask = sample_inputs(config, batch, seq, SEED + batch * 100 + seq)
        got = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        if got.shape != (batch, seq, config.hidden_size) or not np.isfinite(got.astype(np.float32)).all():
            sys.exit(f"make_llama: {path} at {(batch, seq)}: output {got.shape}, finite {np.isfinite(got).all()}")
        note = ""
        if torch_model is not None and layers == 2:
            with torch.no_grad():
                expected = torch_model(torch.from_numpy(ids), torch.from_numpy(mask)).float().numpy()
            diff = float(np.abs(got.astype(np.float32) - expected).max())
            tolerance = 2e-2 if got.dtype == np.float16 else 1e-3
            if diff > tolerance * max(1.0, float(np.abs(expected).max())):
                sys.exit(f"make_llama: {path} at {(batch, seq)}: max |onnxruntime - torch| {diff:.3g}")
            note = f", max |onnxruntime - torch| {diff:.2g}"
        print(f"make_llama: checked at (batch, seq) = {(batch, seq)}: output {got.shape} {got.dtype}{note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=2, help="decoder layers, at least 2 (default 2)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    parser.add_argument("--width", choices=sorted(WIDTHS), default="7b")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--check", action="store_true", help="run the file in onnxruntime at two shapes")
    args = parser.parse_args()
    if args.layers < 2:
        parser.error("--layers must be at least 2")
    os.makedirs(args.out, exist_ok=True)
    name = os.path.join(args.out, f"llama-{args.width}-{args.layers}L-{args.dtype}.onnx")
    start = time.time()
    model, config = build(args.width, args.dtype)
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        two = os.path.join(tmp, "two-layers.onnx")
        export_two_layers(model, config, two)
        print(f"make_llama: exported 2 layers ({time.time() - start:.0f} s)", flush=True)
        keep = model if args.check and args.layers == 2 else None
        if keep is None:
            del model
        block, weights = replicate(two, name, args.layers)
    size = os.path.getsize(name + ".data")
    print(f"make_llama: wrote {name} (+ .data, {size / 1e9:.2f} GB): {args.layers} layers of {block} nodes and "
          f"{weights} weights each, {time.time() - start:.0f} s", flush=True)
    if args.check:
        check(name, config, keep, args.layers)


if __name__ == "__main__":
    main()
