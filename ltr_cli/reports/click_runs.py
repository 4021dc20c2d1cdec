"""Runs that learned from simulated clicks (``protocol.feedback: clicks``): their click model,
as the run's config names it, and the two numbers the click literature reports per run, read
from its summary: the final offline value of a metric (the last held-out evaluation,
``heldout.last.heldout_<metric>``) and the discounted cumulative online value
(``metrics.<metric>.discounted_cumulative``, under the run's ``gamma``). Which online runs'
values may be compared (:func:`online_protocol`, :func:`protocol_difference`): those of one
click model (name, stop rule, shown documents, grades, eta) and one horizon (rounds); a
different ``gamma`` changes only the discounted sum."""

from __future__ import annotations

import math
from typing import Any

from ltr_cli.names import setting_value
from ltr_cli.results.folders import Run

HELDOUT = "heldout_"


def clicks_spec(run: Run) -> dict[str, Any] | None:
    """The run's ``protocol.clicks`` block, or None for a run without click feedback."""
    protocol = run.config.get("protocol") if isinstance(run.config, dict) else None
    if not isinstance(protocol, dict) or protocol.get("feedback") != "clicks":
        return None
    clicks = protocol.get("clicks")
    return clicks if isinstance(clicks, dict) else None


def is_click_run(run: Run) -> bool:
    return clicks_spec(run) is not None


def click_model(run: Run) -> str | None:
    """The click model's name (a custom table in YAML's flow style), or None."""
    clicks = clicks_spec(run)
    if clicks is None:
        return None
    model = clicks.get("model")
    return model if isinstance(model, str) else setting_value(model)


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def final_heldout(run: Run, metric: str) -> float | None:
    """The last held-out value of ``metric`` (``heldout.last.heldout_<metric>``), or None."""
    heldout = run.summary.get("heldout")
    last = heldout.get("last") if isinstance(heldout, dict) else None
    return _number(last.get(f"{HELDOUT}{metric}")) if isinstance(last, dict) else None


def discounted_cumulative(run: Run, metric: str) -> float | None:
    """The discounted cumulative online value of ``metric`` (a click run's summary), or None."""
    stats = (run.summary.get("metrics") or {}).get(metric)
    return _number(stats.get("discounted_cumulative")) if isinstance(stats, dict) else None


def gamma(run: Run) -> float | None:
    """The discount of a click run's ``discounted_cumulative`` (its config's
    ``protocol.clicks.gamma``), or None."""
    clicks = clicks_spec(run)
    return _number(clicks.get("gamma")) if clicks is not None else None


#: the settings of ``protocol.clicks`` that make up the click model the runs learned from
CLICK_MODEL_KEYS = ("model", "stop", "shown", "grades", "eta")


def online_protocol(run: Run, discounted: bool = False) -> dict[str, Any]:
    """What an online run's values depend on besides its learner and data: its horizon
    (``rounds``, as its summary records it) and, for a click run, the click model
    (:data:`CLICK_MODEL_KEYS`) and its discount: ``discount`` when the values compared are
    the discounted cumulative ones (``discounted``), else ``gamma`` (a value that does not
    depend on it)."""
    out: dict[str, Any] = {"rounds": run.summary.get("rounds")}
    clicks = clicks_spec(run)
    if clicks is not None:
        out["click model"] = {key: clicks.get(key) for key in CLICK_MODEL_KEYS}
        out["discount" if discounted else "gamma"] = clicks.get("gamma")
    return out


def _said(value: Any) -> str:
    return "none" if value is None else setting_value(value)


def _difference(a: Any, b: Any) -> str:
    """``a`` against ``b``; for two click models, only the settings that differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return ", ".join(f"{k} {_said(a.get(k))} against {_said(b.get(k))}" for k in dict.fromkeys([*a, *b])
                         if a.get(k) != b.get(k))
    return f"{_said(a)} against {_said(b)}"


def protocol_difference(a: str, a_protocol: dict[str, Any] | None, b: str,
                        b_protocol: dict[str, Any] | None) -> tuple[str, str]:
    """(why learners ``a`` and ``b`` must not be paired, a note when they may be) from their
    :func:`online_protocol` (None: the learner's own runs differ in it). Another click model,
    another horizon, or another ``discount`` (discounted sums compared) is a refusal: the
    values answer another question. Another ``gamma`` is a note: only the discounted sum
    depends on it."""
    if a_protocol is None or b_protocol is None:
        who = a if a_protocol is None else b
        return (f"not paired: the runs of {who} differ among themselves in their click model or their number "
                "of rounds; no test"), ""
    for key, why in (("click model", "learned from other users' clicks"), ("rounds", "ran for other horizons"),
                     ("discount", "discount their cumulative values by other gammas")):
        if a_protocol.get(key) != b_protocol.get(key):
            return (f"not paired: {a} and {b} {why} ({key}: {_difference(a_protocol.get(key), b_protocol.get(key))})"
                    "; no test"), ""
    if a_protocol.get("gamma") != b_protocol.get("gamma"):
        return "", (f"gamma differs ({_difference(a_protocol.get('gamma'), b_protocol.get('gamma'))}): only the "
                    "discounted cumulative value depends on it, not the values compared")
    return "", ""
