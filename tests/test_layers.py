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


# Each package (or module) and the packages above it that it must never import, lowest first.
# A module may import the leaves, its own package and anything lower.
LEAVES = ("ltr_cli.errors", "ltr_cli.names", "ltr_cli.pathnames", "ltr_cli.plugins", "ltr_cli.console", "ltr_cli.core.schema",
          "ltr_cli.core.yamlio", "ltr_cli.core.convention_table", "ltr_cli.core.codes",
          "ltr_cli.core.round_log")
TOP = ("ltr_cli.testing", "ltr_cli.cli", "ltr_cli.bench", "ltr_cli.reports", "ltr_cli.sweep", "ltr_cli.runs",
       "ltr_cli.protocols", "ltr_cli.config", "ltr_cli.learners")
FORBIDDEN = {
    # the lowest layer: its modules are the leaves (below), checked to import only leaves
    "ltr_cli.core": TOP + ("ltr_cli.kernels", "ltr_cli.measures", "ltr_cli.surrogates", "ltr_cli.neural", "ltr_cli.data",
                           "ltr_cli.clicks", "ltr_cli.clicklog", "ltr_cli.interleaving", "ltr_cli.results"),
    "ltr_cli.kernels": TOP + ("ltr_cli.data", "ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.measures.metrics": TOP + ("ltr_cli.data", "ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.measures.conventions": TOP + ("ltr_cli.data", "ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.measures.stacked": TOP + ("ltr_cli.data", "ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.surrogates": TOP + ("ltr_cli.data", "ltr_cli.results"),
    "ltr_cli.neural": TOP + ("ltr_cli.data", "ltr_cli.results"),
    "ltr_cli.data": TOP + ("ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.clicks": TOP + ("ltr_cli.data", "ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.clicklog": TOP + ("ltr_cli.data", "ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.interleaving": TOP + ("ltr_cli.data", "ltr_cli.results", "ltr_cli.surrogates", "ltr_cli.neural"),
    "ltr_cli.measures": TOP,
    "ltr_cli.results": TOP,
    "ltr_cli.learners": TOP[:8],
    "ltr_cli.config": TOP[:7],
    "ltr_cli.protocols": TOP[:6],
    "ltr_cli.runs": TOP[:5],
    "ltr_cli.sweep": TOP[:4],
    "ltr_cli.reports": TOP[:3],
    "ltr_cli.bench": TOP[:2],
    "ltr_cli.api": TOP[:8],  # the plugins' API: learners, metrics, formats and config building blocks
    "ltr_cli.cli": TOP[:1],
    "ltr_cli.testing": (),  # the shipped conformance suites run whole commands: the top of the order
}


def _forbidden_for(module: str) -> tuple[str, ...]:
    owner = max((p for p in FORBIDDEN if module == p or module.startswith(p + ".")), key=len, default=None)
    return FORBIDDEN[owner] if owner else ()


def _within(module: str, packages: tuple[str, ...]) -> bool:
    """``module`` is one of ``packages`` or inside one (``ltr_cli.clicks`` is not inside ``ltr_cli.cli``)."""
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_layer_check_matches_whole_package_names():
    assert _within("ltr_cli.cli.app", ("ltr_cli.cli",)) and not _within("ltr_cli.clicks.law", ("ltr_cli.cli",))


def test_lower_layers_do_not_import_upper_ones():
    """Data flows one way (docs/architecture.md): kernels and metrics < surrogates, neural < data <
    results (the run-folder format) < learners < config < protocols < runs < sweep < reports
    < bench < cli < testing (the shipped conformance suites). The leaves import nothing of the package but other leaves."""
    graph = _imports()
    wrong = {}
    for module, targets in graph.items():
        if module in LEAVES:
            continue
        bad = [t for t in targets if _within(t, _forbidden_for(module)) and t not in LEAVES
               and not (t == "ltr_cli.config" or t == "ltr_cli.learners")]
        if bad:
            wrong[module] = sorted(bad)
    assert wrong == {}
    for leaf in LEAVES:
        assert graph[leaf] <= set(LEAVES) | {"ltr_cli", "ltr_cli.core"}, leaf


def test_the_leaves_inside_packages_live_in_core():
    """Every leaf is a top-level module or a module of ltr_cli.core, so the folder tree shows
    the lowest layer."""
    assert all(leaf.count(".") == 1 or leaf.startswith("ltr_cli.core.") for leaf in LEAVES)


def test_few_modules_sit_at_the_top():
    """The top of the package holds the leaves every layer shares; the rest lives in packages."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top


def test_the_layer_rules_know_every_package():
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    ruled = {p.split(".")[1] for p in FORBIDDEN}
    assert packages <= ruled | {"cli"}, packages - ruled
    leaves = {m for m in _imports() if m in LEAVES}
    assert leaves == set(LEAVES)


def test_reading_a_config_loads_no_heavy_numerics():
    """The learner registry imports every learner module: none may load scipy, numba or
    LightGBM at import time (they load when a batch fit or a kernel first runs)."""
    import subprocess
    import sys

    code = ("import sys, ltr_cli.config.experiment, ltr_cli.cli.app, ltr_cli.api, ltr_cli.neural.losses; "
            "print(sorted(m for m in ('scipy', 'numba', 'matplotlib', 'lightgbm', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
