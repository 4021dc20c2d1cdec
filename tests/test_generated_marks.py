"""Generated data is never presented as real data: ``ltr data synth`` marks what it writes
(a ``<file>.generated.json`` sidecar with the file's digest), a run's manifest records the
mark, and the figure title, caption, report rows, LaTeX table and verdict say "generated,
shaped like ..." instead of "<dataset> sample (100 of 106 queries)"."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO

runner = CliRunner()
SHAPED = "generated, shaped like LETOR 2.0 OHSUMED"


def _ok(*args: object):
    res = runner.invoke(app, [str(a) for a in args], env={"LTR_KERNELS": "0"})
    assert res.exit_code == 0, res.stderr
    return res


def _synth_folds(tmp_path: Path) -> Path:
    root = tmp_path / "synth"
    _ok("data", "synth", root, "--like", "letor2-ohsumed", "--folds", "--queries", "20", "--docs-per-query", "6")
    return root


def test_synth_marks_every_file_it_writes_and_the_readers_read_it_as_before(tmp_path):
    root = _synth_folds(tmp_path)
    data = sorted(p for p in root.rglob("*.txt"))
    assert len(data) == 15
    for path in data:
        mark = json.loads((path.parent / (path.name + ".generated.json")).read_text())
        assert mark["shaped_like"] == "LETOR 2.0 OHSUMED" and mark["generated_by"] == "ltr data synth"
    one = tmp_path / "one.txt"
    _ok("data", "synth", one, "--like", "mslr-web10k", "--queries", "5")
    assert json.loads((tmp_path / "one.txt.generated.json").read_text())["like"] == "mslr-web10k"
    info = json.loads(_ok("data", "inspect", one, "--dataset", "mslr-web10k", "--json").stdout)
    assert info["queries"] == 5


def test_a_mark_names_only_the_bytes_it_was_written_for(tmp_path):
    from ltr_cli.data.identity import file_identity
    from ltr_cli.data.provenance import marked

    one = tmp_path / "one.txt"
    _ok("data", "synth", one, "--like", "mslr-web10k", "--queries", "3")
    assert marked(file_identity(one))["generated"]["shaped_like"] == "Microsoft MSLR-WEB10K"
    one.write_text(one.read_text().replace("qid:1 ", "qid:7 "))  # other bytes: the mark is not theirs
    assert "generated" not in marked(file_identity(one))
    (tmp_path / "one.txt.generated.json").write_text("{not json")
    assert "generated" not in marked(file_identity(one))


def test_runs_on_synth_folds_say_generated_in_title_caption_report_and_verdict(tmp_path):
    root = _synth_folds(tmp_path)
    out = tmp_path / "out"
    _ok("run", REPO / "configs" / "letor2_ohsumed.yaml", "--data", root, "--out", out, "-q",
        "--learner", "ranksvm", "--learner", "adarank",
        "--set", "learners.ranksvm.grid={C: [1]}", "--set", "learners.adarank.grid={rounds: [5]}")
    results = out / "letor2_ohsumed"
    manifest = json.loads(next(results.glob("ranksvm-*/manifest.json")).read_text())
    assert all(f["generated"]["shaped_like"] == "LETOR 2.0 OHSUMED" for f in manifest["dataset"]["fingerprint"]["files"])
    _ok("plot", results, "--out", tmp_path / "plots")
    caption = (tmp_path / "plots" / "letor2_ohsumed_bars.caption.txt").read_text()
    assert f"Data: {SHAPED} (20 queries)." in caption and "OHSUMED sample" not in caption
    report = _ok("report", results).stdout
    rows = [line for line in report.splitlines() if ("ranksvm" in line or "adarank" in line)
            and "(empty as " not in line]  # the batch table's rows, not the empty-query rules' table
    assert len(rows) == 2 and all(SHAPED in row for row in rows)
    assert all("not comparable: generated data, shaped like LETOR 2.0 OHSUMED" in row for row in rows)
    latex = _ok("report", results, "--format", "latex").stdout
    assert "generated, shaped like LETOR 2.0 OHSUMED" in latex and "OHSUMED sample" not in latex
    html = _ok("report", results, "--html", "--out", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert html.exit_code == 0 and "OHSUMED sample" not in page
    assert f'<p class="note">Data: {SHAPED} (20 queries).</p>' in page  # under the config's description


def test_figure_titles_of_generated_data_say_so(tmp_path):
    from ltr_cli.reports.captions import figure_title, panel_title
    from ltr_cli.results.folders import find_runs, read_run

    root = tmp_path / "one.txt"
    _ok("data", "synth", root, "--like", "mslr-web10k", "--queries", "12", "--docs-per-query", "5")
    out = tmp_path / "out"
    _ok("run", REPO / "configs" / "mslr_slam.yaml", "--data", root, "--out", out, "-q", "--learner", "slam-ndcg")
    runs = [read_run(p) for p in find_runs([out])]
    assert (out / ".cache").is_dir()  # the run read the file through the binary cache
    uncached = tmp_path / "uncached"
    _ok("run", REPO / "configs" / "mslr_slam.yaml", "--data", root, "--out", uncached, "-q", "--learner", "slam-ndcg",
        "--set", "cache.enabled=false")
    assert not (uncached / ".cache").exists()
    runs_uncached = [read_run(p) for p in find_runs([uncached])]
    title = "generated, shaped like MSLR-WEB10K (12 queries)"
    assert figure_title(runs_uncached, "mslr_slam") == title
    assert figure_title(runs, "mslr_slam") == title and panel_title(runs, "mslr_slam", True) == title
    report = _ok("report", out).stdout
    assert "not comparable: generated data, shaped like Microsoft MSLR-WEB10K" in report
    said = _ok("run", REPO / "configs" / "mslr_slam.yaml", "--data", root, "--out", tmp_path / "said",
               "--learner", "slam-ndcg").stderr
    assert "mslr-web10k files (generated, shaped like Microsoft MSLR-WEB10K)" in said


def test_a_split_of_a_generated_file_is_marked_too(tmp_path):
    one = tmp_path / "one.txt"
    _ok("data", "synth", one, "--like", "mslr-web10k", "--queries", "9", "--docs-per-query", "4")
    _ok("data", "split", one, "--dataset", "mslr-web10k", "--out", tmp_path / "folds")
    marks = sorted((tmp_path / "folds").rglob("*.generated.json"))
    assert len(marks) == 15
    assert {json.loads(m.read_text())["shaped_like"] for m in marks} == {"Microsoft MSLR-WEB10K"}
