"""Allow ``python -m ltr_cli``."""

from ltr_cli.cli import main

main()
