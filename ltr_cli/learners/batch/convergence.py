"""How a batch fit ended: the record every iterative solver returns and ``models.json``
keeps for each fit (iterations, final gap, whether the iteration cap stopped it, time).

``gap`` is each solver's certificate of sub-optimality, an upper bound on
``objective - optimum``: BMRM's duality gap (best objective minus the cutting-plane
lower bound), Newton's ``||grad||^2 / (2 lambda)`` for a lambda-strongly convex
objective. A fit *converged* when ``gap <= tolerance * |objective|`` (relative, so one
default works at every data scale). PermuRank's record is of its rounds: it converged when
its working sets stopped changing (``gap`` is then its last QP's), and ``details`` keeps
the sizes of its sets.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from collections.abc import Callable
from typing import Any


@dataclass
class Convergence:
    solver: str
    iterations: int
    objective: float
    gap: float
    tolerance: float
    converged: bool
    at_cap: bool
    seconds: float
    details: dict[str, Any] | None = None  # solver-specific figures (PermuRank's working sets)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if out["details"] is None:  # records of the other solvers keep their keys
            del out["details"]
        for key, kind in (("iterations", int), ("objective", float), ("gap", float), ("tolerance", float),
                          ("converged", bool), ("at_cap", bool)):
            out[key] = kind(out[key])
        out["seconds"] = round(float(self.seconds), 4)
        for key in ("objective", "gap"):  # standard JSON: no Infinity / NaN
            if out[key] != out[key] or out[key] in (float("inf"), float("-inf")):
                out[key] = None
        return out

    def warning(self, learner: str | None = None) -> str | None:
        """One line when the fit stopped at its iteration cap without converging; it names
        the config key of the cap (``learners.<learner>.rounds`` when ``learner`` is given)."""
        if self.converged or not self.at_cap:
            return None
        rel = float("inf") if self.gap is None or self.objective is None else \
            self.gap / max(abs(self.objective), 1e-300)
        cap_key = (self.details or {}).get("cap_key")
        if cap_key and rel <= self.tolerance:  # PermuRank: each QP converged, its working sets did not settle
            key = f"learners.{learner}.{cap_key}" if learner else f"the learner's {cap_key}"
            example = f" (e.g. --set {key}={2 * self.iterations})" if learner else ""
            return (f"{self.solver} stopped at its cap of {self.iterations} rounds while its working sets "
                    f"were still changing; raise {key}{example}")
        return (f"{self.solver} stopped at its cap of {self.iterations} iterations before converging "
                f"(relative gap {rel:.2g} > tolerance {self.tolerance:g}); raise its cap (max_iter, or "
                "rounds for PermuRank) or eps, or normalise the features (dataset.normalize)")


def converged(gap: float, objective: float, tolerance: float) -> bool:
    """The relative stopping rule shared by the batch solvers."""
    return gap <= tolerance * abs(objective)


@dataclass
class FitContext:
    """What the CV protocol hands a fit besides data and hyper-parameters: ``warm``, the
    model of the previous grid point's fit on the same fold (a starting point, its weights
    ``w``, for the solvers whose optimum does not depend on it; PermuRank ignores it; for the
    round-based learners, AdaRank, RankBoost and LambdaMART, whose first k rounds do not
    depend on how many follow, the fit it goes on from when only the number of rounds grew),
    ``progress(iteration, relative gap)``, and ``gains``, the gain of each label under the
    run's metric convention (``cv.convention``; None: the paper's ``2^r - 1``), and
    ``clicks``, the fold's click log (:class:`ltr_cli.learners.batch.click_data.ClickData`) when the
    learner trains on clicks instead of the labels. For a learner that checks itself on vali
    while it trains (the neural learners): ``vali``, the fold's vali queries ``[(X, y), ...]``
    (normalised as ``train``) and ``vali_ids`` their query ids, ``select`` the selection
    :class:`~ltr_cli.measures.conventions.Measure` and ``conv`` the run's convention, ``seed``
    the experiment's seed, ``fold`` the fold number, and ``store`` where the fit keeps its
    checkpoint between iterations (``load() -> bytes | None``, ``save(bytes)``; None: none), and
    ``vali_clicks``, under ``clicks.select: clicks``, the vali queries' click log a fit that
    checks itself on vali scores its iterations on (by the click estimate of DCG@10)."""

    warm: Any = None
    progress: Callable[[int, float], None] | None = None
    gains: Callable[[Any], Any] | None = None
    clicks: Any = None
    vali: Any = None
    vali_ids: list[str] | None = None
    select: Any = None
    conv: Any = None
    seed: int = 0
    fold: int | None = None
    store: Any = None
    vali_clicks: Any = None


def warm_weights(context: FitContext | None) -> Any:
    """The previous fit's linear weights, or None."""
    return None if context is None else getattr(context.warm, "w", None)


def progress_of(context: FitContext | None) -> Callable[[int, float], None] | None:
    return None if context is None else context.progress
