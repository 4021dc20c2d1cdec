"""What ``ltr clicks propensity LOG --plot DIR`` draws: the estimated examination propensities
per position, relative to position 1, with 95% intervals (estimate +- 1.96 standard errors,
the bootstrap's over sessions; a position without one has no interval), and, dashed, the true relative propensities when the log's click model examines by
position alone (PBM, ULTRA's table, trust bias), so an estimator can be seen to recover them.

Writes ``<log stem>_propensity.png`` / ``.pdf`` and ``.caption.txt`` inside the folder given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicks.base import CLICK_MODELS
from ltr_cli.reports.captions import Curve, write_caption
from ltr_cli.reports.figures import EXTS, check_outputs, make_folder, new_figure, pyplot, save, set_title
from ltr_cli.reports.plot_style import FigureOptions


def true_relative(model: dict[str, Any] | None, n: int) -> np.ndarray | None:
    """The true p_k / p_1 for positions 1..n of a log simulated by ``model`` (its
    ``describe()`` record, whose ``kind`` names a click model of the registry), or None when
    that model's examination is not a function of the position (its ``examination``)."""
    kind = model.get("kind") if isinstance(model, dict) else None
    if not isinstance(kind, str) or kind not in CLICK_MODELS.names() or kind not in CLICK_MODELS:
        return None
    examination = CLICK_MODELS[kind].examination
    if examination is None:
        return None
    curve = examination(n, float(model.get("eta", 1.0)))  # type: ignore[union-attr]
    return curve / curve[0]


def propensity_names(stem: str) -> list[str]:
    return [f"{stem}_propensity.{ext}" for ext in (*EXTS, "caption.txt")]


def plot_propensity(rec: dict[str, Any], model: dict[str, Any] | None, out_dir: Path, stem: str,
                    options: FigureOptions | None = None) -> list[Path]:
    """Draw ``rec`` (the record of :func:`ltr_cli.clicklog.propensity.estimate`: ``positions``,
    ``propensity``, ``stderr``, ``uncertainty``, ``method``); return the files written."""
    options = options or FigureOptions()
    check_outputs(out_dir, propensity_names(stem))
    positions = np.asarray(rec["positions"], dtype=float)
    est = np.array([np.nan if v is None else v for v in rec["propensity"]], dtype=float)
    err = np.array([np.nan if v is None else v for v in rec["stderr"]], dtype=float)
    truth = true_relative(model, len(positions))
    plt = pyplot()
    with plt.rc_context(options.rc()):
        fig, axes = new_figure(plt, options)
        ax = axes[0]
        ax.errorbar(positions, est, yerr=1.96 * np.nan_to_num(err), fmt="o-", ms=3, capsize=2,
                    label=f"estimate ({rec.get('method', '')})")
        if truth is not None:
            ax.plot(positions, truth, "k--", lw=1, label="truth")
        ax.set_xlabel("position")
        ax.set_ylabel("propensity relative to position 1")
        ax.set_xticks(positions)
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False)
        set_title(ax, f"{stem}: examination propensities", options)
        make_folder(out_dir)
        written = save(fig, out_dir, f"{stem}_propensity")
        plt.close(fig)
    curves = [Curve(f"estimate ({rec.get('method', '')})", [str(rec.get("uncertainty", "")), "bars: 95% intervals",
                                                             *map(str, rec.get("notes") or [])])]
    if truth is not None and model is not None:
        curves.append(Curve("truth", [f"the log's click model {model.get('model')}, eta {model.get('eta')}",
                                      ", ".join(f"{v:.3f}" for v in truth)]))
    heading = [f"Examination propensities estimated from {rec.get('log', stem)}, relative to position 1."]
    return written + [write_caption(out_dir, f"{stem}_propensity", heading, curves)]
