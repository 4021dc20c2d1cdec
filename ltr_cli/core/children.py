"""How the package starts a Python child process: ``python -P``.

``python -m MODULE`` and ``python -c CODE`` put the working folder first on ``sys.path``
(``python FILE``: the file's folder), so a ``numpy.py`` in the folder a user starts ``ltr``
from would be imported by the child in place of numpy, and run as that user. ``-P``
(Python 3.11) leaves that entry out and changes nothing else: ``PYTHONPATH``, the user's
site-packages and the environment are kept, all of which ``-I`` would drop (a package
installed with ``pip install --user`` would not import). Every child the package starts
begins its command with :data:`PYTHON`; ``tests/test_children.py`` checks that no other
spelling is left.
"""

from __future__ import annotations

import sys

#: the start of every Python child's command: this interpreter, without the unsafe path
PYTHON: tuple[str, ...] = (sys.executable, "-P")
