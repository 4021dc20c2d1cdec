"""Issue 31, item 5: passes, shuffles and plans stop at max_rounds, and a plan larger than a
run can hold is refused before anything is allocated."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.data.sources import StreamStats, open_source, plan_rounds, stream_rounds
from ltr_cli.errors import LtrError
from tests.test_blocks import _data

runner = CliRunner()


def _source(tmp_path):
    files = [_data(tmp_path / "a.txt", seed=4), _data(tmp_path / "b.txt", queries=17, seed=5)]
    spec = SimpleNamespace(kind="files", files=files, features=12, index_base=1, qid="auto", group_files=None,
                           null_value=None, split_qids="error", storage="float64", normalize="none", name=None,
                           limits=lambda: {})
    return open_source(spec, 0, tmp_path / "cache")


@pytest.mark.parametrize("shuffle,keep,drop", [(False, 1.0, False), (True, 0.5, True)])
def test_a_hundred_million_passes_plan_only_max_rounds(tmp_path, shuffle, keep, drop):
    """Once every pass was planned up front: MemoryError or a segfault."""
    source = _source(tmp_path)
    found = plan_rounds(source, 100_000_000, shuffle, keep, np.random.default_rng(9), drop, StreamStats(), 100)
    assert found is not None
    segments, units = found
    assert sum(seg.order.shape[0] for seg in segments) == 100 and len(segments) < 20
    full = plan_rounds(source, 6, shuffle, keep, np.random.default_rng(9), drop, StreamStats())
    assert full is not None
    flat = [(s.pass_no, s.unit, int(q)) for s in full[0] for q in s.order]
    assert [(s.pass_no, s.unit, int(q)) for s in segments for q in s.order] == flat[:100]  # the same rounds
    streamed = list(stream_rounds(source, 100_000_000, shuffle, keep, np.random.default_rng(9), drop,
                                  StreamStats(), 100))
    assert [(p, q.qid) for p, q in streamed] == [(s.pass_no, units[s.unit].qids[q]) for s in segments
                                                 for q in s.order]


def test_drop_last_counts_are_kept_when_the_plan_stops_early(tmp_path):
    source = _source(tmp_path)
    cut, whole = StreamStats(), StreamStats()
    plan_rounds(source, 5, False, 1.0, np.random.default_rng(1), True, cut, 50)
    plan_rounds(source, 5, False, 1.0, np.random.default_rng(1), True, whole)
    assert cut.dropped_last == whole.dropped_last == 10


def test_a_plan_over_the_bound_is_one_error_before_allocating(tmp_path):
    source = _source(tmp_path)
    with pytest.raises(LtrError, match=r"protocol\.passes: 100000000 passes over .* set protocol\.max_rounds"):
        plan_rounds(source, 100_000_000, False, 1.0, np.random.default_rng(0))


CONFIG = """experiment: bound
dataset: {{kind: separable, queries: 30}}
protocol: {{passes: 100000000{extra}}}
learners: {{slam: {{type: slam-perceptron}}}}
"""


def test_ltr_run_with_a_hundred_million_passes_and_max_rounds(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG.format(extra=", max_rounds: 1000"))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.output
    (summary,) = (tmp_path / "out").rglob("summary.json")
    assert json.loads(summary.read_text())["rounds"] == 1000
