"""Installs the suite's write guard (``write_guard``) in the Python processes the tests
start: only when the suite set ``LTR_TESTS_WRITES`` and ``LTR_TESTS_ROOT``."""

import os

if os.environ.get("LTR_TESTS_WRITES") and os.environ.get("LTR_TESTS_ROOT"):
    import write_guard

    write_guard.install(os.environ["LTR_TESTS_ROOT"], os.environ["LTR_TESTS_WRITES"])

# the environment's own sitecustomize, if any, still runs (this one shadows it on sys.path)
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402

_here = os.path.dirname(os.path.abspath(__file__))
_other = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if p and os.path.abspath(p) != _here])
if _other is not None and _other.loader is not None:
    _module = importlib.util.module_from_spec(_other)
    _other.loader.exec_module(_module)
