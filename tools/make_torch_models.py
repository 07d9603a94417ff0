#!/usr/bin/env python3
"""Exports the PyTorch models of eqsat-run's tests to corpus/models/torch/ (small files: weights are graph inputs).

Models: torchvision ResNet-50, ResNeXt-50 (32x4d), VGG-19, SqueezeNet 1.1, Inception-v3, MobileNet-v2,
DenseNet-121 (randomly initialized, nothing is downloaded), a BERT-style encoder (nn.TransformerEncoder: 2
post-norm layers, d_model 64, 4 heads, feed-forward 128, GELU; input [batch 2, sequence 16, 64]) and a NAS-RNN
cell unrolled 5 steps (the cell of the built-in `--model nasrnn`: hidden 512, 8 input/state matmul pairs per
step, new weights in every step as TASO's benchmark has them; input [5 steps, batch 1, 512]).

Each model is exported twice with torch.onnx.export, in eval mode (batch norms that follow a convolution are
folded into it), with export_params=False: every weight becomes a graph input, nothing is an initializer, so
a file is a few tens of KB (ResNet-50's weights would be ~100 MB):
  - corpus/models/torch/NAME.onnx: opset 13, fixed shapes (batch 1; the encoder batch 2);
  - corpus/models/torch/opset17-dynamic/NAME.onnx: opset 17 (the newest torch 1.13 writes: the encoder's layer
    norms become LayerNormalization), with a symbolic batch dimension `batch` on the input and the output
    (dynamic_axes), so that shapes inside depend on it as users' exports do.
Opsets 18 and 21 and external data are made from these at test time with onnx's own tools
(tests/python/test_variants.py). The parameters are randomized before the
export so that no two weights are equal (the exporter would merge equal ones into one input). Tests feed
seeded random weights, the same to the original and to the optimized model (tests/python/test_models.py
--weights-as-inputs).

The encoder's attention is written by PyTorch 1.13 with int64 shape arithmetic (Shape, Gather, Add, Div, Mul
feeding Slice); eqsat-run's importer folds it (optimizer/onnx/detail/fold_shapes.h), so the file is committed
as exported.

Needs Debian's python3-torch and python3-torchvision (run with /usr/bin/python3); CI does not: the files
are committed. Usage: /usr/bin/python3 tools/make_torch_models.py [OUT_DIR] [NAME ...]
(default OUT_DIR corpus/models/torch). Re-running gives the same graphs.
"""
import os
import sys

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"make_torch_models: error: {e} (apt-get install python3-torch python3-torchvision; run /usr/bin/python3)")
    sys.exit(1)

OPSET = 13


class BertEncoder(torch.nn.Module):
    """A BERT-style encoder of post-norm layers with a GELU feed-forward. The test set's is small (2 layers,
    d_model 64, 4 heads, feed-forward 128); BERT-base's (12 layers, 768, 12 heads, 3072) is not committed
    (bench/check_bench.sh exports it to time --check on it: make_torch_models.py OUT_DIR bert_base)."""

    def __init__(self, d_model=64, nhead=4, feed_forward=128, layers=2):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=d_model, nhead=nhead, dim_feedforward=feed_forward,
                                                 dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class NasRnn(torch.nn.Module):
    """NAS-RNN unrolled over the steps of x [steps, batch, hidden], as optimizer/models/nasrnn.cpp builds it."""

    def __init__(self, hidden=512, steps=5):
        super().__init__()
        self.steps = steps
        # Per step: 8 combines of x @ wx + state @ wh, each with its own weights (TASO's nasrnn.py).
        self.wx = torch.nn.ParameterList([torch.nn.Parameter(torch.empty(hidden, hidden)) for _ in range(8 * steps)])
        self.wh = torch.nn.ParameterList([torch.nn.Parameter(torch.empty(hidden, hidden)) for _ in range(8 * steps)])
        self.state = torch.nn.Parameter(torch.empty(1, hidden))

    def cell(self, step, state, x):
        t = [x @ self.wx[8 * step + i] + state @ self.wh[8 * step + i] for i in range(8)]
        m0 = torch.relu(t[0]) + torch.sigmoid(t[3])
        m1 = torch.sigmoid(t[1]) + torch.tanh(t[2])
        m2 = torch.sigmoid(t[4]) * torch.tanh(t[5])
        m3 = torch.sigmoid(t[6]) * torch.relu(t[7])
        m4 = torch.sigmoid(m1) + torch.tanh(m2)
        m5 = torch.tanh(m0) * torch.tanh(m3)
        return torch.tanh(torch.tanh(m4) * torch.tanh(m5))

    def forward(self, x):
        state = self.state
        for step, xs in enumerate(torch.split(x, 1, dim=0)):
            state = self.cell(step, state, xs.squeeze(0))
        return state


MODELS = {
    "resnet50": (lambda: torchvision.models.resnet50(), (1, 3, 224, 224)),
    "resnext50": (lambda: torchvision.models.resnext50_32x4d(), (1, 3, 224, 224)),
    "vgg19": (lambda: torchvision.models.vgg19(), (1, 3, 224, 224)),
    "densenet121": (lambda: torchvision.models.densenet121(), (1, 3, 224, 224)),
    "nasrnn": (NasRnn, (5, 1, 512)),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(), (1, 3, 224, 224)),
    "inception_v3": (lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=False), (1, 3, 299, 299)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
    "bert_encoder": (BertEncoder, (2, 16, 64)),
}


# Exported only when named (too large to commit, and not part of the test set): input [batch 1, sequence 128].
EXTRA_MODELS = {"bert_base": (lambda: BertEncoder(768, 12, 3072, 12), (1, 128, 768))}

# Which axis of the input and the output is the batch (NAS-RNN's input is [steps, batch, hidden]).
BATCH_AXIS = {"nasrnn": (1, 0)}


def export(name, path, opset=OPSET, dynamic=False):
    make, shape = {**MODELS, **EXTRA_MODELS}[name]
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point():
                t.uniform_(0.5, 1.5)  # distinct values (no merged weights); positive batch-norm variances
    # Gradients stay enabled: under no_grad nn.TransformerEncoder takes its fused fast path, which the ONNX
    # exporter cannot write.
    in_axis, out_axis = BATCH_AXIS.get(name, (0, 0))
    axes = {"input": {in_axis: "batch"}, "output": {out_axis: "batch"}} if dynamic else None
    torch.onnx.export(model, torch.randn(*shape), path, opset_version=opset, export_params=False,
                      do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL,
                      input_names=["input"], output_names=["output"], dynamic_axes=axes)


def main():
    args = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = os.path.join(root, "corpus", "models", "torch")
    if args and args[0] not in MODELS and args[0] not in EXTRA_MODELS:
        out_dir, args = args[0], args[1:]
    dynamic_dir = os.path.join(out_dir, "opset17-dynamic")
    os.makedirs(dynamic_dir, exist_ok=True)
    for name in args or MODELS:
        forms = [(os.path.join(out_dir, name + ".onnx"), OPSET, False)]
        if name not in EXTRA_MODELS:
            forms.append((os.path.join(dynamic_dir, name + ".onnx"), 17, True))
        for path, opset, dynamic in forms:
            export(name, path, opset, dynamic)
            print(f"make_torch_models: {path} ({os.path.getsize(path) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
