"""Click logs: simulated sessions of a logging policy, and what they estimate.

``policies`` shows each session's list (the logging ranking, a shuffle of its top k, or a
swap of its top document with a random position), ``simulate`` draws the sessions' clicks
with a click model of :mod:`ltr_cli.clicks`, ``logfile`` writes and reads the Parquet log,
``propensity`` estimates the examination propensities from a log (result randomisation and
EM), and ``ips`` gives inverse-propensity estimates of a ranker's DCG from a log.
"""
