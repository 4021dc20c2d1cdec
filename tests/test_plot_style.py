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


def saved_figures(monkeypatch) -> list:
    """The matplotlib figures ``ltr plot`` saves as PNG, in order (spied on savefig)."""
    import matplotlib.figure

    figures: list = []
    real = matplotlib.figure.Figure.savefig

    def spy(self, fname, *args, **kwargs):
        if kwargs.get("format") == "png":
            figures.append(self)
        return real(self, fname, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    return figures


def legend_labels(fig) -> list[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def test_demo_figure_is_figure_ready(tmp_path, monkeypatch):
    figures = saved_figures(monkeypatch)
    folder = _demo(tmp_path)
    res = runner.invoke(app, ["plot", str(folder), "--metric", "ndcg@10"])
    assert res.exit_code == 0, res.stderr
    pdf = (folder / "plots" / "simulated_separable_ndcg_at_10.pdf").read_bytes()
    assert b"Type3" not in pdf and b"FontFile2" in pdf  # TrueType (Type 42) only
    (fig,) = figures
    (ax,) = fig.axes
    assert ax.get_title().startswith("Perceptron paper Figure 1")  # generated data: the description
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"SLAM", "Alg3", "ListNet"}  # short labels; the metric is on the y-axis
    assert lines["SLAM"].get_color() == ROLE_STYLES["slam-ndcg"][0] and lines["Alg3"].get_color() == ROLE_STYLES["alg3"][0]
    assert lines["SLAM"].get_xdata()[-1] == 400  # the paper figure's x-range, from plot.max_rounds
    caption = (folder / "plots" / "simulated_separable_ndcg_at_10.caption.txt").read_text()
    assert "drawn on top" in caption  # SLAM and Alg3 coincide on this data: said in the caption
    lo, hi = ax.get_ylim()
    assert lo > 0.5 and hi < 1.05  # not stretched by the first rounds
    (legend,) = fig.legends  # below the axes, across the figure, not beside them
    fig.canvas.draw()
    assert legend.get_window_extent().y1 <= ax.get_window_extent().y0
    assert tuple(fig.get_size_inches()) == (3.5, 2.6)  # one column of a two-column paper
    res = runner.invoke(app, ["plot", str(folder), "--metric", "ndcg@10", "--max-rounds", "100"])
    assert res.exit_code == 0


def test_runs_of_one_learner_are_named_by_the_settings_that_differ(tmp_path, monkeypatch):
    import csv
    import io

    folder = _demo(tmp_path)
    res = runner.invoke(app, ["run", str(tmp_path / "demo.yaml"), "--out", str(tmp_path / "res"), "-q",
                              "--learner", "listnet", "--set", "learners.listnet.step.eta=0.5"])
    assert res.exit_code == 0, res.stderr
    figures = saved_figures(monkeypatch)
    assert runner.invoke(app, ["plot", str(folder), "--metric", "ndcg@10"]).exit_code == 0
    labels = legend_labels(figures[0])
    assert "ListNet (eta: 0.5)" in labels and "ListNet (eta: 1)" in labels, labels
    assert not any("[" in lab for lab in labels)  # no bare hashes
    caption = (folder / "plots" / "simulated_separable_ndcg_at_10.caption.txt").read_text()
    assert "ListNet (eta: 0.5): step.eta: 0.5" in caption  # the full key in the caption
    rep = runner.invoke(app, ["report", str(folder), "--format", "csv"])
    rows = [r for r in csv.DictReader(io.StringIO(rep.stdout)) if r["label"] == "ListNet" and r["metric"] == "ndcg@10"]
    assert sorted(r["settings"] for r in rows) == ["step.eta: 0.5", "step.eta: 1"]
    assert all(r["runs"].startswith("listnet-") and (folder / r["runs"]).is_dir() for r in rows)


def test_legend_entries_are_ordered_by_the_numbers_in_their_settings():
    from ltr_cli.reports.curves import natural as _natural

    names = ["SLAM (step.eta=1)", "ListNet (step.eta=0.01)", "ListNet (step.eta=1e-05)", "ListNet (step.eta=0.1)",
             "ListNet (step.eta=0.001)", "Alg3"]
    assert sorted(names, key=_natural) == ["Alg3", "ListNet (step.eta=1e-05)", "ListNet (step.eta=0.001)",
                                           "ListNet (step.eta=0.01)", "ListNet (step.eta=0.1)", "SLAM (step.eta=1)"]
