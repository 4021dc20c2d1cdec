"""Opt-in: every fitted click model against PyClick's own code on the same sessions.

Set ``LTR_PYCLICK`` to a PyClick checkout (the directory holding ``pyclick/``; PyClick is
not installed, tests/pyclick_runner.py imports it from there) and, if needed,
``LTR_PYCLICK_PYTHON`` to the Python that runs it. A log is simulated by ``ltr clicks
simulate-log`` (10 documents shown, as PyClick's perplexity counts 10 ranks), split by
``ltr clicks fit``'s seeded split, and both fit the training sessions with the same EM
iterations from the same start: every parameter, the log-likelihood and the perplexity
(overall and per rank, on both parts) agree to 1e-6.

Known differences, handled as such. PyClick's ``DBN`` and ``CCM`` E-steps have three faults
that ours does not copy: ``_get_tail_clicks`` reads the parameters of the wrong documents
when it starts below rank 1 (``session_params[rank]`` for ``session_params[start_rank +
rank]``); ``_get_continuation_factor`` takes P(C_r = 0 | E_r = 0) as 1 - alpha instead of
1; and a session without clicks has its last click at its length, so no continuation of
it may end and every unclicked document of it counts as examined. The chain models are
compared with a checkout where those three are fixed (and a state of probability 0 is
skipped rather than taken to math.log); set ``LTR_PYCLICK_PATCHED=1`` to say the checkout
has the fixes, otherwise they are skipped. PyClick's cascade (``CM``) log-likelihood takes
the joint P(C_1..C_r) for the conditional above the first click and 10^-6 for every
position below it, where ours takes P(C_r | the clicks above), so for the cascade only the
parameters and the perplexity are compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ltr_cli.clicklog.fit.em import measures
from ltr_cli.clicklog.fit.grid import build_grid, split
from ltr_cli.clicklog.fit.record import fit_model
from ltr_cli.clicklog.logfile import read_log

PYCLICK = os.environ.get("LTR_PYCLICK")
PYTHON = os.environ.get("LTR_PYCLICK_PYTHON", sys.executable)
PATCHED = os.environ.get("LTR_PYCLICK_PATCHED") == "1"
RUNNER = Path(__file__).with_name("pyclick_runner.py")
TOLERANCE = 1e-6
# (model, sessions, EM iterations): PyClick's DBN and CCM E-steps are slow pure Python
CASES = [("pbm", 600, 20), ("ubm", 600, 20), ("cascade", 600, 1), ("dcm", 600, 1), ("sdbn", 600, 1),
         ("dbn", 120, 5), ("ccm", 120, 5)]

pytestmark = pytest.mark.skipif(
    not PYCLICK or not (Path(PYCLICK) / "pyclick" / "click_models" / "DBN.py").is_file(),
    reason="set LTR_PYCLICK to a PyClick checkout (holding pyclick/click_models/) to compare with PyClick")


def _log(tmp_path: Path, sessions: int) -> Path:
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    rng = np.random.default_rng(2)
    data = tmp_path / "train.txt"
    data.write_text("".join(f"{int(rng.integers(0, 5))} qid:{q} 1:{rng.random():.3f}\n"
                            for q in range(1, 7) for _ in range(12)))
    log = tmp_path / "log.parquet"
    res = CliRunner().invoke(app, ["clicks", "simulate-log", str(data), "--out", str(log), "--model", "dbn",
                                   "--sessions", str(sessions), "--shown", "10", "--seed", "4"])
    assert res.exit_code == 0, res.output
    return log


def _rows(grid, pairs) -> list:
    return [[pairs.qids[int(pairs.query[p[0]])], [int(pairs.doc[j]) for j in p], [int(c) for c in grid.click[i]]]
            for i, p in enumerate(grid.pair)]


def _differences(name: str, params: dict, theirs: dict, pairs) -> dict[str, float]:
    """Max |ours - PyClick's| per parameter."""
    at = {(pairs.qids[int(q)], int(d)): i for i, (q, d) in enumerate(zip(pairs.query, pairs.doc))}
    scalars = {"cont": "cont", "cont_noclick": "tau1", "cont_click_nonrel": "tau2", "cont_click_rel": "tau3"}
    out = {}
    for key, value in theirs.items():
        if key in ("attr", "sat"):
            out[key] = max(abs(params[key][at[(q, int(d))]] - v) for q, d, v in value)
        elif key == "exam" and name == "ubm":  # PyClick's "no click above" is column M - 1 = 9
            g, k = params["exam"], params["exam"].shape[0]
            out[key] = max(max(abs(g[r, k] - value[r][k - 1]) for r in range(k)),
                           max((abs(g[r, j] - value[r][j]) for r in range(k) for j in range(r)), default=0.0))
        elif isinstance(value, list):
            out[key] = float(np.max(np.abs(np.asarray(value) - params[key])))
        else:
            out[key] = abs(value - float(params[scalars[key]][0]))
    return out


@pytest.mark.parametrize("name,sessions,iterations", CASES)
def test_the_fit_equals_pyclicks(tmp_path, name, sessions, iterations):
    if name in ("dbn", "ccm") and not PATCHED:
        pytest.skip("PyClick's DBN/CCM E-steps differ from the exact posterior (module docstring); set "
                    "LTR_PYCLICK_PATCHED=1 with a checkout that fixes them")
    log = read_log(_log(tmp_path, sessions))
    grid, pairs = build_grid(log.session, log.query, log.doc, log.position, log.click, log.qids)
    train, held = split(grid, 0.25, 0)
    assert held is not None
    model = fit_model(name)
    params = model.fit(train, pairs, iterations)
    job = {"model": name, "iterations": iterations, "train": _rows(train, pairs), "test": _rows(held, pairs)}
    res = subprocess.run([PYTHON, str(RUNNER), str(PYCLICK)], input=json.dumps(job), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    theirs = json.loads(res.stdout)
    diffs = _differences(name, params, theirs["params"], pairs)
    for part, sessions_of in (("train", train), ("test", held)):
        ours = measures(model, params, sessions_of)
        if name != "cascade":
            diffs[f"{part} log-likelihood"] = abs(ours["log_likelihood"] - theirs[part]["log_likelihood"])
        diffs[f"{part} perplexity"] = abs(ours["perplexity"] - theirs[part]["perplexity"])
        diffs[f"{part} perplexity per rank"] = float(np.max(np.abs(np.asarray(ours["perplexity_per_rank"])
                                                                   - theirs[part]["perplexity_per_rank"])))
    print(name, json.dumps({k: f"{v:.1e}" for k, v in diffs.items()}))
    assert {k: v for k, v in diffs.items() if not v <= TOLERANCE} == {}
