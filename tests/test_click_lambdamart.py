"""LambdaMART on a click log: the rows LightGBM gets, and the position-bias and IPS paths."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("lightgbm")

from ltr_cli.clicklog.simulate import Sessions  # noqa: E402
from ltr_cli.learners.batch.click_data import ClickData  # noqa: E402
from ltr_cli.learners.batch.lambdamart import click_rows, fit_lambdamart  # noqa: E402
from ltr_cli.clicklog.simulate import simulate  # noqa: E402
from ltr_cli.clicks.spec import build_model  # noqa: E402


def _sessions(rows):
    """Sessions from (query, [(doc, clicked), ...]) tuples, positions 1, 2, ..."""
    s, q, d, p, c = [], [], [], [], []
    for n, (query, shown) in enumerate(rows):
        for k, (doc, clicked) in enumerate(shown):
            s.append(n), q.append(query), d.append(doc), p.append(k + 1), c.append(clicked)
    return Sessions(np.array(s, np.int64), np.array(q, np.int32), np.array(d, np.int32), np.array(p, np.int16),
                    np.array(c, bool))


def test_click_rows_group_alike_sessions_and_split_ips_groups_by_click():
    X = np.arange(12, dtype=float).reshape(4, 3)
    train = [(X, np.zeros(4))]
    log = _sessions([(0, [(2, True), (0, False), (1, True)]), (0, [(2, True), (0, False), (1, True)]),
                     (0, [(2, False), (0, False), (1, False)]), (0, [(1, False), (3, True), (0, False)])])
    naive = click_rows(train, ClickData(log, np.ones(3), "naive"))
    assert naive.group == [3, 3] and sorted(naive.weight[[0, 3]].tolist()) == [1.0, 2.0]  # the no-click one is out
    assert naive.position is None
    bias = click_rows(train, ClickData(log, np.ones(3), "position-bias"))
    assert bias.position is not None and sorted(bias.position.tolist()) == [0, 0, 1, 1, 2, 2]
    ips = click_rows(train, ClickData(log, np.array([1.0, 2.0, 4.0]), "ips"))
    # the twice-seen session gives one group per click: {2 clicked, 0} and {1 clicked, 0}
    groups = np.split(np.arange(len(ips.label)), np.cumsum(ips.group)[:-1])
    seen = sorted((tuple(ips.X[g][:, 0].tolist()), tuple(ips.label[g].tolist()), float(ips.weight[g][0]))
                  for g in groups)
    # (doc features x[0] = 3 doc, labels, weight): twice the session's pos-3 and pos-1 clicks; the other's pos-2 click
    assert seen == [((0.0, 3.0), (0, 1), 8.0), ((3.0, 9.0, 0.0), (0, 1, 0), 2.0), ((6.0, 0.0), (1, 0), 2.0)]
    assert all(len(set(ips.weight[g].tolist())) == 1 and ips.label[g].sum() == 1 for g in groups)


def test_position_bias_and_ips_fits_run_and_differ_from_naive():
    rng = np.random.default_rng(0)
    w = rng.normal(size=6)
    train = []
    for _ in range(40):
        X = rng.normal(size=(15, 6))
        train.append((X, np.digitize(X @ w, [0.0, 1.0, 2.0, 3.0])))
    rankings = [rng.permutation(15) for _ in train]
    s = simulate([y for _, y in train], rankings, build_model("ultra-pbm"), "ranking", 10, 4000, 1)
    test = rng.normal(size=(200, 6))
    scores = {}
    for kind, weights in (("naive", np.ones(10)), ("position-bias", np.ones(10)),
                          ("ips", 1 / np.array([1, .897, .706, .5, .412, .294, .162, .147, .118, .088]))):
        model = fit_lambdamart(train, 7, 0.1, 20, 5, rows=click_rows(train, ClickData(s, weights, kind)))
        scores[kind] = model.scores(test)
        assert np.corrcoef(scores[kind], test @ w)[0, 1] > 0.5, kind  # it learns the relevance direction
    assert not np.allclose(scores["position-bias"], scores["naive"])
    assert not np.allclose(scores["ips"], scores["naive"])
