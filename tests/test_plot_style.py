"""Figure-ready plots: stable colours and markers per learner role, TrueType fonts in
PDFs, y-limits from the converged part, titles from the description, the config's
x-range, and a note when one curve hides another."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.plot_style import ROLE_STYLES, converged_limits, mark_every, role_style, same_as

runner = CliRunner()


def test_role_styles_are_stable_and_distinct():
    assert role_style("slam-ndcg") == ROLE_STYLES["slam-ndcg"]
    assert role_style("some-new-role") == role_style("some-new-role")  # a hash, not an order
    colours = [c for c, _ in ROLE_STYLES.values()]
    pairs = set(ROLE_STYLES.values())
    assert len(pairs) == len(ROLE_STYLES) and len(set(colours)) >= 9


def test_converged_limits_ignore_early_spikes():
    t = np.arange(1, 401)
    curve = 0.23 + 0.02 * np.sin(t / 50.0)
    curve[:5] = [0.85, 0.1, 0.6, 0.4, 0.3]
    lo, hi = converged_limits([curve])
    assert 0.2 < lo < 0.215 and 0.25 < hi < 0.26


def test_overlapping_curves_are_named_and_their_markers_interleave():
    a = np.linspace(0, 1, 100)
    assert same_as([a, a.copy(), a + 1], ["SLAM", "Alg3", "ListNet"]) == [None, "SLAM", None]
    starts = {mark_every(i, 3, 400)[0] for i in range(3)}
    assert len(starts) == 3 and all(mark_every(i, 3, 400)[1] == 50 for i in range(3))


def _demo(tmp_path: Path) -> Path:
    from tests.conftest import REPO

    cfg = (REPO / "configs" / "simulated_separable.yaml").read_text().replace("queries: 1000", "queries: 500")
    path = tmp_path / "demo.yaml"
    path.write_text(cfg)
    res = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "res"), "-q"])
    assert res.exit_code == 0, res.stderr
    return tmp_path / "res" / "simulated_separable"


def test_demo_figure_is_figure_ready(tmp_path, monkeypatch):
    import matplotlib.axes

    drawn: list = []
    real_legend = matplotlib.axes.Axes.legend

    def spy_legend(self, *args, **kwargs):
        drawn.append(self)
        return real_legend(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "legend", spy_legend)
    folder = _demo(tmp_path)
    res = runner.invoke(app, ["plot", str(folder), "--metric", "ndcg@10"])
    assert res.exit_code == 0, res.stderr
    pdf = (folder / "plots" / "simulated_separable_ndcg_at_10.pdf").read_bytes()
    assert b"Type3" not in pdf and b"FontFile2" in pdf  # TrueType (Type 42) only
    (ax,) = drawn
    assert ax.get_title().startswith("Perceptron paper Figure 1")
    lines = {line.get_label(): line for line in ax.get_lines()}
    slam = next(v for k, v in lines.items() if k.startswith("SLAM"))
    alg3 = next(v for k, v in lines.items() if k.startswith("Alg3"))
    assert slam.get_color() == ROLE_STYLES["slam-ndcg"][0] and alg3.get_color() == ROLE_STYLES["alg3"][0]
    assert slam.get_xdata()[-1] == 400  # the paper figure's x-range, from plot.max_rounds
    assert any("drawn on top" in k for k in lines)  # SLAM and Alg3 coincide on this data
    lo, hi = ax.get_ylim()
    assert lo > 0.5 and hi < 1.05  # not stretched by the first rounds
    legend = ax.get_legend()
    assert legend.get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1  # outside the data
    res = runner.invoke(app, ["plot", str(folder), "--metric", "ndcg@10", "--max-rounds", "100"])
    assert res.exit_code == 0


def test_runs_of_one_learner_are_named_by_the_settings_that_differ(tmp_path, monkeypatch):
    import csv
    import io

    import matplotlib.axes

    folder = _demo(tmp_path)
    res = runner.invoke(app, ["run", str(tmp_path / "demo.yaml"), "--out", str(tmp_path / "res"), "-q",
                              "--learner", "listnet", "--set", "learners.listnet.step.eta=0.5"])
    assert res.exit_code == 0, res.stderr
    drawn: list = []
    real_legend = matplotlib.axes.Axes.legend
    monkeypatch.setattr(matplotlib.axes.Axes, "legend",
                        lambda self, *a, **k: (drawn.append(self), real_legend(self, *a, **k))[1])
    assert runner.invoke(app, ["plot", str(folder), "--metric", "ndcg@10"]).exit_code == 0
    labels = [line.get_label() for line in drawn[0].get_lines()]
    assert any(lab.startswith("ListNet (step.eta: 0.5)") for lab in labels), labels
    assert any(lab.startswith("ListNet (step.eta: 1)") for lab in labels), labels
    assert not any("[" in lab for lab in labels)  # no bare hashes
    rep = runner.invoke(app, ["report", str(folder), "--format", "csv"])
    rows = [r for r in csv.DictReader(io.StringIO(rep.stdout)) if r["label"] == "ListNet" and r["metric"] == "ndcg@10"]
    assert sorted(r["settings"] for r in rows) == ["step.eta: 0.5", "step.eta: 1"]
    assert all(r["runs"].startswith("listnet-") and (folder / r["runs"]).is_dir() for r in rows)


def test_legend_entries_are_ordered_by_the_numbers_in_their_settings():
    from ltr_cli.reports.plot import _natural

    names = ["SLAM (step.eta=1)", "ListNet (step.eta=0.01)", "ListNet (step.eta=1e-05)", "ListNet (step.eta=0.1)",
             "ListNet (step.eta=0.001)", "Alg3"]
    assert sorted(names, key=_natural) == ["Alg3", "ListNet (step.eta=1e-05)", "ListNet (step.eta=0.001)",
                                           "ListNet (step.eta=0.01)", "ListNet (step.eta=0.1)", "SLAM (step.eta=1)"]
