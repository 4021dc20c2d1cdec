"""Experiment configs: the strict YAML loader, the pydantic building blocks, the dataset block and the experiment spec, with one-line validation errors."""
