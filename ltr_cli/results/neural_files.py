"""A neural run's files: each fold's model file beside ``models.json``, and the per-epoch
curves.

* Model files: a fit keeps its model inline (:meth:`~ltr_cli.neural.model.NeuralModel.to_dict`,
  base64 of the model file; a fold checkpoint stores it so). A run folder moves the bytes into
  ``neural-fold<N>.safetensors`` beside ``models.json``, which names the file and records its
  SHA-256 (:func:`save_model_files`). Reading one back (``ltr score``, ``ltr interleave``)
  checks the name, the size, the digest, then the model file itself as untrusted input
  (:meth:`~ltr_cli.neural.model.NeuralModel.from_bytes`): never a pickle, never code.
* Curves (:func:`curves_table`): ``epochs.parquet``, one row per epoch of every fit of every
  fold: ``fold``, ``params`` (the grid point, JSON), ``epoch`` (1-based), ``train_loss``,
  ``vali`` (the fit's vali metric, ``vali_metric``), ``lr``, ``best`` (the epoch kept).
  Timings stay out of it, so a rerun writes the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ltr_cli.errors import ResultsError

KIND = "neural"
EPOCHS = "epochs.parquet"
_FILE = re.compile(r"neural-fold[A-Za-z0-9]{1,20}\.safetensors", re.ASCII)
FIX = "re-run the learner (ltr run CONFIG --learner NAME) or remove the run folder"


def save_model_files(models: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """``models.json``'s content with each inline neural model's bytes replaced by the name
    of its own file and its SHA-256, and the files to write beside it (name -> bytes)."""
    out: dict[str, Any] = {}
    files: dict[str, bytes] = {}
    for i, (key, model) in enumerate(models.items()):
        if isinstance(model, dict) and model.get("kind") == KIND and "arrays" in model:
            tag = key if re.fullmatch(r"[A-Za-z0-9]{1,20}", key, re.ASCII) else f"n{i}"
            name = f"neural-fold{tag}.safetensors"
            files[name] = base64.b64decode(model["arrays"])
            model = {k: v for k, v in model.items() if k != "arrays"} | {"file": name}
        out[key] = model
    return out, files


def load_model(data: dict[str, Any], folder: Path | None) -> Any:
    """A neural entry of ``models.json`` (file beside it) or of a fold checkpoint (inline).
    A problem with its file is a one-line :class:`ResultsError` naming the file; with the
    entry itself a ValueError."""
    from ltr_cli.neural.model import MAX_MODEL_BYTES, NeuralModel

    if "arrays" in data:
        return NeuralModel.from_dict(data)
    name, digest = data.get("file"), data.get("sha256")
    if not isinstance(name, str) or not _FILE.fullmatch(name):
        raise ValueError("its 'file' is not a model file name this tool writes (neural-fold<N>.safetensors)")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError("its 'sha256' is not a SHA-256 digest")
    if folder is None:
        raise ValueError("its model file has no run folder to be read from")
    from ltr_cli.data.identity import NotSmallFile, read_small_file

    path = folder / name
    try:
        raw = read_small_file(path, MAX_MODEL_BYTES)
    except FileNotFoundError:
        raise ResultsError(f"{path}: missing (models.json refers to this model file); {FIX}, or copy the whole "
                           "run folder") from None
    except NotSmallFile as exc:
        raise ResultsError(f"{path}: {exc}; {FIX}") from None
    except OSError as exc:
        why = "a symbolic link" if path.is_symlink() else (exc.strerror or str(exc))
        raise ResultsError(f"{path}: cannot read the model file ({why}); {FIX}") from None
    if hashlib.sha256(raw).hexdigest() != digest:
        raise ResultsError(f"{path}: its SHA-256 is not the one models.json records (the file was changed or cut "
                           f"short after the run); {FIX}")
    try:
        model = NeuralModel.from_bytes(raw, data.get("features"))
    except ValueError as exc:
        raise ResultsError(f"{path}: not a neural model this tool wrote ({exc}); {FIX}") from None
    for key, held in (("scorer", model.scorer), ("outputs", model.outputs)):
        if key in data and data[key] != held:  # the file is what scores; its entry must say the same
            raise ValueError(f"its {key!r} is not the one its model file {name} records")
    return model


def curves_table(models: dict[str, Any]) -> Any:
    """``epochs.parquet`` of a batch run's ``models.json`` content (None: no fit has curves)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for key, model in models.items():
        if not isinstance(model, dict) or model.get("kind") != KIND:
            continue
        for fit in model.get("fits", []):
            details = (fit.get("convergence") or {}).get("details") or {}
            losses = details.get("train_loss")
            if not isinstance(losses, list):
                continue
            params = json.dumps(fit.get("params", {}), sort_keys=True)
            for e, loss in enumerate(losses):
                rows.append({"fold": None if key == "None" else int(key) if key.isdigit() else None,
                             "params": params, "epoch": e + 1, "train_loss": loss,
                             "vali": details["vali"][e], "vali_metric": details.get("vali_metric"),
                             "lr": details["lr"][e], "best": e + 1 == details.get("best_epoch")})
    if not rows:
        return None
    table = pd.DataFrame(rows)
    table["fold"] = table["fold"].astype("Int64")
    for col in ("train_loss", "vali", "lr"):
        table[col] = table[col].astype("float64")
    return table
