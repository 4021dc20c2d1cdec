"""A LambdaMART model's raw scores, compiled (reference: ``Tree.leaves`` and
``LightGBMModel.scores`` of :mod:`ltr_cli.results.gbdt`, the same rule in numpy).

The trees are packed one after another: tree t's internal nodes are ``node_off[t]:node_off[t+1]``
of ``feature``, ``threshold``, ``default_left``, ``missing``, ``left``, ``right`` (child links
local to the tree: ``c >= 0`` an internal node, ``c < 0`` the leaf ``~c``) and its leaves
``leaf_off[t]:leaf_off[t+1]`` of ``leaf_value``; ``depth`` (T,) bounds each walk (the parser
checked that the links form one tree and the features fit ``X``). ``X`` is already
zero-filtered. Each row's score is its leaf values added tree by tree in order, as the
reference adds them.
"""

from __future__ import annotations

from ltr_cli.kernels._numba import _CACHE, njit


@njit(cache=_CACHE)
def forest_scores(X, zero, node_off, leaf_off, depth, feature, threshold, default_left, missing, left, right,
                  leaf_value, out):
    """``out`` (n,) = the sum over trees of each row's leaf value (``zero``: the threshold
    below which |x| counts as zero for a node whose missing type is zero)."""
    for i in range(X.shape[0]):
        acc = 0.0
        for t in range(node_off.shape[0] - 1):
            base = node_off[t]
            node = 0
            if leaf_off[t + 1] - leaf_off[t] == 1:
                node = -1  # a single leaf
            steps = 0
            while node >= 0 and steps < depth[t]:
                k = base + node
                x = X[i, feature[k]]
                nan = x != x
                miss = missing[k]
                if nan and miss != 2:
                    x = 0.0
                if (miss == 1 and x >= -zero and x <= zero) or (miss == 2 and nan):
                    go_left = default_left[k]
                else:
                    go_left = x <= threshold[k]
                node = left[k] if go_left else right[k]
                steps += 1
            acc += leaf_value[leaf_off[t] + ~node]
        out[i] = acc
