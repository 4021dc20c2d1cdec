"""The generated click experiment (configs/clicks_synthetic.yaml) end to end through the CLI:
on navigational clicks, PDGD beats P-MGD, which beats P-DBGD, in final offline NDCG@10, each
with a Holm-adjusted paired p below 0.05 over the five seeds, as in the PDGD paper. TD-DBGD,
which the claim does not name, is left out of the run (``--exclude``), so Holm adjusts over the
three learners compared. The first 1,000 of the config's 2,000 rounds (held out every 100):
the order is already there, and clearer (PDGD ahead of P-MGD by 0.08-0.10 NDCG@10, every Holm
p at most 0.007, over seeds 0-4, 5-9 and 10-14; at 2,000 rounds, seeds 0-4: 0.03, p 0.017).
In-process through Typer's runner: the commands are the CLI's own."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO

CONFIG = REPO / "configs" / "clicks_synthetic.yaml"


def _ltr(*args: str) -> str:
    out = CliRunner().invoke(app, list(args))
    assert out.exit_code == 0, out.output
    return out.stdout


def test_pdgd_beats_p_mgd_which_beats_p_dbgd(tmp_path):
    data = tmp_path / "clicks-synthetic"
    _ltr("data", "synth", str(data), "--like", "mslr-web10k", "--queries", "500", "--docs-per-query", "30",
         "--seed", "0", "--folds")  # the command in the config's header
    out = tmp_path / "out"
    _ltr("run", str(CONFIG), "--set", f"dataset.root={data}", "--set", f"heldout.file={data / 'Fold1' / 'test.txt'}",
         "--set", "sweep=null", "--set", "protocol.max_rounds=1000", "--set", "heldout.every=100",
         "--exclude", "td-dbgd", "--out", str(out), "-q")
    compared = json.loads(_ltr("compare", str(out), "--metric", "heldout_ndcg@10", "--json"))
    pairs = {frozenset((p["a"], p["b"])): p for p in compared["pairs"]}

    def better(winner: str, loser: str) -> None:
        p = pairs[frozenset((winner, loser))]
        sign = 1 if p["a"] == winner else -1
        assert p["n"] == 5 and sign * p["mean_difference"] > 0 and p["p_holm"] < 0.05, p

    better("pdgd", "p-mgd")
    better("p-mgd", "p-dbgd")
    better("pdgd", "p-dbgd")
