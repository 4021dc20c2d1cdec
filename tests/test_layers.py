"""The package's structure stays as docs/architecture.md describes it: no import cycles
(function-level imports included), no oversized modules, layers that point one way."""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping, Set as AbstractSet
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ltr_cli"
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, frozenset[str]]:
    """Module -> the ltr_cli modules it imports anywhere in its body (type-checking-only
    imports excluded: they never run). The package is scanned once per test session."""
    return dict(_scan())


@functools.cache
def _scan() -> dict[str, frozenset[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        nodes = list(ast.walk(ast.parse(path.read_text())))
        skip = {id(n) for node in nodes if isinstance(node, ast.If)
                and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        found: set[str] = set()
        for node in nodes:
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            found.update(t for t in targets if t in modules and t != name)
        graph[name] = frozenset(found)
    return graph


def _cycles(graph: Mapping[str, AbstractSet[str]]) -> list[list[str]]:
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


# The layers of docs/architecture.md, lowest first: a module may import the leaves, its own
# package and the packages of its layer or of a lower one, never one of a higher layer. The
# packages of one layer are peers: imports between them go one way (no cycle of packages).
LEAVES = ("ltr_cli", "ltr_cli.errors", "ltr_cli.names", "ltr_cli.pathnames", "ltr_cli.plugins", "ltr_cli.console",
          "ltr_cli.outputs", "ltr_cli.core.schema", "ltr_cli.core.yamlio", "ltr_cli.core.convention_table",
          "ltr_cli.core.codes", "ltr_cli.core.round_log")
LAYERS = (
    LEAVES + ("ltr_cli.core",),
    ("ltr_cli.kernels", "ltr_cli.measures", "ltr_cli.clicks", "ltr_cli.clicklog", "ltr_cli.interleaving"),
    ("ltr_cli.surrogates", "ltr_cli.neural"),
    ("ltr_cli.data",),
    ("ltr_cli.results",),
    ("ltr_cli.learners",),
    ("ltr_cli.config", "ltr_cli.api"),  # the plugins' API: learners, metrics, formats and config building blocks
    ("ltr_cli.protocols",),
    ("ltr_cli.runs",),
    ("ltr_cli.sweep",),
    ("ltr_cli.reports",),
    ("ltr_cli.bench",),
    ("ltr_cli.cli", "ltr_cli.__main__"),
    ("ltr_cli.testing",),  # the shipped conformance suites run whole commands: the top of the order
)


def _unit(module: str) -> str:
    """The leaf or package of the order that ``module`` belongs to (the longest that holds it)."""
    units = [u for layer in LAYERS for u in layer if module == u or module.startswith(u + ".")]
    if module in LEAVES:
        return module
    return max((u for u in units if u != "ltr_cli"), key=len, default="")


def _layer(module: str) -> int:
    unit = _unit(module)
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    """``module`` is one of ``packages`` or inside one (``ltr_cli.clicks`` is not inside ``ltr_cli.cli``)."""
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_layer_check_matches_whole_package_names():
    assert _within("ltr_cli.cli.app", ("ltr_cli.cli",)) and not _within("ltr_cli.clicks.law", ("ltr_cli.cli",))
    assert _unit("ltr_cli.clicks.law") == "ltr_cli.clicks" and _unit("ltr_cli.cli.app") == "ltr_cli.cli"
    assert _unit("ltr_cli.core.codes") == "ltr_cli.core.codes" and _unit("ltr_cli.errors") == "ltr_cli.errors"


def test_the_order_is_the_documented_one():
    order = ["leaves"] + [" ".join(p.split(".")[1] for p in layer if p != "ltr_cli.__main__") for layer in LAYERS[1:]]
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    documented = text.split("```\nleaves < ", 1)[1].split("\n```", 1)[0]
    assert ("leaves < " + " ".join(documented.split())).replace(",", "").split(" < ") == order


def test_every_module_has_a_layer():
    assert sorted(m for m in _imports() if not _unit(m)) == []


def test_lower_layers_do_not_import_upper_ones():
    """Data flows one way (docs/architecture.md): leaves < kernels, measures, clicks,
    clicklog, interleaving < surrogates < data < results < learners < config, api <
    protocols < runs < sweep < reports < bench < cli < testing, with no exemption. The leaves
    import nothing of the package but other leaves."""
    graph = _imports()
    wrong = {module: sorted(t for t in targets if _layer(t) > _layer(module))
             for module, targets in graph.items()}
    assert {m: t for m, t in wrong.items() if t} == {}
    for leaf in LEAVES:
        assert graph[leaf] <= set(LEAVES) | {"ltr_cli.core"}, leaf


def test_the_packages_of_a_layer_import_each_other_one_way():
    """No cycle of leaves and packages: ``kernels`` never imports ``measures``, which
    imports it; ``clicks`` never imports ``clicklog``."""
    units: dict[str, set[str]] = {}
    for module, targets in _imports().items():
        units.setdefault(_unit(module), set()).update(_unit(t) for t in targets if _unit(t) != _unit(module))
    assert _cycles(units) == []


def test_the_leaves_inside_packages_live_in_core():
    """Every leaf is a top-level module or a module of ltr_cli.core, so the folder tree shows
    the lowest layer."""
    assert all(leaf.count(".") <= 1 or leaf.startswith("ltr_cli.core.") for leaf in LEAVES)


def test_few_modules_sit_at_the_top():
    """The top of the package holds the leaves every layer shares; the rest lives in packages."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top


def test_the_layer_rules_know_every_package():
    packages = {f"ltr_cli.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    ruled = {u for layer in LAYERS for u in layer}
    assert packages <= ruled, packages - ruled
    assert {m for m in _imports() if m in LEAVES} == set(LEAVES)


def test_reading_a_config_loads_no_heavy_numerics():
    """The learner registry imports every learner module: none may load scipy, numba or
    LightGBM at import time (they load when a batch fit or a kernel first runs)."""
    import subprocess
    import sys

    code = ("import sys, ltr_cli.config.experiment, ltr_cli.cli.app, ltr_cli.api, ltr_cli.neural.losses; "
            "print(sorted(m for m in ('scipy', 'numba', 'matplotlib', 'lightgbm', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
