"""The plugin recipes of docs/architecture.md, performed as a newcomer would: each writes
exactly the files its recipe names (a module and its package's ``pyproject.toml``) into a
temporary package, installed without a subprocess (its ``pyproject.toml``'s entry points
become a ``.dist-info`` on ``sys.path``, as pip would leave them), and the shipped
conformance suite of its kind picks it up and passes it, without an edit anywhere else."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from ltr_cli import plugins
from ltr_cli.testing import cases

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

LEARNER = '''"""Online pairwise logistic regression (a recipe's learner)."""
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from ltr_cli import api


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
        return api.rank_from_scores(X @ self.w, self.ties, rng)

    def update(self, X, feedback):
        y = feedback.labels
        s = X @ self.w
        i, j = np.nonzero(y[:, None] > y[None, :])
        grad = np.zeros_like(self.w)
        if i.size:
            p = 1.0 / (1.0 + np.exp(s[i] - s[j]))
            grad = ((X[i] - X[j]) * p[:, None]).sum(axis=0) / i.size
        self.w = self.w + self.spec.eta * grad
        shown = api.ndcg_at_k(feedback.ranking, y, None, "one")
        return api.UpdateInfo(mistake=shown < 1.0, updated=bool(i.size), surrogate=float(i.size),
                              ranking_loss=1.0 - shown)


class PairwiseLogisticSpec(api.OnlineLearnerConfig):
    type: Literal["pairwise-logistic"]
    summary: ClassVar[str] = "online pairwise logistic regression"
    eta: float = Field(0.5, gt=0, description="step size")

    def default_label(self):
        return self.label or "PairLogistic"

    def build(self, n_features, ties, rng, planned_rounds=None, fidelity="paper"):
        return PairwiseLogistic(self, n_features, ties)
'''

METRIC = '''"""DCG with linear gain (a recipe's metric)."""
import numpy as np

from ltr_cli.api import MetricKind


def dcg_linear(ranking, labels, meas):
    """DCG@k with gain = the label and the convention's discount."""
    m = ranking.shape[0]
    n = m if meas.k is None else min(meas.k, m)
    return float(meas.conv.dcg(np.asarray(labels, dtype=float)[ranking[:n]], n))


DCG_LINEAR = MetricKind("DCG with linear gain (the label) at cut-off K", dcg_linear, normalised=False,
                        no_relevant=False)
'''

FORMAT = '''"""The CSV table `ltr data convert OUT.csv` writes, read back (a recipe's format)."""
import csv
from pathlib import Path

import numpy as np

from ltr_cli.api import MAX_LABEL, DataFormat, DataFormatError, Query, ReaderOptions


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


def _pyproject(group: str, name: str, value: str) -> str:
    return (f'[project]\nname = "recipe-{name}"\nversion = "0.1"\ndependencies = ["ltr-cli"]\n\n'
            f'[project.entry-points."ltr_cli.{group}"]\n{name} = "{value}"\n')


@pytest.fixture
def install(tmp_path, monkeypatch):
    """``install(package)``: a plugin package folder put on the path with its entry points,
    as pip leaves them; the entry-point tables are read again."""
    def put(package: Path) -> list[Path]:
        written = sorted(p for p in package.rglob("*") if p.is_file())
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
        monkeypatch.setenv("PYTHONPATH", ":".join([str(tmp_path / "site"), str(package), *sys.path]))
        monkeypatch.setattr(plugins, "_DECLARED", None)
        monkeypatch.setattr(plugins, "_CHECKED", {})
        monkeypatch.setattr(plugins, "_OBJECTS", {})
        monkeypatch.setattr(plugins, "_BROKEN", {g: {} for g in plugins.GROUPS})
        return written
    yield put


def _recipe(tmp_path: Path, module: str, code: str, group: str, name: str, attr: str) -> Path:
    package = tmp_path / f"recipe-{name}"
    package.mkdir()
    (package / f"{module}.py").write_text(code)
    (package / "pyproject.toml").write_text(_pyproject(group, name, f"{module}:{attr}"))
    return package


def _run_suite(kind: str, name: str, tmp_path: Path) -> list[str]:
    """Run every check of ``kind`` the suite lists for ``name``; their names."""
    ran = []
    for i, (subject_id, subject, check) in enumerate(cases(kind)):
        if subject_id.rstrip("0123456789") == name or subject_id == name:
            work = tmp_path / f"check{i}"
            work.mkdir()
            check(subject, work)
            ran.append(check.__name__)
    return ran


def test_the_docs_state_two_files_for_each_plugin_recipe():
    text = ARCHITECTURE.read_text()
    for recipe in ("**A Python online learner.** As a plugin, **2 files**", "**A metric.** As a plugin, **2 files**",
                   "**A data format.** As a plugin, **2 files**"):
        assert recipe in text


def test_a_python_learner_is_two_files_and_the_suite_runs_it(tmp_path, install):
    written = install(_recipe(tmp_path, "pairwise_logistic", LEARNER, "learners", "pairwise-logistic",
                              "PairwiseLogisticSpec"))
    assert [p.name for p in written] == ["pairwise_logistic.py", "pyproject.toml"]
    ran = _run_suite("learners", "pairwise-logistic", tmp_path)
    assert sorted(ran) == ["check_alone_as_in_a_group", "check_paths_agree", "check_resume_after_a_kill",
                           "check_state_round_trips"]


def test_a_metric_is_two_files_and_the_suite_checks_it(tmp_path, install):
    written = install(_recipe(tmp_path, "dcg_linear", METRIC, "metrics", "dcg_linear", "DCG_LINEAR"))
    assert [p.name for p in written] == ["dcg_linear.py", "pyproject.toml"]
    ran = _run_suite("metrics", "dcg_linear", tmp_path)
    assert sorted(ran) == ["check_bounds", "check_no_relevant_value", "check_paths_agree", "check_ties"]


def test_a_metric_that_breaks_its_declaration_fails_the_suite(tmp_path, install):
    """Declared normalised, a DCG is above 1: the bounds check says so."""
    install(_recipe(tmp_path, "dcg_norm", METRIC.replace("normalised=False", "normalised=True"), "metrics",
                    "dcg_norm", "DCG_LINEAR"))
    with pytest.raises(AssertionError, match="outside 0..1"):
        _run_suite("metrics", "dcg_norm", tmp_path)


def test_a_format_is_two_files_and_the_suite_checks_it(tmp_path, install):
    written = install(_recipe(tmp_path, "csv_table", FORMAT, "formats", "csv", "CSV"))
    assert [p.name for p in written] == ["csv_table.py", "pyproject.toml"]
    ran = _run_suite("formats", "csv", tmp_path)
    assert sorted(ran) == ["check_errors_name_the_row", "check_input_bounds", "check_reader_contract",
                           "check_round_trip_through_convert", "check_same_rounds_as_svmlight"]


def test_a_format_whose_errors_name_only_the_file_fails_the_suite(tmp_path, install):
    code = FORMAT.replace("raise DataFormatError(str(self.path), line, f\"query", "raise DataFormatError(str(self.path), None, f\"query")
    assert code != FORMAT
    install(_recipe(tmp_path, "csv_vague", code, "formats", "csv", "CSV"))
    with pytest.raises(AssertionError, match="names row None"):
        _run_suite("formats", "csv", tmp_path)


def test_a_new_kind_adds_its_suite_and_gets_one_pytest_entry(monkeypatch):
    """The extension point the click models and interleaving methods will use."""
    from ltr_cli import testing

    monkeypatch.setattr(testing, "_SUITES", dict(testing._SUITES))

    def check_symmetric(subject, tmp_path):
        assert subject("a", "b") == subject("b", "a")

    @testing.suite("toy-kind")
    def _cases():
        return [("same", lambda a, b: 0, check_symmetric), ("first", lambda a, b: a, check_symmetric)]

    assert "toy-kind" in testing.kinds()
    mark = testing.parametrize_with_checks("toy-kind")
    assert mark.args[0] == ("subject", "check") and mark.kwargs["ids"] == ["check_symmetric[same]",
                                                                           "check_symmetric[first]"]
    subject, check = mark.args[1][1]
    with pytest.raises(AssertionError):
        check(subject, None)
    with pytest.raises(ValueError, match="no conformance suite for 'nothing'"):
        testing.cases("nothing")
