"""The shareable HTML report, choosing which runs plot and report show (--latest, --config,
the note on mixed configurations), the batch table's spread over folds, and the kernel
load time kept apart from a run's wall time."""

from __future__ import annotations

import base64
import json
import os
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO

runner = CliRunner()


def _demo(tmp_path: Path, description: str | None = None, queries: int = 200) -> tuple[Path, Path]:
    cfg = (REPO / "configs" / "simulated_separable.yaml").read_text().replace("queries: 1000", f"queries: {queries}")
    if description is not None:
        cfg = "\n".join(f"description: {json.dumps(description)}" if line.startswith("description:") else line
                        for line in cfg.splitlines()) + "\n"
    path = tmp_path / "demo.yaml"
    path.write_text(cfg)
    res = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "res"), "-q"])
    assert res.exit_code == 0, res.stderr
    return path, tmp_path / "res" / "simulated_separable"


class _Page(HTMLParser):
    """Everything a test needs to know about a page: tags, attributes, text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def test_html_report_is_self_contained_and_complete(tmp_path):
    hostile = "<script>alert(1)</script> & figure 1"
    _, folder = _demo(tmp_path, description=hostile)
    res = runner.invoke(app, ["report", str(folder), "--html"])
    assert res.exit_code == 0, res.stderr
    out = folder / "report.html"
    assert res.stdout.strip() == str(out)
    page = _parse(out)
    tags = [t for t, _ in page.tags]
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    for _, attrs in page.tags:  # nothing is fetched when the file is opened
        for name in ("src", "href"):
            value = attrs.get(name)
            assert value is None or value.startswith(("data:image/png;base64,", "#")), value
    text = "".join(page.text)
    assert hostile in text  # shown as text, never markup
    images = [attrs["src"] for t, attrs in page.tags if t == "img"]
    assert len(images) == 2  # NDCG@10 and AP
    for src in images:
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    online = next(t for t in page.tables if t[0][:4] == ["learner", "label", "settings", "metric"])
    head = online[0]
    assert {"last10", "last10_std", "paper", "vs_paper", "runs"} <= set(head)
    assert sorted({row[head.index("learner")] for row in online[1:]}) == ["alg3", "listnet", "slam-ndcg"]
    for row in online[1:]:
        assert (folder / row[head.index("runs")]).is_dir()
    # config, conventions, fingerprints and versions of the runs
    assert "kind: separable" in text and "reverse-input" in text and "2^r - 1" in text
    sha = json.loads(next(folder.glob("slam-ndcg-*/manifest.json")).read_text())["dataset"]["fingerprint"]["sha256"]
    assert sha in text
    assert "numpy" in text and "python" in text


def test_html_report_shows_paper_verdicts(tmp_path):
    """Runs on the MSLR registry name get the paper's number and a verdict in the HTML
    table, as in the text report (here: not comparable, 200 generated rounds)."""
    from ltr_cli.reports.report_html import render_html
    from ltr_cli.results.folders import find_runs, read_run

    _, folder = _demo(tmp_path)
    runs = [read_run(d) for d in find_runs([folder])]
    for run in runs:
        run.summary["dataset"] = "mslr-web10k"
    page = _Page()
    page.feed(render_html(runs))
    online = next(t for t in page.tables if t and "vs_paper" in t[0])
    head = online[0]
    with_paper = [row for row in online[1:] if row[head.index("paper")]]
    assert with_paper
    for row in with_paper:
        assert row[head.index("vs_paper")].startswith("not comparable")
        assert "200 rounds" in row[head.index("vs_paper")] and not row[head.index("difference")]


def test_runs_of_several_configurations_are_named_and_can_be_narrowed(tmp_path):
    cfg, folder = _demo(tmp_path)
    time.sleep(1.1)  # the second configuration is written later
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "res"), "-q", "--learner", "listnet",
                              "--set", "learners.listnet.step.eta=0.5"])
    assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["report", str(folder), "--format", "csv"])
    assert "several configurations are shown (2 of listnet)" in res.stderr and "--latest" in res.stderr
    listnet = [line for line in res.stdout.splitlines() if ",listnet," in line and ",ndcg@10," in line]
    assert len(listnet) == 2

    res = runner.invoke(app, ["report", str(folder), "--format", "csv", "--latest"])
    assert res.exit_code == 0 and "configurations" not in res.stderr
    listnet = [line for line in res.stdout.splitlines() if ",listnet," in line and ",ndcg@10," in line]
    assert len(listnet) == 1 and "listnet-" in listnet[0]
    newest = json.loads(max(folder.glob("listnet-*/manifest.json"),
                            key=lambda p: json.loads(p.read_text())["finished_at"]).read_text())["run_id"]
    assert newest in listnet[0]

    res = runner.invoke(app, ["report", str(folder), "--format", "csv", "--config", str(cfg)])
    lines = [line for line in res.stdout.splitlines() if ",ndcg@10," in line]
    assert res.exit_code == 0 and len(lines) == 3 and "configurations" not in res.stderr
    assert newest not in res.stdout  # the --set run is not one the config writes

    res = runner.invoke(app, ["plot", str(folder), "--latest", "--out", str(tmp_path / "p")])
    assert res.exit_code == 0 and "configurations" not in res.stderr
    other = tmp_path / "other.yaml"
    other.write_text(cfg.read_text().replace("queries: 200", "queries: 300"))
    res = runner.invoke(app, ["plot", str(folder), "--config", str(other)])
    assert res.exit_code == 1 and "no run under" in res.stderr and str(other) in res.stderr


def test_newest_configuration_falls_back_to_the_file_time(tmp_path):
    """Runs written before manifests had finished_at are ordered by their manifest's mtime."""
    from ltr_cli.results.folders import find_runs, read_run
    from ltr_cli.reports.run_filter import newest_configurations

    cfg, folder = _demo(tmp_path)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "res"), "-q", "--learner", "listnet",
                              "--set", "learners.listnet.step.eta=0.5"])
    assert res.exit_code == 0
    listnets = sorted(folder.glob("listnet-*"))
    for i, run_dir in enumerate(listnets):
        manifest = run_dir / "manifest.json"
        data = json.loads(manifest.read_text())
        data.pop("finished_at")
        manifest.write_text(json.dumps(data))
        os.utime(manifest, (1_000_000 + i, 1_000_000 + i))
    kept = [r.path for r in newest_configurations([read_run(d) for d in find_runs([folder])])]
    assert listnets[-1] in kept and listnets[0] not in kept and len(kept) == 3


def test_kernel_loading_is_timed_apart_from_the_run(tmp_path, monkeypatch):
    """Loading or compiling kernels happens before a run's clock starts and is recorded as
    kernel_load_seconds; the learner and the tie generator are left untouched by it."""
    from ltr_cli import kernels
    from ltr_cli.kernels import ahead
    from ltr_cli.protocols import warmup

    if not kernels.ENABLED:
        pytest.skip("kernels switched off")
    monkeypatch.setenv(ahead.SWITCH, "0")  # numba's kernels, loaded (or compiled) by the warm-up
    monkeypatch.setattr(ahead, "_STATE", {})
    monkeypatch.setattr(ahead, "_KERNELS", {})
    clock = {"offset": 0.0}
    real_counter, real_load = time.perf_counter, kernels.load

    def slow_load():  # a simulated compile: the clock jumps 100 s
        clock["offset"] += 100.0
        return real_load()

    monkeypatch.setattr(time, "perf_counter", lambda: real_counter() + clock["offset"])
    monkeypatch.setattr(warmup.kernels, "load", slow_load)
    cfg, folder = _demo(tmp_path, queries=50)
    for summary in folder.glob("*/summary.json"):
        data = json.loads(summary.read_text())
        assert data["kernel_load_seconds"] >= 100.0
        assert data["wall_seconds"] < 100.0
    monkeypatch.undo()
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "again"), "-q"])
    assert res.exit_code == 0
    for a in folder.glob("*/rounds.parquet"):  # the warm-up changed nothing the run computes
        b = tmp_path / "again" / "simulated_separable" / a.parent.name / "rounds.parquet"
        import pandas as pd

        assert pd.read_parquet(a).equals(pd.read_parquet(b))


def test_compile_notice_is_said_once_with_progress_and_a_total():
    """The notice comes at the first compile numba reports, progress after, the total at
    the end; nothing without a compile (tests/test_kernel_plan.py: numba's own event)."""
    from ltr_cli.kernels import compile_watch

    said: list[str] = []
    progress = compile_watch.Progress(said.append, tty=False)
    progress.close()
    assert said == []
    compile_watch.EVERY, every = 0.0, compile_watch.EVERY
    try:
        for name in ("loop.perceptron_block", "core._sort_into"):
            progress(name)
    finally:
        compile_watch.EVERY = every
    progress.close()
    assert len(said) == 3 and "compiling kernels (" in said[0]
    assert "2 functions so far (core._sort_into)" in said[1] and "compiled 2 kernel functions" in said[2]


def test_batch_report_has_the_spread_over_folds(tmp_path):
    import pandas as pd

    from ltr_cli.reports.report import batch_rows
    from ltr_cli.results.folders import Run

    rounds = pd.DataFrame({"fold": [1, 2, 3], "ap": [0.2, 0.4, 0.6], "ndcg@3": [0.5, 0.5, 0.5]})
    run = Run(tmp_path, {"experiment": "e"}, {"protocol": "batch-cv", "learner": "ranksvm", "folds": [1, 2, 3],
                                                "metrics": {"ap": 0.4, "ndcg@3": 0.5}}, {}, rounds)
    row = batch_rows([run])[0]
    assert row["ap_std"] == pytest.approx(np.std([0.2, 0.4, 0.6], ddof=1))
    assert row["ndcg@3_std"] == 0.0
