"""Opt-in: every loss against allRank's own code, batch by batch, value and gradient.

Set ``LTR_ALLRANK`` to an allRank checkout (the directory holding ``allrank/``) and, unless
this Python has torch, ``LTR_ALLRANK_PYTHON`` to a Python that does (a CPU torch; allRank
itself is not installed, its loss modules are imported from the checkout). Slates are drawn
with padding at the end (label -1), ties, slates without a relevant document and slates of
one document, in float32 and float64; the tolerance is 1e-6 where allRank computes in float64
and 1e-5 in float32, relative to max(1, |allRank's|). Where allRank's value is NaN (a mean
over no pair) ours must be 0; where allRank refuses the input (its NeuralNDCG and ordinal on
float64) the case is reported and skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ALLRANK = os.environ.get("LTR_ALLRANK")
PYTHON = os.environ.get("LTR_ALLRANK_PYTHON", sys.executable)
RUNNER = Path(__file__).with_name("allrank_runner.py")
SCHEMES = [None, "ndcgLoss1_scheme", "ndcgLoss2_scheme", "ndcgLoss2PP_scheme", "lambdaRank_scheme",
           "rankNet_scheme", "rankNetWeightedByGTDiff_scheme", "rankNetWeightedByGTDiffPowed_scheme"]
# (ours, params (allRank's kwargs too), allRank's function, sigmoid first, labels, outputs per document, padded)
CONFIGS = [
    ("listnet", {}, "listNet", False, "graded", 1, True),
    ("binary_listnet", {}, "binary_listNet", False, "binary", 1, True),
    ("listmle", {}, "listMLE", False, "distinct", 1, True),
    ("ranknet", {}, "rankNet", False, "graded", 1, True),
    ("ranknet", {"weight_by_diff": True}, "rankNet", False, "graded", 1, True),
    ("ranknet_weightbygtdiff_pow", {}, "rankNet_weightByGTDiff_pow", False, "graded", 1, True),
    *[("lambdaloss", {"weighing_scheme": s}, "lambdaLoss", False, "graded", 1, True) for s in SCHEMES],
    *[("lambdaloss", {"weighing_scheme": s, "k": 3, "sigma": 2.0, "mu": 5.0, "reduction": "mean",
                      "reduction_log": "natural"}, "lambdaLoss", False, "graded", 1, True) for s in SCHEMES],
    ("approxndcgloss", {"alpha": 0.5}, "approxNDCGLoss", False, "graded", 1, True),
    ("neuralndcg", {}, "neuralNDCG", False, "graded", 1, True),
    ("neuralndcg", {"temperature": 0.5, "k": 3, "powered_relevancies": False}, "neuralNDCG", False, "graded", 1, True),
    ("neuralndcg_transposed", {}, "neuralNDCG_transposed", False, "graded", 1, True),
    ("neuralndcg_transposed", {"k": 3, "max_iter": 20, "tol": 1e-5}, "neuralNDCG_transposed", False, "graded", 1,
     True),
    ("pointwise_rmse", {"no_of_levels": 4}, "pointwise_rmse", False, "graded", 1, True),
    ("bce", {}, "bce", True, "binary", 1, False),
    ("bce", {}, "bce", True, "binary", 1, True),
    ("ordinal", {"n": 4}, "ordinal", True, "graded", 4, False),
    ("ordinal", {"n": 4}, "ordinal", True, "graded", 4, True),
]
DTYPES = ("float32", "float64")
TOLERANCE = {"float32": 1e-5, "float64": 1e-6}


def _why_not() -> str | None:
    if not ALLRANK:
        return "set LTR_ALLRANK to an allRank checkout to compare with allRank's own losses"
    if not (Path(ALLRANK) / "allrank" / "models" / "losses" / "lambdaLoss.py").is_file():
        return f"LTR_ALLRANK={ALLRANK} holds no allrank/models/losses/lambdaLoss.py"
    probe = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0:
        return f"torch does not import in {PYTHON} (set LTR_ALLRANK_PYTHON to a Python with torch)"
    try:
        import jax  # noqa: F401
    except ImportError:
        return "jax is not installed (pip install -e '.[neural]')"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _draw(rng, labels, outputs, padded, n=12, b=4, length=9):
    shape = (n, b, length) if outputs == 1 else (n, b, length, outputs)
    scores = rng.normal(scale=1.5, size=shape)
    if labels == "distinct":
        y = np.stack([[rng.permutation(length) * 0.5 for _ in range(b)] for _ in range(n)])
    else:
        y = rng.integers(0, 2 if labels == "binary" else 5, size=(n, b, length)).astype(float)
        y[rng.random((n, b)) < 0.2] = 0.0
    if padded:
        sizes = rng.integers(1, length + 1, size=(n, b))
        sizes[:, 0] = 1
        y[np.arange(length)[None, None, :] >= sizes[..., None]] = -1.0
    return scores, y


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """Every case, run by allRank (one subprocess) and by ours: case -> (ours, allRank's)."""
    import functools

    import jax

    from ltr_cli.neural.losses import resolve

    tmp = tmp_path_factory.mktemp("allrank")
    rng = np.random.default_rng(2024)
    arrays, manifest = {}, []
    for cid, (ci, dtype) in enumerate((ci, dt) for ci in range(len(CONFIGS)) for dt in DTYPES):
        name, params, fn, sigmoid, labels, outputs, padded = CONFIGS[ci]
        arrays[f"pred_{cid}"], arrays[f"true_{cid}"] = (a.astype(dtype) for a in _draw(rng, labels, outputs, padded))
        manifest.append({"id": cid, "config": ci, "fn": fn, "kwargs": params, "sigmoid": sigmoid, "dtype": dtype,
                         "unchecked_bce": padded and name in ("bce", "ordinal")})
    np.savez(tmp / "cases.npz", **arrays)
    (tmp / "manifest.json").write_text(json.dumps(manifest))
    subprocess.run([PYTHON, str(RUNNER), ALLRANK, str(tmp / "cases.npz"), str(tmp / "manifest.json"),
                    str(tmp / "out.npz")], check=True, capture_output=True)
    theirs = np.load(tmp / "out.npz")
    errors = json.loads((tmp / "out.npz.errors.json").read_text())
    results = {}
    for case in manifest:
        cid, ci, dtype = case["id"], case["config"], case["dtype"]
        if str(cid) in errors:
            results[(ci, dtype)] = errors[str(cid)]
            continue
        kind = resolve(CONFIGS[ci][0])
        bound = kind.bind(CONFIGS[ci][1])
        y = arrays[f"true_{cid}"]
        with jax.enable_x64(dtype == "float64"):
            f = jax.vmap(jax.value_and_grad(functools.partial(kind.fn, **bound)))
            v, g = jax.jit(f)(arrays[f"pred_{cid}"], np.where(y == -1, 0, y), y != -1)
        results[(ci, dtype)] = ((np.asarray(v, np.float64), np.asarray(g, np.float64)),
                                (theirs[f"value_{cid}"], theirs[f"grad_{cid}"]))
    return results


@pytest.mark.parametrize("ci", range(len(CONFIGS)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CONFIGS)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_loss_equals_allranks_batch_by_batch(compared, ci, dtype):
    result = compared[(ci, dtype)]
    if isinstance(result, str):
        assert CONFIGS[ci][0] in ("neuralndcg", "neuralndcg_transposed", "ordinal") and dtype == "float64", result
        pytest.skip(f"allRank refuses this input: {result}")
    (v, g), (tv, tg) = result
    tol = TOLERANCE[dtype]
    nan = ~np.isfinite(tv)
    assert np.all(v[nan] == 0.0)
    ok = ~nan
    assert np.all(np.abs(v[ok] - tv[ok]) <= tol * np.maximum(1.0, np.abs(tv[ok])))
    scale = np.maximum(1.0, np.abs(tg[ok]).reshape(int(ok.sum()), -1).max(axis=1))
    assert np.all(np.abs(g[ok] - tg[ok]).reshape(int(ok.sum()), -1).max(axis=1) <= tol * scale)
