"""What a run shows while it finds the best fixed weights in hindsight
(:mod:`ltr_cli.protocols.regret`): on a terminal a tqdm bar over the evaluations of the
cumulative surrogate F, with the certified relative gap and its target; elsewhere (a log)
a note once the search has taken ``FIRST_S`` seconds (evaluations so far, the time of one,
the gap, the time left and the most it can take), then one every ``EVERY_S`` seconds;
always, unless quiet, a closing line with the time taken.

The estimate of what is left extrapolates the gap's decrease so far (log-linear in the
evaluations) to the target, never beyond the evaluation cap; before a gap is known, or for
a non-convex surrogate (no gap), the cap is the estimate.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, TextIO

from ltr_cli import console
from ltr_cli.learners.online.hindsight import MAX_EVALUATIONS, RTOL

FIRST_S, EVERY_S = 2.0, 10.0


def evaluations_left(evaluations: int, first: tuple[int, float] | None, gap: float | None) -> int:
    """The evaluations still expected: the gap's decrease from ``first`` (evaluations, gap)
    to ``gap`` now, continued to ``RTOL``; the cap without a trend."""
    cap = MAX_EVALUATIONS - evaluations
    if first is None or gap is None or gap <= 0.0 or first[1] <= gap or evaluations <= first[0]:
        return max(cap, 0) if gap is None or gap > RTOL else 0
    if gap <= RTOL:
        return 0
    rate = (math.log(first[1]) - math.log(gap)) / (evaluations - first[0])  # per evaluation
    return max(0, min(cap, math.ceil((math.log(gap) - math.log(RTOL)) / rate - 1e-9)))


class HindsightProgress:
    """``progress(evaluations, relative gap)`` for :func:`~ltr_cli.learners.online.hindsight.
    best_in_hindsight`, shown as the module docstring says; ``what`` names the run."""

    def __init__(self, what: str, quiet: bool = False, stream: TextIO | None = None, bar: bool | None = None):
        self.what, self.quiet = what, quiet
        self._stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        self._start = time.perf_counter()
        self._first: tuple[int, float] | None = None
        self._said = 0.0
        self._since = (self._start, 0)
        self._evaluations = 0
        self._gap: float | None = None
        if not quiet and (self._stream.isatty() if bar is None else bar):
            from tqdm import tqdm

            self._bar = tqdm(total=MAX_EVALUATIONS, unit="evaluation", dynamic_ncols=True, leave=False,
                             file=self._stream, desc=f"{what}: best fixed weights in hindsight")

    def __call__(self, evaluations: int, gap: float | None) -> None:
        self._evaluations, self._gap = evaluations, gap
        if gap is not None and gap > 0.0 and self._first is None:
            self._first = (evaluations, gap)
        if self.quiet:
            return
        left = evaluations_left(evaluations, self._first, gap)
        shown = "no bound (not convex)" if gap is None else f"relative gap {gap:.1e} (target {RTOL:.0e})"
        if self._bar is not None:
            self._bar.total = evaluations + left if left else max(evaluations, 1)
            self._bar.set_postfix_str(shown, refresh=False)
            self._bar.update(evaluations - self._bar.n)  # drawn at tqdm's pace (mininterval), not every time
            return
        now = time.perf_counter()
        if evaluations == 1:  # the first evaluation carries one-off costs (imports, the pairs): timed apart
            self._since = (now, 1)
            return
        spent = now - self._start
        if spent >= (FIRST_S if not self._said else self._said + EVERY_S):
            each = (now - self._since[0]) / (evaluations - self._since[1])
            console.note(f"{self.what}: regret: {evaluations:,} evaluations ({1e3 * each:.1f} ms each), {shown}, "
                         f"{_seconds(spent)} so far, about {_seconds(each * left)} left "
                         f"(at most {_seconds(each * (MAX_EVALUATIONS - evaluations))})")
            self._said = spent

    def close(self, outcome: str = "") -> None:
        if self._bar is not None:
            self._bar.close()
        if self.quiet:
            return
        if self._evaluations:
            console.note(f"{self.what}: regret: best fixed weights found in "
                         f"{_seconds(time.perf_counter() - self._start)} ({self._evaluations:,} evaluations"
                         f"{f', {outcome}' if outcome else ''})")
        elif outcome:
            console.note(f"{self.what}: regret: best fixed weights: {outcome}")


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{s / 60:.1f} min"
