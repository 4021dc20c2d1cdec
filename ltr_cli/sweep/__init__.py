"""``ltr sweep``: a grid over config keys, its tasks and their executors."""
