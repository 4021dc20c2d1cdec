"""The ``dataset:`` block of an experiment config: one of four kinds (separable,
shaped, registry, files), told apart by ``kind``, with the reader settings they share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ltr_cli.core.schema import LaxPath, Strict, not_bool
from ltr_cli.data.options import DEFAULT_MAX_QUERY_MB



# input bounds (reader options of the same names): they decide whether a file is read, not
# what is read, so they are left out of run ids
MAX_GENERATED_MB = 4096.0
LIMIT_KEYS = ("max_line_bytes", "max_query_mb", "max_decompression_ratio")


class _ReaderKnobs(Strict):
    null_value: float | None = Field(None, description="fill for LETOR NULL values; null = error")
    split_qids: Literal["error", "new-query"] = Field(
        "error", description="a qid that reappears after another qid: an error, or a new query")
    storage: Literal["float64", "float32"] = Field(
        "float64", description="dtype of the feature rows handed to learners (and kept in the cache)")
    normalize: Literal["none", "query-level", "zscore"] = Field(
        "none", description="feature normalisation: query-level (LETOR's QueryLevelNorm, per query) or "
        "zscore (training-split mean and std; batch cv: runs only); saved with each model for ltr score")
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


class SeparableData(Strict):
    """The perceptron paper's margin-separable set (generated, no download)."""

    kind: Literal["separable"]
    variant: Literal["authors", "paper"] = Field(
        "authors", description="authors: the authors' code (d = 10, a fixed relevance vector); paper: the "
        "text (d = 20, a random unit ranker)")
    queries: int = Field(1000, gt=0, description="number of queries")
    docs: int = Field(20, gt=1, description="documents per query")
    features: int | None = Field(None, gt=0, description="default 10 (authors) / 20 (paper)")
    margin: float = Field(1.0, gt=0, description="the margin gamma by which the ranker separates the levels")
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


class ShapedData(Strict):
    """Generated queries shaped like a registry dataset (width, docs/query, labels)."""

    kind: Literal["shaped"]
    like: str = Field(description="the registry dataset whose width, documents per query and labels to copy")
    queries: int = Field(200, gt=0, description="number of queries")
    docs_per_query: float | None = Field(None, gt=0, description="mean documents per query (default: the "
                                         "dataset's)")
    seed: int | None = Field(None, ge=0, description="data seed; default: the experiment seed")
    relevance: Literal["linear", "nonlinear"] = Field(
        "linear", description="linear: grades first, features along one direction (a linear ranker is well "
        "specified); nonlinear: features first, grades from a hidden nonlinear scorer with interactions "
        "(docs/data.md)")

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
    name: str = Field(description="the registry dataset (ltr list shows them; datasets/README.md says where "
                      "to get each)")
    root: LaxPath = Field(description="the dataset's folder, relative to the directory ltr runs in")
    split: str = Field("train", description="the split to stream: train, vali or test (valid for Yahoo)")
    folds: list[int] | None = Field(None, description="folds to stream, in this order (default: all)")
    qid: Literal["auto", "token", "comment", "group"] | None = Field(
        None, description="where qids come from, if not the dataset's usual source; group: the "
        "<file>.query / <file>.group file next to each data file")
    index_base: Annotated[Literal[0, 1], BeforeValidator(not_bool)] | None = Field(
        None, description="feature index base, if not the dataset's usual one")

    _known = field_validator("name")(_known_dataset)


class FilesData(_ReaderKnobs):
    """Explicit SVMlight files with their width, index base and qid source. ``name``: the
    registry dataset the files hold (e.g. MSLR-WEB10K in another layout), which keeps the
    dataset's name in reports (the paper column) and gives the width by default."""

    kind: Literal["files"]
    files: list[LaxPath] = Field(min_length=1, description="the data files, streamed in this order")
    name: str | None = Field(None, description="the registry dataset these files hold (ltr list)")
    features: int = Field(gt=0, description="feature count (default: the named dataset's)")
    index_base: Annotated[Literal[0, 1], BeforeValidator(not_bool)] = Field(1, description="feature index base")
    qid: Literal["auto", "token", "comment", "group"] = Field(
        "auto", description="where qids come from: qid: tokens, a trailing # comment, or a group file")
    group_files: list[LaxPath] | None = Field(
        None, description="one group file per data file (default: <file>.query/.group next to it)")

    _known = field_validator("name")(lambda v: v if v is None else _known_dataset(v))

    @model_validator(mode="before")
    @classmethod
    def _width(cls, data: Any) -> Any:
        """Without ``features``, the named dataset's width."""
        from ltr_cli.data.registry import DATASETS

        name = data.get("name") if isinstance(data, dict) else None
        if isinstance(data, dict) and data.get("features") is None and isinstance(name, str) and name in DATASETS:
            data = {**data, "features": DATASETS[name].n_features}
        return data

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


