"""Click models (ltr_cli.clicks) and ``ltr clicks``: the reference code's tables number by
number, the exact laws against an independent enumeration of every coin the models throw,
samples against the exact law, seeding, and the refusals."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicks.records import exact_record, sample_counts
from ltr_cli.clicks.spec import build_model
from ltr_cli.clicks.tables import TABLE_NAMES, grades_for_max_label, table
from ltr_cli.errors import LtrError

# The reference code's utils/clicks.py (bin_models, short_models, long_models), typed out:
# name -> grades -> (P(click | grade), P(stop | grade)).
REFERENCE = {
    "navigational": {2: ([.05, .95], [.2, .9]), 3: ([.05, .5, .95], [.2, .5, .9]),
                     5: ([.05, .3, .5, .7, .95], [.2, .3, .5, .7, .9])},
    "informational": {2: ([.4, .9], [.1, .5]), 3: ([.4, .7, .9], [.1, .3, .5]),
                      5: ([.4, .6, .7, .8, .9], [.1, .2, .3, .4, .5])},
    "perfect": {2: ([.0, 1.], [.0, .0]), 3: ([.0, .5, 1.], [.0, .0, .0]),
                5: ([.0, .2, .4, .8, 1.], [.0, .0, .0, .0, .0])},
    "almost-random": {2: ([.4, .6], [.5, .5]), 3: ([.4, .5, .6], [.5, .5, .5]),
                      5: ([.4, .45, .5, .55, .6], [.5, .5, .5, .5, .5])},
    "random": {2: ([.5, .5], [.0, .0]), 3: ([.5, .5, .5], [.0, .0, .0]),
               5: ([.5, .5, .5, .5, .5], [.0, .0, .0, .0, .0])},
}
LISTS = {2: [1, 0, 1, 1, 0], 3: [2, 0, 1, 2, 1], 5: [4, 0, 2, 1, 3]}
#: the built-in models that examine by rank, each enumerated below from its own definition
#: (on the perfect table)
BY_RANK = ("pbm", "examine-stop", "ultra-pbm", "trust-bias")


def test_every_named_table_is_the_reference_codes():
    assert set(TABLE_NAMES) == set(REFERENCE)
    for name, by_grades in REFERENCE.items():
        for grades, (click, stop) in by_grades.items():
            t = table(name, grades)
            assert (list(t.click), list(t.stop)) == (click, stop), (name, grades)


# --- an independent enumeration: every click coin and every stop coin ----------------------

def _coins(click: list[float], stop: list[float], stop_needs_click: bool) -> dict[str, float]:
    """The law of the observed clicks, summed over all 4^n outcomes of a click coin and a
    stop coin per position: the clicks are kept up to and including the first position whose
    stop coin came up (and, if ``stop_needs_click``, that was clicked)."""
    n = len(click)
    law: dict[str, float] = {}
    for c in itertools.product((0, 1), repeat=n):
        for s in itertools.product((0, 1), repeat=n):
            p = math.prod((click[i] if c[i] else 1 - click[i]) * (stop[i] if s[i] else 1 - stop[i])
                          for i in range(n))
            stops = [i for i in range(n) if s[i] and (c[i] or not stop_needs_click)]
            last = stops[0] if stops else n - 1
            key = "".join(str(c[i]) if i <= last else "0" for i in range(n))
            law[key] = law.get(key, 0.0) + p
    return law


def _independent(model: str, labels: list[int], grades: int, rule: str | None, eta: float | None) -> dict[str, float]:
    click_table, stop_table = REFERENCE["perfect" if model in BY_RANK else model][grades]
    click = [click_table[r] for r in labels]
    n = len(labels)
    if model == "pbm":  # independent positions: examined w.p. (1/i)^eta, then clicked
        law: dict[str, float] = {}
        for c in itertools.product((0, 1), repeat=n):
            q = [(1 / (i + 1)) ** eta * click[i] for i in range(n)]
            key = "".join(map(str, c))
            law[key] = math.prod(q[i] if c[i] else 1 - q[i] for i in range(n))
        return law
    if model in ("ultra-pbm", "trust-bias"):  # ULTRA's table^eta; trust bias: eps+ / eps- per rank
        ultra = [0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]
        law = {}
        for c in itertools.product((0, 1), repeat=n):
            q = []
            for i in range(n):
                exam = ultra[min(i, 9)] ** eta
                if model == "trust-bias":  # relevant (w.p. gamma) then clicked w.p. eps+, else w.p. eps-
                    q.append(exam * (click[i] * (1 - (i + 2) / 100) + (1 - click[i]) * 0.65 / (i + 1)))
                else:
                    q.append(exam * click[i])
            law["".join(map(str, c))] = math.prod(q[i] if c[i] else 1 - q[i] for i in range(n))
        return law
    if model == "examine-stop":  # the reference code's ExamineClickModel
        e = [(1 / (i + 1)) ** eta for i in range(n)]
        return _coins(click, [0.0] + [1 - e[i] / e[i - 1] for i in range(1, n)], stop_needs_click=True)
    return _coins(click, [stop_table[r] for r in labels], stop_needs_click=rule == "after-click")


CASES = ([(m, g, rule, None) for m in REFERENCE for g in (2, 3, 5) for rule in ("after-click", "any-position")]
         + [(m, g, None, eta) for m in BY_RANK for g in (3, 5) for eta in (1.0, 0.5, 2.0)])


@pytest.mark.parametrize("model, grades, rule, eta", CASES)
def test_the_exact_law_agrees_with_an_independent_enumeration(model, grades, rule, eta):
    labels = LISTS[grades]
    want = _independent(model, labels, grades, rule, eta)
    built = build_model(model, grades, rule, eta)
    rows, probs = built.law(labels)
    got = {"".join("1" if x else "0" for x in row): p for row, p in zip(rows, probs)}
    assert set(got) == set(want) and len(got) == 2 ** len(labels)
    assert max(abs(got[k] - want[k]) for k in want) < 1e-12
    rec = exact_record(built, labels)
    assert {k for k, v in want.items() if v > 0} == set(rec["patterns"])
    assert max(abs(rec["patterns"][k] - want[k]) for k in rec["patterns"]) < 1e-12
    assert rec["zero_patterns"] == sum(v == 0 for v in want.values())
    marginal = [sum(p for k, p in want.items() if k[i] == "1") for i in range(len(labels))]
    assert np.max(np.abs(np.asarray(rec["marginal"]) - marginal)) < 1e-12
    assert np.max(np.abs(built.marginal(labels) - marginal)) < 1e-12


def test_the_two_stop_rules_on_the_worked_example():
    """5-grade navigational on [4, 0]: (1 - 0.95 x 0.9) x 0.05 after a click only,
    (1 - 0.9) x 0.05 when any position can stop."""
    runner = CliRunner()
    got = {}
    for rule in ("after-click", "any-position"):
        res = runner.invoke(app, ["clicks", "probabilities", "--model", "navigational", "--labels", "4,0",
                                  "--stop", rule, "--json"])
        assert res.exit_code == 0, res.output
        got[rule] = json.loads(res.stdout)["marginal"]
    assert got == {"after-click": [0.95, 0.00725], "any-position": [0.95, 0.005]}


@pytest.mark.parametrize("grades", [2, 3, 5])
def test_perfect_gives_one_law_under_both_stop_rules(grades):
    a = build_model("perfect", grades, "after-click").law(LISTS[grades])[1]
    b = build_model("perfect", grades, "any-position").law(LISTS[grades])[1]
    assert np.array_equal(a, b)
    nav = [build_model("navigational", grades, rule).law(LISTS[grades])[1] for rule in ("after-click", "any-position")]
    assert np.max(np.abs(nav[0] - nav[1])) > 1e-3


def test_pbm_and_examine_stop_are_different_laws():
    labels = [4, 4, 4]
    pbm, ex = build_model("pbm").marginal(labels), build_model("examine-stop").marginal(labels)
    assert np.allclose(pbm, [1, 1 / 2, 1 / 3])  # examined w.p. 1/i, always clicked
    assert np.allclose(ex, [1, 1, 1 / 2])  # clicked until a click at i stops w.p. 1 - (i-1)/i


@pytest.mark.parametrize("model, rule", [("navigational", "after-click"), ("informational", "any-position"),
                                         ("almost-random", "after-click"), ("pbm", None), ("examine-stop", None),
                                         ("ultra-pbm", None), ("trust-bias", None)])
def test_sampled_frequencies_agree_with_the_exact_law(model, rule):
    """Every pattern's count lies within 6 binomial standard deviations of its expectation
    (a seeded draw: it moves only if the sampler or the law changes)."""
    labels, draws = [4, 0, 2, 1, 3], 200_000
    built = build_model(model, 5, rule)
    rows, probs = built.law(labels)
    per_position, counts = sample_counts(built, labels, seed=11, draws=draws)
    for row, p in zip(rows, probs):
        key = "".join("1" if x else "0" for x in row)
        assert abs(counts.get(key, 0) - draws * p) <= 6 * math.sqrt(draws * p * (1 - p)) + 1e-9, key
    marginal = built.marginal(labels)
    assert np.all(np.abs(per_position - draws * marginal) <= 6 * np.sqrt(draws * marginal * (1 - marginal)) + 1e-9)
    assert sum(counts.values()) == draws


def test_a_seed_gives_the_same_output():
    runner = CliRunner()
    args = ["clicks", "sample", "--model", "informational", "--labels", "2,0,1,2", "--grades", "3",
            "--stop", "any-position", "--draws", "70000", "--json"]
    first, again, other = (runner.invoke(app, args + ["--seed", s]) for s in ("5", "5", "6"))
    assert first.exit_code == 0, first.output
    assert first.stdout == again.stdout != other.stdout
    rec = json.loads(first.stdout)
    assert rec["draws"] == 70000 and sum(rec["counts"].values()) == 70000
    built = build_model("informational", 3, "any-position")
    rng = np.random.default_rng(5)
    clicks = np.concatenate([built.sample([2, 0, 1, 2], rng, 65536), built.sample([2, 0, 1, 2], rng, 4464)])
    assert rec["marginal"] == [float(f"{v:.15g}") for v in clicks.mean(axis=0)]


def test_custom_tables_and_their_grades():
    custom = build_model("{click: [0.1, 0.6, 0.9], stop: [0.3, 0.2, 0.1]}", stop="any-position")
    assert custom.grades == 3
    want = _coins([0.9, 0.1], [0.1, 0.3], stop_needs_click=False)
    rows, probs = custom.law([2, 0])
    assert all(abs(p - want["".join("1" if x else "0" for x in r)]) < 1e-12 for r, p in zip(rows, probs))
    pbm = build_model({"type": "pbm", "click": "navigational"}, grades=3, eta=0.5)
    assert np.allclose(pbm.marginal([2, 2]), [0.95, 0.95 * 0.5 ** 0.5])
    assert grades_for_max_label(1) == 2 and grades_for_max_label(2) == 3 and grades_for_max_label(4) == 5


@pytest.mark.parametrize("args, message", [
    (["--model", "navigational", "--labels", "4,0", "--grades", "3"], "label 4 at position 1 is outside the 3-grade"),
    (["--model", "navigational", "--labels", "4,0", "--grades", "3"], "--grades"),
    (["--model", "nav", "--labels", "1"], "unknown click model"),
    (["--model", "perfect", "--labels", "1,x"], "--labels: 'x' is not a relevance grade"),
    (["--model", "perfect", "--labels", ""], "--labels"),
    (["--model", "perfect", "--labels", ",".join(["1"] * 21)], "21 shown labels"),
    (["--model", "perfect", "--labels", "1", "--grades", "4"], "--grades 4"),
    (["--model", "perfect", "--labels", "1", "--eta", "2"], "perfect is a cascade (use --stop)"),
    (["--model", "pbm", "--labels", "1", "--stop", "any-position"], "--stop applies to the models with a stop rule only"),
    (["--model", "pbm", "--labels", "1", "--eta", "-1"], "--eta -1.0"),
    (["--model", "perfect", "--labels", "1", "--stop", "sometimes"], "--stop 'sometimes'"),
    (["--model", "{click: [0.1, 1.5], stop: [0, 0]}", "--labels", "1"], "--model.click: the value at grade 1 (1.5)"),
    (["--model", "{click: [0.1, 0.5], stop: [0]}", "--labels", "1"], "--model.stop: 1 probabilities for 2 grades"),
    (["--model", "{click: [0.1, 0.5], stop: [0, 0]}", "--labels", "1", "--grades", "3"], "--model.click: 2 probabilities for 3 grades"),
    (["--model", "{click: [0.1, 0.5]}", "--labels", "1"], "--model.stop: missing"),
    (["--model", "{click: [0.1, 0.5], stop: [0, 0], eta: 1}", "--labels", "1"], "--model.eta: unknown key"),
    (["--model", "{type: pbm, click: [0.1, 0.5], stop: [0, 0]}", "--labels", "1"], "--model.stop: a pbm model"),
    (["--model", "{click: [0.1, true], stop: [0, 0]}", "--labels", "1"], "--model.click: the value at grade 1"),
    (["--model", "{click: [0.1", "--labels", "1"], "--model: not valid YAML"),
    (["--model", "{type: pbm, click: [0.1, 0.5], negative: 0.2}", "--labels", "1"], "--model.negative: only a trust-bias"),
    (["--model", "{type: trust-bias, click: [0.1, 0.5], negative: 2}", "--labels", "1"], "--model.negative: 2 is not a probability"),
])
def test_bad_options_are_one_line_errors(args, message):
    for sub in (["probabilities"], ["sample", "--draws", "10"]):
        res = CliRunner().invoke(app, ["clicks", *sub, *args])
        assert res.exit_code == 1 and message in res.stderr, res.output
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_a_label_beyond_the_table_is_refused_by_the_model_too():
    with pytest.raises(LtrError, match="label 3 at position 2"):
        build_model("perfect", 3).sample([0, 3], np.random.default_rng(0), 5)


def test_other_commands_do_not_import_the_click_models():
    code = ("import sys; from ltr_cli.cli.app import build; build('eval'); a = 'ltr_cli.cli.clicks' in sys.modules; "
            "build('clicks'); print(a, 'ltr_cli.cli.clicks' in sys.modules, 'ltr_cli.clicks' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "False"]


def test_a_steep_examination_curve_stays_a_law():
    """With a huge eta, (1/i)^eta underflows; the stop probabilities stay defined."""
    rows, probs = build_model("examine-stop", eta=1e300).law([4, 4, 4])
    assert np.all(np.isfinite(probs)) and abs(probs.sum() - 1) < 1e-12
    assert probs[rows.tolist().index([True, True, False])] == 1.0


def test_ultra_examination_and_trust_bias_by_hand():
    """ULTRA's table at eta 1 gives the relative propensities of the literature; trust bias
    clicks a grade-0 document at rank i with e_i x 0.65 / i, and rank 11 repeats rank 10."""
    marginal = build_model("ultra-pbm").marginal([4] * 11)
    assert np.allclose(marginal[:10] / marginal[0],
                       [1, 0.897, 0.706, 0.500, 0.412, 0.294, 0.162, 0.147, 0.118, 0.088], atol=5e-4)
    assert marginal[10] == marginal[9]
    assert np.allclose(build_model("ultra-pbm", eta=2).marginal([4, 4]), [0.68 ** 2, 0.61 ** 2])
    trust = build_model("trust-bias").marginal([0, 0, 4])
    assert np.allclose(trust, [0.68 * 0.65, 0.61 * 0.65 / 2, 0.48 * (1 - 4 / 100)])
    custom = build_model("{type: trust-bias, click: [0.5, 1.0]}")
    assert np.allclose(custom.marginal([0]), [0.68 * (0.5 * 0.98 + 0.5 * 0.65)])
    custom = build_model("{type: trust-bias, click: [0.0, 1.0], negative: 0.3}")
    assert np.allclose(custom.marginal([0, 0]), [0.68 * 0.3, 0.61 * 0.15]) and custom.describe()["eps_minus"] == "0.3/i"


@pytest.mark.parametrize("model", ["pbm", "trust-bias", "examine-stop", "navigational"])
def test_sample_lists_draws_each_row_from_its_own_list(model):
    """One walk per row: under the perfect table a grade-0 document is never clicked, so
    the rows [4, 0] and [0, 4] never click their second and first positions; trust bias
    does click grade 0, at the rate of its row's position."""
    built = build_model(model)
    rows = np.array([[4, 0], [0, 4]] * 20_000)
    clicks = built.sample_lists(rows, np.random.default_rng(1))
    assert clicks.shape == rows.shape
    first, second = clicks[0::2].mean(axis=0), clicks[1::2].mean(axis=0)
    want = built.marginal([4, 0]), built.marginal([0, 4])
    sd = np.sqrt(np.maximum(want[0] * (1 - want[0]), want[1] * (1 - want[1])) / 20_000)
    assert np.all(np.abs(first - want[0]) <= 6 * sd + 1e-12) and np.all(np.abs(second - want[1]) <= 6 * sd + 1e-12)
    if model in ("pbm", "examine-stop"):
        assert first[1] == 0 and second[0] == 0
    with pytest.raises(LtrError, match="one row of shown labels"):
        built.sample_lists(np.array([4, 0]), np.random.default_rng(1))
