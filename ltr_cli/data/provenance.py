"""Generated data marked as generated: ``ltr data synth`` writes, beside every data file it
writes, a sidecar ``<file>.generated.json`` that says what the file imitates and holds the
file's content digest; a file's identity (:func:`marked`) carries the mark when the
sidecar's digest is the file's, so a run's manifest records that it read generated data
and every title, caption, report row and verdict says so ("generated, shaped like ...").

The data file itself is untouched (every reader reads it as before); a sidecar whose digest
is not the file's (the file was replaced or edited) marks nothing, and so does a sidecar
that is not a small JSON object of this form.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ltr_cli.data.identity import DIGEST, NotSmallFile, content_digest, read_small_file

SUFFIX = ".generated.json"
_LIMIT = 1 << 16
_FORMAT = 1


def sidecar(path: Path) -> Path:
    """The mark of the data file ``path``: ``<path>.generated.json`` beside it."""
    return Path(path).with_name(Path(path).name + SUFFIX)


def mark_generated(path: Path, shaped_like: str, details: dict[str, Any]) -> Path:
    """Write the sidecar of the generated file ``path``: what it imitates
    (``shaped_like``: a name people read, e.g. ``LETOR 2.0 OHSUMED``), the generator's
    ``details`` and the file's digest; written atomically."""
    path = Path(path)
    record = {"format": _FORMAT, "generated_by": "ltr data synth", "shaped_like": shaped_like, **details,
              "file": path.name, DIGEST: content_digest(path)}
    target = sidecar(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def read_mark(path: Path, digest: str | None) -> dict[str, Any] | None:
    """The mark of the data file ``path`` whose content digest is ``digest``: the sidecar's
    record when there is one for exactly these bytes, else None."""
    if not isinstance(digest, str):
        return None
    try:
        record = json.loads(read_small_file(sidecar(path), _LIMIT))
    except (OSError, NotSmallFile, ValueError):
        return None
    if not isinstance(record, dict) or record.get(DIGEST) != digest or not isinstance(record.get("shaped_like"), str):
        return None
    return {"shaped_like": record["shaped_like"], "generated_by": str(record.get("generated_by", ""))}


def marked(entry: dict[str, Any]) -> dict[str, Any]:
    """A file identity (``{path, size, xxh3_128, ...}``) with ``generated`` added when the
    file is marked as generated data."""
    mark = read_mark(Path(str(entry.get("path", ""))), entry.get(DIGEST))
    return {**entry, "generated": mark} if mark is not None else entry


def mark_synth_output(out: Path, like: str | None, separable: str | None, folds: bool,
                      details: dict[str, Any]) -> list[Path]:
    """Mark what ``ltr data synth`` wrote to ``out``: the file, or with ``folds`` every data
    file of the ``like`` dataset's fold layout under ``out``; the sidecars written."""
    from ltr_cli.data.registry import get_dataset

    if like is not None:
        info = get_dataset(like)
        what = info.title + (f", {details['relevance']} relevance" if details.get("relevance") else "")
    else:
        what = f"the perceptron paper's separable set ({separable})"
    meta: dict[str, Any] = {"like": like, "separable": separable,
            **{k: details[k] for k in ("queries", "documents", "seed", "relevance") if k in details}}
    if not folds:
        return [mark_generated(out, what, meta)]
    assert like is not None
    written = []
    for number in info.folds:
        for split in ("train", "vali", "test"):
            path = info.path_for(out, split, number)
            if path.is_file() and not path.is_symlink():
                written.append(mark_generated(path, what, meta))
    return written


def mark_split_output(source: Path, result: dict[str, Any]) -> list[Path]:
    """``ltr data split`` of a marked file: each fold file it wrote (``result``: the split's
    record, its ``out``, ``folds`` and ``layout``) gets the source's mark."""
    mark = read_mark(source, content_digest(source)) if not Path(source).is_symlink() else None
    if mark is None:
        return []
    out, layout = Path(str(result["out"])), result["layout"]
    written = []
    for fold in range(1, int(result["folds"]) + 1):
        for pattern in layout.values():
            path = out / str(pattern).replace("{fold}", str(fold))
            if path.is_file() and not path.is_symlink():
                written.append(mark_generated(path, mark["shaped_like"], {"split_from": Path(source).name}))
    return written


def generated_data(manifest: Any) -> str | None:
    """What the data a run's ``manifest`` records imitates when it was generated: the
    ``shaped_like`` of its marked data files, or a generator's (``kind: shaped``: the
    registry dataset's title); None for real data."""
    dataset = manifest.get("dataset") if isinstance(manifest, dict) else None
    fingerprint = dataset.get("fingerprint") if isinstance(dataset, dict) else None
    if not isinstance(fingerprint, dict):
        return None
    files = fingerprint.get("files")
    if isinstance(files, list):
        for entry in files:
            mark = entry.get("generated") if isinstance(entry, dict) else None
            if isinstance(mark, dict) and isinstance(mark.get("shaped_like"), str):
                return str(mark["shaped_like"])
        return None
    generator = fingerprint.get("generator")
    if isinstance(generator, dict) and generator.get("kind") == "shaped":
        from ltr_cli.data.registry import DATASETS

        info = DATASETS.get(str(generator.get("like", "")))
        title = info.title if info is not None else str(generator.get("like", "a registry dataset"))
        relevance = generator.get("relevance")
        return f"{title}, {relevance} relevance" if relevance in ("nonlinear",) else title
    return None
