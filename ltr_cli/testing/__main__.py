"""``python -m ltr_cli.testing [KIND ...] [pytest options]``: the shipped conformance suites
(:mod:`ltr_cli.testing`) on every installed extension, through pytest."""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import pytest

    from ltr_cli.testing import kinds

    chosen = [a for a in argv if a in kinds()] or list(kinds())
    rest = [a for a in argv if a not in kinds()]
    entries = Path(__file__).with_name("suites.py")
    tests = [f"{entries}::test_{kind}" for kind in chosen]
    return int(pytest.main(["-p", "no:cacheprovider", *tests, *rest]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
