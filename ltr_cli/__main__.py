"""Allow ``python -m ltr_cli``."""

from ltr_cli.cli.app import main

main()
