#!/usr/bin/env python3
"""Turns the weights of a PyTorch export made with export_params=False (corpus/models/torch/: every weight is a
graph input) into initializers with real-looking seeded random values, so that eqsat-run --check sees a model
as a user has it: data input(s) first, weights in the file.

The values are those tests/python/test_models.py --weights-as-inputs feeds: tensors of rank >= 2 uniform with
variance 2/fan-in (He), the others uniform in [-0.1, 0.1], so that deep networks keep outputs of scale ~1;
batch-norm variances uniform in [0.5, 1.5].

Usage: .venv/bin/python bench/with_weights.py IN.onnx OUT.onnx [--seed N] [--data-inputs K] [--symbolic-batch NAME]
  --data-inputs K          the first K graph inputs stay inputs (default 1)
  --symbolic-batch NAME    declare dimension 0 of the data inputs and of the outputs symbolic (dim_param NAME), as
                           an export with a dynamic batch has it (eqsat-run then needs --dim NAME=VALUE)
"""
import argparse

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-inputs", type=int, default=1)
    parser.add_argument("--symbolic-batch")
    a = parser.parse_args()
    model = onnx.load(a.source)
    graph = model.graph
    rng = np.random.default_rng(a.seed)
    inputs = list(graph.input)
    del graph.input[a.data_inputs:]
    # Batch-norm variances must be positive (a model's are): uniform in [0.5, 1.5] instead.
    variances = {n.input[4] for n in graph.node if n.op_type == "BatchNormalization" and len(n.input) > 4}
    for value in inputs[a.data_inputs:]:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type != onnx.TensorProto.FLOAT or any(d <= 0 for d in shape):
            raise SystemExit(f"with_weights: input '{value.name}' is not a float tensor of fixed shape")
        fan_in = int(np.prod(shape[1:])) if len(shape) >= 2 else 0
        scale = np.sqrt(6.0 / fan_in) if fan_in else 0.1  # uniform(-a, a) has variance a^2 / 3
        weight = (rng.uniform(0.5, 1.5, shape) if value.name in variances else
                  rng.uniform(-1, 1, shape) * scale).astype(np.float32)
        graph.initializer.append(numpy_helper.from_array(weight, value.name))
    if a.symbolic_batch:
        for value in list(graph.input) + list(graph.output):
            value.type.tensor_type.shape.dim[0].dim_param = a.symbolic_batch
    onnx.save(model, a.target)


if __name__ == "__main__":
    main()
