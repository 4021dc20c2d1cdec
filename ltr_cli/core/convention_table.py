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

# gain of a label without a gain table: 2^r - 1 (the papers', LightGBM's, allRank's) or r
# itself (trec_eval's and ranx's ndcg, Jarvelin and Kekalainen's)
GAIN_RULES = {"exp2": "2^r-1", "linear": "r"}

# name -> gain table (None: the gain rule on any real label), gain rule, relevant labels
# (None: label > threshold), reported cut-offs, k beyond the list, MeanNDCG, the maximum
# grade (ERR's g_max: 4 for MSLR and Yahoo's 0-4 grades, 2 for LETOR's 0-2), the value of a
# query without relevant documents (see ../shared/METRIC-CONVENTIONS.md)
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"gain_table": None, "gain_rule": "exp2", "relevant": None, "positions": 10, "beyond_list": "truncate",
              "mean_ndcg": False, "max_grade": 4, "no_relevant": "zero"},
    "letor3": {"gain_table": _LETOR_GAINS, "gain_rule": "exp2", "relevant": frozenset({1, 2}), "positions": 16,
               "beyond_list": "omit", "mean_ndcg": False, "max_grade": 2, "no_relevant": "zero"},
    "letor4": {"gain_table": _LETOR_GAINS, "gain_rule": "exp2", "relevant": frozenset({1, 2}), "positions": 10,
               "beyond_list": "zero", "mean_ndcg": True, "max_grade": 2, "no_relevant": "zero"},
    "mslr": {"gain_table": {0: 0.0, 1: 1.0, 2: 3.0, 3: 7.0, 4: 15.0}, "gain_rule": "exp2",
             "relevant": frozenset({2, 3, 4}), "positions": 10, "beyond_list": "zero", "mean_ndcg": True,
             "max_grade": 4, "no_relevant": "zero"},
    "lightgbm": {"gain_table": None, "gain_rule": "exp2", "relevant": None, "positions": 10,
                 "beyond_list": "truncate", "mean_ndcg": False, "max_grade": 4, "no_relevant": "one"},
    "trec_eval": {"gain_table": None, "gain_rule": "linear", "relevant": None, "positions": 10,
                  "beyond_list": "truncate", "mean_ndcg": False, "max_grade": 4, "no_relevant": "zero"},
    "ranx": {"gain_table": None, "gain_rule": "linear", "relevant": None, "positions": 10,
             "beyond_list": "truncate", "mean_ndcg": False, "max_grade": 4, "no_relevant": "zero"},
    "allrank": {"gain_table": None, "gain_rule": "exp2", "relevant": None, "positions": 10,
                "beyond_list": "truncate", "mean_ndcg": False, "max_grade": 4, "no_relevant": "one"},
}
CONVENTION_NAMES: tuple[str, ...] = tuple(PRESETS)

# what each preset reproduces, and how it may still differ (ties)
SOURCES: dict[str, str] = {
    "paper": "the perceptron paper's Eq. 1 and 2",
    "letor3": "LETOR 3.0's Eval-Score-3.0.pl",
    "letor4": "LETOR 4.0's Eval-Score-4.0.pl",
    "mslr": "Microsoft's Eval-Score-MSLR.pl",
    "lightgbm": "LightGBM's ndcg and map metrics (default label_gain; ties in file order, as its stable sort)",
    "trec_eval": "trec_eval's ndcg_cut, map and P (pytrec_eval); trec_eval breaks ties by docno, descending",
    "ranx": "ranx's ndcg, map and precision (ndcg_burges is paper); ranx's sort leaves tie order unspecified",
    "allrank": "allRank's ndcg (filler value 1, padding ignored; float32, so equal to about 1e-6)",
}
