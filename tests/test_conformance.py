"""The online-learner conformance suite shipped in the package (:mod:`ltr_cli.testing.online`)
on every online learner of the registry, each with every example it declares; plugins
installed in this environment are checked too. Also: a checkpoint keeps extra state of
every kind with its type."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.protocols.checkpoint import Checkpointer, RunState
from ltr_cli.protocols.learner_state import LearnerState
from ltr_cli.core.round_log import column_kinds
from ltr_cli.testing import parametrize_with_checks


@parametrize_with_checks("learners")
def test_online_learner_conformance(subject, check, tmp_path):
    """The shipped suite (:mod:`ltr_cli.testing.online`) on every online learner. A learner
    that learns from clicks needs the click protocol (``protocol.feedback: clicks``): until
    the config schema has it (``ProtocolSpec.clicks``) its checks are skipped."""
    from ltr_cli.config.experiment import ProtocolSpec
    from ltr_cli.learners.examples import examples
    from ltr_cli.learners.registry import REGISTRY

    spec = examples().get(subject)
    clicky = spec is not None and getattr(REGISTRY[spec["type"]], "feedback_kind", "labels") == "clicks"
    if clicky and "clicks" not in ProtocolSpec.model_fields:
        pytest.skip("needs protocol.feedback: clicks")
    check(subject, tmp_path)


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
