"""The table of metric conventions and policies, as plain data (a leaf: no numpy, so the
CLI derives its choices from it without loading the numeric stack). The objects built
from it are :mod:`ltr_cli.measures.conventions`; what each field means is documented there.
"""

from __future__ import annotations

from typing import Any


TIE_POLICIES: tuple[str, ...] = ("input-order", "reverse-input", "random", "pessimistic")
NO_RELEVANT_POLICIES: tuple[str, ...] = ("zero", "one", "skip")

# how NDCG@k and P@k treat k > m (a list shorter than the cut-off)
BEYOND_LIST = {"truncate": "over min(k, m) positions; P@k divided by k",
               "zero": "missing positions count as not relevant (NDCG@k 0 for k > m)",
               "omit": "NDCG@k and P@k are not defined for k > m (left out of the query's row)"}

_LETOR_GAINS = {0: 0.0, 1: 1.0, 2: 3.0}

# name -> gain table (None: 2^r - 1), relevant labels (None: label > threshold), reported
# cut-offs, k beyond the list, MeanNDCG, the maximum grade (ERR's g_max: 4 for MSLR and Yahoo's
# 0-4 grades, 2 for LETOR's 0-2) (see ../shared/METRIC-CONVENTIONS.md)
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"gain_table": None, "relevant": None, "positions": 10, "beyond_list": "truncate",
              "mean_ndcg": False, "max_grade": 4},
    "letor3": {"gain_table": _LETOR_GAINS, "relevant": frozenset({1, 2}), "positions": 16,
               "beyond_list": "omit", "mean_ndcg": False, "max_grade": 2},
    "letor4": {"gain_table": _LETOR_GAINS, "relevant": frozenset({1, 2}), "positions": 10,
               "beyond_list": "zero", "mean_ndcg": True, "max_grade": 2},
    "mslr": {"gain_table": {0: 0.0, 1: 1.0, 2: 3.0, 3: 7.0, 4: 15.0}, "relevant": frozenset({2, 3, 4}),
             "positions": 10, "beyond_list": "zero", "mean_ndcg": True, "max_grade": 4},
}
CONVENTION_NAMES: tuple[str, ...] = tuple(PRESETS)
