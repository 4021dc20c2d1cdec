"""Click-model fitting (``ltr clicks fit``): PyClick's estimators on hand-checked grids, the
measures' definitions, and parameters recovered from logs our own simulators draw."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ltr_cli.clicklog.fit.em import PROB_MIN, measures, ratio
from ltr_cli.clicklog.fit.grid import build_grid, split
from ltr_cli.clicklog.fit.record import FIT_MODELS, fit_model
from ltr_cli.clicks.tables import table
from ltr_cli.errors import LtrError


def _grid(rows):
    """rows: (qid index, [doc...], [click...]) per session."""
    s, q, d, p, c = [], [], [], [], []
    for i, (query, docs, clicks) in enumerate(rows):
        for r, (doc, hit) in enumerate(zip(docs, clicks)):
            s.append(i), q.append(query), d.append(doc), p.append(r + 1), c.append(hit)
    return build_grid(np.array(s), np.array(q, np.int32), np.array(d, np.int32), np.array(p, np.int16),
                      np.array(c, bool), ["a", "b"])


def _pair(pairs, query, doc):
    return int(np.flatnonzero((pairs.query == query) & (pairs.doc == doc))[0])


def test_the_grid_pads_short_sessions_and_finds_the_last_click():
    grid, pairs = _grid([(0, [2, 0, 1], [0, 1, 0]), (1, [0], [0]), (0, [1, 2], [1, 1])])
    assert grid.pair.shape == (3, 3) and grid.length.tolist() == [3, 1, 2]
    assert grid.valid.tolist() == [[True] * 3, [True, False, False], [True, True, False]]
    assert grid.last.tolist() == [1, 1, 1] and grid.first.tolist() == [1, 1, 0]  # no click: its length
    assert pairs.size == 4


def test_the_split_is_seeded_and_by_session():
    grid, _ = _grid([(0, [0, 1], [i % 2, 0]) for i in range(40)])
    a, held = split(grid, 0.25, 3)
    b, again = split(grid, 0.25, 3)
    assert held is not None and again is not None and held.sessions == 10 and a.sessions == 30
    assert np.array_equal(a.click, b.click) and np.array_equal(held.click, again.click)
    assert split(grid, 0.0, 3)[1] is None
    with pytest.raises(LtrError, match="--heldout"):
        split(grid, 1.0, 0)


def test_sdbn_and_dcm_are_the_counts_of_the_closed_form():
    rows = [(0, [0, 1, 2], [1, 0, 1]), (0, [1, 0, 2], [0, 0, 0]), (0, [2, 1, 0], [0, 1, 0])]
    grid, pairs = _grid(rows)
    sdbn = fit_model("sdbn").fit(grid, pairs)
    # doc 0: examined (up to the last click, all of a session without clicks) in sessions 1 and 2,
    # not in 3 (below its last click); clicked once
    assert sdbn["attr"][_pair(pairs, 0, 0)] == pytest.approx((1 + 1) / (2 + 2))
    # doc 2: examined in sessions 1 (clicked, last), 2 (no clicks) and 3 (rank 1, before the click)
    assert sdbn["attr"][_pair(pairs, 0, 2)] == pytest.approx((1 + 1) / (2 + 3))
    assert sdbn["sat"][_pair(pairs, 0, 2)] == pytest.approx((1 + 1) / (2 + 1))
    assert sdbn["sat"][_pair(pairs, 0, 0)] == pytest.approx((1 + 0) / (2 + 1))  # clicked, not the last
    dcm = fit_model("dcm").fit(grid, pairs)
    assert dcm["cont"].tolist() == pytest.approx([(1 + 1) / (2 + 1), (1 + 0) / (2 + 1), (1 + 0) / (2 + 1)])


def test_one_pbm_em_step_by_hand():
    grid, pairs = _grid([(0, [0, 1], [1, 0]), (0, [1, 0], [0, 0])])
    model = fit_model("pbm")
    p = model.step(model.start(grid, pairs), grid)
    # from 1/2 everywhere: an unclicked position adds (1 - 1/2) 1/2 / (1 - 1/4) = 1/3
    third = 1.0 / 3.0
    assert p["attr"][_pair(pairs, 0, 0)] == pytest.approx((1 + 1 + third) / (2 + 2))
    assert p["attr"][_pair(pairs, 0, 1)] == pytest.approx((1 + 2 * third) / (2 + 2))
    assert p["exam"].tolist() == pytest.approx([(1 + 1 + third) / 4, (1 + 2 * third) / 4])


def test_em_parameters_are_capped_below_one_and_closed_forms_are_not():
    index = np.zeros(3, np.int64)
    mask = np.ones(3, bool)
    assert ratio(index, np.full(3, 2.0), np.ones(3), mask, 1, True)[0] == 1 - PROB_MIN
    assert ratio(index, np.full(3, 2.0), np.ones(3), mask, 1, False)[0] == pytest.approx(7 / 5)
    assert ratio(index, np.ones(3), np.ones(3), ~mask, 2, True).tolist() == [0.5, 0.5]  # nothing counted: 1/2


def test_the_measures_are_pyclicks_definitions():
    grid, pairs = _grid([(0, [0, 1], [1, 0]), (0, [1, 0], [0, 1])])
    model = fit_model("pbm")
    params = {"attr": np.array([0.8, 0.4]), "exam": np.array([0.9, 0.5])}
    m = measures(model, params, grid)
    # P(click) = attr x exam: session 1: 0.72 clicked, 0.2 not; session 2: 0.36 not, 0.4 clicked
    ll = ((math.log(0.72) + math.log(0.8)) / 2 + (math.log(0.64) + math.log(0.4)) / 2) / 2
    assert m["log_likelihood"] == pytest.approx(ll)
    ppl = [2 ** (-(math.log2(0.72) + math.log2(0.64)) / 2), 2 ** (-(math.log2(0.8) + math.log2(0.4)) / 2)]
    assert m["perplexity_per_rank"] == pytest.approx(ppl) and m["perplexity"] == pytest.approx(sum(ppl) / 2)


def test_ubm_full_click_probability_sums_the_law():
    """UBM's P(C_r = 1), PyClick's sum over the last click above, equals the law enumerated."""
    rng = np.random.default_rng(0)
    grid, pairs = _grid([(0, [0, 1, 2], [0, 0, 0])])
    model = fit_model("ubm")
    params = {"attr": rng.uniform(0.1, 0.9, pairs.size), "exam": rng.uniform(0.1, 0.9, (3, 4))}
    a = params["attr"][grid.pair[0]]
    want = np.zeros(3)
    for pattern in range(8):
        clicks = [(pattern >> (2 - r)) & 1 for r in range(3)]
        prob, last = 1.0, 3
        for r, c in enumerate(clicks):
            p = a[r] * params["exam"][r, last]
            prob *= p if c else 1 - p
            last = r if c else last
        want += prob * np.array(clicks)
    assert model.full(params, grid)[0] == pytest.approx(want)


def test_the_chain_models_full_click_probability_is_a_walk():
    grid, pairs = _grid([(0, [0, 1, 2], [0, 0, 0])])
    attr, sat, gamma = np.array([0.7, 0.3, 0.5]), np.array([0.6, 0.2, 0.9]), 0.8
    full = fit_model("dbn").full({"attr": attr, "sat": sat, "cont": np.array([gamma])}, grid)[0]
    reach = [1.0, gamma * (1 - 0.7 * 0.6), gamma * (1 - 0.7 * 0.6) * gamma * (1 - 0.3 * 0.2)]
    assert full == pytest.approx(attr * reach)


# --- through the command line: recovery from simulated logs ------------------------------------

def _data(path, queries=4, docs=6, seed=0):
    rng = np.random.default_rng(seed)
    lines = [f"{g} qid:{q + 1} 1:{rng.random():.3f}" for q in range(queries)
             for g in rng.permutation([0, 1, 2, 3, 4, 4][:docs])]
    path.write_text("\n".join(lines) + "\n")
    return path


def _labels(path):
    out: dict[tuple[str, int], int] = {}
    seen: dict[str, int] = {}
    for line in path.read_text().splitlines():
        qid = line.split()[1].split(":")[1]
        out[(qid, seen.get(qid, 0))] = int(line.split()[0])
        seen[qid] = seen.get(qid, 0) + 1
    return out


def _ltr(*args):
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    return CliRunner().invoke(app, [str(a) for a in args])


def _simulate_and_fit(tmp_path, sim, fit, sessions, *extra, fit_args=()):
    data = _data(tmp_path / "train.txt")
    log = tmp_path / "log.parquet"
    out = _ltr("clicks", "simulate-log", data, "--out", log, "--model", sim, "--sessions", sessions, "--policy",
               "shuffle", "--shown", "6", "--seed", "5", *extra)
    assert out.exit_code == 0, out.output
    res = _ltr("clicks", "fit", log, "--model", fit, "--json", "--heldout", "0.2", "--seed", "1", *fit_args)
    assert res.exit_code == 0, res.output
    return json.loads(res.output), _labels(data)


def test_pbm_recovers_the_examination_and_attractiveness(tmp_path):
    rec, labels = _simulate_and_fit(tmp_path, "pbm", "pbm", 20000)
    exam = np.array(rec["parameters"]["examination"])
    # PBM is identified up to a scale: examination relative to rank 1 is (1/i)^eta
    assert exam / exam[0] == pytest.approx(1.0 / np.arange(1, 7), abs=0.04)
    click = table("perfect", 5).click
    for row in rec["parameters"]["attractiveness"]:
        assert row["value"] * exam[0] == pytest.approx(click[labels[(row["qid"], row["doc"])]], abs=0.05)
    held = rec["heldout_measures"]
    assert held["sessions"] == 4000 and rec["perplexity"] == held["perplexity"]
    assert 1.0 < held["perplexity"] < 2.0 and len(held["perplexity_per_rank"]) == 6


def test_sdbn_recovers_attractiveness_and_satisfaction(tmp_path):
    rec, labels = _simulate_and_fit(tmp_path, "sdbn", "sdbn", 20000)
    t = table("navigational", 5)
    for key, column in (("attractiveness", t.click), ("satisfaction", t.stop)):
        for row in rec["parameters"][key]:
            grade = labels[(row["qid"], row["doc"])]
            if key == "satisfaction" and grade < 2:
                continue  # clicked too rarely (P(click) 0.05, 0.3) for a close estimate
            assert row["value"] == pytest.approx(column[grade], abs=0.06), (key, row)


def test_dbn_em_recovers_its_continuation(tmp_path):
    rec, _ = _simulate_and_fit(tmp_path, "dbn", "dbn", 8000, fit_args=("--iterations", "30"))
    assert rec["fitting"] == "EM, 30 iterations"
    assert rec["parameters"]["continuation"] == pytest.approx(0.9, abs=0.05)


def test_cascade_recovers_attractiveness(tmp_path):
    rec, labels = _simulate_and_fit(tmp_path, "{click: [0.1, 0.3, 0.5, 0.7, 0.9], stop: [1, 1, 1, 1, 1]}",
                                    "cascade", 20000)
    click = [0.1, 0.3, 0.5, 0.7, 0.9]
    for row in rec["parameters"]["attractiveness"]:
        assert row["value"] == pytest.approx(click[labels[(row["qid"], row["doc"])]], abs=0.06)


def test_every_model_fits_and_prints(tmp_path):
    data = _data(tmp_path / "train.txt")
    log = tmp_path / "log.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", log, "--model", "dbn", "--sessions", "300",
                "--shown", "6").exit_code == 0
    for name in FIT_MODELS:
        res = _ltr("clicks", "fit", log, "--model", name, "--iterations", "3")
        assert res.exit_code == 0, res.output
        assert "heldout:" in res.output and "perplexity" in res.output


def test_fit_refuses_bad_input(tmp_path):
    data = _data(tmp_path / "train.txt")
    log = tmp_path / "log.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", log, "--model", "pbm", "--sessions", "50").exit_code == 0
    for args, words in ((["--model", "nope"], "the click models to fit are"),
                        (["--model", "pbm", "--heldout", "1.5"], "--heldout 1.5"),
                        (["--model", "pbm", "--iterations", "100000"], "--iterations 100000")):
        res = _ltr("clicks", "fit", log, *args)
        assert res.exit_code == 1 and words in res.output and "Traceback" not in res.output, res.output
    res = _ltr("clicks", "fit", data, "--model", "pbm")
    assert res.exit_code == 1 and "Parquet" in res.output


def test_dcm_recovers_attractiveness_and_the_top_continuations(tmp_path):
    """DCM's closed form takes a session's last click as its end: right for the
    attractiveness, and for the continuation near the top; lower down a click is the last
    one more often because the list ends, so lambda is underestimated there (0 at the last
    rank, whose click is always the last)."""
    rec, labels = _simulate_and_fit(tmp_path, "dcm", "dcm", 20000)
    click = table("perfect", 5).click
    for row in rec["parameters"]["attractiveness"]:
        assert row["value"] == pytest.approx(click[labels[(row["qid"], row["doc"])]], abs=0.06)
    cont = rec["parameters"]["continuation"]
    assert cont[:3] == pytest.approx([1 / 2, 2 / 3, 3 / 4], abs=0.05)
    assert cont[-1] < 0.01


def test_bootstrap_intervals_cover_the_simulated_parameters(tmp_path):
    """SDBN's closed form on 6,000 shuffled sessions: the 95% intervals of 200 resamples
    hold the true attractiveness of most pairs (not all: 95% each, and the prior's pull)."""
    rec, labels = _simulate_and_fit(tmp_path, "sdbn", "sdbn", 6000, fit_args=("--bootstrap", "200"))
    t = table("navigational", 5)
    bounds = rec["intervals"]["parameters"]["attractiveness"]
    assert rec["intervals"]["draws"] == 200 and len(bounds) == len(rec["parameters"]["attractiveness"])
    inside = []
    for row, b in zip(rec["parameters"]["attractiveness"], bounds):
        assert (b["qid"], b["doc"]) == (row["qid"], row["doc"])
        lo, hi = b["value"]
        assert lo <= row["value"] <= hi
        inside.append(lo <= t.click[labels[(row["qid"], row["doc"])]] <= hi)
    assert 0.8 <= np.mean(inside) <= 1.0, np.mean(inside)
    # narrower with more sessions: the interval shrinks about as 1/sqrt(sessions)
    wide = np.mean([b["value"][1] - b["value"][0] for b in bounds])
    (tmp_path / "more").mkdir()
    more, _ = _simulate_and_fit(tmp_path / "more", "sdbn", "sdbn", 24000, fit_args=("--bootstrap", "50"))
    narrow = np.mean([b["value"][1] - b["value"][0] for b in more["intervals"]["parameters"]["attractiveness"]])
    assert 0.35 < narrow / wide < 0.7


def test_bootstrap_intervals_of_dcm_continuation_and_the_text(tmp_path):
    rec, _ = _simulate_and_fit(tmp_path, "dcm", "dcm", 8000, fit_args=("--bootstrap", "60"))
    bounds = rec["intervals"]["parameters"]["continuation"]
    for true, (lo, hi) in zip([1 / 2, 2 / 3], bounds[:2]):
        assert lo <= true <= hi
    log = tmp_path / "log.parquet"
    text = _ltr("clicks", "fit", log, "--model", "dcm", "--bootstrap", "5")
    assert text.exit_code == 0 and "continuation by rank: " in text.output and "[" in text.output
    assert "95% percentile bootstrap over 5 resamples" in text.output
    bad = _ltr("clicks", "fit", log, "--model", "dcm", "--bootstrap", "1")
    assert bad.exit_code == 1 and "--bootstrap 1: give 2 to" in bad.output
