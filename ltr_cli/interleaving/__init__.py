"""Interleaving and multileaving: comparing rankers online through one shown list.

A method (:class:`~ltr_cli.interleaving.base.Method`) ``make``s a shown list from k rankings
with a seeded generator, and ``credit``s a click vector on it: each ranker's credit and the
pairwise outcome matrix. Modules: the contract and the input checks (``base``), team-draft
(``team_draft``, k >= 2), balanced (``balanced``, k = 2), probabilistic (``probabilistic``,
k >= 2, softmax tau), pairwise-preference (``pairwise_preference``, k >= 2), and the names a
user gives (``methods``). The click-driven learners compare their candidates through these.
"""
