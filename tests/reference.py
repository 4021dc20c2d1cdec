"""Obviously-correct slow implementations the fast code is checked against."""

from __future__ import annotations

import itertools
import math

import numpy as np


def slam_reference(s, R, v, margin="constant", delta=1.0):
    """Eq. 9 and Eq. 13 with explicit loops over all pairs (O(m^2))."""
    m = len(s)
    value = 0.0
    grad = np.zeros(m)
    for i in range(m):
        b = []
        for j in range(m):
            if R[i] > R[j]:
                mar = delta if margin == "constant" else delta * (R[i] - R[j])
                b.append(mar + s[j] - s[i])
            else:
                b.append(0.0)
        k = int(np.argmax(b))
        if b[k] > 0:
            value += v[i] * b[k]
            if v[i] > 0:
                grad[k] += v[i]
                grad[i] -= v[i]
    return value, grad


def ndcg_reference(ranking, labels, k=None):
    m = len(ranking)
    n = m if k is None else min(k, m)
    dcg = sum((2.0 ** labels[ranking[i]] - 1) / math.log2(i + 2) for i in range(n))
    ideal = sorted(labels, reverse=True)
    idcg = sum((2.0 ** ideal[i] - 1) / math.log2(i + 2) for i in range(n))
    return dcg / idcg


def ideal_by_brute_force(labels, k):
    """Z_k(R) = max over all permutations (small m only)."""
    best = 0.0
    n = min(k, len(labels))
    for perm in itertools.permutations(range(len(labels))):
        best = max(best, sum((2.0 ** labels[perm[i]] - 1) / math.log2(i + 2) for i in range(n)))
    return best


def ap_reference(ranking, labels, threshold=0.0):
    rel = [labels[d] > threshold for d in ranking]
    r = sum(rel)
    total = 0.0
    for j in range(len(rel)):
        if rel[j]:
            total += sum(rel[: j + 1]) / (j + 1)
    return total / r


def parse_reference(text: str, n_features: int, base: int = 1, qid_from="token", group_sizes=None):
    """Line-by-line parse of an (uncompressed) SVMlight text into [(qid, X, y)].

    ``qid_from``: ``token``, ``comment`` or ``group`` (then ``group_sizes`` gives the
    documents per query and qids are the 1-based group numbers)."""
    queries = []
    group_of_line = []
    for g, n in enumerate(group_sizes or [], start=1):
        group_of_line += [str(g)] * n
    data_line = 0
    cur_qid, rows, labels = None, [], []
    for line in text.replace("\r\n", "\n").split("\n"):
        line = line.lstrip("\ufeff")
        body, _, comment = line.partition("#")
        toks = body.split()
        if not toks:
            continue
        label = float(toks[0])
        rest = toks[1:]
        if qid_from == "token":
            qid = rest[0][4:]
            rest = rest[1:]
        elif qid_from == "group":
            qid = group_of_line[data_line]
        else:
            qid = comment.split()[0]
        data_line += 1
        x = np.zeros(n_features)
        for t in rest:
            i, v = t.split(":")
            x[int(i) - base] = float(v)
        if qid != cur_qid:
            if cur_qid is not None:
                queries.append((cur_qid, np.array(rows), np.array(labels)))
            cur_qid, rows, labels = qid, [], []
        rows.append(x)
        labels.append(label)
    if cur_qid is not None:
        queries.append((cur_qid, np.array(rows), np.array(labels)))
    return queries
