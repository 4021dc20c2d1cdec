"""The user documents stay true to the code: the generated references are current, the
README's two commands are the ones CI runs, every module is in the architecture page,
every link resolves inside the repository, and no page carries development history."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ltr_cli.cli import docs_gen
from tests.conftest import REPO

REGENERATE = "python -m ltr_cli.cli.docs_gen"
USER_DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("name", sorted([*docs_gen.PAGES, *docs_gen.SECTIONS]))
def test_generated_reference_pages_are_current(name):
    committed = (REPO / "docs" / name).read_text(encoding="utf-8")
    assert committed == docs_gen.pages()[name], (
        f"docs/{name} is out of date with the code; regenerate it with: {REGENERATE}")


def test_every_config_key_has_a_description():
    """The config reference explains every key: a field without a description fails here
    (add ``description=`` to its ``Field``)."""
    assert docs_gen.undescribed() == []


def test_cli_reference_does_not_depend_on_the_terminal():
    code = "from ltr_cli.cli.docs_gen import cli_reference; import sys; sys.stdout.write(cli_reference())"
    env = {**os.environ, "COLUMNS": "30", "LINES": "10", "TERM": "dumb"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=REPO)
    assert out.stdout == docs_gen.cli_reference()


def test_the_check_mode_reports_a_stale_page(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(docs_gen, "DOCS", tmp_path)
    monkeypatch.setattr(docs_gen, "PAGES", {"cli-reference.md": lambda: "new\n"})
    monkeypatch.setattr(docs_gen, "SECTIONS", {})
    (tmp_path / "cli-reference.md").write_text("old\n")
    assert docs_gen.main(["--check"]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert docs_gen.main([]) == 0
    assert (tmp_path / "cli-reference.md").read_text() == "new\n"
    assert docs_gen.main(["--check"]) == 0


def test_a_generated_section_is_rewritten_and_the_prose_around_it_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(docs_gen, "DOCS", tmp_path)
    monkeypatch.setattr(docs_gen, "PAGES", {})
    monkeypatch.setattr(docs_gen, "SECTIONS", {"page.md": {"table": lambda: "| new |\n"}})
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nprose before\n\n<!-- generated: table -->\n| old |\n| rows |\n"
                    "<!-- end generated -->\n\nprose after\n")
    assert docs_gen.main(["--check"]) == 1
    assert docs_gen.main([]) == 0
    assert page.read_text() == ("# Title\n\nprose before\n\n<!-- generated: table -->\n| new |\n"
                                "<!-- end generated -->\n\nprose after\n")
    assert docs_gen.main(["--check"]) == 0
    page.write_text("# Title\n\nthe markers were deleted\n")
    capsys.readouterr()
    assert docs_gen.main([]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "docs/page.md" in err and "<!-- generated: table -->" in err
    assert page.read_text() == "# Title\n\nthe markers were deleted\n"


def test_the_metric_table_lists_every_built_in_kind_as_the_registry_declares_it():
    from ltr_cli import plugins
    from ltr_cli.measures.registry import KINDS, SOURCES

    rows = [r for r in docs_gen.metric_table().splitlines()[2:]]
    built_in = [name for name in KINDS if SOURCES[name] == plugins.BUILT_IN]
    assert [r.split("`")[1].split("@")[0].split("[")[0] for r in rows] == built_in
    for row, name in zip(rows, built_in):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[-1] == ("yes" if KINDS[name].kernel is not None else "no"), row
        assert cells[5] == ("yes" if KINDS[name].normalised else "no"), row
        assert KINDS[name].help in cells[1]


def test_a_new_dataset_kind_gets_its_section_in_the_config_reference(monkeypatch):
    """The dataset kinds are read from the ``DatasetSpec`` union, not listed by hand."""
    from typing import Annotated, Literal, Union, get_args

    from pydantic import Field

    from ltr_cli.config import datasets
    from ltr_cli.config import experiment  # noqa: F401 - built before the patch, as in a run: importing it
    from ltr_cli.core.schema import Strict  # after would build ExperimentSpec on the patched union

    class LinesData(Strict):
        kind: Literal["lines"]
        path: str = Field(description="the file of lines")

    union = get_args(get_args(datasets.DatasetSpec)[0])
    monkeypatch.setattr(datasets, "DatasetSpec", Annotated[Union[(*union, LinesData)], Field(discriminator="kind")])
    text = docs_gen.config_reference()
    assert "### `dataset` kind: lines" in text and "`dataset:` is one of five kinds" in text
    assert "| `dataset.path` | string | required | the file of lines |" in text


def test_a_newly_declared_metric_makes_the_metrics_page_stale(monkeypatch):
    """A kind declared in the registry and not yet in docs/metrics.md fails the currency test."""
    from ltr_cli import plugins
    from ltr_cli.measures import registry

    extra = registry.MetricKind("DCG with linear gain", lambda ranking, labels, meas: 0.0, labels="raw",
                                normalised=False)
    kinds = {**registry.KINDS, "dcg_linear": extra}
    monkeypatch.setattr(registry, "KINDS", kinds)
    monkeypatch.setattr(registry, "SOURCES", {name: plugins.BUILT_IN for name in kinds})
    text = docs_gen.pages()["metrics.md"]
    assert "| `dcg_linear[@K]` | DCG with linear gain |" in text
    assert text != (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")


# --- README -------------------------------------------------------------------------------

def _readme_commands() -> list[str]:
    """The shell commands of the README's "Install and run" section, one per fenced block."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Install and run\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_ci_runs_exactly_the_readme_commands():
    """.ci/run runs the README's two commands verbatim: the tests first, then the demo."""
    commands = _readme_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands), commands
    ci_lines = [line.rstrip().removesuffix("\\").rstrip()
                for line in (REPO / ".ci" / "run").read_text().splitlines()]
    demo, tests = commands
    assert "ltr run configs/simulated_separable.yaml" in demo and "pytest" in tests
    assert ci_lines.index(tests) < ci_lines.index(demo)


def test_readme_is_a_short_front_door():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


# --- every page ---------------------------------------------------------------------------

def _module_index(text: str) -> list[tuple[str, str, str]]:
    """(group, module, job) for each row of docs/architecture.md's module index; the group
    is the package its heading names (``kernels/``), "" for the top of the package."""
    rows, group = [], ""
    for line in text.split("\n## Module index\n", 1)[1].split("\n## ", 1)[0].splitlines():
        heading = re.match(r"\*\*(?:`([\w/]+/)`|Top of the package)\*\*", line)
        if heading:
            group = heading.group(1) or ""
        row = re.match(r"\| `([\w/]+\.py)` \|(.*)\|$", line)
        if row:
            rows.append((group, row.group(1), row.group(2).strip()))
    return rows


def _module_index_faults(text: str, modules: set[str], declaring: frozenset[str] = frozenset()) -> list[str]:
    """What is wrong with the module index for ``modules``; those of ``declaring`` (the
    modules a built-in entry point names) may go without a row."""
    rows = _module_index(text)
    named = [module for _, module, _ in rows]
    faults = [f"{m}: add a row to docs/architecture.md's module index"
              for m in sorted(modules - set(named) - declaring)]
    faults += [f"{m}: no longer exists; remove its row" for m in sorted(set(named) - modules)]
    faults += [f"{m}: named twice" for m in sorted({m for m in named if named.count(m) > 1})]
    for group, module, job in rows:
        if not job:
            faults.append(f"{module}: its row says nothing of its job")
        if not module.startswith(group) or (not group and "/" in module):
            home = module.split("/")[0] + "/" if "/" in module else "the top of the package"
            faults.append(f"{module}: its row belongs under {home}, not {group or 'the top of the package'}")
    return faults


def test_architecture_names_every_module():
    """docs/architecture.md's module index (hand-written: the modules' docstrings open with
    headings such as ``ltr bench``:, not one-line jobs) has one row per module of the package,
    by its path (``data/sources/files.py``) and under its package's heading, with its job;
    no row names a module that does not exist."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = REPO / "ltr_cli"
    modules = {str(p.relative_to(package)) for p in package.rglob("*.py") if p.name != "__init__.py"}
    assert _module_index_faults(text, modules, _entry_point_modules()) == []


def _entry_point_modules() -> frozenset[str]:
    """The modules (``clicks/cascade.py``) this package's built-in entry points name: their
    kind's generated reference and ``ltr list`` say what each declares."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    values = [v for group, eps in project["entry-points"].items() if group.startswith("ltr_cli.")
              for v in eps.values()]
    return frozenset(v.split(":")[0].removeprefix("ltr_cli.").replace(".", "/") + ".py" for v in values)


def test_a_module_that_declares_an_entry_point_needs_no_row():
    text = "intro\n## Module index\n\n**`clicks/`**\n\n| `clicks/base.py` | the contract |\n"
    modules = {"clicks/base.py", "clicks/dcm.py", "clicks/other.py"}
    assert _module_index_faults(text, modules, frozenset({"clicks/dcm.py"})) == [
        "clicks/other.py: add a row to docs/architecture.md's module index"]
    assert "clicks/cascade.py" in _entry_point_modules() and "api.py" not in _entry_point_modules()


def test_the_module_index_check_finds_what_it_looks_for():
    text = ("## Module index\n\n**Top of the package**\n\n| `api.py` | the API |\n| `kernels/core.py` | core |\n\n"
            "**`kernels/`**\n\n| `kernels/loop.py` | loop |\n| `kernels/loop.py` | again |\n| `kernels/qp.py` |  |\n"
            "| `gone.py` | gone |\n\n**`data/sources/`**\n\n| `data/sources/files.py` | files |\n\n## Next\n\n"
            "| `ignored.py` | after the index |\n")
    faults = _module_index_faults("intro\n" + text, {"api.py", "kernels/core.py", "kernels/loop.py", "kernels/qp.py",
                                                     "data/sources/files.py", "new.py"})
    assert faults == ["new.py: add a row to docs/architecture.md's module index",
                      "gone.py: no longer exists; remove its row", "kernels/loop.py: named twice",
                      "kernels/core.py: its row belongs under kernels/, not the top of the package",
                      "kernels/qp.py: its row says nothing of its job",
                      "gone.py: its row belongs under the top of the package, not kernels/"]


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a markdown page's headings."""
    return {docs_gen._slug(h) for h in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)}


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: p.name)
def test_every_link_resolves_inside_the_repository(page):
    """Every relative link names a file of the repository and, for a markdown page, one of
    its headings."""
    broken = []
    for target in LINK.findall(re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)):
        if re.match(r"[a-z]+:", target):
            continue
        name, _, anchor = target.partition("#")
        path = (page.parent / name).resolve() if name else page
        if not path.is_relative_to(REPO) or not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(target)
    assert broken == []


HISTORY = [
    (re.compile(r"\bissues?\s*#?\d+", re.I), "an issue number"),
    (re.compile(r"(?<![\w&/])#\d+\b"), "an issue number"),
    (re.compile(r"\.\./shared|/work/"), "a path outside the repository"),
    (re.compile(r"_(before|after)\.(png|pdf|svg)|\|\s*before\s*\|\s*after\s*\|", re.I), "a before/after gallery"),
    (re.compile(r"\bthis stop\b|\bclosing note|\(was\s", re.I), "a closing note or earlier state"),
]


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: p.name)
def test_user_documents_carry_no_development_history(page):
    """User documents describe the tool as it is: no issue numbers, closing notes,
    before/after galleries or paths outside the repository."""
    found = [f"{page.name}:{n}: {why}: {line.strip()[:80]}"
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             for pattern, why in HISTORY if pattern.search(line)]
    assert found == []


def test_the_history_scan_finds_what_it_looks_for():
    lines = ["as issue 12 asked", "fixed in #34", "see ../shared/data", "| before | after |",
             "![x](docs/figures/demo_before.png)", "10x (was 3x)"]
    assert all(any(p.search(line) for p, _ in HISTORY) for line in lines)
    assert not any(p.search("Fold1..Fold5, `ndcg@10`, 2^r - 1, [a](#ltr-run)") for p, _ in HISTORY)


def test_no_figure_is_left_unreferenced():
    text = "".join(p.read_text(encoding="utf-8") for p in USER_DOCS)
    figures = sorted((REPO / "docs" / "figures").glob("*")) if (REPO / "docs" / "figures").exists() else []
    assert [f.name for f in figures if f.name not in text] == []
