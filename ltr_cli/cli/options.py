"""Option types shared by the ``ltr`` commands: choices whose values come from the domain
tables (never restated here) and the reader options of the data commands."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeAlias, get_args

import typer

from ltr_cli.core.convention_table import CONVENTION_NAMES, NO_RELEVANT_POLICIES, TIE_POLICIES
from ltr_cli.data.options import QidSource
from ltr_cli.reports.plot_style import LAYOUTS, LEGENDS, PALETTES
from ltr_cli.sweep.tasks import EXECUTORS


def _choices(name: str, values: Iterable[str]) -> Any:
    """A CLI choice type whose values are a domain table's names (never restated here)."""
    return Enum(name, {v: v for v in values}, type=str)


if TYPE_CHECKING:  # to a type checker, a choice is its string value
    QidOpt: TypeAlias = str
    ConventionOpt: TypeAlias = str
    TiesOpt: TypeAlias = str
    NoRelevantOpt: TypeAlias = str
    BandOpt: TypeAlias = str
    LegendOpt: TypeAlias = str
    LayoutOpt: TypeAlias = str
    PaletteOpt: TypeAlias = str
    ExecutorOpt: TypeAlias = str
else:
    QidOpt = _choices("QidOpt", get_args(QidSource))
    ConventionOpt = _choices("ConventionOpt", CONVENTION_NAMES)
    TiesOpt = _choices("TiesOpt", TIE_POLICIES)
    NoRelevantOpt = _choices("NoRelevantOpt", NO_RELEVANT_POLICIES)
    BandOpt = _choices("BandOpt", ("minmax", "std", "none"))
    LegendOpt = _choices("LegendOpt", LEGENDS)
    LayoutOpt = _choices("LayoutOpt", LAYOUTS)
    PaletteOpt = _choices("PaletteOpt", PALETTES)
    ExecutorOpt = _choices("ExecutorOpt", EXECUTORS)


def _value(choice: Any) -> Any:
    """The string a choice stands for (None stays None)."""
    return choice.value if isinstance(choice, Enum) else choice


# --- reader options shared by the data commands --------------------------------------------

DatasetOpt = Annotated[Optional[str], typer.Option("--dataset", help="registry dataset whose width, index base and qid source to use (see 'ltr list')")]
FeaturesOpt = Annotated[Optional[int], typer.Option("--features", min=1, help="feature count (overrides --dataset)")]
BaseOpt = Annotated[Optional[int], typer.Option("--index-base", min=0, max=1, help="feature index base (default 1)")]
QidSourceOpt = Annotated[Optional[QidOpt], typer.Option("--qid", help="where qids come from (default: the dataset's, else auto)")]
GroupOpt = Annotated[Optional[Path], typer.Option("--group", help="group file (one document count per line)")]
NullOpt = Annotated[Optional[float], typer.Option("--null-value", help="number to fill LETOR NULL values with (default: error)")]
