"""The installed Python package (tools/package-check.sh installs it into a fresh virtual environment with
`pip install .` and runs this from outside the source tree): the API optimizes bundled models from a
ModelProto, a path and bytes with outputs equal in onnxruntime, returns the report, raises with eqsat-run's
messages, verifies rule files; the console scripts run."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import tensor_eqsat

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "corpus" / "models"
BIN = Path(sys.executable).parent  # the console scripts of the virtual environment


def outputs(model: onnx.ModelProto, feeds: dict) -> list:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def random_feeds(model: onnx.ModelProto, size: int = 3, seed: int = 0) -> dict:
    """Random values for the graph inputs; symbolic dimensions get `size`."""
    rng = np.random.default_rng(seed)
    weights = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in weights:
            continue
        tensor_type = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else size for d in tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        if np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def assert_same_outputs(original: onnx.ModelProto, optimized: onnx.ModelProto, sizes=(3,)) -> None:
    for size in sizes:
        feeds = random_feeds(original, size)
        for want, got in zip(outputs(original, feeds), outputs(optimized, feeds), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))


def test_optimize_model_proto_pays_and_computes_the_same():
    original = onnx.load(MODELS / "attention.onnx")
    optimized, report = tensor_eqsat.optimize(original)
    assert report["written"] == "export", report.get("rejected_reason")
    assert report["optimized_cost"] < report["original_cost"]
    assert report["check"]["passed"] is True
    assert optimized is not original
    assert_same_outputs(original, optimized)


def test_path_bytes_and_model_proto_give_the_same_model():
    path = MODELS / "attention.onnx"
    from_proto, _ = tensor_eqsat.optimize(onnx.load(path))
    from_path, _ = tensor_eqsat.optimize(path)
    from_bytes, _ = tensor_eqsat.optimize(path.read_bytes())
    from_str, _ = tensor_eqsat.optimize(str(path))
    assert from_path.SerializeToString() == from_proto.SerializeToString()
    assert from_bytes.SerializeToString() == from_proto.SerializeToString()
    assert from_str.SerializeToString() == from_proto.SerializeToString()


def test_symbolic_dimensions_stay_symbolic():
    path = MODELS / "hf" / "bert.torchscript.onnx"
    if not path.exists():
        pytest.skip("no BERT fixture in corpus/models/hf")
    original = onnx.load(path)
    optimized, report = tensor_eqsat.optimize(path)
    assert report["check"]["passed"] is True
    declared = lambda m: [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in m.graph.input]
    assert declared(optimized) == declared(original)
    assert_same_outputs(original, optimized, sizes=(2, 5))


def test_report_fields():
    _, report = tensor_eqsat.optimize(MODELS / "mlp.onnx", target="cpu")
    for key in ("original_cost", "optimized_cost", "speedup", "cost_model", "cost_model_choice", "written",
                "check", "rules_used", "seconds", "operators", "kept_original", "enodes", "iterations"):
        assert key in report, key
    assert report["cost_model"].startswith("analytical")
    assert json.loads(json.dumps(report)) == report


def test_nothing_cheaper_returns_the_input_itself():
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    returned, report = tensor_eqsat.optimize(model)
    assert returned is model
    assert report["written"] == "input"


def test_progress_lines_reach_the_callback_and_the_logger(caplog):
    lines = []
    tensor_eqsat.optimize(MODELS / "mlp.onnx", progress=lines.append)
    assert any("check" in line for line in lines), lines
    with caplog.at_level("INFO", logger="tensor_eqsat"):
        tensor_eqsat.optimize(MODELS / "mlp.onnx")
    assert any(r.name == "tensor_eqsat" for r in caplog.records)


def cli_error(*args: str) -> str:
    """eqsat-run's error line for these arguments, without its prefix."""
    run = subprocess.run([str(BIN / "eqsat-run"), *args], capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    line = next(l for l in run.stderr.splitlines() if l.startswith("eqsat-run: error: "))
    return line.removeprefix("eqsat-run: error: ")


def test_bad_model_raises_with_the_programs_message(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not an ONNX model")
    with pytest.raises(tensor_eqsat.EqsatError) as raised:
        tensor_eqsat.optimize(bad)
    assert raised.value.exit_code == 2
    assert str(raised.value) == cli_error(str(bad), "-o", str(tmp_path / "out.onnx"))
    with pytest.raises(tensor_eqsat.EqsatError) as from_bytes:
        tensor_eqsat.optimize(b"this is not an ONNX model")
    assert "ONNX" in str(from_bytes.value) or "parse" in str(from_bytes.value)


def test_missing_file_and_unknown_target_raise_with_the_programs_messages(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(tensor_eqsat.EqsatError) as raised:
        tensor_eqsat.optimize(missing)
    assert str(raised.value) == cli_error(str(missing))
    model = str(MODELS / "mlp.onnx")
    with pytest.raises(tensor_eqsat.EqsatError) as raised:
        tensor_eqsat.optimize(model, target="tpu9")
    assert str(raised.value) == cli_error(model, "--target", "tpu9")
    with pytest.raises(tensor_eqsat.EqsatError) as raised:
        tensor_eqsat.optimize(model, dims={"batch": 0})
    assert str(raised.value) == cli_error(model, "--dim", "batch=0")
    with pytest.raises(TypeError):
        tensor_eqsat.optimize(42)


def test_a_wrong_rule_is_rejected_by_the_check():
    with pytest.raises(tensor_eqsat.RejectedError) as raised:
        tensor_eqsat.optimize(MODELS / "mlp.onnx", rules=ROOT / "tests" / "data" / "wrong_rule.json", cost="flops")
    assert raised.value.exit_code == 5
    assert raised.value.report["rejected"] is True


def test_check_required_raises_when_it_cannot_run():
    with pytest.raises(tensor_eqsat.CheckNotRunError) as raised:
        tensor_eqsat.optimize(MODELS / "opaque_ops.onnx", check="required",
                              rules=ROOT / "tests" / "data" / "wrong_rule.json", cost="flops")
    assert "Resize" in str(raised.value)


def test_verify_gives_verdicts_and_counterexamples():
    result = tensor_eqsat.verify(ROOT / "tests" / "verify" / "data" / "wrong_rules.json", jobs=2)
    assert result.ok is False
    status = {r["id"]: r for r in result.rules}
    assert status["ewadd-comm"]["status"] == "verified"
    assert status["relu-ewadd-wrong"]["status"] == "wrong"
    assert "counterexample" in status["relu-ewadd-wrong"]
    assert tensor_eqsat.verify(ROOT / "tests" / "data" / "seed.json", jobs=2).ok is True
    with pytest.raises(tensor_eqsat.EqsatError):
        tensor_eqsat.verify(ROOT / "no-such-rules.json")


def test_the_installed_corpus_is_the_default():
    corpus = tensor_eqsat.corpus_dir()
    assert (corpus / "rules.json").is_file()
    assert (corpus / "devices" / "cpu-ort.json").is_file()
    assert tensor_eqsat.__version__ != "unknown"


def test_help_documents_the_call():
    doc = tensor_eqsat.optimize.__doc__
    for word in ("target", "rules", "check", "dims", "Returns", "Raises", "EqsatError"):
        assert word in doc, word


@pytest.mark.parametrize("program", ["eqsat-run", "ruleverify", "rulegen"])
def test_console_scripts_run(program):
    run = subprocess.run([str(BIN / program), "--help"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert program in run.stdout


def test_console_eqsat_run_optimizes_with_the_installed_corpus(tmp_path):
    out = tmp_path / "out.onnx"
    report = tmp_path / "report.json"
    # From a folder without corpus/: the program must find the package's own.
    run = subprocess.run([str(BIN / "eqsat-run"), str(MODELS / "shared_matmul.onnx"), "-o", str(out),
                          "--report", str(report)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "share/tensor_eqsat/corpus/rules.json" in json.loads(report.read_text())["rules"]
    assert_same_outputs(onnx.load(MODELS / "shared_matmul.onnx"), onnx.load(out))
