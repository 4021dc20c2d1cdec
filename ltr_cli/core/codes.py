"""Enumeration codes and status codes shared by the kernels and the Python side (numba-free:
the learners import it without loading numba; the kernels read these module constants as
compile-time constants).

A learner's fixed configuration reaches its round kernel as a float64 vector ``P``; each
block family names its own slots (``kernels/<family>_slots.py``, or the plugin's module).
Enumerations are small integers stored as floats.
"""

from __future__ import annotations

# --- enumerations ----------------------------------------------------------------------

# surrogates with a compiled step: one numbering for OGD and RTop-kF
SURROGATE_CODES = {"squared": 0, "listnet": 1, "kl": 2, "smoothdcg": 3, "ranksvm": 4}
SQUARED, LISTNET, KL, SMOOTHDCG, RANKSVM = 0, 1, 2, 3, 4
STEP_RULES = {"constant": 0, "inv-sqrt": 1}
MARGINS = {"constant": 0, "label-difference": 1}
# measure kernels (round_measures, stacked_measures): the kind of a row (kind, cut-off, threshold,
# no-relevant value, 2^gmax); the registry (ltr_cli.measures.registry) names each kind's code
MEASURE_NDCG, MEASURE_AP, MEASURE_PRECISION, MEASURE_ERR, MEASURE_RR = 0, 1, 2, 3, 4

# --- status of a round kernel (one convention for every learner) ----------------------------
NOT_FINITE = -1  # the step is not finite (the caller decides: error, or the authors' NaN)
UNCHANGED = 0  # no mistake / nothing to learn: w unchanged
UPDATED = 1  # ``out`` holds the new weights
ZERO_STEP = 2  # a mistake whose subgradient is zero: w unchanged

# --- how a ranking handed to a round kernel was sorted from the round's scores s ----------------
# (the paper SLAM weights need the score order: they read it from the ranking when they can)
RANKED_INPUT_ORDER = 0  # by the ranking kernel's input-order sort of s
RANKED_REVERSE_INPUT = 1  # by its reverse-input sort of s (tied scores in reverse index order)
RANKED_UNKNOWN = -1  # anything else (random ties, a ranking from elsewhere): sort s again

# --- the block driver (ltr_cli.kernels.loop): how a block stopped ----------------------------
BLOCK_DONE, BLOCK_NOT_FINITE_WEIGHTS, BLOCK_NOT_FINITE_STEP = 0, 1, 2

# --- the SVMlight scanner (ltr_cli.data.fastscan): status and qid modes --------------------------
SCAN_IRREGULAR = 1  # stop: the reference parser re-reads the file and names the line
SCAN_SLOW_FULL = 2  # more slow numbers than the slow list can hold: enlarge it and rescan the block
QID_TOKEN = 0  # qid from a "qid:" token (required)
QID_COMMENT = 1  # qid = first word of the "#" comment (a "qid:" token is skipped if present)
QID_NONE = 2  # group file: a "qid:" token is skipped if present, no qid span needed
