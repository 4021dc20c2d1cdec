"""Generated data's relevance rules: ``linear`` (a linear ranker is well specified) and
``nonlinear`` (a hidden scorer with interactions: a linear ranker is misspecified)."""

from __future__ import annotations

import json
from itertools import islice

import numpy as np
import pytest
from scipy.stats import spearmanr
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.data.registry import get_dataset
from ltr_cli.data.relevance import hidden_scorer
from ltr_cli.data.synthetic import ShapeSpec, shaped_queries


def _stack(like: str, relevance: str, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    qs = list(shaped_queries(get_dataset(like), ShapeSpec(queries, 40, seed=seed, relevance=relevance)))
    return np.concatenate([q.X for q in qs]), np.concatenate([q.y for q in qs])


def _linear_fit_correlation(X_train, y_train, X_test, y_test) -> float:
    A = np.c_[X_train, np.ones(len(X_train))]
    w, *_ = np.linalg.lstsq(A, y_train, rcond=None)
    return float(spearmanr(np.c_[X_test, np.ones(len(X_test))] @ w, y_test).statistic)


def test_nonlinear_is_deterministic_and_seeded():
    a = list(islice(shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(5, seed=3, relevance="nonlinear")), 5))
    b = list(islice(shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(5, seed=3, relevance="nonlinear")), 5))
    c = list(islice(shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(5, seed=4, relevance="nonlinear")), 5))
    assert all(np.array_equal(p.X, q.X) and np.array_equal(p.y, q.y) for p, q in zip(a, b))
    assert not np.array_equal(a[0].X[:1], c[0].X[:1])


def test_nonlinear_grades_follow_the_dataset_label_distribution():
    info = get_dataset("mslr-web10k")
    _, y = _stack("mslr-web10k", "nonlinear", 300)
    shares = np.array([np.mean(y == level) for level in info.label_levels])
    assert np.allclose(shares, info.label_probs, atol=0.02), shares


def test_the_hidden_scorer_explains_the_grades_and_a_linear_ranker_does_not():
    """The point of the rule: on nonlinear data the best linear ranker is far from the
    hidden scorer; on linear data it is close to perfect."""
    info = get_dataset("mslr-web10k")
    X, y = _stack("mslr-web10k", "nonlinear", 400, seed=1)
    Xt, yt = _stack("mslr-web10k", "nonlinear", 200, seed=2)
    scorer = hidden_scorer(info.name, info.n_features, tuple(info.label_probs), None)
    hidden = float(spearmanr(scorer.score(Xt), yt).statistic)
    linear_on_nonlinear = _linear_fit_correlation(X, y, Xt, yt)
    X, y = _stack("mslr-web10k", "linear", 400, seed=1)
    Xt, yt = _stack("mslr-web10k", "linear", 200, seed=2)
    linear_on_linear = _linear_fit_correlation(X, y, Xt, yt)
    assert hidden > 0.8
    assert linear_on_nonlinear < 0.6 < hidden - 0.2
    assert linear_on_linear > 0.7 and linear_on_linear - linear_on_nonlinear > 0.2
    assert 0.1 < linear_on_nonlinear  # the linear part is there to be learnt


def test_linear_stays_what_it_was():
    """The default rule's stream and identity do not change with the new option."""
    spec = ShapeSpec(3, seed=0)
    assert "relevance" not in spec.params()
    assert ShapeSpec(3, seed=0, relevance="nonlinear").params()["relevance"] == "nonlinear"
    q = next(shaped_queries(get_dataset("letor3-ohsumed"), spec))
    rng = np.random.default_rng(0)
    m = max(1, int(rng.poisson(get_dataset("letor3-ohsumed").docs_per_query)))
    assert q.m == m


def test_synth_cli_marks_nonlinear_relevance(tmp_path):
    out = tmp_path / "nl.txt"
    result = CliRunner().invoke(app, ["data", "synth", str(out), "--like", "mslr-web10k", "--queries", "4",
                                      "--relevance", "nonlinear"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["relevance"] == "nonlinear"
    mark = json.loads((tmp_path / "nl.txt.generated.json").read_text())
    assert mark["relevance"] == "nonlinear" and "nonlinear relevance" in mark["shaped_like"]


@pytest.mark.parametrize("args, words", [
    (["--like", "mslr-web10k", "--relevance", "cubic"], "--relevance 'cubic'"),
    (["--separable", "authors", "--relevance", "nonlinear"], "--relevance applies to data shaped"),
])
def test_synth_cli_refuses_a_bad_relevance(tmp_path, args, words):
    result = CliRunner().invoke(app, ["data", "synth", str(tmp_path / "x.txt"), *args])
    assert result.exit_code == 1
    assert words in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.txt").exists()


def test_shaped_config_takes_relevance():
    from ltr_cli.config.datasets import ShapedData
    from ltr_cli.data.sources import open_source

    spec = ShapedData(kind="shaped", like="mslr-web10k", queries=3, relevance="nonlinear")
    source = open_source(spec, 0, None)
    assert "nonlinear relevance" in source.description
    assert source.identity()["generator"]["relevance"] == "nonlinear"
