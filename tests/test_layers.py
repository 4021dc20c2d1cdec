"""The package's structure stays as docs/architecture.md describes it: no import cycles
(function-level imports included), no oversized modules, layers that point one way."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ltr_cli"
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the ltr_cli modules it imports anywhere in its body (type-checking-only
    imports excluded: they never run)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            found.update(t for t in targets if t in modules and t != name)
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_one_that_imports_it_back():
    assert _cycles(_imports()) == []


def test_the_checker_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_oversized():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}


def test_lower_layers_do_not_import_upper_ones():
    """data never imports the experiment config, learners, protocols or the CLI; the
    schema, metrics and round log are leaves of the package."""
    graph = _imports()
    upper = ("ltr_cli.config", "ltr_cli.learner_registry", "ltr_cli.learners", "ltr_cli.protocols",
             "ltr_cli.runner", "ltr_cli.online_runs", "ltr_cli.run_folder", "ltr_cli.cli", "ltr_cli.sweep")
    for module, targets in graph.items():
        if module.startswith("ltr_cli.data"):
            assert not [t for t in targets if t.startswith(upper)], module
    for leaf in ("ltr_cli.schema", "ltr_cli.round_log", "ltr_cli.errors", "ltr_cli.names"):
        assert graph[leaf] <= {"ltr_cli.names", "ltr_cli.errors"}, leaf


def test_reading_a_config_loads_no_heavy_numerics():
    """The learner registry imports every learner module: none may load scipy or numba at
    import time (they load when a batch fit or a kernel first runs)."""
    import subprocess
    import sys

    code = ("import sys, ltr_cli.config, ltr_cli.cli; "
            "print(sorted(m for m in ('scipy', 'numba', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
