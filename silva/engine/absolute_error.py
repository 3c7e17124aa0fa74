"""The absolute_error criterion: weighted medians and absolute deviations.

A node's impurity under ``absolute_error`` is ``sum_i w_i |y_i - m| / sum_i w_i`` with
``m`` the weighted median (Breiman et al. 1984, sec. 8.11, least absolute deviation
regression), and its prediction is ``m``. Neither can be read off channel sums, so this
module searches splits from order statistics instead of histograms:

- the node's samples are ranked by y once per node;
- for a feature, samples are swept in increasing bin order (categories ordered by mean
  y), moving from the right child to the left; two Fenwick trees per child, over the y
  ranks, hold the weights and the weighted targets, so each child's weighted median and
  absolute deviation cost O(log n) at every candidate threshold.

The median is scikit-learn's: the first y at which the cumulative weight reaches half
the total, or the mean of it and the next y when the cumulative weight equals half
exactly, so that silva's trees grow as scikit-learn's do.
"""

import numpy as np

from silva.engine.binning import ALL_VALUE_BINS
from silva.engine.jit import kernel
from silva.engine.random import uniform

_NO_SPLIT = -np.inf
# Bound to True by splitting.split_finder(monotone=True) alone: candidate splits on a
# constrained feature are checked against monotonic constraints on the children's
# medians (silva.engine.monotone); other fits compile no check.
MONOTONE = False


@kernel()
def weighted_median_and_deviation(sorted_y, sorted_w):
    """``(median, sum w |y - median|)`` of targets already sorted increasingly."""
    total = sorted_w.sum()
    half = total / 2.0
    cumulative = 0.0
    k = 0
    while k < sorted_y.shape[0] - 1 and cumulative + sorted_w[k] < half:
        cumulative += sorted_w[k]
        k += 1
    cumulative += sorted_w[k]
    median = sorted_y[k]
    if cumulative == half:
        nxt = k + 1
        while nxt < sorted_y.shape[0] and sorted_w[nxt] == 0.0:
            nxt += 1
        if nxt < sorted_y.shape[0]:
            median = (sorted_y[k] + sorted_y[nxt]) / 2.0
    deviation = 0.0
    for i in range(sorted_y.shape[0]):
        deviation += sorted_w[i] * abs(sorted_y[i] - median)
    return median, deviation


@kernel()
def node_median_and_impurity(y, weight, sample_indices, start, end):
    """Weighted median of the node's targets and its mean absolute deviation."""
    node_y = np.empty(end - start)
    node_w = np.empty(end - start)
    for i in range(start, end):
        node_y[i - start] = y[sample_indices[i]]
        node_w[i - start] = weight[sample_indices[i]]
    order = np.argsort(node_y, kind="mergesort")
    median, deviation = weighted_median_and_deviation(node_y[order], node_w[order])
    total = node_w.sum()
    return median, (deviation / total if total > 0.0 else 0.0)


@kernel(inline="always")
def _fenwick_add(tree, rank, value):
    i = rank
    while i < tree.shape[0]:
        tree[i] += value
        i += i & (-i)


@kernel(inline="always")
def _fenwick_prefix(tree, rank):
    total = 0.0
    i = rank
    while i > 0:
        total += tree[i]
        i -= i & (-i)
    return total


@kernel(inline="always")
def _fenwick_first_reaching(tree, target, strictly):
    """Smallest rank whose prefix sum is >= target (> target if ``strictly``)."""
    n = tree.shape[0] - 1
    step = 1
    while step * 2 <= n:
        step *= 2
    position = 0
    remaining = target
    while step > 0:
        nxt = position + step
        if nxt <= n and (tree[nxt] <= remaining if strictly else tree[nxt] < remaining):
            position = nxt
            remaining -= tree[nxt]
        step //= 2
    return min(position + 1, n)


@kernel()
def _deviation(weights_tree, targets_tree, sorted_y, total_weight, total_target):
    """Sum of w |y - median| of the set held by a pair of Fenwick trees."""
    half = total_weight / 2.0
    k = _fenwick_first_reaching(weights_tree, half, False)
    below_weight = _fenwick_prefix(weights_tree, k)
    median = sorted_y[k - 1]
    if below_weight == half:
        k_next = _fenwick_first_reaching(weights_tree, half, True)
        median = (sorted_y[k - 1] + sorted_y[k_next - 1]) / 2.0
    below_target = _fenwick_prefix(targets_tree, k)
    return (median * below_weight - below_target
            + (total_target - below_target) - median * (total_weight - below_weight))


@kernel()
def _median(weights_tree, sorted_y, total_weight):
    """Weighted median of the set held by a Fenwick tree of weights (as
    :func:`_deviation` takes it)."""
    half = total_weight / 2.0
    k = _fenwick_first_reaching(weights_tree, half, False)
    median = sorted_y[k - 1]
    if _fenwick_prefix(weights_tree, k) == half:
        k_next = _fenwick_first_reaching(weights_tree, half, True)
        median = (sorted_y[k - 1] + sorted_y[k_next - 1]) / 2.0
    return median


@kernel()
def _fill_tree(tree, ranks, values, positions):
    """Fenwick tree of ``values[p]`` at ``ranks[p] + 1`` for ``p`` in positions: O(n)."""
    tree[:] = 0.0
    for p in positions:
        tree[ranks[p] + 1] += values[p]
    n = tree.shape[0] - 1
    for i in range(1, n + 1):
        parent = i + (i & (-i))
        if parent <= n:
            tree[parent] += tree[i]


@kernel()
def evaluate_feature_absolute_error(codes_f, is_categorical_f, sample_indices, start, end,
                                    y, weight, counts, missing_bin, node_deviation,
                                    root_weight, min_samples_leaf, min_weight_leaf,
                                    use_random, seed, lower_f, upper_f, bitset, constraint,
                                    min_value, max_value):
    """Best split of one feature under absolute_error (``constraint``, ``min_value``
    and ``max_value``: its monotonic constraint on the children's medians and the
    node's bounds, read by the ``MONOTONE`` copy alone).

    Returns ``(improvement, last_left_bin, missing_go_left, is_constant)`` like
    :func:`silva.engine.splitting.evaluate_feature`; improvement is the true weighted
    decrease of absolute deviation, ``(D - D_left - D_right) / W_root``.
    """
    n = end - start
    node_y = np.empty(n)
    node_w = np.empty(n)
    node_count = np.empty(n)
    codes = np.empty(n, dtype=np.int64)
    for i in range(n):
        s = sample_indices[start + i]
        node_y[i] = y[s]
        node_w[i] = weight[s]
        node_count[i] = counts[s]
        codes[i] = codes_f[s]
    y_order = np.argsort(node_y, kind="mergesort")
    ranks = np.empty(n, dtype=np.int64)
    for r in range(n):
        ranks[y_order[r]] = r
    sorted_y = node_y[y_order]
    weighted_y = node_w * node_y

    # Sort keys: the bin, or for a categorical feature the category's rank by mean y.
    is_missing = codes == missing_bin
    n_missing = int(is_missing.sum())
    present = np.flatnonzero(~is_missing)
    missing_positions = np.flatnonzero(is_missing)
    keys = codes.copy()
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = seed
    if is_categorical_f and present.shape[0] > 0:
        n_codes = codes[present].max() + 1
        category_sum = np.zeros(n_codes)
        category_weight = np.zeros(n_codes)
        for p in present:
            category_sum[codes[p]] += weighted_y[p]
            category_weight[codes[p]] += node_w[p]
        score = np.empty(n_codes)
        for c in range(n_codes):
            if use_random:
                score[c] = uniform(rng)
            elif category_weight[c] > 0.0:
                score[c] = category_sum[c] / category_weight[c]
            else:
                score[c] = 0.0
        category_rank = np.empty(n_codes, dtype=np.int64)
        category_rank[np.argsort(score, kind="mergesort")] = np.arange(n_codes)
        for p in present:
            keys[p] = category_rank[codes[p]]
    sweep = present[np.argsort(keys[present], kind="mergesort")]
    n_present = sweep.shape[0]
    n_keys = 0
    for j in range(n_present):
        if j == 0 or keys[sweep[j]] != keys[sweep[j - 1]]:
            n_keys += 1
    if n_keys + (1 if n_missing > 0 else 0) < 2:
        return _NO_SPLIT, -1, False, True

    # Extra trees: one random boundary between distinct keys.
    chosen_boundary = -1
    if use_random and n_keys >= 2:
        if is_categorical_f:
            chosen_boundary = int(uniform(rng) * (n_keys - 1))
        else:
            low = lower_f[keys[sweep[0]]]
            high = upper_f[keys[sweep[n_present - 1]]]
            threshold = low + uniform(rng) * (high - low)
            chosen_boundary = 0
            boundary = 0
            for j in range(n_present - 1):
                if keys[sweep[j + 1]] != keys[sweep[j]]:
                    if upper_f[keys[sweep[j]]] <= threshold:
                        chosen_boundary = boundary
                    boundary += 1

    total_weight = node_w.sum()
    total_target = weighted_y.sum()
    total_count = node_count.sum()
    left_w = np.zeros(n + 1)
    left_y = np.zeros(n + 1)
    right_w = np.zeros(n + 1)
    right_y = np.zeros(n + 1)
    best_gain = _NO_SPLIT
    best_key = -1
    best_missing_left = False
    best_all_values_left = False
    n_directions = 2 if n_missing > 0 else 1
    for direction in range(n_directions):
        missing_left = direction == 1
        left_positions = missing_positions if missing_left else missing_positions[:0]
        _fill_tree(left_w, ranks, node_w, left_positions)
        _fill_tree(left_y, ranks, weighted_y, left_positions)
        right_positions = present if missing_left else np.arange(n)
        _fill_tree(right_w, ranks, node_w, right_positions)
        _fill_tree(right_y, ranks, weighted_y, right_positions)
        weight_left = 0.0
        target_left = 0.0
        count_left = 0.0
        for p in left_positions:
            weight_left += node_w[p]
            target_left += weighted_y[p]
            count_left += node_count[p]
        boundary = -1
        for j in range(n_present):
            p = sweep[j]
            _fenwick_add(left_w, ranks[p] + 1, node_w[p])
            _fenwick_add(left_y, ranks[p] + 1, weighted_y[p])
            _fenwick_add(right_w, ranks[p] + 1, -node_w[p])
            _fenwick_add(right_y, ranks[p] + 1, -weighted_y[p])
            weight_left += node_w[p]
            target_left += weighted_y[p]
            count_left += node_count[p]
            last = j == n_present - 1
            if not last and keys[sweep[j + 1]] == keys[p]:
                continue
            boundary += 1
            if last and (missing_left or n_missing == 0):
                break  # everything would go left
            if chosen_boundary >= 0 and boundary != chosen_boundary and not last:
                continue
            weight_right = total_weight - weight_left
            if (count_left < min_samples_leaf or total_count - count_left < min_samples_leaf
                    or weight_left < min_weight_leaf or weight_right < min_weight_leaf
                    or weight_left <= 0.0 or weight_right <= 0.0):
                continue
            if MONOTONE and constraint != 0:
                left_median = _median(left_w, sorted_y, weight_left)
                right_median = _median(right_w, sorted_y, weight_right)
                if not (min_value <= left_median <= max_value
                        and min_value <= right_median <= max_value
                        and (left_median - right_median) * constraint <= 0.0):
                    continue
            deviation_left = _deviation(left_w, left_y, sorted_y, weight_left, target_left)
            deviation_right = _deviation(right_w, right_y, sorted_y, weight_right,
                                         total_target - target_left)
            gain = (node_deviation - deviation_left - deviation_right) / root_weight
            if gain > best_gain:
                best_gain = gain
                best_key = keys[p]
                best_missing_left = missing_left
                best_all_values_left = last
                if n_missing == 0:
                    best_missing_left = count_left > total_count - count_left
    if best_key < 0:
        return _NO_SPLIT, -1, False, False
    if is_categorical_f:
        fill = np.uint64(0xFFFFFFFFFFFFFFFF) if best_missing_left else np.uint64(0)
        bitset[:] = fill
        for p in present:
            code = codes[p]
            bit = np.uint64(1) << np.uint64(code & 63)
            if keys[p] <= best_key:
                bitset[code >> 6] |= bit
            else:
                bitset[code >> 6] &= ~bit
        return best_gain, -1, best_missing_left, False
    last_left_bin = ALL_VALUE_BINS if best_all_values_left else best_key
    return best_gain, last_left_bin, best_missing_left, False
