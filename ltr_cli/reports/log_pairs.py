"""``ltr compare --logs``: learners that train on simulated click logs, compared condition by
condition over independent logs, with intervals that count both the test queries and the
log drawn.

A run's **condition** is its dataset (the config's ``dataset:`` block) and its learner's
``clicks.generate`` settings without ``seed`` and ``estimate_sessions`` (the size of the
shuffled log an estimated propensity comes from: the estimator's setting, not the log's);
its **log** is ``clicks.generate.seed``
(``configs/counterfactual_conditions.yaml`` sweeps it). A learner whose runs differ in a
setting of their own (``click_documents``, ``target_objective``, a grid) is compared as one
learner per value, named ``NAME (key value, ...)``. Two learners are compared within a
condition on the logs both were run on, and on each log their test queries are paired:
``d[r, q] = a[r, q] - b[r, q]`` for R logs and Q test queries (pooled over the folds; a
query without a value under the convention, in any log, is left out).

The mean difference ``D = mean over r, q of d`` has the variance of a crossed two-way
random-effects model, ``d[r, q] = mu + log_r + query_q + e[r, q]``, estimated from the
two-way table's mean squares (``MS_log = Q var_r(mean_q d)``, ``MS_query = R
var_q(mean_r d)``, ``MS_e`` the residual mean square)::

    Var(D) = sigma_log^2 / R + sigma_query^2 / Q + sigma_e^2 / (R Q)
           = (max(MS_log, MS_e) + max(MS_query, MS_e) - MS_e) / (R Q)

(a variance component estimated below 0 counts 0). The t statistic ``D / sqrt(Var(D))``
has Satterthwaite's degrees of freedom; the 95% interval and the two-sided p follow from
it, p adjusted over the table's comparisons (Holm by default). With one log the log-to-log
variation cannot be estimated: the row says so and counts the test queries only (the
paired t-test over the queries).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError
from ltr_cli.reports.significance import ADJUSTMENTS, LEVEL, adjust
from ltr_cli.results.folders import Run

BATCH = "batch-cv"


@dataclass(frozen=True)
class LogPair:
    """One comparison: learners ``a`` and ``b`` in one condition over ``logs`` logs and
    ``queries`` test queries; the mean difference a - b, its interval and p (None, with
    ``note``, when there is no test)."""

    condition: str
    a: str
    b: str
    logs: int
    queries: int
    mean_difference: float | None
    low: float | None
    high: float | None
    df: float | None
    p: float | None
    p_adjusted: float | None = None
    note: str = ""


def crossed_test(d: np.ndarray, level: float = LEVEL) -> tuple[float, float | None, float | None, float | None, float | None, str]:
    """(mean, low, high, df, p, note) of the R x Q differences ``d`` (finite) under the
    crossed random-effects model of the module; one log: the paired t-test over the queries."""
    from scipy import stats

    R, Q = d.shape
    mean = float(d.mean())
    if Q < 2:
        return mean, None, None, None, None, f"{Q} test query: a test needs at least 2"
    if R == 1:
        sd = float(d[0].std(ddof=1))
        if sd == 0:
            return mean, mean, mean, None, None, "every difference is the same: no test"
        se, df = sd / math.sqrt(Q), float(Q - 1)
        note = "one log: the interval counts the test queries only"
    else:
        by_log, by_query = d.mean(axis=1), d.mean(axis=0)
        ms_log = Q * float(by_log.var(ddof=1))
        ms_query = R * float(by_query.var(ddof=1))
        resid = d - by_log[:, None] - by_query[None, :] + mean
        ms_e = float((resid ** 2).sum()) / ((R - 1) * (Q - 1))
        parts = [(max(ms_log, ms_e), R - 1), (max(ms_query, ms_e), Q - 1), (-ms_e, (R - 1) * (Q - 1))]
        total = sum(m for m, _ in parts)
        if total <= 0:
            return mean, mean, mean, None, None, "every difference is the same: no test"
        se = math.sqrt(total / (R * Q))
        df = total ** 2 / sum(m ** 2 / f for m, f in parts)
        note = ""
    t = mean / se
    half = float(stats.t.ppf((1 + level) / 2, df)) * se
    p = float(2 * stats.t.sf(abs(t), df))
    return mean, mean - half, mean + half, df, p, note


def _generate(run: Run) -> dict[str, Any] | None:
    learner = str(run.summary.get("learner"))
    spec = (run.config.get("learners") or {}).get(learner) or {}
    clicks = spec.get("clicks") if isinstance(spec, dict) else None
    generate = clicks.get("generate") if isinstance(clicks, dict) else None
    return generate if isinstance(generate, dict) else None


#: ``clicks.generate`` keys that do not change the log a learner trains on
NOT_THE_LOG = ("seed", "estimate_sessions")


def condition_of(run: Run) -> tuple[str, dict[str, Any], int] | None:
    """(the run's condition as a key, its settings to name it by, its log) for a batch run
    trained on a simulated log, else None."""
    generate = _generate(run)
    if run.summary.get("protocol") != BATCH or generate is None:
        return None
    dataset = run.config.get("dataset") or {}
    settings = {"data": dataset.get("root") or dataset.get("files") or dataset.get("kind"),
                **{k: v for k, v in generate.items() if k not in NOT_THE_LOG}}
    key = json.dumps([dataset, settings], sort_keys=True, default=str)
    return key, settings, int(generate.get("seed") or 0)


def _labels(named: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each condition's name: the settings that differ between the conditions (all that are
    set when there is one condition)."""
    keys = sorted({k for s in named.values() for k in s})
    varying = [k for k in keys if len({_short(s.get(k)) for s in named.values()}) > 1] or \
        [k for k in keys if any(s.get(k) is not None for s in named.values())]  # one condition: what is set
    roots = {_short(s.get("data")) for s in named.values()}
    names = {r: PurePath(r).name or r for r in roots}
    if len(set(names.values())) < len(roots):  # two folders of one name: their whole paths
        names = {r: r for r in roots}

    def said(k: str, v: Any) -> str:
        return names[_short(v)] if k == "data" else f"{k} {_short(v)}"

    return {c: ", ".join(said(k, s.get(k)) for k in varying) for c, s in named.items()}


def _short(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _query_table(run: Run, metric: str) -> dict[Any, float]:
    """The run's finite test values of ``metric``: (fold, qid, occurrence) -> value, as
    ``ltr compare`` pairs them."""
    from ltr_cli.reports.compare import _query_values

    found = _query_values([run], metric, True, {})
    assert found is not None  # strict: a run without per-query values is an error there
    return found


def _flat(spec: Any, head: str = "") -> dict[str, str]:
    """A learner's settings as dotted keys -> their values (JSON)."""
    if not isinstance(spec, dict):
        return {head: _short(spec)}
    out: dict[str, str] = {}
    for k, v in spec.items():
        out.update(_flat(v, f"{head}.{k}" if head else str(k)))
    return out


def _own_settings(run: Run) -> dict[str, str]:
    """The run's learner settings that are not its log's (``clicks.generate``) nor its label."""
    learner = str(run.summary.get("learner"))
    spec = (run.config.get("learners") or {}).get(learner) or {}
    flat = _flat(spec) if isinstance(spec, dict) else {}
    return {k: v for k, v in flat.items() if not k.startswith("clicks.generate.") and k != "label"}


def _variants(found: list[tuple[Run, str, int]]) -> list[str]:
    """Each run's learner as --logs names it: the learner's name, and when its runs differ in
    settings of their own (not their log's: ``click_documents``, a grid, ...), those settings."""
    own = [_own_settings(run) for run, _, _ in found]
    names = [str(run.summary.get("learner")) for run, _, _ in found]
    labels = list(names)
    for name in set(names):
        mine = [i for i, n in enumerate(names) if n == name]
        keys = sorted({k for i in mine for k in own[i]})
        varying = [k for k in keys if len({own[i].get(k) for i in mine}) > 1]
        if varying:
            for i in mine:
                shown = ", ".join(f"{k} {own[i].get(k, '-')}" for k in varying)
                labels[i] = f"{name} ({shown})"
    return labels


def _groups(runs: list[Run]) -> tuple[dict[str, dict[str, dict[int, Run]]], dict[str, str]]:
    """condition -> learner -> log -> its run (one run per learner and log; a second is an
    error), and each condition's name. A learner whose runs differ in settings of their own
    is one learner per setting, named by it (:func:`_variants`)."""
    out: dict[str, dict[str, dict[int, Run]]] = {}
    named: dict[str, dict[str, Any]] = {}
    found: list[tuple[Run, str, int]] = []
    for run in runs:
        got = condition_of(run)
        if got is None:
            continue
        condition, settings, log = got
        named[condition] = settings
        found.append((run, condition, log))
    for (run, condition, log), learner in zip(found, _variants(found)):
        per_log = out.setdefault(condition, {}).setdefault(learner, {})
        if log in per_log:
            raise LtrError(f"--logs: {learner} has two runs of log {log} in one condition ({per_log[log].path.name}, "
                           f"{run.path.name}); give one results folder per experiment, or --latest")
        per_log[log] = run
    return out, _labels(named)


def _pairs(learners: list[str]) -> Iterator[tuple[str, str]]:
    for i, a in enumerate(learners):
        for b in learners[i + 1:]:
            yield a, b


def compare_logs(runs: list[Run], metric: str, adjustment: str = "holm") -> list[LogPair]:
    """Every pair of learners within each condition (see the module), p adjusted over all of them."""
    if adjustment not in ADJUSTMENTS:
        raise LtrError(f"--adjust {adjustment!r}: one of {', '.join(ADJUSTMENTS)}")
    groups, labels = _groups(runs)
    if not groups:
        raise LtrError("--logs compares learners trained on simulated click logs (clicks.generate), condition by "
                       "condition; these results have none")
    rows: list[LogPair] = []
    for condition in sorted(groups, key=lambda c: labels[c]):
        learners = groups[condition]
        for a, b in _pairs(sorted(learners)):
            logs = sorted(set(learners[a]) & set(learners[b]))
            label = labels[condition]
            if not logs:
                rows.append(LogPair(label, a, b, 0, 0, None, None, None, None, None, note="no log in common"))
                continue
            tables = [(_query_table(learners[a][r], metric), _query_table(learners[b][r], metric)) for r in logs]
            keys = sorted(set.intersection(*(set(ta) & set(tb) for ta, tb in tables)), key=str)
            d = np.array([[ta[k] - tb[k] for k in keys] for ta, tb in tables], dtype=np.float64).reshape(len(logs), -1)
            if d.shape[1] == 0:
                rows.append(LogPair(label, a, b, len(logs), 0, None, None, None, None, None,
                                    note="no test query with a value in every log"))
                continue
            mean, low, high, df, p, note = crossed_test(d)
            rows.append(LogPair(label, a, b, len(logs), int(d.shape[1]), mean, low, high, df, p, note=note))
    adjusted = adjust([r.p for r in rows], adjustment)
    return [LogPair(**{**r.__dict__, "p_adjusted": q}) for r, q in zip(rows, adjusted)]


def render_logs(rows: list[LogPair], metric: str, adjustment: str, as_json: bool = False) -> str:
    """The comparisons as text lines (or JSON)."""
    if as_json:
        return json.dumps({"metric": metric, "adjustment": adjustment, "level": LEVEL,
                           "pairs": [r.__dict__ for r in rows]}, indent=2, allow_nan=False) + "\n"
    lines = [f"{metric}: a - b per condition, over the logs both learners ran on and their test queries; "
             f"{round(LEVEL * 100)}% intervals and p count the test queries and the log drawn (crossed random "
             f"effects), p adjusted by {adjustment}"]
    for r in rows:
        if r.mean_difference is None:
            lines.append(f"{r.condition} | {r.a} - {r.b}: no test ({r.note})")
            continue
        interval = "" if r.low is None else f" [{r.low:+.4f}, {r.high:+.4f}]"
        p = "" if r.p_adjusted is None else f", p_{adjustment} {r.p_adjusted:.2g}"
        lines.append(f"{r.condition} | {r.a} - {r.b}: {r.mean_difference:+.4f}{interval}{p} "
                     f"({r.logs} log{'s' * (r.logs != 1)}, {r.queries} queries)" + (f"; {r.note}" if r.note else ""))
    return "\n".join(lines) + "\n"
