"""Online learners. Each module holds a learner's implementation and, at its end, its
config model (its entry in :mod:`ltr_cli.learners.registry`, which builds it)."""
