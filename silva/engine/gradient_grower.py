"""Gradient grower: one boosting tree on gradient statistics, in one compiled call.

Each sample carries three statistic channels (:func:`fill_statistics`): its weight, its
weighted gradient and its weighted hessian. Splits maximise the second-order gain of
:mod:`silva.engine.gradient_splitting` and every node's value is its (clipped) Newton
weight ``-T(G)/(H + lambda)`` (Chen & Guestrin 2016); with the hessian channel set to
the sample weight, the same tree is Friedman's (2001) least-squares fit of the negative
gradient.

Growth:

- ``leafwise`` (best-first, LightGBM's default): a heap of open leaves keyed by their best
  split's gain; the best leaf is split until ``max_leaf_nodes`` leaves exist or no split
  has positive gain;
- ``depthwise`` (XGBoost's default): a FIFO queue, so that a whole level is split before
  the next, with the same limits.

The node's samples are a contiguous range of one index array, partitioned in place and
stably at each split, so that every node's indices stay increasing (histogram passes
then read the bin codes in memory order). Histograms follow
:mod:`silva.engine.histogram` (same layout, same sums) with a kernel specialised to the
three channels (:func:`gradient_histograms`): the smaller child's is built, the larger
child's is the parent's minus it (the subtraction trick, in the same pass over
features), and no histogram is built for a child that may not split (depth or leaf
limit reached, too small).

Per-node feature choice: ``feature_mask`` (the tree's ``colsample_bytree`` draw), the
interaction constraints (a node may use the features of any constraint set that holds
every feature used on its path, as in XGBoost and LightGBM), and then
``features_per_node`` of those drawn at random (``colsample_bynode``) from an explicit
SplitMix64 stream (:mod:`silva.engine.random`), on the calling thread.

Monotonic constraints follow LightGBM's "basic" method: a node carries bounds on its
value; a split on a constrained feature must order its children's values, and its
children's bounds meet at the midpoint of the two values.

Compared with :mod:`silva.engine.grower` (the CART grower), this module keeps the same
design (node table, histogram pool with slots, pending children, in-place stable
partition) but differs where boosting needs it: fixed three gradient channels, split
thresholds from the binner's global bin edges (as LightGBM and XGBoost) instead of the
node's midpoints, leaf weights from the Newton step with L1/L2/``max_delta_step``,
monotonic and interaction constraints, and a FIFO depthwise order.
"""

import heapq

import numba as nb
import numpy as np

from silva.engine.binning import ALL_VALUE_BINS
from silva.engine.gradient_splitting import (
    L1,
    L2,
    MAX_DELTA_STEP,
    MIN_CHILD_WEIGHT,
    MIN_SAMPLES_LEAF,
    find_best_split,
    leaf_output,
)
from silva.engine.random import randint

# Columns of the node table (float64, one row per node).
LEFT = 0
RIGHT = 1
FEATURE = 2
THRESHOLD = 3
MISSING_LEFT = 4
IS_CATEGORICAL = 5
GAIN = 6
WEIGHT = 7
SUM_GRADIENT = 8
SUM_HESSIAN = 9
VALUE = 10
START = 11
END = 12
DEPTH = 13
LOWER = 14
UPPER = 15
HIST_SLOT = 16
SPLIT_BIN = 17
SPLIT_GAIN = 18
SPLIT_FEATURE = 19
SPLIT_MISSING_LEFT = 20
LEFT_WEIGHT = 21
LEFT_GRADIENT = 22
LEFT_HESSIAN = 23
N_COLUMNS = 24

LEAF = -1
UNDEFINED = -2


@nb.njit(cache=True, parallel=True)
def fill_statistics(gradient, hessian, column, weight, use_hessian, stats):
    """``stats[i] = (w_i, w_i g_i, w_i h_i)`` from column ``column`` of the (n_samples,
    n_outputs) gradients and hessians; with ``use_hessian`` False the third channel is
    ``w_i`` (Friedman's least-squares fit of the negative gradient)."""
    for i in nb.prange(gradient.shape[0]):
        w = weight[i]
        stats[i, 0] = w
        stats[i, 1] = w * gradient[i, column]
        stats[i, 2] = w * hessian[i, column] if use_hessian else w


@nb.njit(cache=True, inline="always")
def _histogram_pair(hist, parent, bin_codes, node_stats, sample_indices, start, end, identity,
                    subtract, f):
    """Histograms of features ``f`` and ``f + 1`` (when it exists) in one pass over the
    node's samples: the sample index and its statistics are read once for both (about
    12% faster than one feature per pass, measured on 200k x 28)."""
    two = f + 1 < bin_codes.shape[0]
    g = f + 1 if two else f
    hist_a = hist[f]
    hist_b = hist[g]
    codes_a = bin_codes[f]
    codes_b = bin_codes[g]
    hist_a[:, :] = 0.0
    hist_b[:, :] = 0.0
    n = end - start
    for i in range(n):
        # At the root before any partition the samples are in order: no index to follow.
        s = i if identity else sample_indices[start + i]
        g0 = node_stats[i, 0]
        g1 = node_stats[i, 1]
        g2 = node_stats[i, 2]
        a = codes_a[s]
        hist_a[a, 0] += g0
        hist_a[a, 1] += g1
        hist_a[a, 2] += g2
        if two:
            b = codes_b[s]
            hist_b[b, 0] += g0
            hist_b[b, 1] += g1
            hist_b[b, 2] += g2
    if subtract:
        parent[f] -= hist_a
        if two:
            parent[g] -= hist_b


@nb.njit(cache=True, parallel=True)
def _histograms_parallel(hist, parent, bin_codes, node_stats, sample_indices, start, end,
                         identity, subtract):
    for pair in nb.prange((bin_codes.shape[0] + 1) // 2):
        _histogram_pair(hist, parent, bin_codes, node_stats, sample_indices, start, end,
                        identity, subtract, 2 * pair)


@nb.njit(cache=True)
def _histograms_serial(hist, parent, bin_codes, node_stats, sample_indices, start, end,
                       identity, subtract):
    for pair in range((bin_codes.shape[0] + 1) // 2):
        _histogram_pair(hist, parent, bin_codes, node_stats, sample_indices, start, end,
                        identity, subtract, 2 * pair)


@nb.njit(cache=True)
def _gather(stats, sample_indices, start, end, out):
    for i in range(start, end):
        s = sample_indices[i]
        out[i - start, 0] = stats[s, 0]
        out[i - start, 1] = stats[s, 1]
        out[i - start, 2] = stats[s, 2]


@nb.njit(cache=True)
def gradient_histograms(hist, parent, bin_codes, stats, sample_indices, start, end,
                        identity, subtract, parallel, node_stats_buffer):
    """The node's histogram ``hist`` (n_features, n_bins, 3) for samples ``[start, end)``
    and, with ``subtract``, ``parent -= hist`` (the sibling's histogram) in the same pass.

    The node's statistics are first gathered into ``node_stats_buffer`` (contiguous, in
    the node's order; LightGBM's "ordered gradients"). The three channels are unrolled,
    two features share a pass, and the build and the subtraction share one parallel
    region over features (each region costs a thread wake-up, dear on a loaded
    machine). The sums are those of :func:`silva.engine.histogram.build_histogram`
    followed by :func:`silva.engine.histogram.subtract_histogram`, added in the same
    order, so they do not depend on the number of threads.
    """
    if identity:
        node_stats = stats
    else:
        node_stats = node_stats_buffer[:end - start]
        _gather(stats, sample_indices, start, end, node_stats)
    if parallel:
        _histograms_parallel(hist, parent, bin_codes, node_stats, sample_indices, start, end,
                             identity, subtract)
    else:
        _histograms_serial(hist, parent, bin_codes, node_stats, sample_indices, start, end,
                           identity, subtract)


@nb.njit(cache=True, inline="always")
def _goes_left(code, missing_bin, split_bin, missing_left, categorical, bitset_row):
    if code == missing_bin:
        return missing_left
    if categorical:
        return (bitset_row[code >> 6] >> np.uint64(code & 63)) & np.uint64(1) != 0
    return code <= split_bin


@nb.njit(cache=True)
def _partition_serial(sample_indices, buffer, codes_f, start, end, missing_bin, split_bin,
                      missing_left, categorical, bitset_row):
    n_left = 0
    n_right = 0
    for i in range(start, end):
        s = sample_indices[i]
        if _goes_left(np.int64(codes_f[s]), missing_bin, split_bin, missing_left, categorical,
                      bitset_row):
            sample_indices[start + n_left] = s
            n_left += 1
        else:
            buffer[n_right] = s
            n_right += 1
    sample_indices[start + n_left:end] = buffer[:n_right]
    return n_left


@nb.njit(cache=True)
def _grow_rows(table, bitsets, paths, n_rows):
    capacity = table.shape[0]
    if n_rows <= capacity:
        return table, bitsets, paths
    new_capacity = max(2 * capacity, n_rows)
    new_table = np.zeros((new_capacity, table.shape[1]))
    new_table[:capacity] = table
    new_bitsets = np.zeros((new_capacity, bitsets.shape[1]), dtype=np.uint64)
    new_bitsets[:capacity] = bitsets
    new_paths = np.zeros((new_capacity, paths.shape[1]), dtype=np.uint8)
    new_paths[:capacity] = paths
    return new_table, new_bitsets, new_paths


@nb.njit(cache=True)
def _take_slot(pool, free_slots):
    if len(free_slots) > 0:
        return pool, free_slots.pop()
    n_slots = pool.shape[0]
    new_pool = np.empty((2 * n_slots,) + pool.shape[1:])
    new_pool[:n_slots] = pool
    for slot in range(2 * n_slots - 1, n_slots, -1):
        free_slots.append(slot)
    return new_pool, n_slots


@nb.njit(cache=True)
def _node_candidates(path_row, feature_mask, interaction_sets, features_per_node, rng_state,
                     candidates):
    """Features a node may split on, increasing; returns how many."""
    n_features = feature_mask.shape[0]
    n_sets = interaction_sets.shape[0]
    n = 0
    for f in range(n_features):
        if feature_mask[f] == 0:
            continue
        allowed = n_sets == 0
        for s in range(n_sets):
            if allowed:
                break
            if interaction_sets[s, f] == 0:
                continue
            # Set s may extend this path only if it holds every feature used on it.
            contains_path = True
            for u in range(n_features):
                if path_row[u] != 0 and interaction_sets[s, u] == 0:
                    contains_path = False
                    break
            allowed = contains_path
        if allowed:
            candidates[n] = f
            n += 1
    if features_per_node < n:
        # Partial Fisher-Yates shuffle, then back to increasing order for tie-breaking.
        for i in range(features_per_node):
            j = i + randint(rng_state, n - i)
            tmp = candidates[i]
            candidates[i] = candidates[j]
            candidates[j] = tmp
        candidates[:features_per_node] = np.sort(candidates[:features_per_node])
        n = features_per_node
    return n


@nb.njit(cache=True)
def grow_gradient_tree(bin_codes, stats, sample_indices, n_value_bins, is_categorical,
                       missing_bin, bin_thresholds, feature_mask, monotonic, interaction_sets,
                       params, max_depth, max_leaf_nodes, depthwise, features_per_node, seed,
                       parallel_min_work, n_words):
    """Grow one tree on the samples ``sample_indices`` (reordered in place).

    Parameters: feature-major ``bin_codes`` and the binner's ``n_value_bins``,
    ``missing_bin`` and ``bin_thresholds``; ``stats`` (n_samples, 3) from
    :func:`fill_statistics`; ``feature_mask`` (uint8), ``monotonic`` (int8: -1, 0, +1),
    ``interaction_sets`` (n_sets, n_features) uint8 (no sets: no constraint); ``params``
    (see :mod:`silva.engine.gradient_splitting`); ``max_leaf_nodes <= 0`` means unlimited.

    Returns ``(table, bitsets)``: the node table (columns above; a leaf's samples are
    ``sample_indices[START:END]``) and the left category bitsets.
    """
    n_features = bin_codes.shape[0]
    n_bins = missing_bin + 1
    n_total = sample_indices.shape[0]
    constrained = params[MAX_DELTA_STEP] > 0.0
    for f in range(n_features):
        if monotonic[f] != 0:
            constrained = True
    l1 = params[L1]
    l2 = params[L2]
    max_delta_step = params[MAX_DELTA_STEP]
    min_samples_leaf = params[MIN_SAMPLES_LEAF]
    min_child_weight = params[MIN_CHILD_WEIGHT]
    rng_state = np.empty(1, dtype=np.uint64)
    rng_state[0] = seed
    unlimited_leaves = max_leaf_nodes <= 0

    capacity = 64
    table = np.zeros((capacity, N_COLUMNS))
    bitsets = np.zeros((capacity, n_words), dtype=np.uint64)
    paths = np.zeros((capacity, n_features), dtype=np.uint8)
    pool = np.empty((4, n_features, n_bins, 3))
    free_slots = [3, 2, 1, 0]
    scratch_hist = np.empty((n_features, n_bins, 3))
    buffer = np.empty(n_total, dtype=sample_indices.dtype)
    node_stats_buffer = np.empty((n_total, 3))
    candidates = np.empty(n_features, dtype=np.int64)
    feature_score = np.empty(n_features)
    feature_bin = np.empty(n_features, dtype=np.int64)
    feature_missing_left = np.empty(n_features, dtype=np.uint8)
    feature_left = np.empty((n_features, 3))
    feature_bitset = np.zeros((n_features, n_words), dtype=np.uint64)

    # numba types a list by its first element: start each with one, then empty it.
    heap = [(0.0, 0)]
    heap.pop()
    queue = [0]
    queue.pop()
    queue_head = 0

    # Pending nodes: the root, then the two children of each split.
    pending_sums = np.zeros((2, 3))
    pending_start = np.zeros(2, dtype=np.int64)
    pending_end = np.zeros(2, dtype=np.int64)
    pending_slot = np.full(2, -1, dtype=np.int64)
    pending_lower = np.full(2, -np.inf)
    pending_upper = np.full(2, np.inf)
    pending_splittable = np.zeros(2, dtype=np.bool_)
    pending_parent = -1
    pending_depth = 0
    n_pending = 1
    pending_start[0] = 0
    pending_end[0] = n_total

    pool, slot = _take_slot(pool, free_slots)
    identity = True
    for i in range(n_total):
        if sample_indices[i] != i:
            identity = False
            break
    gradient_histograms(pool[slot], scratch_hist, bin_codes, stats, sample_indices, 0,
                        n_total, identity and n_total == stats.shape[0], False,
                        n_total * n_features >= parallel_min_work, node_stats_buffer)
    pending_slot[0] = slot
    # Every sample falls in one bin of feature 0 (the missing bin included).
    for b in range(n_bins):
        for c in range(3):
            pending_sums[0, c] += pool[slot][0, b, c]
    pending_splittable[0] = True
    n_nodes = 0
    n_leaves = 1

    while True:
        for p in range(n_pending):
            node = n_nodes
            n_nodes += 1
            table, bitsets, paths = _grow_rows(table, bitsets, paths, n_nodes)
            row = table[node]
            if pending_parent >= 0:
                table[pending_parent, LEFT if p == 0 else RIGHT] = node
                paths[node] = paths[pending_parent]
                paths[node, np.int64(table[pending_parent, FEATURE])] = 1
            sums = pending_sums[p]
            lower = pending_lower[p]
            upper = pending_upper[p]
            row[LEFT] = LEAF
            row[RIGHT] = LEAF
            row[FEATURE] = UNDEFINED
            row[THRESHOLD] = UNDEFINED
            row[MISSING_LEFT] = 0.0
            row[IS_CATEGORICAL] = 0.0
            row[GAIN] = 0.0
            row[WEIGHT] = sums[0]
            row[SUM_GRADIENT] = sums[1]
            row[SUM_HESSIAN] = sums[2]
            row[VALUE] = leaf_output(sums[1], sums[2], l1, l2, max_delta_step, lower, upper)
            row[START] = pending_start[p]
            row[END] = pending_end[p]
            row[DEPTH] = pending_depth
            row[LOWER] = lower
            row[UPPER] = upper
            row[HIST_SLOT] = pending_slot[p]
            row[SPLIT_GAIN] = -np.inf
            slot = pending_slot[p]
            if pending_splittable[p] and slot >= 0:
                n_candidates = _node_candidates(paths[node], feature_mask, interaction_sets,
                                                features_per_node, rng_state, candidates)
                gain, feature, split_bin, missing_left = find_best_split(
                    pool[slot], candidates, n_candidates, n_value_bins, is_categorical,
                    monotonic, missing_bin, sums, params, lower, upper, constrained,
                    # Serial: a node's scan takes tens of microseconds, less than
                    # starting a parallel region (measured: 31 us serial, 4 ms parallel
                    # on a loaded 2-core machine, 200k x 28).
                    False, feature_score, feature_bin,
                    feature_missing_left, feature_left, feature_bitset)
                if feature >= 0 and gain > 0.0:
                    row[SPLIT_GAIN] = gain
                    row[SPLIT_FEATURE] = feature
                    row[SPLIT_BIN] = split_bin
                    row[SPLIT_MISSING_LEFT] = missing_left
                    row[LEFT_WEIGHT] = feature_left[feature, 0]
                    row[LEFT_GRADIENT] = feature_left[feature, 1]
                    row[LEFT_HESSIAN] = feature_left[feature, 2]
                    if is_categorical[feature]:
                        bitsets[node] = feature_bitset[feature]
                    if depthwise:
                        queue.append(node)
                    else:
                        heapq.heappush(heap, (-gain, node))
            if row[SPLIT_GAIN] == -np.inf and slot >= 0:
                free_slots.append(slot)
                row[HIST_SLOT] = -1

        # --- The next node to split. ---
        if not unlimited_leaves and n_leaves >= max_leaf_nodes:
            break
        if depthwise:
            if queue_head >= len(queue):
                break
            node = queue[queue_head]
            queue_head += 1
        else:
            if len(heap) == 0:
                break
            node = heapq.heappop(heap)[1]
        n_leaves += 1
        row = table[node]
        feature = np.int64(row[SPLIT_FEATURE])
        split_bin = np.int64(row[SPLIT_BIN])
        missing_left = row[SPLIT_MISSING_LEFT] != 0.0
        categorical = is_categorical[feature] != 0
        start = np.int64(row[START])
        end = np.int64(row[END])
        depth = np.int64(row[DEPTH])
        row[FEATURE] = feature
        row[MISSING_LEFT] = missing_left
        row[IS_CATEGORICAL] = categorical
        row[GAIN] = row[SPLIT_GAIN]
        if categorical:
            row[THRESHOLD] = UNDEFINED
        elif split_bin == ALL_VALUE_BINS:
            row[THRESHOLD] = np.inf  # missing values versus the rest
        else:
            row[THRESHOLD] = bin_thresholds[feature, split_bin]

        # Serial: a block-parallel two-pass partition (count, then scatter) measured
        # 2-3 times slower per tree on the shared 2-core machine (800k rows).
        n_left = _partition_serial(sample_indices, buffer, bin_codes[feature], start, end,
                                   missing_bin, split_bin, missing_left, categorical,
                                   bitsets[node])
        mid = start + n_left
        pending_sums[0, 0] = row[LEFT_WEIGHT]
        pending_sums[0, 1] = row[LEFT_GRADIENT]
        pending_sums[0, 2] = row[LEFT_HESSIAN]
        pending_sums[1, 0] = row[WEIGHT] - row[LEFT_WEIGHT]
        pending_sums[1, 1] = row[SUM_GRADIENT] - row[LEFT_GRADIENT]
        pending_sums[1, 2] = row[SUM_HESSIAN] - row[LEFT_HESSIAN]
        pending_start[0] = start
        pending_end[0] = mid
        pending_start[1] = mid
        pending_end[1] = end

        # Children's bounds: LightGBM's basic monotone method.
        lower = row[LOWER]
        upper = row[UPPER]
        pending_lower[:] = lower
        pending_upper[:] = upper
        if monotonic[feature] != 0:
            wl = leaf_output(pending_sums[0, 1], pending_sums[0, 2], l1, l2, max_delta_step,
                             lower, upper)
            wr = leaf_output(pending_sums[1, 1], pending_sums[1, 2], l1, l2, max_delta_step,
                             lower, upper)
            middle = 0.5 * (wl + wr)
            if monotonic[feature] > 0:
                pending_upper[0] = min(upper, middle)
                pending_lower[1] = max(lower, middle)
            else:
                pending_lower[0] = max(lower, middle)
                pending_upper[1] = min(upper, middle)

        # Which children may split at all; only those need histograms.
        room = unlimited_leaves or n_leaves < max_leaf_nodes
        for c in range(2):
            pending_splittable[c] = (
                room and depth + 1 < max_depth
                and pending_sums[c, 0] >= 2.0 * min_samples_leaf
                and pending_sums[c, 2] >= 2.0 * min_child_weight
                and pending_end[c] - pending_start[c] >= 2
            )
        parent_slot = np.int64(row[HIST_SLOT])
        row[HIST_SLOT] = -1
        pending_slot[0] = -1
        pending_slot[1] = -1
        n_left_samples = n_left
        n_right_samples = end - mid
        smaller = 0 if n_left_samples <= n_right_samples else 1
        larger = 1 - smaller
        n_smaller = min(n_left_samples, n_right_samples)
        if pending_splittable[larger]:
            if pending_splittable[smaller]:
                pool, slot = _take_slot(pool, free_slots)
                target = pool[slot]
                pending_slot[smaller] = slot
            else:
                target = scratch_hist
            gradient_histograms(target, pool[parent_slot], bin_codes, stats, sample_indices,
                                pending_start[smaller], pending_end[smaller], False, True,
                                n_smaller * n_features >= parallel_min_work,
                                node_stats_buffer)
            pending_slot[larger] = parent_slot
        elif pending_splittable[smaller]:
            # The parent's histogram is no longer needed: reuse its slot.
            gradient_histograms(pool[parent_slot], scratch_hist, bin_codes, stats,
                                sample_indices, pending_start[smaller], pending_end[smaller],
                                False, False, n_smaller * n_features >= parallel_min_work,
                                node_stats_buffer)
            pending_slot[smaller] = parent_slot
        else:
            free_slots.append(parent_slot)
        n_pending = 2
        pending_parent = node
        pending_depth = depth + 1

    return table[:n_nodes].copy(), bitsets[:n_nodes].copy()


@nb.njit(cache=True, parallel=True)
def add_leaf_values(raw, column, sample_indices, table, leaf_values):
    """``raw[s, column] += leaf_values[node]`` for the samples of every leaf of ``table``."""
    for node in nb.prange(table.shape[0]):
        if table[node, LEFT] != LEAF:
            continue
        value = leaf_values[node]
        for i in range(np.int64(table[node, START]), np.int64(table[node, END])):
            raw[sample_indices[i], column] += value


@nb.njit(cache=True, parallel=True)
def add_leaf_values_binned(raw, column, rows, bin_codes, table, bitsets, missing_bin,
                           leaf_values):
    """``raw[s, column] += leaf_values[leaf of s]`` for ``s`` in ``rows``, walking the tree on
    bin codes (samples the tree was not grown on: out-of-bag ones)."""
    for k in nb.prange(rows.shape[0]):
        s = rows[k]
        node = 0
        while table[node, LEFT] != LEAF:
            feature = np.int64(table[node, FEATURE])
            if _goes_left(np.int64(bin_codes[feature, s]), missing_bin,
                          np.int64(table[node, SPLIT_BIN]), table[node, MISSING_LEFT] != 0,
                          table[node, IS_CATEGORICAL] != 0, bitsets[node]):
                node = np.int64(table[node, LEFT])
            else:
                node = np.int64(table[node, RIGHT])
        raw[s, column] += leaf_values[node]


@nb.njit(cache=True, parallel=True)
def leaf_sums(gradient, hessian, column, weight, sample_indices, table, out):
    """``out[node] = (sum w g, sum w h)`` over each leaf's samples (Newton line search)."""
    for node in nb.prange(table.shape[0]):
        out[node, 0] = 0.0
        out[node, 1] = 0.0
        if table[node, LEFT] != LEAF:
            continue
        for i in range(np.int64(table[node, START]), np.int64(table[node, END])):
            s = sample_indices[i]
            out[node, 0] += weight[s] * gradient[s, column]
            out[node, 1] += weight[s] * hessian[s, column]
