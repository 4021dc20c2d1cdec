"""Every Python child the package starts leaves the working folder off its ``sys.path``
(``python -P``): a ``numpy.py`` (or an ``ltr_cli/``) in the folder ``ltr`` is started from is
never imported by a child."""

from __future__ import annotations

import re
import subprocess
import sys

from ltr_cli.core.children import PYTHON
from tests.conftest import REPO

_PLANTED = "import os, sys\nopen(os.environ['OWNED'], 'w').write(' '.join(sys.argv))\nraise SystemExit(7)\n"


def test_no_child_is_started_with_the_interpreter_alone():
    """The children's commands all begin with ``PYTHON``; ``sys.executable`` appears nowhere
    else in the package (or in setup.py without ``-P``)."""
    found = []
    for path in sorted((REPO / "ltr_cli").rglob("*.py")):
        if path.name == "children.py" and path.parent.name == "core":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "sys.executable" in line:
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert found == []
    setup = (REPO / "setup.py").read_text()
    assert re.findall(r"\[sys\.executable, ([^,]+),", setup) == ['"-P"']


def test_a_module_planted_in_the_working_folder_never_runs_in_a_child(tmp_path):
    (tmp_path / "numpy.py").write_text(_PLANTED)
    (tmp_path / "ltr_cli").mkdir()
    (tmp_path / "ltr_cli" / "__init__.py").write_text(_PLANTED)
    owned = tmp_path / "OWNED"
    env = {"OWNED": str(owned), "PATH": "/usr/bin:/bin"}
    for argv in (["-c", "import numpy, ltr_cli; print(numpy.__file__)"], ["-m", "ltr_cli", "--help"]):
        done = subprocess.run([*PYTHON, *argv], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0 and not owned.exists(), (argv, done.stderr[-500:])
    # the same children without -P run the planted module (so the test would see it)
    done = subprocess.run([sys.executable, "-c", "import numpy"], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 7 and owned.exists()
