"""A run imports what it uses: an online run on generated data loads neither pandas, nor
numba on the reference path, nor the modules of learners, data kinds and options it does
not run (the fixed cost of every run, ``ltr bench --startup``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "configs" / "simulated_separable.yaml"

_SCRIPT = """
import json, runpy, sys
sys.argv = ["ltr", *json.loads(sys.argv[1])]
try:
    runpy.run_module("ltr_cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules_of(args: list[str], tmp_path: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(args)], capture_output=True, text=True,
                          cwd=tmp_path, env={**_env(), "LTR_KERNELS": "0"})
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["code"] in (0, None), done.stderr
    return set(said["modules"])


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "LTR_KERNELS"}


def test_a_one_round_online_run_imports_only_what_it_runs(tmp_path: Path) -> None:
    loaded = _modules_of(["run", str(DEMO), "-q", "--out", str(tmp_path / "out"),
                          "--set", "dataset.queries=1", "--set", "protocol.max_rounds=1"], tmp_path)
    assert (tmp_path / "out" / "simulated_separable").is_dir()
    for heavy in ("pandas", "numba", "matplotlib", "scipy", "lightgbm"):
        assert heavy not in loaded, f"a one-round online run imported {heavy}"
    unused = [m for m in loaded if m.startswith(("ltr_cli.learners.batch", "ltr_cli.data.sources.files",
                                                  "ltr_cli.data.svmlight", "ltr_cli.data.cache",
                                                  "ltr_cli.protocols.heldout", "ltr_cli.protocols.regret",
                                                  "ltr_cli.results.gbdt", "ltr_cli.learners.online.rtopkf"))]
    assert not unused, f"modules the demo does not use were imported: {unused}"
    assert "ltr_cli.learners.online.perceptron" in loaded and "ltr_cli.learners.online.ogd" in loaded


@pytest.mark.parametrize("setting, module", [
    ("learners.extra.type=rtopkf", "ltr_cli.learners.online.rtopkf"),
    ("protocol.log_regret=true", "ltr_cli.protocols.regret"),
])
def test_what_a_config_names_is_imported(tmp_path: Path, setting: str, module: str) -> None:
    """The lazy registry and the options load their modules when a config asks for them."""
    extra = ["--set", "learners.extra.surrogate=squared"] if "rtopkf" in setting else []
    loaded = _modules_of(["run", str(DEMO), "-q", "--out", str(tmp_path / "out"), "--set", "dataset.queries=2",
                          "--set", "protocol.max_rounds=2", "--set", setting, *extra], tmp_path)
    assert module in loaded
