"""``ltr data split``: one labelled file into K folds in LETOR's and MSLR's rotation.

The file is read once by its format's reader (:func:`ltr_cli.data.formats.open_dataset`,
so its bounds, grammar and qid rules apply and errors name the file and line) to learn its
queries; their lines are then copied byte for byte (comments such as LETOR's ``#docid``
kept). The queries are shuffled with ``seed`` and dealt into K subsets of sizes differing
by at most one, each subset keeping file order. Fold i trains on the K - 2 subsets from i
on, validates on the next and tests on the one after (:func:`ltr_cli.data.synthetic.rotation`),
written as ``Fold<i>/train.txt``, ``vali.txt``, ``test.txt`` (or the layout of a registry
dataset, e.g. LETOR 2.0's ``trainingset.txt``); so the test files partition the
queries, and fold i + 1's vali file is fold i's test file. A file whose qids come from a
group file gets a group file (``<name>.query``) beside each file it writes. Everything is
written into a temporary folder beside ``out`` and renamed into place at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.formats import open_dataset
from ltr_cli.data.grammar import strip_eol
from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.synthetic import rotation
from ltr_cli.data.textio import find_group_file, iter_lines
from ltr_cli.errors import LtrError
from ltr_cli.outputs import short_name

SPLITS = ("train", "vali", "test")


def _data_lines(path: Path, options: ReaderOptions) -> list[bytes]:
    """The file's data lines (not blank, not comment-only), each with its newline."""
    lines = []
    for _, raw in iter_lines(path, options.max_line_bytes, options.max_decompression_ratio):
        body = strip_eol(raw)
        hash_at = body.find(b"#")
        if (body[:hash_at] if hash_at >= 0 else body).split():
            lines.append(strip_eol(raw) + b"\n")
    return lines


#: MSLR-WEB's layout (and LETOR 3.0's and 4.0's): where fold k's splits go
DEFAULT_LAYOUT = {"train": "Fold{fold}/train.txt", "vali": "Fold{fold}/vali.txt", "test": "Fold{fold}/test.txt"}


def layout_of(files: dict[str, str]) -> dict[str, str]:
    """A registry dataset's fold layout (its ``files`` patterns), or the default when it has
    no train/vali/test patterns per fold."""
    if all(s in files and "{fold}" in files[s] for s in SPLITS):
        return {s: files[s] for s in SPLITS}
    return DEFAULT_LAYOUT


def split_file(path: Path, out: Path, folds: int, seed: int, options: ReaderOptions,
               layout: dict[str, str] = DEFAULT_LAYOUT) -> dict[str, Any]:
    """Write ``folds`` LETOR-rotated folds of ``path`` under ``out`` in ``layout`` (split ->
    path pattern with ``{fold}``; see the module); what was written."""
    if folds < 3:
        raise LtrError(f"--folds {folds}: a fold needs train, vali and test subsets, so at least 3 folds")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LtrError(f"{out}: exists and is not an empty folder; give a new --out folder")
    if options.group_file is None and options.qid_source in ("auto", "group"):
        implicit = find_group_file(path)  # <file>.query / .group beside it, as a run finds it
        if implicit is not None:
            options = replace(options, group_file=implicit)
    reader = open_dataset(path, options)
    sizes: list[int] = []
    for _qid, labels, _line in reader.labelled_queries():
        sizes.append(int(labels.shape[0]))
    if len(sizes) < folds:
        raise LtrError(f"{path}: {len(sizes)} queries cannot fill {folds} folds (one query per subset at least)")
    lines = _data_lines(path, options)
    if len(lines) != sum(sizes):
        raise LtrError(f"{path}: {len(lines)} data lines but its queries hold {sum(sizes)} documents; "
                       "split only reads text files whose every data line is a document")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    order = np.random.default_rng(seed).permutation(len(sizes))
    subsets = [sorted(part.tolist()) for part in np.array_split(order, folds)]
    # qids from a group file: the written files get theirs (a qid: token in the lines wins)
    grouped = options.group_file is not None and (options.qid_source == "group" or b"qid:" not in lines[0])
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{short_name(out.name, 200)}.", dir=parent))  # fits NAME_MAX
    try:
        for number, (train, vali, test) in enumerate(rotation(folds), start=1):
            for split, parts in zip(SPLITS, (train, [vali], [test])):
                chosen = [q for k in parts for q in subsets[k]]
                target = tmp / layout[split].format(fold=number)
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as fh:
                    for q in chosen:
                        fh.writelines(lines[starts[q]:starts[q + 1]])
                if grouped:
                    target.with_name(target.name + ".query").write_text("".join(f"{sizes[q]}\n" for q in chosen))
        os.replace(tmp, out) if not out.exists() else _move_into(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"out": str(out), "folds": folds, "seed": seed, "queries": len(sizes), "documents": int(sum(sizes)),
            "subsets": [len(s) for s in subsets], "group_files": grouped,
            "layout": {s: layout[s] for s in SPLITS},
            "rotation": "fold i: train on K-2 subsets, vali on the next, test on the one after"}


def _move_into(tmp: Path, out: Path) -> None:
    """``out`` exists as an empty folder: replace it."""
    out.rmdir()
    os.replace(tmp, out)
