"""``ltr run CONFIG --data PATH...``: a config's dataset pointed at the user's own copy of
the data, keeping what the config says the data is.

* A folder: the config's registry dataset rooted there (``root``), with the folds among
  the config's that the folder holds (a partial copy: the folds present, named in a note).
* Files: a ``kind: files`` dataset of those files with the config's dataset identity: its
  registry ``name`` (so reports name the dataset and pair it with the papers' numbers), its
  width, index base and qid source, and its reader settings (storage, normalisation,
  bounds); a file with a group file beside it (``<file>.query`` / ``.group``) reads its
  qids from it. A ``cv:`` config needs folds, so it takes a folder only.

What it kept that may not fit the user's files is said in notes: the config's width when the
files' first megabyte uses another (``dataset.features``), and the config's normalisation.

``--heldout FILE`` points an online config's held-out evaluation at the user's test file
(``heldout.file``; a config without a ``heldout:`` block gets one, evaluated every tenth of
its rounds). With ``--data`` and no ``--heldout``, a ``heldout.file`` that does not exist is
refused before anything runs, saying to give ``--heldout``.

The mapping is rewritten before validation, so everything else (run ids, the verdicts
against the papers' protocols) follows from the dataset as it ends up.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ltr_cli.config.datasets import LIMIT_KEYS
from ltr_cli.errors import ConfigError, DatasetNotFoundError
from ltr_cli.pathnames import tried

_KNOBS = ("null_value", "split_qids", "storage", "normalize", *LIMIT_KEYS)


_SNIFF_BYTES = 1 << 20
_INDEX = re.compile(rb"[ \t](\d{1,9}):")


def with_data(config: dict[str, Any], paths: list[Path], source: str) -> tuple[dict[str, Any], list[str]]:
    """``config`` with its dataset on ``paths`` (see the module), and the notes to show."""
    new, note = _with_data(config, paths, source)
    notes = [note] if note else []
    dataset = new["dataset"]
    if dataset.get("normalize") not in (None, "none"):
        notes.append(f"--data: kept the config's dataset.normalize: {dataset['normalize']} (applied to your data; "
                     "--set dataset.normalize=none reads the values as they are)")
    if dataset.get("kind") == "files":
        for path in paths:
            used = _highest_index(path)
            width = used - int(dataset["index_base"]) + 1 if used is not None else None
            if width is not None and width != dataset["features"]:
                notes.append(f"--data: kept the config's width dataset.features: {dataset['features']}; "
                             f"{path.name}'s first MB uses features up to {used} (index base "
                             f"{dataset['index_base']}): --set dataset.features={max(width, 1)} reads it at its "
                             "own width")
                break
    return new, notes


def _highest_index(path: Path) -> int | None:
    """The highest feature index in the first megabyte of the data file ``path`` (None when
    it cannot be read or holds none): a hint only, never an error."""
    from ltr_cli.data.textio import open_binary

    try:
        with open_binary(path) as fh:
            head = fh.read(_SNIFF_BYTES)
    except (OSError, ValueError, EOFError):
        return None
    if len(head) == _SNIFF_BYTES:  # the last line may be cut
        head = head[:head.rfind(b"\n") + 1]
    found = [int(m) for line in head.splitlines() for m in _INDEX.findall(line.split(b"#", 1)[0])]
    return max(found) if found else None


def _with_data(config: dict[str, Any], paths: list[Path], source: str) -> tuple[dict[str, Any], str | None]:
    from ltr_cli.data.registry import DATASETS
    from ltr_cli.data.textio import find_group_file

    dataset = config.get("dataset")
    if not isinstance(dataset, dict) or dataset.get("kind") not in ("registry", "files"):
        kind = dataset.get("kind") if isinstance(dataset, dict) else None
        raise ConfigError(source, None, f"--data: the config's dataset is {kind or 'not a mapping'}; --data "
                          "replaces the files of a registry or files dataset (use --set dataset=... instead)")
    for p in paths:
        if not p.exists():
            raise DatasetNotFoundError(f"--data: {p} does not exist (tried {tried(p)})")
    name = dataset.get("name")
    info = DATASETS.get(name) if isinstance(name, str) else None
    knobs = {k: dataset[k] for k in _KNOBS if k in dataset}
    folders = [p for p in paths if p.is_dir()]
    if folders:
        if len(paths) != 1:
            raise ConfigError(source, None, "--data: give one folder (the dataset's root, holding Fold1..FoldK), "
                              "or data files, not both")
        if info is None:
            raise ConfigError(source, None, "--data FOLDER needs a config on a registry dataset (its name says the "
                              "folder's layout); for plain files give the files")
        rooted, note = _rooted(dataset, info, folders[0], config.get("cv") is not None)
        return {**config, "dataset": rooted}, note
    if config.get("cv") is not None:
        raise ConfigError(source, None, "--data: a cv: (k-fold) config needs the dataset's folds: give the folder "
                          "holding Fold1..FoldK (ltr data split FILE --out DIR makes them from one file)")
    features = dataset.get("features") or (info.n_features if info is not None else None)
    if features is None:
        raise ConfigError(source, None, "--data: the config's dataset gives no feature count; add "
                          "--set dataset.features=N")
    grouped = [find_group_file(p) is not None for p in paths]
    qid = dataset.get("qid") or (info.qid_source if info is not None else "auto")
    if all(grouped):
        qid = "group"
    elif any(grouped):
        raise ConfigError(source, None, "--data: some files have a group file beside them and some do not; "
                          "give files of one layout")
    new = {"kind": "files", "files": [str(p) for p in paths], "features": features, "qid": qid, **knobs,
           **({"name": info.name} if info is not None else {})}
    base = dataset.get("index_base")
    new["index_base"] = base if base in (0, 1) else (info.index_base if info is not None else 1)
    return {**config, "dataset": new}, None


def _rooted(dataset: dict[str, Any], info: Any, root: Path, cv: bool) -> tuple[dict[str, Any], str | None]:
    """The registry dataset rooted at ``root``, on the config's folds that it holds."""
    split = dataset.get("split", "train")
    wanted = list(dataset.get("folds") or info.folds or [])
    splits = ("train", "vali", "test") if cv else (split,)
    if not wanted:  # a dataset without folds: one file per split
        missing = [info.path_for(root, s, None) for s in splits if not info.path_for(root, s, None).is_file()]
        if missing:
            raise DatasetNotFoundError(f"--data: {missing[0]} does not exist: {info.name} keeps its files there "
                                       f"(see datasets/README.md)")
        return {**dataset, "root": str(root)}, None
    present = [f for f in wanted if all(info.path_for(root, s, f).is_file() for s in splits)]
    if not present:
        expected = info.path_for(root, splits[0], wanted[0])
        raise DatasetNotFoundError(f"--data: {root} holds none of the config's folds {wanted} "
                                   f"(e.g. {expected}); {info.name} keeps fold k under it as in datasets/README.md")
    note = None
    if present != wanted:
        note = (f"--data: {root} holds folds {present} of the config's {wanted}: running on those "
                "(a partial copy; the verdict against the paper says what differs)")
    return {**dataset, "root": str(root), "folds": present}, note


def with_heldout(config: dict[str, Any], path: Path | None, before: dict[str, Any] | None, source: str,
                 note: Any = None) -> dict[str, Any]:
    """``config`` with ``heldout.file`` set to ``path`` (see the module). Without ``path``,
    after ``--data`` (``before``: the config as it was): a held-out file inside the config's
    dataset folder is looked for at the same place in the user's folder (and the move is
    noted), and a held-out file that does not exist is a one-line error."""
    held = config.get("heldout")
    if path is None:
        if before is None or not isinstance(held, dict) or not isinstance(held.get("file"), str):
            return config
        moved = _moved(held["file"], before.get("dataset"), config.get("dataset"))
        if moved is not None and moved.is_file():
            if note is not None:
                note(f"--data: heldout.file is {moved} (the config's {held['file']} in your folder)")
            return {**config, "heldout": {**held, "file": str(moved)}}
        if not Path(held["file"]).expanduser().exists():
            raise ConfigError(source, "heldout.file", f"{held['file']} does not exist (the config's own copy of "
                              "the data); give your test file with --heldout FILE")
        return config
    if "cv" in config:
        raise ConfigError(source, "heldout", "--heldout: a cv: config tests on each fold's test file; "
                          "give the folds' folder with --data")
    if not path.is_file():
        raise DatasetNotFoundError(f"--heldout: {path} is not a file; give your test file")
    new = dict(config)
    if isinstance(held, dict):
        new["heldout"] = {**held, "file": str(path)}
    else:
        protocol = config.get("protocol")
        rounds = protocol.get("max_rounds") if isinstance(protocol, dict) else None
        every = max(1, int(rounds) // 10) if isinstance(rounds, int) and rounds > 0 else 1000
        new["heldout"] = {"file": str(path), "every": every}
    return new


def _moved(file: str, old: Any, new: Any) -> Path | None:
    """``file`` (inside the old dataset's ``root``) at the same place under the new root, or
    None when the dataset did not move folders or the file is not inside it."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return None
    was, now = old.get("root"), new.get("root")
    if not (isinstance(was, str) and isinstance(now, str)) or was == now:
        return None
    try:
        inside = Path(file).relative_to(Path(was))
    except ValueError:
        return None
    return Path(now) / inside
