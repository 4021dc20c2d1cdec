"""Ranking measures: the metric functions, the conventions they are computed under, and evaluation of many queries at once."""
