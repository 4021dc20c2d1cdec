"""Small things a user trips on, each kept fixed: ``ltr run --exclude``, a did-you-mean for
a misspelt key at any depth of a config, a note when a re-run replaces finished runs, bar
charts whose y-range follows the data and whose error bars stay within the metric's
bounds, and the shipped MSLR batch config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO

runner = CliRunner()
DEMO = REPO / "configs" / "simulated_separable.yaml"


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args], env={"LTR_KERNELS": "0"})


def test_exclude_runs_every_learner_but_the_named(tmp_path):
    res = _run("run", DEMO, "--out", tmp_path, "-q", "--set", "protocol.max_rounds=20",
               "--exclude", "slam-ndcg", "--exclude", "alg3")  # of slam-ndcg, alg3, listnet
    assert res.exit_code == 0, res.stderr
    names = sorted(p.name.rsplit("-", 1)[0] for p in (tmp_path / "simulated_separable").iterdir()
                   if not p.name.startswith("."))
    assert names == ["listnet"]


def test_exclude_of_an_unknown_learner_or_of_every_learner_is_one_line(tmp_path):
    res = _run("run", DEMO, "--out", tmp_path, "--exclude", "nobody")
    assert res.exit_code == 1 and res.stderr.count("\n") == 1
    assert "--exclude: no learner named 'nobody'" in res.stderr
    res = _run("run", DEMO, "--out", tmp_path, "--learner", "alg3", "--exclude", "alg3")
    assert res.exit_code == 1 and "--exclude leaves no learner to run" in res.stderr
    assert not (tmp_path / "simulated_separable").exists()


@pytest.mark.parametrize("key, suggested", [
    ("learners.slam-ndcg.stpe={rule: constant}", "step"),
    ("learners.slam-ndcg.step.etaa=1", "eta"),
    ("learners.slam-ndcg.margn=constant", "margin"),
    ("dataset.queriez=10", "queries"),
    ("protocol.pases=2", "passes"),
])
def test_a_misspelt_nested_key_gets_a_did_you_mean(tmp_path, key, suggested):
    res = _run("run", DEMO, "--out", tmp_path, "--set", key)
    assert res.exit_code == 1 and res.stderr.count("\n") == 1
    assert f"{key.split('=')[0]}: unknown key; did you mean {suggested!r}?" in res.stderr


def test_a_misspelt_key_of_a_batch_learner_gets_a_did_you_mean(tmp_path):
    res = _run("run", REPO / "configs" / "letor2_ohsumed.yaml", "--set", "learners.svmmap.gird={C: [1]}")
    assert res.exit_code == 1
    assert "learners.svmmap.gird: unknown key; did you mean 'grid'?" in res.stderr


def test_a_rerun_into_the_same_folder_says_which_runs_it_replaces(tmp_path):
    args = ["run", DEMO, "--out", tmp_path, "--learner", "alg3", "--set", "protocol.max_rounds=20"]
    first = _run(*args)
    assert first.exit_code == 0 and "replacing" not in first.stderr
    run_id = next(p.name for p in (tmp_path / "simulated_separable").iterdir() if not p.name.startswith("."))
    again = _run(*args)
    assert again.exit_code == 0, again.stderr
    said = [line for line in again.stderr.splitlines() if "replacing" in line]
    assert said == [f"ltr: note: replacing 1 finished run in {tmp_path / 'simulated_separable'}: {run_id} "
                    "(--resume keeps finished runs)"]
    resumed = _run(*args, "--resume")
    assert resumed.exit_code == 0 and "replacing" not in resumed.stderr


def test_bar_error_bars_stay_within_the_metric_and_the_y_range_follows_the_data():
    from ltr_cli.reports.batch_bars import bar_limits, clipped_errors, metric_bounds

    assert metric_bounds("ndcg@10") == (0.0, 1.0) and metric_bounds("map") == (0.0, 1.0)
    assert metric_bounds("eru@10") == (0.0, None)
    errors = clipped_errors([0.98, 0.02, 0.5], [0.05, 0.05, 0.05], [(0.0, 1.0)] * 3)
    assert np.allclose(errors, [[0.05, 0.02, 0.05], [0.02, 0.05, 0.05]])
    lo, hi = bar_limits([0.62, 0.71, 0.66, 1.0], [(0.0, 1.0)])
    assert 0.5 < lo < 0.62 and hi == 1.0


def test_plotted_bars_start_where_the_data_does(tmp_path, monkeypatch):
    from tests.test_batch_bars import _cv
    import ltr_cli.reports.batch_bars as bars

    out = _cv(tmp_path)
    seen = {}
    real = bars.save

    def keep(fig, *a, **k):
        ax = fig.axes[0]
        seen["ylim"] = ax.get_ylim()
        seen["tops"] = [line.get_ydata().max() for line in ax.lines if len(line.get_ydata())]
        seen["bottoms"] = [line.get_ydata().min() for line in ax.lines if len(line.get_ydata())]
        return real(fig, *a, **k)

    monkeypatch.setattr(bars, "save", keep)
    res = runner.invoke(app, ["plot", str(out)])
    assert res.exit_code == 0, res.stderr
    lo, hi = seen["ylim"]
    assert hi <= 1.0 and max(seen["tops"]) <= 1.0 + 1e-12  # no error bar above a perfect ranking's value
    assert lo >= 0.0 and (lo > 0.0 or min(seen["bottoms"]) < 0.02)  # from the data, not from 0


def test_the_mslr_batch_config_is_shipped_and_valid():
    from ltr_cli.config.experiment import load_config

    path = REPO / "configs" / "mslr_batch.yaml"
    spec = load_config(path, [])
    assert spec.cv is not None and spec.dataset.name == "mslr-web10k"
    assert list(spec.dataset.folds) == [1, 2, 3, 4, 5]
    head = [line for line in Path(path).read_text().splitlines() if line.startswith("#")]
    assert any("ltr run configs/mslr_batch.yaml" in line for line in head)


def test_the_readmes_mslr_figure_has_a_command_that_draws_it(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    from tests.conftest import SHARED, absent

    script = REPO / "scripts" / "mslr_sample_figure.sh"
    readme = (REPO / "README.md").read_text()
    assert "docs/figures/mslr_sample_ndcg.png" in readme and "scripts/mslr_sample_figure.sh" in readme
    assert os.access(script, os.X_OK)
    sample = SHARED / "data" / "mslr-web10k-fold1-5k" / "train.txt"
    ltr = shutil.which("ltr", path=str(Path(sys.executable).parent))
    if not sample.is_file() or ltr is None:
        pytest.skip(absent("data/mslr-web10k-fold1-5k (or the ltr script)"))
    done = subprocess.run([str(script), str(sample), str(tmp_path / "out")], capture_output=True, text=True,
                          env={**os.environ, "LTR": ltr, "LTR_KERNELS": "0"}, timeout=300)
    assert done.returncode == 0, done.stderr
    caption = (tmp_path / "out" / "plots" / "mslr_slam_ndcg_at_10.caption.txt").read_text()
    assert "Data: MSLR-WEB10K sample (43 of 10,000 queries)." in caption
    assert (tmp_path / "out" / "plots" / "mslr_slam_ndcg_at_10.png").stat().st_size > 1000
