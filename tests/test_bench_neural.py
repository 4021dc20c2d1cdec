"""``ltr bench --neural``: finding allRank, reading a child's result lines, the FLOP count,
the table (with and without allRank), the options' checks, and a tiny end-to-end run of the
plumbing (one MLP timing child and one memory child on a few queries; not a measurement)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.bench import neural
from ltr_cli.bench.neural import (ENV_PYTHON, ENV_REF, MARKERS, NOTE, _lines, allrank_config, docs_per_second,
                                  find_reference, format_neural_table, mlp_flops, reference_argv)
from ltr_cli.cli.app import app
from ltr_cli.errors import LtrError

runner = CliRunner()


def _checkout(root: Path) -> Path:
    for marker in MARKERS:
        (root / marker).parent.mkdir(parents=True, exist_ok=True)
        (root / marker).write_text("")
    return root


def test_allrank_comes_from_the_options_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_REF, raising=False)
    monkeypatch.delenv(ENV_PYTHON, raising=False)
    assert find_reference(None, None) is None
    ref = _checkout(tmp_path / "ref")
    monkeypatch.setenv(ENV_REF, str(ref))
    assert find_reference(None, None) == (ref, sys.executable)
    monkeypatch.setenv(ENV_PYTHON, "/opt/torch/bin/python")
    assert find_reference(None, None) == (ref, "/opt/torch/bin/python")
    other = _checkout(tmp_path / "other")
    assert find_reference(other, "py") == (other, "py")  # the options win


def test_a_folder_that_is_not_allrank_is_one_line(tmp_path):
    with pytest.raises(LtrError) as err:
        find_reference(tmp_path, None)
    assert "--reference" in str(err.value) and "not an allRank checkout" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("code, said", [
    ("import sys; sys.stderr.write('Traceback\\nModuleNotFoundError: No module named torch\\n'); sys.exit(1)",
     "allRank's loop failed: ModuleNotFoundError: No module named torch"),
    ("print('not json')", "printed no result line"),
    ("import json; print(json.dumps({'epoch_seconds': []}))", "printed no result line"),
])
def test_a_failing_or_silent_child_is_one_line(code, said):
    with pytest.raises(LtrError) as err:
        _lines([sys.executable, "-c", code], "allRank's loop")
    assert said in str(err.value) and "\n" not in str(err.value)


def test_a_child_s_json_lines_are_its_results():
    code = "import json; print('loading'); print(json.dumps({'model': 'mlp', 'epoch_seconds': [3.0, 1.0, 2.0], " \
           "'documents': 500}))"
    (run,) = _lines([sys.executable, "-c", code], "x")
    assert docs_per_second(run) == 500.0  # the fastest epoch after the first
    assert docs_per_second({"epoch_seconds": [4.0], "documents": 8}) == 2.0


def test_the_mlp_s_flops_per_document():
    # forward: 2 (136 * 128 + 128); backward: the two weight gradients 2 * 136 * 128 + 2 * 128 and the
    # hidden layer's gradient 2 * 128
    assert mlp_flops(136, 128) == 2 * (136 * 128 + 128) + 2 * 136 * 128 + 4 * 128


def test_allranks_command_is_a_script_outside_ltr(tmp_path):
    argv = reference_argv("/opt/py", tmp_path / "ref", tmp_path / "c.json", tmp_path / "Fold1", 2, 5)
    assert argv[:2] == ["/opt/py", "-P"] and argv[2].endswith("ltr_cli/bench/neural_reference.py")
    pairs = dict(zip(argv[3::2], argv[4::2]))
    assert pairs["--epochs"] == "2" and pairs["--seed"] == "5"
    source = Path(argv[2]).read_text()
    assert "import ltr_cli" not in source and "from ltr_cli" not in source
    config = allrank_config("transformer")
    assert config["model"]["transformer"] == {"N": 2, "d_ff": 384, "h": 1, "positional_encoding": None,
                                              "dropout": 0.1}
    assert config["model"]["fc_model"]["sizes"] == [96]
    assert (config["data"]["batch_size"], config["data"]["slate_length"]) == (64, 240)


ROW = {"documents": 1000, "ltr_docs_per_s": 50_000.0, "epoch_seconds": [5.0, 0.02], "compile_seconds": 4.0,
       "rss_documents": 2_270_000, "rss_gb": 1.5, "rss_epoch_seconds": 60.0}


def _result(reference: bool) -> dict:
    mlp = {**ROW, "floor_seconds": 0.004, "vs_floor": 5.0}
    if reference:
        mlp.update(allrank_docs_per_s=10_000.0, allrank_documents=1000, vs_allrank=5.0)
    return {"queries": 10, "documents_rss": 2_270_000, "epochs": 3, "matmul_gflops": 20.0, "mlp_flops_per_doc": 1,
            "reference": "/ref" if reference else None, "reference_python": "/py" if reference else None,
            "targets": neural.TARGETS, "models": {"mlp": mlp, "transformer": {**ROW, "compile_seconds": 12.0}}}


def test_the_table_marks_each_target_and_says_when_allrank_is_skipped():
    text = format_neural_table(_result(False))
    assert NOTE in text and "skipped" in text
    assert "mlp: epoch within 2x its FLOP floor: MISSES; first-epoch compile < 10 s: meets; peak RSS < 4 GB: meets" \
        in text
    assert "transformer: first-epoch compile < 10 s: MISSES" in text
    text = format_neural_table(_result(True))
    assert NOTE not in text and ">= 2x allRank's docs/s: meets" in text and "5.00x" in text


@pytest.mark.parametrize("args", [["--neural-docs", "1000"], ["--reference-python", "py"], ["--neural-model", "mlp"]])
def test_the_neural_options_need_neural(args):
    res = runner.invoke(app, ["bench", *args])
    assert res.exit_code == 1 and "add --neural" in res.output


def test_an_unknown_model_is_one_line():
    res = runner.invoke(app, ["bench", "--neural", "--neural-model", "resnet"])
    assert res.exit_code == 1 and "--neural-model 'resnet'" in res.output


def test_a_tiny_run_goes_through_every_child(tmp_path, monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.delenv(ENV_REF, raising=False)
    monkeypatch.setattr(neural, "matmul_rate", lambda: 1e10)
    # the memory child's fold (6 queries) has the timing child's batch shape: with a JAX cache of the
    # test's own it loads the program the first child compiled
    r = neural.bench_neural(tmp_path, None, queries=6, documents=720, epochs=2, models=("mlp",),
                            jax_cache=str(tmp_path / "jax"))
    row = r["models"]["mlp"]
    assert r["reference"] is None and "allrank_docs_per_s" not in row
    assert len(row["epoch_seconds"]) == 2 and row["compile_seconds"] > 0
    assert row["documents"] > 0 and row["ltr_docs_per_s"] > 0
    assert row["vs_floor"] == pytest.approx(row["documents"] / row["ltr_docs_per_s"] / row["floor_seconds"], rel=0.02)
    assert 500 <= row["rss_documents"] <= 950 and 0.05 < row["rss_gb"] < 4
    assert (tmp_path / "data" / "Fold1" / "train.txt").is_file()
    json.dumps(r)
    assert "skipped" in format_neural_table(r)
