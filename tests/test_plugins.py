"""Plugins through entry points: the example package under examples/ is installed (into a
folder of its own, put on PYTHONPATH), listed by ``ltr list``, run by ``ltr run``, ``ltr
sweep`` and ``ltr report`` from a config that names only its type, and passes the
conformance suite; a broken plugin is one line and the rest of the tool works."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conformance import write_data
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "ltr-averaged-perceptron"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example plugin installed into its own folder (a copy is built, so the checkout
    gets no build litter)."""
    root = tmp_path_factory.mktemp("plugin")
    src = root / "src"
    shutil.copytree(EXAMPLE, src)
    target = root / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return target


def _env(*paths: Path) -> dict[str, str]:
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(REPO)])
    return env


def ltr(env: dict[str, str], *args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ltr_cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd)


def _from(listed: dict[str, str], *distributions: str) -> dict[str, str]:
    """The entries of a ``plugins`` or ``broken_plugins`` listing that come from these
    distributions (other plugins installed in the environment are not this test's)."""
    return {k: v for k, v in listed.items() if any(f"(from {d})" in v for d in distributions)}


def _lines_of(stderr: str, *distributions: str) -> list[str]:
    """The warning lines that name one of these distributions."""
    return [line for line in stderr.splitlines() if any(d in line for d in distributions)]


def test_the_plugin_is_listed_with_its_source(site):
    res = ltr(_env(site), "list", "--json")
    assert res.returncode == 0, res.stderr
    listed = json.loads(res.stdout)
    assert "plugin ltr-averaged-perceptron" in listed["learners"]["averaged-perceptron"]
    assert _from(listed["plugins"], "ltr-averaged-perceptron") == {
        "learners:averaged-perceptron": "ltr_averaged_perceptron:AveragedPerceptronSpec (from ltr-averaged-perceptron)"}
    assert _from(listed["broken_plugins"], "ltr-averaged-perceptron") == {}
    plain = ltr(_env(), "list", "--json")
    assert "averaged-perceptron" not in json.loads(plain.stdout)["learners"]


def test_a_config_that_names_only_its_type_runs_sweeps_and_reports(site, tmp_path):
    env = _env(site)
    data = write_data(tmp_path / "a.txt", queries=40)
    cfg = tmp_path / "plug.yaml"
    cfg.write_text(f"""experiment: plug
dataset: {{kind: files, features: 12, files: [{data}]}}
protocol: {{passes: 2, checkpoint_every: 25}}
metrics: {{names: [ndcg@10]}}
learners:
  avg: {{type: averaged-perceptron}}
  slam: {{type: slam-perceptron}}
sweep:
  learners.avg.eta: [0.1, 1.0]
""")
    run = ltr(env, "run", cfg, "--out", tmp_path / "run", "--set", "sweep={}")
    assert run.returncode == 0, run.stderr
    assert "avg: 80 rounds" in run.stdout
    sweep = ltr(env, "sweep", cfg, "--out", tmp_path / "sweep", "-q")
    assert sweep.returncode == 0, sweep.stderr
    assert len([p for p in (tmp_path / "sweep" / "plug").iterdir() if p.name.startswith("avg-")]) == 2
    report = ltr(env, "report", tmp_path / "sweep" / "plug", "--select-by", "ndcg@10", "--window", "20")
    assert report.returncode == 0, report.stderr
    assert "AvgPerceptron" in report.stdout
    # without the plugin, the same config is refused in one line naming the key
    missing = ltr(_env(), "run", cfg, "--out", tmp_path / "none", "--set", "sweep={}")
    assert missing.returncode == 1 and "learners.avg" in missing.stderr and "Traceback" not in missing.stderr


def test_the_plugin_passes_the_shipped_conformance_suite(site, tmp_path):
    """As a plugin's author runs it: the suite shipped in the package, outside any checkout."""
    res = subprocess.run([sys.executable, "-m", "ltr_cli.testing", "learners", "-q", "-k", "averaged-perceptron"],
                         capture_output=True, text=True, env=_env(site), cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "4 passed" in res.stdout  # paths, alone vs group, resume after a kill, state round trip


def test_the_repository_checks_hold_with_the_example_plugin_installed(site, tmp_path):
    """CI's test command runs with the example plugin installed too: the tests that a plugin
    could break (a type defined once, nothing restated; a one-round run imports only what it
    runs) are run again here, in a process that has it installed."""
    env = _env(site)
    listed = ltr(env, "list", "--json")
    assert "averaged-perceptron" in json.loads(listed.stdout)["learners"], listed.stderr
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--noconftest", "-p", "no:cacheprovider",
                           "tests/test_registry.py::test_every_type_is_defined_once_and_nowhere_restated",
                           "tests/test_lazy_imports.py::test_a_one_round_online_run_imports_only_what_it_runs"],
                          capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-1000:]


def _fake_distribution(site: Path, name: str, group: str, entry: str, module: str | None = None,
                       code: str = "") -> None:
    """A distribution installed by hand: its metadata, one entry point and its module."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ltr_cli.{group}]\n{entry}\n")
    if module:
        (site / f"{module}.py").write_text(code)


# a metric that works, so that only its name can be refused
_A_METRIC = "from ltr_cli.api import MetricKind, ndcg_at_k\nKIND = MetricKind('x', lambda r, y, m: 0.5)\n"


@pytest.mark.parametrize("group, entry, module, code, reason", [
    ("learners", "broken = broken_mod:Spec", "broken_mod", "raise ImportError('no such thing')\n",
     "ImportError: no such thing"),
    ("learners", "clash = clash_mod:Spec", "clash_mod",
     "from ltr_cli.learners.online.ogd import ListNetSpec as Spec\n", "ValueError: learner type 'listnet' is already"),
    ("learners", "notaclass = odd_mod:THING", "odd_mod", "THING = 3\n", "TypeError: expected a subclass"),
    ("formats", "bad = odd_fmt:FMT", "odd_fmt", "FMT = 'parquet'\n", "TypeError: expected a DataFormat"),
    ("formats", "gone = no_such_module:FMT", None, "", "ModuleNotFoundError"),
    ("learners", "quits = quit_mod:Spec", "quit_mod", "raise SystemExit(3)\n", "SystemExit: 3"),
    ("formats", "mytext = txt_fmt:FMT", "txt_fmt",
     "from ltr_cli.api import DataFormat\nfrom ltr_cli.data.formats.parquet_table import ParquetReader\n"
     "FMT = DataFormat('mytext', ('.txt',), 'takes over text', ParquetReader)\n", "already read as svmlight"),
    ("metrics", "half = half_mod:KIND", "half_mod", "KIND = 0.5\n", "TypeError: expected a MetricKind"),
    ("learners", "ua = alias_mod:Spec", "alias_mod",
     "from typing import ClassVar, Literal\nfrom pydantic import Field\nfrom ltr_cli.api import OnlineLearnerConfig\n"
     "class Spec(OnlineLearnerConfig):\n    type: Literal['ua'] = Field(alias='kind')\n"
     "    summary: ClassVar[str] = 'x'\n", "cannot join the config's learner types"),
    ("learners", "other-name = named_mod:Spec", "named_mod",
     "from ltr_cli.learners.online.ogd import RandomSpec\nclass Spec(RandomSpec):\n    pass\n",
     "learner type 'random' is already defined (built-in)"),
    ("formats", "svmlight = dup_fmt:FMT", None, "", "the name 'svmlight' is already declared (built-in)"),
    ("formats", "other = named_fmt:FMT", "named_fmt",
     "from ltr_cli.api import DataFormat\nfrom ltr_cli.data.formats.parquet_table import ParquetReader\n"
     "FMT = DataFormat('mine', ('.mine',), 'x', ParquetReader)\n", "name the entry point as the format"),
    # a metric named like a column of the round table would lose its values in a duplicated column
    ("metrics", "mistake = col_mod:KIND", "col_mod", _A_METRIC,
     "metric kind 'mistake' collides with the round table's columns"),
    ("metrics", "heldout_x = col_mod:KIND", "col_mod", _A_METRIC, "collides with the round table's columns"),
    ("metrics", "regret = col_mod:KIND", "col_mod", _A_METRIC, "rename the entry point"),
])
def test_a_broken_plugin_is_one_line_and_the_rest_works(tmp_path, group, entry, module, code, reason):
    site = tmp_path / "site"
    _fake_distribution(site, "broken-plugin", group, entry, module, code)
    env = _env(site)
    listed = ltr(env, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    warnings = _lines_of(listed.stderr, "broken-plugin")
    assert len(warnings) == 1 and reason in warnings[0], listed.stderr
    assert len(_from(json.loads(listed.stdout)["broken_plugins"], "broken-plugin")) == 1
    if group != "learners" or module != "broken_mod":
        return  # one case runs a config too
    data = write_data(tmp_path / "a.txt", queries=20)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: still
dataset: {{kind: files, features: 12, files: [{data}]}}
learners: {{slam: {{type: slam-perceptron}}}}
""")
    run = ltr(env, "run", cfg, "--out", tmp_path / "out", "-q")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr


def test_a_plugin_taking_built_in_names_is_refused_and_the_built_ins_keep_working(tmp_path):
    """A plugin whose entry points are named ``ranksvm``, ``ndcg`` and ``svmlight`` is
    refused, one line per entry point naming its distribution; the built-ins of those names
    still load: a config of type ranksvm validates, ``ltr eval`` reads an SVMlight file and
    computes NDCG@2."""
    site = tmp_path / "site"
    info = site / "name_taker-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: name-taker\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ltr_cli.learners]\nranksvm = taker:Spec\n\n[ltr_cli.metrics]\n"
                                           "ndcg = taker:KIND\n\n[ltr_cli.formats]\nsvmlight = taker:FMT\n")
    (site / "taker.py").write_text("raise ImportError('never imported')\n")
    env = _env(site)
    listed = ltr(env, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    warnings = _lines_of(listed.stderr, "name-taker")
    assert len(warnings) == 3 and all("already declared (built-in)" in w for w in warnings), listed.stderr
    got = json.loads(listed.stdout)
    assert sorted(_from(got["broken_plugins"], "name-taker")) == ["formats:svmlight", "learners:ranksvm",
                                                                  "metrics:ndcg"]
    assert "ranksvm" in got["learners"] and "ndcg[@K]" in got["metrics"] and "svmlight" in got["formats"]
    data = tmp_path / "d.txt"
    data.write_text("2 qid:1 1:1\n0 qid:1 1:0\n")
    scores = tmp_path / "s.txt"
    scores.write_text("0.1\n0.9\n")  # the label-0 document on top
    res = ltr(env, "eval", data, scores, "--metric", "ndcg@2", "--json")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    plain = ltr(_env(), "eval", data, scores, "--metric", "ndcg@2", "--json")
    assert json.loads(res.stdout)["average"] == json.loads(plain.stdout)["average"]
    assert 0 < json.loads(res.stdout)["average"]["ndcg@2"] < 1
    check = subprocess.run([sys.executable, "-c", "from ltr_cli.learners.registry import config_for; "
                            "print(config_for('ranksvm').__name__)"], capture_output=True, text=True, env=env)
    assert check.returncode == 0 and check.stdout.strip() == "RankSVMSpec", check.stderr[-2000:]


def test_a_plugin_printing_at_import_does_not_spoil_json(tmp_path):
    site = tmp_path / "site"
    _fake_distribution(site, "chatty", "learners", "chatty = chatty_mod:Spec", "chatty_mod",
                       "print('hello from a plugin')\nSpec = 3\n")
    listed = ltr(_env(site), "list", "--json")
    assert listed.returncode == 0 and "hello from a plugin" in listed.stderr
    assert json.loads(listed.stdout)["broken_plugins"]


_METRIC = """import numpy as np
from ltr_cli.api import MetricKind


def first_gain(ranking, labels, meas):
    \"\"\"The gain of the top document over the largest gain (a toy metric).\"\"\"
    gains = meas.conv.gains(labels)
    return float(gains[ranking[0]] / gains.max()) if gains.max() > 0 else meas.none_value


KIND = MetricKind("gain of the top document over the best gain", first_gain, cutoff="none")
"""


def test_a_metric_plugin_is_listed_and_evaluated(tmp_path):
    site = tmp_path / "site"
    _fake_distribution(site, "toy-metric", "metrics", "topgain = toy_metric_mod:KIND", "toy_metric_mod", _METRIC)
    env = _env(site)
    listed = ltr(env, "list", "--json")
    assert "plugin toy-metric" in json.loads(listed.stdout)["metrics"]["topgain"]
    data = tmp_path / "d.txt"
    data.write_text("2 qid:1 1:1\n0 qid:1 1:0\n1 qid:2 1:0\n3 qid:2 1:1\n")
    scores = tmp_path / "s.txt"
    scores.write_text("0.1\n0.9\n0.2\n0.8\n")  # query 1: label 0 on top; query 2: label 3 on top
    res = ltr(env, "eval", data, scores, "--metric", "topgain", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["average"]["topgain"] == pytest.approx(0.5)


def test_a_plugin_learner_that_raises_fails_alone_in_one_line(site, tmp_path):
    broken = tmp_path / "broken"
    _fake_distribution(broken, "raiser", "learners", "raiser = raiser_mod:Spec", "raiser_mod", """
from typing import ClassVar, Literal
from ltr_cli.api import OnlineLearnerConfig


class Spec(OnlineLearnerConfig):
    type: Literal["raiser"]
    summary: ClassVar[str] = "raises when built"

    def build(self, n_features, ties, rng, planned_rounds=None, fidelity="paper"):
        raise ValueError("this learner is broken")
""")
    data = write_data(tmp_path / "a.txt", queries=20)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: mixed
dataset: {{kind: files, features: 12, files: [{data}]}}
learners: {{slam: {{type: slam-perceptron}}, bad: {{type: raiser}}, listnet: {{type: listnet}}}}
""")
    res = ltr(_env(broken), "run", cfg, "--out", tmp_path / "out", "-q")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "the learner (plugin raiser) raised ValueError: this learner is broken" in res.stderr
    written = sorted(p.name.split("-")[0] for p in (tmp_path / "out" / "mixed").iterdir() if not p.name.startswith("."))
    assert written == ["listnet", "slam"]


def test_every_kind_refuses_a_plugin_named_like_a_built_in_or_failing_on_import(tmp_path):
    """For every kind the registry knows (:data:`ltr_cli.plugins.GROUPS`), a plugin entry
    point named like one of the kind's built-ins, and one whose module fails on import, are
    each refused in one line naming the distribution; the built-in stays listed."""
    from ltr_cli import plugins

    site = tmp_path / "site"
    info = site / "every_taker-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: every-taker\nVersion: 0.1\n")
    taken = {group: plugins.names(group, built_in=True)[0] for group in plugins.GROUPS}
    (info / "entry_points.txt").write_text("".join(
        f"[ltr_cli.{group}]\n{name} = every_taker:X\nboom{chr(97 + i)} = every_taker_boom:X\n\n"
        for i, (group, name) in enumerate(taken.items())))
    (site / "every_taker.py").write_text("raise ImportError('never imported')\n")
    (site / "every_taker_boom.py").write_text("raise RuntimeError('boom at import')\n")
    listed = ltr(_env(site), "list", "--json")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    warnings = _lines_of(listed.stderr, "every-taker")
    assert len(warnings) == 2 * len(taken), listed.stderr
    broken = _from(json.loads(listed.stdout)["broken_plugins"], "every-taker")
    for i, (group, name) in enumerate(taken.items()):
        assert "already declared (built-in)" in broken[f"{group}:{name}"]
        assert "RuntimeError: boom at import" in broken[f"{group}:boom{chr(97 + i)}"]
        assert any(f"'{name}'" in w and f"ltr_cli.{group}" in w and "every-taker" in w for w in warnings)
