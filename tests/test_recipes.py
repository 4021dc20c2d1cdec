"""The recipes of docs/architecture.md, one test per extension kind, each performed twice as
a newcomer would, following only the docs:

* as a plugin: exactly the files the recipe names (a module and its package's
  ``pyproject.toml``) in a temporary package, made visible as ``pip install`` leaves it (its
  entry points in a ``.dist-info`` on a temporary ``sys.path`` entry, nothing installed),
  then the shipped suite of its kind picks it up and passes it, and the commands and
  configs that name such an extension run it;
* inside the package: in a temporary copy of the repository, exactly the files the recipe
  names are touched (the module, its entry point line, its test, the generated document,
  ``python -m ltr_cli.cli.docs_gen`` rewriting it), then the copy's own checks pass (its
  documents are current and its module index complete, the recipe's test, and the kind's
  suite on the new extension where it is quick; a learner's suite runs on the plugin). Nothing
  is installed there either: the copy is first on ``PYTHONPATH``, its entry points in a
  ``.dist-info`` built from its ``pyproject.toml``, with the kernels off (``LTR_KERNELS=0``),
  so nothing is compiled.

Each test counts the files both ways and compares them with the numbers the recipe states.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ltr_cli import plugins
from ltr_cli.testing import cases
from tests.conftest import REPO

ARCHITECTURE = REPO / "docs" / "architecture.md"


def stated(heading: str) -> tuple[int, int]:
    """The file counts the recipe ``**heading**`` states: (as a plugin, inside the package)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert f"**{heading}**" in text, f"docs/architecture.md has no recipe '{heading}'"
    recipe = text.split(f"**{heading}**", 1)[1].split("\n\n", 1)[0]
    counts = [re.search(rf"{how},\s+\*\*(\d+)\s+files\*\*", recipe)
              for how in ("As a plugin", r"Inside\s+this\s+package")]
    assert all(counts), f"the recipe '{heading}' no longer states its file counts"
    return int(counts[0][1]), int(counts[1][1])  # type: ignore[index]


# --- as a plugin ---------------------------------------------------------------------------

def _pyproject(name: str, entry_points: dict[str, dict[str, str]]) -> str:
    groups = "".join(f'\n[project.entry-points."ltr_cli.{group}"]\n' + "".join(f'{k} = "{v}"\n' for k, v in eps.items())
                     for group, eps in entry_points.items())
    return f'[project]\nname = "recipe-{name}"\nversion = "0.1"\ndependencies = ["ltr-cli"]\n{groups}'


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """``plugin(name, modules, entry_points)``: a package of those modules and its
    ``pyproject.toml`` written, put on the path with its entry points as pip leaves them (the
    entry-point tables read again); returns the files written."""
    def put(name: str, modules: dict[str, str], entry_points: dict[str, dict[str, str]]) -> list[str]:
        package = tmp_path / f"recipe-{name}"
        package.mkdir()
        for module, code in modules.items():
            (package / module).write_text(code)
        (package / "pyproject.toml").write_text(_pyproject(name, entry_points))
        project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
        info = tmp_path / "site" / f"{project['name'].replace('-', '_')}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
            for group, eps in project["entry-points"].items()))
        for path in (tmp_path / "site", package):
            monkeypatch.syspath_prepend(str(path))
        # a child process (the resume check's kill) sees the plugin too
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), str(package), *sys.path]))
        monkeypatch.setattr(plugins, "_DECLARED", None)
        monkeypatch.setattr(plugins, "_CHECKED", {})
        monkeypatch.setattr(plugins, "_OBJECTS", {})
        monkeypatch.setattr(plugins, "_BROKEN", {g: {} for g in plugins.GROUPS})
        return sorted(p.name for p in package.rglob("*") if p.is_file())
    yield put
    for module in [m for m in sys.modules if m.startswith("recipe_")]:
        del sys.modules[module]


def run_suite(kind: str, name: str, tmp_path: Path, subjects: list | None = None) -> list[str]:
    """Run every check of ``kind`` the suite lists for ``name`` (its id, or the id with a
    suffix: ``-5g``, ``-2``, an example's number); the names of the checks that ran."""
    ran = []
    pattern = re.compile(rf"{re.escape(name)}(-[\w-]+|\d+)?")
    for i, (subject_id, subject, check) in enumerate(cases(kind, subjects)):
        if pattern.fullmatch(subject_id):
            work = tmp_path / f"{kind}-{name}-check{i}"
            work.mkdir()
            try:
                check(subject, work)
            except pytest.skip.Exception:
                ran.append(f"{check.__name__} (skipped)")
                continue
            ran.append(check.__name__)
    assert ran, f"the {kind} suite lists no subject {name!r}"
    return sorted(set(ran))


def ltr(*args: object) -> str:
    """``ltr ARGS`` in this process (plugins as the test made them visible); its stdout."""
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.stderr + res.stdout
    return res.stdout


# --- inside the package --------------------------------------------------------------------

_CACHES = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", ".mypy_cache",
                                 ".ruff_cache", "*.pyc")


def _ignored(folder: str, names: list[str]) -> set[str]:
    runs = {n for n in names if n != "README.md"} if Path(folder) == REPO / "results" else set()
    return set(_CACHES(folder, names)) | runs


@pytest.fixture
def copy(tmp_path):
    """A temporary copy of the repository (its results, environments and caches left out)."""
    target = tmp_path / "repo"
    shutil.copytree(REPO, target, ignore=_ignored)
    return target


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def install_metadata(copy: Path, site: Path) -> None:
    """The copy's entry points as ``pip install -e .`` leaves them: a ``.dist-info``."""
    project = tomllib.loads((copy / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    shutil.rmtree(info, ignore_errors=True)
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(  # sorted, as setuptools writes them
        f"[{group}]\n" + "".join(f"{k} = {eps[k]}\n" for k in sorted(eps)) + "\n"
        for group, eps in sorted(project["entry-points"].items())))
    (info / "top_level.txt").write_text("ltr_cli\n")


def add_entry_point(copy: Path, group: str, line: str) -> None:
    """One line at the end of the group's table in ``pyproject.toml``."""
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    table = re.search(rf'\[project\.entry-points\."ltr_cli\.{group}"\]\n(?:[^\n\[]*\n)+?(?=\n|\[)', text)
    assert table, f"pyproject.toml: no ltr_cli.{group} entry points"
    pyproject.write_text(text[:table.end()] + line + "\n" + text[table.end():], encoding="utf-8")


def add_index_row(copy: Path, package: str, row: str) -> None:
    """A row under the module index's heading of ``package`` (``kernels/``)."""
    page = copy / "docs" / "architecture.md"
    text = page.read_text(encoding="utf-8")
    head = text.index(f"\n**`{package}`**")
    table = text.index("|---|---|\n", head) + len("|---|---|\n")
    page.write_text(text[:table] + row + "\n" + text[table:], encoding="utf-8")


#: the run in the copy: its documents regenerated, then its checks (one process for both)
_IN_COPY = """
import sys
from pathlib import Path
import ltr_cli
assert Path(ltr_cli.__file__).is_relative_to(sys.argv[1]), ltr_cli.__file__
from ltr_cli.cli.docs_gen import main
if main([]) != 0:
    sys.exit("docs_gen failed")
print("docs regenerated", flush=True)
import pytest
sys.exit(pytest.main(["-v", "-x", "--noconftest", "-p", "no:cacheprovider", *sys.argv[2:]]))
"""


def in_package(copy: Path, tmp_path: Path, new: dict[str, str], entry_points: dict[str, str], checks: list[str],
               select: str, rows: dict[str, str] | None = None) -> tuple[list[str], str]:
    """The recipe in the copy: the files ``new`` (repo path -> text; appended to when it
    exists), the entry point lines (group -> line), the module index ``rows`` (package ->
    row), then ``pip install -e .`` (outside the copy) and the documents regenerated; the
    copy's checks (``checks``: pytest node ids, ``select``: their -k expression) must pass.
    Returns the files touched and the checks' output."""
    site = tmp_path / "copy-site"
    before = snapshot(copy)
    for path, text in new.items():
        target = copy / path
        target.write_text((target.read_text(encoding="utf-8") if target.exists() else "") + text, encoding="utf-8")
    for group, line in entry_points.items():
        add_entry_point(copy, group, line)
    for package, row in (rows or {}).items():
        add_index_row(copy, package, row)
    install_metadata(copy, site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(copy)]), "LTR_KERNELS": "0",
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    docs = ["tests/test_docs_current.py"]
    done = subprocess.run([sys.executable, "-c", _IN_COPY, str(copy), *docs, *checks, "-k",
                           f"generated_reference_pages_are_current or architecture_names_every_module or ({select})"],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    after = snapshot(copy)
    touched = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    return touched, done.stdout


def assert_counts(heading: str, plugin_files: list[str], touched: list[str], expected: list[str]) -> None:
    as_plugin, inside = stated(heading)
    assert len(plugin_files) == as_plugin, (plugin_files, as_plugin)
    assert touched == sorted(expected), touched
    assert len(touched) == inside, (touched, inside)


def plugin_code(code: str) -> str:
    return code.replace("{api}", "ltr_cli.api")


# --- a click model: DCM ---------------------------------------------------------------------

DCM = '''"""The dependent click model (Guo, Liu and Wang 2009): a cascade on the perfect table's
click probabilities whose user, after a click at rank r, goes on with probability lambda_r."""
import numpy as np

from {api} import ClickModel, ClickModelKind, ClickSettings

#: lambda_r for ranks 1, 2, ... (the last one for every rank below)
LAMBDAS = (0.6, 0.7, 0.8, 0.85, 0.9)


class DCM(ClickModel):
    def __init__(self, name, click, hint="--grades"):
        self.name, self.click, self.grades, self.hint = name, np.asarray(click, dtype=float), len(click), hint

    def walk(self, labels):
        n = labels.shape[-1]
        go_on = np.asarray(LAMBDAS)[np.minimum(np.arange(n), len(LAMBDAS) - 1)]
        return self.click[labels], 1.0 - go_on, np.zeros(n)

    def describe(self):
        return {"model": self.name, "kind": "dcm-lambda", "grades": self.grades, "click": self.click.tolist(),
                "lambda": list(LAMBDAS)}


def build(settings: ClickSettings) -> DCM:
    return DCM(settings.name, settings.click, settings.hint)


DCM_KIND = ClickModelKind("dependent click model: clicks as the perfect table's; after a click at rank r the user "
                          "goes on with probability lambda_r (0.6, 0.7, 0.8, 0.85, then 0.9)", build)
'''

DCM_TEST = '''"""DCM by hand."""
import pytest

from ltr_cli.clicks.spec import build_model


def test_dcm_goes_on_after_a_click_with_lambda():
    model = build_model("dcm-lambda", 5)
    assert model.marginal([4, 4, 0]).tolist() == pytest.approx([1.0, 0.6, 0.0])
    assert model.law([4, 4])[1].tolist() == pytest.approx([0.0, 0.0, 0.4, 0.6])
'''


def _click_config(tmp_path: Path, model: str, learners: str) -> Path:
    from ltr_cli.testing.online import write_data

    data = write_data(tmp_path / "clicks.txt", queries=30)
    cfg = tmp_path / "clicks.yaml"
    cfg.write_text(f"""experiment: recipe
dataset: {{kind: files, features: 12, files: [{data}]}}
protocol: {{feedback: clicks, clicks: {{model: {model}, shown: 5}}, passes: 2}}
metrics: {{names: [ndcg@5]}}
learners: {learners}
""")
    return cfg


def test_click_model_recipe(plugin, copy, tmp_path):
    written = plugin("dcm", {"recipe_dcm.py": plugin_code(DCM)}, {"click_models": {"dcm-lambda": "recipe_dcm:DCM_KIND"}})
    ran = run_suite("clicks", "dcm-lambda", tmp_path)
    assert ran == ["check_law_is_a_distribution", "check_law_matches_the_coins", "check_marginal_is_the_law_summed",
                   "check_sampling_matches_the_law"]
    assert "dcm-lambda" in json.loads(ltr("list", "--json"))["click_models"]
    exact = json.loads(ltr("clicks", "probabilities", "--model", "dcm-lambda", "--labels", "4,4", "--json"))
    assert exact["patterns"] == {"10": 0.4, "11": 0.6} and exact["kind"] == "dcm-lambda"
    cfg = _click_config(tmp_path, "dcm-lambda", "{pdgd: {type: pdgd}}")
    ltr("run", cfg, "--out", tmp_path / "out", "-q")
    (run,) = (tmp_path / "out" / "recipe").glob("pdgd-*")
    assert json.loads((run / "manifest.json").read_text())["clicks"]["model"] == "dcm-lambda"

    touched, out = in_package(copy, tmp_path, {"ltr_cli/clicks/dcm.py": DCM.replace("{api}", "ltr_cli.clicks.base"),
                                               "tests/test_dcm.py": DCM_TEST},
                              {"click_models": 'dcm-lambda = "ltr_cli.clicks.dcm:DCM_KIND"'},
                              ["tests/test_dcm.py", "ltr_cli/testing/suites.py::test_clicks"], "dcm")
    assert "test_clicks[check_sampling_matches_the_law[dcm-lambda-5g]] PASSED" in out and "test_dcm_goes_on" in out
    assert_counts("A click model.", written, touched, ["docs/cli-reference.md", "ltr_cli/clicks/dcm.py",
                                                       "pyproject.toml", "tests/test_dcm.py"])


# --- an interleaving method: team-draft with a fixed first pick ------------------------------

FIRST = '''"""Team-draft interleaving in a fixed order: after the prefix every ranking shares
(credited to none), each round ranker 1 picks first, then ranker 2, ...; each adds its best
document not shown yet, which joins its team. Credit: the clicks on each team."""
import numpy as np

from {api} import InterleavingKind, Outcome, Shown, check_clicks, check_length, check_rankings


class TeamDraftFirst:
    name = "team-draft-first"
    min_rankers = 2
    max_rankers = None
    unbiased = False  # the first ranker is ahead when an odd number of positions are drafted

    def make(self, rankings, length, rng):
        ranks = check_rankings(rankings, self.min_rankers, self.max_rankers)
        return self.make_checked(ranks, check_length(length, ranks.shape[1]), rng)

    def make_checked(self, ranks, size, rng):
        k, n = ranks.shape
        same = np.all(ranks[:, :size] == ranks[:1, :size], axis=0)
        start = size if same.all() else int(np.argmin(same))
        docs, teams = list(ranks[0, :start]), [-1] * start
        taken = np.zeros(n, dtype=bool)
        taken[docs] = True
        nxt = np.zeros(k, dtype=np.int64)
        while len(docs) < size:
            for j in range(k):
                if len(docs) == size:
                    break
                while taken[ranks[j, nxt[j]]]:
                    nxt[j] += 1
                taken[ranks[j, nxt[j]]] = True
                docs.append(ranks[j, nxt[j]])
                teams.append(j)
        return Shown(docs=np.array(docs, dtype=np.int64), rankings=ranks, teams=np.array(teams, dtype=np.int64))

    def credit(self, shown, clicks):
        hit = check_clicks(shown, clicks) & (shown.teams >= 0)
        credit = np.bincount(shown.teams[hit], minlength=shown.rankings.shape[0]).astype(float)
        return Outcome(credit=credit, prefer=np.sign(credit[:, None] - credit[None, :]))


TEAM_DRAFT_FIRST = InterleavingKind("team-draft in a fixed order: ranker 1 always picks first, then 2, ...; credit: "
                                    "clicks on the team", TeamDraftFirst, interleaves=True, multileaves=True,
                                    abbreviation="tdf")
'''

FIRST_TEST = '''"""Team-draft with a fixed first pick, by hand."""
import numpy as np

from ltr_cli.interleaving.methods import build_method


def test_the_first_ranker_picks_first():
    method = build_method("team-draft-first")
    shown = method.make([[0, 1, 2, 3], [1, 0, 3, 2]], 3, np.random.default_rng(0))
    assert shown.docs.tolist() == [0, 1, 2] and shown.teams.tolist() == [0, 1, 0]
    assert method.credit(shown, [False, True, False]).winners().tolist() == [1]
'''


def test_interleaving_recipe(plugin, copy, tmp_path):
    written = plugin("tdf", {"recipe_tdf.py": plugin_code(FIRST)},
                     {"interleaving": {"team-draft-first": "recipe_tdf:TEAM_DRAFT_FIRST"}})
    ran = run_suite("interleaving", "team-draft-first", tmp_path)
    assert ran == ["check_identical_rankings_tie", "check_random_clicks_favour_no_ranker (skipped)"]
    listed = json.loads(ltr("list", "--json"))["interleaving"]["team-draft-first"]
    assert "plugin recipe-tdf" in listed
    cfg = _click_config(tmp_path, "navigational", "{tdf: {type: dbgd, comparison: team-draft-first}, "
                        "mgd: {type: dbgd, comparison: team-draft-first, candidates: 3}}")
    ltr("run", cfg, "--out", tmp_path / "out", "-q")
    runs = {p.name.split("-")[0]: p for p in (tmp_path / "out" / "recipe").iterdir() if not p.name.startswith(".")}
    learner = json.loads((runs["tdf"] / "manifest.json").read_text())["learner_conventions"]
    assert learner["comparison"] == "team-draft-first" and learner["role"] == "tdf-dbgd"
    data = next((tmp_path).glob("clicks.txt"))
    verdict = json.loads(ltr("interleave", runs["tdf"], runs["mgd"], data, "--model", "navigational", "--impressions",
                             "200", "--method", "team-draft-first", "--json"))
    assert verdict["method"] == "team-draft-first"

    touched, out = in_package(copy, tmp_path, {
        "ltr_cli/interleaving/team_draft_first.py": FIRST.replace("{api}", "ltr_cli.interleaving.base"),
        "tests/test_team_draft_first.py": FIRST_TEST},
        {"interleaving": 'team-draft-first = "ltr_cli.interleaving.team_draft_first:TEAM_DRAFT_FIRST"'},
        ["tests/test_team_draft_first.py", "ltr_cli/testing/suites.py::test_interleaving"], "team_draft_first or "
        "team-draft-first")
    assert "test_interleaving[check_identical_rankings_tie[team-draft-first-3]] PASSED" in out
    assert_counts("An interleaving or multileaving method.", written, touched, [
        "docs/cli-reference.md", "ltr_cli/interleaving/team_draft_first.py", "pyproject.toml",
        "tests/test_team_draft_first.py"])


# --- an online learner from clicks ----------------------------------------------------------

CLICK_LEARNER = '''"""A perceptron on the pairs a click vector implies (a clicked document over each unclicked
one above the last click, and the one just below): each misordered pair's feature
difference, averaged, is the step."""
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from {api} import ClickLearner, ClickLearnerConfig, UpdateInfo, click_pairs, rank_from_scores, shown_clicks


class ClickPerceptron(ClickLearner):
    def rank(self, X, rng):
        return rank_from_scores(X @ self.w, self.ties, rng)

    def update(self, X, feedback):
        self.t += 1
        clicks = shown_clicks(feedback.clicks, feedback.ranking, self.shown, "click-perceptron")
        pos, neg = click_pairs(clicks)
        shown = feedback.ranking[:clicks.shape[0]]
        s = X @ self.w
        better, worse = np.meshgrid(shown[pos], shown[neg], indexing="ij")
        wrong = s[better] <= s[worse]
        if not wrong.any():
            return UpdateInfo(mistake=False, updated=False)
        self._move((X[better[wrong]] - X[worse[wrong]]).mean(axis=0))
        return UpdateInfo(mistake=True, updated=True)


class ClickPerceptronSpec(ClickLearnerConfig):
    type: Literal["click-perceptron"]
    summary: ClassVar[str] = "a perceptron on the pairs a click vector implies; learns from clicks"
    examples: ClassVar[tuple[dict, ...]] = ({}, {"learning_rate": 0.5, "learning_rate_decay": 0.99})
    learning_rate: float = Field(0.1, gt=0, description="step on the misordered pairs' mean feature difference")

    def build(self, n_features, ties, rng, planned_rounds=None, fidelity="paper"):
        return ClickPerceptron(n_features, ties, rng, self.learning_rate, self.learning_rate_decay)
'''

CLICK_LEARNER_IMPORTS = ("from ltr_cli.learners.online.base import UpdateInfo\n"
                         "from ltr_cli.learners.online.click_base import ClickLearner, ClickLearnerConfig\n"
                         "from ltr_cli.learners.online.click_pairs import click_pairs, shown_clicks\n"
                         "from ltr_cli.measures.metrics import rank_from_scores")

CLICK_LEARNER_TEST = '''"""The click perceptron, by hand."""
import numpy as np

from ltr_cli.learners.online.base import Feedback
from ltr_cli.learners.registry import REGISTRY


def test_a_click_below_an_unclicked_document_moves_the_weights_towards_it():
    spec = REGISTRY["click-perceptron"].model_validate({"type": "click-perceptron", "learning_rate": 1.0})
    learner = spec.build(2, "input-order", np.random.default_rng(0))
    learner.shown = 2
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    info = learner.update(X, Feedback(np.array([0, 1]), clicks=np.array([0.0, 1.0])))
    assert info.updated and learner.w.tolist() == [-1.0, 1.0]
'''


def test_click_learner_recipe(plugin, copy, tmp_path):
    written = plugin("clickp", {"recipe_clickp.py": plugin_code(CLICK_LEARNER)},
                     {"learners": {"click-perceptron": "recipe_clickp:ClickPerceptronSpec"}})
    ran = run_suite("learners", "click-perceptron", tmp_path)
    assert ran == ["check_alone_as_in_a_group", "check_paths_agree", "check_resume_after_a_kill",
                   "check_state_round_trips"]

    code = CLICK_LEARNER.replace(
        "from {api} import ClickLearner, ClickLearnerConfig, UpdateInfo, click_pairs, rank_from_scores, shown_clicks",
        CLICK_LEARNER_IMPORTS)
    touched, out = in_package(copy, tmp_path, {"ltr_cli/learners/online/click_perceptron.py": code,
                                               "tests/test_click_perceptron.py": CLICK_LEARNER_TEST},
                              {"learners": 'click-perceptron = "ltr_cli.learners.online.click_perceptron:'
                                           'ClickPerceptronSpec"'},
                              ["tests/test_click_perceptron.py"], "click_below")
    assert "test_a_click_below_an_unclicked_document_moves_the_weights_towards_it PASSED" in out
    assert_counts("An online learner from clicks.", written, touched, [
        "docs/config-reference.md", "ltr_cli/learners/online/click_perceptron.py", "pyproject.toml",
        "tests/test_click_perceptron.py"])


# --- a counterfactual estimator -------------------------------------------------------------

ESTIMATOR = '''"""Inverse propensity weights under propensities 1/rank, the examination of a
position-based user with eta 1: a click at position k weighs min(k, clip), whatever click
model the log names."""
import numpy as np

from {api} import ClickLog, Estimator


def rank_weights(log: ClickLog):
    k = np.arange(1, log.shown + 1, dtype=float)
    clip = log.signal.clip
    return (k if clip is None else np.minimum(k, clip)), {"propensity": (1.0 / k).tolist()}


RANK_IPS = Estimator("inverse propensity scoring under propensities 1/rank: a click at position k weighs min(k, clip)",
                     "clicks weighted by their rank", rank_weights, weighs=True, unbiased=True)
'''

ESTIMATOR_TEST = '''"""Rank IPS, by hand."""
from types import SimpleNamespace

from ltr_cli.clicklog.estimators import ESTIMATORS


def test_a_click_weighs_its_rank_up_to_the_clip():
    log = SimpleNamespace(shown=4, signal=SimpleNamespace(clip=3.0))
    weights, record = ESTIMATORS["rank-ips"].weights(log)
    assert weights.tolist() == [1.0, 2.0, 3.0, 3.0] and record["propensity"][1] == 0.5
'''


def test_estimator_recipe(plugin, copy, tmp_path):
    written = plugin("rank-ips", {"recipe_rank_ips.py": plugin_code(ESTIMATOR)},
                     {"estimators": {"rank-ips": "recipe_rank_ips:RANK_IPS"}})
    ran = run_suite("estimators", "rank-ips", tmp_path)
    assert ran == ["check_targets_estimate_the_relevance (skipped)", "check_targets_per_document (skipped)",
                   "check_weighted_clicks_do_not_depend_on_the_position", "check_weights_per_position"]
    assert "rank-ips" in json.loads(ltr("list", "--json"))["estimators"]
    ltr("data", "synth", tmp_path / "folds", "--like", "letor2-ohsumed", "--folds", "--queries", "25",
        "--docs-per-query", "12")
    cfg = tmp_path / "cf.yaml"
    cfg.write_text(f"""experiment: rank-ips
dataset: {{kind: registry, name: letor2-ohsumed, root: {tmp_path / 'folds'}, folds: [1]}}
cv: {{select_by: ndcg@10}}
learners:
  svm: {{type: ranksvm, grid: {{C: [1.0]}}, clicks: {{generate: {{model: pbm, sessions: 2000, shown: 5}},
        correction: rank-ips}}}}
""")
    ltr("run", cfg, "--out", tmp_path / "out", "-q")
    (run,) = (tmp_path / "out" / "rank-ips").glob("svm-*")
    signal = json.loads((run / "manifest.json").read_text())["learner_conventions"]["training_signal"]
    assert signal.startswith("clicks weighted by their rank"), signal
    assert "rank-ips" in (run / "models.json").read_text()

    touched, out = in_package(copy, tmp_path, {"ltr_cli/clicklog/rank_ips.py": ESTIMATOR.replace(
        "from {api} import ClickLog, Estimator", "from ltr_cli.clicklog.estimators import ClickLog, Estimator"),
        "tests/test_rank_ips.py": ESTIMATOR_TEST}, {"estimators": 'rank-ips = "ltr_cli.clicklog.rank_ips:RANK_IPS"'},
        ["tests/test_rank_ips.py", "ltr_cli/testing/suites.py::test_estimators"], "rank_up or rank-ips")
    assert "test_estimators[check_weights_per_position[rank-ips]] PASSED" in out
    assert_counts("A counterfactual estimator.", written, touched, [
        "docs/config-reference.md", "ltr_cli/clicklog/rank_ips.py", "pyproject.toml", "tests/test_rank_ips.py"])


# --- a metric -------------------------------------------------------------------------------

METRIC = '''

def dcg_linear(ranking, labels, meas):
    """DCG@k with the label as the gain and the convention's discount."""
    m = ranking.shape[0]
    n = m if meas.k is None else min(meas.k, m)
    return float(meas.conv.dcg(np.asarray(labels, dtype=float)[ranking[:n]], n))


DCG_LINEAR = MetricKind("DCG with linear gain (the label) at cut-off K", dcg_linear, normalised=False,
                        no_relevant=False)
'''

METRIC_TEST = '''"""DCG with linear gain, by hand."""
import numpy as np

from ltr_cli.measures.conventions import CONVENTIONS, Measure
from ltr_cli.measures.registry import KINDS


def test_dcg_linear_by_hand():
    assert "dcg_linear" in KINDS
    meas = Measure("dcg_linear@2", "zero", conv=CONVENTIONS["paper"])
    value = meas.value(np.array([2, 0, 1]), np.array([3.0, 0.0, 1.0]))  # labels shown: 1, 3
    assert abs(value - (1.0 + 3.0 / np.log2(3))) < 1e-12
'''


def test_metric_recipe(plugin, copy, tmp_path):
    written = plugin("dcg-linear", {"recipe_dcg.py": '"""DCG with linear gain."""\nimport numpy as np\n\n'
                                                     "from ltr_cli.api import MetricKind\n" + METRIC},
                     {"metrics": {"dcg_linear": "recipe_dcg:DCG_LINEAR"}})
    ran = run_suite("metrics", "dcg_linear", tmp_path)
    assert ran == ["check_bounds", "check_no_relevant_value", "check_paths_agree", "check_ties"]

    touched, out = in_package(copy, tmp_path, {"ltr_cli/measures/kinds.py": METRIC,
                                               "tests/test_dcg_linear.py": METRIC_TEST},
                              {"metrics": 'dcg_linear = "ltr_cli.measures.kinds:DCG_LINEAR"'},
                              ["tests/test_dcg_linear.py", "ltr_cli/testing/suites.py::test_metrics"], "dcg_linear")
    for check in ["test_metrics[check_paths_agree[dcg_linear]] PASSED", "test_dcg_linear_by_hand PASSED",
                  "test_generated_reference_pages_are_current[metrics.md] PASSED"]:
        assert check in out, out[-3000:]
    assert_counts("A metric.", written, touched, ["docs/metrics.md", "ltr_cli/measures/kinds.py", "pyproject.toml",
                                                  "tests/test_dcg_linear.py"])


def test_a_metric_that_breaks_its_declaration_fails_the_suite(plugin, tmp_path):
    """Declared normalised, a DCG is above 1: the bounds check says so."""
    plugin("dcg-norm", {"recipe_dcg_norm.py": "import numpy as np\nfrom ltr_cli.api import MetricKind\n"
                        + METRIC.replace("normalised=False", "normalised=True")},
           {"metrics": {"dcg_norm": "recipe_dcg_norm:DCG_LINEAR"}})
    with pytest.raises(AssertionError, match="outside 0..1"):
        run_suite("metrics", "dcg_norm", tmp_path)


def test_a_recipe_that_skips_the_docs_step_fails_the_copys_checks(copy, tmp_path):
    """The checks see a missing step: the metric's table regenerated by hand-editing nothing
    but without docs_gen, the copy's document test fails, naming the page."""
    (copy / "ltr_cli" / "measures" / "kinds.py").write_text(
        (copy / "ltr_cli" / "measures" / "kinds.py").read_text() + METRIC)
    add_entry_point(copy, "metrics", 'dcg_linear = "ltr_cli.measures.kinds:DCG_LINEAR"')
    site = tmp_path / "copy-site"
    install_metadata(copy, site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(copy)]), "LTR_KERNELS": "0",
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--noconftest", "-p", "no:cacheprovider",
                           "tests/test_docs_current.py", "-k", "generated_reference_pages_are_current"],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "docs/metrics.md is out of date" in done.stdout, done.stdout[-3000:]


# --- a data format --------------------------------------------------------------------------

FORMAT = '''"""The CSV table `ltr data convert OUT.csv` writes, read back."""
import csv
from pathlib import Path

import numpy as np

from {api} import MAX_LABEL, DataFormat, DataFormatError, Query, ReaderOptions


class CsvReader:
    def __init__(self, path: Path, options: ReaderOptions):
        self.path, self.options, self.respelt = Path(path), options, []

    def _rows(self):
        with open(self.path, newline="") as fh:
            rows = csv.reader(fh)
            header = next(rows, None)
            want = ["qid", "label"] + [f"f{j + self.options.index_base}" for j in range(self.options.n_features or 0)]
            if header != want:
                raise DataFormatError(str(self.path), 1, f"the header must be {','.join(want)}")
            for line, row in enumerate(rows, start=2):
                try:
                    values = [float(v) for v in row[1:]]
                except ValueError:
                    raise DataFormatError(str(self.path), line, "a label or feature is not a number") from None
                if len(values) != len(want) - 1 or not np.isfinite(values).all() or abs(values[0]) > MAX_LABEL:
                    raise DataFormatError(str(self.path), line, "expected a finite label and features, one per column")
                yield line, str(int(row[0])), values

    def dense_queries(self, dtype=np.float64):
        seen, qid, start, docs = set(), None, 0, []
        for line, q, values in list(self._rows()) + [(0, None, None)]:
            if q != qid and docs:
                if qid in seen and self.options.split_qids == "error":
                    raise DataFormatError(str(self.path), start, f"qid {qid} reappears after other queries")
                seen.add(qid)
                table = np.array(docs)
                yield Query(qid, table[:, 1:].astype(dtype), table[:, 0].astype(np.float64), start)
                docs = []
            if q is None:
                return
            if not docs:
                qid, start = q, line
            docs.append(values)
            if len(docs) > self.options.max_query_rows:
                raise DataFormatError(str(self.path), line, f"query {q} has more than "
                                      f"{self.options.max_query_rows} documents; raise dataset.max_query_mb")

    __iter__ = dense_queries

    def labelled_queries(self):
        return ((q.qid, q.y, q.line) for q in self.dense_queries())

    def summaries(self):
        for q in self.dense_queries():
            cols = np.flatnonzero((q.X != 0).any(axis=0))
            yield q.qid, q.y, q.line, int((q.X != 0).sum()), int(cols[-1]) if cols.size else -1

    def count_queries(self):
        return sum(1 for _ in self.dense_queries())


CSV = DataFormat("csv", (".csv",), "the CSV table 'ltr data convert OUT.csv' writes", CsvReader)
'''

FORMAT_TEST = '''"""The CSV format, by hand."""
from ltr_cli.data.formats import format_for, open_dataset
from ltr_cli.data.options import ReaderOptions


def test_csv_is_read_by_its_suffix(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("qid,label,f1,f2\\n7,2,0.5,1\\n7,0,0,0\\n")
    assert format_for(path).name == "csv"
    (query,) = open_dataset(path, ReaderOptions(n_features=2)).dense_queries()
    assert query.qid == "7" and query.y.tolist() == [2.0, 0.0] and query.X.tolist() == [[0.5, 1.0], [0.0, 0.0]]
'''

def test_format_recipe(plugin, copy, tmp_path):
    written = plugin("csv", {"recipe_csv.py": plugin_code(FORMAT)}, {"formats": {"csv": "recipe_csv:CSV"}})
    ran = run_suite("formats", "csv", tmp_path)
    assert ran == ["check_errors_name_the_row", "check_input_bounds", "check_reader_contract",
                   "check_round_trip_through_convert", "check_same_rounds_as_svmlight"]
    assert "csv" in json.loads(ltr("list", "--json"))["formats"]

    touched, out = in_package(copy, tmp_path, {
        "ltr_cli/data/formats/csv_table.py": FORMAT.replace("{api}", "ltr_cli.data.formats.base").replace(
            "from ltr_cli.data.formats.base import MAX_LABEL, DataFormat, DataFormatError, Query, ReaderOptions",
            "from ltr_cli.data.formats.base import DataFormat\nfrom ltr_cli.data.options import MAX_LABEL, "
            "ReaderOptions\nfrom ltr_cli.data.query import Query\nfrom ltr_cli.errors import DataFormatError"),
        "tests/test_csv_table.py": FORMAT_TEST}, {"formats": 'csv = "ltr_cli.data.formats.csv_table:CSV"'},
        ["tests/test_csv_table.py", "ltr_cli/testing/suites.py::test_formats"], "csv")
    assert "test_formats[check_reader_contract[csv]] PASSED" in out and "test_csv_is_read_by_its_suffix PASSED" in out
    assert_counts("A data format.", written, touched, ["docs/data.md", "ltr_cli/data/formats/csv_table.py",
                                                       "pyproject.toml", "tests/test_csv_table.py"])


def test_a_format_of_any_suffix_is_checked_through_its_writer(plugin, tmp_path):
    """A suffix ``ltr data convert`` does not write: the suite makes its file with the
    format's ``write``; without one, the suite fails saying to declare it."""
    code = plugin_code(FORMAT).replace('CSV = DataFormat("csv", (".csv",)', '''def write(path, queries, options):
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["qid", "label"] + [f"f{j + options.index_base}" for j in range(options.n_features)])
        for q in queries:
            for y, x in zip(q.y, q.X):
                out.writerow([q.qid, repr(float(y))] + [repr(float(v)) for v in x])


CSV = DataFormat("tab", (".tab",)''').replace("CsvReader)\n", "CsvReader, write)\n")
    plugin("tab", {"recipe_tab.py": code, "recipe_nowriter.py": code.replace(", write)\n", ")\n").replace(
        '"tab", (".tab",)', '"nowriter", (".nowriter",)')}, {"formats": {"tab": "recipe_tab:CSV",
                                                                             "nowriter": "recipe_nowriter:CSV"}})
    assert run_suite("formats", "tab", tmp_path) == ["check_errors_name_the_row", "check_input_bounds",
                                                     "check_reader_contract", "check_round_trip_through_convert",
                                                     "check_same_rounds_as_svmlight"]
    with pytest.raises(AssertionError, match="declare DataFormat"):
        run_suite("formats", "nowriter", tmp_path)


# --- a Python online learner ----------------------------------------------------------------

LEARNER = '''"""Online pairwise logistic regression: each round, a step along the mean gradient of the
logistic loss of the query's correctly ordered pairs."""
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from {api} import OnlineLearnerConfig, UpdateInfo, ndcg_at_k, rank_from_scores


class PairwiseLogistic:
    feedback_k = None
    numerics = "stable"
    state_fields = ("w",)

    def __init__(self, spec, n_features, ties):
        self.spec, self.ties, self.w = spec, ties, np.zeros(n_features)

    @property
    def weights(self):
        return self.w

    def resolved_settings(self):
        return {"eta": self.spec.eta}

    def rank(self, X, rng):
        return rank_from_scores(X @ self.w, self.ties, rng)

    def update(self, X, feedback):
        y = feedback.labels
        s = X @ self.w
        i, j = np.nonzero(y[:, None] > y[None, :])
        grad = np.zeros_like(self.w)
        if i.size:
            p = 1.0 / (1.0 + np.exp(s[i] - s[j]))
            grad = ((X[i] - X[j]) * p[:, None]).sum(axis=0) / i.size
        self.w = self.w + self.spec.eta * grad
        shown = ndcg_at_k(feedback.ranking, y, None, "one")
        return UpdateInfo(mistake=shown < 1.0, updated=bool(i.size), surrogate=float(i.size), ranking_loss=1.0 - shown)


class PairwiseLogisticSpec(OnlineLearnerConfig):
    type: Literal["pairwise-logistic"]
    summary: ClassVar[str] = "online pairwise logistic regression"
    eta: float = Field(0.5, gt=0, description="step size")

    def default_label(self):
        return self.label or "PairLogistic"

    def build(self, n_features, ties, rng, planned_rounds=None, fidelity="paper"):
        return PairwiseLogistic(self, n_features, ties)
'''

LEARNER_IMPORTS = ("from ltr_cli.core.schema import OnlineLearnerConfig\n"
                   "from ltr_cli.learners.online.base import UpdateInfo\n"
                   "from ltr_cli.measures.metrics import ndcg_at_k, rank_from_scores")

LEARNER_TEST = '''"""Pairwise logistic regression, by hand."""
import numpy as np

from ltr_cli.learners.online.base import Feedback
from ltr_cli.learners.registry import REGISTRY


def test_one_step_on_one_pair():
    spec = REGISTRY["pairwise-logistic"].model_validate({"type": "pairwise-logistic", "eta": 2.0})
    learner = spec.build(2, "input-order", np.random.default_rng(0))
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 0.0])
    learner.update(X, Feedback(np.array([1, 0]), y))
    assert learner.w.tolist() == [1.0, -1.0]  # 2 x sigma(0) x (x_0 - x_1)
'''


def test_learner_recipe(plugin, copy, tmp_path):
    written = plugin("pairwise-logistic", {"recipe_logistic.py": plugin_code(LEARNER)},
                     {"learners": {"pairwise-logistic": "recipe_logistic:PairwiseLogisticSpec"}})
    ran = run_suite("learners", "pairwise-logistic", tmp_path)
    assert ran == ["check_alone_as_in_a_group", "check_paths_agree", "check_resume_after_a_kill",
                   "check_state_round_trips"]

    code = LEARNER.replace("from {api} import OnlineLearnerConfig, UpdateInfo, ndcg_at_k, rank_from_scores",
                           LEARNER_IMPORTS)
    touched, out = in_package(copy, tmp_path, {"ltr_cli/learners/online/pairwise_logistic.py": code,
                                               "tests/test_pairwise_logistic.py": LEARNER_TEST},
                              {"learners": 'pairwise-logistic = "ltr_cli.learners.online.pairwise_logistic:'
                                           'PairwiseLogisticSpec"'},
                              ["tests/test_pairwise_logistic.py"], "one_step")
    assert "test_one_step_on_one_pair PASSED" in out
    assert_counts("A Python online learner.", written, touched, [
        "docs/config-reference.md", "ltr_cli/learners/online/pairwise_logistic.py", "pyproject.toml",
        "tests/test_pairwise_logistic.py"])


# --- a compiled block family ----------------------------------------------------------------

FAMILY_LEARNER = '''"""The margin perceptron: when the shown top document is less relevant than the first most
relevant one and not ahead of it by the margin, w + eta (x_best - x_top); its block family
and parameter slots."""
from types import SimpleNamespace
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from {api} import BlockFamily, LinearRanker, OnlineLearnerConfig, StepSpec, UpdateInfo

{slots}
MARGIN_FAMILY = BlockFamily("margin", "{kernel}:margin_step", "{kernel}:margin_block", {slots_obj})


class MarginPerceptron(LinearRanker):
    def __init__(self, n_features, ties, eta, margin):
        super().__init__(n_features, StepSpec().schedule(), ties)
        self.eta, self.margin = eta, margin

    def update(self, X, feedback):
        self.t += 1
        y, top = feedback.labels, int(feedback.ranking[0])
        s = self._scores_fast(X)
        best = int(np.argmax(y))
        if y[best] <= y[top] or s[best] - s[top] >= self.margin:
            return UpdateInfo(False, False, ranking_loss=0.0)
        self.w = self.w + self.eta * (X[best].astype(np.float64) - X[top].astype(np.float64))
        return UpdateInfo(True, True, ranking_loss=1.0)

    def block_kernel(self):
        return (MARGIN_FAMILY, self.kernel_params()) if self.fast else None

    def _make_params(self):
        P = MARGIN_FAMILY.parameters()
        P[ETA], P[MARGIN] = self.eta, self.margin
        return P


class MarginSpec(OnlineLearnerConfig):
    type: Literal["margin-perceptron"]
    summary: ClassVar[str] = "the margin perceptron (a compiled block family)"
    eta: float = Field(0.5, gt=0, description="step size")
    margin: float = Field(1.0, gt=0, description="the margin the top document must be ahead by")

    def build(self, n_features, ties, rng, planned_rounds=None, fidelity="paper"):
        return MarginPerceptron(n_features, ties, self.eta, self.margin)
'''

SLOTS = "ETA, MARGIN, SIZE = 0, 1, 2\n"

FAMILY_KERNEL = '''"""The margin perceptron's round kernel and its block kernel."""
import numpy as np

from ltr_cli.core.codes import UNCHANGED, UPDATED
from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.loop import block_kernel
from {slots_module} import ETA, MARGIN


@njit(cache=_CACHE)
def margin_step(X, y, ranking, shown, s, w, P, t, gamma, eta, reverse, disc, out):
    m = y.shape[0]
    if m == 0:
        return UNCHANGED, False, 0.0
    best = 0
    for i in range(m):
        if y[i] > y[best]:
            best = i
    top = shown[0]
    if y[best] <= y[top] or s[best] - s[top] >= P[MARGIN]:
        return UNCHANGED, False, 0.0
    for j in range(w.shape[0]):
        out[j] = w[j] + P[ETA] * (np.float64(X[best, j]) - np.float64(X[top, j]))
    return UPDATED, True, 1.0


margin_block = block_kernel(margin_step, "margin_block")
'''

FAMILY_TEST = '''"""The margin perceptron, by hand, and its family as the kernel plan finds it."""
import numpy as np

from ltr_cli.learners.online.base import Feedback
from ltr_cli.learners.online.family import declared_family
from ltr_cli.learners.registry import REGISTRY


def test_the_margin_perceptron_steps_until_the_best_is_ahead_by_the_margin():
    spec = REGISTRY["margin-perceptron"].model_validate({"type": "margin-perceptron", "eta": 1.0, "margin": 1.5})
    learner = spec.build(2, "input-order", np.random.default_rng(0))
    X, y = np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0.0, 2.0])
    assert learner.update(X, Feedback(np.array([0, 1]), y)).updated and learner.w.tolist() == [1.0, -1.0]
    assert not learner.update(X, Feedback(np.array([1, 0]), y)).updated  # ahead by 2 >= 1.5
    assert declared_family("margin").block_kernel.endswith(":margin_block")
'''


def test_compiled_family_recipe(plugin, copy, tmp_path):
    """As a plugin, the learner and its family are found through their entry points and the
    suite's state check runs it on the reference path (the compile itself:
    tests/test_block_families.py)."""
    from ltr_cli import kernels
    from ltr_cli.learners.online.family import declared_family
    from ltr_cli.testing.online import check_state_round_trips

    learner = FAMILY_LEARNER.format(api="ltr_cli.api", slots=SLOTS, kernel="recipe_margin_kernel",
                                    slots_obj="SimpleNamespace(ETA=ETA, MARGIN=MARGIN, SIZE=SIZE)")
    written = plugin("margin", {"recipe_margin.py": learner,
                                "recipe_margin_kernel.py": FAMILY_KERNEL.format(slots_module="recipe_margin")},
                     {"learners": {"margin-perceptron": "recipe_margin:MarginSpec"},
                      "families": {"margin": "recipe_margin:MARGIN_FAMILY"}})
    family = declared_family("margin")
    assert family is not None and family.round_kernel == "recipe_margin_kernel:margin_step"
    before = kernels.ENABLED
    kernels.set_enabled(False)
    try:
        check_state_round_trips("margin-perceptron0", tmp_path)
    finally:
        kernels.set_enabled(before)

    inside = FAMILY_LEARNER.format(api="ltr_cli.api", slots="", kernel="ltr_cli.kernels.margin",
                                   slots_obj="margin_slots").replace(
        "from ltr_cli.api import BlockFamily, LinearRanker, OnlineLearnerConfig, StepSpec, UpdateInfo",
        "from ltr_cli.core.schema import OnlineLearnerConfig\nfrom ltr_cli.kernels import margin_slots\n"
        "from ltr_cli.kernels.margin_slots import ETA, MARGIN\nfrom ltr_cli.learners.online.base import "
        "LinearRanker, UpdateInfo\nfrom ltr_cli.learners.online.family import BlockFamily\n"
        "from ltr_cli.learners.online.schedules import StepSpec").replace("from types import SimpleNamespace\n", "")
    touched, out = in_package(copy, tmp_path, {
        "ltr_cli/learners/online/margin_perceptron.py": inside,
        "ltr_cli/kernels/margin.py": FAMILY_KERNEL.format(slots_module="ltr_cli.kernels.margin_slots"),
        "ltr_cli/kernels/margin_slots.py": '"""The margin perceptron\'s parameter slots (numba-free)."""\n' + SLOTS,
        "tests/test_margin_perceptron.py": FAMILY_TEST},
        {"learners": 'margin-perceptron = "ltr_cli.learners.online.margin_perceptron:MarginSpec"',
         "families": 'margin = "ltr_cli.learners.online.margin_perceptron:MARGIN_FAMILY"'},
        ["tests/test_margin_perceptron.py"], "margin", rows={
            "kernels/": "| `kernels/margin.py` | one round of the margin perceptron; its block kernel |\n"
                        "| `kernels/margin_slots.py` | the margin perceptron's parameter slots (numba-free) |"})
    assert "test_the_margin_perceptron_steps_until_the_best_is_ahead_by_the_margin PASSED" in out
    assert_counts("A compiled block family: a learner, its kernel and their slots.", written, touched, [
        "docs/architecture.md", "docs/config-reference.md", "ltr_cli/kernels/margin.py",
        "ltr_cli/kernels/margin_slots.py", "ltr_cli/learners/online/margin_perceptron.py", "pyproject.toml",
        "tests/test_margin_perceptron.py"])


# --- the suites' extension point --------------------------------------------------------------

def test_a_new_kind_adds_its_suite_and_gets_one_pytest_entry(monkeypatch):
    """The extension point a new kind of extension (scorers, losses) uses."""
    from ltr_cli import testing

    monkeypatch.setattr(testing, "_SUITES", dict(testing._SUITES))

    def check_symmetric(subject, tmp_path):
        assert subject("a", "b") == subject("b", "a")

    @testing.suite("toy-kind")
    def _cases(given):
        found = given if given is not None else [("same", lambda a, b: 0), ("first", lambda a, b: a)]
        return [(name, subject, check_symmetric) for name, subject in testing.identified(found, lambda s: "given")]

    assert "toy-kind" in testing.kinds()
    mark = testing.parametrize_with_checks("toy-kind")
    assert mark.args[0] == ("subject", "check") and mark.kwargs["ids"] == ["check_symmetric[same]",
                                                                           "check_symmetric[first]"]
    subject, check = mark.args[1][1]
    with pytest.raises(AssertionError):
        check(subject, None)
    given = testing.parametrize_with_checks("toy-kind", subjects=[max, max])
    assert given.kwargs["ids"] == ["check_symmetric[given]", "check_symmetric[given-2]"]
    with pytest.raises(ValueError, match="no conformance suite for 'nothing'"):
        testing.cases("nothing")


def test_the_suites_take_objects_no_entry_point_declares(tmp_path):
    """A plugin's own tests check its objects before they are installed: a click model, a
    method, an estimator, a metric, a format and a learner, none registered (the learner's
    resume check, a child process, is skipped, saying why)."""
    import importlib.util
    import types

    def module(name: str, code: str) -> types.ModuleType:
        path = tmp_path / f"{name}.py"
        path.write_text(code)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    dcm = module("given_dcm", plugin_code(DCM))
    assert run_suite("clicks", "dcm-lambda", tmp_path, [dcm.DCM("dcm-lambda", (0.0, 0.5, 1.0))]) == [
        "check_law_is_a_distribution", "check_law_matches_the_coins", "check_marginal_is_the_law_summed",
        "check_sampling_matches_the_law"]
    assert "dcm-lambda" not in plugins.names("click_models")
    tdf = module("given_tdf", plugin_code(FIRST))
    assert run_suite("interleaving", "tdf", tmp_path, [("tdf", tdf.TEAM_DRAFT_FIRST)]) == [
        "check_identical_rankings_tie", "check_random_clicks_favour_no_ranker (skipped)"]
    ips = module("given_ips", plugin_code(ESTIMATOR))
    assert "check_weighted_clicks_do_not_depend_on_the_position" in run_suite(
        "estimators", "rank", tmp_path, [("rank", ips.RANK_IPS)])
    metric = module("given_metric", "import numpy as np\nfrom ltr_cli.api import MetricKind\n" + METRIC)
    assert run_suite("metrics", "dcg_lin", tmp_path, [("dcg_lin", metric.DCG_LINEAR)]) == [
        "check_bounds", "check_no_relevant_value", "check_paths_agree", "check_ties"]
    assert "dcg_lin" not in plugins.names("metrics")
    fmt = module("given_csv", plugin_code(FORMAT))
    assert len(run_suite("formats", "csv", tmp_path, [fmt.CSV])) == 5 and "csv" not in plugins.names("formats")
    learner = module("given_logistic", plugin_code(LEARNER))
    assert run_suite("learners", "pairwise-logistic", tmp_path, [learner.PairwiseLogisticSpec]) == [
        "check_alone_as_in_a_group", "check_paths_agree", "check_resume_after_a_kill (skipped)",
        "check_state_round_trips"]
