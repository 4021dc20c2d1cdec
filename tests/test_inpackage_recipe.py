"""The in-package metric recipe of docs/architecture.md, performed in a temporary copy of the
repository as a contributor would: exactly the files the recipe names are touched, their
number is the one the docs state, and the copy's own checks (the documents stay current,
the metric registry's tests, the recipe's test, the shipped metric suite on the new kind)
then pass. A new hidden step (one more file to edit, a list kept by hand) makes those
checks fail, or the count differ from the docs.

Nothing is installed: the copy is put first on ``PYTHONPATH``, with its entry points in a
``.dist-info`` built from its ``pyproject.toml``, as ``pip install -e .`` would leave them;
the compiled kernels are off (``LTR_KERNELS=0``), so nothing is compiled."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

ARCHITECTURE = REPO / "docs" / "architecture.md"
#: what a copy leaves out: environments, caches, build metadata, and the top folder's results
_CACHES = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", ".mypy_cache",
                                 ".ruff_cache", "*.pyc")


def IGNORED(folder: str, names: list[str]) -> set[str]:
    runs = {n for n in names if n != "README.md"} if Path(folder) == REPO / "results" else set()
    return set(_CACHES(folder, names)) | runs


KIND_CODE = '''

def dcg_linear(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """DCG@k with the label as the gain and the convention's discount."""
    m = ranking.shape[0]
    n = m if meas.k is None else min(meas.k, m)
    return float(meas.conv.dcg(np.asarray(labels, dtype=float)[ranking[:n]], n))


DCG_LINEAR = MetricKind("DCG with linear gain (the label) at cut-off K", dcg_linear, normalised=False,
                        no_relevant=False)
'''

ENTRY_POINT = 'dcg_linear = "ltr_cli.measures.kinds:DCG_LINEAR"\n'

KIND_TEST = '''"""DCG with linear gain, by hand."""
import numpy as np

from ltr_cli.measures.conventions import CONVENTIONS, Measure
from ltr_cli.measures.registry import KINDS


def test_dcg_linear_by_hand():
    assert "dcg_linear" in KINDS
    meas = Measure("dcg_linear@2", "zero", conv=CONVENTIONS["paper"])
    value = meas.value(np.array([2, 0, 1]), np.array([3.0, 0.0, 1.0]))  # labels shown: 1, 3
    assert abs(value - (1.0 + 3.0 / np.log2(3))) < 1e-12
'''


def promised_count() -> int:
    """The in-package file count the metric recipe states."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    recipe = text.split("**A metric.**", 1)[1].split("\n\n", 1)[0]
    found = re.search(r"Inside this package, \*\*(\d+) files\*\*", recipe)
    assert found, "docs/architecture.md: the metric recipe no longer states its in-package file count"
    return int(found[1])


def snapshot(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``root`` (caches left out)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def install_metadata(copy: Path, site: Path) -> None:
    """The copy's entry points as ``pip install -e .`` leaves them: a ``.dist-info``
    (its console script aside)."""
    project = tomllib.loads((copy / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    shutil.rmtree(info, ignore_errors=True)
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(  # sorted, as setuptools writes them
        f"[{group}]\n" + "".join(f"{k} = {eps[k]}\n" for k in sorted(eps)) + "\n"
        for group, eps in sorted(project["entry-points"].items())))
    (info / "top_level.txt").write_text("ltr_cli\n")


def in_copy(copy: Path, site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(copy)]), "LTR_KERNELS": "0",
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=120)


def perform(copy: Path, site: Path, steps: set[str]) -> None:
    """The recipe's steps (``kind``, ``entry-point``, ``test``, ``docs``) on the copy."""
    if "kind" in steps:
        kinds = copy / "ltr_cli" / "measures" / "kinds.py"
        kinds.write_text(kinds.read_text(encoding="utf-8") + KIND_CODE, encoding="utf-8")
    if "entry-point" in steps:
        pyproject = copy / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8")
        last = re.search(r'\[project\.entry-points\."ltr_cli\.metrics"\]\n(?:[^\n\[]+\n)+', text)
        assert last, "pyproject.toml: no ltr_cli.metrics entry points"
        pyproject.write_text(text[:last.end()] + ENTRY_POINT + text[last.end():], encoding="utf-8")
    install_metadata(copy, site)  # pip install -e . again (outside the copy: not a file of the recipe)
    if "test" in steps:
        (copy / "tests" / "test_dcg_linear.py").write_text(KIND_TEST, encoding="utf-8")
    if "docs" in steps:
        done = in_copy(copy, site, "-c", "import sys, ltr_cli; from pathlib import Path; "
                       f"assert Path(ltr_cli.__file__).is_relative_to({str(copy)!r}), ltr_cli.__file__; "
                       "from ltr_cli.cli.docs_gen import main; sys.exit(main([]))")
        assert done.returncode == 0, done.stderr[-2000:]


def checks(copy: Path, site: Path) -> subprocess.CompletedProcess:
    """The copy's checks a metric touches: its documents, the registry's tests (not those
    that compile kernels), the recipe's test, and the shipped metric suite on the new kind."""
    tests = ["tests/test_docs_current.py", "tests/test_metric_registry.py", "ltr_cli/testing/suites.py::test_metrics"]
    if (copy / "tests" / "test_dcg_linear.py").exists():
        tests.append("tests/test_dcg_linear.py")
    return in_copy(copy, site, "-m", "pytest", "-v", "-x", "--noconftest", "-p", "no:cacheprovider",
                   "-k", "(not kernel and not test_metrics) or dcg_linear", *tests)


@pytest.fixture
def copy(tmp_path):
    target = tmp_path / "repo"
    shutil.copytree(REPO, target, ignore=IGNORED)
    return target


def test_the_in_package_metric_recipe_touches_the_files_the_docs_count(copy, tmp_path):
    site = tmp_path / "site"
    before = snapshot(copy)
    perform(copy, site, {"kind", "entry-point", "test", "docs"})
    after = snapshot(copy)
    touched = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert touched == ["docs/metrics.md", "ltr_cli/measures/kinds.py", "pyproject.toml", "tests/test_dcg_linear.py"]
    assert len(touched) == promised_count()
    done = checks(copy, site)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for ran in ["test_metrics[check_paths_agree[dcg_linear]] PASSED", "test_metrics[check_ties[dcg_linear]] PASSED",
                "test_dcg_linear_by_hand PASSED", "test_generated_reference_pages_are_current[metrics.md] PASSED"]:
        assert ran in done.stdout, f"{ran!r} not in the copy's run:\n{done.stdout[-3000:]}"


def test_a_recipe_that_skips_the_docs_step_fails_the_checks(copy, tmp_path):
    """The checks see a missing step: without regenerating docs/metrics.md, the copy's
    document test fails, naming the page."""
    site = tmp_path / "site"
    perform(copy, site, {"kind", "entry-point", "test"})
    done = checks(copy, site)
    assert done.returncode != 0 and "docs/metrics.md is out of date" in done.stdout, done.stdout[-3000:]
