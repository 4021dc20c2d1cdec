"""The data-format conformance suite: every format on a file holding the queries of an
SVMlight source (the SVMlight format on the source itself):

* the reader contract: the same queries (qids, labels, features, in order) as the source
  through ``dense_queries``, ``labelled_queries``, ``summaries`` and ``count_queries``, on
  every pass (:func:`check_reader_contract`);
* a round trip through ``ltr data convert`` back to the same table
  (:func:`check_round_trip_through_convert`);
* the input bounds of the reader options, each a :class:`~ltr_cli.errors.DataFormatError`
  naming the file (:func:`check_input_bounds`), and an error in a query naming one of its
  rows (:func:`check_errors_name_the_row`);
* an online run on the file gives the same rounds as on the source
  (:func:`check_same_rounds_as_svmlight`).

The file of a format that declares ``write`` is written by it, whatever the suffix; that
of a format claiming a suffix ``ltr data convert`` writes (``.parquet``, ``.csv``), by
``ltr data convert``. A format with neither fails, saying to declare ``write``. Subjects:
every format of the registry (plugins included), or the
:class:`~ltr_cli.data.formats.base.DataFormat` objects a test gives, each registered under
its name while its checks run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.formats import DataFormat, formats, open_dataset
from ltr_cli.data.options import ReaderOptions
from ltr_cli.errors import DataFormatError
from ltr_cli.testing import suite
from ltr_cli.testing.online import FEATURES, run_folders, write_config, write_data

CONVERT_WRITES = (".parquet", ".csv")  # what `ltr data convert` writes that a reader could read
SOURCE = "svmlight"


def _convert(src: Path, out: Path, *args: str) -> None:
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    res = CliRunner().invoke(app, ["data", "convert", str(src), str(out), "--features", str(FEATURES), *args])
    assert res.exit_code == 0, res.stderr


def sample(fmt: DataFormat, tmp_path: Path, queries: int = 30) -> tuple[Path, Path]:
    """``(source, file)``: an SVMlight source and the same data in ``fmt`` (written by ``ltr
    data convert``; the source itself for SVMlight)."""
    source = write_data(tmp_path / "source.txt", queries=queries)
    if fmt.name == SOURCE:
        return source, source
    if fmt.write is not None:
        out = tmp_path / f"data{fmt.suffixes[0]}"
        fmt.write(out, iter(open_dataset(source, _options(), SOURCE).dense_queries(np.float64)), _options())
        return source, out
    suffix = next((s for s in fmt.suffixes if s in CONVERT_WRITES), None)
    assert suffix is not None, (f"format {fmt.name}: the suite cannot make a file of it: ltr data convert writes "
                                f"none of its suffixes {', '.join(fmt.suffixes)}; declare "
                                "DataFormat(..., write=write) with write(path, queries, options)")
    out = tmp_path / f"data{suffix}"
    _convert(source, out)
    return source, out


def _options(**kw: Any) -> ReaderOptions:
    return ReaderOptions(n_features=FEATURES, **kw)


def _table(path: Path, fmt: str | None = None) -> list[tuple[str, list[float], list[list[float]]]]:
    return [(q.qid, q.y.tolist(), q.X.tolist()) for q in open_dataset(path, _options(), fmt).dense_queries(np.float64)]


def check_reader_contract(name: str, tmp_path: Path) -> None:
    """Every way of reading the file gives the source's queries, in order, on every pass."""
    fmt = formats()[name]
    source, path = sample(fmt, tmp_path)
    expected = _table(source, SOURCE)
    reader = fmt.reader(path, _options())
    for _ in range(2):  # re-iterable
        got = [(q.qid, q.y.tolist(), q.X.tolist()) for q in reader.dense_queries(np.float64)]
        assert got == expected, f"format {name}: dense_queries differ from the source's queries"
    lines = [q.line for q in reader.dense_queries(np.float64)]
    assert lines == sorted(lines) and len(set(lines)) == len(lines) and lines[0] >= 1, \
        f"format {name}: a query's line (its first document's line or 1-based row) must increase: {lines[:5]}"
    labelled = [(qid, y.tolist()) for qid, y, _ in reader.labelled_queries()]
    assert labelled == [(qid, y) for qid, y, _ in expected], f"format {name}: labelled_queries differ"
    summaries = list(reader.summaries())
    assert [(s[0], s[1].tolist()) for s in summaries] == labelled, f"format {name}: summaries differ"
    assert all(s[4] <= FEATURES - 1 for s in summaries), f"format {name}: a summary's largest column is too large"
    assert reader.count_queries() == len(expected), f"format {name}: count_queries is not the number of queries"
    f32 = [q.X.dtype for q in reader.dense_queries(np.float32)]
    assert set(f32) == {np.dtype(np.float32)}, f"format {name}: dense_queries(np.float32) gave {set(f32)}"


def check_round_trip_through_convert(name: str, tmp_path: Path) -> None:
    """``ltr data convert`` of the file to a Parquet table, read back, is the source."""
    fmt = formats()[name]
    source, path = sample(fmt, tmp_path)
    back = tmp_path / "back.parquet"
    _convert(path, back)  # the reader is chosen by the file's suffix
    assert _table(back) == _table(source, SOURCE), f"format {name}: converting it does not give the source back"


def _too_large(path: Path, fmt: str) -> tuple[DataFormatError, Any]:
    """The error of reading with at most 3 documents a query, and the first query above."""
    rows = 3
    small = _options(max_query_mb=rows * 8 * FEATURES / (1 << 20))
    assert small.max_query_rows == rows
    first = next(q for q in open_dataset(path, _options(), fmt).dense_queries(np.float64) if q.m > rows)
    try:
        list(open_dataset(path, small, fmt).dense_queries(np.float64))
    except DataFormatError as exc:
        return exc, first
    raise AssertionError(f"format {fmt}: a query above dataset.max_query_mb was read without an error")


def check_input_bounds(name: str, tmp_path: Path) -> None:
    """The reader options' bounds are applied: too many documents in a query, and a file
    wider than the declared feature count, are each a one-line DataFormatError naming the
    file."""
    fmt = formats()[name]
    _, path = sample(fmt, tmp_path)
    exc, _ = _too_large(path, name)
    assert str(path) in str(exc) and "\n" not in str(exc), f"format {name}: {exc}"
    try:
        list(open_dataset(path, ReaderOptions(n_features=FEATURES - 1), name).dense_queries(np.float64))
    except DataFormatError as narrow:
        assert str(path) in str(narrow) and "\n" not in str(narrow), f"format {name}: {narrow}"
    else:
        raise AssertionError(f"format {name}: a file of {FEATURES} features was read as {FEATURES - 1}")


def check_errors_name_the_row(name: str, tmp_path: Path) -> None:
    """An error in a query names the line or 1-based row of one of its documents
    (``file:row: ...``), counted as the reader counts a query's ``line``."""
    fmt = formats()[name]
    _, path = sample(fmt, tmp_path)
    exc, first = _too_large(path, name)
    assert exc.line is not None and first.line <= exc.line < first.line + first.m, \
        f"format {name}: the error names row {exc.line}, not one of rows {first.line}..{first.line + first.m - 1} " \
        f"of query {first.qid}: {exc}"
    assert str(exc).startswith(f"{path}:{exc.line}: "), f"format {name}: {exc}"


def check_same_rounds_as_svmlight(name: str, tmp_path: Path) -> None:
    """An online run on the file gives the rounds of the same run on the SVMlight source."""
    import pandas as pd
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    fmt = formats()[name]
    source, path = sample(fmt, tmp_path)
    frames = []
    for label, data in (("source", source), ("file", path)):
        cfg = write_config(tmp_path / f"{label}.yaml", [data], {"slam": {"type": "slam-perceptron"}})
        res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / label), "-q"])
        assert res.exit_code == 0, res.stderr
        frames.append(pd.read_parquet(run_folders(tmp_path / label)["slam"] / "rounds.parquet"))
    pd.testing.assert_frame_equal(frames[0], frames[1])


CHECKS = (check_reader_contract, check_round_trip_through_convert, check_input_bounds, check_errors_name_the_row,
          check_same_rounds_as_svmlight)


@suite("formats")
def _cases(given: list[Any] | None) -> list[tuple[str, Any, Any]]:
    from ltr_cli.testing import while_registered

    if given is None:
        return [(name, name, check) for check in CHECKS for name in formats()]
    out: list[tuple[str, Any, Any]] = []
    for fmt in given:
        if not isinstance(fmt, DataFormat):
            raise TypeError(f"a format subject is a DataFormat, not {type(fmt).__name__}")
        out += [(fmt.name, fmt.name, while_registered("formats", fmt.name, fmt, check)) for check in CHECKS]
    return out
