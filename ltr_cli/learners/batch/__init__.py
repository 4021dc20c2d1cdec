"""Batch learning to rank: solvers, structured losses and the learners of the
direct-optimisation paper (SVMmap, AdaRank, PermuRank, RankSVM, RankBoost)."""
