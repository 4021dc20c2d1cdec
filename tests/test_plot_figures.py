"""Paper figures from ``ltr plot``: a panel per experiment with one shared legend, the
size, text size, legend, title and palette options, short legend labels with the details in a
caption file, a sweep's settings told apart, ``--select-by`` naming its winner in files of
its own, titles that never claim a dataset the run did not read in full, and output
folders that are refused."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.plot_style import PANEL_HEIGHT, PANEL_WIDTH
from tests.conftest import REPO, absent
from tests.test_plot_style import legend_labels, saved_figures

runner = CliRunner()


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The perceptron paper's Figure 1 config at smoke size, with a ListNet sweep of two
    more step sizes: ``<root>/simulated_separable``."""
    root = tmp_path_factory.mktemp("figures")
    cfg = (REPO / "configs" / "simulated_separable.yaml").read_text().replace("queries: 1000", "queries: 300")
    (root / "demo.yaml").write_text(cfg)
    res = runner.invoke(app, ["run", str(root / "demo.yaml"), "--out", str(root / "res"), "-q"])
    assert res.exit_code == 0, res.stderr
    for eta in ("0.1", "0.01"):
        res = runner.invoke(app, ["run", str(root / "demo.yaml"), "--out", str(root / "res"), "-q", "--learner",
                                  "listnet", "--set", f"learners.listnet.step.eta={eta}"])
        assert res.exit_code == 0, res.stderr
    return root / "res" / "simulated_separable"


@pytest.fixture(scope="module")
def yahoo(tmp_path_factory, yahoo_sample_module) -> Path:
    """The Yahoo! config on the 201-query LightGBM sample (SLAM-NDCG, 60 rounds):
    ``<root>/yahoo_slam``, a partial read of yahoo-set1."""
    root = tmp_path_factory.mktemp("yahoo")
    res = runner.invoke(app, ["run", str(REPO / "configs" / "yahoo_slam.yaml"), "--data",
                              str(yahoo_sample_module / "rank.train"), "--out", str(root), "-q",
                              "--learner", "slam-ndcg", "--set", "protocol.max_rounds=60"])
    assert res.exit_code == 0, res.stderr
    return root / "yahoo_slam"


@pytest.fixture(scope="module")
def yahoo_sample_module() -> Path:
    from tests.conftest import YAHOO_SAMPLE

    if not (YAHOO_SAMPLE / "rank.train").is_file():
        pytest.skip(absent("data/yahoo-sample-lightgbm"))
    return YAHOO_SAMPLE


def test_panels_are_one_figure_with_a_panel_per_experiment_and_one_legend(demo, yahoo, tmp_path, monkeypatch):
    figures = saved_figures(monkeypatch)
    out = tmp_path / "figs"
    res = runner.invoke(app, ["plot", str(yahoo), str(demo), "--layout", "panels", "--metric", "ndcg@10",
                              "--out", str(out)])
    assert res.exit_code == 0, res.stderr
    stem = "panels_yahoo_slam-simulated_separable_ndcg_at_10"
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}.caption.txt", f"{stem}.pdf", f"{stem}.png"]
    (fig,) = figures
    assert len(fig.axes) == 2 and len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    assert fig.axes[0].get_title().startswith("Yahoo! LTR set 1 sample")  # the folders' order
    labels = legend_labels(fig)
    assert labels.count("SLAM-NDCG") == 1 and "Alg3" in labels and "ListNet (eta: 0.01)" in labels
    dpi = 300
    assert _png_size(out / f"{stem}.png") == (round(2 * PANEL_WIDTH * dpi), round(PANEL_HEIGHT * dpi))
    caption = (out / f"{stem}.caption.txt").read_text()
    assert "(a) Yahoo! LTR set 1 sample" in caption and "(b) " in caption
    assert "SLAM-NDCG: " in caption and "only in (a)" in caption  # one line per legend entry
    res = runner.invoke(app, ["plot", str(yahoo), str(demo), "--layout", "panels", "--metric", "ndcg@10",
                              "--out", str(out), "--size", "7x2.5"])
    assert res.exit_code == 0, res.stderr
    assert _png_size(out / f"{stem}.png") == (2100, 750)


def test_options_change_size_text_legend_and_title(demo, tmp_path, monkeypatch):
    figures = saved_figures(monkeypatch)
    base = ["plot", str(demo), "--metric", "ndcg@10", "--out", str(tmp_path / "p")]
    assert runner.invoke(app, base).exit_code == 0
    assert runner.invoke(app, [*base, "--size", "5x3", "--font-size", "11", "--legend", "inside"]).exit_code == 0
    assert runner.invoke(app, [*base, "--legend", "none", "--no-title"]).exit_code == 0
    default, custom, bare = figures
    assert _png_size(tmp_path / "p" / "simulated_separable_ndcg_at_10.png") == (1050, 780)  # 3.5x2.6 in at 300 dpi
    assert tuple(custom.get_size_inches()) == (5.0, 3.0)
    assert default.axes[0].title.get_fontsize() == 8 and custom.axes[0].title.get_fontsize() == 11
    assert len(default.legends) == 1 and default.axes[0].get_legend() is None  # below: the figure's
    assert not custom.legends and custom.axes[0].get_legend() is not None  # inside the axes
    assert not bare.legends and bare.axes[0].get_legend() is None and bare.axes[0].get_title() == ""
    assert default.axes[0].get_title()
    res = runner.invoke(app, [*base, "--size", "wide"])
    assert res.exit_code == 1 and "--size" in res.stderr and "WIDTHxHEIGHT" in res.stderr


def test_a_sweep_has_distinct_styles_in_one_hue_ordered_by_value(demo, tmp_path, monkeypatch):
    figures = saved_figures(monkeypatch)
    assert runner.invoke(app, ["plot", str(demo), "--metric", "ndcg@10", "--out", str(tmp_path / "p")]).exit_code == 0
    lines = [line for line in figures[0].axes[0].get_lines() if line.get_label().startswith("ListNet")]
    assert [line.get_label() for line in lines] == ["ListNet (eta: 0.01)", "ListNet (eta: 0.1)", "ListNet (eta: 1)"]
    assert len({line.get_color() for line in lines}) == 3 and len({line.get_linestyle() for line in lines}) == 3
    assert len({line.get_marker() for line in lines}) == 1  # one learner: one marker
    lightness = [sum(int(line.get_color()[i:i + 2], 16) for i in (1, 3, 5)) for line in lines]
    assert lightness == sorted(lightness)  # dark to light in the legend's order


def test_palettes_recolour_every_curve_and_gray_tells_curves_apart_by_line_style(demo, tmp_path, monkeypatch):
    """``--palette okabe-ito`` draws the roles in the colour-blind-safe set; ``gray`` draws
    every curve in its own shade of gray and line style."""
    from ltr_cli.reports.plot_style import OKABE_ITO

    figures = saved_figures(monkeypatch)
    base = ["plot", str(demo), "--metric", "ndcg@10", "--out", str(tmp_path / "p")]
    for palette in ("okabe-ito", "gray"):
        res = runner.invoke(app, [*base, "--palette", palette])
        assert res.exit_code == 0, res.stderr
    colours, grays = ([line for line in fig.axes[0].get_lines() if line.get_label()[0] != "_"] for fig in figures)
    slam = next(line for line in colours if line.get_label() == "SLAM")
    assert slam.get_color() == "#0072b2" and {line.get_color() for line in colours if "ListNet" not in
                                               line.get_label()} <= set(OKABE_ITO)
    shades = [line.get_color() for line in grays]
    assert all(c[1:3] == c[3:5] == c[5:7] for c in shades) and len(set(shades)) == len(grays) == 5
    assert len({line.get_linestyle() for line in grays}) == 4  # four styles, cycled over five curves
    res = runner.invoke(app, [*base, "--palette", "pink"])
    assert res.exit_code != 0 and "--palette" in res.stderr  # (ltr itself exits 1; the test runner sees click's 2)


def test_select_by_names_the_winner_and_writes_its_own_files(demo, tmp_path, monkeypatch):
    figures = saved_figures(monkeypatch)
    out = tmp_path / "p"
    assert runner.invoke(app, ["plot", str(demo), "--metric", "ndcg@10", "--out", str(out)]).exit_code == 0
    res = runner.invoke(app, ["plot", str(demo), "--metric", "ndcg@10", "--out", str(out), "--select-by", "ndcg@10"])
    assert res.exit_code == 0, res.stderr
    names = sorted(p.name for p in out.iterdir())
    assert "simulated_separable_ndcg_at_10.png" in names
    assert "simulated_separable_ndcg_at_10_best-by-ndcg_at_10.png" in names
    assert "simulated_separable_ndcg_at_10_best-by-ndcg_at_10.caption.txt" in names
    labels = legend_labels(figures[1])
    listnet = [lab for lab in labels if lab.startswith("ListNet")]
    assert len(listnet) == 1 and listnet[0].startswith("ListNet (eta: ") and listnet[0].endswith(", best by ndcg@10)")
    caption = (out / "simulated_separable_ndcg_at_10_best-by-ndcg_at_10.caption.txt").read_text()
    assert "best of 3 settings by the time-averaged ndcg@10 over the last 10 rounds" in caption


def test_a_partial_read_is_titled_as_a_sample(yahoo, tmp_path, monkeypatch):
    figures = saved_figures(monkeypatch)
    out = tmp_path / "p"
    res = runner.invoke(app, ["plot", str(yahoo), "--metric", "ndcg@10", "--out", str(out)])
    assert res.exit_code == 0, res.stderr
    title = figures[0].axes[0].get_title().replace("\n", " ")
    assert title.startswith("Yahoo! LTR set 1 sample (") and title.endswith(" queries)")
    assert "Fig. 2-3" not in title  # the config's description claims the full dataset
    read = int(title.split("(")[1].split()[0])
    assert 50 <= read <= 61  # 60 rounds of a 201-query file, some queries seen twice
    caption = (out / "yahoo_slam_ndcg_at_10.caption.txt").read_text()
    assert f"sample ({read} of 19,944 queries)" in caption


def test_hostile_output_folders_are_refused(demo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    a_file = tmp_path / "file.png"
    a_file.write_text("not a folder")
    for out, says in ((link, "symbolic link"), (a_file, "not a folder"), (tmp_path / "a\nb", "control characters")):
        for layout in ("separate", "panels"):
            res = runner.invoke(app, ["plot", str(demo), "--layout", layout, "--out", str(out)])
            assert res.exit_code == 1, res.output
            assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
            errors = [line for line in res.stderr.splitlines() if line.startswith("ltr: error:")]
            assert len(errors) == 1 and says in errors[0], res.stderr
            assert "Traceback" not in res.output
    assert not any(elsewhere.iterdir()) and a_file.read_text() == "not a folder"
    assert not (tmp_path / "a\nb").exists()


def test_a_full_read_keeps_the_description_and_a_fold_is_a_sample():
    from types import SimpleNamespace

    import pandas as pd

    from ltr_cli.reports.captions import figure_title, panel_title

    # MSLR-WEB10K's five training files: every query in three of them, qids prefixed by file
    qids = [f"{f}:{q}" for f in range(1, 6) for q in range(10_000) if (q + f) % 5 < 3]
    run = SimpleNamespace(summary={"dataset": "mslr-web10k", "dropped_last_queries": 5},
                          config={"description": "Fig. 2-3 on MSLR-WEB10K", "protocol": {"passes": 1}},
                          rounds=pd.DataFrame({"qid": qids}))
    assert figure_title([run], "mslr") == "Fig. 2-3 on MSLR-WEB10K" and panel_title([run], "mslr") == "MSLR-WEB10K"
    run.rounds = run.rounds.iloc[:6_000]  # the first file only
    assert figure_title([run], "mslr") == "MSLR-WEB10K sample (6,005 queries)"
    assert panel_title([run], "mslr", of_total=True) == "MSLR-WEB10K sample (6,005 of 10,000 queries)"
