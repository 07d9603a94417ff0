#!/usr/bin/env python3
"""Exports the PyTorch models of eqsat-run's tests to corpus/models/torch/ (small files: weights are graph inputs).

Models: torchvision ResNet-50, SqueezeNet 1.1, Inception-v3, MobileNet-v2 (randomly initialized, nothing is
downloaded) and a BERT-style encoder (nn.TransformerEncoder: 2 post-norm layers, d_model 64, 4 heads,
feed-forward 128, GELU; input [batch 2, sequence 16, 64]).

Each model is exported with torch.onnx.export at opset 13, fixed shapes, in eval mode (batch norms folded into
the convolutions), with export_params=False: every weight becomes a graph input, nothing is an initializer, so
a file is a few tens of KB (ResNet-50's weights would be ~100 MB). The parameters are randomized before the
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
    """A small BERT-style encoder: 2 post-norm layers, d_model 64, 4 heads, GELU feed-forward of 128."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                                 activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


MODELS = {
    "resnet50": (lambda: torchvision.models.resnet50(), (1, 3, 224, 224)),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(), (1, 3, 224, 224)),
    "inception_v3": (lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=False), (1, 3, 299, 299)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
    "bert_encoder": (BertEncoder, (2, 16, 64)),
}


def export(name, path):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point():
                t.uniform_(0.5, 1.5)  # distinct values (no merged weights); positive batch-norm variances
    # Gradients stay enabled: under no_grad nn.TransformerEncoder takes its fused fast path, which the ONNX
    # exporter cannot write.
    torch.onnx.export(model, torch.randn(*shape), path, opset_version=OPSET, export_params=False,
                      do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL,
                      input_names=["input"], output_names=["output"])


def main():
    args = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = os.path.join(root, "corpus", "models", "torch")
    if args and args[0] not in MODELS:
        out_dir, args = args[0], args[1:]
    os.makedirs(out_dir, exist_ok=True)
    for name in args or MODELS:
        path = os.path.join(out_dir, name + ".onnx")
        export(name, path)
        print(f"make_torch_models: {path} ({os.path.getsize(path) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
