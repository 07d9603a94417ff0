#!/usr/bin/env python3
"""Exports torchvision ResNet-50, SqueezeNet 1.1, Inception-v3, MobileNet-v2 and a BERT-style
nn.TransformerEncoder to ONNX (opset 13, fixed shapes, randomly initialized weights: no download).

Needs PyTorch and torchvision (Debian: apt-get install python3-torch python3-torchvision; run with
/usr/bin/python3). The files are large (ResNet-50 ~100 MB): write them to a build folder, never commit them.
Usage: export_torch_models.py OUT_DIR [NAME ...]     exits 77 when torch is not installed
"""
import os
import sys

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"skipped: {e} (apt-get install python3-torch python3-torchvision)")
    sys.exit(77)


class Bert(torch.nn.Module):
    """A small BERT-style encoder: 2 layers, d_model 64, 4 heads, GELU feed-forward."""

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
    "inception_v3": (lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=True), (1, 3, 299, 299)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
    "bert_encoder": (Bert, (2, 16, 64)),
}


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    for name in sys.argv[2:] or MODELS:
        make, shape = MODELS[name]
        model = make().eval()
        path = os.path.join(out_dir, name + ".onnx")
        if not os.path.exists(path):
            # With gradients enabled nn.TransformerEncoder skips its fused fast path, which ONNX cannot export.
            torch.onnx.export(model, torch.randn(*shape), path, opset_version=13, do_constant_folding=True,
                              input_names=["input"], output_names=["output"])
        print(f"export_torch_models: {path} ({os.path.getsize(path) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
