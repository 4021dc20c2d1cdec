"""The online-learner conformance suite, derived from the learner registry (plugins
included) as scikit-learn's ``check_estimator`` is from an estimator: every registered
online learner, with each of its declared ``examples``, must

* give the same results on the reference (kernels off), round-by-round and block paths
  (:func:`check_paths_agree`);
* give the same results alone as in a group with other learners (:func:`check_alone_as_in_a_group`);
* resume after a kill byte for byte (:func:`check_resume_after_a_kill`, on its first example);
* keep its whole state through a checkpoint (``state_fields``, :func:`check_state_round_trips`).

The helpers (:func:`write_data`, :func:`write_config`, ...) are the suite's data and
configs; other tests use them too.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.learners.examples import FEATURES, examples, write_data
from ltr_cli.learners.registry import REGISTRY, SOURCES
from ltr_cli.testing import suite
from ltr_cli.core.children import PYTHON


def source(name: str) -> str:
    """Where an example's learner comes from (``built-in`` or ``plugin <distribution>``)."""
    return SOURCES[examples()[name]["type"]]


def learns_from_clicks(spec: dict[str, Any]) -> bool:
    """Whether the learner of config ``spec`` learns from clicks (``feedback_kind``)."""
    return getattr(REGISTRY.get(spec["type"]), "feedback_kind", "labels") == "clicks"


#: the click protocol the suite runs click learners under, and the metrics of its shown list
CLICKS = "feedback: clicks, clicks: {model: navigational, stop: any-position, shown: 10}"
CLICK_METRICS = "[ndcg@10, p@5, err@10]"


def write_config(path: Path, data: list[Path], learners: dict[str, dict[str, Any]], protocol: str = "{passes: 2}",
                 ties: str = "reverse-input", no_relevant: str = "one", fidelity: str = "authors-code") -> Path:
    """A run of ``learners`` (name -> config) on ``data``; learner configs are written as
    JSON, which is YAML. With a learner that learns from clicks, every learner runs under
    the click protocol (:data:`CLICKS`, added to the ``protocol`` flow mapping) and the
    metrics are those of the shown list."""
    body = "\n".join(f"  {name}: {json.dumps(spec)}" for name, spec in learners.items())
    metrics = "[ndcg@10, ap, p@5, ndcg]"
    if any(learns_from_clicks(spec) for spec in learners.values()):
        inner = protocol.strip()[1:-1].strip()
        protocol = "{" + CLICKS + (", " + inner if inner else "") + "}"
        metrics = CLICK_METRICS
    path.write_text(f"""experiment: conformance
seed: 3
fidelity: {fidelity}
dataset: {{kind: files, features: {FEATURES}, files: [{', '.join(map(str, data))}]}}
protocol: {protocol}
metrics: {{names: {metrics}, ties: {ties}, no_relevant: {no_relevant}}}
learners:
{body}
""")
    return path


def run_folders(out: Path) -> dict[str, Path]:
    """Learner name -> its run folder, of a results folder with one experiment."""
    return {p.name.rsplit("-", 1)[0]: p for p in (out / "conformance").iterdir()
            if p.is_dir() and not p.name.startswith(".")}


def same_files(a: Path, b: Path, files: tuple[str, ...] = ("rounds.parquet", "models.json")) -> list[str]:
    """The files of two run folders whose bytes differ."""
    return [f for f in files if (a / f).read_bytes() != (b / f).read_bytes()]


# a run killed by its second checkpoint save, in a child process (os._exit: no cleanup at all)
_KILL_AT_SECOND_SAVE = """
import os, sys
from ltr_cli.cli import app as cli
from ltr_cli.protocols.checkpoint import Checkpointer
real = Checkpointer.save
saves = []
def save(self, state):
    real(self, state)
    saves.append(state.t)
    if len(saves) == 2:
        os._exit(9)
Checkpointer.save = save
sys.argv = ["ltr", "run", sys.argv[1], "--out", sys.argv[2], "-q"]
cli.main()
"""


def run_killed(cfg: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``ltr run`` killed right after its second checkpoint (exit status 9)."""
    return subprocess.run([*PYTHON, "-c", _KILL_AT_SECOND_SAVE, str(cfg), str(out)],
                          capture_output=True, text=True, env=os.environ.copy())


# --- the checks -------------------------------------------------------------------------------

@contextlib.contextmanager
def _paths(blocks: bool, kernels_on: bool) -> Iterator[None]:
    """Runs in this process take the block loop or not, the kernels or not."""
    from ltr_cli import kernels
    from ltr_cli.runs import online as online_runs

    before = online_runs.BLOCKS, kernels.ENABLED
    online_runs.BLOCKS, kernels.ENABLED = blocks, kernels_on
    try:
        yield
    finally:
        online_runs.BLOCKS, kernels.ENABLED = before


def _run(cfg: Path, out: Path, blocks: bool = True, kernels_on: bool = True) -> dict[str, Path]:
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    with _paths(blocks, kernels_on):
        res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.stderr
    return run_folders(out)


def _close(a: Path, b: Path) -> None:
    """Two run folders agree to rounding: the same rounds, measures within 1e-9."""
    import pandas as pd

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


def check_paths_agree(name: str, tmp_path: Path) -> None:
    """The reference (kernels off), round-by-round and block paths give the same run."""
    ex = examples()
    data = write_data(tmp_path / "a.txt", queries=40)
    cfg = write_config(tmp_path / "c.yaml", [data], {name: ex[name]},
                       protocol="{passes: 2, shuffle: true, checkpoint_every: 31}")
    reference = _run(cfg, tmp_path / "reference", blocks=False, kernels_on=False)[name]
    rounds = _run(cfg, tmp_path / "rounds", blocks=False)[name]
    blocks = _run(cfg, tmp_path / "blocks", blocks=True)[name]
    assert same_files(rounds, blocks) == []
    _close(reference, rounds)


def check_alone_as_in_a_group(name: str, tmp_path: Path) -> None:
    """A learner run alone writes the same files as in a group with three others."""
    ex = examples()
    data = write_data(tmp_path / "a.txt", queries=40)
    alone = write_config(tmp_path / "alone.yaml", [data], {name: ex[name]})
    clicky = learns_from_clicks(ex[name])  # the group shares its protocol: learners of one feedback kind
    others = {other: spec for other, spec in ex.items() if other != name and learns_from_clicks(spec) == clicky}
    group = dict(list(others.items())[:3]) | {name: ex[name]}
    together = write_config(tmp_path / "group.yaml", [data], group)
    a = _run(alone, tmp_path / "alone")[name]
    b = _run(together, tmp_path / "group")[name]
    assert a.name == b.name  # the run id does not depend on the other learners
    assert same_files(a, b) == []


def check_resume_after_a_kill(name: str, tmp_path: Path) -> None:
    """A run killed after its second checkpoint resumes to the same bytes."""
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    data = write_data(tmp_path / "a.txt", queries=50)
    cfg = write_config(tmp_path / "c.yaml", [data], {name: examples()[name]},
                       protocol="{passes: 3, shuffle: true, checkpoint_every: 23}")
    reference = _run(cfg, tmp_path / "reference")[name]
    killed = tmp_path / "killed"
    proc = run_killed(cfg, killed)
    assert proc.returncode == 9, proc.stderr
    res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(killed), "--resume"])
    assert res.exit_code == 0, res.stderr
    assert "resuming after round 46" in res.stderr
    assert same_files(reference, run_folders(killed)[name]) == []


def _play(learner: Any, queries: list, rng: np.random.Generator, tie_rng: np.random.Generator,
          clicky: bool = False) -> list:
    """Rounds of ``learner`` on ``queries``: each shown ranking and the weights after it;
    a learner that learns from clicks (``clicky``) gets navigational clicks drawn from ``rng``."""
    from ltr_cli.clicks.spec import build_model
    from ltr_cli.protocols.click_feedback import ClickFeedback
    from ltr_cli.protocols.online import reveal

    clicks = ClickFeedback(build_model("navigational", 3), 10, rng, "clicks") if clicky else None
    if clicks is not None:
        clicks.prepare(learner)
    seen = []
    for X, y in queries:
        ranking = learner.rank(X, tie_rng)
        learner.update(X, clicks.feedback(learner, ranking, y, None) if clicks is not None else
                       reveal(learner, ranking, y))
        seen.append((ranking.tolist(), np.array(learner.weights, copy=True)))
    return seen


def check_state_round_trips(name: str, tmp_path: Path) -> None:
    """The state a checkpoint keeps (``state_fields``) restores a learner that then plays
    exactly as the original."""
    from ltr_cli.protocols.checkpoint import Checkpointer, RunState
    from ltr_cli.protocols.learner_state import LearnerState, state_fields
    from ltr_cli.core.round_log import column_kinds

    ex = examples()[name]
    spec: Any = REGISTRY[ex["type"]].model_validate(ex)
    rng = np.random.default_rng(5)
    queries = []
    for _ in range(30):
        m = int(rng.integers(2, 12))
        queries.append((rng.normal(size=(m, 6)).round(1), rng.integers(0, 3, size=m).astype(float)))

    def build() -> Any:
        return spec.build(6, "input-order", np.random.default_rng(11), planned_rounds=60, fidelity="paper")

    clicky = learns_from_clicks(ex)
    learner = build()
    with np.errstate(all="ignore"):
        _play(learner, queries, rng, np.random.default_rng(1), clicky)
    assert state_fields(learner), "a learner must have some state"
    store = Checkpointer(tmp_path / ".x.checkpoint", "run-x", every=1)
    fill: dict[str, Any] = {"i": 1, "U": "q", "b": False, "f": 0.0}
    columns = {col: [t + 1 if col == "t" else fill[kind] for t in range(30)]
               for col, kind in column_kinds([]).items()}
    store.save(RunState("run-x", 30, columns, LearnerState.of(learner), dict(np.random.default_rng(2).bit_generator.state),
                        0.0, nonfinite_round=1))
    loaded = store.load([])
    assert loaded is not None
    fresh = build()
    loaded.learner.restore(fresh)
    with np.errstate(all="ignore"):
        a = _play(learner, queries, np.random.default_rng(3), np.random.default_rng(4), clicky)
        b = _play(fresh, queries, np.random.default_rng(3), np.random.default_rng(4), clicky)
    for (ra, wa), (rb, wb) in zip(a, b):
        assert ra == rb
        np.testing.assert_array_equal(wa, wb)


CHECKS = (check_paths_agree, check_alone_as_in_a_group, check_resume_after_a_kill, check_state_round_trips)


def _not_installed(check: Any) -> Any:
    """The resume check of a learner no installed distribution declares: skipped, saying
    why (its killed run is a child process, which sees only installed entry points)."""
    def run(name: str, tmp_path: Path) -> None:
        import pytest

        pytest.skip(f"{name}: the resume check kills a child process, which finds only installed learners "
                    "(install the learner's entry point to run it)")
    run.__name__, run.__doc__ = check.__name__, check.__doc__
    return run


@suite("learners")
def _cases(given: list[Any] | None) -> list[tuple[str, Any, Any]]:
    """Every online learner's examples under every check (or those of the config models
    given, each registered while its checks run); the resume check (a child process each)
    on each learner's first example."""
    from ltr_cli.core.schema import OnlineLearnerConfig
    from ltr_cli.testing import identified, while_registered

    out: list[tuple[str, Any, Any]] = []
    if given is None:
        for check in CHECKS:
            for name in examples():
                if check is not check_resume_after_a_kill or name.endswith("0"):
                    out.append((name, name, check))
        return out
    for _, cls in identified(given, lambda c: getattr(c, "__name__", str(c))):
        if not (isinstance(cls, type) and issubclass(cls, OnlineLearnerConfig)):
            raise TypeError(f"a learner subject is an OnlineLearnerConfig subclass, not {cls!r}")
        type_name = cls.type_name()
        for check in CHECKS:
            for i in range(len(cls.examples)):
                if check is check_resume_after_a_kill and i:
                    continue
                runs = _not_installed(check) if check is check_resume_after_a_kill else check
                out.append((f"{type_name}{i}", f"{type_name}{i}", while_registered("learners", type_name, cls, runs)))
    return out
