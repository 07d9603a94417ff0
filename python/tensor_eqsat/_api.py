"""The Python API: thin wrappers over the library calls eqsat-run and ruleverify make (tensor_eqsat._core).

Models travel as files, exactly as the programs read and write them: a ModelProto or bytes is saved to a
temporary folder, the optimized model is read back from the file the library wrote.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, NamedTuple, Sequence, Union

import onnx

from . import _core

_log = logging.getLogger("tensor_eqsat")

ModelInput = Union[onnx.ModelProto, bytes, str, os.PathLike]
Progress = Callable[[str], None]


class EqsatError(Exception):
    """Bad input, as eqsat-run and ruleverify report it: a missing or malformed model or rule file, an
    unsupported opset, an unknown target or option. The message is the program's (without its
    "eqsat-run: error: " prefix); ``exit_code`` is the program's exit status for it (2 for bad input,
    3 for an internal error)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class RejectedError(EqsatError):
    """The numerical check found the optimized model computing other values than the input (eqsat-run's
    exit 5). Nothing wrong is returned; ``report`` says where and by how much it differed."""

    def __init__(self, message: str, report: dict) -> None:
        super().__init__(message, _core.EXIT_REJECTED)
        self.report = report


class CheckNotRunError(EqsatError):
    """``check="required"`` and the check could not run (an operator it cannot evaluate; eqsat-run --check's
    exit 4). ``report`` is the run's report."""

    def __init__(self, message: str, report: dict) -> None:
        super().__init__(message, _core.EXIT_CHECK_NOT_RUN)
        self.report = report


class Optimized(NamedTuple):
    """What :func:`optimize` returns: ``model, report = tensor_eqsat.optimize(...)``."""

    model: onnx.ModelProto
    """The optimized model; the input itself when nothing cheaper was found or the check could not vouch."""
    report: dict
    """What ``eqsat-run --report`` writes: costs, ``speedup``, ``written`` ("export" or "input"), ``check``,
    ``rules_used``, ``cost_model``, ``seconds``... (docs/eqsat-run.md)."""


class Verified(NamedTuple):
    """What :func:`verify` returns."""

    ok: bool
    """True when every rule was proved (ruleverify's exit 0)."""
    rules: list
    """One dict per rule: ``id``, ``status`` (verified, wrong, unknown), ``method``, ``counterexample``
    for a wrong rule."""
    report: dict
    """ruleverify --json's whole report (``summary``, ``skipped``...)."""


def corpus_dir() -> Path:
    """The rule corpus and device profiles installed with the package (rules.json, devices/, models/)."""
    return Path(__file__).resolve().parent / _core.installed_corpus_dir()


def _progress_sink(progress: Progress | None) -> Progress:
    if progress is not None:
        return progress
    return lambda line: _log.info("%s", line)


def _model_file(model: ModelInput, folder: Path) -> Path:
    """A file holding `model`, with its external data beside it when it is a path."""
    if isinstance(model, onnx.ModelProto):
        for tensor in model.graph.initializer:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                raise ValueError(
                    "the ModelProto refers to external data files that are not loaded; pass the model's path "
                    "instead (its external data is read from beside it)")
        path = folder / "model.onnx"
        large = model.ByteSize() > 1_800_000_000
        onnx.save_model(model, str(path), save_as_external_data=large)
        return path
    if isinstance(model, (bytes, bytearray, memoryview)):
        path = folder / "model.onnx"
        path.write_bytes(bytes(model))
        return path
    if isinstance(model, (str, os.PathLike)):
        return Path(model)
    raise TypeError(f"model must be an onnx.ModelProto, bytes or a path, not {type(model).__name__}")


def optimize(model: ModelInput, *,
             target: str = "auto",
             rules: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
             check: bool | Literal["required"] = True,
             dims: Mapping[str, int] | None = None,
             node_limit: int | None = None,
             iter_limit: int | None = None,
             rounds: int | None = None,
             min_gain: float | None = None,
             cost: str | None = None,
             progress: Progress | None = None) -> Optimized:
    """Optimize an ONNX model by equality saturation with the verified rule corpus, as ``eqsat-run`` does.

    Args:
        model: an ``onnx.ModelProto``, the serialized model as bytes, or a path (external data is read from
            beside it; pass a path for a model whose weights are in external files).
        target: where the model will run, which the cost model describes: "auto" (this machine:
            onnxruntime on this CPU without a GPU), "cpu", or a GPU: "h200", "a100", "v100", "t4"
            (eqsat-run --target).
        rules: rule corpus JSON file(s); None: the corpus installed with the package.
        check: True: compare the optimized model with the input numerically (at the imported size and at a
            second value of each symbolic dimension) before returning it, and return the input when the
            check cannot run; "required": raise :class:`CheckNotRunError` instead; False: no check.
        dims: values symbolic input dimensions are optimized at, ``{"batch": 1, "seq": 128}`` or
            ``{"input_ids:1": 64}`` (eqsat-run --dim); the returned model keeps them symbolic.
        node_limit, iter_limit, rounds: the saturation's limits (e-nodes, iterations per round, rounds);
            None: eqsat-run's defaults.
        min_gain: return the optimized model only when it is at least this fraction cheaper (default 0.005).
        cost: an expert's cost model spec instead of ``target`` (eqsat-run --cost).
        progress: called with each progress and summary line; None: they go to the "tensor_eqsat" logger
            at INFO level.

    Returns:
        ``Optimized(model, report)``: the optimized ``onnx.ModelProto`` (the input itself when nothing
        cheaper was found or the check could not run) and the report as a dict (eqsat-run --report).

    Raises:
        EqsatError: bad input (missing or malformed model, unknown target, ...), with eqsat-run's message.
        RejectedError: the check found the optimized model computing other values.
        CheckNotRunError: ``check="required"`` and the check could not run.
    """
    if cost is not None and target != "auto":
        raise ValueError("give target or cost, not both")
    options: dict[str, Any] = {
        "check": "off" if check is False else "required" if check == "required" else "default",
        "corpus_dir": str(corpus_dir()),
    }
    if check not in (True, False, "required"):
        raise ValueError(f"check must be True, False or 'required', not {check!r}")
    if cost is not None:
        options["cost"] = cost
    else:
        options["target"] = target
    if rules is not None:
        files = [rules] if isinstance(rules, (str, os.PathLike)) else list(rules)
        options["rules"] = [os.fspath(f) for f in files]
    if dims:
        options["dims"] = [f"{name}={value}" for name, value in dims.items()]
    for key, value in (("node_limit", node_limit), ("iter_limit", iter_limit), ("rounds", rounds),
                       ("min_gain", min_gain)):
        if value is not None:
            options[key] = value
    with tempfile.TemporaryDirectory(prefix="tensor_eqsat_") as tmp:
        folder = Path(tmp)
        source = _model_file(model, folder)
        output = folder / "optimized.onnx"
        result = _core.optimize(str(source), str(output), options, _progress_sink(progress))
        if result["error"] is not None:
            raise EqsatError(result["error"], result["exit_code"])
        report = json.loads(result["report"])
        if result["exit_code"] == _core.EXIT_REJECTED:
            raise RejectedError("optimization rejected: " + result["rejected"], report)
        if result["exit_code"] == _core.EXIT_CHECK_NOT_RUN:
            raise CheckNotRunError("the check could not run: " + result["check_reason"], report)
        if report.get("written") == "input":
            # The file written is the input byte for byte: hand back the caller's own object.
            if isinstance(model, onnx.ModelProto):
                return Optimized(model, report)
            return Optimized(onnx.load(str(source)), report)
        return Optimized(onnx.load(str(output)), report)


def verify(corpus: str | os.PathLike | Sequence[str | os.PathLike], *,
           rules: Sequence[str] | None = None,
           jobs: int = 0,
           rlimit: int | None = None,
           axioms: bool = True,
           progress: Progress | None = None) -> Verified:
    """Prove every rule of rule files with Z3, as ``ruleverify`` does.

    Args:
        corpus: a rule file or several: the JSON corpus rulegen writes, Tensat rule text, TASO graph_subst.pb.
        rules: only the rules with these ids.
        jobs: worker threads (0: all cores).
        rlimit: Z3's resource limit per element-wise query (ruleverify --rlimit); None: its default.
        axioms: also prove for all shapes from the operators' axioms (ruleverify without --no-axioms).
        progress: called with each result line and the summary; None: the "tensor_eqsat" logger, INFO.

    Returns:
        ``Verified(ok, rules, report)``: ``ok`` when every rule is proved; one dict per rule with its status
        and, for a wrong one, the counterexample.

    Raises:
        EqsatError: an unreadable or malformed rule file, an unknown rule id (ruleverify's exit 2).
    """
    files = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    options: dict[str, Any] = {"jobs": jobs, "use_axioms": axioms}
    if rules is not None:
        options["rules"] = list(rules)
    if rlimit is not None:
        options["rlimit"] = rlimit
    lines: list[str] = []
    sink = _progress_sink(progress)

    def record(line: str) -> None:
        lines.append(line)
        sink(line)

    with tempfile.TemporaryDirectory(prefix="tensor_eqsat_") as tmp:
        report_path = Path(tmp) / "verify.json"
        status = _core.verify([os.fspath(f) for f in files], str(report_path), options, record)
        if status == 2 or not report_path.exists():
            errors = [line.removeprefix("ruleverify: ") for line in lines if line.startswith("ruleverify:")]
            raise EqsatError("; ".join(errors) or "ruleverify could not read its input", 2)
        report = json.loads(report_path.read_text())
    return Verified(status == 0, report.get("rules", []), report)
