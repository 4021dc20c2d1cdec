"""The click-model, interleaving and estimator conformance suites shipped in the package
(:mod:`ltr_cli.testing.clicks`, :mod:`ltr_cli.testing.interleaving`,
:mod:`ltr_cli.testing.estimators`) on every named click model, every interleaving and
multileaving method and every estimator; and that they catch what they promise to catch."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.clicks.cascade import CascadeModel
from ltr_cli.interleaving.probabilistic import Probabilistic
from ltr_cli.interleaving.team_draft import TeamDraft
from ltr_cli.testing import parametrize_with_checks
from ltr_cli.testing import clicks as click_suite
from ltr_cli.testing import interleaving as interleaving_suite


@parametrize_with_checks("clicks")
def test_click_model_conformance(subject, check, tmp_path):
    check(subject, tmp_path)


@parametrize_with_checks("interleaving")
def test_interleaving_conformance(subject, check, tmp_path):
    check(subject, tmp_path)


@parametrize_with_checks("estimators")
def test_estimator_conformance(subject, check, tmp_path):
    check(subject, tmp_path)


def test_every_named_model_stop_rule_and_grade_is_a_subject():
    """One subject per registered model, stop rule it takes and grade table."""
    from ltr_cli.clicks.base import CLICK_MODELS

    ids = [name for name, _ in click_suite.subjects()]
    assert len(ids) == len(set(ids)) == sum(len(k.stop_rules or (None,)) for k in CLICK_MODELS.values()) * 2
    assert {"navigational-any-position-3g", "navigational-after-click-5g", "trust-bias-5g"} <= set(ids)


def test_naive_clicks_declared_unbiased_fail_the_estimator_suite(tmp_path):
    from dataclasses import replace

    from ltr_cli.learners.batch.click_data import NAIVE
    from ltr_cli.testing import estimators as estimator_suite

    with pytest.raises(AssertionError, match="depend on the position"):
        estimator_suite.check_weighted_clicks_do_not_depend_on_the_position(replace(NAIVE, unbiased=True), tmp_path)


class _LawOffByOne(CascadeModel):
    """A model whose law moves mass from the empty pattern to the all-click one."""

    def law(self, labels):
        rows, probs = super().law(labels)
        probs = probs.copy()
        probs[0] -= 0.01
        probs[-1] += 0.01
        return rows, probs


class _SamplerIgnoresStops(CascadeModel):
    """A model whose sampler forgets the stops (its law keeps them)."""

    def sample(self, labels, rng, draws):
        click = self.click[np.asarray(labels)]
        return rng.random((draws, len(labels))) < click


def _navigational():
    from ltr_cli.clicks.tables import table

    t = table("navigational", 5)
    return t.click, t.stop


@pytest.mark.parametrize("check", [click_suite.check_marginal_is_the_law_summed,
                                   click_suite.check_law_matches_the_coins])
def test_a_law_that_is_not_the_walk_fails(check, tmp_path):
    with pytest.raises(AssertionError):
        check(_LawOffByOne("bad", *_navigational(), "after-click"), tmp_path)


def test_a_sampler_that_is_not_the_law_fails(tmp_path):
    with pytest.raises(AssertionError, match="drawn"):
        click_suite.check_sampling_matches_the_law(_SamplerIgnoresStops("bad", *_navigational(), "after-click"),
                                                   tmp_path)


class _FirstRankerWinsTies(TeamDraft):
    """Team-draft that gives ranker 0 every click of the shared prefix."""

    def credit(self, shown, clicks):
        out = super().credit(shown, clicks)
        extra = float(np.asarray(clicks, dtype=bool)[shown.teams < 0].sum())
        credit = out.credit.copy()
        credit[0] += extra
        return type(out)(credit=credit, prefer=np.sign(credit[:, None] - credit[None, :]))


class _FavoursTheFirstRanker(Probabilistic):
    """Probabilistic interleaving whose credit leans towards ranker 0."""

    def credit(self, shown, clicks):
        out = super().credit(shown, clicks)
        credit = out.credit.copy()
        credit[0] *= 1.1
        return type(out)(credit=credit, prefer=out.prefer)


class _TeamsFavourTheFirst(TeamDraft):
    """Team-draft whose click on position 1 always counts for ranker 0."""

    def credit(self, shown, clicks):
        out = super().credit(shown, clicks)
        credit = out.credit.copy()
        if np.asarray(clicks, dtype=bool)[0]:
            credit[0] += 1.0
        return type(out)(credit=credit, prefer=out.prefer)


def test_identical_rankings_that_do_not_tie_fail(tmp_path):
    with pytest.raises(AssertionError, match="identical rankings"):
        interleaving_suite.check_identical_rankings_tie((_FirstRankerWinsTies(), 2), tmp_path)


@pytest.mark.parametrize("method", [_FavoursTheFirstRanker(), _TeamsFavourTheFirst()], ids=["exact", "sampled"])
def test_a_method_that_favours_a_ranker_under_random_clicks_fails(method, tmp_path):
    with pytest.raises(AssertionError, match="credit"):
        interleaving_suite.check_random_clicks_favour_no_ranker((method, 2), tmp_path)


def test_the_probabilistic_list_law_is_the_one_make_draws_from():
    """The exact check's enumerated law is the method's: seeded frequencies of ``make``
    within 5 sigma of it."""
    method, ranks = Probabilistic(), interleaving_suite.rankings(2, 3)
    law = {tuple(d.tolist()): p for p, d in interleaving_suite.list_law(method, ranks, 3)}
    rng, draws = np.random.default_rng(0), 4000
    seen: dict[tuple[int, ...], int] = {}
    for _ in range(draws):
        docs = tuple(method.make(ranks, 3, rng).docs.tolist())
        seen[docs] = seen.get(docs, 0) + 1
    for docs, p in law.items():
        assert abs(seen.get(docs, 0) / draws - p) <= 5 * np.sqrt(p * (1 - p) / draws) + 1e-9, docs
