"""Experiment configs: YAML -> validated, typed :class:`ExperimentSpec`.

Unknown keys and wrong types fail with the dotted key path and what was expected
(``ConfigError``). YAML is read by :mod:`ltr_cli.yamlio`: the YAML 1.2 core schema (so
``1_000``, ``1:30`` and ``yes`` are strings, ``1e3`` is a number), safe constructors
only, no aliases and no repeated keys, so a config can neither build Python objects nor
expand into an alias bomb nor silently lose a value. Types are strict (a bool is not an
int, a string is not a number). Names that become paths (``experiment``, learner names)
are checked by :mod:`ltr_cli.names`. ``--set key=value`` overrides are applied to the raw
mapping before validation (values parsed with the same YAML rules). Relative paths in a
config are relative to the current directory.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError,
                      field_validator, model_validator)

from ltr_cli.errors import ConfigError
from ltr_cli.names import NAME_HELP, check_label, check_name
from ltr_cli.metrics import Measure, parse_cutoff
from ltr_cli.yamlio import StrictLoader, YamlProblem, parse_yaml


class _Strict(BaseModel):
    """Unknown keys are errors, and types are strict: an int field takes a YAML integer only
    (not true/false, 3.0 or "3"), a float field a YAML number (an integer too), a bool field
    true or false, a string field a string."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


# paths are written as strings in YAML (strict mode would want a Path object)
LaxPath = Annotated[Path, Field(strict=False)]
# experiment and learner names become directory and file names
Name = Annotated[str, AfterValidator(check_name)]
Label = Annotated[str, AfterValidator(check_label)]


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected 0 or 1, not a boolean")
    return value


# --- datasets --------------------------------------------------------------------------

# input bounds (reader options of the same names): they decide whether a file is read, not
# what is read, so they are left out of run ids
DEFAULT_MAX_QUERY_MB = 1024.0
MAX_GENERATED_MB = 4096.0
LIMIT_KEYS = ("max_line_bytes", "max_query_mb", "max_decompression_ratio")


class _ReaderKnobs(_Strict):
    null_value: float | None = Field(None, description="fill for LETOR NULL values; null = error")
    split_qids: Literal["error", "new-query"] = "error"
    storage: Literal["float64", "float32"] = Field(
        "float64", description="dtype of the feature rows handed to learners (and kept in the cache)")
    max_line_bytes: int = Field(1 << 20, gt=0, description="longest line accepted (bytes)")
    max_query_mb: float = Field(DEFAULT_MAX_QUERY_MB, gt=0,
                                description="largest query accepted: documents x features x 8 bytes, in MB")
    max_decompression_ratio: float = Field(
        200.0, gt=1, description="a compressed file may expand to at most this many times its size")

    def limits(self) -> dict[str, Any]:
        """The input bounds, as reader options."""
        return {key: getattr(self, key) for key in LIMIT_KEYS}


def _within_budget(docs: float, features: int, key: str) -> None:
    """A generated query's dense rows must fit the per-query memory budget."""
    mb = docs * features * 8 / (1 << 20)
    if mb > DEFAULT_MAX_QUERY_MB:
        raise ValueError(f"{key} {docs:g} x {features} features is {mb:,.0f} MB per query, over the "
                         f"{DEFAULT_MAX_QUERY_MB:g} MB a query may take; use fewer documents")


def _known_dataset(value: str) -> str:
    """Validator: ``value`` names a registry dataset."""
    from ltr_cli.data.registry import DATASETS

    if value not in DATASETS:
        raise ValueError(f"unknown dataset {value!r}; known: {', '.join(sorted(DATASETS))}")
    return value


class SeparableData(_Strict):
    """The perceptron paper's margin-separable set (generated, no download)."""

    kind: Literal["separable"]
    variant: Literal["authors", "paper"] = "authors"
    queries: int = Field(1000, gt=0)
    docs: int = Field(20, gt=1)
    features: int | None = Field(None, gt=0, description="default 10 (authors) / 20 (paper)")
    margin: float = Field(1.0, gt=0)
    seed: int | None = Field(None, ge=0, description="data seed; default: the experiment seed")

    @model_validator(mode="after")
    def _fits(self) -> "SeparableData":
        features = self.features or 20
        _within_budget(self.docs, features, "docs")
        # the stream is generated once and kept for the theory's constants
        total = self.queries * self.docs * features * 8 / (1 << 20)
        if total > MAX_GENERATED_MB:
            raise ValueError(f"queries {self.queries} x docs {self.docs} x {features} features is "
                             f"{total:,.0f} MB, over the {MAX_GENERATED_MB:g} MB a separable stream may "
                             "take (it is kept in memory); use fewer queries")
        return self


class ShapedData(_Strict):
    """Generated queries shaped like a registry dataset (width, docs/query, labels)."""

    kind: Literal["shaped"]
    like: str
    queries: int = Field(200, gt=0)
    docs_per_query: float | None = Field(None, gt=0)
    seed: int | None = Field(None, ge=0)

    _known = field_validator("like")(_known_dataset)

    @model_validator(mode="after")
    def _fits(self) -> "ShapedData":
        from ltr_cli.data.registry import DATASETS

        if self.docs_per_query is not None and self.like in DATASETS:  # Poisson spread: allow 2x
            _within_budget(2 * self.docs_per_query, DATASETS[self.like].n_features, "docs_per_query")
        return self


class RegistryData(_ReaderKnobs):
    """A downloaded benchmark from the registry (``ltr list`` shows the names)."""

    kind: Literal["registry"]
    name: str
    root: LaxPath
    split: str = "train"
    folds: list[int] | None = None

    _known = field_validator("name")(_known_dataset)


class FilesData(_ReaderKnobs):
    """Explicit SVMlight files with their width, index base and qid source."""

    kind: Literal["files"]
    files: list[LaxPath] = Field(min_length=1)
    features: int = Field(gt=0)
    index_base: Annotated[Literal[0, 1], BeforeValidator(_not_bool)] = 1
    qid: Literal["auto", "token", "comment", "group"] = "auto"
    group_files: list[LaxPath] | None = Field(
        None, description="one group file per data file (default: <file>.query/.group next to it)")

    @field_validator("group_files")
    @classmethod
    def _one_per_file(cls, v: list[Path] | None, info: Any) -> list[Path] | None:
        files = info.data.get("files")
        if v is not None and files is not None and len(v) != len(files):
            raise ValueError(f"give one group file per data file ({len(files)}), not {len(v)}")
        return v


DatasetSpec = Annotated[
    Union[SeparableData, ShapedData, RegistryData, FilesData], Field(discriminator="kind")
]


# --- protocol and metrics ----------------------------------------------------------------

class ProtocolSpec(_Strict):
    passes: int = Field(1, gt=0)
    feedback: str = Field(
        "auto", description="auto (each learner what it needs) | full | top-K: labels revealed after each round")
    shuffle: bool = Field(False, description="shuffle queries within each file, every pass")
    keep_probability: float = Field(1.0, gt=0, le=1)
    drop_last_query: bool = Field(
        False, description="never use the last query of each file in each pass (the authors' "
        "MATLAB loop processes a query only when the next qid starts)")
    max_rounds: int | None = Field(None, gt=0)
    checkpoint_every: int = Field(
        1000, ge=0, description="save a resumable checkpoint every N rounds (0: never)")

    @field_validator("feedback")
    @classmethod
    def _feedback(cls, v: str) -> str:
        if v in ("auto", "full"):
            return v
        head, _, k = v.partition("-")
        if head == "top" and parse_cutoff(k) is not None:
            return v
        raise ValueError("expected auto, full or top-K with K a positive integer in ASCII digits "
                         "(e.g. top-1)")

    def feedback_k(self) -> int | None:
        """K of ``top-K`` feedback, None for ``auto`` / ``full``."""
        return int(self.feedback.split("-")[1]) if self.feedback.startswith("top-") else None


class MetricsSpec(_Strict):
    names: list[str] = Field(default_factory=lambda: ["ndcg@10", "ap"], min_length=1)
    # online runs use the paper's Eq. 1/2; the LETOR/MSLR script presets are for `ltr eval`
    convention: Literal["paper"] = "paper"
    no_relevant: Literal["zero", "one", "skip"] = "zero"
    ties: Literal["input-order", "reverse-input", "random"] = "input-order"
    relevance_threshold: float = 0.0
    eru_d: float = 0.0
    eru_alpha: float = Field(5.0, gt=1)

    @field_validator("names")
    @classmethod
    def _valid_names(cls, names: list[str]) -> list[str]:
        for n in names:
            Measure(n)  # raises ValueError with the list of known metrics
        if len(set(names)) != len(names):
            raise ValueError("metric names must be unique")
        return names

    def measures(self) -> list[Measure]:
        return [
            Measure(n, self.no_relevant, self.relevance_threshold, self.eru_d, self.eru_alpha)
            for n in self.names
        ]


# --- learners ----------------------------------------------------------------------------

class StepSpec(_Strict):
    rule: Literal["constant", "inv-sqrt"] = "inv-sqrt"
    eta: float = Field(1.0, gt=0)
    loss_scaled: bool = Field(False, description="multiply by the round's ranking loss (authors' Alg. 3)")


def _measure_name(value: str | None) -> str | None:
    from ltr_cli.learners.base import parse_measure

    return None if value is None else parse_measure(value)


def _reject_loss_scaled(step: StepSpec) -> StepSpec:
    if step.loss_scaled:
        raise ValueError("loss_scaled needs a ranking loss: only slam-perceptron and alg3 have one")
    return step


_MAXIMISER_TIES_HELP = ("equal hinge terms inside the surrogate: first-index (smallest document "
                        "index) | authors-code (higher relevance level, then the later document)")


_NUMERICS_HELP = ("stable: shifted exponentials, a non-finite step is an error | authors-code: the "
                  "authors' unshifted expressions; weights may become NaN (reported, not an error)")


class _LearnerBase(_Strict):
    label: Label | None = Field(None, description="legend label (default: the paper's name)")
    step: StepSpec = StepSpec()


class SlamPerceptronSpec(_LearnerBase):
    """Algorithm 2 (perceptron paper) on a SLAM surrogate."""

    type: Literal["slam-perceptron"]
    measure: str = Field("ndcg", description="weight vector: ndcg (Eq. 11), ndcg@K (Eq. 24), ap (Eq. 10)")
    mistake: str | None = Field(None, description="measure whose loss triggers updates; default: measure")
    weights: Literal["paper", "paper-fixed", "level-averaged"] = Field(
        "paper", description="paper: score order within a level (exchangeable); paper-fixed: "
        "input order (convex); level-averaged: the authors' code")
    margin: Literal["constant", "label-difference"] = "constant"
    delta: float = Field(1.0, gt=0)
    relevance_threshold: float = Field(0.0, description="AP: relevant = label > this")
    maximiser_ties: Literal["first-index", "authors-code"] = Field(
        "first-index", description=_MAXIMISER_TIES_HELP)

    _measures = field_validator("measure", "mistake")(_measure_name)


class MaxPairPerceptronSpec(_LearnerBase):
    """Algorithm 3 (perceptron paper): the max-pair surrogate of Eq. 27."""

    type: Literal["alg3"]
    mistake: str = Field("ndcg", description="measure whose loss triggers updates")
    margin: Literal["constant", "label-difference"] = "constant"
    delta: float = Field(1.0, gt=0)
    relevance_threshold: float = 0.0
    maximiser_ties: Literal["first-index", "authors-code"] = Field(
        "first-index", description=_MAXIMISER_TIES_HELP)

    _measures = field_validator("mistake")(_measure_name)


class OGDSpec(_LearnerBase):
    """Online gradient descent on a surrogate, every round, optional projection radius."""

    type: Literal["ogd"]
    surrogate: Literal["squared", "ranksvm", "ordinal", "preference", "listnet", "kl", "smoothdcg"]
    radius: float | None = Field(None, gt=0, description="project w onto the ball of this radius")
    delta: float = Field(1.0, gt=0, description="ranksvm margin")
    cost: Union[Literal["uniform", "difference"], list[list[float]]] = Field(
        "uniform", description="ordinal/preference pair costs (matrix indexed by integer labels)")

    @field_validator("cost")
    @classmethod
    def _square_cost(cls, v: Any) -> Any:
        if isinstance(v, list):
            n = len(v)
            if n < 2 or any(len(row) != n for row in v):
                raise ValueError("the cost matrix must be square, at least 2 x 2 (one row per label 0..n-1)")
            if any(x < 0 for row in v for x in row):
                raise ValueError("cost matrix entries must be >= 0")
        return v

    @field_validator("step")
    @classmethod
    def _no_loss_scaling(cls, v: StepSpec) -> StepSpec:
        return _reject_loss_scaled(v)
    epsilon: float = Field(0.01, gt=0, description="smoothdcg smoothing")

    def surrogate_params(self) -> dict[str, Any]:
        return {"ranksvm": {"delta": self.delta}, "ordinal": {"cost": self.cost},
                "preference": {"cost": self.cost}, "smoothdcg": {"epsilon": self.epsilon}}.get(
            self.surrogate, {})


class ListNetSpec(_LearnerBase):
    """Online ListNet (top-1 cross entropy, target softmax(R)), updated every round."""

    type: Literal["listnet"]
    radius: float | None = Field(None, gt=0)
    numerics: Literal["stable", "authors-code"] = Field(
        "stable", description=_NUMERICS_HELP)

    @field_validator("step")
    @classmethod
    def _no_loss_scaling(cls, v: StepSpec) -> StepSpec:
        return _reject_loss_scaled(v)


class RTopKFSpec(_Strict):
    """RTop-kF (top-k paper, Alg. 1): learns from the labels of the top 1 (squared, KL,
    SmoothDCG) or top 2 (RankSVM) shown documents only."""

    type: Literal["rtopkf"]
    label: Label | None = None
    surrogate: Literal["squared", "ranksvm", "kl", "smoothdcg"]
    schedule: Literal["paper", "authors-code"] = Field(
        "paper", description="paper: eta = c T^(-2/3), gamma = c T^(-1/3); authors-code: 0.1 t^(-2/3), 0.1 t^(-1/3)")
    horizon: int | None = Field(None, gt=0, description="planned rounds T (paper schedule); default: known stream length")
    eta_scale: float | None = Field(None, gt=0, description="c_eta (default 1 paper, 0.1 authors-code)")
    gamma_scale: float | None = Field(None, ge=0, description="c_gamma (default 1 paper, 0.1 authors-code; 0: no exploration)")
    radius: float | None = Field(1.0, gt=0, description="projection radius U")
    epsilon: float = Field(0.01, gt=0, description="SmoothDCG smoothing (authors' code: 0.001)")
    fidelity: Literal["exact", "authors-code"] = Field(
        "exact", description="estimator denominators: exact sampling law (unbiased) or the authors' c gamma/m (biased)")
    miss_scale: float = Field(
        0.001, gt=0, description="authors-code denominators: c in c gamma/m when the shown top is not the exploit "
        "top (0.001 RankingTopKF.m, 1 RankingTopKFYahooParam_1.m, 1000 RankingTopKFYandexParam_1.m)")
    numerics: Literal["stable", "authors-code"] = Field("stable", description=_NUMERICS_HELP)
    direction: Literal["descend-gain", "ascend-gain"] = Field(
        "descend-gain", description="SmoothDCG: descend-gain steps w - eta z on the gain's gradient estimate, as the "
        "paper and the authors' code (it lowers DCG); ascend-gain is the corrected variant")
    short_lists: Literal["learn", "skip"] | None = Field(
        None, description="lists of fewer than 2 documents: skip (no draw, no update; the authors' scripts) | "
        "learn; default: skip under fidelity authors-code, else learn")

    @model_validator(mode="after")
    def _smoothdcg_only(self) -> "RTopKFSpec":
        if self.direction != "descend-gain" and self.surrogate != "smoothdcg":
            raise ValueError("direction applies to the smoothdcg surrogate only")
        return self


class RandomSpec(_Strict):
    """A uniformly random ranking every round (a baseline that never learns)."""

    type: Literal["random"]
    label: str | None = None


# --- batch learners (the direct-optimisation paper; used with a cv: block) -----------------

def _grid_values(grid: dict[str, list[Any]], allowed: dict[str, type], spec: str) -> dict[str, list[Any]]:
    for key, values in grid.items():
        if key not in allowed:
            raise ValueError(f"{spec} has no hyper-parameter {key!r}; it has {', '.join(allowed)}")
        if not values:
            raise ValueError(f"grid {key!r} has no values")
        for v in values:
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"grid {key!r}: values must be positive numbers (got {v!r})")
    return grid


def _batch_measure(value: str) -> str:
    """Validator: an AdaRank / PermuRank measure, ``map``, ``ndcg`` or ``ndcg@K``."""
    kind, at, cut = value.partition("@")
    if value in ("map", "ndcg") or kind == "ndcg" and parse_cutoff(cut) is not None:
        return value
    raise ValueError(f"unknown measure {value!r}; expected map, ndcg or ndcg@K (K a positive "
                     "integer in ASCII digits)")


class _BatchBase(_Strict):
    label: Label | None = None

    def grid_points(self) -> list[dict[str, Any]]:
        grid = self.grid or {}  # type: ignore[attr-defined]
        keys = list(grid)
        import itertools

        return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))] or [{}]


class SVMmapSpec(_BatchBase):
    """SVMmap: structural SVM on 1 - AP (BMRM, lambda = 1/C)."""

    type: Literal["svmmap"]
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0, 100.0]})
    relevance_threshold: float = 0.0
    eps: float = Field(1e-4, gt=0)

    _g = field_validator("grid")(lambda v: _grid_values(v, {"C": float}, "svmmap"))


class RankSVMSpec(_BatchBase):
    """Ranking SVM: pairwise hinge (BMRM, lambda = 1/C)."""

    type: Literal["ranksvm"]
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"C": [0.01, 0.1, 1.0, 10.0]})
    eps: float = Field(1e-4, gt=0)

    _g = field_validator("grid")(lambda v: _grid_values(v, {"C": float}, "ranksvm"))


class BMRMNDCGSpec(_BatchBase):
    """BMRM on the NDCG structural loss (Le & Smola / CofiRank)."""

    type: Literal["bmrm-ndcg"]
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    k: int = Field(10, gt=0)
    weights: Literal["bmrm", "cofirank"] = "bmrm"
    eps: float = Field(1e-4, gt=0)

    _g = field_validator("grid")(lambda v: _grid_values(v, {"C": float}, "bmrm-ndcg"))


class BMRMSpec(_BatchBase):
    """BMRM on the ranking-losses supplement's ordinal-regression or preference loss."""

    type: Literal["bmrm"]
    loss: Literal["ordinal", "preference"]
    cost: Union[Literal["uniform", "difference"], list[list[float]]] = "uniform"
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    eps: float = Field(1e-4, gt=0)

    _g = field_validator("grid")(lambda v: _grid_values(v, {"C": float}, "bmrm"))


class AdaRankSpec(_BatchBase):
    """AdaRank with single features as weak rankers (AdaRank.MAP / AdaRank.NDCG)."""

    type: Literal["adarank"]
    measure: str = Field("map", description="map or ndcg@K")
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"rounds": [100, 500]})
    tol: float | None = Field(0.002, ge=0, description="stop when the training measure gains <= tol (null: all rounds)")
    relevance_threshold: float = 0.0

    _g = field_validator("grid")(lambda v: _grid_values(v, {"rounds": int}, "adarank"))
    _m = field_validator("measure")(_batch_measure)


class RankBoostSpec(_BatchBase):
    """RankBoost with threshold stumps on single features (RB-c)."""

    type: Literal["rankboost"]
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"rounds": [100, 300]})

    _g = field_validator("grid")(lambda v: _grid_values(v, {"rounds": int}, "rankboost"))


class PermuRankSpec(_BatchBase):
    """PermuRank.MAP (reconstructed; see the README): working sets of permutations."""

    type: Literal["permurank"]
    measure: str = "map"
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    rounds: int = Field(30, gt=0)
    relevance_threshold: float = 0.0

    _g = field_validator("grid")(lambda v: _grid_values(v, {"C": float}, "permurank"))
    _m = field_validator("measure")(_batch_measure)


BATCH_TYPES = ("svmmap", "ranksvm", "bmrm-ndcg", "bmrm", "adarank", "rankboost", "permurank")

LearnerSpec = Annotated[
    Union[SlamPerceptronSpec, MaxPairPerceptronSpec, OGDSpec, ListNetSpec, RTopKFSpec, RandomSpec,
          SVMmapSpec, RankSVMSpec, BMRMNDCGSpec, BMRMSpec, AdaRankSpec, RankBoostSpec, PermuRankSpec],
    Field(discriminator="type"),
]


class CVSpec(_Strict):
    """Batch k-fold protocol: for each fold fit on train, choose hyper-parameters on vali,
    evaluate on test (the LETOR protocol)."""

    select_by: str = Field("map", description="vali metric: map, ndcg@K or p@K")
    convention: Literal["paper", "letor3", "letor4", "mslr"] = "letor3"
    splits: dict[str, str] = Field(default_factory=lambda: {"train": "train", "vali": "vali", "test": "test"})

    @field_validator("select_by")
    @classmethod
    def _select(cls, v: str) -> str:
        kind, at, k = v.partition("@")
        if kind == "map" and not at or kind in ("ndcg", "p") and parse_cutoff(k) is not None:
            return v
        raise ValueError("expected map, ndcg@K or p@K (K a positive integer in ASCII digits)")

_DATASET_KINDS = ("separable", "shaped", "registry", "files")
_LEARNER_TYPES = ("slam-perceptron", "alg3", "ogd", "listnet", "rtopkf", "random",
                  "svmmap", "ranksvm", "bmrm-ndcg", "bmrm", "adarank", "rankboost", "permurank")


class CacheSpec(_Strict):
    enabled: bool = Field(True, description="keep a binary cache of parsed data files")
    dir: LaxPath | None = Field(None, description="where (default: <output>/.cache)")


class ExperimentSpec(_Strict):
    experiment: Name
    description: str = ""
    seed: int = Field(0, ge=0)
    seeds: list[int] | None = Field(
        None, min_length=1, description="repeat every learner once per seed (overrides seed)")
    fidelity: Literal["paper", "authors-code"] = Field(
        "paper", description="which protocol this config follows (recorded with results)"
    )
    dataset: DatasetSpec
    protocol: ProtocolSpec = ProtocolSpec()
    metrics: MetricsSpec = MetricsSpec()
    learners: dict[str, LearnerSpec] = Field(min_length=1)
    output: LaxPath = Path("results")
    cache: CacheSpec = CacheSpec()
    cv: CVSpec | None = Field(None, description="batch k-fold protocol (batch learners only)")
    sweep: dict[str, list[Any]] | None = Field(
        None, description="grid over config keys for `ltr sweep`, e.g. learners.slam.step.eta: [0.1, 1]")

    @field_validator("sweep")
    @classmethod
    def _sweep(cls, v: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        if v is not None:
            for key, values in v.items():
                if not values:
                    raise ValueError(f"sweep key {key!r} has no values")
                if key == "sweep" or key.startswith("sweep."):
                    raise ValueError("a sweep cannot sweep itself")
                if key == "output" or key.startswith("output."):
                    raise ValueError(f"sweep key {key!r}: the results folder cannot be swept (all "
                                     "runs of a sweep go under one output; remove the key, or give "
                                     "the folder with --out)")
        return v

    @model_validator(mode="after")
    def _batch_or_online(self) -> "ExperimentSpec":
        batch = [n for n, l in self.learners.items() if l.type in BATCH_TYPES]
        online = [n for n, l in self.learners.items() if l.type not in BATCH_TYPES]
        if self.cv is not None and online:
            raise ValueError(f"learners {online} are online learners; a cv: (batch) experiment takes "
                             f"{', '.join(BATCH_TYPES)}")
        if self.cv is None and batch:
            raise ValueError(f"learners {batch} are batch learners: add a cv: block (k-fold protocol)")
        if self.cv is not None and not isinstance(self.dataset, RegistryData):
            raise ValueError("a cv: experiment needs a registry dataset (kind: registry) with its folds")
        self._check_feedback()
        return self

    def _check_feedback(self) -> None:
        """``protocol.feedback: top-K`` suits every learner, checked before any runs: only
        partial-feedback learners (RTop-kF) learn from the top K labels, and each needs
        K >= its estimator's (top 1, or top 2 for RankSVM)."""
        k = self.protocol.feedback_k()
        if k is None:
            return
        from ltr_cli.surrogates.topk_estimators import FEEDBACK_K

        for name, lspec in self.learners.items():
            needs = FEEDBACK_K.get(lspec.surrogate) if isinstance(lspec, RTopKFSpec) else None
            if needs is None:
                raise ValueError(f"protocol.feedback is {self.protocol.feedback} but learner {name!r} "
                                 f"({lspec.type}) learns from all labels; use feedback: auto, or "
                                 "only partial-feedback learners (rtopkf)")
            if needs > k:
                raise ValueError(f"protocol.feedback is {self.protocol.feedback} but learner {name!r} "
                                 f"({lspec.surrogate} estimator) needs the top {needs} labels")

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and (len(set(v)) != len(v) or min(v) < 0):
            raise ValueError("seeds must be distinct non-negative integers")
        return v

    def seed_list(self) -> list[int]:
        return list(self.seeds) if self.seeds else [self.seed]

    def for_seed(self, seed: int) -> "ExperimentSpec":
        """The same experiment with one seed (what one run records)."""
        return self.model_copy(update={"seed": seed, "seeds": None})

    @field_validator("learners")
    @classmethod
    def _learner_names(cls, v: dict[str, Any]) -> dict[str, Any]:
        for name in v:
            try:
                check_name(name)
            except ValueError:
                raise ValueError(f"learner name {name!r}: a learner name must be {NAME_HELP}") from None
        return v

    def resolved(self) -> dict[str, Any]:
        """The fully resolved config as plain JSON-able data (defaults filled in)."""
        return self.model_dump(mode="json")

    def run_id(self, learner: str, with_seed: bool = True) -> str:
        """Deterministic run id: learner name + hash of everything that affects its run
        (``with_seed=False``: the same hash without the seed, shared by a learner's seeds)."""
        data = self.resolved()
        data["learners"] = {learner: data["learners"][learner]}
        data.pop("output", None)
        data.pop("cache", None)  # where parsed files are kept does not change results
        data.pop("description", None)
        data.pop("seeds", None)
        data.pop("sweep", None)
        data.get("protocol", {}).pop("checkpoint_every", None)  # does not change results
        for limit in LIMIT_KEYS:  # bounds refuse input, they do not change results
            data.get("dataset", {}).pop(limit, None)
        if not with_seed:
            data.pop("seed", None)
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
        return f"{learner}-{digest}"


# --- loading -----------------------------------------------------------------------------

_SafeNoAliasLoader = StrictLoader  # the YAML loader of configs (see ltr_cli.yamlio)


def _load_yaml(text: str, source: str, in_file: bool = True) -> Any:
    """Parse config YAML (YAML 1.2 core schema, no aliases or repeated keys); a refused
    text is a :class:`ConfigError` naming ``source:line`` (``in_file``) or ``source``."""
    try:
        return parse_yaml(text)
    except YamlProblem as exc:
        fix = "; keep one of them" if exc.problem.startswith("duplicate key") else ""
        where = f"{source}:{exc.line}" if in_file and exc.line else source
        raise ConfigError(where, None, exc.problem + fix) from None


def apply_overrides(data: dict[str, Any], overrides: list[str], source: str) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides (value parsed as YAML) to a raw config mapping."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(source, None, f"--set {item!r}: expected KEY=VALUE, e.g. protocol.passes=2")
        value = _load_yaml(raw, f"--set {key}", in_file=False) if raw else ""
        node: Any = data
        parts = key.split(".")
        learners = data.get("learners")
        if (parts[0] == "learners" and len(parts) > 2 and isinstance(learners, dict)
                and parts[1] not in learners and parts[2:] != ["type"]):
            raise ConfigError(source, None, f"--set {key}: the config has no learner {parts[1]!r}; its "
                              f"learners are {', '.join(map(str, learners)) or '(none)'} (to add one, "
                              f"set learners.{parts[1]}.type first)")
        for i, part in enumerate(parts[:-1]):
            child = node.get(part) if isinstance(node, dict) else None
            if child is None:
                child = {}
                node[part] = child
            if not isinstance(child, dict):
                raise ConfigError(source, ".".join(parts[: i + 1]), "is not a mapping; cannot set a key inside it")
            node = child
        node[parts[-1]] = value
    return data


_NUMBER_ERRORS = ("int_type", "int_parsing", "int_from_float", "float_type", "float_parsing")


def _type_hint(kind: str, value: Any) -> str:
    """How to write the value the key expects, for the usual type slips."""
    if kind in _NUMBER_ERRORS:
        if isinstance(value, bool):
            return "true/false is a boolean, not a number"
        if isinstance(value, str):
            return ("numbers are written unquoted as YAML 1.2 numbers, e.g. 1000, 0.5, 1e-3 "
                    "(no '_' separators, no ':')")
        if kind.startswith("int") and isinstance(value, float):
            if value == value and abs(value) < 1e18 and value.is_integer():
                return f"an integer is written with digits only, e.g. {int(value)}"
            return "expected a whole number written with digits"
    if kind == "bool_type":
        return "write true or false (yes/no/on/off are strings in YAML 1.2)"
    if kind == "string_type" and isinstance(value, (bool, int, float)):
        return "quote it to make it a string"
    return ""


def _known_keys() -> list[str]:
    """Every key name any config model knows (for did-you-mean suggestions)."""
    names: set[str] = set()
    seen: set[type] = set()

    def visit(model: type) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, info in model.model_fields.items():
            names.add(name)
            for arg in _annotation_models(info.annotation):
                visit(arg)

    visit(ExperimentSpec)
    return sorted(names)


def _annotation_models(annotation: Any) -> list[type]:
    """The pydantic models inside a field's annotation (unions, lists, dicts)."""
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found = []
    for arg in typing.get_args(annotation):
        found.extend(_annotation_models(arg))
    return found


def _did_you_mean(key: str, top_level: bool) -> str:
    import difflib

    pool = list(ExperimentSpec.model_fields) if top_level else _known_keys()
    close = difflib.get_close_matches(key, pool, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else " (check the spelling; see the README's config reference)"


def _format_validation(source: str, exc: ValidationError) -> ConfigError:
    errors = exc.errors(include_url=False)
    # an unknown key is usually the cause of the rest (a misspelt required key is also
    # "missing"): report it first
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    parts = list(first["loc"])
    if len(parts) > 1 and parts[0] == "dataset" and parts[1] in _DATASET_KINDS:
        del parts[1]  # the discriminated union's tag is not a key the user wrote
    if len(parts) > 2 and parts[0] == "learners" and parts[2] in _LEARNER_TYPES:
        del parts[2]
    loc = ".".join(str(p) for p in parts) or None
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        ctx = first.get("ctx", {})
        field = str(ctx.get("discriminator", "")).strip("'")
        loc = f"{loc}.{field}" if loc and field else loc
        if first["type"] == "union_tag_invalid":
            msg = f"unknown value {ctx.get('tag')!r}; expected one of {ctx.get('expected_tags')}"
        else:
            msg = f"missing; expected one of the {field} values listed in the README"
        return ConfigError(source, loc, msg)
    if first["type"] == "extra_forbidden":
        msg = "unknown key" + _did_you_mean(str(parts[-1]), len(parts) == 1)
    elif "input" in first and first["type"] not in ("missing",) and not isinstance(first["input"], (dict, list)):
        shown = repr(first["input"])
        if len(shown) > 60:
            shown = shown[:57] + "..."
        hint = _type_hint(first["type"], first["input"])
        msg = f"{msg} (got {shown}{'; ' + hint if hint else ''})"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return ConfigError(source, loc, msg + more)


def parse_config(data: Any, source: str = "<config>") -> ExperimentSpec:
    if not isinstance(data, dict):
        raise ConfigError(source, None, "the config must be a YAML mapping of keys to values")
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise _format_validation(source, exc) from None


MAX_CONFIG_BYTES = 1 << 20


def _read_config_text(path: Path) -> str:
    """A config file's text: a plain file (never a FIFO or device) of at most 1 MiB."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(str(path), None, "not a plain file (a directory, device or FIFO); give "
                              "a YAML config file")
        raw = fh.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(str(path), None, f"larger than {MAX_CONFIG_BYTES >> 20} MiB; is this a config?")
    return raw.decode("utf-8")


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentSpec:
    """Read, override and validate a YAML config file."""
    p = Path(path)
    try:
        text = _read_config_text(p)
    except FileNotFoundError:
        raise ConfigError(str(p), None, "config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(p), None, f"cannot read config ({exc})") from None
    data = _load_yaml(text, str(p))
    if data is None:
        raise ConfigError(str(p), None, "the config file is empty")
    if overrides:
        if not isinstance(data, dict):
            raise ConfigError(str(p), None, "the config must be a YAML mapping of keys to values")
        data = apply_overrides(data, overrides, str(p))
    return parse_config(data, str(p))
