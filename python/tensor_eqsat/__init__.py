"""tensor-eqsat: optimize ONNX models by equality saturation with a verified, generated rule corpus.

    import onnx, tensor_eqsat
    model, report = tensor_eqsat.optimize(onnx.load("model.onnx"))   # or a path, or bytes
    print(report["speedup"], report["check"]["passed"])

:func:`optimize` is ``eqsat-run``, :func:`verify` is ``ruleverify``; both call the same library as the
programs, which the package also installs as console scripts (eqsat-run, ruleverify, rulegen).
"""
from importlib.metadata import PackageNotFoundError, version as _version

from ._api import (CheckNotRunError, EqsatError, Optimized, RejectedError, Verified, corpus_dir, optimize,
                   verify)

try:
    __version__ = _version("tensor-eqsat")
except PackageNotFoundError:  # imported from a source tree
    __version__ = "unknown"

__all__ = ["optimize", "verify", "corpus_dir", "Optimized", "Verified", "EqsatError", "RejectedError",
           "CheckNotRunError", "__version__"]
