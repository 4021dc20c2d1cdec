"""``ltr interleave``: two saved models compared online on a labelled file, as the
interleaving literature's fidelity experiment does it.

Each impression draws a query uniformly (with replacement), ranks its documents with both
models, interleaves the two rankings, lets a click model click on the shown list's true
labels, and credits the clicks. All draws come from one ``numpy`` generator seeded by the
user, in a fixed order (query, list, clicks), so a seed gives the same counts. The verdict
(wins against losses, two-sided sign test) is set beside the two models' offline NDCG@10
on the same file.

Each model reads the file as its run read the data it was trained on (:class:`Reading`:
index base, qid source, null fill, split rule, input bounds, storage), so two runs trained on
one layout with other reading settings are both scored on the features they learnt from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModel
from ltr_cli.clicks.tables import grades_for_max_label
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.normalize import NormalizedModel
from ltr_cli.data.options import ReaderOptions
from ltr_cli.errors import DataFormatError, LtrError
from ltr_cli.interleaving.base import Method
from ltr_cli.measures.conventions import CONVENTIONS, bind
from ltr_cli.measures.metrics import rank_from_scores, row_scores
from ltr_cli.results.models import LinearModel

#: the offline measure the verdict is checked against, and its convention
OFFLINE_METRIC, CONVENTION = "ndcg@10", "paper"
#: at most this many impressions per command
MAX_IMPRESSIONS = 10_000_000


@dataclass(frozen=True)
class RankedFile:
    """A file's queries ranked by one model: per query, the ranking (int64 (m,), best
    first) and the labels (float64 (m,)), in file order; and where each query starts."""

    rankings: list[np.ndarray]
    labels: list[np.ndarray]
    lines: list[int]
    qids: list[str]
    reading: str = ""  # whose model ranked the file and how it read it, for messages


@dataclass(frozen=True)
class Reading:
    """How one run's model reads a file: ``options``, the reader options of the data the
    run was trained on at the model's width, and ``storage``, the dtype its rows were kept
    in while it learnt (``dataset.storage``; the rows are rounded to it before scoring)."""

    options: ReaderOptions
    storage: str = "float64"

    def describe(self) -> str:
        """The settings in words: ``index base 1, qid source token``, then any other that is
        not the reader's default."""
        o = self.options
        parts = [f"index base {o.index_base}", f"qid source {o.qid_source}"]
        if o.null_value is not None:
            parts.append(f"null_value {o.null_value:g}")
        if o.split_qids != "error":
            parts.append(f"split_qids {o.split_qids}")
        if self.storage != "float64":
            parts.append(f"storage {self.storage}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Ranker:
    """One side of the experiment: ``name`` (``RUN_A``), the run it comes from, the key of
    its model in ``models.json`` (a fold, ``None``, ``final``), the scorer, its width and
    its :class:`Reading`."""

    name: str
    run: Path
    key: str
    scorer: Any
    n_features: int
    reading: Reading

    def describe(self) -> str:
        """``RUN_A (fold 1's model of results/x/ranksvm-...)``."""
        model = {"final": "final weights", "None": "model"}.get(self.key, f"fold {self.key}'s model")
        return f"{self.name} ({model} of {self.run})"


def training_reading(run: Path, n_features: int, index_base: int | None = None) -> Reading:
    """How the run at ``run`` (its folder, or its ``models.json``) read the data it was
    trained on, from the ``dataset`` block of its ``config.yaml``, by the rule its run read
    files with (:func:`~ltr_cli.data.sources.files.spec_reader_options`), at the model's
    width ``n_features``; ``index_base`` (``--index-base``) overrides the run's. A
    ``models.json`` without a ``config.yaml`` beside it reads with the reader's defaults
    (1-based). A dataset block this ltr cannot read is a one-line error naming the file."""
    from pydantic import TypeAdapter, ValidationError

    from ltr_cli.config.datasets import DatasetSpec
    from ltr_cli.data.sources.files import spec_reader_options
    from ltr_cli.results.folders import read_config

    path = (run if run.is_dir() else run.parent) / "config.yaml"
    options, storage = ReaderOptions(), "float64"
    if path.is_file():
        block = read_config(path).get("dataset")
        try:
            spec: Any = TypeAdapter(DatasetSpec).validate_python(block)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(["dataset", *(str(part) for part in first["loc"])])
            raise LtrError(f"{path}: {key}: {first['msg']}; this run's data settings cannot be read, so "
                           "its model cannot be given the features it learnt from") from None
        options, storage = spec_reader_options(spec), getattr(spec, "storage", "float64")
    base = options.index_base if index_base is None else index_base
    return Reading(replace(options, n_features=n_features, index_base=base), storage)


def open_ranker(name: str, run: Path, fold: str | None, index_base: int | None = None) -> Ranker:
    """The model of ``run`` (``fold``'s, default the first) and how it reads a file."""
    from ltr_cli.results.scoring import load_fold_model

    scorer, n_features, key = load_fold_model(run, fold)
    return Ranker(name, run, key, scorer, n_features, training_reading(run, n_features, index_base))


def rank_by(ranker: Ranker, data_file: Path) -> RankedFile:
    """:func:`rank_file` for one side, reading ``data_file`` as the ranker's run read its data.
    A file with more features than the model is a one-line error naming the run, the model
    and both counts; any other error in the file says how it was read, and for which run."""
    options, dtype = ranker.reading.options, np.dtype(ranker.reading.storage).type
    try:
        ranked = rank_file(ranker.scorer, data_file, options, dtype)
    except DataFormatError as exc:
        width = _width(data_file, options)
        if width is not None and width > ranker.n_features:
            raise LtrError(f"{data_file}: the file has {width} features ({options.index_base}-based) and "
                           f"{ranker.describe()} has {ranker.n_features}; give a file of the features "
                           "that run was trained on") from None
        raise LtrError(f"{exc} (read for {ranker.describe()} as its run read its data: "
                       f"{ranker.reading.describe()})") from None
    return replace(ranked, reading=f"{ranker.describe()}: {ranker.reading.describe()}")


def _width(data_file: Path, options: ReaderOptions) -> int | None:
    """The features ``data_file``'s rows reach at ``options``' index base (a sparse scan),
    or None when the file cannot be scanned."""
    try:
        top = max((s[4] for s in open_dataset(data_file, replace(options, n_features=None)).summaries()),
                  default=-1)
    except DataFormatError:
        return None
    return top + 1


def model_scores(scorer: Any, X: np.ndarray) -> np.ndarray:
    """A saved model's scores for ``X``; a linear model's by the tie-exact row sum
    (:func:`~ltr_cli.measures.metrics.row_scores`), so equal rows tie exactly."""
    inner, rows = scorer, X
    if isinstance(scorer, NormalizedModel):
        inner, rows = scorer.model, scorer.normalizer.apply(X)
    with np.errstate(over="ignore", invalid="ignore"):
        return row_scores(rows, inner.w) if isinstance(inner, LinearModel) else np.asarray(scorer.scores(X))


def rank_file(scorer: Any, data_file: Path, options: ReaderOptions, dtype: type = np.float64) -> RankedFile:
    """Every query of ``data_file`` ranked by ``scorer`` under the paper convention's tie
    order, its rows read as ``dtype``; one-line errors for scores that overflow."""
    ties = CONVENTIONS[CONVENTION].ties
    out = RankedFile([], [], [], [])
    for q in open_dataset(data_file, options).dense_queries(dtype):
        scores = model_scores(scorer, q.X)
        if not np.isfinite(scores).all():
            raise LtrError(f"{data_file}:{q.line}: the model's scores for query {q.qid} overflow "
                           "(NaN or infinite); the weights are too large for these features")
        out.rankings.append(rank_from_scores(scores, ties))
        out.labels.append(np.asarray(q.y, dtype=np.float64))
        out.lines.append(q.line)
        out.qids.append(q.qid)
    if not out.rankings:
        raise LtrError(f"{data_file}: no queries; give a labelled SVMlight/LETOR file")
    return out


def click_grades(ranked: RankedFile, data_file: Path, grades: int | None) -> int:
    """The click table's grades: ``grades`` if given, else what the labels call for; a label
    that is not a whole number in the table's range is refused, naming its line."""
    top = max(float(y.max()) for y in ranked.labels)
    for y, line, qid in zip(ranked.labels, ranked.lines, ranked.qids):
        bad = y[(y != np.round(y)) | (y < 0)]
        if bad.size:
            raise LtrError(f"{data_file}:{line}: query {qid} has label {bad[0]:g}; click models need "
                           "whole-number grades 0, 1, 2, ...")
    wanted = grades if grades is not None else grades_for_max_label(int(top))
    if top >= wanted:
        line = next(ln for y, ln in zip(ranked.labels, ranked.lines) if y.max() == top)
        raise LtrError(f"{data_file}:{line}: label {top:g} is outside the {wanted}-grade click table; "
                       "give --grades with more grades")
    return wanted


def build_clicks(model: str, ranked: RankedFile, data_file: Path, grades: int | None, stop: str | None,
                 eta: float | None) -> ClickModel:
    """The click model for ``ranked``'s labels: a named model's table has the grades the
    labels call for (or ``grades``); a custom table has its own length (or must match
    ``grades``), and every label must fall within it."""
    from ltr_cli.clicks.spec import build_model

    if not model.lstrip().startswith("{"):
        return build_model(model, click_grades(ranked, data_file, grades), stop, eta)
    built = build_model(model, grades, stop, eta)
    click_grades(ranked, data_file, built.grades)
    return built


def offline_ndcg(ranked: RankedFile) -> float:
    """The mean NDCG@10 of the rankings (paper convention, a query without a relevant
    document counts 0)."""
    meas = bind([OFFLINE_METRIC], CONVENTIONS[CONVENTION])[0]
    values = [meas.value(r, y) for r, y in zip(ranked.rankings, ranked.labels)]
    return float(np.mean([0.0 if v is None else v for v in values]))


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial (sign) test of wins against losses, ties left out; 1 when
    neither side has an impression."""
    if wins + losses == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(wins, wins + losses, 0.5).pvalue)


def _side(a: float, b: float) -> str:
    return "A" if a > b else "B" if b > a else "tie"


def check_impressions(impressions: int) -> int:
    """``impressions`` when it is 1 to :data:`MAX_IMPRESSIONS`; a one-line error otherwise."""
    if not 1 <= impressions <= MAX_IMPRESSIONS:
        raise LtrError(f"--impressions {impressions}: give 1 to {MAX_IMPRESSIONS} impressions")
    return impressions


def interleave_runs(a: RankedFile, b: RankedFile, method: Method, clicks: ClickModel, impressions: int,
                    shown: int, seed: int, data_file: Path) -> dict[str, Any]:
    """The experiment's record: the counts of wins (A preferred), losses and ties over
    ``impressions``, the sign test's p-value, the offline NDCG@10 of both, and whether the
    two verdicts agree. For a probabilistic method an impression is a win when its expected
    outcome favours A."""
    check_impressions(impressions)
    if a.qids != b.qids or any(not np.array_equal(x, y) for x, y in zip(a.labels, b.labels)):
        raise LtrError(f"{data_file}: the two models read different queries from it, each as its run read "
                       f"its data ({a.reading or 'A'}; {b.reading or 'B'}); compare runs whose data was read "
                       "alike")
    rng = np.random.default_rng(seed)
    counts = {"wins": 0, "losses": 0, "ties": 0}
    for _ in range(impressions):
        q = int(rng.integers(len(a.rankings)))
        listed = method.make(np.stack([a.rankings[q], b.rankings[q]]), shown, rng)
        clicked = clicks.sample(a.labels[q][listed.docs].astype(np.int64), rng, 1)[0]
        outcome = float(method.credit(listed, clicked).prefer[0, 1])
        counts["wins" if outcome > 0 else "losses" if outcome < 0 else "ties"] += 1
    ndcg_a, ndcg_b = offline_ndcg(a), offline_ndcg(b)
    online, offline = _side(counts["wins"], counts["losses"]), _side(ndcg_a, ndcg_b)
    return {
        "method": method.name, "clicks": clicks.describe(), "impressions": impressions, "shown": shown,
        "seed": seed, "queries": len(a.rankings), **counts,
        "p_value": sign_test(counts["wins"], counts["losses"]),
        "online_verdict": online,
        "offline": {"metric": OFFLINE_METRIC, "convention": CONVENTION, "A": ndcg_a, "B": ndcg_b,
                    "difference": ndcg_a - ndcg_b, "verdict": offline},
        "agrees": online == offline,
    }


def render(rec: dict[str, Any]) -> list[str]:
    """The record as text lines."""
    off = rec["offline"]
    return [
        f"{rec['method']} interleaving, {rec['clicks']['model']} clicks, {rec['impressions']} impressions "
        f"on {rec['queries']} queries (seed {rec['seed']}, {rec['shown']} shown)",
        f"wins (A preferred) {rec['wins']}  losses {rec['losses']}  ties {rec['ties']}  "
        f"sign test p = {rec['p_value']:.4g}",
        f"online verdict: {rec['online_verdict']}",
        f"offline {off['metric']}: A {off['A']:.6f}  B {off['B']:.6f}  difference {off['difference']:+.6f}  "
        f"verdict: {off['verdict']}",
        f"agrees: {'yes' if rec['agrees'] else 'no'}",
    ]
