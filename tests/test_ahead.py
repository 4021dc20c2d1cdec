"""Kernels compiled ahead of time (ltr_cli.kernels.ahead): the install builds them, runs use
them without numba, they give the bits numba's kernels give, and anything they were not
built for (other argument types, changed sources) goes to numba's kernels instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.kernels import ahead
from ltr_cli.kernels.ahead_build import fresh

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()
BUILT = all(state == "built" for state in ahead.status().values())


@pytest.fixture
def fresh_lookup():
    """The extension looked up again before and after the test (it changes LTR_AHEAD)."""
    ahead.reset()
    yield
    ahead.reset()


def test_every_export_is_a_numba_kernel_with_as_many_arguments():
    import importlib

    for export in ahead.EXPORTS:
        dispatcher = getattr(importlib.import_module(export.module), export.function)
        count = dispatcher.py_func.__code__.co_argcount
        assert all(len(variant) == count for variant in export.variants), export.ref
    from ltr_cli.kernels.loop import _driver

    assert len(ahead.BLOCKS[0].variants[0]) == _driver.__code__.co_argcount == 30


@pytest.mark.skipif(ahead.SWITCH in __import__("os").environ, reason="LTR_AHEAD set: the test run chose")
def test_the_install_built_every_kernel_and_it_is_fresh():
    """`pip install` compiled the extension (a C compiler is on this machine) from the
    sources as they are now."""
    assert BUILT, ahead.status()
    from ltr_cli.kernels.ahead_build import installed_path

    assert fresh(installed_path())


def _fake(tag: str):
    return lambda *args: (tag, args)


def test_arguments_it_was_not_built_for_go_to_the_numba_kernel():
    export = ahead.Export("m:f", "none", (("f8[:, ::1]", "i8[::1]", "b1", "i8", "f8"),))
    calls = []
    kernel = ahead.AheadKernel(export, [_fake("ahead")], lambda: (calls.append(1), _fake("jit"))[1])
    X, idx = np.zeros((3, 2)), np.arange(3, dtype=np.int64)
    assert kernel(X, idx, True, 2, 0.5)[0] == "ahead"
    assert kernel(X, idx, True, np.int64(2), 1)[0] == "ahead"  # an int where a float is declared
    assert kernel(X.astype(np.float32), idx, True, 2, 0.5)[0] == "jit"  # another row type
    assert kernel(np.zeros((2, 3)).T, idx, True, 2, 0.5)[0] == "jit"  # not C-contiguous
    assert kernel(X, idx.astype(np.int32), True, 2, 0.5)[0] == "jit"
    assert kernel(X, idx, 1, 2, 0.5)[0] == "jit"  # an int where a bool is declared
    assert kernel(X, idx, True, True, 0.5)[0] == "jit"  # a bool where an int is declared
    assert kernel(X, idx, True, 2)[0] == "jit"  # too few arguments
    assert kernel(X[None], idx, True, 2, 0.5)[0] == "jit"  # another rank
    assert len(calls) == 7
    views = ahead.Export("m:g", "none", (("f8[:, :]",),))
    strided = ahead.AheadKernel(views, [_fake("ahead")], lambda: _fake("jit"))
    assert strided(np.zeros((4, 4))[:, ::2])[0] == "ahead"  # any layout where none is declared


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
def test_a_changed_kernel_source_makes_the_build_stale(tmp_path):
    """The sidecar's digests name every source a kernel carries; one changed byte in any of
    them and the build is not used (nor reused by a later install)."""
    from ltr_cli.kernels.ahead_build import installed_path

    built = installed_path()
    copy = tmp_path / built.name
    shutil.copyfile(built, copy)
    record = json.loads(built.with_name(ahead.SIDECAR.name).read_text())
    (tmp_path / ahead.SIDECAR.name).write_text(json.dumps(record))
    assert fresh(copy)
    sources = record["sources"]["ltr_cli.kernels.rtopkf"]
    assert "ltr_cli/core/codes.py" in sources and "ltr_cli/kernels/loop.py" in sources
    sources["ltr_cli/core/codes.py"] = "0" * 64
    (tmp_path / ahead.SIDECAR.name).write_text(json.dumps(record))
    assert not fresh(copy)
    assert not ahead._fresh(sources) and ahead._fresh(json.loads(built.with_name(ahead.SIDECAR.name).read_text())
                                                      ["sources"]["ltr_cli.kernels.rtopkf"])


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
def test_a_build_for_another_cpu_is_not_fresh(tmp_path):
    """It is compiled for the host CPU: a copy moved to a machine with other instruction-set
    flags is built again, not run."""
    from ltr_cli.kernels.ahead_build import installed_path

    built = installed_path()
    record = json.loads(built.with_name(ahead.SIDECAR.name).read_text())
    assert record["cpu"] == ahead.cpu_signature() and record["cpu"].count("-") >= 1
    shutil.copyfile(built, tmp_path / built.name)
    record["cpu"] = "x86_64-0000000000000000"
    (tmp_path / ahead.SIDECAR.name).write_text(json.dumps(record))
    assert not fresh(tmp_path / built.name)


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
def test_a_compiled_run_with_kernels_built_ahead_never_imports_numba(tmp_path):
    """The demo and the top-k example, compiled, on data parsed by the scanner: no numba."""
    code = ("import sys; from ltr_cli.cli.app import main; sys.argv[0] = 'ltr'\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('numba' in sys.modules)")
    data = tmp_path / "train.txt"
    assert runner.invoke(app, ["data", "synth", str(data), "--like", "mslr-web10k", "--queries", "5"]).exit_code == 0
    res = subprocess.run([sys.executable, "-c", code, "run", str(REPO / "configs" / "topk_synthetic.yaml"), "-q",
                          "--out", str(tmp_path / "out"), "--kernels", "compiled", "--set", "dataset.queries=5",
                          "--set", "seeds=[0]", "--set", "protocol.passes=1"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.strip().splitlines()[-1] == "False", res.stderr + res.stdout
    res = subprocess.run([sys.executable, "-c", code, "run", str(REPO / "configs" / "mslr_slam.yaml"), "-q",
                          "--data", str(data), "--out", str(tmp_path / "mslr"), "--kernels", "compiled",
                          "--set", f"cache.dir={tmp_path / 'cache'}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.strip().splitlines()[-1] == "False", res.stderr + res.stdout


def _outputs(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.name in ("rounds.parquet", "models.json")}


def _run(args: list[str], monkeypatch, jit: bool) -> None:
    if jit:
        monkeypatch.setenv(ahead.SWITCH, "0")
    else:
        monkeypatch.delenv(ahead.SWITCH, raising=False)
    ahead.reset()
    res = runner.invoke(app, ["run", *args, "-q", "--kernels", "compiled"])
    assert res.exit_code == 0, res.output


def _topk_config(folder: Path, data: Path, storage: str) -> Path:
    """The top-k paper's learners (configs/topk_synthetic.yaml) on ``data``."""
    learners = (REPO / "configs" / "topk_synthetic.yaml").read_text().partition("\nlearners:")[2]
    config = folder / "topk.yaml"
    config.write_text(f"experiment: topk\nseed: 0\ndataset: {{kind: files, features: 136, files: [{data}], storage: {storage}}}\n"
                      "protocol: {passes: 2}\nmetrics: {names: [ndcg@10], no_relevant: one, ties: reverse-input}\n"
                      f"learners:{learners}")
    return config


def _clicks_config(folder: Path, data: Path, storage: str) -> Path:
    """The click learners, every comparison, on ``data`` (held out: the same file)."""
    config = folder / "clicks.yaml"
    config.write_text(f"experiment: clicks\nseed: 0\n"
                      f"dataset: {{kind: files, features: 136, files: [{data}], storage: {storage}}}\n"
                      "protocol: {feedback: clicks, sampling: uniform, max_rounds: 150, "
                      "clicks: {model: navigational, stop: any-position, shown: 10, grades: 5}}\n"
                      "metrics: {names: [ndcg@10], no_relevant: skip, ties: random}\n"
                      f"heldout: {{file: {data}, every: 50}}\n"
                      "learners:\n  pdgd: {type: pdgd}\n"
                      "  p-dbgd: {type: dbgd, comparison: probabilistic}\n"
                      "  p-dbgd-exact: {type: dbgd, comparison: probabilistic, preference: exact}\n"
                      "  td-dbgd: {type: dbgd, comparison: team-draft}\n"
                      "  td-mgd: {type: dbgd, comparison: team-draft, candidates: 4}\n"
                      "  p-mgd: {type: dbgd, comparison: probabilistic, candidates: 4}\n"
                      "  pairwise: {type: pairwise-clicks, epsilon: 0.8}\n")
    return config


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
@pytest.mark.parametrize("storage", ["float64", "float32"])
def test_kernels_built_ahead_write_the_bytes_numba_kernels_write(tmp_path, monkeypatch, fresh_lookup, storage):
    """Every block family (SLAM, Alg. 3, ListNet, RTop-kF, the random baseline), the same
    learners round by round (logging their regret), the click learners with held-out
    curves, and the scanner, float64 and float32 rows: the same rounds and models, byte for
    byte."""
    data = tmp_path / "train.txt"
    assert runner.invoke(app, ["data", "synth", str(data), "--like", "mslr-web10k", "--queries", "6"]).exit_code == 0
    for name, jit in (("jit", True), ("ahead", False)):
        _run([str(REPO / "configs" / "mslr_slam.yaml"), "--data", str(data), "--out", str(tmp_path / name / "mslr"),
              "--set", f"dataset.storage={storage}", "--set", f"cache.dir={tmp_path / name / 'cache'}"],
             monkeypatch, jit)
        _run([str(_topk_config(tmp_path, data, storage)), "--out", str(tmp_path / name / "topk"),
              "--set", f"cache.dir={tmp_path / name / 'cache'}"], monkeypatch, jit)
        # round by round: logging the regret, and learning from clicks (with held-out curves)
        _run([str(REPO / "configs" / "mslr_slam.yaml"), "--data", str(data), "--out", str(tmp_path / name / "regret"),
              "--set", f"dataset.storage={storage}", "--set", f"cache.dir={tmp_path / name / 'cache'}",
              "--set", "protocol.log_regret=true"], monkeypatch, jit)
        _run([str(_topk_config(tmp_path, data, storage)), "--out", str(tmp_path / name / "topk-regret"),
              "--set", f"cache.dir={tmp_path / name / 'cache'}", "--set", "protocol.log_regret=true"], monkeypatch, jit)
        _run([str(_clicks_config(tmp_path, data, storage)), "--out", str(tmp_path / name / "clicks"),
              "--set", f"cache.dir={tmp_path / name / 'cache'}"], monkeypatch, jit)
    jit_out, ahead_out = _outputs(tmp_path / "jit"), _outputs(tmp_path / "ahead")
    assert len(jit_out) >= 40 and jit_out.keys() == ahead_out.keys()
    assert [k for k in jit_out if jit_out[k] != ahead_out[k]] == []


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
def test_ltr_eval_built_ahead_prints_what_numba_kernels_print(tmp_path, monkeypatch, fresh_lookup):
    """The score-file scanner and the evaluation kernels, under every convention, with the
    measures the table kernel does not cover (ERR, RR): the same per-query values."""
    data = tmp_path / "test.txt"
    assert runner.invoke(app, ["data", "synth", str(data), "--like", "mslr-web10k", "--queries", "7"]).exit_code == 0
    n = sum(1 for line in data.read_text().splitlines() if line.strip())
    scores = tmp_path / "scores.txt"
    scores.write_text("".join(f"{v:.3f}\n" for v in np.random.default_rng(0).normal(size=n)))
    printed = {}
    for name in ("jit", "ahead"):
        if name == "jit":
            monkeypatch.setenv(ahead.SWITCH, "0")
        else:
            monkeypatch.delenv(ahead.SWITCH, raising=False)
        ahead.reset()
        for convention in ("paper", "letor3", "letor4", "mslr"):
            for extra in ([], ["--metric", "err@10", "--metric", "rr", "--metric", "ndcg@5"]):
                res = runner.invoke(app, ["eval", str(data), str(scores), "--convention", convention, "--per-query",
                                          *extra])
                assert res.exit_code == 0, res.output
                printed[name, convention, len(extra)] = res.output
    assert all(printed["jit", c, k] == printed["ahead", c, k] for (_, c, k) in printed)
    assert ahead.available("ltr_cli.kernels.evaluation:evaluate_queries")


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
def test_kernels_build_and_status_name_the_families_built_ahead():
    res = runner.invoke(app, ["kernels", "build", "--family", "random"])
    assert res.exit_code == 0, res.output
    assert "random: built ahead of time; nothing to compile" in res.output
    status = runner.invoke(app, ["kernels", "status"])
    assert status.exit_code == 0 and "perceptron: built ahead" in status.output
    assert "ahead ltr_cli.data.fastscan:scan_block: built" in status.output
    dry = runner.invoke(app, ["kernels", "build", "--ahead", "--dry-run"])
    assert dry.exit_code == 0 and "ltr_cli.kernels.ogd:ogd_block: 2 variants" in dry.output


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
def test_blas_is_found_without_importing_scipy_linalg():
    """The kernels' BLAS module is loaded alone (scipy.linalg costs more than a small run);
    importing scipy.linalg afterwards takes that same module and works."""
    code = ("import sys; import numpy as np; from ltr_cli.kernels import ahead\n"
            "kernel = ahead.kernel('ltr_cli.kernels.core:all_finite')\n"
            "assert kernel is not None and 'scipy' not in sys.modules\n"  # looked up: nothing loaded
            "assert kernel(np.ones(3))\n"
            "print('scipy.linalg' in sys.modules, 'scipy.linalg.cython_blas' in sys.modules)\n"
            "blas = sys.modules['scipy.linalg.cython_blas']\n"
            "import scipy.linalg\nfrom scipy.linalg import cython_blas\n"
            "print(cython_blas is blas, float(scipy.linalg.solve(np.eye(2) * 2.0, np.ones(2))[0]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "True", "True", "0.5"]


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"cpu": 5}', "SOURCES_NOT_A_MAP", "A_PATH_OUTSIDE",
                                  "[" * 200_000 + "]" * 200_000, '{"a": ' * 5000 + "1" + "}" * 5000,
                                  '{"cpu": "' + "x" * (2 << 20) + '"}', "FIFO"])
def test_a_damaged_sidecar_sends_every_kernel_to_numba(tmp_path, monkeypatch, fresh_lookup, text):
    """Whatever the sidecar holds, a kernel is used only when it names this CPU and the
    digests of the sources as they are; anything else is 'not built' or stale: deeply
    nested JSON (once a RecursionError in every command), a sidecar over 1 MiB, a FIFO
    (never waited on)."""
    record = {"cpu": ahead.cpu_signature(), "sources": {e.module: {} for e in ahead.EXPORTS}}
    if text == "SOURCES_NOT_A_MAP":
        text = json.dumps({**record, "sources": 5})
    elif text == "A_PATH_OUTSIDE":
        text = json.dumps({**record, "sources": {e.module: {"../../../etc/passwd": "0" * 64, "x": 3}
                                                 for e in ahead.EXPORTS}})
    sidecar = tmp_path / ahead.SIDECAR.name
    if text == "FIFO":
        os.mkfifo(sidecar)
    else:
        sidecar.write_text(text)
    monkeypatch.setattr(ahead, "SIDECAR", sidecar)
    ahead.reset()
    states = ahead.status()
    assert all(state.startswith(("not built", "built for another CPU", "stale")) for state in states.values()), states
    assert ahead.kernel("ltr_cli.kernels.core:all_finite") is None
    from ltr_cli.kernels.ahead_build import fresh

    assert fresh(tmp_path / "_ahead.so") is False  # the install's check reads it the same way


@pytest.mark.skipif(not BUILT, reason="the kernels are not built ahead here")
def test_an_extension_that_does_not_match_its_sidecar_is_never_loaded(tmp_path, monkeypatch, fresh_lookup):
    """A truncated or replaced extension would crash the process as it loads: its digest is
    checked against the sidecar's first, and a mismatch means not built."""
    record = json.loads(ahead.SIDECAR.read_text())
    record["extension"] = "0" * 64
    sidecar = tmp_path / ahead.SIDECAR.name
    sidecar.write_text(json.dumps(record))
    monkeypatch.setattr(ahead, "SIDECAR", sidecar)
    ahead.reset()
    assert set(ahead.status().values()) == {
        "not built (the extension does not match its sidecar: ltr kernels build --ahead)"}


def test_the_ahead_compile_says_what_it_does_and_how_long_it_has_taken(monkeypatch):
    """pip hides a build step's output: the compile's progress goes to the terminal the
    install runs in, else stderr, at once and every few seconds."""
    import threading

    from ltr_cli.kernels import ahead_build

    monkeypatch.setattr(ahead_build, "TICK", 0.01)
    lines: list[tuple[str, bool]] = []
    step = threading.Event()
    with ahead_build.Ticker("compiling 3 kernels", lambda text, final: (lines.append((text, final)), step.set())):
        step.clear()
        assert step.wait(5)  # a tick came while the step ran
    assert lines[0] == ("compiling 3 kernels ...", False)
    assert any(text.startswith("compiling 3 kernels: ") and text.endswith(" s so far") for text, _ in lines[1:])
    count = len(lines)
    import time

    time.sleep(0.05)
    assert len(lines) == count  # no tick after the step


def test_without_a_terminal_the_compile_progress_goes_to_stderr(monkeypatch, capsys):
    import os

    from ltr_cli.kernels import ahead_build

    def no_tty(path, *args):
        raise OSError("no controlling terminal")

    monkeypatch.setattr(os, "open", no_tty)
    write = ahead_build.progress_writer()
    write("compiling 34 kernels ...", False)
    assert capsys.readouterr().err == "ltr-cli: compiling 34 kernels ...\n"
