"""Known benchmark datasets: layout, feature count, index base, labels, how to get them.

Facts come from the datasets' own documentation (see ``datasets/README.md``). A config names
a dataset, a root directory and the split files to stream; :func:`resolve_files` turns that
into paths and fails with the expected path and the download instructions when a file is
missing. Nothing here downloads anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import cast, get_args

from ltr_cli.data.options import QidSource, ReaderOptions, SplitQids
from ltr_cli.errors import DatasetNotFoundError
from ltr_cli.pathnames import tried


@dataclass(frozen=True)
class DatasetInfo:
    """Static description of one benchmark dataset.

    ``files`` maps a split name (``train``, ``vali``, ``test``, ...) to a path pattern
    relative to the dataset root; ``{fold}`` is replaced by the fold number.
    """

    name: str
    title: str
    n_features: int
    index_base: int
    labels: str
    qid_source: QidSource
    folds: tuple[int, ...]
    files: dict[str, str]
    obtain: str
    docs_per_query: float
    queries: int | None = None
    documents: int | None = None
    sparse: bool = False
    label_levels: tuple[float, ...] = (0, 1, 2, 3, 4)
    label_probs: tuple[float, ...] = (0.5, 0.3, 0.13, 0.05, 0.02)
    notes: tuple[str, ...] = field(default_factory=tuple)
    # the evaluation convention of the dataset's own scripts (a name of ltr_cli.core.convention_table)
    convention: str = "mslr"

    def path_for(self, root: Path, split: str, fold: int | None = None) -> Path:
        if split not in self.files:
            raise DatasetNotFoundError(
                f"dataset {self.name} has no split {split!r}; known splits: "
                f"{', '.join(sorted(self.files))}"
            )
        pattern = self.files[split]
        if "{fold}" in pattern:
            if fold is None:
                raise DatasetNotFoundError(
                    f"dataset {self.name} split {split!r} needs a fold (one of {list(self.folds)})"
                )
            if fold not in self.folds:
                raise DatasetNotFoundError(
                    f"dataset {self.name} has folds {list(self.folds)}, not {fold}"
                )
        return root / pattern.format(fold=fold)


_MSLR_FILES = {s: f"Fold{{fold}}/{s}.txt" for s in ("train", "vali", "test")}
# LETOR 2.0 and 3.0 (OHSUMED, .gov): trainingset / validationset / testset in Fold1..Fold5
_LETOR_FILES = {
    "train": "Fold{fold}/trainingset.txt",
    "vali": "Fold{fold}/validationset.txt",
    "test": "Fold{fold}/testset.txt",
}

_LETOR2_CONVENTION = "evaluated with LETOR 3.0's script conventions (letor3); LETOR 2.0's own script is not documented here"

DATASETS: dict[str, DatasetInfo] = {
    d.name: d
    for d in [
        DatasetInfo(
            name="mslr-web10k", title="Microsoft MSLR-WEB10K", n_features=136, index_base=1,
            labels="integer 0-4", qid_source="token", folds=(1, 2, 3, 4, 5), files=_MSLR_FILES,
            obtain="Download MSLR-WEB10K.zip from Microsoft Research's 'Microsoft Learning to "
            "Rank Datasets' page and unzip it so that Fold1/train.txt lies under the root.",
            docs_per_query=120.0, queries=10_000, documents=1_200_192,
            label_probs=(0.52, 0.32, 0.13, 0.02, 0.01),
            notes=("folds rotate five subsets S1-S5, so one qid appears in several folds",),
        ),
        DatasetInfo(
            name="mslr-web30k", title="Microsoft MSLR-WEB30K", n_features=136, index_base=1,
            labels="integer 0-4", qid_source="token", folds=(1, 2, 3, 4, 5), files=_MSLR_FILES,
            obtain="Download MSLR-WEB30K.zip from Microsoft Research's 'Microsoft Learning to "
            "Rank Datasets' page and unzip it so that Fold1/train.txt lies under the root.",
            docs_per_query=120.0, queries=31_531, documents=3_771_125,
            label_probs=(0.52, 0.32, 0.13, 0.02, 0.01),
            notes=("about 3% of queries per fold have only label 0",),
        ),
        DatasetInfo(
            name="yahoo-set1", title="Yahoo! Learning to Rank Challenge, set 1",
            n_features=700, index_base=1, labels="integer 0-4", qid_source="token",
            folds=(), files={s: f"set1.{s}.txt" for s in ("train", "valid", "test")},
            obtain="Request 'C14 - Yahoo! Learning to Rank Challenge' from Yahoo! Webscope "
            "(research licence) and put set1.train.txt, set1.valid.txt, set1.test.txt in the root.",
            docs_per_query=23.7, queries=19_944, documents=473_134, sparse=True,
            label_probs=(0.26, 0.36, 0.28, 0.07, 0.03),
            notes=("sparse: 519 of 700 features used; values in [0, 1], scientific notation occurs",),
        ),
        DatasetInfo(
            name="yahoo-set2", title="Yahoo! Learning to Rank Challenge, set 2",
            n_features=700, index_base=1, labels="integer 0-4", qid_source="token",
            folds=(), files={s: f"set2.{s}.txt" for s in ("train", "valid", "test")},
            obtain="Request 'C14 - Yahoo! Learning to Rank Challenge' from Yahoo! Webscope "
            "(research licence) and put set2.train.txt, set2.valid.txt, set2.test.txt in the root.",
            docs_per_query=27.5, queries=1_266, documents=34_815, sparse=True,
            label_probs=(0.26, 0.36, 0.28, 0.07, 0.03),
        ),
        DatasetInfo(
            name="yandex-imat2009", title="Yandex Internet Mathematics 2009",
            n_features=245, index_base=1, labels="real-valued (0, 0.5, 1, ... 4)",
            qid_source="comment", folds=(),
            files={"train": "imat2009_learning.txt", "test": "imat2009_test.txt"},
            obtain="Obtain the Internet Mathematics 2009 data (imat2009_learning.txt, "
            "imat2009_test.txt) from Yandex's IMAT 2009 competition page and put them in the root.",
            docs_per_query=10.7, queries=9_124, sparse=True,
            label_levels=(0.0, 0.5, 1.0, 2.0, 3.0, 4.0),
            label_probs=(0.35, 0.15, 0.25, 0.15, 0.07, 0.03),
            notes=("no qid: token; the qid is the trailing '# <qid>' comment", "qids are not sorted"),
        ),
        DatasetInfo(
            name="letor2-ohsumed", convention="letor3", title="LETOR 2.0 OHSUMED", n_features=25, index_base=1,
            labels="integer 0-2", qid_source="token", folds=(1, 2, 3, 4, 5), files=_LETOR_FILES,
            obtain="Obtain OHSUMED from LETOR 2.0 (Microsoft Research Asia, December 2007) and unpack "
            "it so that Fold1/trainingset.txt lies under the root.",
            docs_per_query=152.0, queries=106, documents=16_140,
            label_levels=(0, 1, 2), label_probs=(0.7, 0.16, 0.14),
            notes=("the version the direct-optimisation paper used (25 features; LETOR 3.0 has 45)",
                   "MAP treats labels 1 and 2 as relevant", _LETOR2_CONVENTION),
        ),
        DatasetInfo(
            name="letor2-td2003", convention="letor3", title="LETOR 2.0 TD2003 (.gov)", n_features=44, index_base=1,
            labels="binary", qid_source="token", folds=(1, 2, 3, 4, 5), files=_LETOR_FILES,
            obtain="Obtain TD2003 from LETOR 2.0 (Microsoft Research Asia, December 2007) and unpack "
            "it so that Fold1/trainingset.txt lies under the root.",
            docs_per_query=1000.0, queries=50, label_levels=(0, 1), label_probs=(0.992, 0.008),
            notes=("the version the direct-optimisation paper used (44 features; LETOR 3.0 has 64)",
                   _LETOR2_CONVENTION),
        ),
        DatasetInfo(
            name="letor2-td2004", convention="letor3", title="LETOR 2.0 TD2004 (.gov)", n_features=44, index_base=1,
            labels="binary", qid_source="token", folds=(1, 2, 3, 4, 5), files=_LETOR_FILES,
            obtain="Obtain TD2004 from LETOR 2.0 (Microsoft Research Asia, December 2007) and unpack "
            "it so that Fold1/trainingset.txt lies under the root.",
            docs_per_query=1000.0, queries=75, label_levels=(0, 1), label_probs=(0.988, 0.012),
            notes=("the version the direct-optimisation paper used (44 features; LETOR 3.0 has 64)",
                   _LETOR2_CONVENTION),
        ),
        DatasetInfo(
            name="letor3-ohsumed", convention="letor3", title="LETOR 3.0 OHSUMED", n_features=45, index_base=1,
            labels="integer 0-2", qid_source="token", folds=(1, 2, 3, 4, 5), files=_LETOR_FILES,
            obtain="Download OHSUMED from Microsoft Research's LETOR 3.0 page and unpack "
            "QueryLevelNorm so that Fold1/trainingset.txt lies under the root.",
            docs_per_query=152.0, queries=106, documents=16_140,
            label_levels=(0, 1, 2), label_probs=(0.7, 0.16, 0.14),
            notes=("MAP treats labels 1 and 2 as relevant",),
        ),
        DatasetInfo(
            name="letor3-td2003", convention="letor3", title="LETOR 3.0 TD2003 (.gov)", n_features=64, index_base=1,
            labels="binary", qid_source="token", folds=(1, 2, 3, 4, 5), files=_LETOR_FILES,
            obtain="Download Gov/TD2003 from Microsoft Research's LETOR 3.0 page and unpack "
            "QueryLevelNorm so that Fold1/trainingset.txt lies under the root.",
            docs_per_query=980.0, queries=50, label_levels=(0, 1), label_probs=(0.992, 0.008),
            notes=("Feature_null variant has literal NULL values",),
        ),
        DatasetInfo(
            name="letor3-td2004", convention="letor3", title="LETOR 3.0 TD2004 (.gov)", n_features=64, index_base=1,
            labels="binary", qid_source="token", folds=(1, 2, 3, 4, 5), files=_LETOR_FILES,
            obtain="Download Gov/TD2004 from Microsoft Research's LETOR 3.0 page and unpack "
            "QueryLevelNorm so that Fold1/trainingset.txt lies under the root.",
            docs_per_query=990.0, queries=75, label_levels=(0, 1), label_probs=(0.988, 0.012),
        ),
        DatasetInfo(
            name="letor4-mq2007", convention="letor4", title="LETOR 4.0 MQ2007", n_features=46, index_base=1,
            labels="integer 0-2", qid_source="token", folds=(1, 2, 3, 4, 5), files=_MSLR_FILES,
            obtain="Download MQ2007.rar from Microsoft Research's LETOR 4.0 page and unpack it "
            "so that Fold1/train.txt lies under the root.",
            docs_per_query=41.0, queries=1_692, documents=69_623,
            label_levels=(0, 1, 2), label_probs=(0.74, 0.19, 0.07),
        ),
        DatasetInfo(
            name="letor4-mq2008", convention="letor4", title="LETOR 4.0 MQ2008", n_features=46, index_base=1,
            labels="integer 0-2", qid_source="token", folds=(1, 2, 3, 4, 5), files=_MSLR_FILES,
            obtain="Download MQ2008.rar from Microsoft Research's LETOR 4.0 page and unpack it "
            "so that Fold1/train.txt lies under the root.",
            docs_per_query=19.4, queries=784, documents=15_211,
            label_levels=(0, 1, 2), label_probs=(0.81, 0.13, 0.06),
        ),
        DatasetInfo(
            name="istella-s", title="Istella-S LETOR", n_features=220, index_base=1,
            labels="integer 0-4", qid_source="token", folds=(),
            files={s: f"sample/{s}.txt" for s in ("train", "vali", "test")},
            obtain="Download istella-s-letor.tar.gz from the Istella LETOR dataset page and "
            "unpack it so that sample/train.txt lies under the root.",
            docs_per_query=103.0, queries=33_018, documents=3_408_630,
            label_probs=(0.89, 0.05, 0.03, 0.02, 0.01),
            notes=("values up to 1.79769313486e+308; latin-1 encoded",),
        ),
    ]
}


def get_dataset(name: str) -> DatasetInfo:
    try:
        return DATASETS[name]
    except KeyError:
        raise DatasetNotFoundError(
            f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))} "
            "(or use 'synthetic' / a 'files' list with features and qid settings)"
        ) from None


def resolve_files(info: DatasetInfo, root: Path, split: str, folds: list[int] | None) -> list[Path]:
    """Paths of ``split`` for each fold (or the single file), checked to exist."""
    fold_list: list[int | None] = list(folds) if folds else [None]
    paths = [info.path_for(root, split, f) for f in fold_list]
    for p in paths:
        if not p.is_file():
            raise DatasetNotFoundError(
                f"{info.name}: expected {p} but it does not exist (tried {tried(p)}). {info.obtain} "
                f"(see datasets/README.md; set dataset.root to the directory you unpacked)"
            )
    return paths


def reader_options(dataset: str | None, features: int | None, index_base: int | None, qid: str | None,
                   group: Path | None, null_value: float | None, split: str = "error") -> ReaderOptions:
    """Reader options from the data commands' flags: a registry dataset's width, index
    base and qid source, each overridden by its own flag (``qid`` a qid source or None;
    a group file implies qid source ``group``)."""
    n: int | None = None
    base, source = 1, "auto"
    if dataset:
        info = get_dataset(dataset)
        n, base, source = info.n_features, info.index_base, info.qid_source
    if features is not None:
        n = features
    if index_base is not None:
        base = index_base
    if qid is not None:
        source = qid
    if group is not None:
        source = "group" if qid is None else source
    if source not in get_args(QidSource) or split not in get_args(SplitQids):
        raise ValueError(f"unknown qid source {source!r} or split rule {split!r}")
    return ReaderOptions(n_features=n, index_base=base, qid_source=cast(QidSource, source),
                         group_file=group, null_value=null_value, split_qids=cast(SplitQids, split))
