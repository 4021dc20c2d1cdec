"""``ltr clicks fit``: a click model fitted on a log's training sessions, with its
log-likelihood and perplexity on them and on the held-out ones, as one JSON-ready record."""

from __future__ import annotations

from typing import Any

from ltr_cli.clicklog.fit.cascade import DCM, SDBN, Cascade
from ltr_cli.clicklog.fit.chain import CCM, DBN
from ltr_cli.clicklog.fit.em import ITERATIONS, FitModel, measures
from ltr_cli.clicklog.fit.grid import build_grid, split
from ltr_cli.clicklog.fit.position import PBM, UBM
from ltr_cli.errors import LtrError

#: the models ``ltr clicks fit`` fits, by name
FIT_MODELS: dict[str, type[FitModel]] = {m.name: m for m in (PBM, Cascade, UBM, DCM, CCM, DBN, SDBN)}
#: the most EM iterations one command runs
MAX_ITERATIONS = 10_000


def fit_model(name: str) -> FitModel:
    """The fitter named ``name``; a one-line error naming the models otherwise."""
    if name not in FIT_MODELS:
        raise LtrError(f"--model {name!r}: the click models to fit are {', '.join(FIT_MODELS)}")
    return FIT_MODELS[name]()


def fit_record(log: Any, name: str, heldout: float, seed: int, iterations: int = ITERATIONS,
               bootstrap: int = 0) -> dict[str, Any]:
    """The record of ``name`` fitted on ``log`` (a :class:`~ltr_cli.clicklog.logfile.ClickLog`):
    the split (``heldout`` share of the sessions, permutation seeded by ``seed``), the
    parameters, the measures on the training and held-out sessions, and with ``bootstrap``
    resamples the parameters' 95% intervals (:mod:`ltr_cli.clicklog.fit.intervals`)."""
    model = fit_model(name)
    if bootstrap:
        from ltr_cli.clicklog.fit.intervals import check_draws

        check_draws(bootstrap)
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise LtrError(f"--iterations {iterations}: give 1 to {MAX_ITERATIONS} EM iterations")
    grid, pairs = build_grid(log.session, log.query, log.doc, log.position, log.click, log.qids)
    train, held = split(grid, heldout, seed)
    params = model.fit(train, pairs, iterations)
    train_m = measures(model, params, train)
    rec: dict[str, Any] = {
        "model": name, "summary": model.summary, "fitting": f"EM, {iterations} iterations" if model.em else
        "closed form", "heldout": heldout, "seed": seed, "sessions": grid.sessions, "ranks": grid.ranks,
        "pairs": pairs.size, "train": train_m, "heldout_measures": measures(model, params, held) if held else None,
        "parameters": model.describe(params, pairs)}
    if bootstrap:
        from ltr_cli.clicklog.fit.intervals import bootstrap_intervals

        rec["intervals"] = bootstrap_intervals(model, train, pairs, iterations, bootstrap, seed)
    main = rec["heldout_measures"] or train_m
    rec["log_likelihood"], rec["perplexity"] = main["log_likelihood"], main["perplexity"]
    return rec
