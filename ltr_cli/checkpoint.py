"""Checkpoints of an online run, so ``ltr run --resume`` continues a killed run exactly.

A checkpoint holds everything that decides the rest of the run: the learner's mutable
state (weights ``w``, round counter ``t``, its own random generator), the tie-breaking
generator's state, the number of rounds consumed, the rounds recorded so far, and the
identity of the data the run read. The learner object itself is not stored: it is rebuilt
from the config and its state is restored into it. The query stream is rebuilt from its
seed and the consumed rounds are skipped, which replays the stream's own draws exactly.

**Format** (no pickle anywhere): an uncompressed ``.npz`` archive read with
``allow_pickle=False``. Member ``state.json`` is a uint8 array holding UTF-8 JSON::

    {"format": 2, "run_id": str, "t": int, "wall_seconds": float,
     "nonfinite_round": int | null, "data": {...data identity...},
     "tie_rng": <numpy bit_generator.state dict>,
     "learner": {"class": str, "t": int | null, "rng": <bit_generator.state> | null},
     "columns": [column names in order]}

and the arrays are ``col.<name>`` (one per recorded column, length ``t``: int64, float64,
bool, or fixed-width unicode for ``qid``) and ``learner.w`` (float64, ``(n_features,)``).
Every field is validated on load; anything that does not check out raises
:class:`CheckpointInvalid`, which the runner reports in one line.

Files are written to a temporary name and renamed, so a kill leaves either the previous
checkpoint or the new one, never half of one. They live beside the run directory as
``.<run-id>.checkpoint`` and are deleted when the run completes.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.round_log import column_kinds, column_names

FORMAT = 2
_FIXED = set(column_names([]))  # the columns every log has; the others are measures
MAX_STATE_JSON = 1 << 20  # bytes of state.json read at most (it holds no arrays)



class CheckpointInvalid(Exception):
    """A checkpoint that must not be used (the message says why)."""


@dataclass
class LearnerState:
    """The mutable part of an online learner: weights, round counter, own generator."""

    cls: str
    w: np.ndarray | None
    t: int | None
    rng: dict[str, Any] | None

    @classmethod
    def of(cls, learner: Any) -> "LearnerState":
        w = getattr(learner, "w", None)
        rng = getattr(learner, "rng", None)
        return cls(type(learner).__name__,
                   None if w is None else np.array(w, dtype=np.float64),
                   getattr(learner, "t", None),
                   None if rng is None else rng.bit_generator.state)

    def restore(self, learner: Any) -> None:
        """Put this state into a freshly built ``learner`` of the same config (validated:
        class, weight shape, counter, generator kind)."""
        if type(learner).__name__ != self.cls:
            raise CheckpointInvalid(f"it holds a {self.cls} learner, the config builds a "
                                    f"{type(learner).__name__}")
        for name, saved in (("w", self.w), ("t", self.t), ("rng", self.rng)):
            if (getattr(learner, name, None) is None) != (saved is None):
                raise CheckpointInvalid(f"learner field {name!r} does not match the learner's state")
        if self.w is not None:
            if self.w.shape != learner.w.shape:
                raise CheckpointInvalid(f"weights have shape {self.w.shape}, the learner has "
                                        f"{learner.w.shape}")
            learner.w = self.w
        if self.t is not None:
            learner.t = self.t
        if self.rng is not None:
            _set_rng(learner.rng, self.rng, "learner.rng")


@dataclass
class RunState:
    run_id: str
    t: int
    columns: dict[str, list[Any]]
    learner: LearnerState
    tie_rng_state: dict[str, Any]
    wall_seconds: float
    nonfinite_round: int | None = None  # first round after which the weights were NaN/inf
    data: dict[str, Any] = field(default_factory=dict)  # identity of the data read


def _set_rng(rng: np.random.Generator, state: Any, what: str) -> None:
    bg = rng.bit_generator
    if not isinstance(state, dict) or state.get("bit_generator") != type(bg).__name__:
        raise CheckpointInvalid(f"{what} is not a {type(bg).__name__} state")
    try:
        bg.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise CheckpointInvalid(f"{what} is not a valid generator state ({exc})") from None


def _check_range(name: str, arr: np.ndarray) -> None:
    """Recorded values a run can produce: rounds, passes and list lengths >= 1, measures
    and losses finite or NaN (NaN: no relevant document). Plausible values cannot be told
    from real ones: a checkpoint is checked for integrity, not authenticated."""
    if arr.dtype.kind == "i" and arr.size and arr.min() < 1:
        raise CheckpointInvalid(f"column {name!r} has values below 1")
    if arr.dtype.kind == "f" and np.isinf(arr).any():
        raise CheckpointInvalid(f"column {name!r} has infinite values")


def _int(value: Any, what: str, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise CheckpointInvalid(f"{what} must be an integer >= {minimum}")
    return value


class Checkpointer:
    """Saves a :class:`RunState` every ``every`` rounds to ``path`` (atomically)."""

    def __init__(self, path: Path, run_id: str, every: int):
        self.path = Path(path)
        self.run_id = run_id
        self.every = every

    def due(self, t: int) -> bool:
        return self.every > 0 and t % self.every == 0

    def save(self, state: RunState) -> None:
        arrays: dict[str, np.ndarray] = {}
        kinds = column_kinds([n for n in state.columns if n not in _FIXED])
        for name, values in state.columns.items():
            if name == "qid":
                arrays[f"col.{name}"] = np.array(values, dtype=str) if values else np.zeros(0, "U1")
            else:
                kind = kinds[name]
                dtype = {"i": np.int64, "b": np.bool_, "f": np.float64}[kind]
                arrays[f"col.{name}"] = np.asarray(values, dtype=dtype)
        if state.learner.w is not None:
            arrays["learner.w"] = state.learner.w
        meta = {"format": FORMAT, "run_id": state.run_id, "t": state.t,
                "wall_seconds": state.wall_seconds, "nonfinite_round": state.nonfinite_round,
                "data": state.data, "tie_rng": state.tie_rng_state,
                "learner": {"class": state.learner.cls, "t": state.learner.t, "rng": state.learner.rng},
                "columns": list(state.columns)}
        arrays["state.json"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".tmp-{os.getpid()}")
        with open(tmp, "wb") as fh:
            np.savez(fh, allow_pickle=False, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    @staticmethod
    def _member(archive: Any, key: str) -> np.ndarray:
        """One array of the archive, after checking that its header's shape fits the
        bytes the member holds (a crafted header cannot make numpy allocate)."""
        info = archive.zip.getinfo(f"{key}.npy")
        with archive.zip.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise CheckpointInvalid(f"{key}: unsupported array format {version}")
        if dtype.hasobject or math.prod(shape) * dtype.itemsize > info.file_size:
            raise CheckpointInvalid(f"{key}: its header does not match its size")
        return archive[key]

    def _meta(self, archive: Any) -> dict[str, Any]:
        if "state.json" not in archive.files:
            raise CheckpointInvalid("state.json is missing")
        raw = self._member(archive, "state.json")
        if raw.dtype != np.uint8 or raw.ndim != 1 or raw.size > MAX_STATE_JSON:
            raise CheckpointInvalid("state.json is not a small byte array")
        try:
            meta = json.loads(raw.tobytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise CheckpointInvalid(f"state.json is not JSON ({type(exc).__name__})") from None
        if not isinstance(meta, dict) or type(meta.get("format")) is not int or meta["format"] != FORMAT:
            raise CheckpointInvalid(f"unknown checkpoint format (expected {FORMAT})")
        if meta.get("run_id") != self.run_id:
            raise CheckpointInvalid(f"it belongs to run {meta.get('run_id')!r}")
        _int(meta.get("t"), "t")
        return meta

    def _open(self) -> Any:
        if not self.path.is_file():
            raise CheckpointInvalid("it is not a regular file")
        try:
            archive = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise CheckpointInvalid(f"not a checkpoint archive ({type(exc).__name__})") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise CheckpointInvalid("not a checkpoint archive")
        # members are stored, never compressed: what is read is bounded by the file's size
        members = archive.zip.infolist() if archive.zip is not None else []
        if any(info.compress_type != zipfile.ZIP_STORED for info in members):
            archive.close()
            raise CheckpointInvalid("it has compressed members (checkpoints are stored uncompressed)")
        return archive

    def exists(self) -> bool:
        return self.path.exists() or self.path.is_symlink()

    def round(self) -> int | None:
        """The round the checkpoint was taken after (reads state.json only), or None if
        there is none; raises CheckpointInvalid for a damaged one."""
        if not self.exists():
            return None
        with self._open() as archive:
            try:
                return self._meta(archive)["t"]
            except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, RecursionError) as exc:
                raise CheckpointInvalid(f"unreadable ({type(exc).__name__})") from None

    def load(self, measure_names: list[str] | None = None) -> RunState | None:
        """The saved state of this run, None if there is none; CheckpointInvalid if the
        file is damaged, crafted, or another run's."""
        if not self.exists():
            return None
        with self._open() as archive:
            try:
                return self._load(archive, measure_names)
            except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, RecursionError) as exc:
                raise CheckpointInvalid(f"unreadable ({type(exc).__name__}: {exc})") from None

    def _load(self, archive: Any, measure_names: list[str] | None) -> RunState:
        meta = self._meta(archive)
        t = meta["t"]
        names = meta.get("columns")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise CheckpointInvalid("columns must be a list of names")
        expected = column_names(measure_names or [])
        if measure_names is not None and names != expected:
            raise CheckpointInvalid(f"it records columns {names}, this run records {expected}")
        columns: dict[str, list[Any]] = {}
        kinds = column_kinds([n for n in names if n not in _FIXED])
        for name in names:
            key = f"col.{name}"
            if key not in archive.files:
                raise CheckpointInvalid(f"column {name!r} is missing")
            arr = self._member(archive, key)
            kind = kinds[name]
            if arr.ndim != 1 or arr.shape[0] != t or arr.dtype.kind != kind:
                raise CheckpointInvalid(f"column {name!r} must be {t} values of kind {kind!r}")
            _check_range(name, arr)
            columns[name] = arr.tolist()
        if t and columns.get("t") != list(range(1, t + 1)):
            raise CheckpointInvalid("column 't' must count the rounds 1..t")
        wall = meta.get("wall_seconds")
        if not isinstance(wall, (int, float)) or isinstance(wall, bool) or not math.isfinite(wall) or wall < 0:
            raise CheckpointInvalid("wall_seconds must be a finite number >= 0")
        nonfinite = meta.get("nonfinite_round")
        if nonfinite is not None:
            _int(nonfinite, "nonfinite_round", 1)
        data = meta.get("data", {})
        if not isinstance(data, dict):
            raise CheckpointInvalid("data must be a mapping")
        lmeta = meta.get("learner")
        if not isinstance(lmeta, dict) or not isinstance(lmeta.get("class"), str):
            raise CheckpointInvalid("learner must name its class")
        w = None
        if "learner.w" in archive.files:
            w = self._member(archive, "learner.w")
            if w.dtype != np.float64 or w.ndim != 1:
                raise CheckpointInvalid("learner.w must be a float64 vector")
            if nonfinite is None and not np.isfinite(w).all():
                raise CheckpointInvalid("learner.w is not finite, yet no round made it so")
        lt = lmeta.get("t")
        if lt is not None:
            _int(lt, "learner.t")
            if lt > t:
                raise CheckpointInvalid(f"learner.t {lt} is beyond the checkpoint's round {t}")
        lrng = lmeta.get("rng")
        if lrng is not None and not isinstance(lrng, dict):
            raise CheckpointInvalid("learner.rng must be a generator state")
        tie = meta.get("tie_rng")
        if not isinstance(tie, dict):
            raise CheckpointInvalid("tie_rng is not a generator state")
        _set_rng(np.random.default_rng(), tie, "tie_rng")  # validate now, applied by the caller
        return RunState(self.run_id, t, columns, LearnerState(lmeta["class"], w, lt, lrng),
                        tie, float(wall), nonfinite, data)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


__all__ = ["FORMAT", "CheckpointInvalid", "Checkpointer", "LearnerState", "RunState"]
