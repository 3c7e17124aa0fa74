"""Multiway trees for ID3 (Quinlan 1986) and C4.5 (Quinlan 1993): the tree and its kernels.

CART's trees are binary and live in :mod:`silva.engine.tree`. ID3 and C4.5 split a node
into one branch per value of a categorical feature, so they have their own flat-array
representation, :class:`MultiwayTree`, and compiled kernels:

- :func:`id3_gains`: information gain (entropy in bits) of the multiway split on every
  feature at one node, from counts per (feature value, class);
- :func:`c45_evaluate`: C4.5's gain and split information of every feature at one node,
  with unknown values left out of the gain, which is scaled by the known fraction
  (Quinlan 1993, sec. 3.1), and the best binary threshold of each continuous feature;
- :func:`predict_proba_multiway` and :func:`apply_multiway`: prediction over the tree,
  where a missing value at a C4.5 node blends the class distributions of all branches by
  the fraction of the node's known training weight that took each branch;
- :func:`pessimistic_prune`: C4.5's error-based pruning by subtree replacement;
- :func:`branch_class_table` and :func:`contingency_chi2`: the branches x classes table
  of a chosen split and its Pearson chi-square test of independence, for CHAID-style
  significance stopping (Kass 1980).

The growth loops (one Python iteration per node, calling the compiled node kernels) are
in :mod:`silva.classic`; a node's whole split search is one compiled call.

Layout of a :class:`MultiwayTree`
---------------------------------
Node ``i`` is described by the ``i``-th entry of the node arrays:

- ``kind``: ``LEAF`` (-1), ``CATEGORICAL`` (branch ``b`` takes category code ``b``),
  ``INTERVALS`` (ID3's discretised numeric feature: branch ``b`` takes the values in
  bin ``b``, whose edges are ``bin_edges[feature, :n_bin_edges[feature]]``; a value
  ``x`` is in the bin numbered by how many edges are ``< x``), or ``THRESHOLD`` (C4.5's
  binary test: branch 0 takes ``x <= threshold``, branch 1 ``x > threshold``);
- ``feature`` (-2 at leaves), ``threshold`` (-2 unless ``THRESHOLD``);
- ``n_branches`` and ``first_branch``: node ``i``'s branches are entries
  ``first_branch[i] .. first_branch[i] + n_branches[i] - 1`` of the branch arrays
  ``branch_child`` (the child's node id, or -1 for a branch that had no training case:
  a sample taking it is classified by node ``i``'s own class distribution) and
  ``branch_fraction`` (the share of node ``i``'s known training weight that took it);
- ``missing_child``: where a missing value goes (ID3 treats "missing" as one more value
  of the feature), or -1. At a node with ``missing_child == -1`` a missing value is
  blended over the branches when ``blend_missing`` (C4.5), and otherwise classified by
  the node's own class distribution;
- ``value`` (``(node_count, 1, n_classes)``: weighted class fractions), ``impurity``
  (entropy in bits), ``n_node_samples`` (training cases reaching the node; a C4.5 case
  with a missing value counts in every branch it was sent down) and
  ``weighted_n_node_samples`` (their total, fractional, weight).

A child always has a larger id than its parent.
"""

import numba as nb
import numpy as np

from silva.engine.jit import kernel
from silva.engine.significance import chi2_sf
from silva.engine.sparse import is_sparse, rowwise
from silva.engine.tree_interface import MISSING_BRANCH, Split, branch_test

LEAF = -1
CATEGORICAL = 0
INTERVALS = 1
THRESHOLD = 2

_LOG_2 = np.log(2.0)
# Gains and weights are sums of floats; below this they count as zero (C4.5's Epsilon).
EPSILON = 1e-9
# Branch codes returned by _branch for values that take no value branch.
_MISSING = -1
_UNSEEN = -2


@kernel()
def entropy_bits(counts):
    """Entropy in bits of a vector of (weighted) class counts; 0 for an empty vector."""
    total = 0.0
    for c in counts:
        total += c
    if total <= 0.0:
        return 0.0
    h = 0.0
    for c in counts:
        if c > 0.0:
            p = c / total
            h -= p * np.log(p)
    return h / _LOG_2


@kernel()
def _split_info_term(weight, total):
    if weight <= 0.0:
        return 0.0
    p = weight / total
    return -p * np.log(p) / _LOG_2


@kernel()
def id3_gains(codes, sample_indices, y, weights, n_classes, n_codes, allowed):
    """Information gain in bits of the multiway split on each feature at one node.

    Parameters
    ----------
    codes : (n_features, n_samples) uint8 or uint16
        Bin codes (category codes; discretised numeric values; the missing bin).
    sample_indices : int64 array
        The node's samples.
    y, weights : class index (int64) and weight of every sample.
    n_codes : int
        One more than the largest code.
    allowed : uint8 array (n_features,)
        Features that may still be tested (ID3 never tests a feature twice on a path).

    Returns
    -------
    gains : (n_features,) float64, ``-inf`` for features not allowed.
    """
    n_features = codes.shape[0]
    gains = np.full(n_features, -np.inf)
    parent = np.zeros(n_classes)
    for i in sample_indices:
        parent[y[i]] += weights[i]
    total = parent.sum()
    if total <= 0.0:
        return gains
    h_parent = entropy_bits(parent)
    table = np.zeros((n_codes, n_classes))
    for f in range(n_features):
        if not allowed[f]:
            continue
        table[:, :] = 0.0
        for i in sample_indices:
            table[codes[f, i], y[i]] += weights[i]
        conditional = 0.0
        for v in range(n_codes):
            weight_v = table[v].sum()
            if weight_v > 0.0:
                conditional += weight_v / total * entropy_bits(table[v])
        gains[f] = h_parent - conditional
    return gains


@kernel()
def _largest_at_most(grid, n, value):
    """Largest of ``grid[:n]`` (sorted, increasing) that is ``<= value``."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if grid[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return grid[lo - 1]


@kernel()
def _c45_feature(X, f, sample_indices, node_weights, y, n_classes, is_categorical, n_values,
                 min_objects, value_grid, n_grid, total):
    """C4.5's ``(gain, split_info, threshold)`` of feature ``f`` at one node (see
    :func:`c45_evaluate`); gain is ``-inf`` when the feature offers no possible test."""
    n_node = sample_indices.shape[0]
    known_x = np.empty(n_node)
    known_y = np.empty(n_node, dtype=np.int64)
    known_w = np.empty(n_node)
    known_counts = np.zeros(n_classes)
    n_known = 0
    for j in range(n_node):
        x = X[sample_indices[j], f]
        if not np.isnan(x):
            known_x[n_known] = x
            known_y[n_known] = y[sample_indices[j]]
            known_w[n_known] = node_weights[j]
            known_counts[known_y[n_known]] += node_weights[j]
            n_known += 1
    known = known_counts.sum()
    if n_known < 2 or known <= EPSILON:
        return -np.inf, 0.0, -2.0
    unknown = max(total - known, 0.0)
    h_known = entropy_bits(known_counts)
    if is_categorical[f]:
        table = np.zeros((n_values[f], n_classes))
        for j in range(n_known):
            table[np.int64(known_x[j]), known_y[j]] += known_w[j]
        conditional = 0.0
        info = _split_info_term(unknown, total)
        reasonable = 0
        for v in range(n_values[f]):
            weight_v = table[v].sum()
            if weight_v >= min_objects - EPSILON:
                reasonable += 1
            if weight_v > 0.0:
                conditional += weight_v / known * entropy_bits(table[v])
                info += _split_info_term(weight_v, total)
        if reasonable < 2:
            return -np.inf, 0.0, -2.0
        return known / total * (h_known - conditional), info, -2.0
    order = np.argsort(known_x[:n_known])
    left = np.zeros(n_classes)
    right = np.zeros(n_classes)
    left_weight = 0.0
    best = -np.inf
    best_left = 0.0
    best_cut = -1
    for r in range(n_known - 1):
        j = order[r]
        left[known_y[j]] += known_w[j]
        left_weight += known_w[j]
        if known_x[j] == known_x[order[r + 1]]:
            continue
        right_weight = known - left_weight
        if left_weight < min_objects - EPSILON or right_weight < min_objects - EPSILON:
            continue
        for k in range(n_classes):
            right[k] = known_counts[k] - left[k]
        candidate = h_known - (left_weight / known * entropy_bits(left)
                               + right_weight / known * entropy_bits(right))
        if candidate > best + EPSILON:
            best = candidate
            best_cut = r
            best_left = left_weight
    if best_cut < 0:
        return -np.inf, 0.0, -2.0
    info = (_split_info_term(best_left, total) + _split_info_term(known - best_left, total)
            + _split_info_term(unknown, total))
    low = known_x[order[best_cut]]
    high = known_x[order[best_cut + 1]]
    threshold = _largest_at_most(value_grid[f], n_grid[f], low / 2.0 + high / 2.0)
    return known / total * best, info, threshold


@kernel(parallel=True)
def _c45_features_parallel(X, sample_indices, node_weights, y, n_classes, is_categorical,
                           n_values, allowed, min_objects, value_grid, n_grid, total, gain,
                           split_info, threshold):
    # Only the loop over features is parallel: with parallel=True numba would also turn
    # every array allocation into a parallel region, each costing a thread wake-up.
    for f in nb.prange(X.shape[1]):
        if allowed[f]:
            # np.int64(f): prange's index is unsigned, and an unsigned f would compile
            # _c45_feature a second time beside the serial loop's int64 one.
            gain[f], split_info[f], threshold[f] = _c45_feature(
                X, np.int64(f), sample_indices, node_weights, y, n_classes, is_categorical,
                n_values, min_objects, value_grid, n_grid, total)


@kernel()
def c45_evaluate(X, sample_indices, node_weights, y, n_classes, is_categorical, n_values,
                 allowed, min_objects, value_grid, n_grid, parallel_min_work):
    """C4.5's information gain and split information of every feature at one node.

    Follows Quinlan (1993, ch. 2-3). Cases whose value of the feature is unknown (NaN)
    take no part in the gain, which is computed on the known cases and multiplied by
    their share ``F`` of the node's weight; the split information counts the unknown
    cases as one more subset. A categorical feature splits into one branch per code and
    is a possible test only if at least two branches get ``min_objects`` weight or more.
    A continuous feature is tested against the threshold with the largest gain among
    cuts between consecutive distinct known values that leave ``min_objects`` or more
    weight on each side; the threshold is, as in C4.5, the largest value of the feature
    in the whole training set (``value_grid``) that does not exceed the midpoint of the
    cut, so that every threshold is a real training value.

    Parameters
    ----------
    X : (n_samples, n_features) float64, NaN for unknown, category codes as floats.
    sample_indices : int64 array of the node's cases; ``node_weights`` their (fractional)
        weights at this node, in the same order.
    y : int64 class index of every sample.
    is_categorical, allowed : uint8 per feature.
    n_values : int64 per feature, the number of category codes.
    min_objects : float, C4.5's MINOBJS.
    value_grid, n_grid : sorted distinct training values of each feature, padded.
    parallel_min_work : int
        Features are evaluated in parallel when the node's samples times the features
        reach this; each feature is independent, so the result does not depend on the
        number of threads.

    Returns
    -------
    gain, split_info, threshold : (n_features,) float64; ``gain`` is ``-inf`` where the
    feature is not a possible test.
    """
    n_features = X.shape[1]
    gain = np.full(n_features, -np.inf)
    split_info = np.zeros(n_features)
    threshold = np.full(n_features, -2.0)
    total = 0.0
    for j in range(sample_indices.shape[0]):
        total += node_weights[j]
    if total <= 0.0:
        return gain, split_info, threshold
    if sample_indices.shape[0] * n_features >= parallel_min_work:
        _c45_features_parallel(X, sample_indices, node_weights, y, n_classes,
                               is_categorical, n_values, allowed, min_objects, value_grid,
                               n_grid, total, gain, split_info, threshold)
    else:
        for f in range(n_features):
            if allowed[f]:
                gain[f], split_info[f], threshold[f] = _c45_feature(
                    X, f, sample_indices, node_weights, y, n_classes, is_categorical,
                    n_values, min_objects, value_grid, n_grid, total)
    return gain, split_info, threshold


@kernel(inline="always")
def _branch(x, node, kind, feature, threshold, n_branches, bin_edges, n_bin_edges):
    """Branch index of value ``x`` at ``node``; _MISSING for NaN, _UNSEEN for a category
    code that has no branch (negative, non-integer, or beyond the codes seen at fit)."""
    if np.isnan(x):
        return _MISSING
    k = kind[node]
    if k == THRESHOLD:
        return 0 if x <= threshold[node] else 1
    if k == INTERVALS:
        f = feature[node]
        lo = 0
        hi = n_bin_edges[f]
        while lo < hi:  # number of edges < x
            mid = (lo + hi) // 2
            if bin_edges[f, mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return lo
    if x < 0 or x >= n_branches[node] or x != np.floor(x):
        return _UNSEEN
    return np.int64(x)


@kernel(parallel=True)
def predict_proba_multiway(X, kind, feature, threshold, first_branch, n_branches,
                           branch_child, branch_fraction, missing_child, blend_missing,
                           bin_edges, n_bin_edges, value):
    """Class probabilities of every row of X (parallel over blocks of rows).

    A row ends at a leaf, or at an inner node whose test it cannot take (an unseen
    category, a branch without training cases, a missing value where the node has no
    missing branch and does not blend); it gets that node's class distribution. With
    ``blend_missing``, a missing value at a node sends the row down every branch with
    the branch's training fraction as weight, and the row's probabilities are the
    weighted sum of what the branches give (Quinlan 1993, sec. 3.3).
    """
    n_rows = X.shape[0]
    n_nodes = kind.shape[0]
    n_classes = value.shape[1]
    out = np.zeros((n_rows, n_classes))
    block = 256
    n_blocks = (n_rows + block - 1) // block
    for b in nb.prange(n_blocks):
        # Each node is pushed at most once per row: node_count bounds the stack.
        stack_node = np.empty(n_nodes, dtype=np.int64)
        stack_weight = np.empty(n_nodes)
        for i in range(b * block, min((b + 1) * block, n_rows)):
            top = 1
            stack_node[0] = 0
            stack_weight[0] = 1.0
            while top > 0:
                top -= 1
                node = stack_node[top]
                weight = stack_weight[top]
                if kind[node] == LEAF:
                    for k in range(n_classes):
                        out[i, k] += weight * value[node, k]
                    continue
                branch = _branch(X[i, feature[node]], node, kind, feature, threshold,
                                 n_branches, bin_edges, n_bin_edges)
                child = -1
                if branch >= 0:
                    child = branch_child[first_branch[node] + branch]
                elif branch == _MISSING:
                    child = missing_child[node]
                    if child < 0 and blend_missing:
                        pushed = False
                        for c in range(n_branches[node]):
                            slot = first_branch[node] + c
                            if branch_child[slot] >= 0 and branch_fraction[slot] > 0.0:
                                stack_node[top] = branch_child[slot]
                                stack_weight[top] = weight * branch_fraction[slot]
                                top += 1
                                pushed = True
                        if pushed:
                            continue
                if child >= 0:
                    stack_node[top] = child
                    stack_weight[top] = weight
                    top += 1
                else:
                    for k in range(n_classes):
                        out[i, k] += weight * value[node, k]
    return out


@kernel(parallel=True)
def apply_multiway(X, kind, feature, threshold, first_branch, n_branches, branch_child,
                   missing_child, bin_edges, n_bin_edges):
    """The node where each row's single path ends: a leaf, or the first inner node whose
    test the row cannot take alone (unseen category, empty branch, or a missing value
    with no missing branch; at a C4.5 node that is where the blend starts)."""
    n_rows = X.shape[0]
    out = np.empty(n_rows, dtype=np.int64)
    for i in nb.prange(n_rows):
        node = 0
        while kind[node] != LEAF:
            branch = _branch(X[i, feature[node]], node, kind, feature, threshold, n_branches,
                             bin_edges, n_bin_edges)
            child = -1
            if branch >= 0:
                child = branch_child[first_branch[node] + branch]
            elif branch == _MISSING:
                child = missing_child[node]
            if child < 0:
                break
            node = child
        out[i] = node
    return out


@kernel()
def pessimistic_prune(kind, first_branch, n_branches, branch_child, missing_child,
                      leaf_errors):
    """C4.5's error-based pruning by subtree replacement (Quinlan 1993, sec. 4.2).

    ``leaf_errors[i]`` is the predicted number of errors if node ``i`` were a leaf,
    ``N * U_CF(E, N)``. Bottom-up (children have larger ids than their parents), a
    subtree's predicted errors are the sum over its leaves; a node becomes a leaf when
    its own predicted errors are no more than its subtree's plus 0.1 (C4.5's margin).

    Returns ``(pruned, subtree_errors)``: which inner nodes became leaves, and the
    predicted errors of every node's subtree after pruning.
    """
    n_nodes = kind.shape[0]
    pruned = np.zeros(n_nodes, dtype=np.bool_)
    subtree = np.zeros(n_nodes)
    for node in range(n_nodes - 1, -1, -1):
        if kind[node] == LEAF:
            subtree[node] = leaf_errors[node]
            continue
        total = 0.0
        for c in range(n_branches[node]):
            child = branch_child[first_branch[node] + c]
            if child >= 0:
                total += subtree[child]
        if missing_child[node] >= 0:
            total += subtree[missing_child[node]]
        if leaf_errors[node] <= total + 0.1:
            pruned[node] = True
            subtree[node] = leaf_errors[node]
        else:
            subtree[node] = total
    return pruned, subtree


def branch_class_table(branch, y, weights, n_branches, n_classes):
    """``(n_branches, n_classes)`` table of the weights of the cases per (branch, class).

    ``branch`` holds each case's branch index; cases outside ``0 .. n_branches - 1``
    (C4.5's unknown values, coded -1; categories without a branch) take no branch and
    are left out.
    """
    branch = np.asarray(branch, dtype=np.int64)
    takes = (branch >= 0) & (branch < n_branches)
    cell = branch[takes] * n_classes + np.asarray(y, dtype=np.int64)[takes]
    return np.bincount(cell, weights=np.asarray(weights, dtype=np.float64)[takes],
                       minlength=n_branches * n_classes).reshape(n_branches, n_classes)


@kernel()
def contingency_chi2(table):
    """Pearson's chi-square test of independence of the rows and columns of ``table``.

    ``table[r, k]`` is the (weighted) count of the cases of branch ``r`` and class ``k``.
    Rows and columns whose total is zero are left out, so with ``R'`` non-empty branches
    and ``K'`` classes present the statistic ``sum (O - E)**2 / E``, ``E`` the product of
    the margins over the total, has ``(R' - 1)(K' - 1)`` degrees of freedom under
    independence (Pearson 1900; Agresti 2002, sec. 3.2), and the p-value is the
    chi-square survival function at the statistic. This is the test CHAID (Kass 1980)
    makes of a split, here without its Bonferroni correction and without merging
    categories; it equals ``scipy.stats.chi2_contingency(table, correction=False)``.

    Returns
    -------
    statistic, df, p_value : float, int, float
        ``p_value`` is 1.0 when ``df == 0`` (one branch or one class: nothing to test).
    """
    n_rows, n_columns = table.shape
    row_total = np.zeros(n_rows)
    column_total = np.zeros(n_columns)
    for r in range(n_rows):
        for k in range(n_columns):
            row_total[r] += table[r, k]
            column_total[k] += table[r, k]
    total = 0.0
    n_full_rows = 0
    n_full_columns = 0
    for r in range(n_rows):
        total += row_total[r]
        if row_total[r] > 0.0:
            n_full_rows += 1
    for k in range(n_columns):
        if column_total[k] > 0.0:
            n_full_columns += 1
    df = (n_full_rows - 1) * (n_full_columns - 1)
    if df <= 0 or total <= 0.0:
        return 0.0, 0, 1.0
    statistic = 0.0
    for r in range(n_rows):
        if row_total[r] <= 0.0:
            continue
        for k in range(n_columns):
            if column_total[k] <= 0.0:
                continue
            expected = row_total[r] * column_total[k] / total
            difference = table[r, k] - expected
            statistic += difference * difference / expected
    return statistic, df, chi2_sf(statistic, float(df))


def binomial_upper_limit(errors, n, confidence):
    """C4.5's ``U_CF(E, N)``: the upper limit of the ``confidence`` one-sided binomial
    interval for the error rate after ``E`` errors in ``N`` cases (Quinlan 1993, sec.
    4.2): the rate ``p`` with ``P(X <= E | N, p) = CF``, extended to fractional counts
    through the regularised incomplete beta function (``p = I^-1_{1-CF}(E + 1, N - E)``).
    Vectorised; 0 where ``N <= 0``.
    """
    from scipy.special import betaincinv

    errors = np.asarray(errors, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros(np.broadcast(errors, n).shape)
    ok = n > EPSILON
    e = np.clip(errors[ok] if errors.ndim else np.full(ok.sum(), float(errors)), 0.0, None)
    m = n[ok] if n.ndim else np.full(ok.sum(), float(n))
    e = np.minimum(e, m)
    full = m - e <= EPSILON
    rate = np.ones(e.shape)
    rate[~full] = betaincinv(e[~full] + 1.0, m[~full] - e[~full], 1.0 - confidence)
    out[ok] = rate
    return out


class MultiwayTree:
    """A fitted ID3 or C4.5 tree (layout in the module docstring) and its kernels.

    Implements :class:`silva.engine.tree_interface.TreeInterface`.
    """

    multiway = True

    def __init__(self, *, n_features, n_classes, kind, feature, threshold, first_branch,
                 n_branches, branch_child, branch_fraction, missing_child, value, impurity,
                 n_node_samples, weighted_n_node_samples, blend_missing, bin_edges,
                 n_bin_edges, value_names=None):
        self.n_features = int(n_features)
        self.n_classes = np.atleast_1d(np.asarray(n_classes, dtype=np.intp))
        self.n_outputs = 1
        self.kind = np.ascontiguousarray(kind, dtype=np.int64)
        self.feature = np.ascontiguousarray(feature, dtype=np.int64)
        self.threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        self.first_branch = np.ascontiguousarray(first_branch, dtype=np.int64)
        self.n_branches = np.ascontiguousarray(n_branches, dtype=np.int64)
        self.branch_child = np.ascontiguousarray(branch_child, dtype=np.int64)
        self.branch_fraction = np.ascontiguousarray(branch_fraction, dtype=np.float64)
        self.missing_child = np.ascontiguousarray(missing_child, dtype=np.int64)
        value = np.asarray(value, dtype=np.float64)
        self.value = np.ascontiguousarray(value.reshape(value.shape[0], 1, -1))
        self.impurity = np.ascontiguousarray(impurity, dtype=np.float64)
        self.n_node_samples = np.ascontiguousarray(n_node_samples, dtype=np.intp)
        self.weighted_n_node_samples = np.ascontiguousarray(weighted_n_node_samples,
                                                            dtype=np.float64)
        self.blend_missing = bool(blend_missing)
        self.bin_edges = np.ascontiguousarray(bin_edges, dtype=np.float64)
        self.n_bin_edges = np.ascontiguousarray(n_bin_edges, dtype=np.int64)
        # Per feature, the printable names of its category codes (None: print the code).
        self.value_names = value_names if value_names is not None else [None] * n_features
        self.parent = np.full(self.node_count, -1, dtype=np.int64)
        self.parent_branch = np.full(self.node_count, -1, dtype=np.int64)
        self.node_depth = np.zeros(self.node_count, dtype=np.int64)
        for node in range(self.node_count):  # children have larger ids than parents
            for branch, child in self.branches(node):
                self.parent[child] = node
                self.parent_branch[child] = branch
                self.node_depth[child] = self.node_depth[node] + 1

    # ---------------------------------------------------------------- structure
    @property
    def node_count(self):
        return self.kind.shape[0]

    @property
    def n_leaves(self):
        return int(np.sum(self.kind == LEAF))

    @property
    def max_depth(self):
        return int(self.node_depth.max()) if self.node_count else 0

    @property
    def n_nodes(self):
        return self.node_count

    def is_leaf(self, node):
        return bool(self.kind[node] == LEAF)

    def branches(self, node):
        """``(branch, child)`` pairs of ``node``: branch ``b >= 0`` is a value branch,
        ``-1`` the missing branch; branches without a child are left out."""
        pairs = []
        if self.kind[node] == LEAF:
            return pairs
        start = self.first_branch[node]
        for b in range(self.n_branches[node]):
            if self.branch_child[start + b] >= 0:
                pairs.append((b, int(self.branch_child[start + b])))
        if self.missing_child[node] >= 0:
            pairs.append((MISSING_BRANCH, int(self.missing_child[node])))
        return pairs

    def children(self, node):
        """Child ids of ``node`` in branch order, the missing branch's last; ``()`` at a
        leaf. Branches that had no training case have no child and are left out."""
        return tuple(child for _, child in self.branches(node))

    def split(self, node):
        """The :class:`~silva.engine.tree_interface.Split` at internal ``node``."""
        kind = self.kind[node]
        if kind == LEAF:
            raise ValueError(f"node {node} is a leaf")
        feature = int(self.feature[node])
        branches = tuple(branch for branch, _ in self.branches(node))
        missing_branch = MISSING_BRANCH if self.missing_child[node] >= 0 else None
        if kind == THRESHOLD:
            return Split("threshold", feature, branches, missing_branch,
                         threshold=float(self.threshold[node]))
        if kind == INTERVALS:
            edges = self.bin_edges[feature, :self.n_bin_edges[feature]]
            return Split("intervals", feature, branches, missing_branch,
                         bin_edges=tuple(float(edge) for edge in edges))
        names = self.value_names[feature]
        return Split("values", feature, branches, missing_branch,
                     category_names=None if names is None else tuple(str(n) for n in names))

    def node_value(self, node):
        return self.value[node, 0]

    def n_binary_splits(self):
        """Binary splits equivalent to the tree: a test with ``k`` branches (those without
        training cases included, since they classify too) counts as ``k - 1``."""
        inner = self.kind != LEAF
        return int(np.sum(self.n_branches[inner] - 1 + (self.missing_child[inner] >= 0)))

    # ---------------------------------------------------------------- prediction
    def _kernel_arrays(self):
        return (self.kind, self.feature, self.threshold, self.first_branch, self.n_branches)

    @rowwise
    def predict(self, X):
        """Class probabilities of each row of X (float64, validated), (n_rows, 1, K)."""
        proba = predict_proba_multiway(
            X, *self._kernel_arrays(), self.branch_child, self.branch_fraction,
            self.missing_child, self.blend_missing, self.bin_edges, self.n_bin_edges,
            np.ascontiguousarray(self.value[:, 0, :]))
        return proba[:, np.newaxis, :]

    @rowwise
    def apply(self, X):
        """Node where each row's single path ends (see :func:`apply_multiway`)."""
        return apply_multiway(X, *self._kernel_arrays(), self.branch_child,
                              self.missing_child, self.bin_edges, self.n_bin_edges)

    def branch_of(self, node, column):
        """Branch index of every value of ``column`` at ``node``: ``b >= 0``, -1 for a
        missing value, -2 for a category with no branch (vectorised, in Python)."""
        column = np.asarray(column, dtype=np.float64)
        out = np.full(column.shape[0], _UNSEEN, dtype=np.int64)
        missing = np.isnan(column)
        out[missing] = _MISSING
        present = ~missing
        x = column[present]
        kind = self.kind[node]
        if kind == THRESHOLD:
            out[present] = np.where(x <= self.threshold[node], 0, 1)
        elif kind == INTERVALS:
            f = self.feature[node]
            out[present] = np.searchsorted(self.bin_edges[f, :self.n_bin_edges[f]], x,
                                           side="left")
        else:
            ok = (x >= 0) & (x < self.n_branches[node]) & (x == np.floor(x))
            codes = np.where(ok, x, 0).astype(np.int64)
            out[present] = np.where(ok, codes, _UNSEEN)
        return out

    def node_weights(self, X, node):
        """Weight with which each row of X (dense or sparse) reaches ``node`` (1 or 0 on
        a single path; fractional where a C4.5 node sent a missing value down all its
        branches)."""
        path = []
        current = node
        while self.parent[current] >= 0:
            path.append((int(self.parent[current]), int(self.parent_branch[current])))
            current = self.parent[current]
        weights = np.ones(X.shape[0])
        for ancestor, branch in reversed(path):
            feature = self.feature[ancestor]
            column = X[:, [feature]].toarray().ravel() if is_sparse(X) else X[:, feature]
            taken = self.branch_of(ancestor, column)
            if branch >= 0:
                factor = (taken == branch).astype(np.float64)
                if self.blend_missing and self.missing_child[ancestor] < 0:
                    fraction = self.branch_fraction[self.first_branch[ancestor] + branch]
                    factor[taken == _MISSING] = fraction
            else:
                factor = (taken == _MISSING).astype(np.float64)
            weights *= factor
        return weights

    def compute_feature_importances(self, normalize=True):
        """Total weighted entropy decrease per feature: ``N_t H_t - sum_c N_c H_c`` over
        the nodes ``t`` that test the feature, divided by the root weight."""
        importances = np.zeros(self.n_features)
        weighted = self.weighted_n_node_samples * self.impurity
        for node in np.flatnonzero(self.kind != LEAF):
            decrease = weighted[node] - sum(weighted[c] for c in self.children(node))
            importances[self.feature[node]] += decrease
        if self.node_count:
            importances /= self.weighted_n_node_samples[0]
        if normalize:
            total = importances.sum()
            if total > 0.0:
                importances /= total
        return importances

    # ---------------------------------------------------------------- text
    def branch_condition(self, node, branch, feature_name, decimals=2):
        """Readable test of one branch, e.g. ``outlook = sunny`` or ``temp <= 75``."""
        return f"{feature_name} {branch_test(self.split(node), branch, decimals)}"
