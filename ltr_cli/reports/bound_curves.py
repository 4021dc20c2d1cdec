"""``ltr theory bounds``: Figure 1 of the direct-optimisation paper drawn from
:func:`ltr_cli.learners.batch.type_two_bounds.curves` (PNG and PDF, TrueType fonts),
written through :func:`ltr_cli.outputs.write_file` like every figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.reports.figures import EXTS as _EXTS, check_outputs, save as _save
from ltr_cli.reports.plot_style import TRUETYPE

_STYLE = {"loss": ("black", "-", "loss (6): gap x I[x <= 0]"), "exponential": ("tab:blue", "--", "exponential"),
          "logistic": ("tab:green", "-.", "logistic"), "hinge": ("tab:red", ":", "hinge, Eq. (7)"),
          "svmmap": ("tab:purple", "-", "SVMmap, Eq. (9): [gap - x]+")}


def plot_bounds(values: dict[str, np.ndarray], gap: float, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stem = "type_two_bounds"
    check_outputs(out_dir, [f"{stem}.{ext}" for ext in _EXTS])
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{out_dir}: cannot create the plot folder ({exc.strerror})") from None
    with plt.rc_context({"pdf.fonttype": TRUETYPE, "ps.fonttype": TRUETYPE}):
        fig, ax = plt.subplots(figsize=(5.0, 3.6))
        x = values["x"]
        for name, (color, style, label) in _STYLE.items():
            ax.plot(x, values[name], color=color, ls=style, lw=1.6, label=label)
        ax.set_xlabel("F(q, d, pi*) - F(q, d, pi)")
        ax.set_ylabel("loss")
        ax.set_ylim(0, max(2.0, gap * 2.5))
        ax.set_title(f"Type two bounds (E(pi*) - E(pi) = {gap:g})", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, frameon=False)
        fig.tight_layout()
        try:
            return _save(fig, out_dir, stem)
        finally:
            plt.close(fig)
