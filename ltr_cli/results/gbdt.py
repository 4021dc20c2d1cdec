"""LambdaMART models: LightGBM's text format, read by this module alone and scored in numpy.

A ``lambdamart`` fit keeps the model text LightGBM wrote (``Booster.model_to_string``). A
run folder saves it as a file of its own beside ``models.json`` (``lightgbm-fold<N>.txt``),
which names the file and records its SHA-256. Reading it back (``ltr score``, a fold
checkpoint) never hands the text to LightGBM: this module parses the tree section, checks
every field it uses (feature indices, child links forming one tree per block, no categorical
or linear trees) and evaluates the trees exactly as LightGBM's predictor does (compiled,
:mod:`ltr_cli.kernels.gbdt`; the numpy walk here is its reference and runs with ``LTR_KERNELS=0``),
so a model file can neither run code nor make the tool write anywhere, and ``ltr score``
needs no LightGBM. The parameters LightGBM lists after the trees are ignored.

LightGBM's prediction, reproduced bit for bit: a value ``|x| <= 1e-35`` (float) is read as
0 (its dense-row reader drops it); at a node, NaN becomes 0 unless the node's missing type
is NaN; a missing value (zero for missing type Zero, NaN for NaN) follows the node's
default direction; otherwise ``x <= threshold`` goes left. The raw score is the leaf
values summed tree by tree in order.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli import kernels
from ltr_cli.errors import ResultsError

KIND = "lightgbm"
MAX_MODEL_BYTES = 512 << 20  # a model file of 20,000 trees of 255 leaves stays far below this
MAX_TREES = 1_000_000
MAX_LEAVES = 1 << 17  # LightGBM's own cap is 131072
_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float constant)
_FILE = re.compile(r"lightgbm-fold[A-Za-z0-9]{1,20}\.txt", re.ASCII)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf", re.ASCII)
_INT = re.compile(r"-?\d{1,10}", re.ASCII)
FIX = "re-run the learner (ltr run CONFIG --learner NAME) or remove the run folder"


class ModelTextError(ValueError):
    """The text is not a LightGBM lambdarank model of the kind this tool writes."""


@dataclass
class Tree:
    """One regression tree: internal node ``i`` splits on ``feature[i]`` at
    ``threshold[i]``; a child ``c >= 0`` is an internal node, ``c < 0`` the leaf ``~c``."""

    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    missing: np.ndarray  # 0 none, 1 zero, 2 NaN
    left: np.ndarray
    right: np.ndarray
    leaf_value: np.ndarray
    depth: int

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """The leaf each row of ``X`` (already zero-filtered) falls into."""
        node = np.zeros(X.shape[0], dtype=np.int64)
        if self.leaf_value.shape[0] == 1:
            return ~node  # leaf 0
        rows = np.arange(X.shape[0])
        for _ in range(self.depth):
            inner = node >= 0
            if not inner.any():
                break
            at, nd = rows[inner], node[inner]
            x = X[at, self.feature[nd]]
            miss = self.missing[nd]
            nan = np.isnan(x)
            x = np.where(nan & (miss != 2), 0.0, x)
            missing = ((miss == 1) & (x >= -_ZERO) & (x <= _ZERO)) | ((miss == 2) & nan)
            go_left = np.where(missing, self.default_left[nd], x <= self.threshold[nd])
            node[at] = np.where(go_left, self.left[nd], self.right[nd])
        return ~node


@dataclass
class LightGBMModel:
    """A LambdaMART model: LightGBM's model text and the trees read from it."""

    text: str
    trees: list[Tree]
    n_features: int
    info: dict[str, Any] = field(default_factory=dict)
    _packed: tuple[np.ndarray, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_text(cls, text: str, n_features: int | None = None) -> LightGBMModel:
        trees, width = parse_model_text(text)
        if n_features is not None and n_features != width:
            raise ModelTextError(f"the model has {width} features, models.json says {n_features}")
        return cls(text, trees, width)

    def scores(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected rows of {self.n_features} features, got shape {X.shape}")
        X = np.where(np.abs(X) <= _ZERO, 0.0, X)  # NaN stays NaN
        out = np.zeros(X.shape[0])
        if kernels.ENABLED and self.trees:
            from ltr_cli.kernels import gbdt as kernel  # numba loads only when a model scores

            if self._packed is None:
                self._packed = _pack(self.trees)
            walk: Any = kernel.forest_scores
            walk(np.ascontiguousarray(X), _ZERO, *self._packed, out)
            return out
        for tree in self.trees:  # the reference the compiled walk reproduces
            out += tree.leaf_value[tree.leaves(X)]
        return out

    def finite(self) -> bool:
        return all(bool(np.isfinite(t.leaf_value).all()) for t in self.trees)

    def to_dict(self) -> dict[str, Any]:
        """The model with its text inline (a fold checkpoint keeps it so); a run folder
        moves the text into a file of its own (:func:`save_model_files`)."""
        return {"kind": KIND, "features": self.n_features, "trees": len(self.trees), "text": self.text}


def _pack(trees: list[Tree]) -> tuple[np.ndarray, ...]:
    """The trees' arrays one after another, as :func:`ltr_cli.kernels.gbdt.forest_scores` reads them."""
    node_off = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum([t.feature.shape[0] for t in trees], out=node_off[1:])
    leaf_off = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum([t.leaf_value.shape[0] for t in trees], out=leaf_off[1:])

    def cat(name: str, dtype: Any) -> np.ndarray:
        return np.ascontiguousarray(np.concatenate([getattr(t, name) for t in trees]), dtype=dtype)

    return (node_off, leaf_off, np.array([t.depth for t in trees], dtype=np.int64), cat("feature", np.int64),
            cat("threshold", np.float64), cat("default_left", np.bool_), cat("missing", np.int64),
            cat("left", np.int64), cat("right", np.int64), cat("leaf_value", np.float64))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- the text format --------------------------------------------------------------------------


def _ints(value: str, key: str, n: int) -> np.ndarray:
    parts = value.split(" ") if n else []
    if len(parts) != n or not all(_INT.fullmatch(p) for p in parts):
        raise ModelTextError(f"{key} must hold {n} integers")
    return np.array([int(p) for p in parts], dtype=np.int64)


def _floats(value: str, key: str, n: int) -> np.ndarray:
    parts = value.split(" ") if n else []
    if len(parts) != n or not all(_NUMBER.fullmatch(p) for p in parts):
        raise ModelTextError(f"{key} must hold {n} numbers")
    return np.array([float(p) for p in parts], dtype=np.float64)


def _block(lines: list[str], start: int) -> tuple[dict[str, str], int]:
    """``key=value`` lines from ``start`` up to a blank line; (fields, next line index)."""
    fields: dict[str, str] = {}
    i = start
    while i < len(lines) and lines[i] != "":
        key, eq, value = lines[i].partition("=")
        if not eq or key in fields:
            raise ModelTextError(f"line {i + 1}: expected one key=value line per key")
        fields[key] = value
        i += 1
    return fields, i


def _tree(fields: dict[str, str], n_features: int, where: str) -> Tree:
    def need(key: str) -> str:
        if key not in fields:
            raise ModelTextError(f"{where}: no {key}")
        return fields[key]

    leaves = need("num_leaves")
    if not _INT.fullmatch(leaves) or not 1 <= int(leaves) <= MAX_LEAVES:
        raise ModelTextError(f"{where}: num_leaves must be an integer from 1 to {MAX_LEAVES}")
    n = int(leaves)
    if fields.get("num_cat", "0") != "0" or fields.get("is_linear", "0") != "0":
        raise ModelTextError(f"{where}: categorical or linear trees are not models this tool writes")
    leaf_value = _floats(need("leaf_value"), f"{where}: leaf_value", n)
    if n == 1:
        empty = np.zeros(0, dtype=np.int64)
        return Tree(empty, np.zeros(0), np.zeros(0, dtype=bool), empty, empty, empty, leaf_value, 0)
    feature = _ints(need("split_feature"), f"{where}: split_feature", n - 1)
    threshold = _floats(need("threshold"), f"{where}: threshold", n - 1)
    decision = _ints(need("decision_type"), f"{where}: decision_type", n - 1)
    left = _ints(need("left_child"), f"{where}: left_child", n - 1)
    right = _ints(need("right_child"), f"{where}: right_child", n - 1)
    if ((feature < 0) | (feature >= n_features)).any():
        raise ModelTextError(f"{where}: a split feature is outside 0..{n_features - 1}")
    missing = (decision >> 2) & 3
    if ((decision < 0) | (decision > 15) | (decision & 1 == 1) | (missing == 3)).any():
        raise ModelTextError(f"{where}: a decision_type is not a numerical split's")
    return Tree(feature, threshold, (decision & 2) == 2, missing, left, right, leaf_value,
                _depth(left, right, n, where))


def _depth(left: np.ndarray, right: np.ndarray, n: int, where: str) -> int:
    """The tree's depth, after checking that the child links reach every internal node and
    leaf exactly once from the root (one tree: no cycle, nothing shared, nothing left over)."""
    for child in (left, right):
        if ((child >= n - 1) | (child < -n)).any():
            raise ModelTextError(f"{where}: a child link points outside the tree")
    seen_inner = np.zeros(n - 1, dtype=bool)
    seen_leaf = np.zeros(n, dtype=bool)
    seen_inner[0] = True
    frontier, depth = np.array([0]), 0
    while frontier.size:
        depth += 1
        children = np.concatenate((left[frontier], right[frontier]))
        inner, leaf = children[children >= 0], ~children[children < 0]
        if seen_inner[inner].any() or seen_leaf[leaf].any() or np.unique(children).size != children.size:
            raise ModelTextError(f"{where}: its child links do not form a tree")
        seen_inner[inner] = True
        seen_leaf[leaf] = True
        frontier = inner
    if not (seen_inner.all() and seen_leaf.all()):
        raise ModelTextError(f"{where}: some nodes are not reached from the root")
    return depth


def parse_model_text(text: str) -> tuple[list[Tree], int]:
    """The trees of a LightGBM v4 lambdarank model text and its feature count;
    :class:`ModelTextError` for anything else."""
    lines = text.split("\n")
    if not lines or lines[0] != "tree":
        raise ModelTextError("it does not start with LightGBM's 'tree' line")
    head, i = _block(lines, 1)
    expected = {"version": "v4", "num_class": "1", "num_tree_per_iteration": "1"}
    for key, value in expected.items():
        if head.get(key) != value:
            raise ModelTextError(f"header {key} is {head.get(key)!r}, not {value!r}")
    objective = head.get("objective")  # none: a custom objective's (raw scores, as lambdarank's)
    if (objective is not None and objective.split(" ")[0] != "lambdarank") or "average_output" in head:
        raise ModelTextError("not a lambdarank model (nor one of a custom objective)")
    width = head.get("max_feature_idx", "")
    if not _INT.fullmatch(width) or not 0 <= int(width) < 10_000_000:
        raise ModelTextError("header max_feature_idx is not a feature index")
    n_features = int(width) + 1
    trees: list[Tree] = []
    while True:
        while i < len(lines) and lines[i] == "":
            i += 1
        if i >= len(lines):
            raise ModelTextError("it ends before 'end of trees' (a truncated file)")
        if lines[i] == "end of trees":
            break
        if lines[i] != f"Tree={len(trees)}" or len(trees) >= MAX_TREES:
            raise ModelTextError(f"line {i + 1}: expected Tree={len(trees)} or 'end of trees'")
        fields, i = _block(lines, i + 1)
        trees.append(_tree(fields, n_features, f"Tree={len(trees)}"))
    return trees, n_features


# --- in a run folder ---------------------------------------------------------------------------


def save_model_files(models: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``models.json``'s content with each inline LightGBM model text replaced by the name
    of its own file and its SHA-256, and the files to write beside it (name -> text)."""
    out: dict[str, Any] = {}
    files: dict[str, str] = {}
    for i, (key, model) in enumerate(models.items()):
        if isinstance(model, dict) and model.get("kind") == KIND and "text" in model:
            tag = key if re.fullmatch(r"[A-Za-z0-9]{1,20}", key, re.ASCII) else f"n{i}"
            name = f"lightgbm-fold{tag}.txt"
            text = model["text"]
            files[name] = text
            model = {k: v for k, v in model.items() if k != "text"} | {"file": name, "sha256": sha256(text)}
        out[key] = model
    return out, files


def load_model(data: dict[str, Any], folder: Path | None) -> LightGBMModel:
    """A LightGBM model entry of ``models.json`` (or of a fold checkpoint, text inline).
    A problem with its file is a one-line :class:`ResultsError` naming the file; a problem
    with the entry itself a ValueError."""
    features = data["features"]
    if "text" in data:
        if not isinstance(data["text"], str):
            raise ValueError("its model text is not a string")
        try:
            return LightGBMModel.from_text(data["text"], features)
        except ModelTextError as exc:
            raise ValueError(f"its LightGBM model text: {exc}") from None
    name, digest = data.get("file"), data.get("sha256")
    if not isinstance(name, str) or not _FILE.fullmatch(name):
        raise ValueError("its 'file' is not a model file name this tool writes (lightgbm-fold<N>.txt)")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError("its 'sha256' is not a SHA-256 digest")
    if folder is None:
        raise ValueError("its model file has no run folder to be read from")
    path = folder / name
    text = _read_model_file(path)
    if sha256(text) != digest:
        raise ResultsError(f"{path}: its SHA-256 is not the one models.json records (the file was changed or "
                           f"cut short after the run); {FIX}")
    try:
        return LightGBMModel.from_text(text, features)
    except ModelTextError as exc:
        raise ResultsError(f"{path}: not a LightGBM model this tool wrote ({exc}); {FIX}") from None


def _read_model_file(path: Path) -> str:
    from ltr_cli.data.identity import NotSmallFile, read_small_file

    try:
        raw = read_small_file(path, MAX_MODEL_BYTES)
    except FileNotFoundError:
        raise ResultsError(f"{path}: missing (models.json refers to this model file); {FIX}, or copy the "
                           "whole run folder") from None
    except NotSmallFile as exc:
        raise ResultsError(f"{path}: {exc}; {FIX}") from None
    except OSError as exc:
        why = "a symbolic link" if path.is_symlink() else (exc.strerror or str(exc))
        raise ResultsError(f"{path}: cannot read the model file ({why}); {FIX}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a LightGBM model text (not UTF-8); {FIX}") from None
