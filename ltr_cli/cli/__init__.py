"""The ``ltr`` command line: the Typer app, its error boundary and the shared option types."""
