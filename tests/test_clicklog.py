"""Click logs: logging policies, seeded simulation, the Parquet log and its checks,
propensity estimation by result randomisation and by EM, and the unbiasedness of IPS."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr_cli.clicklog.ips import query_mean, session_estimates
from ltr_cli.clicklog.logfile import read_log, write_log
from ltr_cli.clicklog.policies import shown_lists
from ltr_cli.clicklog.propensity import counts, em_fit, estimate, randomisation
from ltr_cli.clicklog.simulate import simulate
from ltr_cli.clicks.spec import build_model
from ltr_cli.clicks.trust import table_examination
from ltr_cli.errors import LtrError

ULTRA_RELATIVE = [1, 0.897, 0.706, 0.500, 0.412, 0.294, 0.162, 0.147, 0.118, 0.088]


def _queries(count: int, docs: int, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    labels = [rng.integers(0, 5, docs) for _ in range(count)]
    return labels, [np.argsort(-lab, kind="stable") for lab in labels]


def _write(path, policy="shuffle", seed=1, sessions=2000, model="ultra-pbm", per_query=False, eta=None):
    labels, rankings = _queries(30, 12)
    built = build_model(model, eta=eta)
    s = simulate(labels, rankings, built, policy, 10, sessions, seed, per_query)
    write_log(path, s, [f"q{i}" for i in range(30)],
              {"policy": policy, "model": built.describe(), "seed": seed, "sessions": sessions})
    return s


def test_the_policies_show_the_top_k_as_they_say():
    rng = np.random.default_rng(0)
    ranking = np.array([5, 3, 0, 1, 4, 2])
    assert (shown_lists("ranking", ranking, 4, 3, rng) == [5, 3, 0, 1]).all()
    shuffled = shown_lists("shuffle", ranking, 4, 2000, rng)
    assert (np.sort(shuffled, axis=1) == [0, 1, 3, 5]).all()
    # each document at each position about equally often
    freq = np.array([[np.mean(shuffled[:, k] == d) for k in range(4)] for d in (5, 3, 0, 1)])
    assert np.all(np.abs(freq - 0.25) < 0.05)
    swapped = shown_lists("swap", ranking, 4, 2000, rng)
    for row in swapped:
        k = int(np.flatnonzero(row == 5)[0])
        want = [5, 3, 0, 1]
        want[0], want[k] = want[k], want[0]
        assert row.tolist() == want
    assert {int(np.flatnonzero(r == 5)[0]) for r in swapped} == {0, 1, 2, 3}
    assert shown_lists("shuffle", np.array([1, 0]), 10, 3, rng).shape == (3, 2)


def test_sessions_follow_the_click_model():
    """Under the ranking policy, clicks per position lie within 6 binomial deviations of
    the model's marginals, for a cascade and for trust bias."""
    labels, rankings = _queries(1, 8, seed=3)
    for name in ("navigational", "trust-bias"):
        built = build_model(name)
        s = simulate(labels, rankings, built, "ranking", 6, 50_000, 7)
        clicks = s.click.reshape(-1, 6).sum(axis=0)
        want = 50_000 * built.marginal(labels[0][rankings[0][:6]])
        assert np.all(np.abs(clicks - want) <= 6 * np.sqrt(want * (1 - want / 50_000)) + 1e-9), name
    per = simulate(labels * 3, rankings * 3, built, "swap", 4, 10, 0, per_query=True)
    assert np.bincount(per.query).tolist() == [40, 40, 40] and per.session.max() == 29


def test_the_same_inputs_give_the_same_file(tmp_path):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        _write(tmp_path / f"{name}.parquet", seed=seed)
    a, b, c = ((tmp_path / f"{n}.parquet").read_bytes() for n in "abc")
    assert a == b != c
    log = read_log(tmp_path / "a.parquet")
    assert log.meta["seed"] == 1 and log.meta["policy"] == "shuffle" and log.meta["model"]["model"] == "ultra-pbm"
    assert len(log.meta["fingerprint"]) == 64
    assert log.qids[:2] == ["q0", "q1"] and log.position.min() == 1 and log.position.max() == 10


def _rewrite(path, out, change):
    table = pq.read_table(path)
    pq.write_table(change(table).replace_schema_metadata(table.schema.metadata), out)


@pytest.mark.parametrize("change, message", [
    (lambda t: t.drop_columns(["click"]), "column 'click' is missing"),
    (lambda t: t.set_column(4, "click", pa.array(np.zeros(t.num_rows, np.int8))), "column 'click' has type int8"),
    (lambda t: t.set_column(3, "position", pa.array(np.zeros(t.num_rows, np.int16))), "column 'position' holds 0"),
    (lambda t: t.set_column(4, "click", pa.array(np.ones(t.num_rows, bool))), "fingerprint"),
])
def test_a_bad_log_is_refused_in_one_line(tmp_path, change, message):
    _write(tmp_path / "log.parquet", sessions=50)
    _rewrite(tmp_path / "log.parquet", tmp_path / "bad.parquet", change)
    with pytest.raises(LtrError, match=message) as err:
        read_log(tmp_path / "bad.parquet")
    assert str(tmp_path / "bad.parquet") in str(err.value) and "\n" not in str(err.value)


def _rewritten(tmp_path, meta_change=None, rows_change=None):
    """The 50-session log with its metadata and rows changed as a sender could, the
    fingerprint recomputed (its algorithm is public)."""
    import json

    from ltr_cli.clicklog.logfile import KEY, fingerprint

    _write(tmp_path / "log.parquet", sessions=50)
    log = read_log(tmp_path / "log.parquet")
    arrays = {"session": log.session.copy(), "query": log.query.copy(), "doc": log.doc.copy(),
              "position": log.position.copy(), "click": log.click.copy()}
    if rows_change is not None:
        rows_change(arrays)
    meta = dict(log.meta)
    if meta_change is not None:
        meta_change(meta)
    meta["fingerprint"] = fingerprint(arrays["session"], arrays["query"], log.qids, arrays["doc"],
                                      arrays["position"], arrays["click"], str(log.meta["policy"]))
    n = len(arrays["session"])
    table = pa.table({
        "session": pa.array(arrays["session"], pa.int64()),
        "qid": pa.DictionaryArray.from_arrays(pa.array(arrays["query"], pa.int32()), pa.array(log.qids)),
        "doc": pa.array(arrays["doc"], pa.int32()), "position": pa.array(arrays["position"], pa.int16()),
        "click": pa.array(arrays["click"], pa.bool_()),
        "policy": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([log.meta["policy"]]))})
    raw = json.dumps(meta).encode() if not isinstance(meta.get("RAW"), str) else meta["RAW"].encode()
    pq.write_table(table.replace_schema_metadata({KEY: raw}), tmp_path / "bad.parquet")
    return tmp_path / "bad.parquet"


def _set(key, value):
    return lambda meta: meta.update({key: value})


def _span(a):  # session 0's last row shows another query's first document
    last = int(np.flatnonzero(a["session"] == 0)[-1])
    a["query"][last], a["doc"][last] = (a["query"][last] + 1) % 30, 0


def _repeat(a):  # session 0 shows its first document twice
    a["doc"][1] = a["doc"][0]


def _swap_sessions(a):
    a["session"][:10], a["session"][10:20] = 1, 0


def _gap(a):
    a["position"][3] = 7


@pytest.mark.parametrize("meta_change, rows_change, message", [
    (_set("shown", "10"), None, "metadata field 'shown' is '10'"),
    (_set("shown", 10.0), None, "metadata field 'shown' is 10.0"),
    (_set("shown", [10]), None, "metadata field 'shown' is [10]"),
    (_set("shown", 10 ** 9), None, "metadata field 'shown' is 1000000000"),
    (_set("shown", 5), None, "the log's metadata shows 5 documents"),
    (_set("seed", -1), None, "metadata field 'seed'"),
    (_set("sessions", True), None, "metadata field 'sessions'"),
    (_set("per_query", "no"), None, "metadata field 'per_query'"),
    (_set("policy", "other"), None, "metadata field 'policy'"),
    (_set("model", "pbm"), None, "metadata field 'model'"),
    (_set("model", {"model": "pbm", "kind": "pbm", "click": [[0.5]]}), None, "metadata field 'model.click'"),
    (_set("model", {"model": "pbm", "kind": "pbm", "eta": float("nan")}), None, "metadata field 'model.eta'"),
    (_set("RAW", '{"format": 1, "a": ' + "[" * 100_000 + "]" * 100_000 + "}"), None, "no click-log metadata"),
    (None, _span, "row 10: column 'qid' differs from the row before in session 0"),
    (None, _repeat, "row 2: column 'doc' holds document"),
    (None, _swap_sessions, "row 11: column 'session' holds 0 after 1"),
    (None, _gap, "row 4: column 'position' holds 7"),
])
def test_every_logged_field_is_checked_on_read(tmp_path, meta_change, rows_change, message):
    """A string, float, list or huge ``shown``, other fields of the wrong type, a session
    spanning two queries, a repeated document: each one line naming the file and the field
    or row (once tracebacks, or accepted, in the batch learners)."""
    bad = _rewritten(tmp_path, meta_change, rows_change)
    with pytest.raises(LtrError) as err:
        read_log(bad)
    assert message in str(err.value) and str(bad) in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_files_that_are_no_click_log_are_refused(tmp_path):
    (tmp_path / "text.parquet").write_text("qid,doc\n")
    pq.write_table(pa.table({"qid": ["a"]}), tmp_path / "plain.parquet")
    for name, message in (("text.parquet", "not a readable Parquet"), ("plain.parquet", "no click-log metadata"),
                          ("none.parquet", "no such click log")):
        with pytest.raises(LtrError, match=message):
            read_log(tmp_path / name)


@pytest.mark.parametrize("policy", ["shuffle", "swap"])
@pytest.mark.parametrize("method", ["randomisation", "em"])
def test_the_estimators_recover_ultras_relative_propensities(tmp_path, policy, method):
    """On 60,000 sessions, each relative propensity lies within 4 of its standard errors of
    table / 0.68 (eta 1), and the standard errors are small but not zero."""
    _write(tmp_path / "log.parquet", policy=policy, sessions=60_000)
    log = read_log(tmp_path / "log.parquet")
    rec = estimate(log.session, log.query, log.doc, log.position, log.click, method)
    got, se = np.asarray(rec["propensity"]), np.asarray(rec["stderr"])
    want = table_examination(10, 1.0) / 0.68
    assert np.allclose(want, ULTRA_RELATIVE, atol=5e-4) and got[0] == 1
    assert np.all(np.abs(got - want)[1:] <= 4 * se[1:]), (got, se)
    assert np.all((se[1:] > 1e-4) & (se[1:] < 0.03)) and rec["converged"]


@pytest.mark.parametrize("method", ["randomisation", "em"])
@pytest.mark.parametrize("sessions", [6, 10, 40])
def test_a_standard_error_is_never_zero_on_a_small_log(tmp_path, method, sessions):
    """On a log of a few sessions the bootstrap over sessions either gives an error above 0
    or none, with a note naming the position; never 0 (once 1.000 +- 0 at position 2, the
    truth 0.897). The same seed gives the same errors."""
    labels, rankings = _queries(3, 5)
    s = simulate(labels, rankings, build_model("ultra-pbm"), "shuffle", 3, sessions, 0)
    rec = estimate(s.session, s.query, s.doc, s.position, s.click, method, seed=3)
    assert rec["stderr"][0] == 0.0 and rec["propensity"][0] == 1.0
    for k, (p, se) in enumerate(zip(rec["propensity"][1:], rec["stderr"][1:]), start=2):
        assert se is None or se > 0, (k, p, se)
        if p is not None and se is None:
            assert any(f" {k}" in note and "too few" in note for note in rec["notes"]), rec["notes"]
    assert estimate(s.session, s.query, s.doc, s.position, s.click, method, seed=3) == rec
    assert "bootstrap over sessions" in rec["uncertainty"] and rec["sessions"] == sessions


def test_randomisation_needs_memory_of_the_log_not_of_pairs_times_positions():
    """1000 documents shown of 1000-document queries: 20,000 pairs x 1000 positions would be
    160 MB a table; the estimate is computed on the groups, in a few MB."""
    import tracemalloc

    labels, rankings = _queries(20, 1000)
    s = simulate(labels, rankings, build_model("pbm"), "shuffle", 1000, 200, 0)
    cnt = counts(s.query, s.doc, s.position, s.click)
    tracemalloc.start()
    try:
        ratio = randomisation(cnt)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 30 * 2 ** 20, peak
    assert ratio.shape == (1000,) and ratio[0] == 1.0 and np.isfinite(ratio).sum() > 5


def test_a_click_log_that_decodes_to_gigabytes_is_refused_from_its_metadata(tmp_path):
    """20 million equal rows, dictionary- and run-length-encoded in a few hundred KB: refused
    in one line from the row counts of the metadata, before a page is decoded (once read
    whole), its peak memory measured in a process of its own."""
    import json
    import subprocess
    import sys

    from ltr_cli.clicklog.logfile import KEY

    chunk = 5_000_000
    part = pa.table({"session": pa.array(np.zeros(chunk, np.int64)),
                     "qid": pa.DictionaryArray.from_arrays(pa.array(np.zeros(chunk, np.int32)), pa.array(["q"])),
                     "doc": pa.array(np.zeros(chunk, np.int32)), "position": pa.array(np.ones(chunk, np.int16)),
                     "click": pa.array(np.zeros(chunk, bool)),
                     "policy": pa.DictionaryArray.from_arrays(pa.array(np.zeros(chunk, np.int32)), pa.array(["shuffle"]))})
    meta = {"format": 1, "policy": "shuffle", "fingerprint": "0" * 64}
    part = part.replace_schema_metadata({KEY: json.dumps(meta).encode()})
    bomb = tmp_path / "bomb.parquet"
    with pq.ParquetWriter(bomb, part.schema) as writer:
        for _ in range(4):
            writer.write_table(part)
    del part
    assert bomb.stat().st_size < 2 ** 20
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(r.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "sys.stdout.write(r.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "ltr_cli", "clicks", "propensity",
                          str(bomb)], capture_output=True, text=True, check=True).stdout.splitlines()
    status, peak_kb, errors = int(out[0]), int(out[1]), out[2:]
    assert status == 1 and len(errors) == 1, out
    assert errors[0].startswith(f"ltr: error: {bomb}: the click log decodes to ") and "bomb" in errors[0]
    assert peak_kb < 400 * 1024, peak_kb


def test_em_runs_to_a_fixed_point():
    """Plain EM creeps along a ridge (and towards g = 1 for documents always clicked once
    seen): on this swap log thousands of steps leave it moving. The fit stops only where
    one more EM step moves no parameter by 1e-9."""
    rng = np.random.default_rng(0)
    labels = [rng.choice(5, 12, p=[0.5, 0.3, 0.15, 0.04, 0.01]) for _ in range(30)]
    s = simulate(labels, [np.arange(12)] * 30, build_model("ultra-pbm"), "swap", 10, 50_000, 4)
    cnt = counts(s.query, s.doc, s.position, s.click)
    p, g, converged = em_fit(cnt)
    p2, g2, _ = em_fit(cnt, iterations=1, start=(p, g))
    assert converged and np.max(np.abs(p2 - p)) < 1e-9 and np.max(np.abs(g2 - g)) < 1e-9


def test_other_etas_give_the_table_to_the_power_eta(tmp_path):
    _write(tmp_path / "log.parquet", sessions=60_000, eta=2.0)
    log = read_log(tmp_path / "log.parquet")
    rec = estimate(log.session, log.query, log.doc, log.position, log.click, "randomisation")
    want = (np.asarray(ULTRA_RELATIVE) * 0.68) ** 2 / 0.68 ** 2
    assert np.all(np.abs(np.asarray(rec["propensity"]) - want)[1:] <= 4 * np.asarray(rec["stderr"])[1:])


def test_ips_is_unbiased_and_naive_clicks_are_not():
    """A fixed ranker's DCG@10 (gain: P(click | examined, grade)) under PBM clicks with eta 1,
    logged by a fixed ranking: the IPS mean is within 3 standard errors of the exact value;
    the naive mean is not."""
    labels, logging = _queries(20, 10, seed=5)
    built = build_model("ultra-pbm")
    s = simulate(labels, logging, built, "ranking", 10, 4000, 9, per_query=True)
    rng = np.random.default_rng(2)
    ranker = [rng.permutation(10) for _ in labels]  # ranker[q] is an order of the documents
    ranks = [np.argsort(order) + 1 for order in ranker]
    exam = table_examination(10, 1.0)
    owner, ips, naive = session_estimates(s.session, s.query, s.doc, s.position, s.click, ranks, exam)
    ips_mean, ips_se = query_mean(owner, ips, 20)
    naive_mean, _ = query_mean(owner, naive, 20)
    # the exact value, from the model's law: P(click at k) / p_k is the gain of the document there
    truth = np.mean([
        sum(built.marginal(lab[order])[k] / exam[k] / math.log2(1 + rank[order[k]]) for k in range(10))
        for lab, order, rank in zip(labels, logging, ranks)])
    assert abs(ips_mean - truth) <= 3 * ips_se
    assert abs(naive_mean - truth) > 3 * ips_se and ips_se > 0


# --- the commands -----------------------------------------------------------------------------

def _data(path, queries=12, docs=10, seed=4):
    rng = np.random.default_rng(seed)
    lines = [f"{int(rng.integers(0, 3))} qid:{q + 1} 1:{rng.random():.3f} 2:{rng.random():.3f}"
             for q in range(queries) for _ in range(docs)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _ltr(*args):
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    return CliRunner().invoke(app, [str(a) for a in args])


def test_simulate_log_then_propensity(tmp_path):
    data = _data(tmp_path / "train.txt")
    args = ["clicks", "simulate-log", data, "--model", "ultra-pbm", "--sessions", "30000", "--policy", "swap",
            "--seed", "3"]
    first = _ltr(*args, "--out", tmp_path / "a.parquet")
    again = _ltr(*args, "--out", tmp_path / "b.parquet")
    assert first.exit_code == 0 and again.exit_code == 0, first.output
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    log = read_log(tmp_path / "a.parquet")
    assert log.meta["model"]["grades"] == 3 and log.meta["shown"] == 10 and log.qids[0] == "1"
    res = _ltr("clicks", "propensity", tmp_path / "a.parquet", "--json")
    assert res.exit_code == 0, res.output
    import json

    rec = json.loads(res.stdout)
    got, se = np.asarray(rec["propensity"]), np.asarray(rec["stderr"])
    assert rec["fingerprint"] == log.meta["fingerprint"] and rec["policy"] == "swap" and se[0] == 0
    assert np.all(np.abs(got - ULTRA_RELATIVE)[1:] <= 4 * se[1:] + 5e-4)
    text = _ltr("clicks", "propensity", tmp_path / "a.parquet", "--method", "em")
    assert text.exit_code == 0 and "bootstrap" in text.stdout and len(text.stdout.splitlines()) == 13


@pytest.mark.parametrize("args, message", [
    (["propensity", "{tmp}/none.parquet"], "none.parquet: no such click log"),
    (["propensity", "{tmp}/train.txt"], "train.txt: not a readable Parquet"),
    (["propensity", "{tmp}/log.parquet", "--method", "ols"], "--method 'ols'"),
    (["propensity", "{tmp}/fixed.parquet"], "fixed.parquet: no document was shown at more than one position"),
    (["simulate-log", "{tmp}/train.txt", "--out", "{tmp}/x.parquet", "--model", "pbm", "--sessions", "5",
      "--policy", "random"], "--policy 'random'"),
    (["simulate-log", "{tmp}/train.txt", "--out", "{tmp}/x.parquet", "--model", "pbm", "--sessions", "5",
      "--grades", "2"], "label 2 is outside the 2-grade click table"),
    (["simulate-log", "{tmp}/train.txt", "--out", "{tmp}/no/x.parquet", "--model", "pbm", "--sessions", "5"],
     "x.parquet"),
])
def test_the_commands_refuse_bad_input_in_one_line(tmp_path, args, message):
    _data(tmp_path / "train.txt")
    _write(tmp_path / "log.parquet", sessions=20)
    _write(tmp_path / "fixed.parquet", policy="ranking", sessions=20)
    res = _ltr("clicks", *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert res.exit_code == 1 and message in res.stderr, res.output
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert not (tmp_path / "x.parquet").exists() and not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("command", ["simulate-log", "propensity"])
def test_the_commands_help_is_plain_text(command):
    res = _ltr("clicks", command, "--help")
    assert res.exit_code == 0 and "Usage: " in res.stdout
    assert "<bool>" not in res.stdout and "``" not in res.stdout


def test_a_saved_model_can_be_the_logging_ranking(tmp_path):
    """With --run, each session's shown list is the model's top documents: under the ranking
    policy, position 1 always holds the document the model scores highest."""
    import json

    from tests.conftest import REPO

    res = _ltr("run", REPO / "configs" / "simulated_separable.yaml", "--out", tmp_path / "runs", "-q",
               "--learner", "listnet", "--set", "protocol.max_rounds=5")
    assert res.exit_code == 0, res.output
    run = Path(res.stdout.strip())
    rng = np.random.default_rng(2)
    X = np.round(rng.normal(size=(4 * 6, 10)), 3)
    lines = [f"{int(i % 3)} qid:{i // 6 + 1} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(x)) for i, x in enumerate(X)]
    (tmp_path / "test.txt").write_text("\n".join(lines) + "\n")
    out = _ltr("clicks", "simulate-log", tmp_path / "test.txt", "--out", tmp_path / "log.parquet", "--model", "pbm",
               "--sessions", "2", "--per-query", "--policy", "ranking", "--shown", "3", "--run", run)
    assert out.exit_code == 0, out.output
    log = read_log(tmp_path / "log.parquet")
    w = np.asarray(json.loads((run / "models.json").read_text())["final"]["w"])
    best = [int(np.argmax(X[q * 6:(q + 1) * 6] @ w)) for q in range(4)]
    top = log.doc[log.position == 1].reshape(4, 2)
    assert (top == np.asarray(best)[:, None]).all() and log.meta["source"] == f"the scores of {run.name}"


@pytest.mark.parametrize("weights, says", [
    ([1.0, 2.0], "an array of shape (2,)"),
    ([1.0, float("nan"), 3.0], "the weight of position 2 is nan"),
    ([1.0, -1.0, 0.0], "the weight of position 2 is -1.0 (2 positions in all)"),
    (["a", "b", "c"], "values that are not numbers"),
])
def test_an_estimators_bad_weights_are_named_for_what_is_wrong(weights, says):
    from ltr_cli.clicklog.estimators import check_weights

    with pytest.raises(LtrError) as err:
        check_weights(weights, 3, "mine")
    assert says in str(err.value) and "clicks.correction 'mine'" in str(err.value)
    assert check_weights([1, 2, 3], 3, "mine").tolist() == [1.0, 2.0, 3.0]
