"""RTop-kF (top-k paper): sampling law, unbiased estimators, what the learner may see."""

from __future__ import annotations

import csv
import json
import io
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.learners.online.base import Feedback
from ltr_cli.protocols.online import reveal, run_online
from ltr_cli.measures.conventions import Measure
from ltr_cli.data.svmlight import Query
from ltr_cli.surrogates import SURROGATES
from ltr_cli.surrogates.topk_estimators import estimate_score_gradient, p_first, p_first_two
from tests.conftest import REPO, make_learner

runner = CliRunner()
SURROGATE_NAMES = ["squared", "kl", "smoothdcg", "ranksvm"]


def fixed_learner(m_features, surrogate="squared", gamma=0.3, seed=0, **kw):
    """RTop-kF with constant gamma (paper schedule with T = 1 and c_gamma = gamma)."""
    return make_learner("rtopkf", m_features, rng=np.random.default_rng(seed), surrogate=surrogate,
                        schedule="paper", horizon=1, gamma_scale=gamma, eta_scale=kw.pop("eta", 0.1), **kw)


def test_exact_probabilities_equal_empirical_frequencies():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 3))
    learner = fixed_learner(3, gamma=0.3)
    learner.w = rng.normal(size=3)
    n = 40000
    first = np.zeros(5)
    pairs = np.zeros((5, 5))
    for _ in range(n):
        shown = learner.rank(X, rng)
        first[shown[0]] += 1
        pairs[shown[0], shown[1]] += 1
    exploit = learner._exploit
    for j in range(5):
        p = p_first(j, exploit, 0.3)
        assert abs(first[j] / n - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12
        for k in range(5):
            if k != j:
                p2 = p_first_two(j, k, exploit, 0.3)
                assert abs(pairs[j, k] / n - p2) <= 5 * np.sqrt(p2 * (1 - p2) / n) + 1e-12
    assert p_first(exploit[0], exploit, 0.3) == pytest.approx(0.7 + 0.3 / 5)
    assert p_first_two(exploit[0], exploit[1], exploit, 0.3) == pytest.approx(0.7 + 0.3 / 20)


def monte_carlo(surrogate, fidelity, n=30000, seed=2):
    """Mean and standard error of the estimator over rankings drawn from the law."""
    rng = np.random.default_rng(seed)
    m, gamma = 5, 0.3
    s = rng.normal(size=m)
    y = np.array([2.0, 0.0, 1.0, 3.0, 0.0])
    exploit = np.argsort(-s, kind="stable")
    draws = np.empty((n, m))
    for i in range(n):
        shown = rng.permutation(m) if rng.random() < gamma else exploit
        # SmoothDCG: the loss -SmoothDCG's gradient is the ascend-gain estimate
        draws[i] = estimate_score_gradient(surrogate, s, shown, y[shown], exploit, gamma, fidelity, 0.5,
                                           direction="ascend-gain")
    params = {"epsilon": 0.5} if surrogate == "smoothdcg" else {}
    exact = SURROGATES[surrogate](s, y, **params)[1]
    return draws.mean(axis=0), draws.std(axis=0, ddof=1) / np.sqrt(n), exact


def test_smoothdcg_directions_are_opposite_and_the_papers_descends_the_gain():
    """The papers step w - eta z with z the gradient of the sampled gain term
    G(R_s1) softmax(s / eps)_s1 / p (descend-gain): a small step lowers that term;
    ascend-gain is its negation and raises it."""
    rng = np.random.default_rng(4)
    s, y = rng.normal(size=6), np.array([3.0, 0.0, 1.0, 2.0, 0.0, 4.0])
    exploit = np.argsort(-s, kind="stable")
    args = ("smoothdcg", s, exploit, y[exploit], exploit, 0.2, "exact", 0.5)
    down = estimate_score_gradient(*args, direction="descend-gain")
    up = estimate_score_gradient(*args, direction="ascend-gain")
    np.testing.assert_array_equal(down, -up)
    j = exploit[0]

    def gain(v):
        e = np.exp(v / 0.5 - (v / 0.5).max())
        return (2.0 ** y[j] - 1.0) * e[j] / e.sum()

    assert gain(s - 1e-3 * down) < gain(s) < gain(s - 1e-3 * up)


@pytest.mark.parametrize("surrogate", SURROGATE_NAMES)
def test_estimators_are_unbiased(surrogate):
    mean, se, exact = monte_carlo(surrogate, "exact")
    # 5 standard errors per coordinate (the tolerance comes from the sample variance)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-12), (mean, exact, se)


@pytest.mark.parametrize("surrogate", SURROGATE_NAMES)
def test_authors_denominator_is_biased(surrogate):
    mean, se, exact = monte_carlo(surrogate, "authors-code")
    assert np.any(np.abs(mean - exact) > 5 * se), "the authors' 0.001 gamma/m estimator should be biased"


def test_authors_denominators_values():
    exploit = np.array([0, 1, 2, 3])
    s = np.zeros(4)
    z_match = estimate_score_gradient("squared", s, np.array([0, 1, 2, 3]), np.array([1.0]), exploit, 0.2, "authors-code")
    z_miss = estimate_score_gradient("squared", s, np.array([2, 1, 0, 3]), np.array([1.0]), exploit, 0.2, "authors-code")
    assert z_match[0] == pytest.approx(-2 / (0.8 + 0.2 / 4))
    assert z_miss[2] == pytest.approx(-2 / (0.001 * 0.2 / 4))


def test_protocol_reveals_only_top_k_and_hidden_labels_cannot_matter():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6, 4))
    y1 = np.array([3.0, 0.0, 1.0, 2.0, 0.0, 1.0])
    for surrogate, k in (("kl", 1), ("ranksvm", 2)):
        a, b = fixed_learner(4, surrogate, seed=7), fixed_learner(4, surrogate, seed=7)
        a.w = b.w = rng.normal(size=4)
        shown_a, shown_b = a.rank(X, np.random.default_rng(0)), b.rank(X, np.random.default_rng(0))
        assert shown_a.tolist() == shown_b.tolist()
        y2 = y1.copy()
        hidden = shown_a[k:]
        y2[hidden] = 4.0 - y2[hidden]  # change every label the learner is not shown
        fa, fb = reveal(a, shown_a, y1), reveal(b, shown_b, y2)
        assert fa.labels is None and fa.top_labels.shape == (k,)
        a.update(X, fa)
        b.update(X, fb)
        np.testing.assert_array_equal(a.w, b.w)


@pytest.mark.parametrize("use_kernels", [True, False])
def test_full_feedback_gives_rtopkf_the_same_steps_as_top_k(use_kernels):
    """Under ``feedback: full`` the learner gets every label (top_labels None) but its
    estimator still reads only the top k: the trajectory equals the top-k one."""
    rng = np.random.default_rng(5)
    for surrogate in SURROGATE_NAMES:
        a, b = fixed_learner(4, surrogate, seed=3), fixed_learner(4, surrogate, seed=3)
        a.use_kernels = b.use_kernels = use_kernels
        for _ in range(40):
            X = rng.normal(size=(int(rng.integers(1, 7)), 4))
            y = rng.integers(0, 5, X.shape[0]).astype(float)
            shown_a, shown_b = a.rank(X, np.random.default_rng(0)), b.rank(X, np.random.default_rng(0))
            full = reveal(a, shown_a, y, None)
            assert full.top_labels is None and full.labels is y
            a.update(X, full)
            b.update(X, reveal(b, shown_b, y))
        assert np.abs(a.w).sum() > 0
        np.testing.assert_array_equal(a.w, b.w)


class _Spy:
    """A learner that records what the protocol hands it."""

    feedback_k = 1
    numerics = "stable"

    def __init__(self):
        self.seen: list[Feedback] = []
        self.weights = np.zeros(2)

    def rank(self, X, rng):
        return np.arange(X.shape[0])[::-1]

    def update(self, X, feedback):
        from ltr_cli.learners.online.base import UpdateInfo

        self.seen.append(feedback)
        return UpdateInfo(mistake=False, updated=False)


def test_run_online_passes_partial_feedback_only():
    spy = _Spy()
    q = Query("1", np.zeros((4, 2)), np.array([0.0, 1.0, 2.0, 3.0]))
    result = run_online(iter([(1, q)]), spy, [Measure("ndcg@10")], np.random.default_rng(0), quiet=True)
    fb = spy.seen[0]
    assert fb.labels is None and fb.top_labels.tolist() == [3.0] and fb.ranking.tolist() == [3, 2, 1, 0]
    assert result.rounds["ndcg@10"].iloc[0] == 1.0  # metrics still use the full labels


@pytest.mark.parametrize("surrogate", ["kl", "smoothdcg"])
def test_extreme_features_never_overflow(surrogate):
    rng = np.random.default_rng(5)
    learner = fixed_learner(3, surrogate, eta=1.0, radius=1.0, epsilon=0.001)
    for _ in range(50):
        X = rng.normal(size=(6, 3)) * 1e6  # scores up to ~1e6: exp would overflow unguarded
        shown = learner.rank(X, rng)
        y = rng.integers(0, 5, 6).astype(float)
        learner.update(X, reveal(learner, shown, y))
        assert np.all(np.isfinite(learner.w)) and np.linalg.norm(learner.w) <= 1.0 + 1e-9


def test_paper_schedule_needs_a_horizon():
    from ltr_cli.errors import LtrError

    with pytest.raises(LtrError, match="horizon"):
        make_learner("rtopkf", 3, surrogate="kl", schedule="paper", horizon=None)
    learner = make_learner("rtopkf", 3, surrogate="kl", schedule="authors-code", eta_scale=0.1, gamma_scale=0.1)
    assert learner.rates(8) == pytest.approx((0.1 * 8 ** (-2 / 3), 0.1 / 2))


def _report(out: Path) -> dict[str, dict[str, str]]:
    res = runner.invoke(app, ["report", str(out), "--format", "csv"])
    assert res.exit_code == 0, res.stderr
    return {r["learner"]: r for r in csv.DictReader(io.StringIO(res.stdout))}


def _separated(rows, better, worse):
    """mean(better) - mean(worse) > 3 standard errors of the difference over seeds."""
    a, b = rows[better], rows[worse]
    n = int(a["seeds"])
    se = np.sqrt((float(a["last10_std"] or 0) ** 2 + float(b["last10_std"] or 0) ** 2) / n)
    return float(a["last10"]) - float(b["last10"]) > 3 * se


def test_topk_synthetic_config_orders_learners_like_the_paper(tmp_path):
    res = runner.invoke(app, ["run", str(REPO / "configs" / "topk_synthetic.yaml"), "--out", str(tmp_path), "-q"])
    assert res.exit_code == 0, res.stderr
    assert len(res.stdout.split()) == 6 * 5  # six learners x five seeds, each its own run
    rows = _report(tmp_path)
    assert rows["listnet"]["seeds"] == "5"
    for partial in ("rtopkf-ranksvm", "rtopkf-kl"):
        assert float(rows["listnet"]["last10"]) >= float(rows[partial]["last10"])
        assert _separated(rows, partial, "random")
    res = runner.invoke(app, ["plot", str(tmp_path / "topk_synthetic"), "--band", "std", "--out", str(tmp_path / "p")])
    assert res.exit_code == 0 and (tmp_path / "p" / "topk_synthetic_ndcg_at_10.png").is_file()


def test_yahoo_sample_ordering_over_five_seeds(tmp_path, yahoo_sample, write):
    learners = "\n".join(
        f"  rtopkf-{s}: {{type: rtopkf, surrogate: {s}, schedule: paper, radius: 0.1}}"
        for s in ("ranksvm", "kl"))
    cfg = write("y.yaml", f"""
experiment: yahoo_topk_sample
seeds: [0, 1, 2, 3, 4]
dataset: {{kind: files, files: [{yahoo_sample / 'rank.train'}], features: 700, qid: group}}
protocol: {{passes: 5, max_rounds: 1005}}
metrics: {{names: [ndcg@10], no_relevant: one, ties: reverse-input}}
learners:
  listnet: {{type: listnet, radius: 1.0, step: {{rule: inv-sqrt, eta: 0.1}}}}
{learners}
  random: {{type: random}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path), "-q"])
    assert res.exit_code == 0, res.stderr
    rows = _report(tmp_path)
    for partial in ("rtopkf-ranksvm", "rtopkf-kl"):
        assert float(rows["listnet"]["last10"]) >= float(rows[partial]["last10"])
        assert _separated(rows, partial, "random")


@pytest.mark.parametrize("surrogate", SURROGATE_NAMES)
def test_learner_steps_are_unbiased_through_rank_and_update(surrogate):
    """The learner's own rank -> reveal -> update path, from a fixed w at round 5 of the
    authors' decaying schedule: the mean step / eta_t equals X^T grad phi (so the exploit
    ranking and the gamma of the draw are what the estimator receives)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(5, 3))
    y = np.array([2.0, 0.0, 1.0, 3.0, 0.0])
    w0 = rng.normal(size=3)
    learner = make_learner("rtopkf", 3, rng=np.random.default_rng(12), surrogate=surrogate, schedule="authors-code",
                           eta_scale=1.0, gamma_scale=0.6, radius=None, epsilon=0.5,
                           **({"direction": "ascend-gain"} if surrogate == "smoothdcg" else {}))
    # SmoothDCG: the step on the loss -SmoothDCG
    eta5, gamma5 = learner.rates(5)
    assert 0 < gamma5 < 0.5
    n = 20000
    steps = np.empty((n, 3))
    tie_rng = np.random.default_rng(0)
    for i in range(n):
        learner.w, learner.t = w0.copy(), 4
        shown = learner.rank(X, tie_rng)
        learner.update(X, reveal(learner, shown, y))
        steps[i] = (w0 - learner.w) / eta5
    params = {"epsilon": 0.5} if surrogate == "smoothdcg" else {}
    exact = X.T @ SURROGATES[surrogate](X @ w0, y, **params)[1]
    se = steps.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(steps.mean(axis=0) - exact) <= 5 * se + 1e-12), (steps.mean(axis=0), exact, se)


def test_protocol_feedback_modes(tmp_path, write):
    base = """
experiment: fb
dataset: {kind: shaped, like: yahoo-set1, queries: 20}
learners:
"""
    cfg = write("a.yaml", base + "  l: {type: listnet}\n")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path), "--set", "protocol.feedback=top-1"])
    assert res.exit_code == 1 and "learns from all labels" in res.stderr
    cfg = write("b.yaml", base + "  r: {type: rtopkf, surrogate: ranksvm, schedule: authors-code}\n")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path), "--set", "protocol.feedback=top-1"])
    assert res.exit_code == 1 and "needs the top 2" in res.stderr
    for mode in ("full", "top-3", "auto"):
        res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / mode), "-q", "--set", f"protocol.feedback={mode}"])
        assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["run", str(cfg), "--set", "protocol.feedback=top"])
    assert res.exit_code == 1 and "protocol.feedback" in res.stderr


def test_paper_schedule_counts_the_stream_and_manifest_records_it(tmp_path, write, yahoo_sample):
    import json

    cfg = write("p.yaml", f"""
experiment: count
dataset: {{kind: files, files: [{yahoo_sample / 'rank.train'}], features: 700, qid: group}}
protocol: {{passes: 2}}
learners: {{kl: {{type: rtopkf, surrogate: kl}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path), "-q"])
    assert res.exit_code == 0, res.stderr
    manifest = json.loads((Path(res.stdout.strip()) / "manifest.json").read_text())
    settings = manifest["learner_conventions"]
    assert settings["horizon"] == 2 * 201 and settings["eta_scale"] == 1.0 and settings["feedback_k"] == 1


def test_report_keeps_other_settings_apart_and_refuses_duplicate_seeds(tmp_path):
    cfg = str(REPO / "configs" / "topk_synthetic.yaml")
    common = ["--out", str(tmp_path), "-q", "--learner", "rtopkf-kl", "--set", "dataset.queries=20",
              "--set", "protocol.passes=1"]
    assert runner.invoke(app, ["run", cfg, *common, "--set", "seeds=[0, 1]"]).exit_code == 0
    assert runner.invoke(app, ["run", cfg, *common, "--set", "seeds=[0, 1]",
                               "--set", "learners.rtopkf-kl.fidelity=authors-code"]).exit_code == 0
    rows = [r for r in csv.DictReader(io.StringIO(runner.invoke(app, ["report", str(tmp_path), "--format", "csv"]).stdout))]
    assert len(rows) == 2 and all(r["seeds"] == "2" for r in rows)
    # a single-seed run of the same settings duplicates seed 0
    assert runner.invoke(app, ["run", cfg, *common, "--set", "seeds=null", "--set", "seed=0"]).exit_code == 0
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 1 and "same settings and seed 0" in res.stderr


def test_authors_smoothdcg_goes_nan_on_the_yahoo_sample_and_is_marked(tmp_path, yahoo_sample, write):
    """RankingTopKF.m's SmoothDCG: unshifted exp(s / 0.001), descending the gain. On the real
    Yahoo sample its weights become NaN within a few rounds (REPRODUCTION-NOTES.md item 7);
    the run continues, ranking in reverse file order, and says so in the summary, on
    stderr and in the report."""
    cfg = write("t.yaml", f"""
experiment: topk_authors_smoothdcg
fidelity: authors-code
dataset: {{kind: files, files: [{yahoo_sample / 'rank.train'}], features: 700, qid: group}}
protocol: {{passes: 1, drop_last_query: true}}
metrics: {{names: [ndcg@10], no_relevant: one, ties: reverse-input}}
learners:
  rtopkf-smoothdcg: {{type: rtopkf, surrogate: smoothdcg, schedule: authors-code, radius: 1.0,
                     fidelity: authors-code, numerics: authors-code, epsilon: 0.001}}
  rtopkf-ranksvm: {{type: rtopkf, surrogate: ranksvm, schedule: authors-code, radius: 1.0,
                   fidelity: authors-code, numerics: authors-code}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.output
    assert "rtopkf-smoothdcg: weights became NaN" in res.stderr
    runs = {Path(p).name.rsplit("-", 1)[0]: Path(p) for p in res.stdout.split()}
    summary = json.loads((runs["rtopkf-smoothdcg"] / "summary.json").read_text())
    assert 1 <= summary["nonfinite_round"] <= 300
    assert json.loads((runs["rtopkf-ranksvm"] / "summary.json").read_text())["nonfinite_round"] is None
    model = json.loads((runs["rtopkf-smoothdcg"] / "models.json").read_text())["final"]
    assert all(v is None for v in model["w"])
    rows = _report(tmp_path / "out")
    notes = rows["rtopkf-smoothdcg"]["notes"]
    assert f"NaN weights from round {summary['nonfinite_round']}" in notes
    assert "descends DCG" in notes and "+0.008" in notes
    assert "+0.005" in rows["rtopkf-ranksvm"]["notes"]
    # the same learner with stable (shifted) numerics never leaves the reals
    stable = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out2"), "-q", "--learner",
                                 "rtopkf-smoothdcg", "--set", "learners.rtopkf-smoothdcg.numerics=stable"])
    assert stable.exit_code == 0, stable.output
    summary = json.loads((Path(stable.stdout.strip()) / "summary.json").read_text())
    assert summary["nonfinite_round"] is None


@pytest.mark.parametrize("config,dataset,path,passes,miss", [
    ("yahoo_topk", "yahoo-set1", "set1.train.txt", 10, 0.001),
    ("yahoo_topk_param1", "yahoo-set1", "set1.train.txt", 10, 1.0),
    ("yandex_topk", "yandex-imat2009", "imat2009_learning.txt", 20, 1000.0),
])
def test_the_three_topk_script_configs_run_on_shaped_files(tmp_path, config, dataset, path, passes, miss):
    from tests.test_perceptron_paper import _write_layout, run_config

    root = tmp_path / "data"
    _write_layout(root, dataset, [path], queries=6, docs=4)
    runs = run_config(REPO / "configs" / f"{config}.yaml", tmp_path / "out", f"dataset.root={root}")
    assert set(runs) == {"listnet", "rtopkf-ranksvm", "rtopkf-kl", "rtopkf-squared", "rtopkf-smoothdcg", "random"}
    summary = json.loads((runs["rtopkf-kl"] / "summary.json").read_text())
    assert summary["rounds"] == 5 * passes and summary["dropped_last_queries"] == passes
    conv = json.loads((runs["rtopkf-smoothdcg"] / "manifest.json").read_text())["learner_conventions"]
    assert conv["miss_scale"] == miss and conv["numerics"] == "authors-code"
    assert conv["short_lists"] == "skip" and conv["direction"] == "descend-gain"


def test_the_paper_text_topk_config_runs_on_shaped_files(tmp_path):
    """configs/yahoo_topk_paper.yaml: the text's fixed rates for T = 250,000 (the figure's
    x-axis), exact estimators, no list skipped, no query dropped."""
    from tests.test_perceptron_paper import _write_layout, run_config

    root = tmp_path / "data"
    _write_layout(root, "yahoo-set1", ["set1.train.txt"], queries=6, docs=4)
    runs = run_config(REPO / "configs" / "yahoo_topk_paper.yaml", tmp_path / "out", f"dataset.root={root}")
    assert set(runs) == {"listnet", "rtopkf-ranksvm", "rtopkf-kl", "rtopkf-squared", "rtopkf-smoothdcg", "random"}
    summary = json.loads((runs["rtopkf-kl"] / "summary.json").read_text())
    assert summary["rounds"] == 13 * 6 and "dropped_last_queries" not in summary
    for name in ("rtopkf-ranksvm", "rtopkf-kl", "rtopkf-squared", "rtopkf-smoothdcg"):
        manifest = json.loads((runs[name] / "manifest.json").read_text())
        conv = manifest["learner_conventions"]
        assert conv["schedule"] == "paper" and conv["horizon"] == 250_000
        assert conv["eta_scale"] == conv["gamma_scale"] == 1.0 and conv["projection_radius"] == 1.0
        assert conv["short_lists"] == "learn" and conv["numerics"] == "stable"
        assert conv["estimator"] == "exact sampling law (unbiased)"
        assert manifest["protocol"]["max_rounds"] == 250_000
    conv = json.loads((runs["rtopkf-smoothdcg"] / "manifest.json").read_text())["learner_conventions"]
    assert conv["epsilon"] == 0.01
    listnet = json.loads((runs["listnet"] / "manifest.json").read_text())["learner_conventions"]
    assert listnet["step"] == "0.002" and 250_000 ** -0.5 == 0.002  # a constant step T^(-1/2)


def _draws_round_by_round(learner, t0, sizes):
    """Reference of ``block_draws``: the draws ``rank`` makes, one round at a time."""
    n = sizes.shape[0]
    explore, gammas, etas = np.zeros(n, dtype=bool), np.zeros(n), np.zeros(n)
    starts, shown, pos = np.zeros(n + 1, dtype=np.int64), [], 0
    for r, m in enumerate(sizes.tolist()):
        eta, gamma = learner.rates(t0 + r + 1)
        etas[r] = eta
        if not (learner.skip_short and m < 2):
            gammas[r] = gamma
            if learner.rng.random() < gamma:
                explore[r] = True
                shown.append(learner.rng.permutation(m))
                pos += m
        starts[r + 1] = pos
    return explore, np.concatenate(shown) if shown else np.zeros(0, dtype=np.int64), starts, gammas, etas


@pytest.mark.parametrize("settings", [{"schedule": "authors-code", "gamma_scale": 0.2},
                                      {"schedule": "authors-code", "gamma_scale": 3.0, "short_lists": "skip"},
                                      {"schedule": "paper", "horizon": 50, "gamma_scale": 1.0}])
def test_block_draws_are_the_per_round_draws(settings):
    """Coins drawn many at a time, the generator wound back after each exploring coin: the
    same coins, permutations, gammas and etas, and the generator left where the per-round
    draws leave it (rare and frequent explorations, lists skipped as too short)."""
    sizes = np.random.default_rng(3).integers(1, 9, size=300)
    block, single = (make_learner("rtopkf", 4, rng=np.random.default_rng(11), surrogate="squared", eta_scale=0.1,
                                  **settings)
                     for _ in range(2))
    for t0 in (0, 300, 600):
        got, want = block.block_draws(t0, sizes), _draws_round_by_round(single, t0, sizes)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
        assert got[0].any() and not got[0].all()
    assert block.rng.random() == single.rng.random()
