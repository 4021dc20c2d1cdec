"""The online-learner conformance suite's helpers, shipped in the package
(:mod:`ltr_cli.testing.online`); kept here for the tests that import them."""

from ltr_cli.testing.online import (  # noqa: F401 - re-exported
    FEATURES, examples, run_folders, run_killed, same_files, source, write_config, write_data,
)
