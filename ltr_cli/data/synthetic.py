"""Generated data: the perceptron paper's separable set, and files shaped like benchmarks.

Two variants of the separable set (``../shared/REPRODUCTION-NOTES.md``):

* ``authors``: what the authors' MATLAB code did. m = 20, d = 10, the relevance vector is
  fixed at ``[4,4,4,3,3,3,2,2,2,2,1,1,1,1,1,0,0,0,0,0]`` (documents in that order), features
  i.i.d. per coordinate N(mu_level, 1) with mu = {4: 7, 3: 5, 2: 3, 1: 1, 0: -1}, the
  separating ranker ``u = ones(d)`` (not normalised), and rejection sampling top-down: each
  document of a level is redrawn until its score ``x . u`` is more than ``margin`` (1) below
  the minimum score of the level above.
* ``paper``: the paper's text. m = 20, d = 20, each document's level uniform on {0..4},
  a random unit-norm Gaussian ranker u, features ``N(c mu_level u, I)`` with
  ``c = max(1, margin)`` (so wide margins stay feasible) and the same top-down rejection,
  so that the margin condition (Eq. 21) holds with ``gamma = margin``.

Both are deterministic functions of their seed.
"""

from __future__ import annotations

import gzip
import math
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from ltr_cli.data.query import Query
from ltr_cli.data.registry import DatasetInfo, get_dataset
from ltr_cli.data.relevance import DEFAULT_RELEVANCE, RELEVANCE, draw_features, hidden_scorer
from ltr_cli.data.svmwrite import feature_prefixes, svmlight_block, text_words
from ltr_cli.errors import LtrError
from ltr_cli.outputs import write_file, write_text

AUTHORS_RELEVANCE = np.array([4, 4, 4, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], float)
LEVEL_MEANS = {4: 7.0, 3: 5.0, 2: 3.0, 1: 1.0, 0: -1.0}
_MAX_REDRAWS = 100_000


@dataclass(frozen=True)
class SeparableSpec:
    """Parameters of the separable generator (defaults: the authors' code)."""

    variant: str = "authors"
    queries: int = 1000
    docs: int = 20
    features: int = 10
    margin: float = 1.0
    seed: int = 0

    def ranker(self, rng: np.random.Generator) -> np.ndarray:
        if self.variant == "authors":
            return np.ones(self.features)
        u = rng.standard_normal(self.features)
        return u / np.linalg.norm(u)


def _draw_level_docs(
    rng: np.random.Generator, n: int, mean: np.ndarray, u: np.ndarray, ceiling: float
) -> np.ndarray:
    """Draw n documents N(mean, I), redrawing each until ``x . u < ceiling``."""
    out = np.empty((n, mean.shape[0]))
    for i in range(n):
        for _ in range(_MAX_REDRAWS):
            x = mean + rng.standard_normal(mean.shape[0])
            if x @ u < ceiling:
                out[i] = x
                break
        else:
            raise LtrError(
                f"dataset.margin: no document found within {_MAX_REDRAWS} draws that scores "
                "more than the margin below the level above; use a smaller margin"
            )
    return out


def separable_queries(spec: SeparableSpec) -> Iterator[Query]:
    """Yield ``spec.queries`` margin-separable queries (see module docstring)."""
    if spec.variant not in ("authors", "paper"):
        raise ValueError("separable variant must be 'authors' or 'paper'")
    rng = np.random.default_rng(spec.seed)
    u = spec.ranker(rng)
    direction = np.ones(spec.features) if spec.variant == "authors" else u
    # paper variant: level means 2 apart per unit of margin (unchanged for margin <= 1)
    spread = 1.0 if spec.variant == "authors" else max(1.0, spec.margin)
    for t in range(spec.queries):
        if spec.variant == "authors":
            y = AUTHORS_RELEVANCE.copy() if spec.docs == 20 else np.sort(
                rng.integers(0, 5, spec.docs).astype(float))[::-1]
        else:
            y = rng.integers(0, 5, spec.docs).astype(float)
        X = np.empty((y.shape[0], spec.features))
        ceiling = np.inf
        for level in (4, 3, 2, 1, 0):
            rows = np.flatnonzero(y == level)
            if rows.size == 0:
                continue
            mean = LEVEL_MEANS[level] * spread * direction
            docs = _draw_level_docs(rng, rows.size, mean, u, ceiling - spec.margin)
            X[rows] = docs
            ceiling = float((docs @ u).min())
        yield Query(qid=str(t + 1), X=X, y=y, line=0)


def separable_ranker(spec: SeparableSpec) -> np.ndarray:
    """The generating ranker u of ``spec`` (same draw as :func:`separable_queries`)."""
    return spec.ranker(np.random.default_rng(spec.seed))


# --- files shaped like a registry dataset -------------------------------------------------

@dataclass(frozen=True)
class ShapeSpec:
    """Size of a shaped file; ``density`` is the fraction of non-zero features per row for
    sparse datasets (dense datasets write every feature)."""

    queries: int = 100
    docs_per_query: float | None = None
    density: float = 0.3
    signal: float = 0.5
    seed: int = 0
    qid_style: str | None = None  # token | comment | group; default: the dataset's
    relevance: str = DEFAULT_RELEVANCE  # linear | nonlinear (ltr_cli.data.relevance)

    def params(self) -> dict[str, object]:
        """The settings that identify the generated stream (``relevance`` only when it is
        not the default, so the identities of linear streams stay what they were)."""
        out = dict(self.__dict__)
        if self.relevance == DEFAULT_RELEVANCE:
            del out["relevance"]
        return out


def _docs_count(rng: np.random.Generator, mean: float) -> int:
    # geometric-like spread around the mean, at least 1 document
    return max(1, int(rng.poisson(mean)))


def shaped_queries(info: DatasetInfo, spec: ShapeSpec) -> Iterator[Query]:
    """Queries with the dataset's width, documents per query and label distribution.

    ``relevance: linear``: features are noise plus ``signal * label`` along a random direction
    fixed per dataset (shared by every seed, split and fold), so learners have something to
    learn and can generalise; sparse datasets zero out ``1 - density`` of each row.
    ``relevance: nonlinear``: features first, then grades from a hidden nonlinear scorer
    fixed per dataset (:mod:`ltr_cli.data.relevance`).
    """
    if spec.relevance not in RELEVANCE:
        raise LtrError(f"relevance {spec.relevance!r}: give one of {', '.join(RELEVANCE)}")
    if spec.relevance == "nonlinear":
        yield from _nonlinear_queries(info, spec)
        return
    rng = np.random.default_rng(spec.seed)
    d = info.n_features
    # one relevance direction per dataset, whatever the seed: the splits and folds of a
    # generated dataset share their ground truth, so models can generalise across them
    direction = np.random.default_rng(zlib.crc32(info.name.encode())).standard_normal(d)
    direction /= np.linalg.norm(direction)
    levels = np.asarray(info.label_levels, dtype=float)
    probs = np.asarray(info.label_probs, dtype=float)
    probs = probs / probs.sum()
    mean_docs = spec.docs_per_query or info.docs_per_query
    for q in range(spec.queries):
        m = _docs_count(rng, mean_docs)
        y = rng.choice(levels, size=m, p=probs)
        X = rng.random((m, d)) + spec.signal * np.outer(y, direction)
        if info.sparse:
            X[rng.random((m, d)) > spec.density] = 0.0
        yield Query(qid=str(q + 1), X=np.round(X, 6), y=y, line=0)


def _nonlinear_queries(info: DatasetInfo, spec: ShapeSpec) -> Iterator[Query]:
    """Queries of ``relevance: nonlinear``: per query, its size, its features
    (:func:`~ltr_cli.data.relevance.draw_features`) and its grades from the dataset's hidden
    scorer, all drawn from one generator seeded by ``spec.seed``."""
    rng = np.random.default_rng(spec.seed)
    d = info.n_features
    density = spec.density if info.sparse else None
    levels = np.sort(np.asarray(info.label_levels, dtype=float))
    order = np.argsort(np.asarray(info.label_levels, dtype=float))
    probs = tuple(float(p) for p in np.asarray(info.label_probs, dtype=float)[order])
    scorer = hidden_scorer(info.name, d, probs, density)
    mean_docs = spec.docs_per_query or info.docs_per_query
    for q in range(spec.queries):
        m = _docs_count(rng, mean_docs)
        X = np.round(draw_features(rng, m, d, density), 6)
        yield Query(qid=str(q + 1), X=X, y=scorer.grades(X, levels, rng), line=0)


def format_label(y: float) -> str:
    return str(int(y)) if float(y).is_integer() else repr(float(y))


QID_STYLES = ("token", "comment", "group")
_BLOCK_VALUES = 1 << 14  # feature values written per numpy block


def svmlight_chunks(queries: Iterable[Query], *, qid_style: str = "token", sparse: bool = False,
                    index_base: int = 1, sizes: list[int] | None = None) -> Iterator[bytes]:
    """The SVMlight text of ``queries`` (see :func:`write_svmlight`), a block of queries
    at a time; each query's size is appended to ``sizes`` (for a group file)."""
    if qid_style not in QID_STYLES:
        raise ValueError(f"unknown qid style {qid_style!r}")
    prefixes: dict[int, np.ndarray] = {}  # by width
    block: list[Query] = []
    values = 0
    for query in queries:
        if sizes is not None:
            sizes.append(query.m)
        if block and query.X.shape[1] != block[0].X.shape[1]:
            yield _block_text(block, qid_style, sparse, prefixes, index_base)
            block, values = [], 0
        step = max(1, _BLOCK_VALUES // max(1, query.X.shape[1]))
        for start in range(0, query.m, step):  # a large query a few rows at a time: lines are independent
            part = query if query.m <= step else Query(query.qid, query.X[start:start + step],
                                                         query.y[start:start + step], query.line)
            block.append(part)
            # sparse: the values written (and lines), but at most 8 cells a value: a block's
            # arrays stay small however sparse the rows
            values += max(int(np.count_nonzero(part.X)) + part.m, part.X.size // 8) if sparse else part.X.size
            if values >= _BLOCK_VALUES:
                yield _block_text(block, qid_style, sparse, prefixes, index_base)
                block, values = [], 0
    if block:
        yield _block_text(block, qid_style, sparse, prefixes, index_base)


def _block_text(block: list[Query], qid_style: str, sparse: bool, prefixes: dict[int, np.ndarray],
                index_base: int) -> bytes:
    """Lines ``<label>[ qid:<qid>] <i>:<v> ...[ # <qid>]`` of the queries in ``block`` (all
    of one width; ``prefixes`` caches the `` <i>:`` words by width)."""
    for q in block:
        if any(ch.isspace() for ch in q.qid):
            raise ValueError(f"qid {q.qid!r} holds white space: it cannot be written as SVMlight")
    X = np.concatenate([q.X for q in block]) if len(block) > 1 else block[0].X
    labels = np.concatenate([q.y for q in block])
    owner = np.repeat(np.arange(len(block)), [q.m for q in block])
    distinct, which = np.unique(labels, return_inverse=True)
    heads = text_words([format_label(v) for v in distinct.tolist()])[which]
    qids = [q.qid for q in block]
    tails = np.zeros((X.shape[0], 0), dtype=heads.dtype)
    if qid_style == "token":
        heads = np.concatenate([heads, text_words([f" qid:{qid}" for qid in qids])[owner]], axis=1)
    elif qid_style == "comment":  # "<label> <features> # <qid>": two spaces when no feature
        tails = text_words([f" # {qid}" for qid in qids])[owner]
    width = X.shape[1]
    if width not in prefixes:
        prefixes[width] = feature_prefixes(width, index_base)
    return svmlight_block(X, heads, tails, prefixes[width], sparse, empty_gap=qid_style == "comment")


def reference_svmlight_lines(queries: Iterable[Query], *, qid_style: str = "token", sparse: bool = False,
                             index_base: int = 1) -> Iterator[str]:
    """The lines :func:`svmlight_chunks` writes, one Python format per value: the
    specification of that text, the oracle of its tests and the baseline of ``ltr bench``."""
    for query in queries:
        for row, label in zip(query.X, query.y):
            cols = np.flatnonzero(row) if sparse else np.arange(row.shape[0])
            feats = " ".join(f"{c + index_base}:{row[c]:.6g}" for c in cols)
            head = format_label(label)
            if qid_style == "token":
                line = f"{head} qid:{query.qid} {feats}"
            elif qid_style == "comment":
                line = f"{head} {feats} # {query.qid}"
            elif qid_style == "group":
                line = f"{head} {feats}"
            else:
                raise ValueError(f"unknown qid style {qid_style!r}")
            yield line.rstrip() + "\n"


def write_svmlight(
    path: Path,
    queries: Iterable[Query],
    *,
    qid_style: str = "token",
    sparse: bool = False,
    index_base: int = 1,
) -> int:
    """Write queries as SVMlight lines; returns documents written.

    ``qid_style``: ``token`` (``qid:N``), ``comment`` (trailing ``# N``) or ``group``
    (no qid; a ``<file>.query`` group file is written next to it). ``.gz`` paths are
    compressed. Dense rows write every feature; sparse rows omit zeros. Values are written
    as ``%.6g``. Each file is written to a new temporary file in its folder and renamed
    into place, so a failed write leaves nothing under the final name.
    """
    path = Path(path)
    if qid_style not in QID_STYLES:
        raise ValueError(f"unknown qid style {qid_style!r}")
    sizes: list[int] = []

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as raw:
            if path.suffix == ".gz":  # the bytes of gzip.open(path, "wt"): named, and flushed at the end
                with gzip.GzipFile(filename=str(path), mode="wb", fileobj=raw) as fh:
                    fh.writelines(svmlight_chunks(queries, qid_style=qid_style, sparse=sparse,
                                                  index_base=index_base, sizes=sizes))
                    fh.flush()
            else:
                raw.writelines(svmlight_chunks(queries, qid_style=qid_style, sparse=sparse,
                                               index_base=index_base, sizes=sizes))

    write_file(path.parent, path.name, write, own_name=False)
    if qid_style == "group":
        write_text(path.with_name(path.name + ".query"), "".join(f"{n}\n" for n in sizes))
    return sum(sizes)


def rotation(n_folds: int) -> list[tuple[list[int], int, int]]:
    """LETOR's and MSLR's fold layout over ``n_folds`` subsets (0-based): fold i trains on
    the ``n_folds - 2`` subsets from i on, validates on the next and tests on the one after,
    so fold i + 1's vali subset is fold i's test subset. For five folds: Fold1 trains on
    S1-S3, validates on S4, tests on S5; Fold2 trains on S2-S4, validates on S5, tests on S1."""
    return [([(i + j) % n_folds for j in range(n_folds - 2)], (i + n_folds - 2) % n_folds,
             (i + n_folds - 1) % n_folds) for i in range(n_folds)]


def write_fold_layout(root: Path, info: DatasetInfo, spec: ShapeSpec) -> dict[str, object]:
    """Write ``spec.queries`` queries shaped like ``info`` in its registry layout under
    ``root``, split into one subset per fold and rotated over the folds like the real
    data (:func:`rotation`): a subset is written the same way wherever it appears, so one
    fold's test file and the next fold's vali file are identical bytes. Qids are unique
    over the whole dataset.

    Each subset is generated and formatted once, and each fold file is the concatenation
    of its subsets' bytes. Everything is written in a new folder beside ``root`` first; it
    then becomes ``root`` (or, when ``root`` holds files already, each file is renamed into
    it), so a failed write leaves no partial file under ``root``."""
    n = len(info.folds)
    if n < 3 or not {"train", "vali", "test"} <= set(info.files):
        raise LtrError(f"{info.name} has no train/vali/test fold layout to write (it has splits "
                       f"{', '.join(sorted(info.files))} and {n} folds)")
    if spec.queries < n:
        raise LtrError(f"--queries must be at least {n} (one query per subset, {n} subsets)")
    bounds = np.linspace(0, spec.queries, n + 1).round().astype(int)
    sizes = np.diff(bounds).tolist()
    style = spec.qid_style or info.qid_source
    root = Path(root)
    parent = root.parent
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{root.name[:100]}.", dir=parent))
    try:
        queries = shaped_queries(info, spec)
        parts = [work / "subsets" / f"S{k + 1}.txt" for k in range(n)]
        parts[0].parent.mkdir()
        documents = sum(write_svmlight(part, islice(queries, size), qid_style=style, sparse=info.sparse)
                        for part, size in zip(parts, sizes))
        layout = work / "layout"
        written = []
        for number, (train, vali, test) in zip(info.folds, rotation(n)):
            for split, chosen in (("train", train), ("vali", [vali]), ("test", [test])):
                path = info.path_for(layout, split, number)
                path.parent.mkdir(parents=True, exist_ok=True)
                _concatenate(path, [parts[k] for k in chosen])
                written.append(path.relative_to(layout))
                if style == "group":
                    _concatenate(path.with_name(path.name + ".query"),
                                 [p.with_name(p.name + ".query") for p in parts])
                    written.append(path.relative_to(layout).with_name(path.name + ".query"))
        _place(layout, root, written)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"root": str(root), "dataset": info.name, "folds": n, "subsets": sizes,
            "queries": spec.queries, "documents": documents, "features": info.n_features, "qid": style}


def _concatenate(target: Path, sources: list[Path]) -> None:
    with open(target, "wb") as out:
        for source in sources:
            with open(source, "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 20)


def _place(layout: Path, root: Path, files: list[Path]) -> None:
    """Make the finished ``layout`` folder ``root``: renamed whole when ``root`` is new or
    empty, else each of ``files`` renamed into ``root`` (replacing a file of that name)."""
    if not root.exists() or (root.is_dir() and not root.is_symlink() and not any(root.iterdir())):
        if root.exists():
            root.rmdir()
        os.replace(layout, root)
        return
    for relative in files:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        os.replace(layout / relative, root / relative)


def _check_docs_per_query(mean: float, info: DatasetInfo) -> None:
    """A finite mean of at least one document whose queries fit the per-query memory budget
    a config's ``dataset.docs_per_query`` has (twice the mean, for the Poisson spread)."""
    from ltr_cli.data.options import DEFAULT_MAX_QUERY_MB

    most = DEFAULT_MAX_QUERY_MB * (1 << 20) / (8 * info.n_features) / 2
    if not (math.isfinite(mean) and 1 <= mean <= most):
        raise LtrError(f"--docs-per-query {mean:g}: give a mean from 1 to {most:,.0f} documents per query "
                       f"({info.name} has {info.n_features} features, and a query may take "
                       f"{DEFAULT_MAX_QUERY_MB:g} MB)")


def synthesize(out: Path, like: str | None, separable: str | None, queries: int,
               docs_per_query: float | None, seed: int, qid_style: str | None,
               folds: bool = False, relevance: str = DEFAULT_RELEVANCE) -> dict[str, object]:
    """``ltr data synth``: write generated queries (shaped like a registry dataset, or the
    perceptron paper's separable set) to ``out``, or with ``folds`` the registry dataset's
    fold layout under the directory ``out`` (:func:`write_fold_layout`); what was written."""
    if (like is None) == (separable is None):
        raise LtrError("give exactly one of --like NAME or --separable authors|paper")
    if relevance not in RELEVANCE:
        raise LtrError(f"--relevance {relevance!r}: give one of {', '.join(RELEVANCE)}")
    if separable is not None and relevance != DEFAULT_RELEVANCE:
        raise LtrError("--relevance applies to data shaped like a benchmark (--like NAME); the separable "
                       "set's relevance is its generating ranker")
    shown = {} if relevance == DEFAULT_RELEVANCE else {"relevance": relevance}
    if like is not None and docs_per_query is not None:
        _check_docs_per_query(docs_per_query, get_dataset(like))
    if folds:
        if like is None:
            raise LtrError("--folds writes a registry dataset's layout: give --like NAME")
        if out.exists() and not out.is_dir():
            raise LtrError(f"{out}: --folds writes a directory (the dataset root); this is a file")
        return {**write_fold_layout(out, get_dataset(like), ShapeSpec(queries, docs_per_query, seed=seed,
                                                                      qid_style=qid_style, relevance=relevance)),
                **shown}
    if like is not None:
        info = get_dataset(like)
        queries_it = shaped_queries(info, ShapeSpec(queries, docs_per_query, seed=seed, relevance=relevance))
        style, sparse, width = qid_style or info.qid_source, info.sparse, info.n_features
    else:
        if separable not in ("authors", "paper"):
            raise LtrError(f"--separable must be 'authors' or 'paper', not {separable!r}")
        spec = SeparableSpec(separable, queries, features=10 if separable == "authors" else 20, seed=seed)
        queries_it = separable_queries(spec)
        style, sparse, width = qid_style or "token", False, spec.features
    n = write_svmlight(out, queries_it, qid_style=style, sparse=sparse)
    return {"out": str(out), "queries": queries, "documents": n, "features": width, "qid": style, **shown}
