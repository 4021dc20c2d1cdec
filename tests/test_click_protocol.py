"""The click protocol: ``protocol.feedback: clicks`` (a click model clicks on the shown list,
from the run's fourth seed stream), ``protocol.sampling: uniform`` (a training query drawn
with replacement each round), what each learner sees, the metrics of the shown list, the
discounted cumulative value, and kill/resume."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicks.spec import build_model
from ltr_cli.config.experiment import load_config, parse_config
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.query import Query
from ltr_cli.errors import ConfigError
from ltr_cli.learners.examples import write_data
from ltr_cli.learners.online.base import Feedback, UpdateInfo
from ltr_cli.measures.conventions import Measure
from ltr_cli.measures.metrics import ndcg_at_k, rank_from_scores, row_scores
from ltr_cli.protocols.click_feedback import ClickFeedback, resolve_model
from ltr_cli.protocols.online import discounted_cumulative, run_online
from ltr_cli.testing.online import run_killed, same_files

runner = CliRunner()

BASE = {"experiment": "clicks", "dataset": {"kind": "separable", "queries": 20},
        "learners": {"slam": {"type": "slam-perceptron"}}}
CLICKS = {"feedback": "clicks", "clicks": {"model": "navigational"}}


def _error(protocol: dict, **more) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config({**BASE, "protocol": protocol, **more})
    return str(info.value)


# --- config ------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol, more, expected", [
    ({"clicks": {"model": "navigational"}}, {}, "protocol.clicks: is set but protocol.feedback is auto"),
    ({"feedback": "clicks"}, {}, "protocol.clicks: missing"),
    ({**CLICKS, "clicks": {"model": "navigatonal"}}, {}, "protocol.clicks.model 'navigatonal': unknown click model"),
    ({**CLICKS, "clicks": {"model": "pbm", "stop": "any-position"}}, {}, "protocol.clicks.stop: applies to the cascade"),
    ({**CLICKS, "clicks": {"model": "navigational", "eta": 2.0}}, {}, "navigational is a cascade (set protocol.clicks.stop"),
    ({**CLICKS, "clicks": {"model": {"click": [0, 1], "stop": [0, 2]}}}, {}, "protocol.clicks.model.stop: the value at grade 1"),
    ({**CLICKS, "clicks": {"model": "navigational", "grades": 4}}, {}, "protocol.clicks.grades 4"),
    ({**CLICKS, "clicks": {"model": "navigational", "gamma": 0}}, {}, "protocol.clicks.gamma"),
    ({**CLICKS, "clicks": {"model": "navigational", "shown": 0}}, {}, "protocol.clicks.shown"),
    (CLICKS, {"metrics": {"names": ["ndcg@10", "ap"]}}, "metrics.names: ap reads the whole ranking"),
    ({**CLICKS, "clicks": {"model": "navigational", "shown": 5}}, {"metrics": {"names": ["ndcg@10"]}},
     "metrics.names: ndcg@10 reads 10 positions"),
    ({"sampling": "uniform"}, {}, "protocol.max_rounds: missing"),
    ({"sampling": "uniform", "max_rounds": 5, "shuffle": True}, {}, "protocol.shuffle: applies to sampling: passes"),
    ({"sampling": "uniform", "max_rounds": 5, "passes": 1}, {}, "protocol.passes: applies to sampling: passes"),
    ({"sampling": "uniform", "max_rounds": 5, "keep_probability": 0.5}, {}, "protocol.keep_probability: applies"),
    ({"sampling": "everything"}, {}, "protocol.sampling"),
    ({"feedback": "cliks"}, {}, "expected auto, full, clicks or top-K"),
])
def test_bad_click_configs_are_one_line_errors_naming_the_key(protocol, more, expected):
    message = _error(protocol, **more)
    assert expected in message and "\n" not in message


def test_click_configs_resolve_with_the_shown_lists_metrics_by_default():
    spec = parse_config({**BASE, "protocol": {**CLICKS, "sampling": "uniform", "max_rounds": 9}})
    assert spec.metrics.names == ["ndcg@10"]  # the default's ap reads the whole ranking
    five = parse_config({**BASE, "protocol": {**CLICKS, "clicks": {"model": "perfect", "shown": 5}}})
    assert five.metrics.names == ["ndcg@5"]
    clicks = spec.protocol.clicks
    assert (clicks.shown, clicks.gamma, clicks.grades, clicks.stop, clicks.eta) == (10, 0.9995, None, None, None)
    # runs without clicks keep their ids: the new keys at their defaults are left out of them
    plain = parse_config(BASE)
    assert plain.run_id("slam") == "slam-69f1ea90cb"  # as before the click protocol
    assert parse_config({**BASE, "protocol": {"sampling": "passes"}}).run_id("slam") == "slam-69f1ea90cb"


def test_a_click_learner_without_click_feedback_is_refused_naming_it(monkeypatch):
    from ltr_cli.learners.registry import REGISTRY

    monkeypatch.setattr(REGISTRY["random"], "feedback_kind", "clicks")
    data = {**BASE, "learners": {"clicky": {"type": "random"}}}
    with pytest.raises(ConfigError, match="learner 'clicky' \\(random\\) learns from clicks; set protocol.feedback: clicks"):
        parse_config(data)
    parse_config({**data, "protocol": CLICKS})


def test_the_click_table_follows_the_datas_grades_unless_set():
    spec = parse_config({**BASE, "protocol": CLICKS}).protocol.clicks
    assert resolve_model(spec, lambda: 2).grades == 3
    assert resolve_model(spec, lambda: 1).grades == 2
    assert resolve_model(spec, lambda: 4).grades == 5
    with pytest.raises(Exception, match="the data's labels reach 5"):
        resolve_model(spec, lambda: 5)
    binary = parse_config({**BASE, "protocol": {**CLICKS, "clicks": {"model": "navigational", "grades": 2}}})
    with pytest.raises(Exception, match="beyond the click table's 2 grades .* set protocol.clicks.grades"):
        resolve_model(binary.protocol.clicks, lambda: 4)


# --- the rounds --------------------------------------------------------------------------------

class LabelSpy:
    """A label learner (full or top-k feedback) that ranks by its first feature and records
    what it is given."""

    numerics = "stable"
    state_fields = ("w",)

    def __init__(self, feedback_k: int | None = None):
        self.feedback_k = feedback_k
        self.w = np.zeros(2)
        self.seen: list[Feedback] = []

    def resolved_settings(self) -> dict:
        return {}

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.argsort(-X[:, 0], kind="stable")

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.seen.append(feedback)
        return UpdateInfo(False, False)


class ClickSpy(LabelSpy):
    """A minimal click learner: it shows a random list of ``shown`` documents (drawn from
    the tie generator), reads ``feedback.clicks`` only and moves its weights towards the
    clicked documents' features."""

    feedback_kind = "clicks"

    def __init__(self):
        super().__init__(None)
        self.shown = None  # set by the protocol

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        assert self.shown is not None
        return rng.permutation(X.shape[0])[:self.shown]  # only the shown list

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        assert feedback.labels is None and feedback.top_labels is None
        self.seen.append(feedback)
        clicked = feedback.ranking[:feedback.clicks.shape[0]][feedback.clicks > 0]
        if clicked.size:
            self.w = self.w + X[clicked].sum(axis=0)
        return UpdateInfo(False, bool(clicked.size))


def _queries(n: int = 12, seed: int = 0, grades: tuple[int, ...] = (0, 4)) -> list[Query]:
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        m = int(rng.integers(4, 9))
        y = rng.choice(np.array(grades, dtype=np.float64), size=m)
        out.append(Query(f"q{q}", rng.random((m, 2)), y))
    return out


def _run(learner, queries, click_seed: int = 7, tie_seed: int = 1, shown: int = 3, metric: str = "ndcg@3",
         model: str = "perfect"):
    clicks = ClickFeedback(build_model(model, 5), shown, np.random.default_rng(click_seed))
    result = run_online(iter([(1, q) for q in queries]), learner, [Measure(metric)], np.random.default_rng(tie_seed),
                        quiet=True, feedback="clicks", clicks=clicks)
    return result, clicks


@pytest.mark.parametrize("k", [None, 2])
def test_label_learners_get_the_clicked_documents_as_label_one(k):
    """Perfect clicks on grades 0 and 4 are certain: a shown grade-4 document is clicked, a
    shown grade-0 one is not; every document not shown is label 0, whatever its grade."""
    queries = _queries()
    spy = LabelSpy(k)
    _run(spy, queries)
    assert len(spy.seen) == len(queries)
    for q, fb in zip(queries, spy.seen):
        shown = fb.ranking[:3]
        expected_clicks = (q.y[shown] == 4).astype(float)
        np.testing.assert_array_equal(fb.clicks, expected_clicks)
        labels = np.zeros(q.m)
        labels[shown[q.y[shown] == 4]] = 1.0
        if k is None:
            assert fb.top_labels is None
            np.testing.assert_array_equal(fb.labels, labels)
        else:
            assert fb.labels is None
            np.testing.assert_array_equal(fb.top_labels, labels[fb.ranking[:k]])



@pytest.mark.parametrize("k", [None, 2])
def test_one_round_of_clicks_as_labels_written_out(k):
    """Shown: documents 1, 3, 4 (grades 4, 0, 4): clicks 1, 0, 1; document 0 (grade 4) is
    not shown, so it is label 0 like the unclicked ones."""
    X = np.array([[0.5, 0], [0.9, 0], [0.1, 0], [0.8, 0], [0.7, 0]])
    spy = LabelSpy(k)
    _run(spy, [Query("q", X, np.array([4.0, 4.0, 0.0, 0.0, 4.0]))])
    (fb,) = spy.seen
    assert fb.ranking.tolist() == [1, 3, 4, 0, 2] and fb.clicks.tolist() == [1.0, 0.0, 1.0]
    if k is None:
        assert fb.labels.tolist() == [0.0, 1.0, 0.0, 0.0, 1.0] and fb.top_labels is None
    else:
        assert fb.labels is None and fb.top_labels.tolist() == [1.0, 0.0]


def test_a_click_learner_sees_only_clicks_from_the_fourth_stream_and_learns():
    queries = _queries(40, grades=(0, 1, 2, 3, 4))
    spy = ClickSpy()
    seed = 11
    streams = np.random.SeedSequence(seed).spawn(4)
    result, _ = _run(spy, queries, click_seed=streams[3], tie_seed=streams[1], model="navigational")
    assert spy.shown == 3
    model = build_model("navigational", 5)
    replay = np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[3])
    for q, fb in zip(queries, spy.seen):  # the clicks are the model's draws from the click stream, in order
        np.testing.assert_array_equal(fb.clicks, model.sample(q.y[fb.ranking[:3]], replay, 1)[0].astype(float))
    assert spy.w.any()
    # the metric is that of the shown list, with the ideal DCG from all the query's labels
    for q, fb, value in zip(queries, spy.seen, result.log.columns["ndcg@3"]):
        full = np.concatenate([fb.ranking, np.setdiff1d(np.arange(q.m), fb.ranking)])
        assert value == pytest.approx(ndcg_at_k(full, q.y, 3, "zero"), abs=1e-12)


def test_a_shown_list_without_its_relevant_document_is_measured_as_missing_it():
    """A click learner may rank only the shown list: a query whose one relevant document was
    not shown has RR@3 0 and NDCG@3 0 (not the no-relevant value), under skip too."""
    X = np.zeros((6, 2))
    query = Query("q", X, np.array([0.0, 0.0, 0.0, 0.0, 0.0, 3.0]))
    spy = ClickSpy()
    clicks = ClickFeedback(build_model("perfect", 5), 3, np.random.default_rng(0))
    result = run_online(iter([(1, query)] * 30), spy, [Measure("rr@3", "skip"), Measure("ndcg@3", "skip")],
                        np.random.default_rng(2), quiet=True, feedback="clicks", clicks=clicks)
    rr, ndcg = (np.asarray(result.log.columns[c]) for c in ("rr@3", "ndcg@3"))
    hidden = np.array([5 not in fb.ranking for fb in spy.seen])
    assert hidden.any() and (~hidden).any()
    assert (rr[hidden] == 0).all() and (ndcg[hidden] == 0).all()
    position = np.array([list(fb.ranking).index(5) + 1 if 5 in fb.ranking else 0 for fb in spy.seen])
    np.testing.assert_array_equal(rr[~hidden], 1.0 / position[~hidden])


def test_the_click_stream_does_not_touch_the_tie_stream():
    """Other clicks (another click seed) leave every ranking, drawn from the tie generator,
    as it was; another tie seed changes them."""
    queries = _queries(30, grades=(0, 1, 2, 3, 4))
    a, b, c = ClickSpy(), ClickSpy(), ClickSpy()
    _run(a, queries, click_seed=1, model="navigational")
    _run(b, queries, click_seed=2, model="navigational")
    _run(c, queries, click_seed=1, tie_seed=5, model="navigational")
    assert all(np.array_equal(x.ranking, y.ranking) for x, y in zip(a.seen, b.seen))
    assert any(not np.array_equal(x.clicks, y.clicks) for x, y in zip(a.seen, b.seen))
    assert any(not np.array_equal(x.ranking, y.ranking) for x, y in zip(a.seen, c.seen))


def test_seed_streams_without_clicks_are_unchanged():
    from ltr_cli.protocols.online_run import seeds as _seeds

    for seed in (0, 3, 2**40):
        old = np.random.SeedSequence(seed).spawn(3)
        new = _seeds(seed)
        assert len(new) == 4
        for x, y in zip(old, new[:3]):
            assert x.generate_state(4).tolist() == y.generate_state(4).tolist()


def test_discounted_cumulative_skips_nan_rows():
    values = np.array([1.0, np.nan, 0.5, 0.25])
    assert discounted_cumulative(values, 0.5) == pytest.approx(1.0 + 0.25 * 0.5 + 0.125 * 0.25)
    assert discounted_cumulative(np.zeros(0), 0.9) == 0.0


# --- uniform sampling --------------------------------------------------------------------------

def test_uniform_sampling_draws_the_queries_with_rng_integers(tmp_path):
    from ltr_cli.config.datasets import FilesData
    from ltr_cli.data.sources import open_source
    from ltr_cli.protocols import sampling

    files = [write_data(tmp_path / "a.txt", queries=7), write_data(tmp_path / "b.txt", queries=5, seed=1)]
    spec = parse_config({**BASE, "dataset": {"kind": "files", "features": 12, "files": [str(f) for f in files]},
                         "protocol": {"sampling": "uniform", "max_rounds": 50}})
    assert isinstance(spec.dataset, FilesData)
    source = open_source(spec.dataset, 0, tmp_path / "cache")
    everything = [q.qid for u in source.units() for q in source.queries(u)]
    assert len(everything) == 12 and everything[0] == "1:1" and everything[7] == "2:1"
    expected = [everything[i] for i in np.random.default_rng(4).integers(0, 12, size=50)]
    streamed = [(p, q.qid) for p, q in sampling.stream(source, spec.protocol, np.random.default_rng(4))]
    assert streamed == [(1, qid) for qid in expected]
    planned = sampling.plan(source, spec.protocol, np.random.default_rng(4))
    assert planned is not None
    segments, arrays = planned
    assert [arrays[s.unit].qids[i] for s in segments for i in s.order.tolist()] == expected
    assert all(s.pass_no == 1 for s in segments)


# --- whole runs --------------------------------------------------------------------------------

def _config(tmp_path: Path, learners: str, checkpoint: int = 0, rounds: int = 300) -> Path:
    data = write_data(tmp_path / "train.txt", queries=30)
    held = write_data(tmp_path / "held.txt", queries=12, seed=5)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: conformance
seed: 3
dataset: {{kind: files, features: 12, files: [{data}]}}
protocol:
  feedback: clicks
  sampling: uniform
  max_rounds: {rounds}
  checkpoint_every: {checkpoint}
  clicks: {{model: navigational, stop: any-position, shown: 10}}
heldout: {{file: {held}, every: 50}}
metrics: {{names: [ndcg@10, ndcg@5], no_relevant: skip}}
learners:
{learners}""")
    return cfg


LEARNERS = """  ogd: {type: ogd, surrogate: squared, step: {rule: inv-sqrt, eta: 0.01}}
  rtopkf: {type: rtopkf, surrogate: squared}
  slam: {type: slam-perceptron, measure: ndcg}
"""


def test_a_click_run_writes_heldout_curves_and_the_discounted_cumulative_value(tmp_path):
    cfg = _config(tmp_path, LEARNERS)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    runs = {Path(p).name.split("-")[0]: Path(p) for p in res.stdout.split()}
    assert set(runs) == {"ogd", "rtopkf", "slam"}
    qids = [q.qid for q in open_dataset(tmp_path / "train.txt", ReaderOptions(n_features=12)).dense_queries()]
    stream = np.random.SeedSequence(3).spawn(4)[0]
    expected_qids = [qids[i] for i in np.random.default_rng(stream).integers(0, len(qids), size=300)]
    for run in runs.values():
        summary = json.loads((run / "summary.json").read_text())
        rounds = pd.read_parquet(run / "rounds.parquet")
        assert rounds["qid"].tolist() == expected_qids  # uniform draws from the data-order stream
        assert summary["heldout"]["last"]["heldout_ndcg@10"] is not None
        assert rounds["heldout_ndcg@10"].notna().sum() == 6
        for metric in ("ndcg@10", "ndcg@5"):
            values = rounds[metric].to_numpy()
            assert np.isnan(values).any()  # no_relevant: skip leaves the query without relevant documents out
            expected = float(np.nansum(0.9995 ** np.arange(300) * values))
            assert summary["metrics"][metric]["discounted_cumulative"] == pytest.approx(expected, rel=1e-12)
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["clicks"]["model"] == "navigational" and manifest["clicks"]["grades"] == 5
        assert manifest["clicks"]["stop"] == "any-position" and manifest["clicks"]["shown"] == 10


def test_a_killed_click_run_resumes_to_the_same_bytes(tmp_path):
    cfg = _config(tmp_path, "  ogd: {type: ogd, surrogate: squared, step: {rule: inv-sqrt, eta: 0.01}}\n", checkpoint=40, rounds=150)
    reference = tmp_path / "reference"
    res = runner.invoke(app, ["run", str(cfg), "--out", str(reference), "-q"])
    assert res.exit_code == 0, res.stderr
    killed = tmp_path / "killed"
    proc = run_killed(cfg, killed)
    assert proc.returncode == 9, proc.stderr
    res = runner.invoke(app, ["run", str(cfg), "--out", str(killed), "--resume"])
    assert res.exit_code == 0, res.stderr
    assert "resuming after round 80" in res.stderr
    (a,) = [p for p in (reference / "conformance").iterdir() if p.is_dir() and not p.name.startswith(".")]
    b = killed / "conformance" / a.name
    assert same_files(a, b) == []


# --- held-out curves under no_relevant: skip ----------------------------------------------------

@pytest.mark.parametrize("kernels_on", [True, False])
def test_heldout_skip_leaves_queries_without_a_relevant_document_out(tmp_path, monkeypatch, kernels_on):
    from ltr_cli import kernels
    from ltr_cli.config.experiment import MetricsSpec
    from ltr_cli.protocols.heldout import open_heldout

    monkeypatch.setattr(kernels, "ENABLED", kernels_on)
    path = write_data(tmp_path / "held.txt", queries=15)  # every 7th query from the 4th has no relevant document
    measures = MetricsSpec(names=["ndcg@10", "ndcg@3", "err@10", "p@5"], no_relevant="skip").measures()
    held = open_heldout(path, ReaderOptions(n_features=12), 1, measures, "input-order", 0)
    w = np.linspace(-1, 1, 12)
    values = held.evaluate(w)
    for meas, value in zip(measures, values):
        per_query = []
        for a, b in zip(held.offsets[:-1], held.offsets[1:]):
            y = held.y[a:b]
            if meas.kind != "p" and not (y > 0).any():
                continue
            ranking = rank_from_scores(row_scores(held.X[a:b], w), "input-order")
            per_query.append(Measure(meas.name, "zero").value(ranking, y))
        assert len(per_query) == (15 - 2 if meas.kind != "p" else 15)
        assert value == pytest.approx(float(np.mean(per_query)), abs=1e-12), meas.name


# --- the conformance suite runs click learners under the click protocol --------------------------

def test_the_conformance_suite_runs_a_click_learner_under_clicks(tmp_path, monkeypatch):
    """A learner whose config declares ``feedback_kind: clicks`` (here the random baseline,
    made one) is run by the suite under the click protocol, with the shown list's metrics."""
    from ltr_cli.learners.registry import REGISTRY
    from ltr_cli.testing import online as suite

    monkeypatch.setattr(REGISTRY["random"], "feedback_kind", "clicks")
    cfg = suite.write_config(tmp_path / "c.yaml", [tmp_path / "a.txt"], {"random0": {"type": "random"}},
                             protocol="{passes: 2, shuffle: true}")
    spec = load_config(cfg)
    assert spec.protocol.feedback == "clicks" and spec.protocol.passes == 2 and spec.protocol.shuffle
    assert spec.metrics.names == ["ndcg@10", "p@5", "err@10"]
    for check in (suite.check_paths_agree, suite.check_alone_as_in_a_group, suite.check_state_round_trips):
        (tmp_path / check.__name__).mkdir()
        check("random0", tmp_path / check.__name__)


def test_uniform_sampling_gives_the_same_run_in_blocks_and_round_by_round(tmp_path, monkeypatch):
    from ltr_cli.protocols import online_blocks
    from ltr_cli.runs import online as online_runs
    from ltr_cli.testing.online import run_folders, write_config

    data = write_data(tmp_path / "a.txt", queries=25)
    cfg = write_config(tmp_path / "c.yaml", [data], {"slam": {"type": "slam-perceptron", "measure": "ndcg"},
                                                     "listnet": {"type": "listnet"}},
                       protocol="{sampling: uniform, max_rounds: 120, checkpoint_every: 50}")
    calls = []
    real = online_blocks.BlockRunner.run
    monkeypatch.setattr(online_blocks.BlockRunner, "run", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    folders = {}
    for blocks in (True, False):
        calls.clear()
        monkeypatch.setattr(online_runs, "BLOCKS", blocks)
        out = tmp_path / f"blocks-{blocks}"
        res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--kernels", "compiled"])
        assert res.exit_code == 0, res.stderr
        folders[blocks] = run_folders(out)
        assert bool(calls) == blocks  # the planned uniform draws ran in compiled blocks
    for name in ("slam", "listnet"):
        assert same_files(folders[True][name], folders[False][name]) == []
        assert pd.read_parquet(folders[True][name] / "rounds.parquet")["pass"].eq(1).all()
