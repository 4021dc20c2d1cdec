"""``ltr data inspect`` and ``ltr data convert``: one streaming pass over a file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.formats import QueryReader, open_dataset
from ltr_cli.data.formats.parquet_table import write_table
from ltr_cli.errors import LtrError
from ltr_cli.outputs import new_temporary, remove_dead_temporaries


def inspect_file(path: Path, options: ReaderOptions) -> dict[str, Any]:
    """Counts, label histogram, docs per query, all-zero queries and problems found.

    Reads with ``split_qids="new-query"`` so a split query is reported, not fatal; any
    other malformed line still stops with its ``file:line`` error.
    """
    reader = open_dataset(path, ReaderOptions(
        n_features=options.n_features, index_base=options.index_base,
        qid_source=options.qid_source, group_file=options.group_file,
        null_value=options.null_value, split_qids="new-query"))
    labels: Counter[float] = Counter()
    sizes: list[int] = []
    zero_queries: list[str] = []
    seen: dict[str, int] = {}
    split: list[str] = []
    max_index = -1
    nnz = 0
    for qid, y, line, tokens, max_col in reader.summaries():
        sizes.append(y.shape[0])
        labels.update(y.tolist())
        if not (y > 0).any():
            zero_queries.append(qid)
        if qid in seen:
            split.append(f"qid {qid} reappears at line {line} (first seen at line {seen[qid]})")
        else:
            seen[qid] = line
        max_index = max(max_index, max_col)
        nnz += tokens
    docs = int(sum(sizes))
    width = options.n_features or (max_index + 1)
    problems = list(split)
    # qids written other than canonically (qid:01, qid:+1): read by value, reported by line
    for line, written, qid in reader.respelt[:_MAX_LISTED]:
        problems.append(f"line {line}: qid {written!r} is read as qid {qid} (qids are integers compared by value)")
    if len(reader.respelt) > _MAX_LISTED:
        problems.append(f"... and {len(reader.respelt) - _MAX_LISTED} more lines with qids not written canonically")
    non_integer = sorted(v for v in labels if not float(v).is_integer())
    if non_integer:
        problems.append(f"non-integer labels {non_integer[:5]} (fine for the paper convention; "
                        "the LETOR/MSLR scripts reject them)")
    if zero_queries:
        problems.append(f"{len(zero_queries)} queries have no relevant document (all labels <= 0)")
    return {
        "file": str(path),
        "queries": len(sizes),
        "documents": docs,
        "features": width,
        "features_declared": options.n_features,
        "max_feature_index": (max_index + options.index_base) if max_index >= 0 else None,
        "index_base": options.index_base,
        "density": round(nnz / (docs * width), 6) if docs and width else 0.0,
        "docs_per_query": {"min": min(sizes), "mean": round(docs / len(sizes), 3), "max": max(sizes)},
        "labels": {_label_key(k): v for k, v in sorted(labels.items())},
        "all_zero_queries": {"count": len(zero_queries), "qids": zero_queries[:20]},
        "problems": problems,
    }


_MAX_LISTED = 50


def _label_key(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def convert_file(path: Path, out: Path, options: ReaderOptions) -> dict[str, Any]:
    """Write (qid, label, f1..fd) as Parquet, CSV (with a header row) or NPZ; return
    counts. Atomic: written to a new temporary file of its own in the output's folder, then
    renamed into place, so two converts to one output never share a temporary and the
    output is always one of the complete tables.

    Parquet and CSV are written in batches while streaming (memory: one batch of
    documents); NPZ needs the whole table in memory.
    """
    if options.n_features is None:
        raise LtrError("convert needs the feature count: pass --features N or --dataset NAME")
    suffix = out.suffix.lower()
    if suffix not in (".parquet", ".csv", ".npz"):
        raise LtrError(f"{out}: output must end in .parquet, .csv or .npz")
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temporaries(out.parent, out.name)  # a convert that was killed
    tmp = new_temporary(out.parent, out.name)
    try:
        if suffix == ".npz":
            counts = _write_npz(open_dataset(path, options), tmp)
        else:
            assert options.n_features is not None
            counts = write_table(iter(open_dataset(path, options)), tmp, options.n_features, options.index_base,
                                 suffix[1:])
        tmp.replace(out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {"file": str(path), "out": str(out), **counts}


def _write_npz(reader: QueryReader, tmp: Path) -> dict[str, int]:
    qids, ys, Xs = [], [], []
    for q in reader:
        qids.append(np.full(q.m, q.qid, dtype=object))
        ys.append(q.y)
        Xs.append(q.X)
    X = np.vstack(Xs)
    with open(tmp, "wb") as fh:
        np.savez(fh, qid=np.concatenate(qids).astype(str), label=np.concatenate(ys), X=X)
    return {"queries": len(Xs), "documents": int(X.shape[0]), "features": int(X.shape[1])}
