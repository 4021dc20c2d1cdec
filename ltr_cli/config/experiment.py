"""Experiment configs: YAML -> validated, typed :class:`ExperimentSpec`.

Unknown keys and wrong types fail with the dotted key path and what was expected
(``ConfigError``). YAML is read by :mod:`ltr_cli.core.yamlio`: the YAML 1.2 core schema (so
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
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import Field, SerializeAsAny, ValidationError, field_validator, model_validator

from ltr_cli.config.datasets import LIMIT_KEYS, DatasetSpec, RegistryData
from ltr_cli.config.protocol import ProtocolSpec
from ltr_cli.core.convention_table import CONVENTION_NAMES, NO_RELEVANT_POLICIES
from ltr_cli.config.errors import format_validation
from ltr_cli.errors import ConfigError
from ltr_cli.learners import registry as learner_registry
from ltr_cli.learners.registry import partial_feedback_types, validate_learners
from ltr_cli.measures.conventions import CONVENTIONS, Measure
from ltr_cli.measures.registry import parse_metric
from ltr_cli.names import NAME_HELP, check_name
from ltr_cli.core.schema import LaxPath, LearnerConfig, Name, OnlineLearnerConfig, Strict
from ltr_cli.core.yamlio import YamlProblem, parse_yaml
from ltr_cli.pathnames import tried


# choices derived from the convention table (to a type checker, plain strings)
if TYPE_CHECKING:
    NoRelevant: TypeAlias = str
    ConventionName: TypeAlias = str
else:
    NoRelevant = Literal[NO_RELEVANT_POLICIES]
    ConventionName = Literal[CONVENTION_NAMES]


# the dataset specs live in ltr_cli.config.datasets (RegistryData is imported from here by
# the modules that read a config)

# --- protocol and metrics ----------------------------------------------------------------

def _metric_list(names: list[str]) -> list[str]:
    """Each name parsed by the registry's one parser (ValueError names the known metrics),
    no metric twice (``map`` is ``ap``)."""
    spellings = [parse_metric(n).name for n in names]
    twice = sorted({n for n in spellings if spellings.count(n) > 1})
    if twice:
        raise ValueError(f"metric {twice[0]!r} is listed twice; list each metric once")
    return names


class MetricsSpec(Strict):
    names: list[str] = Field(default_factory=lambda: ["ndcg@10", "ap"], min_length=1,
                             description="per-round metrics (ltr list shows the known ones), e.g. [ndcg@10, ap, err@10]")
    # online runs use the paper's Eq. 1/2; the LETOR/MSLR script presets are for `ltr eval`
    convention: Literal["paper"] = Field("paper", description="gain 2^r - 1, discount 1/log2(i+1); the LETOR and "
                                         "MSLR script presets are for ltr eval and cv.convention")
    no_relevant: NoRelevant = Field("zero", description="value of a query without relevant documents "
                                    "(skip: left out of the averages)")
    ties: Literal["input-order", "reverse-input", "random"] = Field(
        "input-order", description="order of tied scores: file order, reverse file order (the authors' "
        "MATLAB sort) or random")
    relevance_threshold: float = Field(0.0, description="AP and P@k: a document is relevant when its label > this")
    eru_d: float = Field(0.0, description="ERU and NERU: neutral vote (labels at or below it have no utility)")
    eru_alpha: float = Field(5.0, gt=1, description="ERU and NERU: viewing half-life (the position of weight 1/2)")

    @field_validator("names")
    @classmethod
    def _valid_names(cls, names: list[str]) -> list[str]:
        return _metric_list(names)

    def measures(self) -> list[Measure]:
        """The per-round measures under the online convention."""
        conv = CONVENTIONS[self.convention]
        return [Measure(n, self.no_relevant, self.relevance_threshold, self.eru_d, self.eru_alpha, conv)
                for n in self.names]


CV_SPLITS = {"train": "train", "vali": "vali", "test": "test"}  # role -> the split it reads by default


class CVSpec(Strict):
    """Batch k-fold protocol: for each fold fit on train, choose hyper-parameters on vali,
    evaluate on test (the LETOR protocol)."""

    select_by: str = Field("map", description="vali metric, scored under cv.convention: map (or ap), or any "
                           "metric name (ndcg@K, p@K, err@K, rr, neru@K...; ltr list shows them)")
    metrics: list[str] | None = Field(
        None, min_length=1, description="test metrics of the per-fold table (default: ap, ndcg@1, ndcg@3, ndcg@5, "
        "ndcg@10, p@1, p@3, p@5, p@10), scored under cv.convention")
    convention: ConventionName | None = Field(
        None, description="evaluation convention; default: the dataset's own (mslr-*: mslr, letor3-*: letor3, "
        "letor2-*: letor3 (LETOR 2.0's own script is not documented), letor4-*: letor4, other graded 0-4 sets: mslr)")
    splits: dict[str, str] = Field(
        default_factory=lambda: dict(CV_SPLITS),
        description="the dataset split each role reads: train, vali, test (default: the role's name; "
        "vali: valid for datasets that call it so, e.g. Yahoo)")

    @field_validator("splits")
    @classmethod
    def _roles(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(v) - set(CV_SPLITS))
        if unknown:
            raise ValueError(f"unknown role {unknown[0]!r}; the roles are {', '.join(CV_SPLITS)}")
        return {**CV_SPLITS, **v}

    @field_validator("select_by")
    @classmethod
    def _select(cls, v: str) -> str:
        parse_metric(v)  # the registry's one parser (ValueError names the known metrics)
        return v

    @field_validator("metrics")
    @classmethod
    def _test_metrics(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else _metric_list(v)

class PlotSpec(Strict):
    """How ``ltr plot`` draws this experiment's runs (not part of run ids)."""

    max_rounds: int | None = Field(None, gt=0, description="x-range: the first N rounds (e.g. the paper figure's); "
                                   "ltr plot --max-rounds overrides it")


class HeldoutSpec(Strict):
    """Evaluate each online learner's current weights on a held-out file every ``every``
    rounds, with the run's metrics and convention (columns ``heldout_<metric>``)."""

    file: LaxPath = Field(description="SVMlight/LETOR (or Parquet) file, in the dataset's layout")
    every: int = Field(gt=0, description="evaluate after rounds every, 2 every, ... (and not in between)")


class CacheSpec(Strict):
    enabled: bool = Field(True, description="keep a binary cache of parsed data files")
    dir: LaxPath | None = Field(None, description="where (default: <output>/.cache)")


class ExperimentSpec(Strict):
    experiment: Name = Field(description="the experiment's name: runs go to <output>/<experiment>/<run-id>/")
    description: str = Field("", description="free text; the figures' title")
    seed: int = Field(0, ge=0, description="every random draw (data order, ties, learners) derives from it")
    seeds: list[int] | None = Field(
        None, min_length=1, description="repeat every learner once per seed (overrides seed)")
    fidelity: Literal["paper", "authors-code"] = Field(
        "paper", description="which protocol this config follows (recorded with results)"
    )
    paper: Literal["perceptron", "top-k", "direct-optimisation", "ranking-losses", "neuralndcg", "context-aware",
                   "neural-vs-gbdt"] | None = Field(
        None, description="the paper this experiment reproduces: ltr report shows that paper's printed "
        "numbers (none without it)")
    dataset: DatasetSpec = Field(description="where the queries come from: one of four kinds")
    protocol: ProtocolSpec = Field(ProtocolSpec(), description="how queries become rounds (online runs)")
    metrics: MetricsSpec = Field(MetricsSpec(), description="what online runs measure every round")
    # each entry validated by the model its ``type`` selects (the registry imports only those)
    learners: dict[str, SerializeAsAny[LearnerConfig]] = Field(
        min_length=1, description="one run per entry: the key names it, type selects the learner")
    output: LaxPath = Field(Path("results"), description="results root, relative to the directory ltr runs in "
                            "(--out overrides it)")
    cache: CacheSpec = Field(CacheSpec(), description="the binary cache of parsed data files")
    plot: PlotSpec = Field(PlotSpec(), description="how ltr plot draws the runs (not part of run ids)")
    cv: CVSpec | None = Field(None, description="batch k-fold protocol (batch learners only)")
    heldout: HeldoutSpec | None = Field(None, description="online runs: the current weights on a held-out file")
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

    @model_validator(mode="before")
    @classmethod
    def _dataset_convention(cls, data: Any) -> Any:
        """A cv: block without ``convention`` evaluates by the dataset's own scripts; its
        vali role reads the dataset's ``valid`` split where it has no ``vali`` (Yahoo)."""
        if isinstance(data, dict) and isinstance(data.get("cv"), dict):
            from ltr_cli.data.registry import DATASETS

            ds = data.get("dataset")
            name = ds.get("name") if isinstance(ds, dict) else None
            info = DATASETS.get(name) if isinstance(name, str) else None
            cv = data["cv"]
            if info is not None and cv.get("convention") is None:
                cv = {**cv, "convention": info.convention}
            splits = cv.get("splits")
            if info is not None and "vali" not in info.files and "valid" in info.files and (
                    splits is None or isinstance(splits, dict) and "vali" not in splits):
                cv = {**cv, "splits": {**(splits or {}), "vali": "valid"}}  # Yahoo's name for it
            data = {**data, "cv": cv}
        return data

    @model_validator(mode="after")
    def _batch_or_online(self) -> "ExperimentSpec":
        batch = [n for n, spec in self.learners.items() if spec.kind == "batch"]
        online = [n for n, spec in self.learners.items() if spec.kind != "batch"]
        if self.cv is not None and online:
            raise ValueError(f"learners {online} are online learners; a cv: (batch) experiment takes "
                             f"{', '.join(learner_registry.BATCH_TYPES)}")
        if self.cv is None and batch:
            raise ValueError(f"learners {batch} are batch learners: add a cv: block (k-fold protocol)")
        if self.cv is not None and not isinstance(self.dataset, RegistryData):
            raise ValueError("a cv: experiment needs a registry dataset (kind: registry) with its folds")
        if self.cv is not None and self.heldout is not None:
            raise ValueError("heldout: evaluates online learners during their run; a cv: experiment "
                             "already tests every fold's model on its test split")
        if self.cv is None and getattr(self.dataset, "normalize", "none") == "zscore":
            raise ValueError("dataset.normalize: zscore is fitted on a training split, which only a cv: "
                             "(batch) experiment has; use query-level for an online run")
        self.protocol.check()
        self._check_feedback()
        self._check_clicks()
        return self

    @model_validator(mode="before")
    @classmethod
    def _click_metrics(cls, data: Any) -> Any:
        """Under ``protocol.feedback: clicks`` the metrics default to ``[ndcg@K]``, K =
        min(10, clicks.shown) (the default's ``ap`` reads the whole ranking, not the shown list)."""
        if isinstance(data, dict) and isinstance(data.get("protocol"), dict) \
                and data["protocol"].get("feedback") == "clicks":
            clicks = data["protocol"].get("clicks")
            shown = clicks.get("shown", 10) if isinstance(clicks, dict) else 10
            names = [f"ndcg@{min(10, shown) if type(shown) is int and shown > 0 else 10}"]
            metrics = data.get("metrics")
            if metrics is None:
                data = {**data, "metrics": {"names": names}}
            elif isinstance(metrics, dict) and "names" not in metrics:
                data = {**data, "metrics": {**metrics, "names": names}}
        return data

    def _check_clicks(self) -> None:
        """Click learners run under ``feedback: clicks`` only; under it every round metric
        must read no position below the shown list (a cut-off K <= ``clicks.shown``)."""
        clicks = self.protocol.clicks
        for name, lspec in self.learners.items():
            if getattr(lspec, "feedback_kind", "labels") == "clicks" and clicks is None:
                raise ValueError(f"learner {name!r} ({lspec.type_name()}) learns from clicks; set protocol.feedback: "
                                 "clicks and a protocol.clicks: block (e.g. clicks: {model: navigational}), or "
                                 "remove the learner")
        if clicks is None:
            return
        for metric in self.metrics.names:
            k = parse_metric(metric).k
            if k is None or k > clicks.shown:
                what = "reads the whole ranking" if k is None else f"reads {k} positions"
                raise ValueError(f"metrics.names: {metric} {what}, but a click round shows the user "
                                 f"{clicks.shown} documents (protocol.clicks.shown); use metrics with a cut-off "
                                 f"K <= {clicks.shown}, e.g. ndcg@{min(10, clicks.shown)}")

    def _check_feedback(self) -> None:
        """``protocol.feedback: top-K`` suits every learner, checked before any runs: only
        partial-feedback learners (RTop-kF) learn from the top K labels, and each needs
        K >= its estimator's (top 1, or top 2 for RankSVM)."""
        k = self.protocol.feedback_k()
        if k is None:
            return
        partial = partial_feedback_types()
        for name, lspec in self.learners.items():
            needs = lspec.feedback_k() if isinstance(lspec, OnlineLearnerConfig) else None
            if needs is None:
                raise ValueError(f"protocol.feedback is {self.protocol.feedback} but learner {name!r} "
                                 f"({lspec.type_name()}) learns from all labels; use feedback: auto, or "
                                 f"only partial-feedback learners ({', '.join(partial)})")
            if needs > k:
                raise ValueError(f"protocol.feedback is {self.protocol.feedback} but learner {name!r} "
                                 f"({lspec.describe().get('surrogate')} estimator) needs the top {needs} labels")

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

    @field_validator("learners", mode="before")
    @classmethod
    def _learner_types(cls, v: Any) -> Any:
        return validate_learners(v)

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
        for key, value in type(self.learners[learner]).id_defaults.items():
            if data["learners"][learner].get(key) == value:  # added later: at its default, ids stay
                del data["learners"][learner][key]
        clicks = data["learners"][learner].get("clicks")
        if isinstance(clicks, dict) and clicks.get("pairs") == "unclicked":  # added later: at its default, ids stay
            del clicks["pairs"]
        for later in ("em", "debias"):  # added later: unset, ids stay
            if isinstance(clicks, dict) and later in clicks and clicks[later] is None:
                del clicks[later]
        data.pop("output", None)
        data.pop("cache", None)  # where parsed files are kept does not change results
        data.pop("plot", None)  # how runs are drawn does not change them
        data.pop("description", None)
        data.pop("paper", None)  # which paper's numbers to show beside the runs: not a result
        data.pop("seeds", None)
        data.pop("sweep", None)
        data.get("protocol", {}).pop("checkpoint_every", None)  # does not change results
        if data.get("protocol", {}).get("log_regret") is False:  # added later: unset, ids stay
            data["protocol"].pop("log_regret")
        for later, unset in (("sampling", "passes"), ("clicks", None)):  # added later: unset, ids stay
            if later in data.get("protocol", {}) and data["protocol"][later] == unset:
                data["protocol"].pop(later)
        for limit in LIMIT_KEYS:  # bounds refuse input, they do not change results
            data.get("dataset", {}).pop(limit, None)
        if data.get("dataset", {}).get("normalize") == "none":  # the ids of runs before the option
            data["dataset"].pop("normalize")
        for later in ("name", "qid", "index_base"):  # optional keys added later: unset, ids stay
            if later in data.get("dataset", {}) and data["dataset"][later] is None:
                data["dataset"].pop(later)
        if data.get("dataset", {}).get("relevance") == "linear":  # added later: the default, ids stay
            data["dataset"].pop("relevance")
        if data.get("heldout", 0) is None:
            data.pop("heldout")  # added later: unset, ids stay
        if isinstance(data.get("cv"), dict) and data["cv"].get("metrics") is None:
            data["cv"].pop("metrics", None)  # added later: unset, ids stay
        if not with_seed:
            data.pop("seed", None)
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
        return f"{learner}-{digest}"


# --- loading -----------------------------------------------------------------------------

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


def parse_config(data: Any, source: str = "<config>") -> ExperimentSpec:
    if not isinstance(data, dict):
        raise ConfigError(source, None, "the config must be a YAML mapping of keys to values")
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise format_validation(source, exc, ExperimentSpec) from None


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


def read_config_mapping(path: Path) -> dict[str, Any]:
    """A config file's raw mapping (before overrides and validation); ConfigError naming
    the file if it cannot be read, is empty, or is not a YAML mapping."""
    p = Path(path)
    try:
        text = _read_config_text(p)
    except FileNotFoundError:
        raise ConfigError(str(p), None, f"config file not found (tried {tried(p)})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(p), None, f"cannot read config ({exc})") from None
    data = _load_yaml(text, str(p))
    if data is None:
        raise ConfigError(str(p), None, "the config file is empty")
    if not isinstance(data, dict):
        raise ConfigError(str(p), None, "the config must be a YAML mapping of keys to values")
    return data


def load_config(path: str | Path, overrides: list[str] | None = None, data_paths: list[Path] | None = None,
                note: Any = None, heldout: Path | None = None) -> ExperimentSpec:
    """Read, override and validate a YAML config file; ``data_paths`` (``--data``) and
    ``heldout`` (``--heldout``) point it at the user's files, ``note(text)`` shows what that
    chose (:func:`read_with_data`)."""
    return parse_config(read_with_data(path, overrides, data_paths, note, heldout), str(path))


def read_with_data(path: str | Path, overrides: list[str] | None = None, data_paths: list[Path] | None = None,
                   note: Any = None, heldout: Path | None = None) -> dict[str, Any]:
    """A config file's mapping, overridden (``--set``), with its dataset on ``data_paths``
    and its held-out file ``heldout`` (:mod:`ltr_cli.config.data_paths`), not validated."""
    from ltr_cli.config.data_paths import with_data, with_heldout

    data = read_config_mapping(Path(path))
    if overrides:
        data = apply_overrides(data, overrides, str(path))
    before = data
    if data_paths:
        data, said = with_data(data, [Path(p) for p in data_paths], str(path))
        for text in said if note is not None else []:
            note(text)
    return with_heldout(data, heldout, before if data_paths else None, str(path), note)
