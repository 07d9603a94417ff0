#!/usr/bin/env python3
"""Exports Hugging Face transformers architectures to ONNX with both of PyTorch's exporters (issue 43, item 6).

Every model is built from a config written in this file (nothing is downloaded: no from_pretrained, no hub
access) with seeded random weights. Trained weights have biases away from zero and norm scales away from one,
so after the initialization every 1-D parameter (biases, LayerNorm/RMSNorm scales and shifts) gets seeded
normal noise: an importer cannot fold "x * 1" or "x + 0" that a trained model would not allow.

Architectures (NAME: model class, inputs):
  bert        BertModel            input_ids, attention_mask  [batch, seq] int64
  distilbert  DistilBertModel      input_ids, attention_mask  [batch, seq] int64
  gpt2        GPT2Model            input_ids, attention_mask  [batch, seq] int64
  llama       LlamaModel           input_ids, attention_mask  [batch, seq] int64 (RMSNorm, rotary, SwiGLU, GQA)
  vit         ViTModel             pixel_values               [batch, 3, 224, 224] (tiny: [batch, 3, 32, 32])
  t5          T5EncoderModel       input_ids, attention_mask  [batch, seq] int64
  whisper     WhisperEncoder       input_features             [batch, 80, 3000] (tiny: [batch, 80, 64]); the
                                   encoder requires exactly 2 * max_source_positions frames, so only batch is
                                   symbolic
  convnext    ConvNextModel        pixel_values               [batch, 3, 224, 224] (tiny: [batch, 3, 32, 32])
The output is the model's last_hidden_state only (one tensor, `last_hidden_state`). The attention masks fed are
ones with padding (zeros) at the end of every row but the first; the decoders take one too, as Optimum's exports
do (without one, transformers looks for packed sequences with torch.diff, which the TorchScript exporter cannot
export).

Sizes:
  --size tiny  2 layers, hidden 48, 4 heads, feed-forward 96, vocabulary 256, 128 positions: 140-380 KB per file, committed under
               corpus/models/hf/ (tests/programs/hf_models.cmake runs them in CI).
  --size full  the base configs: bert-base-uncased, distilbert-base-uncased, gpt2 (small), a LLaMA-style decoder
               with TinyLlama-1.1B's widths and 4 layers, vit-base-patch16-224, the t5-small encoder, the
               whisper-tiny encoder, convnext-tiny-224. Not committed (hundreds of MB); made on demand.

Each model is exported twice:
  NAME.torchscript.onnx  torch.onnx.export(dynamo=False, opset_version=17) with dynamic_axes
                         {input: {0: 'batch', 1: 'seq'}} (vision and Whisper: batch only) on inputs and output;
  NAME.dynamo.onnx       torch.onnx.export(dynamo=True) with dynamic_shapes from torch.export.Dim('batch') and
                         Dim('seq'), the exporter's default opset; tiny: weights inside the file; full: weights
                         in external data (NAME.dynamo.onnx.data beside it).
Sample inputs for the export have batch 2 and sequence 16 (1 would be specialized by torch.export).

With --check, each file is run in onnxruntime at (batch, seq) = (1,16), (2,16), (1,8), (2,8) (vision: batch 1, 2)
and compared with the PyTorch model's output.

Needs torch, transformers and onnxscript (tools/setup-python.sh --with-torch). Running it twice gives the same
files byte for byte. Usage:
  .venv/bin/python tools/make_hf_models.py [--size tiny|full] [--out DIR] [--check] [NAME ...]
(default: tiny into corpus/models/hf/, all eight architectures)
"""
import argparse
import contextlib
import copy
import io
import os
import sys
import warnings

try:
    import numpy as np
    import torch
    import transformers
    from transformers import (BertConfig, BertModel, ConvNextConfig, ConvNextModel, DistilBertConfig,
                              DistilBertModel, GPT2Config, GPT2Model, LlamaConfig, LlamaModel, T5Config,
                              T5EncoderModel, ViTConfig, ViTModel, WhisperConfig)
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"make_hf_models: error: {e} (run tools/setup-python.sh --with-torch)")
    sys.exit(1)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 43
TOKENS = ("bert", "distilbert", "gpt2", "llama", "t5")
VISION = ("vit", "convnext")
NAMES = ("bert", "distilbert", "gpt2", "llama", "vit", "t5", "whisper", "convnext")


def configs(size):
    """NAME -> (config class, keyword arguments). Attention: the default (sdpa where the model has it)."""
    if size == "tiny":
        return {
            "bert": (BertConfig, dict(vocab_size=256, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=96, max_position_embeddings=128)),
            "distilbert": (DistilBertConfig, dict(vocab_size=256, dim=48, n_layers=2, n_heads=4, hidden_dim=96,
                                                  max_position_embeddings=128)),
            "gpt2": (GPT2Config, dict(vocab_size=256, n_embd=48, n_layer=2, n_head=4, n_inner=96, n_positions=128,
                                      use_cache=False)),
            "llama": (LlamaConfig, dict(vocab_size=256, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                        use_cache=False)),
            "vit": (ViTConfig, dict(image_size=32, patch_size=8, hidden_size=48, num_hidden_layers=2,
                                    num_attention_heads=4, intermediate_size=96)),
            "t5": (T5Config, dict(vocab_size=256, d_model=48, d_kv=12, d_ff=96, num_layers=2, num_heads=4,
                                  relative_attention_num_buckets=32, use_cache=False)),
            "whisper": (WhisperConfig, dict(num_mel_bins=80, d_model=48, encoder_layers=2, encoder_attention_heads=4,
                                            encoder_ffn_dim=96, decoder_layers=2, decoder_attention_heads=4,
                                            decoder_ffn_dim=96, vocab_size=256, max_source_positions=32,
                                            max_target_positions=32)),
            "convnext": (ConvNextConfig, dict(image_size=32, num_channels=3, patch_size=4, num_stages=2,
                                              hidden_sizes=[24, 48], depths=[1, 1])),
        }
    return {
        # bert-base-uncased
        "bert": (BertConfig, dict()),
        # distilbert-base-uncased
        "distilbert": (DistilBertConfig, dict()),
        # gpt2 (small)
        "gpt2": (GPT2Config, dict(use_cache=False)),
        # TinyLlama-1.1B's widths (GQA 32/4 heads, SwiGLU 5632, vocabulary 32000) with 4 layers
        "llama": (LlamaConfig, dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
                                    num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
                                    rms_norm_eps=1e-5, use_cache=False)),
        # google/vit-base-patch16-224
        "vit": (ViTConfig, dict()),
        # t5-small
        "t5": (T5Config, dict(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8, use_cache=False)),
        # openai/whisper-tiny
        "whisper": (WhisperConfig, dict(num_mel_bins=80, d_model=384, encoder_layers=4, encoder_attention_heads=6,
                                        encoder_ffn_dim=1536, decoder_layers=4, decoder_attention_heads=6,
                                        decoder_ffn_dim=1536, vocab_size=51865, max_source_positions=1500,
                                        max_target_positions=448)),
        # facebook/convnext-tiny-224
        "convnext": (ConvNextConfig, dict(hidden_sizes=[96, 192, 384, 768], depths=[3, 3, 9, 3])),
    }


class LastHiddenState(torch.nn.Module):
    """The model with one output, last_hidden_state; the inputs are passed by name (GPT-2's second positional
    parameter is past_key_values)."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args)), return_dict=False)[0]


def build(name, size):
    config_class, kwargs = configs(size)[name]
    config = config_class(**kwargs)
    if name == "t5":
        # torch.export with sdpa: "Cannot view a tensor with shape [s33, s50, 4, 16] and strides
        # (64*s50, 16, 16*s50, 1) as a tensor with shape (s33, s50, 64)" at T5Attention's reshape; eager works.
        config._attn_implementation = "eager"
    torch.manual_seed(SEED)
    if name == "t5":
        model = T5EncoderModel(config)
    elif name == "whisper":
        model = WhisperEncoder(config)
    else:
        model = {"bert": BertModel, "distilbert": DistilBertModel, "gpt2": GPT2Model, "llama": LlamaModel,
                 "vit": ViTModel, "convnext": ConvNextModel}[name](config)
    model.eval()
    # Trained weights: biases and norm scales are not zeros and ones. Every 1-D parameter gets seeded noise
    # (scales: ones + N(0, 0.1); biases and shifts: N(0, 0.05)).
    generator = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() == 1:
                std = 0.1 if pname.endswith("weight") else 0.05
                p.add_(torch.randn(p.shape, generator=generator) * std)
            elif "layer_scale" in pname or pname.endswith("gamma"):
                p.add_(torch.randn(p.shape, generator=generator) * 0.1)
    names = [n for n, _ in input_spec(name, config, None)]
    wrapped = LastHiddenState(model, names)
    wrapped.eval()
    return wrapped, config


def input_spec(name, config, size):
    """[(input name, kind)]: kind 'ids' (tokens), 'mask', 'pixels' or 'features'."""
    if name in TOKENS:
        # The decoders too, as Optimum exports them: without a mask, transformers looks for packed sequences
        # in the position ids (torch.diff, which the TorchScript exporter has no symbolic for).
        return [("input_ids", "ids"), ("attention_mask", "mask")]
    if name in VISION:
        return [("pixel_values", "pixels")]
    return [("input_features", "features")]


def make_inputs(name, config, batch, seq, seed):
    """Seeded inputs as numpy arrays, in input order."""
    rng = np.random.default_rng(seed)
    out = []
    for input_name, kind in input_spec(name, config, None):
        if kind == "ids":
            out.append(rng.integers(0, config.vocab_size, size=(batch, seq), dtype=np.int64))
        elif kind == "mask":
            mask = np.ones((batch, seq), dtype=np.int64)
            for b in range(1, batch):  # rows after the first end in b * seq / 4 padding positions
                mask[b, seq - b * (seq // 4):] = 0
            out.append(mask)
        elif kind == "pixels":
            out.append(rng.standard_normal((batch, 3, config.image_size, config.image_size)).astype(np.float32))
        else:
            frames = 2 * config.max_source_positions
            out.append(rng.standard_normal((batch, config.num_mel_bins, frames)).astype(np.float32))
    return out


def symbolic_axes(name):
    """Axis -> name of the symbolic dimensions of every input (and the output)."""
    if name in VISION or name == "whisper":
        return {0: "batch"}
    return {0: "batch", 1: "seq"}


def export_torchscript(model, name, config, path):
    args = tuple(torch.from_numpy(a) for a in make_inputs(name, config, 2, 16, SEED))
    names = [n for n, _ in input_spec(name, config, None)]
    axes = symbolic_axes(name)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17, input_names=names,
                          output_names=["last_hidden_state"],
                          dynamic_axes={**{n: axes for n in names}, "last_hidden_state": axes})


def export_dynamo(model, name, config, path, external):
    args = tuple(torch.from_numpy(a) for a in make_inputs(name, config, 2, 16, SEED))
    names = [n for n, _ in input_spec(name, config, None)]
    batch = torch.export.Dim("batch", min=1, max=1024)
    seq_max = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 4096
    seq = torch.export.Dim("seq", min=2, max=seq_max)
    axes = {0: batch} if (name in VISION or name == "whisper") else {0: batch, 1: seq}
    dynamic_shapes = {n: axes for n in names}
    # The wrapper's forward takes *args: dynamic_shapes is then a tuple with one entry per positional input.
    dynamic_shapes = (tuple(dynamic_shapes[n] for n in names),)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, args, dynamo=True, input_names=names,
                                    output_names=["last_hidden_state"], dynamic_shapes=dynamic_shapes,
                                    optimize=True, verbose=False)
    for stale in (path, path + ".data"):
        if os.path.exists(stale):
            os.remove(stale)
    # The nodes' Python stack traces name files by absolute path (this script's, the virtual environment's):
    # dropped, so that the file does not depend on where it was made. The other metadata stays.
    for node in program.model.graph.all_nodes() if hasattr(program.model.graph, "all_nodes") else program.model.graph:
        node.metadata_props.pop("pkg.torch.onnx.stack_trace", None)
    program.save(path, external_data=external)


def check(model, name, config, path):
    """Runs the file in onnxruntime at four shapes and compares with torch; returns a list of (shape, max diff)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    shapes = [(1, 16), (2, 16), (1, 8), (2, 8)] if name not in VISION and name != "whisper" else [(1, 0), (2, 0)]
    results = []
    for batch, seq in shapes:
        inputs = make_inputs(name, config, batch, seq or 16, SEED + batch * 100 + seq)
        with torch.no_grad():
            expected = model(*[torch.from_numpy(a) for a in inputs]).numpy()
        got = session.run(None, dict(zip(names, inputs)))[0]
        if got.shape != expected.shape:
            raise SystemExit(f"make_hf_models: {path} at {(batch, seq)}: shape {got.shape}, torch {expected.shape}")
        scale = max(1.0, float(np.abs(expected).max()))
        diff = float(np.abs(got - expected).max())
        if diff > 1e-3 * scale:
            raise SystemExit(f"make_hf_models: {path} at {(batch, seq)}: max |onnxruntime - torch| {diff:.3g}")
        results.append(((batch, seq) if seq else (batch,), diff))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", default=list(NAMES), help=f"architectures (default: all of {NAMES})")
    parser.add_argument("--size", choices=("tiny", "full"), default="tiny")
    parser.add_argument("--out", help="output folder (default: corpus/models/hf for tiny; required for full)")
    parser.add_argument("--exporter", choices=("both", "torchscript", "dynamo"), default="both")
    parser.add_argument("--check", action="store_true", help="run each file in onnxruntime and compare with torch")
    a = parser.parse_args()
    for n in a.names:
        if n not in NAMES:
            parser.error(f"unknown architecture '{n}' (one of {', '.join(NAMES)})")
    if a.out is None:
        if a.size == "full":
            parser.error("--size full needs --out (the files are hundreds of MB; not for the repository)")
        a.out = os.path.join(ROOT, "corpus", "models", "hf")
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    transformers.logging.set_verbosity_error()
    for name in a.names:
        model, config = build(name, a.size)
        exporters = ("torchscript", "dynamo") if a.exporter == "both" else (a.exporter,)
        for exporter in exporters:
            path = os.path.join(a.out, f"{name}.{exporter}.onnx")
            if exporter == "torchscript":
                export_torchscript(model, name, config, path)
            else:
                export_dynamo(model, name, config, path, external=(a.size == "full"))
            size = os.path.getsize(path) + (os.path.getsize(path + ".data") if os.path.exists(path + ".data") else 0)
            line = f"{path}: {size / 1024:.0f} KB"
            if a.check:
                line += "; onnxruntime vs torch: " + ", ".join(f"{s} {d:.2g}" for s, d in check(model, name, config, path))
            print(line, flush=True)


if __name__ == "__main__":
    main()
