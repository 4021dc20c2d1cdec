"""SVMlight / LETOR text (plain or compressed): the reference reader and its compiled fast
path (:mod:`ltr_cli.data.svmlight`), qids from ``qid:`` tokens, comments or group files."""

from __future__ import annotations

from ltr_cli.data.formats.base import DataFormat
from ltr_cli.data.svmlight import SVMLightReader

SVMLIGHT = DataFormat(
    name="svmlight",
    suffixes=(".txt", ".svm", ".svmlight", ".letor", ".gz", ".bz2", ".xz"),
    description="SVMlight/LETOR text: '<label> qid:<id> <index>:<value> ... # comment' (also .gz/.bz2/.xz)",
    reader=SVMLightReader,
)
