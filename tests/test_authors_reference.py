"""The shipped ``configs/mslr_slam.yaml`` against the authors' own code on real data.

``../shared/reference/authors-code-mslr5k.json`` holds what the authors' MATLAB
(``Perceptron/SLAMOAListNetMSLTR10K.m``, run under GNU Octave) computes on the first 5,000
lines of MSLR-WEB10K Fold1 ``train.txt``, round by round. The config runs through the CLI
on that file laid out as ``Fold1/train.txt``: every round's NDCG@10 must equal theirs to
1e-9 (NaN-weight rounds of ListNet included) and the final weights to 1e-6 of their largest
entry, NaN where theirs are NaN. Skipped when ``../shared`` is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO, SHARED, absent

SAMPLE = SHARED / "data" / "mslr-web10k-fold1-5k" / "train.txt"
REFERENCE = SHARED / "reference" / "authors-code-mslr5k.json"
LEARNERS = ("slam-ndcg", "alg3", "listnet")


def _nan(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


@pytest.fixture(scope="module")
def authors_run(tmp_path_factory) -> tuple[dict, dict[str, Path]]:
    if not (SAMPLE.is_file() and REFERENCE.is_file()):
        pytest.skip(absent("data/mslr-web10k-fold1-5k or reference/authors-code-mslr5k.json"))
    root = tmp_path_factory.mktemp("mslr")
    (root / "Fold1").mkdir()
    (root / "Fold1" / "train.txt").symlink_to(SAMPLE)
    out = root / "out"
    res = CliRunner().invoke(app, ["run", str(REPO / "configs" / "mslr_slam.yaml"), "--out", str(out), "--quiet",
                                   "--set", f"dataset.root={root}", "--set", "dataset.folds=[1]"])
    assert res.exit_code == 0, res.output
    runs = {Path(p).name.rsplit("-", 1)[0]: Path(p) for p in res.stdout.split()}
    return json.loads(REFERENCE.read_text()), runs


@pytest.mark.parametrize("learner", LEARNERS)
def test_every_round_equals_the_authors_code(authors_run, learner):
    ref, runs = authors_run
    rounds = pd.read_parquet(runs[learner] / "rounds.parquet")
    assert len(rounds) == ref["rounds"] == 42  # the file's last query is never used
    assert rounds["m"].tolist() == ref["m"]
    theirs = _nan(ref["ndcg"][learner])
    ours = rounds["ndcg@10"].to_numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9, equal_nan=True)
    summary = json.loads((runs[learner] / "summary.json").read_text())
    assert summary["dropped_last_queries"] == 1
    assert summary["metrics"]["ndcg@10"]["final_time_average"] == pytest.approx(
        ref["time_average"][learner][-1], abs=1e-9)


@pytest.mark.parametrize("learner", LEARNERS)
def test_final_weights_equal_the_authors_code(authors_run, learner):
    ref, runs = authors_run
    model = json.loads((runs[learner] / "models.json").read_text())["final"]
    ours, theirs = _nan(model["w"]), _nan(ref["weights"][learner])
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = ~np.isnan(theirs)
    if finite.any():
        scale = np.abs(theirs[finite]).max()
        assert np.abs(ours[finite] - theirs[finite]).max() <= 1e-6 * scale


def test_listnet_weights_leave_the_reals_where_the_authors_do(authors_run):
    ref, runs = authors_run
    summary = json.loads((runs["listnet"] / "summary.json").read_text())
    # max|w| before round t+1 is the first NaN: the update of round t made the weights NaN
    first_nan_before = next(i for i, v in enumerate(ref["wmax_before_round"]["listnet"]) if v is None)
    assert summary["nonfinite_round"] == first_nan_before
    for learner in ("slam-ndcg", "alg3"):
        assert json.loads((runs[learner] / "summary.json").read_text())["nonfinite_round"] is None
