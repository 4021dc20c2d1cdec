"""What a batch (k-fold) run shows while it fits: a progress bar over grid points x folds
whose text names the current fit, its iteration and relative gap; one line per finished
fit (unless quiet); one warning line per fit that stopped at its iteration cap (always)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ltr_cli import console


class CVHooks:
    """Progress of a CV run. ``total`` fits; ``log`` receives the per-fit lines (None:
    quiet); ``warn`` the warnings (default: stderr); ``learner`` the learner's name."""

    def __init__(self, total: int = 0, log: Callable[[str], None] | None = None,
                 warn: Callable[[str], None] | None = None, bar: bool = False, learner: str | None = None):
        self.learner = learner  # its name in the config, for warnings that name a key
        self._log = log
        self._warn = warn or console.warn
        self._bar: Any = None
        self._what = ""
        if bar and total and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="fit", dynamic_ncols=True, leave=False)

    def warn(self, line: str) -> None:
        self._warn(line)

    def start_fit(self, fold: int | None, params: dict[str, Any]) -> None:
        self._what = f"fold {fold} " + " ".join(f"{k}={v:g}" for k, v in params.items())
        if self._bar is not None:
            self._bar.set_description_str(self._what, refresh=False)

    def fit_progress(self, iteration: int, relative_gap: float) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"it {iteration} gap {relative_gap:.1e}")

    def end_fit(self, line: str, warning: str | None) -> None:
        if self._bar is not None:
            self._bar.update(1)
        if warning:
            self._warn(f"{self._what}: {warning}")
        self._say(line)

    def _say(self, line: str) -> None:
        if self._log is None:
            return
        if self._bar is not None:
            self._bar.clear()
        self._log(line)
        if self._bar is not None:
            self._bar.refresh()

    def skip_fold(self, fold: int | None, fits: int) -> None:
        """A fold restored from the checkpoint."""
        if self._bar is not None:
            self._bar.update(fits)
        self._say(f"fold {fold}: restored from the fold checkpoint")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
