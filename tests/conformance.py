"""The online-learner conformance suite, derived from the learner registry (plugins
included) as scikit-learn's ``check_estimator`` is from an estimator: every registered
online learner, with each of its declared ``examples``, must

* give the same results on the reference (kernels off), round-by-round and block paths;
* give the same results alone as in a group with other learners;
* resume after a kill byte for byte;
* keep its whole state through a checkpoint (``state_fields``).

``tests/test_conformance.py`` runs it on the registry of this process; a plugin package
is checked by installing it and running that file (``tests/test_plugins.py`` does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from ltr_cli.learners.registry import REGISTRY, SOURCES

FEATURES = 12


def examples() -> dict[str, dict]:
    """Every registered online learner's examples as ``{name: learner config}``; the name is
    the type with the example's index (``listnet1``), a valid learner name."""
    out: dict[str, dict] = {}
    for type_name, cls in REGISTRY.items():
        if cls.kind != "online":
            continue
        for i, settings in enumerate(cls.examples):
            out[f"{type_name}{i}"] = {"type": type_name, **settings}
    return out


def source(name: str) -> str:
    """Where an example's learner comes from (``built-in`` or ``plugin <distribution>``)."""
    return SOURCES[examples()[name]["type"]]


def write_data(path: Path, queries: int = 60, features: int = FEATURES, seed: int = 0) -> Path:
    """An SVMlight file with graded labels, tied feature values and queries without a
    relevant document."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(queries):
        m = int(rng.integers(2, 25))
        zero = q % 7 == 3
        for _ in range(m):
            label = 0 if zero else int(rng.integers(0, 5))
            feats = rng.integers(0, 4, size=features) / 3.0 + (label * 0.2 if q % 2 else 0.0)
            lines.append(f"{label} qid:{q + 1} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(feats)))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(path: Path, data: list[Path], learners: dict[str, dict], protocol: str = "{passes: 2}",
                 ties: str = "reverse-input", no_relevant: str = "one", fidelity: str = "authors-code") -> Path:
    """A run of ``learners`` (name -> config) on ``data``; learner configs are written as
    JSON, which is YAML."""
    body = "\n".join(f"  {name}: {json.dumps(spec)}" for name, spec in learners.items())
    path.write_text(f"""experiment: conformance
seed: 3
fidelity: {fidelity}
dataset: {{kind: files, features: {FEATURES}, files: [{', '.join(map(str, data))}]}}
protocol: {protocol}
metrics: {{names: [ndcg@10, ap, p@5, ndcg], ties: {ties}, no_relevant: {no_relevant}}}
learners:
{body}
""")
    return path


def run_folders(out: Path) -> dict[str, Path]:
    """Learner name -> its run folder, of a results folder with one experiment."""
    return {p.name.rsplit("-", 1)[0]: p for p in (out / "conformance").iterdir()
            if p.is_dir() and not p.name.startswith(".")}


def same_files(a: Path, b: Path, files: tuple[str, ...] = ("rounds.parquet", "models.json")) -> list[str]:
    """The files of two run folders whose bytes differ."""
    return [f for f in files if (a / f).read_bytes() != (b / f).read_bytes()]


# a run killed by its second checkpoint save, in a child process (os._exit: no cleanup at all)
_KILL_AT_SECOND_SAVE = """
import os, sys
from ltr_cli.cli import app as cli
from ltr_cli.protocols.checkpoint import Checkpointer
real = Checkpointer.save
saves = []
def save(self, state):
    real(self, state)
    saves.append(state.t)
    if len(saves) == 2:
        os._exit(9)
Checkpointer.save = save
sys.argv = ["ltr", "run", sys.argv[1], "--out", sys.argv[2], "-q"]
cli.main()
"""


def run_killed(cfg: Path, out: Path) -> subprocess.CompletedProcess:
    """``ltr run`` killed right after its second checkpoint (exit status 9)."""
    return subprocess.run([sys.executable, "-c", _KILL_AT_SECOND_SAVE, str(cfg), str(out)],
                          capture_output=True, text=True, env=os.environ.copy())
