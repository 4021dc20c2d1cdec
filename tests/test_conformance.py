"""The conformance suite (:mod:`tests.conformance`) on every online learner of the
registry, each with every example it declares; plugins installed in this environment are
checked too."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli import kernels
from ltr_cli.cli.app import app
from ltr_cli.learners.registry import REGISTRY
from ltr_cli.protocols.checkpoint import Checkpointer, RunState
from ltr_cli.protocols.learner_state import LearnerState, state_fields
from ltr_cli.protocols.online import reveal
from ltr_cli.protocols.round_log import column_kinds
from ltr_cli.runs import online as online_runs
from tests.conformance import examples, run_folders, run_killed, same_files, write_config, write_data

runner = CliRunner()
EXAMPLES = examples()
# the resume check runs the first example of each learner (a run in a child process each)
FIRST = [name for name in EXAMPLES if name.endswith("0")]


def _run(cfg, out, monkeypatch, blocks: bool = True, kernels_on: bool = True) -> dict:
    monkeypatch.setattr(online_runs, "BLOCKS", blocks)
    monkeypatch.setattr(kernels, "ENABLED", kernels_on)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.stderr
    return run_folders(out)


def _close(a, b) -> None:
    """Two run folders agree to rounding: the same rounds, measures within 1e-9."""
    ra, rb = pd.read_parquet(a / "rounds.parquet"), pd.read_parquet(b / "rounds.parquet")
    assert list(ra.columns) == list(rb.columns)
    for col in ra.columns:
        if col == "wall_seconds":
            continue
        if ra[col].dtype.kind == "f":
            np.testing.assert_allclose(ra[col], rb[col], rtol=1e-9, atol=1e-12, err_msg=col)
        else:
            assert ra[col].tolist() == rb[col].tolist(), col
    wa = json.loads((a / "models.json").read_text())
    wb = json.loads((b / "models.json").read_text())
    assert wa.keys() == wb.keys()


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_reference_round_and_block_paths_agree(tmp_path, monkeypatch, name):
    data = write_data(tmp_path / "a.txt", queries=40)
    cfg = write_config(tmp_path / "c.yaml", [data], {name: EXAMPLES[name]},
                       protocol="{passes: 2, shuffle: true, checkpoint_every: 31}")
    reference = _run(cfg, tmp_path / "reference", monkeypatch, blocks=False, kernels_on=False)[name]
    rounds = _run(cfg, tmp_path / "rounds", monkeypatch, blocks=False)[name]
    blocks = _run(cfg, tmp_path / "blocks", monkeypatch, blocks=True)[name]
    assert same_files(rounds, blocks) == []
    _close(reference, rounds)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_alone_as_in_a_group(tmp_path, monkeypatch, name):
    data = write_data(tmp_path / "a.txt", queries=40)
    alone = write_config(tmp_path / "alone.yaml", [data], {name: EXAMPLES[name]})
    others = {other: spec for other, spec in EXAMPLES.items() if other != name}
    group = dict(list(others.items())[:3]) | {name: EXAMPLES[name]}
    together = write_config(tmp_path / "group.yaml", [data], group)
    a = _run(alone, tmp_path / "alone", monkeypatch)[name]
    b = _run(together, tmp_path / "group", monkeypatch)[name]
    assert a.name == b.name  # the run id does not depend on the other learners
    assert same_files(a, b) == []


@pytest.mark.parametrize("name", FIRST)
def test_resume_after_a_kill_is_byte_identical(tmp_path, monkeypatch, name):
    data = write_data(tmp_path / "a.txt", queries=50)
    cfg = write_config(tmp_path / "c.yaml", [data], {name: EXAMPLES[name]},
                       protocol="{passes: 3, shuffle: true, checkpoint_every: 23}")
    reference = _run(cfg, tmp_path / "reference", monkeypatch)[name]
    killed = tmp_path / "killed"
    proc = run_killed(cfg, killed)
    assert proc.returncode == 9, proc.stderr
    res = runner.invoke(app, ["run", str(cfg), "--out", str(killed), "--resume"])
    assert res.exit_code == 0, res.stderr
    assert "resuming after round 46" in res.stderr
    assert same_files(reference, run_folders(killed)[name]) == []


def _play(learner, queries, rng, tie_rng) -> list:
    """Rounds of ``learner`` on ``queries``: each shown ranking and the weights after it."""
    seen = []
    for X, y in queries:
        ranking = learner.rank(X, tie_rng)
        learner.update(X, reveal(learner, ranking, y))
        seen.append((ranking.tolist(), np.array(learner.weights, copy=True)))
    return seen


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_state_round_trips_through_a_checkpoint(tmp_path, name):
    spec = REGISTRY[EXAMPLES[name]["type"]].model_validate(EXAMPLES[name])
    rng = np.random.default_rng(5)
    queries = []
    for _ in range(30):
        m = int(rng.integers(2, 12))
        queries.append((rng.normal(size=(m, 6)).round(1), rng.integers(0, 3, size=m).astype(float)))

    def build():
        return spec.build(6, "input-order", np.random.default_rng(11), planned_rounds=60, fidelity="paper")

    learner = build()
    with np.errstate(all="ignore"):
        _play(learner, queries, rng, np.random.default_rng(1))
    assert state_fields(learner), "a learner must have some state"
    store = Checkpointer(tmp_path / ".x.checkpoint", "run-x", every=1)
    fill = {"i": 1, "U": "q", "b": False, "f": 0.0}
    columns = {col: [t + 1 if col == "t" else fill[kind] for t in range(30)]
               for col, kind in column_kinds([]).items()}
    store.save(RunState("run-x", 30, columns, LearnerState.of(learner), np.random.default_rng(2).bit_generator.state,
                        0.0, nonfinite_round=1))
    loaded = store.load([])
    assert loaded is not None
    fresh = build()
    loaded.learner.restore(fresh)
    with np.errstate(all="ignore"):
        a = _play(learner, queries, np.random.default_rng(3), np.random.default_rng(4))
        b = _play(fresh, queries, np.random.default_rng(3), np.random.default_rng(4))
    for (ra, wa), (rb, wb) in zip(a, b):
        assert ra == rb
        np.testing.assert_array_equal(wa, wb)


class _Odd:
    """A learner with extra state of every kind a checkpoint keeps."""

    state_fields = ("w", "t", "count", "flag", "scale", "lazy", "seen", "draws")

    def __init__(self):
        self.w = np.zeros(2)
        self.t = 0
        self.count = np.int64(0)
        self.flag = np.bool_(False)
        self.scale = float("nan")
        self.lazy = None
        self.seen = np.zeros(3, dtype=np.uint32)
        self.draws = np.random.default_rng(1)


def test_extra_state_of_every_kind_round_trips_with_its_type(tmp_path):
    a = _Odd()
    a.t, a.count, a.flag, a.scale, a.lazy = 5, np.int64(2**60 + 1), np.bool_(True), float("inf"), np.ones(2)
    a.seen[:] = [1, 2, 3]
    a.draws.random()
    store = Checkpointer(tmp_path / ".x.checkpoint", "run-x", every=1)
    fill = {"i": 1, "U": "q", "b": False, "f": 0.0}
    columns = {col: [t + 1 if col == "t" else fill[kind] for t in range(5)] for col, kind in column_kinds([]).items()}
    store.save(RunState("run-x", 5, columns, LearnerState.of(a), np.random.default_rng(2).bit_generator.state, 0.0))
    loaded = store.load([])
    b = _Odd()
    loaded.learner.restore(b)
    assert type(b.count) is np.int64 and b.count == 2**60 + 1
    assert type(b.flag) is np.bool_ and b.flag and b.scale == float("inf") and b.lazy.tolist() == [1.0, 1.0]
    assert b.seen.dtype == np.uint32 and b.seen.tolist() == [1, 2, 3]
    assert b.draws.random() == a.draws.random()


@pytest.mark.parametrize("value, message", [(10**400, "out of range"), (1.5, "must be an integer"),
                                            (True, "must be an integer"), ({"generator": {}}, "must be an integer")])
def test_a_crafted_extra_value_is_refused(value, message):
    from ltr_cli.protocols.learner_state import CheckpointInvalid

    state = LearnerState.of(_Odd())
    state.extra["count"] = value
    with pytest.raises(CheckpointInvalid, match=message):
        state.restore(_Odd())
