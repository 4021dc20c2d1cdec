"""``ltr bench --startup --authors-code DIR --authors-data FILE``: its arguments, its check
that the authors' job and ltr's are the same job, and (where Octave, the shared sample and
``LTR_AUTHORS_CODE``, a checkout of the authors' code, are all present) one quick run."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.bench import authors
from ltr_cli.cli.app import app
from tests.conftest import SHARED, absent

runner = CliRunner()
SAMPLE = SHARED / "data" / "mslr-web10k-fold1-5k" / "train.txt"
REFERENCE = SHARED / "reference" / "authors-code-mslr5k.json"


def _checkout(root: Path) -> Path:
    (root / "Perceptron").mkdir(parents=True)
    (root / "Perceptron" / "SLAMOAListNetMSLTR10K.m").write_text("function SLAMOAListNetMSLTR10K()\nend\n")
    return root


def _bench(*args: str):
    return runner.invoke(app, ["bench", "--startup", "--authors-only", *args])


def _one_line_error(res, fragment: str) -> None:
    assert res.exit_code == 1, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in res.output, res.output


def test_bad_authors_arguments_are_one_line_errors(tmp_path):
    data = tmp_path / "train.txt"
    data.write_text("0 qid:1 1:1\n")
    code = _checkout(tmp_path / "authors")
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(_bench("--authors-code", str(tmp_path / "nowhere"), "--authors-data", str(data)),
                    "--authors-code " + str(tmp_path / "nowhere") + ": no such folder")
    _one_line_error(_bench("--authors-code", str(empty), "--authors-data", str(data)),
                    "no Perceptron/SLAMOAListNetMSLTR10K.m")
    _one_line_error(_bench("--authors-code", str(code), "--authors-data", str(tmp_path / "none.txt")),
                    "--authors-data " + str(tmp_path / "none.txt") + ": no such file")
    _one_line_error(_bench("--authors-code", str(code)), "--authors-code needs --authors-data too")
    _one_line_error(_bench("--authors-data", str(data)), "--authors-data needs --authors-code too")
    _one_line_error(_bench(), "--authors-only times the authors' job: give --authors-code")
    _one_line_error(runner.invoke(app, ["bench", "--authors-code", str(code), "--authors-data", str(data)]),
                    "add --startup")
    assert sorted(p.name for p in code.rglob("*")) == ["Perceptron", "SLAMOAListNetMSLTR10K.m"]


def test_without_the_checkout_or_octave_the_line_says_why_it_is_skipped(tmp_path, monkeypatch):
    assert authors.check_inputs(None, None) is None
    assert authors.skipped(None) == authors.SKIP_OPTIONS
    line = authors.format_authors_lines(authors.authors_figures(None))
    assert line == [f"  the authors' 43-query job under Octave: skipped: {authors.SKIP_OPTIONS}"]
    monkeypatch.setattr(authors.shutil, "which", lambda name: None)
    data = tmp_path / "train.txt"
    data.write_text("0 qid:1 1:1\n")
    inputs = authors.check_inputs(_checkout(tmp_path / "authors"), data)
    assert authors.authors_figures(inputs) == {"skipped": "octave is not installed (Debian: apt-get install octave)"}


def test_the_octave_command_reads_the_checkout_and_the_folder_holds_their_input_files(tmp_path, monkeypatch):
    monkeypatch.setattr(authors.shutil, "which", lambda name: f"/usr/bin/{name}")
    code = _checkout(tmp_path / "it's here")
    argv = authors.octave_argv(code)
    assert argv[:4] == ["/usr/bin/octave", "--no-gui", "--quiet", "--norc"]
    quoted = str(code / "Perceptron").replace("'", "''")
    assert f"addpath('{quoted}'); SLAMOAListNetMSLTR10K();" in argv[-1]
    data = tmp_path / "train.txt"
    data.write_text("0 qid:1 1:1\n")
    folder = authors.octave_folder(tmp_path / "run", data)
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f"E:\\Papers\\Programs\\MSLTR10K\\Fold{k}\\train.txt" for k in range(1, 6)]
    assert (folder / names[0]).resolve() == data.resolve() and (folder / names[1]).read_bytes() == b""


def _their_outputs(folder: Path, ref: dict, rounds: int) -> None:
    """What their script prints, from the reference's printed values."""
    out = "E:\\Papers\\Programs\\MSLTR10K\\Experiments\\"
    for stem, learner in authors.LEARNERS.items():
        averages = ref["printed_time_average"][learner] + ["0.000000"] * 5
        (folder / f"{out}{stem}NDCG10.txt").write_text("".join(f"{v}\t\n" for v in averages))
        (folder / f"{out}{stem}Ranker.txt").write_text("".join(f"{v}\n" for v in ref["printed_weights"][learner]))


def test_the_same_job_check_accepts_the_authors_printed_results_and_names_a_difference(tmp_path):
    """ltr's job on the 43-query sample against the authors' printed output (as the
    reference holds it): equal; one printed time average or weight changed: named."""
    import json
    import subprocess

    if not (SAMPLE.is_file() and REFERENCE.is_file()):
        pytest.skip(absent("data/mslr-web10k-fold1-5k or reference/authors-code-mslr5k.json"))
    ref = json.loads(REFERENCE.read_text())
    results = tmp_path / "ltr"
    done = subprocess.run(authors.ltr_argv(SAMPLE, results), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "theirs"
    folder.mkdir()
    _their_outputs(folder, ref, 42)
    assert authors.compare(folder, results) is None
    changed = json.loads(json.dumps(ref))
    changed["printed_time_average"]["alg3"][6] = f"{float(ref['printed_time_average']['alg3'][6]) + 2e-6:f}"
    _their_outputs(folder, changed, 42)
    assert authors.compare(folder, results).startswith("alg3: time-averaged NDCG@10 at round 7: ltr ")
    changed = json.loads(json.dumps(ref))
    changed["printed_weights"]["listnet"][0] = "0.000000"  # theirs NaN
    _their_outputs(folder, changed, 42)
    assert authors.compare(folder, results).startswith("listnet: final weight 1: ltr nan, theirs 0.000000")


@pytest.mark.parametrize(("ours", "theirs", "equal"), [
    (0.1153684, 0.115368, True), (0.1153685, 0.115369, True), (0.1153685, 0.115368, True),
    (0.1153676, 0.115368, True), (0.1153690, 0.115368, False), (math.nan, math.nan, True),
    (math.nan, 0.0, False), (1.4e6 + 0.3, 1400000.3, True)])
def test_printed_values_agree_to_their_six_decimals(ours, theirs, equal):
    assert authors._printed_equal(ours, theirs) is equal


def test_a_failing_octave_job_is_one_line_with_its_message(tmp_path):
    """Octave's own last line at exit is noise; the script's error message is the line."""
    if not authors.octave():
        pytest.skip("needs octave")
    code = tmp_path / "authors"
    (code / "Perceptron").mkdir(parents=True)
    (code / "Perceptron" / "SLAMOAListNetMSLTR10K.m").write_text(
        "function SLAMOAListNetMSLTR10K()\n  error('no data here');\nend\n")
    data = tmp_path / "train.txt"
    data.write_text("1 qid:1 1:1\n0 qid:1 2:1\n1 qid:2 1:1\n")
    _one_line_error(_bench("--quick", "--authors-code", str(code), "--authors-data", str(data)),
                    "the authors' job under Octave failed: error: no data here")


def test_a_quick_run_against_octave_prints_the_ratio_and_writes_nothing_in_the_checkout():
    """Needs octave, the shared sample and LTR_AUTHORS_CODE (a checkout of the authors' code)."""
    code = os.environ.get("LTR_AUTHORS_CODE")
    if not SAMPLE.is_file():
        pytest.skip(absent("data/mslr-web10k-fold1-5k"))
    if not (code and authors.octave()):
        pytest.skip("needs octave and LTR_AUTHORS_CODE (a checkout of the authors' code)")
    before = sorted(p for p in Path(code).rglob("*"))
    res = _bench("--quick", "--authors-code", code, "--authors-data", str(SAMPLE))
    assert res.exit_code == 0, res.output
    assert "the same time averages and weights to the printed 6 decimals" in res.output
    assert "Octave / ltr from the text" in res.output and "the target 10x" in res.output
    assert sorted(p for p in Path(code).rglob("*")) == before
