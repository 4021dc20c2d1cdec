"""``ltr score``: a saved model's score for every document of a file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.options import GroupOpt, NullOpt, QidSourceOpt, _value
from ltr_cli.data.registry import reader_options


def score(
    model: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="a run directory, batch or online (or its models.json)")],
    data_file: Annotated[Path, typer.Argument(metavar="DATA_FILE", help="SVMlight/LETOR file to score")],
    fold: Annotated[Optional[str], typer.Option("--fold", help="which fold's model of a batch run (default: the first); an online run has one, 'final'")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the scores here (default: stdout)")] = None,
    qid: QidSourceOpt = None, group: GroupOpt = None, null_value: NullOpt = None,
    index_base: Annotated[Optional[int], typer.Option(
        "--index-base", min=0, max=1,
        help="feature index base of DATA_FILE (default: that of the data the run was trained on)")] = None,
) -> None:
    """Write one score per line for every document of a file (LETOR evaluation tools' format),
    from the model a batch run selected per fold or the final weights of an online run."""
    from ltr_cli.results.scoring import load_model, score_lines, training_index_base

    scorer, n_features = load_model(model, fold)
    base = training_index_base(model) if index_base is None else index_base
    lines = score_lines(scorer, data_file, reader_options(None, n_features, base, _value(qid), group, null_value))
    text = "\n".join(lines) + "\n"
    if out is not None:
        from ltr_cli.outputs import write_text

        write_text(out, text)
    else:
        typer.echo(text, nl=False)
