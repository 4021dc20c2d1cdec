"""ltr-cli: reproducible learning-to-rank experiments from the command line."""

__version__ = "0.1.0"
