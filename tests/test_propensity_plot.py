"""``ltr clicks propensity LOG --plot DIR``: the estimate with its intervals and, for a
position-based log, the truth it should recover."""

from __future__ import annotations

import os

import numpy as np
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicklog.logfile import write_log
from ltr_cli.clicklog.simulate import simulate
from ltr_cli.clicks.spec import build_model
from ltr_cli.reports.propensity_plot import true_relative

runner = CliRunner()
ULTRA_RELATIVE = [1, 0.897, 0.706, 0.500, 0.412, 0.294, 0.162, 0.147, 0.118, 0.088]


def _log(path, model="ultra-pbm", eta=None):
    rng = np.random.default_rng(0)
    labels = [rng.integers(0, 5, 12) for _ in range(30)]
    built = build_model(model, eta=eta)
    s = simulate(labels, [np.argsort(-y, kind="stable") for y in labels], built, "shuffle", 10, 3000, 1, False)
    write_log(path, s, [f"q{i}" for i in range(30)], {"policy": "shuffle", "model": built.describe(), "seed": 1})


def test_the_truth_is_the_models_relative_examination():
    assert np.allclose(true_relative(build_model("ultra-pbm").describe(), 10), ULTRA_RELATIVE, atol=5e-4)
    assert np.allclose(true_relative(build_model("pbm", eta=2.0).describe(), 4), [1, 1 / 4, 1 / 9, 1 / 16])
    assert true_relative(build_model("navigational").describe(), 10) is None  # a cascade: no position curve


def test_the_plot_writes_the_figure_and_a_caption_with_the_truth(tmp_path):
    _log(tmp_path / "log.parquet")
    res = runner.invoke(app, ["clicks", "propensity", str(tmp_path / "log.parquet"), "--plot", str(tmp_path / "figs")])
    assert res.exit_code == 0, res.output
    names = sorted(os.listdir(tmp_path / "figs"))
    assert names == ["log_propensity.caption.txt", "log_propensity.pdf", "log_propensity.png"]
    wrote = res.stdout.strip().splitlines()[-1]
    assert wrote.startswith("wrote ") and all(str(tmp_path / "figs" / n) in wrote for n in names)
    caption = (tmp_path / "figs" / "log_propensity.caption.txt").read_text()
    assert "estimate (randomisation)" in caption and "1.000, 0.897, 0.706, 0.500" in caption


def test_a_plot_folder_that_leads_elsewhere_is_refused_before_writing(tmp_path):
    _log(tmp_path / "log.parquet")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "log_propensity.png").symlink_to(elsewhere / "x.png")
    res = runner.invoke(app, ["clicks", "propensity", str(tmp_path / "log.parquet"), "--plot", str(figs)])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1, res.output
    assert "Traceback" not in res.output and not list(elsewhere.iterdir())
    assert sorted(os.listdir(figs)) == ["log_propensity.png"]
