"""Grower: one whole tree, grown in one compiled call.

The node's samples are a contiguous range ``[start, end)`` of one index array, which each
split partitions in place (stably, so the order stays deterministic). Nodes are appended to
a growable table; a node's best split is searched when the node is created, so that the
frontier of open nodes can be ordered:

- depth-first (a stack, left child first) when ``max_leaf_nodes`` is not set, as in
  CART's recursive partitioning;
- best-first (a heap on the split's improvement) when it is, so that the
  ``max_leaf_nodes`` leaves kept are those of the largest improvements (Friedman 2001,
  Shi 2007).

Stopping rules are scikit-learn's: ``max_depth``, ``min_samples_split``,
``min_samples_leaf``, ``min_weight_leaf``, ``max_leaf_nodes`` and
``min_impurity_decrease``; a pure node is never split. Classification trees may also stop
CHAID-style (Kass 1980): with ``min_significance < 1`` a node is left a leaf when the
chi-square test of its best split's class table has a p-value above it
(:mod:`silva.engine.significance`), tested once per node on the chosen split.

Histograms: a node with at least ``histogram_min_samples`` samples owns a dense histogram
in a slot of a pool. When it splits, the smaller child's histogram is built from its
samples and the larger child's is the parent's minus the smaller's, computed in the
parent's slot; slots return to a free list as nodes close. Smaller nodes search their
splits by sorting (see :mod:`silva.engine.splitting`).
"""

import heapq

import numba as nb
import numpy as np

from silva.engine.absolute_error import node_median_and_impurity
from silva.engine.binning import midpoint
from silva.engine.criteria import (
    ABSOLUTE_ERROR,
    EPSILON,
    SQUARED_ERROR,
    impurity,
    leaf_value,
    node_weight,
)
from silva.engine.histogram import build_histogram, subtract_histogram
from silva.engine.significance import split_p_value
from silva.engine.specialize import specialize
from silva.engine.splitting import (
    find_node_split,
    kernel_suffix,
    make_split_scratch,
    split_finder,
    winning_left_sums,
)

# Columns of the node table (float64, one row per node).
LEFT = 0
RIGHT = 1
FEATURE = 2
THRESHOLD = 3
MISSING_LEFT = 4
IS_CATEGORICAL = 5
IMPURITY = 6
N_SAMPLES = 7
WEIGHTED_N = 8
DEPTH = 9
START = 10
END = 11
HIST_SLOT = 12
GAIN = 13
SPLIT_BIN = 14
SPLIT_FEATURE = 15
SPLIT_MISSING_LEFT = 16
N_COLUMNS = 17

LEAF = -1
UNDEFINED = -2


@nb.njit(cache=True)
def _grow_rows(table, values, bitsets, node_sums, n_rows):
    """Double the capacity of the per-node arrays when ``n_rows`` no longer fit."""
    capacity = table.shape[0]
    if n_rows <= capacity:
        return table, values, bitsets, node_sums
    new_capacity = max(2 * capacity, n_rows)
    new_table = np.empty((new_capacity, table.shape[1]))
    new_table[:capacity] = table
    new_values = np.empty((new_capacity, values.shape[1]))
    new_values[:capacity] = values
    new_bitsets = np.zeros((new_capacity, bitsets.shape[1]), dtype=np.uint64)
    new_bitsets[:capacity] = bitsets
    new_sums = np.zeros((new_capacity, node_sums.shape[1]))
    new_sums[:capacity] = node_sums
    return new_table, new_values, new_bitsets, new_sums


@nb.njit(cache=True)
def _take_slot(pool, free_slots):
    """A free histogram slot, growing the pool when none is left."""
    if len(free_slots) > 0:
        return pool, free_slots.pop()
    n_slots = pool.shape[0]
    new_pool = np.empty((2 * n_slots,) + pool.shape[1:])
    new_pool[:n_slots] = pool
    for slot in range(2 * n_slots - 1, n_slots, -1):
        free_slots.append(slot)
    return new_pool, n_slots


# Bound per criterion by compiled_grower() (see silva.engine.specialize): grow_tree is a
# template, compiled only as the copies compiled_grower() makes.
ORDER_STATISTICS = False  # absolute_error: node medians from order statistics


@nb.njit(cache=True, nogil=True)
def grow_tree(
    bin_codes, codes_by_sample, stats, y, weight, sample_indices, n_value_bins,
    is_categorical, missing_bin, bin_lower, bin_upper, criterion, n_classes, n_values,
    max_depth, min_samples_split, min_samples_leaf, min_weight_leaf, max_leaf_nodes,
    min_impurity_decrease, max_features, use_random, seed, histogram_min_samples,
    parallel_min_work, n_words, min_significance=1.0,
):
    """Grow one tree on ``sample_indices`` (reordered in place) and return its arrays.

    Call it through :func:`compiled_grower`, which compiles it for the criterion alone.
    Parameters are the binned data (:mod:`silva.engine.binning`): feature-major
    ``bin_codes`` for histograms and the same codes sample-major for small nodes; the
    statistic channels, with the raw targets ``y`` and ``weight`` that only
    absolute_error reads; the criterion (:mod:`silva.engine.criteria`); and the stopping
    rules, where ``max_leaf_nodes <= 0`` means unlimited (depth-first) and
    ``min_significance >= 1`` (the default) turns the significance test off; it is
    ignored under regression criteria, which estimators must refuse it for. Returns
    ``(table, values, bitsets)`` trimmed to the node count: the node table (columns
    above), the leaf values ``(n_nodes, n_values)`` and the left category bitsets
    ``(n_nodes, n_words)``.
    """
    n_features = bin_codes.shape[0]
    n_channels = stats.shape[1]
    n_bins = missing_bin + 1
    n_total = sample_indices.shape[0]
    rng_state = np.empty(1, dtype=np.uint64)
    rng_state[0] = seed
    test_significance = min_significance < 1.0 and criterion < SQUARED_ERROR

    capacity = 64
    table = np.empty((capacity, N_COLUMNS))
    values = np.empty((capacity, n_values))
    bitsets = np.zeros((capacity, n_words), dtype=np.uint64)
    node_sums = np.zeros((capacity, n_channels))

    pool = np.empty((4, n_features, n_bins, n_channels))
    free_slots = [3, 2, 1, 0]
    smaller_hist = np.empty((n_features, n_bins, n_channels))

    scratch = make_split_scratch(n_features, n_bins, n_channels, n_words)
    split_bitset = np.empty(n_words, dtype=np.uint64)

    # Each sample's codes and statistic channels, kept in the order of ``sample_indices``
    # (partitions move them along), so that a node's are the contiguous rows
    # ``[start, end)``. Deep in a tree a node's samples lie scattered over the data, and
    # reading them through ``sample_indices`` cost a cache miss per sample and level
    # (most of a deep forest's fit time); moving 30-odd bytes per sample along with its
    # index is cheaper. ``right_*`` hold a partition's right side. A sample's codes are
    # padded to whole 8-byte words and moved a word at a time (``code_words``): copying
    # 28 one-byte codes one by one made the partition about twice as slow.
    n_code_words = (n_features * codes_by_sample.itemsize + 7) // 8
    ordered_codes = np.zeros((n_total, n_code_words * 8 // codes_by_sample.itemsize),
                             dtype=codes_by_sample.dtype)
    code_words = ordered_codes.view(np.uint64)
    ordered_stats = np.empty((n_total, n_channels))
    right_buffer = np.empty(n_total, dtype=sample_indices.dtype)
    right_words = np.empty_like(code_words)
    right_stats = np.empty_like(ordered_stats)

    # Root.
    root_sums = np.zeros(n_channels)
    for i in range(n_total):
        s = sample_indices[i]
        for f in range(n_features):
            ordered_codes[i, f] = codes_by_sample[s, f]
        for c in range(n_channels):
            ordered_stats[i, c] = stats[s, c]
            root_sums[c] += stats[s, c]
    root_weight = node_weight(criterion, root_sums)

    n_nodes = 0
    # numba types a list by its first element: start each with one, then empty it.
    frontier_stack = [0]
    frontier_heap = [(0.0, 0)]
    frontier_stack.pop()
    frontier_heap.pop()
    best_first = max_leaf_nodes > 0
    n_leaves = 1

    # The nodes about to be created: the root, then the two children (left first) of each
    # split, with their sample ranges, histogram slots and channel sums.
    pending_start = np.empty(2, dtype=np.int64)
    pending_end = np.empty(2, dtype=np.int64)
    pending_slot = np.empty(2, dtype=np.int64)
    pending_sums = np.empty((2, n_channels))
    opened = np.empty(2, dtype=np.int64)
    n_pending = 1
    pending_start[0] = 0
    pending_end[0] = n_total
    pending_sums[0] = root_sums
    pending_slot[0] = -1
    pending_parent = -1
    pending_depth = 0
    if n_total >= histogram_min_samples:
        pool, slot = _take_slot(pool, free_slots)
        # np.int64(0), not 0: numba compiles a callee apart for each literal argument.
        build_histogram(pool[slot], bin_codes, stats, sample_indices, np.int64(0), n_total,
                        n_total * n_features >= parallel_min_work)
        pending_slot[0] = slot

    while True:
        # --- Create the pending nodes (the root, or the two children of a split). ---
        n_opened = 0
        for p in range(n_pending):
            node = n_nodes
            n_nodes += 1
            if n_nodes > table.shape[0]:
                table, values, bitsets, node_sums = _grow_rows(table, values, bitsets,
                                                               node_sums, n_nodes)
            if pending_parent >= 0:
                table[pending_parent, LEFT if p == 0 else RIGHT] = node
            start = pending_start[p]
            end = pending_end[p]
            sums = node_sums[node]
            sums[:] = pending_sums[p]
            if ORDER_STATISTICS:
                values[node, 0], node_impurity = node_median_and_impurity(
                    y, weight, sample_indices, start, end)
            else:
                node_impurity = impurity(criterion, sums)
                leaf_value(criterion, sums, values[node])
            node_total_weight = node_weight(criterion, sums)
            row = table[node]
            row[LEFT] = LEAF
            row[RIGHT] = LEAF
            row[FEATURE] = UNDEFINED
            row[THRESHOLD] = UNDEFINED
            row[MISSING_LEFT] = 0.0
            row[IS_CATEGORICAL] = 0.0
            row[IMPURITY] = node_impurity
            row[N_SAMPLES] = sums[0]
            row[WEIGHTED_N] = node_total_weight
            row[DEPTH] = pending_depth
            row[START] = start
            row[END] = end
            row[HIST_SLOT] = pending_slot[p]
            row[GAIN] = -np.inf

            n_node = end - start
            splittable = not (
                pending_depth >= max_depth
                or sums[0] < min_samples_split
                or sums[0] < 2 * min_samples_leaf
                or node_total_weight < 2 * min_weight_leaf
                or node_impurity <= EPSILON
            )
            if splittable:
                slot = pending_slot[p]
                use_histogram = slot >= 0
                hist = pool[slot] if use_histogram else smaller_hist
                gain, feature, last_left_bin, missing_left = find_node_split(
                    criterion, hist, use_histogram, n_node * n_features >= parallel_min_work,
                    bin_codes, ordered_codes, ordered_stats, stats, y, weight, sample_indices,
                    start, end,
                    sums,
                    node_impurity,
                    root_weight, n_value_bins, is_categorical, missing_bin, bin_lower,
                    bin_upper, min_samples_leaf, min_weight_leaf, max_features, use_random,
                    rng_state, n_classes, scratch, split_bitset,
                )
                if (feature >= 0 and test_significance
                        and split_p_value(sums, winning_left_sums(scratch)) > min_significance):
                    feature = -1
                if feature >= 0 and gain + EPSILON >= min_impurity_decrease:
                    row[GAIN] = gain
                    row[SPLIT_FEATURE] = feature
                    row[SPLIT_BIN] = last_left_bin
                    row[SPLIT_MISSING_LEFT] = missing_left
                    if is_categorical[feature]:
                        bitsets[node] = split_bitset
                    opened[n_opened] = node
                    n_opened += 1
            if row[GAIN] == -np.inf and row[HIST_SLOT] >= 0:
                free_slots.append(np.int64(row[HIST_SLOT]))
                row[HIST_SLOT] = -1
        # Right child pushed first, so that the stack pops the left child first.
        for k in range(n_opened - 1, -1, -1):
            if best_first:
                heapq.heappush(frontier_heap, (-table[opened[k], GAIN], opened[k]))
            else:
                frontier_stack.append(opened[k])

        # --- Pick the next node to split. ---
        if best_first:
            if len(frontier_heap) == 0 or n_leaves >= max_leaf_nodes:
                break
            node = heapq.heappop(frontier_heap)[1]
        else:
            if len(frontier_stack) == 0:
                break
            node = frontier_stack.pop()
        n_leaves += 1
        row = table[node]
        feature = np.int64(row[SPLIT_FEATURE])
        last_left_bin = np.int64(row[SPLIT_BIN])
        missing_left = row[SPLIT_MISSING_LEFT] != 0.0
        categorical = is_categorical[feature] != 0
        start = np.int64(row[START])
        end = np.int64(row[END])

        # --- Partition the node's samples, stably, and sum each side's channels. ---
        left_sums = pending_sums[0]
        right_sums = pending_sums[1]
        left_sums[:] = 0.0
        right_sums[:] = 0.0
        n_left = 0
        n_right = 0
        # The values adjacent to the threshold in this node, for CART's midpoint.
        largest_left_bin = -1
        smallest_right_bin = n_bins
        for i in range(start, end):
            s = sample_indices[i]
            code = np.int64(ordered_codes[i, feature])
            if code == missing_bin:
                go_left = missing_left
            elif categorical:
                word = bitsets[node, code >> 6]
                go_left = (word >> np.uint64(code & 63)) & np.uint64(1) != 0
            else:
                go_left = code <= last_left_bin
            if code != missing_bin:
                if go_left:
                    largest_left_bin = max(largest_left_bin, code)
                else:
                    smallest_right_bin = min(smallest_right_bin, code)
            # Left rows are compacted in place (row start + n_left is at or before i),
            # right rows wait in the buffers: a stable partition.
            if go_left:
                j = start + n_left
                sample_indices[j] = s
                for w in range(n_code_words):
                    code_words[j, w] = code_words[i, w]
                for c in range(n_channels):
                    ordered_stats[j, c] = ordered_stats[i, c]
                    left_sums[c] += ordered_stats[i, c]
                n_left += 1
            else:
                right_buffer[n_right] = s
                for w in range(n_code_words):
                    right_words[n_right, w] = code_words[i, w]
                for c in range(n_channels):
                    right_stats[n_right, c] = ordered_stats[i, c]
                    right_sums[c] += ordered_stats[i, c]
                n_right += 1
        mid = start + n_left
        sample_indices[mid:end] = right_buffer[:n_right]
        code_words[mid:end] = right_words[:n_right]
        ordered_stats[mid:end] = right_stats[:n_right]

        row[FEATURE] = feature
        row[MISSING_LEFT] = missing_left
        row[IS_CATEGORICAL] = categorical
        if categorical:
            row[THRESHOLD] = UNDEFINED
        elif smallest_right_bin == n_bins:
            row[THRESHOLD] = np.inf  # missing values versus the rest
        else:
            # Halfway between the node's largest value going left and its smallest going
            # right, as CART does: the same partition of the node as any threshold
            # between the two, and the most neutral one for unseen values.
            row[THRESHOLD] = midpoint(bin_upper[feature, largest_left_bin],
                                      bin_lower[feature, smallest_right_bin])
        if not categorical:
            bitsets[node] = 0

        # --- Children's histograms: build the smaller, subtract for the larger. ---
        pending_start[0] = start
        pending_end[0] = mid
        pending_start[1] = mid
        pending_end[1] = end
        pending_slot[0] = -1
        pending_slot[1] = -1
        parent_slot = np.int64(row[HIST_SLOT])
        row[HIST_SLOT] = -1
        if parent_slot >= 0:
            smaller = 0 if n_left <= n_right else 1
            larger = 1 - smaller
            n_smaller = min(n_left, n_right)
            n_larger = max(n_left, n_right)
            if n_larger >= histogram_min_samples:
                if n_smaller >= histogram_min_samples:
                    pool, slot = _take_slot(pool, free_slots)
                    target = pool[slot]
                    pending_slot[smaller] = slot
                else:
                    target = smaller_hist
                build_histogram(target, bin_codes, stats, sample_indices,
                                pending_start[smaller], pending_end[smaller],
                                n_smaller * n_features >= parallel_min_work)
                subtract_histogram(pool[parent_slot], target,
                                   n_larger * n_features >= parallel_min_work)
                pending_slot[larger] = parent_slot
            else:
                free_slots.append(parent_slot)
        n_pending = 2
        pending_parent = node
        pending_depth = np.int64(row[DEPTH]) + 1

    return table[:n_nodes].copy(), values[:n_nodes].copy(), bitsets[:n_nodes].copy()


def compiled_grower(criterion):
    """:func:`grow_tree` compiled for one criterion code alone.

    The copy searches splits with that criterion's :func:`~silva.engine.splitting.
    split_finder` and compiles no other criterion's kernels. It releases the GIL, so
    that a forest grows its trees on several threads at once.
    """
    return specialize(grow_tree, kernel_suffix(criterion),
                      find_node_split=split_finder(criterion),
                      ORDER_STATISTICS=criterion == ABSOLUTE_ERROR)
