"""``ltr run``: every learner of an experiment config, one run folder each."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ltr_cli.errors import LtrError
from ltr_cli.names import count

DATA_HELP = ("run on your copy of the data: the dataset's folder (Fold1..FoldK) or its files; the config's dataset "
             "name, width and qid source are kept (repeatable)")
HELDOUT_HELP = ("an online config's held-out file: your test file (heldout.file; without a heldout: block, evaluated "
                "every tenth of the rounds)")


def run(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="experiment config (YAML)")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="override a config key: --set protocol.passes=2 (repeatable)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="results root (default: the config's output, 'results')")] = None,
    learner: Annotated[Optional[list[str]], typer.Option("--learner", metavar="NAME", help="run only this learner of the config (repeatable)")] = None,
    exclude: Annotated[Optional[list[str]], typer.Option("--exclude", metavar="NAME", help="run every learner of the config but this one (repeatable)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar or messages")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="skip finished runs; continue killed runs from their last checkpoint")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="start interrupted runs over, deleting their checkpoints")] = False,
    data: Annotated[Optional[list[Path]], typer.Option("--data", metavar="PATH", help=DATA_HELP)] = None,
    heldout: Annotated[Optional[Path], typer.Option("--heldout", metavar="FILE", help=HELDOUT_HELP)] = None,
    kernels: Annotated[Optional[str], typer.Option("--kernels", metavar="auto|compiled|reference", help="the online runs' path: compiled (numba) or reference (numpy), same results; auto (default, or LTR_KERNELS) picks the cheaper for the run's size")] = None,
) -> None:
    """Run every learner of an experiment config; write results/<experiment>/<run-id>/."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.measures.registry import display_name
    from ltr_cli.runs.runner import run_experiment

    from ltr_cli import console

    spec = load_config(config, set_ or [], data, note=None if quiet else (lambda text: console.note(f"ltr: note: {text}")),
                       heldout=heldout)
    if spec.sweep:
        raise LtrError(f"{config}: sweep: this config has a sweep; run it with 'ltr sweep {config}' "
                       "(it takes --data, --heldout and --set too), or remove the sweep block")
    for option, names in (("--learner", learner), ("--exclude", exclude)):
        unknown = [name for name in names or [] if name not in spec.learners]
        if unknown:
            raise LtrError(f"{config}: learners: {option}: no learner named {unknown[0]!r}; the config has "
                           f"{', '.join(spec.learners)}")
    if exclude:
        learner = [name for name in (learner or list(spec.learners)) if name not in exclude]
        if not learner:
            raise LtrError(f"--exclude leaves no learner to run (the config has {', '.join(spec.learners)})")
    if resume and fresh:
        raise LtrError("--resume continues interrupted runs and --fresh starts them over: give one of them")
    mode = _kernels_mode(kernels)

    def done(o: Any) -> None:  # each run's line as soon as it is written
        metrics = o.summary["metrics"]
        if quiet:
            typer.echo(str(o.path))
        elif o.summary.get("protocol") == "batch-cv":
            folds = o.summary.get("degenerate_folds") or []
            result = (f"test {_headline(metrics, o.summary.get('selected_by'))} (mean over folds)" if not folds else
                      f"DEGENERATE model (constant scores: file order) in {'fold' if len(folds) == 1 else 'folds'} "
                      f"{', '.join(map(str, folds))}, "
                      "no test numbers for the method")
            typer.echo(f"{o.learner}: {count(len(o.summary['folds']), 'fold')}, {result} -> {o.path}")
        else:
            parts = [f"{display_name(name)}={vals['final_time_average']:.4f}" for name, vals in metrics.items()
                     if vals["final_time_average"] is not None]
            heldout = _heldout_headline(o.summary.get("heldout"))
            typer.echo(f"{o.learner}: {count(o.summary['rounds'], 'round')}, {count(o.summary['updates'], 'update')}, "
                       + (f"held-out {heldout} (final weights); online " if heldout else "")
                       + f"time-averaged {' '.join(parts)} -> {o.path}")

    run_experiment(spec, out=out, quiet=quiet, learners=learner, argv=sys.argv, resume=resume, fresh=fresh,
                   on_done=done, kernels_mode=mode)


def _kernels_mode(option: str | None) -> str:
    """``--kernels``, else ``LTR_KERNELS``: auto, compiled or reference (one-line error otherwise)."""
    import os

    from ltr_cli.kernels import mode_of

    if option is not None:
        if option not in ("auto", "compiled", "reference"):
            raise LtrError(f"--kernels {option}: expected auto, compiled or reference")
        return option
    try:
        return mode_of(os.environ.get("LTR_KERNELS"))
    except ValueError as exc:
        raise LtrError(str(exc)) from None




def _headline(metrics: dict[str, Any], selected_by: str | None = None) -> str:
    """A batch run's test metrics on its one line: the metric the config selects by on vali
    (``selected_by``: ``vali <metric>``) first, then MAP and NDCG@3 when it has them (the batch
    papers' tables), else its first three."""
    from ltr_cli.measures.registry import display_name

    chosen = selected_by.removeprefix("vali ") if isinstance(selected_by, str) else None
    keys = [k for k in ("ap", "ndcg@3") if k in metrics] or list(metrics)[:3]
    if chosen in metrics:
        keys = [chosen] + [k for k in keys if k != chosen]

    return " ".join(f"{display_name(k)}="
                    + ("n/a" if metrics[k] is None else f"{metrics[k]:.4f}") for k in keys)


def _heldout_headline(heldout: Any) -> str | None:
    """An online run's held-out metrics at their last evaluation (``summary['heldout']``),
    as ``NDCG@10=0.7012``; None when the run has no held-out set."""
    from ltr_cli.measures.registry import display_name

    last = heldout.get("last") if isinstance(heldout, dict) else None
    if not isinstance(last, dict):
        return None
    parts = [f"{display_name(c.removeprefix('heldout_'))}={v:.4f}" for c, v in last.items()
             if isinstance(v, (int, float))]
    return " ".join(parts) or None
