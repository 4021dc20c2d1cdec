"""``ltr data``: inspect, cache, convert and generate SVMlight/LETOR data files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.boundary import command
from ltr_cli.cli.options import BaseOpt, DatasetOpt, FeaturesOpt, GroupOpt, NullOpt, QidOpt, QidSourceOpt, _value
from ltr_cli.data.registry import reader_options
from ltr_cli.errors import LtrError

data_app = typer.Typer(help="Inspect, cache, convert, generate and split SVMlight/LETOR data files.", no_args_is_help=True, rich_markup_mode=None)


@command(data_app, "inspect")
def data_inspect(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="SVMlight/LETOR file (gz/bz2/xz ok)")],
    dataset: DatasetOpt = None, features: FeaturesOpt = None, index_base: BaseOpt = None,
    qid: QidSourceOpt = None, group: GroupOpt = None, null_value: NullOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Count queries, documents, features and labels; report all-zero queries and problems."""
    from ltr_cli.data.inspect import inspect_file

    report = inspect_file(file, reader_options(dataset, features, index_base, _value(qid), group, null_value))
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        if key == "problems":
            typer.echo("problems:" + ("" if value else " none"))
            for p in value:
                typer.echo(f"  - {p}")
        else:
            typer.echo(f"{key}: {_plain(value)}")


def _plain(value: object) -> str:
    """A report value as text: ``min 18, mean 116.279, max 308`` for a mapping, ``106, 286``
    for a list (never Python's dict or list syntax)."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_plain(v)}" if not isinstance(v, (dict, list)) else f"{k} ({_plain(v)})"
                         for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value) or "none"
    return "none" if value is None else str(value)


@command(data_app, "cache")
def data_cache(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="SVMlight/LETOR files to cache")],
    cache_dir: Annotated[Path, typer.Option("--cache-dir", help="cache directory (ltr run's default: <output>/.cache)")] = Path("results/.cache"),
    storage: Annotated[str, typer.Option("--storage", help="float64 | float32 (the config's dataset.storage)")] = "float64",
    verify: Annotated[bool, typer.Option("--verify", help="also hash every byte of the cache against its checksums")] = False,
    dataset: DatasetOpt = None, features: FeaturesOpt = None, index_base: BaseOpt = None,
    qid: QidSourceOpt = None, group: GroupOpt = None, null_value: NullOpt = None,
) -> None:
    """Build (or validate) the binary cache that 'ltr run' memory-maps, e.g. before a sweep."""
    from ltr_cli.data.cache import CacheInvalid, open_cached

    if storage not in ("float64", "float32"):
        raise LtrError(f"--storage must be float64 or float32, not {storage!r}")
    options = reader_options(dataset, features, index_base, _value(qid), group, null_value)
    if options.n_features is None:
        raise LtrError("caching needs the feature count: pass --dataset NAME or --features N")
    for file in files:
        cached = open_cached(file, options, cache_dir, storage)
        if verify:
            try:
                cached.verify()
            except CacheInvalid as exc:
                raise LtrError(f"{cached.directory}: {exc}; delete it and run ltr data cache again") from None
        typer.echo(json.dumps({"file": str(file), "cache": str(cached.directory), "queries": cached.n_queries,
                               "documents": cached.n_documents, "storage": storage,
                               "verified": "all bytes" if verify else "sizes, small arrays, sampled X"}))


@command(data_app, "convert")
def data_convert(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="SVMlight/LETOR file")],
    out: Annotated[Path, typer.Argument(metavar="OUT", help="output .parquet, .csv or .npz (qid, label, dense features)")],
    dataset: DatasetOpt = None, features: FeaturesOpt = None, index_base: BaseOpt = None,
    qid: QidSourceOpt = None, group: GroupOpt = None, null_value: NullOpt = None,
) -> None:
    """Convert a file to Parquet or NPZ with columns qid, label, f1..fd."""
    from ltr_cli.data.inspect import convert_file

    info = convert_file(file, out, reader_options(dataset, features, index_base, _value(qid), group, null_value))
    typer.echo(json.dumps(info))


@command(data_app, "synth")
def data_synth(
    out: Annotated[Path, typer.Argument(metavar="OUT", help="output SVMlight file (.gz to compress)")],
    like: Annotated[Optional[str], typer.Option("--like", help="registry dataset to imitate (width, docs/query, labels, sparsity)")] = None,
    separable: Annotated[Optional[str], typer.Option("--separable", help="the perceptron paper's separable set: authors | paper")] = None,
    queries: Annotated[int, typer.Option("--queries", min=1, help="number of queries")] = 100,
    docs_per_query: Annotated[Optional[float], typer.Option("--docs-per-query", min=1, help="mean documents per query (shaped data)")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="generator seed")] = 0,
    qid: Annotated[Optional[QidOpt], typer.Option("--qid", help="token | comment | group (default: the dataset's)")] = None,
    relevance: Annotated[str, typer.Option("--relevance", help="shaped data: linear (grades first, features along one direction) or nonlinear (features first, grades from a hidden nonlinear scorer: a linear ranker is misspecified)")] = "linear",
    folds: Annotated[bool, typer.Option("--folds", help="OUT is a directory: write the --like dataset's fold layout there (e.g. Fold1..Fold5/trainingset.txt ...), its queries split into one subset per fold and rotated over the folds as in LETOR and MSLR")] = False,
) -> None:
    """Write generated data as an SVMlight file, or a registry dataset's folds (for tests,
    benchmarks, trying the tool). Each file written gets a sidecar <file>.generated.json
    (what it imitates, its digest), so runs on it are reported as generated data."""
    from ltr_cli.data.provenance import mark_synth_output
    from ltr_cli.data.synthetic import synthesize

    style = _value(qid) if qid is not None and _value(qid) != "auto" else None
    written = synthesize(out, like, separable, queries, docs_per_query, seed, style, folds, relevance)
    mark_synth_output(out, like, separable, folds, {**written, "seed": seed})
    typer.echo(json.dumps(written))


@command(data_app, "split")
def data_split(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="labelled SVMlight/LETOR file (its group file beside it is used)")],
    folds: Annotated[int, typer.Option("--folds", min=3, help="number of folds K (subsets)")] = 5,
    out: Annotated[Path, typer.Option("--out", help="new folder for Fold1..FoldK")] = Path("folds"),
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the query shuffle")] = 0,
    dataset: DatasetOpt = None, features: FeaturesOpt = None, index_base: BaseOpt = None,
    qid: QidSourceOpt = None, group: GroupOpt = None, null_value: NullOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print what was written as JSON")] = False,
) -> None:
    """Split a file into K folds in LETOR's rotation: its queries shuffled (--seed) into K
    subsets; Fold i trains on K-2 of them, validates on the next and tests on the last, so
    the test files partition the queries. Lines are copied as they are; --dataset NAME
    writes that dataset's layout (e.g. LETOR 2.0's Fold1/trainingset.txt)."""
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.data.split import DEFAULT_LAYOUT, layout_of, split_file

    options = reader_options(dataset, features, index_base, _value(qid), group, null_value)
    layout = layout_of(get_dataset(dataset).files) if dataset else DEFAULT_LAYOUT
    from ltr_cli.data.provenance import mark_split_output

    result = split_file(file, out, folds, seed, options, layout)
    mark_split_output(file, result)  # folds of generated data stay marked as generated
    if as_json:
        typer.echo(json.dumps(result))
        return
    from ltr_cli.names import count

    subsets = ", ".join(str(n) for n in result["subsets"])
    typer.echo(f"wrote {count(folds, 'fold')} of {count(result['queries'], 'query')} "
               f"({count(result['documents'], 'document')}) to {result['out']}: subsets of {subsets} queries; "
               f"Fold i trains on {folds - 2} subsets, validates on the next and tests on the one after "
               f"(files: {', '.join(str(v).replace('{fold}', 'i') for v in result['layout'].values())})")
