"""Named arrays: how parameters, optimiser state and RNG keys are written (model files,
checkpoints between epochs) and read back as untrusted input. Never pickles.

The container is safetensors (a JSON header of names, dtypes, shapes and byte offsets, then
the raw little-endian bytes; the same arrays always give the same bytes), with this tool's
JSON record in the header's metadata under ``ltr``. Reading checks, before any array is
built: the size (at most ``max_bytes``), the header (safetensors' own checks: offsets
inside the file and not overlapping), the record (a JSON object), and then each array
against what the reader expects (:func:`expect`): exactly the names, shapes and dtypes of a
template, finite values.

A pytree of arrays (nested dicts of parameters; an optax state) is named by the path of
each leaf (:func:`named`): dict keys joined by ``/``, sequence and tuple fields by their
index or name.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

MAX_ARRAYS = 100_000
MAX_RECORD = 1 << 20  # bytes of the JSON record


def _key(entry: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)  # pragma: no cover - a path entry of another kind


def named(tree: Any, prefix: str) -> dict[str, np.ndarray]:
    """Every leaf of a pytree as a numpy array named ``prefix/<path>``."""
    from ltr_cli.neural.jaxenv import jax

    leaves, _ = jax().tree_util.tree_flatten_with_path(tree)
    return {"/".join([prefix, *(_key(e) for e in path)]): np.asarray(leaf) for path, leaf in leaves}


def restore_like(template: Any, arrays: dict[str, np.ndarray], prefix: str) -> Any:
    """The pytree of ``template``'s structure with its leaves read from ``arrays``
    (``prefix/<path>``, as :func:`named` wrote them); ValueError when a name, shape or dtype
    differs."""
    from ltr_cli.neural.jaxenv import jax

    j = jax()
    leaves, treedef = j.tree_util.tree_flatten_with_path(template)
    out = []
    for path, leaf in leaves:
        name = "/".join([prefix, *(_key(e) for e in path)])
        arr = arrays.get(name)
        want = np.asarray(leaf)
        if arr is None or arr.shape != want.shape or arr.dtype != want.dtype:
            raise ValueError(f"the array {name!r} is missing or not {want.dtype.name} {list(want.shape)}")
        out.append(j.numpy.asarray(arr))
    return j.tree_util.tree_unflatten(treedef, out)


def encode(arrays: dict[str, np.ndarray], record: dict[str, Any]) -> bytes:
    """The safetensors bytes of ``arrays`` with ``record`` (JSON) in the metadata."""
    from safetensors.numpy import save

    return save({k: np.asarray(v, order="C") for k, v in arrays.items()},
                metadata={"ltr": json.dumps(record, sort_keys=True, separators=(",", ":"))})


def decode(data: bytes, max_bytes: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and record of :func:`encode`'s bytes; ValueError (one line) for anything
    else: too large, not safetensors, no record, too many arrays."""
    if len(data) > max_bytes:
        raise ValueError(f"{len(data)} bytes, more than the {max_bytes} a file of this kind may hold")
    if len(data) < 8:
        raise ValueError("not a named-array file (too short)")
    head = int.from_bytes(data[:8], "little")
    if head > min(len(data) - 8, MAX_RECORD + 64 * MAX_ARRAYS):
        raise ValueError("not a named-array file (its header size is outside the file)")
    try:
        header = json.loads(data[8:8 + head].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("not a named-array file (its header is not JSON)") from None
    if not isinstance(header, dict) or len(header) > MAX_ARRAYS + 1:
        raise ValueError("not a named-array file (its header is not an object of arrays)")
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or not isinstance(meta.get("ltr"), str) or len(meta["ltr"]) > MAX_RECORD:
        raise ValueError("not a file this tool wrote (no record in its header)")
    try:
        record = json.loads(meta["ltr"])
    except (ValueError, RecursionError):
        raise ValueError("not a file this tool wrote (its record is not JSON)") from None
    if not isinstance(record, dict):
        raise ValueError("not a file this tool wrote (its record is not an object)")
    try:
        from safetensors.numpy import load

        arrays = load(data)
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types on a damaged file
        raise ValueError(f"not a named-array file ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})") \
            from None
    return arrays, record


def expect(arrays: dict[str, np.ndarray], shapes: dict[str, tuple[tuple[int, ...], str]], what: str) -> None:
    """ValueError unless ``arrays`` holds exactly the names of ``shapes`` (name -> (shape,
    dtype name)) with those shapes and dtypes, every float finite."""
    missing = sorted(set(shapes) - set(arrays))
    if missing:
        raise ValueError(f"{what} lacks the array {missing[0]!r}")
    extra = sorted(set(arrays) - set(shapes))
    if extra:
        raise ValueError(f"{what} holds the array {extra[0]!r}, which its architecture has no place for")
    for name, (shape, dtype) in shapes.items():
        arr = arrays[name]
        if arr.dtype.name != dtype or tuple(arr.shape) != tuple(shape):
            raise ValueError(f"{what}: the array {name!r} is {arr.dtype.name} {list(arr.shape)}, not {dtype} "
                             f"{list(shape)}")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError(f"{what}: the array {name!r} is not finite")
