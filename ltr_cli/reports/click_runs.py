"""Runs that learned from simulated clicks (``protocol.feedback: clicks``): their click model,
as the run's config names it, and the two numbers the click literature reports per run, read
from its summary: the final offline value of a metric (the last held-out evaluation,
``heldout.last.heldout_<metric>``) and the discounted cumulative online value
(``metrics.<metric>.discounted_cumulative``)."""

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
