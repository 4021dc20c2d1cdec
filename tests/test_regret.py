"""Regret logging (top-k paper, Theorem 4.1): the per-round surrogate, the comparator in
hindsight, the regret column and its figure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.config.experiment import load_config
from ltr_cli.data.sources import open_source
from ltr_cli.data.svmlight import Query
from ltr_cli.learners.online.base import LossSpec
from ltr_cli.learners.online.hindsight import QueryBlock, best_in_hindsight, cumulative
from ltr_cli.measures.conventions import Measure
from ltr_cli.protocols.online import reveal, run_online
from ltr_cli.protocols.regret import rebuild_stream, regret, regret_loss, round_surrogate
from ltr_cli.runs.plan import plan_experiment
from ltr_cli.surrogates import SURROGATES
from tests.conftest import make_learner

runner = CliRunner()

CONFIG = """
experiment: regret
seed: {seed}
dataset: {{kind: shaped, like: yahoo-set1, queries: {queries}, seed: {seed}}}
protocol: {{passes: {passes}, log_regret: true}}
metrics: {{names: [ndcg@10]}}
learners:
{learners}
"""


def write_config(tmp_path: Path, learners: str, passes: int = 2, queries: int = 30, seed: int = 0,
                 name: str = "c.yaml") -> Path:
    cfg = tmp_path / name
    cfg.write_text(CONFIG.format(seed=seed, queries=queries, passes=passes, learners=learners))
    return cfg


def run(cfg: Path, out: Path, *sets: str) -> dict[str, Path]:
    args = ["run", str(cfg), "--out", str(out), "-q"]
    for s in sets:
        args += ["--set", s]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    dirs = [Path(p) for p in res.stdout.split()]
    return {json.loads((d / "summary.json").read_text())["learner"]: d for d in dirs}


def summary(d: Path) -> dict:
    return json.loads((d / "summary.json").read_text())


def manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text())


def queries(n=40, d=6, seed=0) -> list[Query]:
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        m = int(rng.integers(1, 9))
        out.append(Query(str(q), rng.normal(size=(m, d)), rng.integers(0, 3, m).astype(float), 0))
    return out


@pytest.mark.parametrize("learner,settings", [
    ("rtopkf", {"surrogate": "squared"}), ("rtopkf", {"surrogate": "kl"}), ("rtopkf", {"surrogate": "ranksvm"}),
    ("rtopkf", {"surrogate": "smoothdcg", "epsilon": 0.1}), ("listnet", {"radius": 2.0}),
    ("ogd", {"surrogate": "ordinal", "radius": 1.0}),
])
def test_the_logged_surrogate_is_the_learners_surrogate_at_its_scores(learner, settings):
    """The protocol has the full labels even when the learner sees the top k only: each
    round logs phi(X_t w_t, R_t) at the weights that ranked the query, before the update."""
    qs = queries()
    extra = {"schedule": "paper", "horizon": len(qs), "gamma_scale": 0.5} if learner == "rtopkf" else {}
    build = lambda: make_learner(learner, 6, rng=np.random.default_rng(3), **settings, **extra)  # noqa: E731
    lr = build()
    loss = regret_loss(lr, True)
    assert loss is not None
    result = run_online(iter([(1, q) for q in qs]), lr, [Measure("ndcg@10")], np.random.default_rng(5), quiet=True,
                        surrogate=round_surrogate(lr, loss))
    logged = result.rounds["surrogate"].to_numpy()
    twin, ties = build(), np.random.default_rng(5)
    params = loss.params
    for t, q in enumerate(qs):
        ranking = twin.rank(q.X, ties)
        assert logged[t] == SURROGATES[loss.surrogate](q.X @ twin.w, q.y, **params)[0]
        twin.update(q.X, reveal(twin, ranking, q.y))
    assert np.array_equal(twin.w, result.weights)  # the logging changed nothing of the run


def test_the_comparator_minimises_over_the_ball():
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 9, 30)
    ends = np.cumsum(lengths)
    block = QueryBlock(rng.random((ends[-1], 5)), rng.integers(0, 3, ends[-1]).astype(float), ends - lengths, ends,
                       rng.integers(0, 4, 30))
    for surrogate in ("squared", "kl", "listnet", "ranksvm"):
        loss = LossSpec(surrogate, {}, 1.0, True)
        found = best_in_hindsight(loss, [block], 5)
        assert np.linalg.norm(found.w) <= 1.0 + 1e-12
        assert found.lower_bound is not None and found.lower_bound <= found.value
        for _ in range(50):  # no point of the ball does better, beyond the certified gap
            w = rng.normal(size=5)
            w *= rng.random() / np.linalg.norm(w)
            assert cumulative(loss, [block], w)[0] >= found.value - found.gap - 1e-9


@pytest.mark.parametrize("delta", [1.0, 0.5])
def test_the_compiled_hinge_equals_the_reference(monkeypatch, delta):
    """The comparator sums RankSVM's hinge with a kernel; LTR_KERNELS=0 takes the reference
    (ltr_cli.surrogates.pairwise) query by query."""
    from ltr_cli import kernels

    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 12, 60)
    ends = np.cumsum(lengths)
    block = QueryBlock(rng.random((ends[-1], 5)), rng.integers(0, 3, ends[-1]).astype(float), ends - lengths, ends,
                       rng.integers(0, 3, 60))
    loss = LossSpec("ranksvm", {} if delta == 1.0 else {"delta": delta}, 1.0, True)
    w = rng.normal(size=5)
    fast = cumulative(loss, [block], w)
    monkeypatch.setattr(kernels, "ENABLED", False)
    slow = cumulative(loss, [block], w)
    assert fast[0] == pytest.approx(slow[0], rel=1e-12) and np.allclose(fast[1], slow[1], rtol=1e-12, atol=1e-12)


LEARNERS = """  kl: {type: rtopkf, surrogate: kl, radius: 1.0}
  squared: {type: rtopkf, surrogate: squared, radius: 1.0, eta_scale: 0.001}
  ranksvm: {type: rtopkf, surrogate: ranksvm, radius: 1.0}
  frozen: {type: rtopkf, surrogate: squared, radius: 1.0, eta_scale: 1.0e-12, gamma_scale: 0}
  listnet: {type: listnet, radius: 1.0}
  unbounded: {type: rtopkf, surrogate: kl, radius: null}
  random: {type: random}"""


def test_regret_columns_manifest_and_bounds(tmp_path):
    cfg = write_config(tmp_path, LEARNERS)
    runs = run(cfg, tmp_path / "out")
    for name in ("kl", "squared", "ranksvm", "frozen", "listnet"):
        d = runs[name]
        rounds = pd.read_parquet(d / "rounds.parquet")
        cols = list(rounds.columns)
        assert cols.index("regret") == cols.index("surrogate") + 1 == cols.index("ndcg@10") + 2
        s, m = summary(d)["regret"], manifest(d)["regret"]
        assert s["regret"] == pytest.approx(rounds["regret"].iloc[-1])
        assert s["learner_cumulative_surrogate"] == pytest.approx(rounds["surrogate"].sum())
        assert s["best_in_hindsight"] == pytest.approx(s["learner_cumulative_surrogate"] - s["regret"])
        # regret >= 0 up to the optimiser's certified gap: the learner's total is at least the minimum
        assert s["regret"] >= -s["optimizer_gap"] - 1e-9 * abs(s["best_in_hindsight"])
        assert s["regret_at_most"] >= s["regret"]
        assert m["logged"] and m["radius"] == 1.0 and "round-by-round" in m["per_round"]
        assert m["stream"].startswith("planned")
    frozen = summary(runs["frozen"])["regret"]
    assert frozen["optimizer_gap"] <= 1e-6 * frozen["best_in_hindsight"]  # squared converges to its tolerance
    # the comparator evaluated round by round, recomputed here: the regret column follows
    spec = load_config(cfg)
    (plan,) = plan_experiment(spec)
    source = open_source(spec.dataset, spec.seed, None)
    rounds = pd.read_parquet(runs["kl"] / "rounds.parquet")
    stream = rebuild_stream(source, spec.protocol, np.random.default_rng(np.random.SeedSequence(0).spawn(3)[0]),
                            rounds)
    column, _, _ = regret(LossSpec("kl", {}, 1.0, True), stream, rounds["surrogate"].to_numpy(), 700)
    assert np.allclose(column, rounds["regret"].to_numpy(), rtol=1e-12, atol=1e-9)
    # a learner without a radius logs its surrogate, not a regret; one without a surrogate nothing
    unbounded = pd.read_parquet(runs["unbounded"] / "rounds.parquet")
    assert "surrogate" in unbounded.columns and "regret" not in unbounded.columns
    assert "no projection radius" in manifest(runs["unbounded"])["regret"]["reason"]
    assert "surrogate" not in pd.read_parquet(runs["random"] / "rounds.parquet").columns
    assert manifest(runs["random"])["regret"]["logged"] is False
    # ltr report and ltr plot read the runs; --regret draws one panel per learner with a regret
    assert runner.invoke(app, ["report", str(tmp_path / "out")]).exit_code == 0
    res = runner.invoke(app, ["plot", str(tmp_path / "out"), "--regret", "--out", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "plots" / "regret_regret.png").is_file() and (tmp_path / "plots" / "regret_regret.pdf").is_file()
    assert not (tmp_path / "plots" / "regret_surrogate.png").exists()  # not a metric


def test_the_stream_rebuilt_without_arrays_is_the_same(tmp_path, monkeypatch):
    cfg = write_config(tmp_path, "  kl: {type: rtopkf, surrogate: kl, radius: 1.0}", passes=3, queries=12)
    spec = load_config(cfg, ["protocol.shuffle=true", "protocol.keep_probability=0.7"])
    rounds = pd.read_parquet(run(cfg, tmp_path / "out", "protocol.shuffle=true",
                                 "protocol.keep_probability=0.7")["kl"] / "rounds.parquet")
    loss = LossSpec("kl", {}, 1.0, True)
    seed = np.random.SeedSequence(0).spawn(3)[0]
    source = open_source(spec.dataset, spec.seed, None)
    planned = rebuild_stream(source, spec.protocol, np.random.default_rng(seed), rounds)
    monkeypatch.setattr(type(source), "unit_arrays", lambda self, unit: None)
    streamed = rebuild_stream(source, spec.protocol, np.random.default_rng(seed), rounds)
    assert streamed.how.startswith("streamed") and planned.how.startswith("planned")
    assert sum(int(b.counts.sum()) for b in streamed.blocks) == len(rounds) == sum(
        int(b.counts.sum()) for b in planned.blocks)
    a, _, sa = regret(loss, planned, rounds["surrogate"].to_numpy(), 700)
    b, _, sb = regret(loss, streamed, rounds["surrogate"].to_numpy(), 700)
    assert sa["best_in_hindsight"] == pytest.approx(sb["best_in_hindsight"], rel=1e-9)
    assert np.allclose(a, b, rtol=1e-9, atol=1e-6)


def test_regret_of_rtopkf_grows_sublinearly(tmp_path):
    """Qualitative, at small size: with the paper's schedule for each horizon (eta = c T^(-2/3),
    gamma = T^(-1/3)), regret / T is lower at 8T than at T."""
    learners = ("  kl: {type: rtopkf, surrogate: kl, radius: 1.0}\n"
                "  squared: {type: rtopkf, surrogate: squared, radius: 1.0, eta_scale: 0.001}")
    cfg = write_config(tmp_path, learners, passes=2, queries=30)
    short = run(cfg, tmp_path / "short")
    long = run(cfg, tmp_path / "long", "protocol.passes=16")
    for name in ("kl", "squared"):
        a, b = summary(short[name]), summary(long[name])
        assert b["rounds"] == 8 * a["rounds"] == 480
        assert b["regret"]["regret"] / b["rounds"] < a["regret"]["regret"] / a["rounds"]


def test_log_regret_changes_the_run_id_only_when_on(tmp_path):
    cfg = write_config(tmp_path, "  kl: {type: rtopkf, surrogate: kl, radius: 1.0}")
    on = load_config(cfg)
    off = load_config(cfg, ["protocol.log_regret=false"])
    text = cfg.read_text().replace(", log_regret: true", "")
    plain = tmp_path / "plain.yaml"
    plain.write_text(text)
    assert off.run_id("kl") == load_config(plain).run_id("kl") != on.run_id("kl")
    (runs,) = plan_experiment(on)
    assert runs[0].group is None  # logging its surrogate, it runs round by round
    (runs,) = plan_experiment(off)
    assert runs[0].group is not None


def test_plot_regret_without_regret_runs_is_refused(tmp_path):
    cfg = write_config(tmp_path, "  random: {type: random}")
    run(cfg, tmp_path / "out")
    res = runner.invoke(app, ["plot", str(tmp_path / "out"), "--regret"])
    assert res.exit_code == 1 and "no run has a regret column" in res.stderr


def test_a_killed_regret_run_resumes_exactly(tmp_path):
    cfg = write_config(tmp_path, "  kl: {type: rtopkf, surrogate: kl, radius: 1.0}", passes=40, queries=30)
    text = cfg.read_text().replace("log_regret: true", "log_regret: true, checkpoint_every: 25")
    cfg.write_text(text)

    assert runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "reference"), "-q"]).exit_code == 0
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "ltr_cli", "run", str(cfg), "--out", str(killed), "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not list((killed / "regret").glob(".*.checkpoint")):
        time.sleep(0.01)
    finished_already = proc.poll() is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if finished_already or any(p.is_dir() for p in (killed / "regret").iterdir() if not p.name.startswith(".")):
        pytest.skip("the run finished before it could be killed (machine too fast)")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(killed), "--resume"])  # in this process
    assert res.exit_code == 0, res.stderr
    assert "resuming after round" in res.stderr
    (a,) = (tmp_path / "reference" / "regret").glob("kl-*/rounds.parquet")
    (b,) = (killed / "regret").glob("kl-*/rounds.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), check_exact=True)
