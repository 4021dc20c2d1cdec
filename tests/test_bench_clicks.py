"""``ltr bench --clicks``: the parts that need no click learner: finding the reference
checkout, running a reference command and reading its result line, the per-impression
arithmetic, the config it times, and the table (with and without the reference)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ltr_cli.bench import clicks
from ltr_cli.bench.clicks import (CLICK_LEARNERS, ENV, MARKERS, NOTE, click_config, find_reference,
                                  format_clicks_table, ltr_per_impression, reference_argv, run_reference)
from ltr_cli.cli.app import app
from ltr_cli.errors import LtrError
from tests.conftest import REPO


def _checkout(root: Path) -> Path:
    for marker in MARKERS:
        (root / marker).parent.mkdir(parents=True, exist_ok=True)
        (root / marker).write_text("")
    return root


def _fake(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_reference_comes_from_the_option_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert find_reference(None) is None
    ref = _checkout(tmp_path / "ref")
    monkeypatch.setenv(ENV, str(ref))
    assert find_reference(None) == ref
    other = _checkout(tmp_path / "other")
    assert find_reference(other) == other  # the option wins


def test_a_folder_that_is_not_a_checkout_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(LtrError) as err:
        find_reference(None)
    assert str(err.value).count("\n") == 0
    assert ENV in str(err.value) and "no utils/clicks.py" in str(err.value)


def test_a_reference_command_s_last_line_is_its_result():
    argv = _fake("import json; print('reading'); print(json.dumps({'cpu_per_impression': 0.0004, 'learner': 'PDGD'}))")
    assert run_reference(argv) == {"cpu_per_impression": 0.0004, "learner": "PDGD"}


@pytest.mark.parametrize("code, said", [
    ("import sys; sys.stderr.write('Traceback\\nImportError: No module named sharedmem\\n'); sys.exit(1)",
     "the reference code failed: ImportError: No module named sharedmem"),
    ("print('not json')", "printed no result line"),
    ("import json; print(json.dumps({'cpu_per_impression': 0}))", "printed no result line"),
    ("import json; print(json.dumps({'cpu_per_impression': True}))", "printed no result line"),
    ("import json; print(json.dumps([1, 2]))", "printed no result line"),
    ("pass", "its last line: 'nothing'"),
])
def test_a_failing_or_silent_reference_is_one_line(code, said):
    with pytest.raises(LtrError) as err:
        run_reference(_fake(code))
    assert said in str(err.value) and str(err.value).count("\n") == 0


def test_the_reference_command_runs_the_adapter_module(tmp_path):
    argv = reference_argv(tmp_path / "ref", tmp_path / "train.txt", tmp_path / "test.txt", "P-MGD", "perfect", 500, 3)
    assert argv[:4] == [sys.executable, "-P", "-m", "ltr_cli.bench.clicks_reference"]
    from ltr_cli.bench.clicks_reference import REFERENCE_LEARNERS

    assert {ref for _, ref in CLICK_LEARNERS.values()} <= set(REFERENCE_LEARNERS)
    pairs = dict(zip(argv[4::2], argv[5::2]))
    assert pairs["--learner"] == "P-MGD" and pairs["--impressions"] == "500" and pairs["--seed"] == "3"


def test_per_impression_cost_is_the_difference_of_long_and_short_runs():
    calls = []

    def cpu_of(rounds: int) -> float:
        calls.append(rounds)
        return 0.8 + rounds * 2e-5 + (0.1 if len(calls) <= 2 else 0.0)  # the first pair is slower

    assert ltr_per_impression(cpu_of, 1000, 100, 3) == pytest.approx(2e-5)
    assert calls == [1000, 100] * 3  # in alternation
    assert ltr_per_impression(lambda rounds: 1.0, 1000, 100, 2) is None  # no difference: noise


def test_the_timed_config_is_the_agreed_click_syntax(tmp_path):
    path = click_config(tmp_path / "c.yaml", tmp_path / "train.txt", tmp_path / "cache", "p-mgd",
                        CLICK_LEARNERS["p-mgd"][0], "informational", 1000)
    raw = yaml.safe_load(path.read_text())
    assert raw["protocol"] == {"feedback": "clicks", "sampling": "uniform", "max_rounds": 1000, "checkpoint_every": 0,
                               "clicks": {"model": "informational", "stop": "any-position", "shown": 10, "grades": 5}}
    assert raw["learners"] == {"p-mgd": {"type": "dbgd", "comparison": "probabilistic", "candidates": 49}}
    # the same learners as the generated click config (which takes the exact preference, for CI's sake;
    # the bench times the reference's own sampled estimate, as the reference computes it)
    shipped = yaml.safe_load((REPO / "configs" / "clicks_synthetic.yaml").read_text())["learners"]
    for name, (spec, _) in CLICK_LEARNERS.items():
        assert {k: v for k, v in shipped[name].items() if k not in ("label", "preference")} == spec


def _result(reference: str | None) -> dict:
    learners = {"pdgd": {"reference_learner": "PDGD", "ltr_us": 12.5, "reference_us": 300.0, "ratio": 24.0},
                "p-mgd": {"reference_learner": "P-MGD", "ltr_us": None, "reference_us": 95000.0, "ratio": None},
                "p-dbgd": {"reference_learner": "P-DBGD", "ltr_us": 100.0, "reference_us": 900.0, "ratio": 9.0}}
    if reference is None:
        learners = {k: {**v, "reference_us": None, "ratio": None} for k, v in learners.items()}
    return {"impressions": 1000, "short_impressions": 100, "model": "navigational", "repeats": 3,
            "reference": reference, "goal": 20.0, "learners": learners}


def test_the_table_gives_both_costs_and_the_ratio_against_the_goal():
    text = format_clicks_table(_result("/ref"))
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("  p") and "ltr" not in line}
    assert "24.0x" in rows["pdgd"] and "meets" in rows["pdgd"] and "300.0" in rows["pdgd"]
    assert "9.0x" in rows["p-dbgd"] and "MISSES" in rows["p-dbgd"]
    assert "noise" in rows["p-mgd"] and "95000.0" in rows["p-mgd"]
    assert "goal 20x" in text and NOTE not in text


def test_without_the_reference_the_table_says_how_to_give_it_and_skips_its_column():
    text = format_clicks_table(_result(None))
    assert text.count(NOTE) == 1 and "--reference DIR" in NOTE and ENV in NOTE
    assert "reference us" not in text and "12.50" in text


def test_bench_clicks_skips_the_reference_without_one(tmp_path, monkeypatch):
    monkeypatch.setattr(clicks, "write_data", lambda root: (root / "train.txt", root / "test.txt"))
    monkeypatch.setattr(clicks, "child_cpu", lambda argv, what: 1.0 + 1e-4 * int(
        yaml.safe_load(Path(argv[argv.index("run") + 1]).read_text())["protocol"]["max_rounds"]))
    monkeypatch.setattr(clicks, "run_reference", lambda argv: pytest.fail("no reference was given"))
    found = clicks.bench_clicks(tmp_path, None, impressions=200, repeats=1, learners=["pdgd"])
    assert found["reference"] is None and found["learners"]["pdgd"]["ltr_us"] == pytest.approx(100.0)
    assert found["learners"]["pdgd"]["ratio"] is None


def test_bench_clicks_divides_the_reference_cost_by_ltr_s(tmp_path, monkeypatch):
    monkeypatch.setattr(clicks, "write_data", lambda root: (root / "train.txt", root / "test.txt"))
    monkeypatch.setattr(clicks, "child_cpu", lambda argv, what: 1.0 + 1e-5 * int(
        yaml.safe_load(Path(argv[argv.index("run") + 1]).read_text())["protocol"]["max_rounds"]))
    seen = []
    monkeypatch.setattr(clicks, "run_reference", lambda argv: seen.append(argv) or {"cpu_per_impression": 4e-4})
    found = clicks.bench_clicks(tmp_path, tmp_path / "ref", impressions=500, repeats=1, learners=["td-dbgd"])
    row = found["learners"]["td-dbgd"]
    assert row["ltr_us"] == pytest.approx(10.0) and row["reference_us"] == pytest.approx(400.0)
    assert row["ratio"] == pytest.approx(40.0)
    assert seen and "TD-DBGD" in seen[0] and str(tmp_path / "ref") in seen[0]


def test_cli_refuses_click_options_without_clicks_and_a_bad_checkout(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["bench", "--reference", str(tmp_path)])
    assert res.exit_code == 1 and "add --clicks" in res.output and res.output.strip().count("\n") == 0
    res = runner.invoke(app, ["bench", "--clicks", "--reference", str(tmp_path)])
    assert res.exit_code == 1 and "not a checkout" in res.output and res.output.strip().count("\n") == 0
    res = runner.invoke(app, ["bench", "--clicks", "--click-model", "pbm"])
    assert res.exit_code == 1 and "--click-model 'pbm'" in res.output



FAKE = {  # a stand-in for the reference checkout, with its module layout and Python 2 habits
    "utils/clicks.py": "class _Model:\n    name = 'fake'\n\n"
                       "def get_click_models(keys):\n    assert keys[0] in ('long', 'short', 'binary'), keys\n"
                       "    return [_Model()]\n",
    "utils/dataset.py": "import cPickle\nimport sharedmem\n\nclass DataFold(object):\n"
                        "    def __init__(self, sim_args, dataset, fold_num, path):\n"
                        "        self.path = path\n        self.num_features = dataset.num_features\n"
                        "    def read_data(self):\n        self.lines = len(open(self.path + 'train.txt').readlines())\n",
    "utils/singlesimulation.py": "import numpy as np\nfrom clicks import *\n\nclass SingleSimulation(object):\n"
                                "    def __init__(self, sim_args, queue, click_model, fold):\n"
                                "        self.args, self.queue, self.fold = sim_args, queue, fold\n"
                                "    def run(self, ranker, output_key):\n"
                                "        for _ in range(self.args.n_impressions):\n"
                                "            np.sort(np.random.rand(2000))\n"
                                "        draw = float(np.random.rand())\n"
                                "        self.queue.put((output_key, {'run_results': [{'heldout': draw, "
                                "'cumulative-display': ranker.kw['learning_rate'] * self.fold.lines}]}))\n",
    "algorithms/PDGD/pdgd.py": "class PDGD(object):\n    @staticmethod\n    def default_parameters():\n"
                               "        return {'learning_rate': 0.5, 'learning_rate_decay': 1.0}\n"
                               "    def __init__(self, **kw):\n        assert kw['n_features'] == 136, kw\n"
                               "        assert kw['learning_rate_decay'] == 0.9999977, kw\n        self.kw = kw\n",
}


def test_the_adapter_runs_a_checkout_unchanged_seeded_and_timed(tmp_path):
    ref = tmp_path / "ref"
    for rel, text in FAKE.items():
        (ref / rel).parent.mkdir(parents=True, exist_ok=True)
        (ref / rel).write_text(text)
    for package in ("algorithms", "algorithms/PDGD"):
        (ref / package / "__init__.py").write_text("")
    (tmp_path / "train.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    (tmp_path / "test.txt").write_text("1 qid:2 1:0.5\n")
    assert find_reference(ref) == ref
    before = {p: p.read_bytes() for p in ref.rglob("*") if p.is_file()}
    argv = reference_argv(ref, tmp_path / "train.txt", tmp_path / "test.txt", "PDGD", "navigational", 50, seed=7)
    first, again = run_reference(argv), run_reference(argv)
    assert first["final_offline_ndcg@10"] == again["final_offline_ndcg@10"]  # seeded, not the wall clock
    assert first["cumulative_online_ndcg"] == pytest.approx(0.1 * 2)  # CIKM2018.py's PDGD rate, the data read
    assert first["cpu_per_impression"] > 0 and first["impressions"] == 50 and first["seed"] == 7
    other = run_reference(reference_argv(ref, tmp_path / "train.txt", tmp_path / "test.txt", "PDGD",
                                         "navigational", 50, seed=8))
    assert other["final_offline_ndcg@10"] != first["final_offline_ndcg@10"]
    assert {p: p.read_bytes() for p in ref.rglob("*") if p.is_file() and "__pycache__" not in p.parts} == before


def test_the_ltr_side_runs_whole_click_runs_on_the_generated_folds(tmp_path, monkeypatch):
    # a learner that takes click feedback today stands in for the click learners
    monkeypatch.setattr(clicks, "CLICK_LEARNERS", {"listnet": ({"type": "listnet"}, "PDGD")})
    monkeypatch.setattr(clicks, "run_reference", lambda argv: {"cpu_per_impression": 1.0})
    write_data = clicks.write_data
    monkeypatch.setattr(clicks, "write_data", lambda root: write_data(root, queries=50))
    found = clicks.bench_clicks(tmp_path, tmp_path / "ref", impressions=100, repeats=1)
    row = found["learners"]["listnet"]
    assert row["ltr_us"] is None or row["ltr_us"] > 0
    assert (row["ratio"] is None) == (row["ltr_us"] is None)
    assert (tmp_path / "data" / "Fold1" / "train.txt").is_file() and (tmp_path / "data" / "Fold5" / "test.txt").is_file()
    runs = sorted(p.parents[2].name for p in (tmp_path / "out").glob("*/bench-clicks/*/summary.json"))
    assert runs == ["listnet-10", "listnet-100"]  # the untimed warm-up run shares the short run's folder
