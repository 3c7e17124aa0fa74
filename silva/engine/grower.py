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

from collections import namedtuple

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
from silva.engine.nodes import (
    BEST_FIRST,
    CART_NODE,
    DEPTH_FIRST,
    LEAF,
    NO_HISTOGRAM,
    SCRATCH,
    UNDEFINED,
    aligned_histograms,
    grow_records,
    grow_rows,
    new_frontier,
    new_pending,
    pop_frontier,
    push_frontier,
    release_slot,
    schedule_children_histograms,
    take_slot,
)
from silva.engine.significance import split_p_value
from silva.engine.specialize import specialize
from silva.engine.splitting import (
    find_node_split,
    kernel_suffix,
    make_split_scratch,
    split_finder,
    winning_left_sums,
)

#: The binned training data a tree grows on (see :mod:`silva.engine.binning`):
#: feature-major ``bin_codes`` (n_features, n_samples) for histograms, the same codes
#: sample-major for small nodes, and the binner's per-feature tables.
CartData = namedtuple("CartData", [
    "bin_codes", "codes_by_sample", "n_value_bins", "is_categorical", "missing_bin",
    "bin_lower", "bin_upper", "n_words",
])

#: The criterion code (:mod:`silva.engine.criteria`) and the stopping rules.
#: ``max_leaf_nodes <= 0``: unlimited (depth-first growth); ``min_significance >= 1``:
#: no significance test (classification criteria only). Nodes of at least
#: ``histogram_min_samples`` samples keep histograms; passes over at least
#: ``parallel_min_work`` (samples x features) run parallel.
CartRules = namedtuple("CartRules", [
    "criterion", "n_classes", "n_values", "max_depth", "min_samples_split",
    "min_samples_leaf", "min_weight_leaf", "max_leaf_nodes", "min_impurity_decrease",
    "max_features", "use_random", "histogram_min_samples", "parallel_min_work",
    "min_significance",
])

#: One tree's samples: statistic channels (:mod:`silva.engine.criteria`), the raw
#: targets and weights (read by absolute_error only), the in-bag sample ids (reordered
#: in place by the grower) and the seed of its random choices.
CartSamples = namedtuple("CartSamples", ["stats", "y", "weight", "sample_indices", "seed"])

#: A tree's working buffers, allocated once per tree (see :func:`_new_buffers`).
_Buffers = namedtuple("_Buffers", [
    "ordered_codes", "code_words", "ordered_stats", "right_indices", "right_words",
    "right_stats", "split_scratch", "split_bitset", "scratch_histogram", "rng_state",
])


def cart_rules(criterion, n_classes, n_values, max_depth, min_samples_split,
               min_samples_leaf, min_weight_leaf, max_leaf_nodes, min_impurity_decrease,
               max_features, use_random, histogram_min_samples, parallel_min_work,
               min_significance=1.0):
    """:class:`CartRules`, each field cast to the one type the compiled grower takes (a
    Python int in place of a float would compile the grower a second time)."""
    return CartRules(
        np.int64(criterion), np.int64(n_classes), np.int64(n_values), np.int64(max_depth),
        np.int64(min_samples_split), np.int64(min_samples_leaf),
        np.float64(min_weight_leaf), np.int64(max_leaf_nodes),
        np.float64(min_impurity_decrease), np.int64(max_features), np.bool_(use_random),
        np.int64(histogram_min_samples), np.int64(parallel_min_work),
        np.float64(min_significance))


# Bound per criterion by compiled_grower() (see silva.engine.specialize): grow_tree and
# _open_node are templates, compiled only as the copies compiled_grower() makes.
ORDER_STATISTICS = False  # absolute_error: node medians from order statistics


@nb.njit(cache=True)
def _new_buffers(data, samples):
    n_features = data.bin_codes.shape[0]
    n_channels = samples.stats.shape[1]
    n_bins = data.missing_bin + 1
    n_total = samples.sample_indices.shape[0]
    codes_by_sample = data.codes_by_sample
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
    rng_state = np.empty(1, dtype=np.uint64)
    rng_state[0] = samples.seed
    return _Buffers(
        ordered_codes, code_words, np.empty((n_total, n_channels)),
        np.empty(n_total, dtype=samples.sample_indices.dtype), np.empty_like(code_words),
        np.empty((n_total, n_channels)),
        make_split_scratch(n_features, n_bins, n_channels, data.n_words),
        np.empty(data.n_words, dtype=np.uint64), np.empty((n_features, n_bins, n_channels)),
        rng_state)


@nb.njit(cache=True)
def _order_root_samples(data, samples, buffers, root_sums):
    """Copy every sample's codes and channels into the tree's order; sum the channels."""
    n_features = data.bin_codes.shape[0]
    stats = samples.stats
    for i in range(samples.sample_indices.shape[0]):
        s = samples.sample_indices[i]
        for f in range(n_features):
            buffers.ordered_codes[i, f] = data.codes_by_sample[s, f]
        for c in range(stats.shape[1]):
            buffers.ordered_stats[i, c] = stats[s, c]
            root_sums[c] += stats[s, c]


@nb.njit(cache=True)
def _open_node(row, sums, node_values, node_bitset, pool, data, rules, samples, buffers,
               root_weight):
    """Fill the new node ``row`` (its sample range, depth and histogram slot already set)
    from its channel ``sums``: impurity, value, weights; then search its best split
    unless a stopping rule makes it a leaf. Returns whether a split was found (the node
    joins the frontier)."""
    criterion = rules.criterion
    if ORDER_STATISTICS:
        node_values[0], node_impurity = node_median_and_impurity(
            samples.y, samples.weight, samples.sample_indices, row.start, row.end)
    else:
        node_impurity = impurity(criterion, sums)
        leaf_value(criterion, sums, node_values)
    node_total_weight = node_weight(criterion, sums)
    row.left = LEAF
    row.right = LEAF
    row.feature = UNDEFINED
    row.threshold = UNDEFINED
    row.missing_left = False
    row.is_categorical = False
    row.impurity = node_impurity
    row.n_samples = sums[0]
    row.weighted_n = node_total_weight
    row.split_gain = -np.inf

    n_features = data.bin_codes.shape[0]
    n_node = row.end - row.start
    splittable = not (
        row.depth >= rules.max_depth
        or sums[0] < rules.min_samples_split
        or sums[0] < 2 * rules.min_samples_leaf
        or node_total_weight < 2 * rules.min_weight_leaf
        or node_impurity <= EPSILON
    )
    if splittable:
        use_histogram = row.hist_slot >= 0
        hist = pool[row.hist_slot] if use_histogram else buffers.scratch_histogram
        gain, feature, last_left_bin, missing_left = find_node_split(
            criterion, hist, use_histogram, n_node * n_features >= rules.parallel_min_work,
            data.bin_codes, buffers.ordered_codes, buffers.ordered_stats, samples.stats,
            samples.y, samples.weight, samples.sample_indices, row.start, row.end, sums,
            node_impurity, root_weight, data.n_value_bins, data.is_categorical,
            data.missing_bin, data.bin_lower, data.bin_upper, rules.min_samples_leaf,
            rules.min_weight_leaf, rules.max_features, rules.use_random, buffers.rng_state,
            rules.n_classes, buffers.split_scratch, buffers.split_bitset,
        )
        if (feature >= 0 and rules.min_significance < 1.0 and criterion < SQUARED_ERROR
                and split_p_value(sums, winning_left_sums(buffers.split_scratch))
                > rules.min_significance):
            feature = -1
        if feature >= 0 and gain + EPSILON >= rules.min_impurity_decrease:
            row.split_gain = gain
            row.split_feature = feature
            row.split_bin = last_left_bin
            row.split_missing_left = missing_left
            if data.is_categorical[feature]:
                node_bitset[:] = buffers.split_bitset
    return row.split_gain != -np.inf


@nb.njit(cache=True)
def _partition(row, node_bitset, left_sums, right_sums, data, samples, buffers):
    """Stable partition of the node's samples by its chosen split, moving their ordered
    codes and channels along; sums each side's channels. Returns ``(n_left,
    largest_left_bin, smallest_right_bin)``: the bins adjacent to the threshold in this
    node (for CART's midpoint)."""
    feature = row.split_feature
    last_left_bin = row.split_bin
    missing_left = row.split_missing_left
    categorical = data.is_categorical[feature] != 0
    missing_bin = data.missing_bin
    sample_indices = samples.sample_indices
    code_words = buffers.code_words
    ordered_stats = buffers.ordered_stats
    n_code_words = code_words.shape[1]
    n_channels = ordered_stats.shape[1]
    start = row.start
    end = row.end
    left_sums[:] = 0.0
    right_sums[:] = 0.0
    n_left = 0
    n_right = 0
    largest_left_bin = -1
    smallest_right_bin = missing_bin + 1
    for i in range(start, end):
        s = sample_indices[i]
        code = np.int64(buffers.ordered_codes[i, feature])
        if code == missing_bin:
            go_left = missing_left
        elif categorical:
            word = node_bitset[code >> 6]
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
            buffers.right_indices[n_right] = s
            for w in range(n_code_words):
                buffers.right_words[n_right, w] = code_words[i, w]
            for c in range(n_channels):
                buffers.right_stats[n_right, c] = ordered_stats[i, c]
                right_sums[c] += ordered_stats[i, c]
            n_right += 1
    mid = start + n_left
    sample_indices[mid:end] = buffers.right_indices[:n_right]
    code_words[mid:end] = buffers.right_words[:n_right]
    ordered_stats[mid:end] = buffers.right_stats[:n_right]
    return n_left, largest_left_bin, smallest_right_bin


@nb.njit(cache=True)
def _apply_split(row, node_bitset, largest_left_bin, smallest_right_bin, data):
    """Write the node's chosen split as its decision rule."""
    feature = row.split_feature
    categorical = data.is_categorical[feature] != 0
    row.feature = feature
    row.missing_left = row.split_missing_left
    row.is_categorical = categorical
    if categorical:
        row.threshold = UNDEFINED
    elif smallest_right_bin == data.missing_bin + 1:
        row.threshold = np.inf  # missing values versus the rest
    else:
        # Halfway between the node's largest value going left and its smallest going
        # right, as CART does: the same partition of the node as any threshold
        # between the two, and the most neutral one for unseen values.
        row.threshold = midpoint(data.bin_upper[feature, largest_left_bin],
                                 data.bin_lower[feature, smallest_right_bin])
    if not categorical:
        node_bitset[:] = 0


@nb.njit(cache=True)
def _children_histograms(pending, n_left, n_right, parent_slot, pool, free_slots, data,
                         rules, samples, buffers):
    """The children's histograms (see :func:`silva.engine.nodes.
    schedule_children_histograms`): a child of at least ``histogram_min_samples``
    samples gets one. Returns the pool (it may have grown)."""
    n_features = data.bin_codes.shape[0]
    pending[0].needs_histogram = n_left >= rules.histogram_min_samples
    pending[1].needs_histogram = n_right >= rules.histogram_min_samples
    pool, smaller, target, subtract = schedule_children_histograms(
        pending, n_left, n_right, parent_slot, pool, free_slots)
    if target == NO_HISTOGRAM:
        return pool
    hist = buffers.scratch_histogram if target == SCRATCH else pool[target]
    n_smaller = min(n_left, n_right)
    build_histogram(hist, data.bin_codes, samples.stats, samples.sample_indices,
                    pending[smaller].start, pending[smaller].end,
                    n_smaller * n_features >= rules.parallel_min_work)
    if subtract:
        subtract_histogram(pool[parent_slot], hist,
                           max(n_left, n_right) * n_features >= rules.parallel_min_work)
    return pool


@nb.njit(cache=True, nogil=True)
def grow_tree(data, rules, samples):
    """Grow one tree and return its arrays; ``samples.sample_indices`` is reordered in
    place (each node's samples contiguous, as the node table's ranges say).

    Call it through :func:`compiled_grower`, which compiles it for the criterion alone.
    ``data``, ``rules`` and ``samples``: :class:`CartData`, :class:`CartRules` (see
    :func:`cart_rules`) and :class:`CartSamples`. Returns ``(table, values, bitsets)``
    trimmed to the node count: the node table (:data:`silva.engine.nodes.CART_NODE`
    records), the leaf values ``(n_nodes, n_values)`` and the left category bitsets
    ``(n_nodes, n_words)``.
    """
    n_features = data.bin_codes.shape[0]
    n_channels = samples.stats.shape[1]
    n_total = samples.sample_indices.shape[0]
    buffers = _new_buffers(data, samples)

    capacity = 64
    table = np.zeros(capacity, dtype=CART_NODE)
    values = np.zeros((capacity, rules.n_values))
    bitsets = np.zeros((capacity, data.n_words), dtype=np.uint64)
    node_sums = np.zeros((capacity, n_channels))
    pool = aligned_histograms(4, n_features, data.missing_bin + 1, n_channels)
    free_slots = [3, 2, 1, 0]
    heap, pushes = new_frontier()
    order = BEST_FIRST if rules.max_leaf_nodes > 0 else DEPTH_FIRST

    # The root is the first pending node; then the two children (left first) of each
    # split are.
    pending, pending_sums = new_pending(n_channels)
    _order_root_samples(data, samples, buffers, pending_sums[0])
    root_weight = node_weight(rules.criterion, pending_sums[0])
    pending[0].end = n_total
    if n_total >= rules.histogram_min_samples:
        pool, slot = take_slot(pool, free_slots)
        # np.int64(0), not 0: numba compiles a callee apart for each literal argument.
        build_histogram(pool[slot], data.bin_codes, samples.stats, samples.sample_indices,
                        np.int64(0), n_total, n_total * n_features >= rules.parallel_min_work)
        pending[0].slot = slot
    n_pending = 1
    opened = np.zeros(2, dtype=np.bool_)
    parent = -1
    depth = 0
    n_nodes = 0
    n_leaves = 1
    while True:
        # Create the pending nodes; those with a split join the frontier (right child
        # pushed first, so that depth-first growth splits the left child first).
        first_new = n_nodes
        n_nodes += n_pending
        table = grow_records(table, n_nodes)
        values = grow_rows(values, n_nodes)
        bitsets = grow_rows(bitsets, n_nodes)
        node_sums = grow_rows(node_sums, n_nodes)
        for p in range(n_pending):
            node = first_new + p
            row = table[node]
            if parent >= 0:
                if p == 0:
                    table[parent].left = node
                else:
                    table[parent].right = node
            row.start = pending[p].start
            row.end = pending[p].end
            row.depth = depth
            row.hist_slot = pending[p].slot
            node_sums[node] = pending_sums[p]
            opened[p] = _open_node(row, node_sums[node], values[node], bitsets[node], pool,
                                   data, rules, samples, buffers, root_weight)
            if not opened[p]:
                release_slot(row, free_slots)
        for p in range(n_pending - 1, -1, -1):
            if opened[p]:
                push_frontier(heap, pushes, order, table[first_new + p].split_gain,
                              first_new + p)

        # The next node to split.
        if order == BEST_FIRST and n_leaves >= rules.max_leaf_nodes:
            break
        node = pop_frontier(heap)
        if node < 0:
            break
        n_leaves += 1
        row = table[node]
        n_left, largest_left_bin, smallest_right_bin = _partition(
            row, bitsets[node], pending_sums[0], pending_sums[1], data, samples, buffers)
        _apply_split(row, bitsets[node], largest_left_bin, smallest_right_bin, data)

        # The children: their ranges and histograms.
        mid = row.start + n_left
        pending[0].start = row.start
        pending[0].end = mid
        pending[1].start = mid
        pending[1].end = row.end
        parent_slot = row.hist_slot
        row.hist_slot = -1
        pool = _children_histograms(pending, n_left, row.end - mid, parent_slot, pool,
                                    free_slots, data, rules, samples, buffers)
        n_pending = 2
        parent = node
        depth = row.depth + 1

    return table[:n_nodes].copy(), values[:n_nodes].copy(), bitsets[:n_nodes].copy()


def compiled_grower(criterion):
    """:func:`grow_tree` compiled for one criterion code alone.

    The copy searches splits with that criterion's :func:`~silva.engine.splitting.
    split_finder` and compiles no other criterion's kernels. It releases the GIL, so
    that a forest grows its trees on several threads at once.
    """
    suffix = kernel_suffix(criterion)
    order_statistics = criterion == ABSOLUTE_ERROR
    open_node = specialize(_open_node, suffix, find_node_split=split_finder(criterion),
                           ORDER_STATISTICS=order_statistics)
    return specialize(grow_tree, suffix, _open_node=open_node)
