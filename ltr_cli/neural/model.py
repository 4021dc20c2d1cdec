"""A trained neural ranking model: its scorer's architecture, its parameters, its feature
transform, and the scores it gives a query's documents.

:meth:`NeuralModel.scores` is the one scoring path: the CV protocol's vali and test
evaluation, each epoch's vali evaluation while training, and ``ltr score`` all call it,
one query at a time: the query's features transformed, padded to their bucket
(:func:`~ltr_cli.neural.batching.bucket`) as ``[1, L, d]`` and scored by one jitted function
per architecture, so the same query always gives the same bytes. A per-document scorer
scores a long query in pieces; a query too long for the memory budget is a
:class:`~ltr_cli.neural.batching.QueryTooLong`.

Saved form (:meth:`to_bytes`): named arrays (``params/<path>`` float32, the transform's
``transform/<i>/<name>``) with the record ``{format, features, scorer, outputs,
transform}``; :meth:`from_bytes` reads it back as untrusted input: the record's scorer
must be a complete block of a known kind, the arrays exactly the names, shapes and
dtypes that architecture has for that many features, every value finite.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ltr_cli.neural import arrays as named_arrays
from ltr_cli.neural.batching import DOC_CHUNK, QueryTooLong, bucket, bytes_needed, one_query
from ltr_cli.neural.transforms import Transform

KIND = "neural"
FORMAT = "ltr-neural-model/1"
MAX_FEATURES = 10_000_000
MAX_OUTPUTS = 1024
MAX_MODEL_BYTES = 4 << 30
_SCORE_FNS: dict[str, Callable[..., Any]] = {}


def score_function(block: dict[str, Any], outputs: int) -> Callable[..., Any]:
    """The jitted ``(params, X [1, L, d], mask) -> [1, L]`` ranking scores of an
    architecture, one per architecture per process (compiled once per bucket)."""
    key = json.dumps([block, outputs], sort_keys=True)
    if key not in _SCORE_FNS:
        from ltr_cli.neural import scorers
        from ltr_cli.neural.jaxenv import jax

        scorer = scorers.build(block, outputs)
        _SCORE_FNS[key] = jax().jit(lambda params, X, mask: scorer.ranking(scorer.apply(params, X, mask)))
    return _SCORE_FNS[key]


def param_shapes(block: dict[str, Any], outputs: int, d: int) -> dict[str, tuple[tuple[int, ...], str]]:
    """``params/<path>`` -> (shape, dtype) of an architecture for ``d`` features (nothing
    allocated)."""
    from ltr_cli.neural import scorers
    from ltr_cli.neural.jaxenv import jax

    j = jax()
    scorer = scorers.build(block, outputs)
    shapes = j.eval_shape(lambda k: scorer.init(k, d), j.random.PRNGKey(0))
    leaves, _ = j.tree_util.tree_flatten_with_path(shapes)
    return {"/".join(["params", *(named_arrays._key(e) for e in path)]): (tuple(leaf.shape), str(leaf.dtype))
            for path, leaf in leaves}


@dataclass
class NeuralModel:
    """``scorer``: the normalised ``scorer:`` block; ``params``: ``params/<path>`` -> float32
    array; ``device``: the JAX device it scores on (None: JAX's default)."""

    scorer: dict[str, Any]
    outputs: int
    transform: Transform
    params: dict[str, np.ndarray]
    n_features: int
    info: dict[str, Any] = field(default_factory=dict)
    budget: int | None = None  # bytes a query may take to score (None: no bound)
    device: Any = None
    _placed: Any = field(default=None, init=False, repr=False, compare=False)
    _built: Any = field(default=None, init=False, repr=False, compare=False)

    def built(self) -> Any:
        """The :class:`~ltr_cli.neural.scorers.Scorer` of this architecture."""
        if self._built is None:
            from ltr_cli.neural import scorers

            self._built = scorers.build(self.scorer, self.outputs)
        return self._built

    def _tree(self) -> Any:
        if self._placed is None:
            from ltr_cli.neural.jaxenv import jax

            j = jax()
            tree: dict[str, Any] = {}
            for name, arr in self.params.items():
                node = tree
                *path, leaf = name.split("/")[1:]
                for part in path:
                    node = node.setdefault(part, {})
                node[leaf] = j.device_put(arr, self.device) if self.device is not None else j.numpy.asarray(arr)
            self._placed = tree
        return self._placed

    def scores(self, X: np.ndarray) -> np.ndarray:
        """One query's scores ``(m,)`` float64 from its rows ``X (m, d)``."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected rows of {self.n_features} features, got shape {X.shape}")
        m = X.shape[0]
        if m == 0:
            return np.zeros(0)
        Z = self.transform.apply(X)
        built = self.built()
        step = DOC_CHUNK if built.per_document else m
        fn = score_function(self.scorer, self.outputs)
        tree = self._tree()
        out = []
        for start in range(0, m, step):
            piece = Z[start:start + step]
            L = bucket(piece.shape[0])
            self.check_length(m)
            Xp, mask = one_query(piece, L)
            out.append(np.asarray(fn(tree, Xp, mask))[0, :piece.shape[0]])
        return np.concatenate(out).astype(np.float64)

    def check_length(self, m: int) -> None:
        """:class:`QueryTooLong` when scoring a query of ``m`` documents would take more
        than the budget (never for a per-document scorer: it scores pieces)."""
        built = self.built()
        if self.budget is None or built.per_document:
            return
        L = bucket(m)
        need = bytes_needed(built.floats(self.n_features, L), self.n_features, 1, L, train=False)
        if need > self.budget:
            raise QueryTooLong(m, need, self.budget, str(self.scorer["kind"]))

    def finite(self) -> bool:
        return all(bool(np.isfinite(a).all()) for a in self.params.values())

    def record(self) -> dict[str, Any]:
        return {"format": FORMAT, "features": self.n_features, "scorer": self.scorer, "outputs": self.outputs,
                "transform": self.transform.describe()}

    def to_bytes(self) -> bytes:
        """The model file: named arrays and the record (the same model, the same bytes)."""
        return named_arrays.encode({**self.params, **self.transform.named_arrays()}, self.record())

    def to_dict(self) -> dict[str, Any]:
        """The model inline (a fold checkpoint keeps it so; a run folder moves its bytes into
        a file of their own, :mod:`ltr_cli.results.neural_files`), with what the fit recorded
        (``info``, when it recorded anything)."""
        data = self.to_bytes()
        return {"kind": KIND, "features": self.n_features, "scorer": self.scorer, "outputs": self.outputs,
                "transform": self.transform.describe(), "sha256": hashlib.sha256(data).hexdigest(),
                "arrays": base64.b64encode(data).decode("ascii"), **({"info": self.info} if self.info else {})}

    @classmethod
    def from_bytes(cls, data: bytes, features: Any = None) -> NeuralModel:
        """A model file read back; ValueError (one line) for anything this tool did not
        write, or a model of another width than ``features`` (when given)."""
        from ltr_cli.neural import scorers

        found, record = named_arrays.decode(data, MAX_MODEL_BYTES)
        if record.get("format") != FORMAT:
            raise ValueError(f"not a neural model of this tool (format {str(record.get('format'))[:40]!r}, "
                             f"not {FORMAT})")
        d, outputs, block = record.get("features"), record.get("outputs"), record.get("scorer")
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_FEATURES:
            raise ValueError(f"its features must be an integer from 1 to {MAX_FEATURES}")
        if features is not None and features != d:
            raise ValueError(f"the model file has {d} features, models.json says {features}")
        if isinstance(outputs, bool) or not isinstance(outputs, int) or not 1 <= outputs <= MAX_OUTPUTS:
            raise ValueError(f"its outputs must be an integer from 1 to {MAX_OUTPUTS}")
        if not isinstance(block, dict) or scorers.normalized(block) != block:
            raise ValueError("its scorer is not a complete scorer block this tool writes")
        transform = Transform.restore(record.get("transform"), found, d)
        params = {k: v for k, v in found.items() if k.startswith("params/")}
        named_arrays.expect(params, param_shapes(block, outputs, d), "its parameters")
        return cls(block, outputs, transform, params, d)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NeuralModel:
        """A model inline (``arrays``: base64 of its file, ``sha256`` its digest)."""
        text, digest = data.get("arrays"), data.get("sha256")
        if not isinstance(text, str) or not isinstance(digest, str):
            raise ValueError("its arrays are not inline (base64) with their sha256")
        try:
            raw = base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise ValueError("its inline arrays are not base64") from None
        if hashlib.sha256(raw).hexdigest() != digest:
            raise ValueError("its inline arrays do not have the sha256 it records")
        model = cls.from_bytes(raw, data.get("features"))
        info = data.get("info", {})
        if not isinstance(info, dict):
            raise ValueError("its info is not a mapping")
        model.info = info  # what the fit recorded beside its arrays (DLA's propensities)
        return model
