"""Checkpoints of an online run, so ``ltr run --resume`` continues a killed run exactly.

A checkpoint holds everything that decides the rest of the run: the learner's mutable
state (weights ``w``, round counter ``t``, its own random generator, and whatever else it
declares in ``state_fields``), the tie-breaking
generator's state, the number of rounds consumed, the rounds recorded so far, and the
identity of the data the run read. The learner object itself is not stored: it is rebuilt
from the config and its state is restored into it. The query stream is rebuilt from its
seed and the consumed rounds are skipped, which replays the stream's own draws exactly.

**Format 3** (no pickle anywhere): an append-only file. It starts with the 8 bytes
``LTRCKPT3``; each save appends one *record*: the payload's length (8 bytes, little
endian), its SHA-256 (32 bytes), and the payload, an uncompressed ``.npz`` archive read
with ``allow_pickle=False``. Member ``state.json`` is a uint8 array holding UTF-8 JSON::

    {"format": 3, "run_id": str, "from": int, "t": int, "wall_seconds": float,
     "nonfinite_round": int | null, "data": {...data identity...},
     "tie_rng": <numpy bit_generator.state dict>,
     "click_rng": <bit_generator.state> (click feedback runs only),
     "learner": {"class": str, "t": int | null, "rng": <bit_generator.state> | null,
                 "extra": {name: {"array": true} | {"value": number | bool | {"generator": state}}}},
     "columns": [column names in order]}

and the arrays are ``col.<name>``: the rows of rounds ``from + 1 .. t`` only (int64,
float64, bool, or fixed-width unicode for ``qid``), and ``learner.w`` (float64,
``(n_features,)``), and ``learner.extra.<name>`` for each extra state array a learner
declares in ``state_fields``. A save therefore writes the rounds since the previous save and the
learner's state, whatever the run's length: O(1) per save in the rounds already done.
The state is the last record's; the round log is every record's rows, in order, and each
record must start where the previous one ended. Every field is validated on load;
anything that does not check out raises :class:`CheckpointInvalid`, which the runner
reports in one line.

A kill while a record is being appended leaves an incomplete last record (its length
runs past the end of the file), which is ignored: the previous record is the state, and
the next save overwrites the torn bytes. A complete record whose digest does not match is
damage, and refused. The first save of a run writes a new file under a temporary name and
renames it. Files live beside the run directory as ``.<run-id>.checkpoint`` and are
deleted when the run completes. A checkpoint found by a run without ``--resume`` (online, or
a batch run's fold checkpoint) is kept with a one-line error unless ``--fresh``
(:func:`keep_checkpoint`).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError
from ltr_cli.protocols.learner_state import CheckpointInvalid, LearnerState, set_rng
from ltr_cli.core.round_log import column_kinds, column_names

FORMAT = 3
MAGIC = b"LTRCKPT3"
_LENGTH = 8  # bytes of a record's payload length
_DIGEST = 32  # bytes of its SHA-256
_FIXED = set(column_names([]))  # the columns every log has; the others are measures
MAX_STATE_JSON = 1 << 20  # bytes of state.json read at most (it holds no arrays)



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
    click_rng_state: dict[str, Any] | None = None  # protocol.feedback: clicks: the click generator


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
    """Saves a :class:`RunState` every ``every`` rounds to ``path``: the first save writes
    a new file (atomically), later saves append the rounds since the previous one."""

    def __init__(self, path: Path, run_id: str, every: int):
        self.path = Path(path)
        self.run_id = run_id
        self.every = every
        self._end: int | None = None  # where the next record goes (None: write a new file)
        self._rows = 0  # rounds already in the file

    def due(self, t: int) -> bool:
        return self.every > 0 and t % self.every == 0

    # --- writing ----------------------------------------------------------------------

    def save(self, state: RunState) -> None:
        payload = self._payload(state, self._rows)
        record = len(payload).to_bytes(_LENGTH, "little") + hashlib.sha256(payload).digest() + payload
        if self._end is None or not self.path.is_file():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + f".tmp-{os.getpid()}")
            with open(tmp, "wb") as fh:
                fh.write(MAGIC + record)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            self._end = len(MAGIC) + len(record)
        else:
            with open(self.path, "r+b") as fh:
                fh.seek(self._end)
                fh.write(record)
                fh.truncate()  # a torn record a kill left behind, if longer
                fh.flush()
                os.fsync(fh.fileno())
            self._end += len(record)
        self._rows = state.t

    def _payload(self, state: RunState, start: int) -> bytes:
        """The record of ``state``: the rows after round ``start`` and the full state."""
        arrays: dict[str, np.ndarray] = {}
        kinds = column_kinds([n for n in state.columns if n not in _FIXED])
        for name, values in state.columns.items():
            new = values[start:state.t]
            if name == "qid":
                arrays[f"col.{name}"] = np.array(new, dtype=str) if new else np.zeros(0, "U1")
            else:
                dtype = {"i": np.int64, "b": np.bool_, "f": np.float64}[kinds[name]]
                arrays[f"col.{name}"] = np.asarray(new, dtype=dtype)
        if state.learner.w is not None:
            arrays["learner.w"] = state.learner.w
        extra_meta: dict[str, Any] = {}
        for name, value in state.learner.extra.items():
            if isinstance(value, np.ndarray):
                arrays[f"learner.extra.{name}"] = value
                extra_meta[name] = {"array": True}
            else:
                extra_meta[name] = {"value": value}
        meta = {"format": FORMAT, "run_id": state.run_id, "from": start, "t": state.t,
                "wall_seconds": state.wall_seconds, "nonfinite_round": state.nonfinite_round,
                "data": state.data, "tie_rng": state.tie_rng_state,
                **({"click_rng": state.click_rng_state} if state.click_rng_state is not None else {}),
                "learner": {"class": state.learner.cls, "t": state.learner.t, "rng": state.learner.rng,
                            **({"extra": extra_meta} if extra_meta else {})},
                "columns": list(state.columns)}
        arrays["state.json"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez(buf, allow_pickle=False, **arrays)
        return buf.getvalue()

    # --- reading ----------------------------------------------------------------------

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
        _int(meta.get("from"), "from")
        if meta["from"] > meta["t"]:
            raise CheckpointInvalid("a record ends before it starts")
        return meta

    def _records(self) -> tuple[list[bytes], int]:
        """The complete records' payloads (digests checked) and the offset after the last
        one; an incomplete last record (a kill during a save) is left out."""
        if not self.path.is_file():
            raise CheckpointInvalid("it is not a regular file")
        with open(self.path, "rb") as fh:
            if fh.read(len(MAGIC)) != MAGIC:
                raise CheckpointInvalid("not a checkpoint file (unknown format or damaged start)")
            size = os.fstat(fh.fileno()).st_size
            payloads: list[bytes] = []
            end = len(MAGIC)
            while True:
                head = fh.read(_LENGTH + _DIGEST)
                if len(head) < _LENGTH + _DIGEST:
                    break  # the end, or a torn record header
                length = int.from_bytes(head[:_LENGTH], "little")
                if length > size - end - len(head):
                    break  # a torn record: its payload was not written in full
                payload = fh.read(length)
                if hashlib.sha256(payload).digest() != head[_LENGTH:]:
                    raise CheckpointInvalid(f"record {len(payloads) + 1} is damaged (its digest does not match)")
                payloads.append(payload)
                end += len(head) + length
        if not payloads:
            raise CheckpointInvalid("it holds no complete record")
        return payloads, end

    @staticmethod
    def _open(payload: bytes) -> Any:
        try:
            archive = np.load(io.BytesIO(payload), allow_pickle=False)
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise CheckpointInvalid(f"a record is not an archive ({type(exc).__name__})") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise CheckpointInvalid("a record is not an archive")
        # members are stored, never compressed: what is read is bounded by the record's size
        members = archive.zip.infolist() if archive.zip is not None else []
        if any(info.compress_type != zipfile.ZIP_STORED for info in members):
            archive.close()
            raise CheckpointInvalid("it has compressed members (checkpoints are stored uncompressed)")
        return archive

    def exists(self) -> bool:
        return self.path.exists() or self.path.is_symlink()

    def round(self) -> int | None:
        """The round the checkpoint was taken after (the last record's state), or None if
        there is none; raises CheckpointInvalid for a damaged one."""
        if not self.exists():
            return None
        try:
            payloads, _ = self._records()
            with self._open(payloads[-1]) as archive:
                return self._meta(archive)["t"]
        except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, RecursionError) as exc:
            raise CheckpointInvalid(f"unreadable ({type(exc).__name__})") from None

    def load(self, measure_names: list[str] | None = None) -> RunState | None:
        """The saved state of this run, None if there is none; CheckpointInvalid if the
        file is damaged, crafted, or another run's. Later saves append to it."""
        if not self.exists():
            return None
        try:
            payloads, end = self._records()
            columns: dict[str, list[Any]] | None = None
            state = None
            for payload in payloads:
                with self._open(payload) as archive:
                    state = self._load(archive, measure_names, 0 if state is None else state.t)
                if columns is None:
                    columns = state.columns
                else:
                    for name, values in state.columns.items():
                        columns[name].extend(values)
        except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, RecursionError) as exc:
            raise CheckpointInvalid(f"unreadable ({type(exc).__name__}: {exc})") from None
        assert state is not None and columns is not None
        if state.t and columns["t"] != list(range(1, state.t + 1)):
            raise CheckpointInvalid("column 't' must count the rounds 1..t")
        state.columns = columns
        self._end, self._rows = end, state.t
        return state

    def _load(self, archive: Any, measure_names: list[str] | None, start: int) -> RunState:
        """One record: its rows (rounds ``start + 1 .. t``) and the state it holds."""
        meta = self._meta(archive)
        t = meta["t"]
        if meta["from"] != start:
            raise CheckpointInvalid(f"a record starts after round {meta['from']}, not {start}")
        rows = t - start
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
            if arr.ndim != 1 or arr.shape[0] != rows or arr.dtype.kind != kind:
                raise CheckpointInvalid(f"column {name!r} must be {rows} values of kind {kind!r}")
            _check_range(name, arr)
            columns[name] = arr.tolist()
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
        set_rng(np.random.default_rng(), tie, "tie_rng")  # validate now, applied by the caller
        click = meta.get("click_rng")
        if click is not None:
            set_rng(np.random.default_rng(), click, "click_rng")
        extra = self._extra_state(archive, lmeta.get("extra", {}))
        return RunState(self.run_id, t, columns, LearnerState(lmeta["class"], w, lt, lrng, extra),
                        tie, float(wall), nonfinite, data, click)

    def _extra_state(self, archive: Any, declared: Any) -> dict[str, Any]:
        """The learner's extra state fields (checked against the learner on restore)."""
        if not isinstance(declared, dict):
            raise CheckpointInvalid("learner.extra must be a mapping")
        extra: dict[str, Any] = {}
        for name, how in declared.items():
            if not isinstance(name, str) or not name.isidentifier() or not isinstance(how, dict):
                raise CheckpointInvalid("learner.extra has a malformed field")
            if how.get("array") is True:
                key = f"learner.extra.{name}"
                if key not in archive.files:
                    raise CheckpointInvalid(f"{key} is missing")
                extra[name] = self._member(archive, key)
            elif "value" in how:
                value = how["value"]
                if value is not None and not isinstance(value, (bool, int, float, dict)):
                    raise CheckpointInvalid(f"learner.extra.{name} has a value of the wrong kind")
                extra[name] = value
            else:
                raise CheckpointInvalid(f"learner.extra.{name} has neither an array nor a value")
        return extra

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self._end, self._rows = None, 0


__all__ = ["FORMAT", "CheckpointInvalid", "Checkpointer", "LearnerState", "RunState"]


def keep_checkpoint(path: Path, what: str, argv: list[str] | None, fresh: bool) -> None:
    """A checkpoint that ``ltr run`` without ``--resume`` finds: deleted with ``--fresh``,
    else kept with a one-line error saying how to continue or start over."""
    if fresh:
        path.unlink(missing_ok=True)
        return
    raise LtrError(f"{path}: an interrupted run of {what} left this checkpoint; continue it with: "
                   f"{resume_command(argv)}, or start over with --fresh")


def resume_command(argv: list[str] | None) -> str:
    """The command line that continues this run: the same arguments with ``--resume``."""
    import shlex

    args = list(argv or sys.argv)[1:]
    if "--resume" not in args:
        args.append("--resume")
    return " ".join(["ltr"] + [shlex.quote(a) for a in args])
