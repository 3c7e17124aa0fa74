"""Gradient grower: one boosting tree on gradient statistics, in one compiled call.

Each sample carries four statistic channels (:func:`_fill_sample`, in the root's
histogram pass): a one that counts it, its weighted gradient, its weighted hessian and
its weight. Splits maximise the second-order gain of
:mod:`silva.engine.gradient_splitting` and every node's value is its (clipped) Newton
weight ``-T(G)/(H + lambda)`` (Chen & Guestrin 2016); with the hessian channel set to
the sample weight, the same tree is Friedman's (2001) least-squares fit of the negative
gradient.

Which limits are weighted: ``min_samples_leaf`` counts samples (channel 0), as
LightGBM's ``min_data_in_leaf`` and scikit-learn do, so that rescaling every
``sample_weight`` by one constant leaves it alone; ``min_child_weight`` bounds the
weighted hessian sum (channel 2), as LightGBM's ``min_sum_hessian_in_leaf``. The weight
channel (3) only gives each node's reported weight (``weight``). Without sample weights
channel 0 and channel 3 hold the same sums, and channel 0 what it held when it was the
weight, so such fits grow the trees they grew then.

Growth:

- ``leafwise`` (best-first, LightGBM's default): a heap of open leaves keyed by their best
  split's gain; the best leaf is split until ``max_leaf_nodes`` leaves exist or no split
  has positive gain;
- ``depthwise`` (XGBoost's default): a FIFO queue, so that a whole level is split before
  the next, with the same limits.

Data layout and histogram passes: :mod:`silva.engine.gradient_histogram` (each
sample one 64-byte record of codes and channels; parallel passes over row blocks whose
sums do not depend on the number of threads); the partition of a node's sample indices:
:mod:`silva.engine.partition`; node bookkeeping shared with the CART grower:
:mod:`silva.engine.nodes`; leaf updates of the raw predictions:
:mod:`silva.engine.leaf_values`.

Per-node feature choice: ``feature_mask`` (the tree's ``colsample_bytree`` draw), the
interaction constraints (a node may use the features of any constraint set that holds
every feature used on its path, as in XGBoost and LightGBM), and then
``features_per_node`` of those drawn at random (``colsample_bynode``) from an explicit
SplitMix64 stream (:mod:`silva.engine.random`), on the calling thread.

Monotonic constraints follow LightGBM's "basic" method: a node carries bounds on its
value; a split on a constrained feature must order its children's values, and its
children's bounds meet at the midpoint of the two values.

Compared with :mod:`silva.engine.grower` (the CART grower), this module keeps the same
design (node table, histogram pool with slots, pending children, stable partition) but
differs where boosting needs it: fixed gradient channels and the row layout above, split
thresholds from the binner's global bin edges (as LightGBM and XGBoost) instead of the
node's midpoints, leaf weights from the Newton step with L1/L2/``max_delta_step``,
monotonic and interaction constraints, and a FIFO depthwise order.
"""

from collections import namedtuple

import numpy as np

from silva.engine.array_copy import copy_vector
from silva.engine.binning import ALL_VALUE_BINS
from silva.engine.gradient_children import children_pass, numeric_children_pass
from silva.engine.gradient_histogram import (
    BLOCK_ROWS,
    COUNT_CHANNEL,
    MAX_BLOCKS,
    N_CHANNELS,
    WEIGHT_CHANNEL,
    node_histogram,
    serial_node_histogram,
    wide_node_histogram,
)
from silva.engine.gradient_sparse import (
    feature_bins,
    fill_feature_column,
    find_best_sparse_split,
    sparse_node_histogram,
)
from silva.engine.gradient_splitting import (
    L1,
    L2,
    MAX_DELTA_STEP,
    MIN_CHILD_WEIGHT,
    MIN_SAMPLES_LEAF,
    SCAN_SCRATCH_ROWS,
    best_scanned_split,
    find_best_split,
    leaf_output,
    numeric_split_finder,
)
from silva.engine.jit import kernel
from silva.engine.nodes import (
    BEST_FIRST,
    BREADTH_FIRST,
    GRADIENT_NODE,
    LEAF,
    NO_HISTOGRAM,
    SCRATCH,
    UNDEFINED,
    grow_records,
    grow_rows,
    link_child,
    new_frontier,
    new_pending,
    pop_frontier,
    push_frontier,
    release_slot,
    schedule_children_histograms,
    take_slot,
)
from silva.engine.partition import (
    PARALLEL_PARTITION_MIN_ROWS,
    goes_left,
    partition,
    partition_in_blocks,
)
from silva.engine.random import randint
from silva.engine.specialize import specialize

#: The binner's tables for a fit: bins per feature, categorical flags (uint8), the
#: missing bin, the split thresholds (n_features, n_bins) and uint64 words per category
#: bitset.
GradientData = namedtuple("GradientData", [
    "n_value_bins", "is_categorical", "missing_bin", "bin_thresholds", "n_words"])

#: A fit's growth rules: ``params`` (see :mod:`silva.engine.gradient_splitting`),
#: ``max_leaf_nodes <= 0`` unlimited, ``depthwise`` (level by level) or leaf-wise growth,
#: ``features_per_node`` (colsample_bynode), ``monotonic`` (int8 per feature: -1, 0, +1),
#: ``interaction_sets`` (n_sets, n_features) uint8 (no sets: no constraint).
GradientRules = namedtuple("GradientRules", [
    "params", "max_depth", "max_leaf_nodes", "depthwise", "features_per_node", "monotonic",
    "interaction_sets"])

# Bound to False in the serial copies (compiled_gradient_grower), which then compile no
# parallel region for a split's children (children_pass): each node is built with
# node_histogram and searched with find_best_split.
PAIR_SEARCH = True
# Bound to False in the serial copies too: they compile no parallel partition (see
# partition_in_blocks), which nodes of PARALLEL_PARTITION_MIN_ROWS samples or more take
# with several threads.
PARALLEL_PARTITION = True
# Bound to False in the copies for wide data, whose histograms are summed in feature
# tiles by node_histogram: children_pass then only subtracts and scans.
CHILDREN_BUILDS = True

#: A tree's split-search buffers (see :func:`new_search_buffers`).
_SearchBuffers = namedtuple("_SearchBuffers", [
    "candidates", "feature_score", "feature_bin", "feature_missing_left", "feature_left",
    "feature_bitset", "scan_scratch", "rng_state"])


def gradient_data(n_value_bins, is_categorical, missing_bin, bin_thresholds, n_words):
    """:class:`GradientData`, each field of the one type the compiled grower takes."""
    return GradientData(n_value_bins, is_categorical, np.int64(missing_bin), bin_thresholds,
                        np.int64(n_words))


def gradient_rules(params, max_depth, max_leaf_nodes, depthwise, features_per_node,
                   monotonic, interaction_sets):
    """:class:`GradientRules`, each field of the one type the compiled grower takes."""
    return GradientRules(params, np.int64(max_depth), np.int64(max_leaf_nodes),
                         np.bool_(depthwise), np.int64(features_per_node), monotonic,
                         interaction_sets)


@kernel()
def node_candidates(path_row, feature_mask, interaction_sets, features_per_node, rng_state,
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
        # Insertion sort: np.sort (and a slice assignment) cost a cold first fit seconds
        # of compiling, for a few dozen features at most.
        for i in range(1, features_per_node):
            f = candidates[i]
            k = i - 1
            while k >= 0 and candidates[k] > f:
                candidates[k + 1] = candidates[k]
                k -= 1
            candidates[k + 1] = f
        n = features_per_node
    return n


@kernel()
def _leaf_samples(table, work_index, sample_indices):
    """Every leaf's samples, from whichever half of the workspace holds them, into
    ``sample_indices[start:end]``. A vectorised copy of two views per leaf (see
    :mod:`silva.engine.array_copy`): an element loop indexing the 2-D index took 13 times
    longer (1.1 ms against 0.09 for 800,000 samples in 31 leaves)."""
    for node in range(table.shape[0]):
        row = table[node]
        if row.left == LEAF:
            copy_vector(sample_indices[row.start:row.end],
                        work_index[row.data_half, row.start:row.end])


@kernel()
def left_weight(hist_f, n_bins_f, missing_bin, split_bin, missing_left, categorical,
                 bitset_row):
    """Total weight (channel ``WEIGHT_CHANNEL`` of one feature's histogram ``hist_f``) of
    the samples a split sends left: the bins :func:`~silva.engine.partition.goes_left`
    sends left, the missing bin included when ``missing_left``."""
    total = hist_f[missing_bin, WEIGHT_CHANNEL] if missing_left else 0.0
    for b in range(n_bins_f):
        if goes_left(b, missing_bin, split_bin, missing_left, categorical, bitset_row):
            total += hist_f[b, WEIGHT_CHANNEL]
    return total


@kernel()
def new_search_buffers(n_features, n_bins, n_words, seed):
    rng_state = np.empty(1, dtype=np.uint64)
    rng_state[0] = seed
    return _SearchBuffers(
        np.empty(n_features, dtype=np.int64), np.empty(n_features),
        np.empty(n_features, dtype=np.int64), np.empty(n_features, dtype=np.uint8),
        np.empty((n_features, 3)), np.zeros((n_features, n_words), dtype=np.uint64),
        np.empty((SCAN_SCRATCH_ROWS, n_bins)), rng_state)


# The grower's steps are inlined into it (inline="always") and take the arrays they read
# as arguments, which the grower takes out of its named tuples once per tree. Steps that
# took the named tuples, or were called apart (each call passing the tuples' arrays as
# some hundred scalar arguments), added a few hundred nanoseconds per node: forests of
# fully grown trees (five features searched per node) grew 20-30% slower.
@kernel(inline="always")
def _is_constrained(rules):
    if rules.params[MAX_DELTA_STEP] > 0.0:
        return True
    for f in range(rules.monotonic.shape[0]):
        if rules.monotonic[f] != 0:
            return True
    return False


@kernel(inline="always")
def _fill_node(row, sums, params):
    """Fill the new node ``row`` (its sample range, depth, bounds, slot and data half
    already set) from its channel ``sums``: weights, sums and its Newton value."""
    row.left = LEAF
    row.right = LEAF
    row.feature = UNDEFINED
    row.threshold = UNDEFINED
    row.missing_left = False
    row.is_categorical = False
    row.gain = 0.0
    row.weight = sums[WEIGHT_CHANNEL]
    row.sum_gradient = sums[1]
    row.sum_hessian = sums[2]
    row.value = leaf_output(sums[1], sums[2], params[L1], params[L2],
                            params[MAX_DELTA_STEP], row.lower, row.upper)
    row.split_gain = -np.inf


@kernel(inline="always")
def _open_pending_node(table, paths, node, parent, is_left, pending_node, sums, depth,
                       params):
    """Make the pending node ``pending_node`` (its range, bounds, histogram slot and data
    half) row ``node`` of ``table`` at ``depth``, the left (``is_left``) or right child of
    ``parent`` (-1: the root): linked to it, its path of features the parent's plus the
    parent's split feature, filled from its channel ``sums`` (:func:`_fill_node`).
    Shared by the dense and the sparse grower."""
    row = table[node]
    if parent >= 0:
        link_child(table, parent, node, is_left)
        copy_vector(paths[node], paths[parent])
        paths[node, table[parent].feature] = 1
    row.start = pending_node.start
    row.end = pending_node.end
    row.depth = depth
    row.lower = pending_node.lower
    row.upper = pending_node.upper
    row.hist_slot = pending_node.slot
    row.data_half = pending_node.half
    _fill_node(row, sums, params)


@kernel(inline="always")
def _accept_split(row, node_bitset, hist, gain, feature, split_bin, missing_left,
                  n_value_bins, is_categorical, missing_bin, feature_left, feature_bitset):
    """Keep the split found for ``row`` when it gains anything. Returns whether it was
    kept (the node joins the frontier)."""
    if feature < 0 or gain <= 0.0:
        return False
    row.split_gain = gain
    row.split_feature = feature
    row.split_bin = split_bin
    row.split_missing_left = missing_left
    # The scan tracks the left count; the left weight is only reported, so it is summed
    # for the winner alone.
    row.left_weight = left_weight(hist[feature], n_value_bins[feature], missing_bin,
                                   split_bin, missing_left, is_categorical[feature] != 0,
                                   feature_bitset[feature])
    row.left_gradient = feature_left[feature, 1]
    row.left_hessian = feature_left[feature, 2]
    if is_categorical[feature]:
        copy_vector(node_bitset, feature_bitset[feature])
    return True


@kernel(inline="always")
def _apply_split(row, is_categorical, bin_thresholds):
    """Write the node's chosen split as its decision rule."""
    feature = row.split_feature
    categorical = is_categorical[feature] != 0
    row.feature = feature
    row.missing_left = row.split_missing_left
    row.is_categorical = categorical
    row.gain = row.split_gain
    if categorical:
        row.threshold = UNDEFINED
    elif row.split_bin == ALL_VALUE_BINS:
        row.threshold = np.inf  # missing values versus the rest
    else:
        row.threshold = bin_thresholds[feature, row.split_bin]


@kernel(inline="always")
def _set_children(pending, pending_sums, row, n_left, half, params, monotonic, max_depth,
                  room):
    """The two children of the split node ``row``: sample ranges, channel sums, value
    bounds, and whether each may split (only those get histograms)."""
    start = row.start
    end = row.end
    mid = start + n_left
    for c in range(2):
        pending[c].half = half
    pending[0].start = start
    pending[0].end = mid
    pending[1].start = mid
    pending[1].end = end
    # Counts are exact in floating point: the partition's are the histograms'.
    pending_sums[0, COUNT_CHANNEL] = n_left
    pending_sums[0, 1] = row.left_gradient
    pending_sums[0, 2] = row.left_hessian
    pending_sums[0, WEIGHT_CHANNEL] = row.left_weight
    pending_sums[1, COUNT_CHANNEL] = end - mid
    pending_sums[1, 1] = row.sum_gradient - row.left_gradient
    pending_sums[1, 2] = row.sum_hessian - row.left_hessian
    pending_sums[1, WEIGHT_CHANNEL] = row.weight - row.left_weight

    # Children's bounds: LightGBM's basic monotone method.
    lower = row.lower
    upper = row.upper
    for c in range(2):
        pending[c].lower = lower
        pending[c].upper = upper
    direction = monotonic[row.feature]
    if direction != 0:
        l1 = params[L1]
        l2 = params[L2]
        max_delta_step = params[MAX_DELTA_STEP]
        wl = leaf_output(pending_sums[0, 1], pending_sums[0, 2], l1, l2, max_delta_step,
                         lower, upper)
        wr = leaf_output(pending_sums[1, 1], pending_sums[1, 2], l1, l2, max_delta_step,
                         lower, upper)
        middle = 0.5 * (wl + wr)
        if direction > 0:
            pending[0].upper = min(upper, middle)
            pending[1].lower = max(lower, middle)
        else:
            pending[0].lower = max(lower, middle)
            pending[1].upper = min(upper, middle)

    for c in range(2):
        pending[c].needs_histogram = (
            room and row.depth + 1 < max_depth
            and pending_sums[c, COUNT_CHANNEL] >= 2.0 * params[MIN_SAMPLES_LEAF]
            and pending_sums[c, 2] >= 2.0 * params[MIN_CHILD_WEIGHT]
            and pending[c].end - pending[c].start >= 2
        )


@kernel(nogil=True)
def grow_gradient_tree(workspace, data, rules, sample_indices, feature_mask, seed, threads,
                       statistics):
    """Grow one tree on the samples ``sample_indices`` (increasing; reordered in place).

    ``workspace``: :class:`~silva.engine.gradient_histogram.Workspace` of the fit;
    ``data``, ``rules``: :class:`GradientData`, :class:`GradientRules` (see
    :func:`gradient_data`, :func:`gradient_rules`); ``feature_mask`` (uint8): the tree's
    colsample_bytree draw; ``seed``: of its per-node feature draws; ``threads``: how many
    threads its histogram passes may use, 1 for no parallel region (the same row blocks
    run one after the other, so the tree is the same), as for trees grown at once in
    several threads: the call releases the GIL.
    ``statistics``: :class:`~silva.engine.gradient_histogram.GradientStatistics`; a
    sample's channels are ``(1, w_s g_s, w_s h_s, w_s)``, written into the samples'
    records by the root's histogram pass.

    ``min_samples_leaf`` (in ``params``) bounds each child's number of samples and
    ``min_child_weight`` its weighted hessian sum; a node is only split when it holds
    twice each.

    Returns ``(table, bitsets)``: the node table
    (:data:`silva.engine.nodes.GRADIENT_NODE` records; a leaf's samples are
    ``sample_indices[start:end]``) and the left category bitsets.
    """
    histograms = workspace.histograms
    work_index = workspace.index
    n_features = data.n_value_bins.shape[0]
    n_total = sample_indices.shape[0]
    search = new_search_buffers(n_features, data.missing_bin + 1, data.n_words, seed)
    # Per pending node (the two children of a split, searched together; see the pending
    # loop): its candidates and their scans' results.
    candidates = np.empty((2, n_features), dtype=np.int64)
    feature_score = np.empty((2, n_features))
    feature_bin = np.empty((2, n_features), dtype=np.int64)
    feature_missing_left = np.empty((2, n_features), dtype=np.uint8)
    feature_left = np.empty((2, n_features, 3))
    feature_bitset = np.zeros((2, n_features, data.n_words), dtype=np.uint64)
    n_search_candidates = np.zeros(2, dtype=np.int64)
    search_slots = np.zeros(2, dtype=np.int64)
    search_bounds = np.empty((2, 2))
    candidate_marks = np.empty((2, n_features), dtype=np.uint8)
    unlimited_leaves = rules.max_leaf_nodes <= 0
    order = BREADTH_FIRST if rules.depthwise else BEST_FIRST

    capacity = 64
    table = np.zeros(capacity, dtype=GRADIENT_NODE)
    bitsets = np.zeros((capacity, data.n_words), dtype=np.uint64)
    paths = np.zeros((capacity, n_features), dtype=np.uint8)
    # Reused from tree to tree: no allocation (and page faults) per tree, unless a tree
    # keeps more histograms at once than the workspace's pool holds.
    n_pool = histograms.shape[0] - MAX_BLOCKS
    pool = histograms[:n_pool]
    free_slots = list(range(n_pool - 1, -1, -1))
    scratch_hist = histograms[n_pool]
    parts = histograms[n_pool + 1:]
    frontier, frontier_head = new_frontier()
    pending, pending_sums = new_pending(N_CHANNELS)

    # The root's samples start in half 0.
    copy_vector(work_index[0], sample_indices)
    pending[0].end = n_total
    pool, slot = take_slot(pool, free_slots)
    # Flags and the start as np.bool_/np.int64, not literals: numba compiles a callee
    # (and everything it calls) apart for each literal argument it is given.
    node_histogram(pool[slot], scratch_hist, parts, workspace.codes, work_index[0],
                   workspace.stats, np.int64(0), n_total, n_features, np.bool_(False),
                   threads, statistics.two_lanes, statistics, np.bool_(True))
    pending[0].slot = slot
    # Every sample falls in one bin of feature 0 (the missing bin included).
    for b in range(data.missing_bin + 1):
        for c in range(N_CHANNELS):
            pending_sums[0, c] += pool[slot][0, b, c]
    pending[0].needs_histogram = True
    n_pending = 1
    # A small child's histogram left to children_pass (see the end of the loop), and
    # the parent's to subtract it from (there too, with several threads); the child is
    # pending[built_child], whose rows stay as they are until the next split.
    deferred_build = False
    deferred_subtract = False
    built_hist = scratch_hist
    parent_hist = scratch_hist
    built_child = 0
    children_half = 0
    # The named tuples' arrays as local names: taken out of a tuple at each node, an
    # array's reference count goes up and down (atomic operations) each time.
    n_value_bins = data.n_value_bins
    is_categorical = data.is_categorical
    missing_bin = data.missing_bin
    bin_thresholds = data.bin_thresholds
    params = rules.params
    monotonic = rules.monotonic
    interaction_sets = rules.interaction_sets
    features_per_node = rules.features_per_node
    max_depth = rules.max_depth
    max_leaf_nodes = rules.max_leaf_nodes
    constrained = _is_constrained(rules)
    columns = workspace.columns
    scan_scratch = search.scan_scratch
    rng_state = search.rng_state
    parent = -1
    depth = 0
    n_nodes = 0
    n_leaves = 1
    while True:
        # Create the pending nodes; those with a split join the frontier.
        n_search_candidates[1] = -1  # the root has no second node
        first_new = n_nodes
        n_nodes += n_pending
        table = grow_records(table, n_nodes)
        bitsets = grow_rows(bitsets, n_nodes)
        paths = grow_rows(paths, n_nodes)
        for p in range(n_pending):
            node = first_new + p
            _open_pending_node(table, paths, node, parent, p == 0, pending[p], pending_sums[p],
                               depth, params)
            row = table[node]
            # The candidates are drawn node by node, in order (they draw from rng_state).
            n_search_candidates[p] = -1  # no search: the node stays a leaf
            if pending[p].needs_histogram and row.hist_slot >= 0:
                n_search_candidates[p] = node_candidates(
                    paths[node], feature_mask, interaction_sets, features_per_node,
                    rng_state, candidates[p])
                search_slots[p] = row.hist_slot
                search_bounds[p, 0] = row.lower
                search_bounds[p, 1] = row.upper
        # (PAIR_SEARCH first in the condition: numba then prunes the branch, and the
        # serial copies compile no children_pass.)
        if PAIR_SEARCH and threads > 1:
            searched = True
            children_pass(built_hist, parent_hist, deferred_build, deferred_subtract,
                          workspace.codes, work_index[children_half], workspace.stats,
                          pending[built_child].start, pending[built_child].end,
                          statistics.two_lanes, statistics, pool,
                          search_slots, candidates, n_search_candidates, candidate_marks,
                          n_value_bins, is_categorical, monotonic, missing_bin,
                          pending_sums, params, search_bounds, constrained, feature_score,
                          feature_bin, feature_missing_left, feature_left, feature_bitset,
                          np.int64(threads))
        else:
            searched = False
        deferred_build = False
        deferred_subtract = False
        for p in range(n_pending):
            node = first_new + p
            row = table[node]
            opened = False
            if n_search_candidates[p] >= 0:
                hist = pool[row.hist_slot]
                if searched:
                    gain, feature, split_bin, missing_left = best_scanned_split(
                        candidates[p], n_search_candidates[p], pending_sums[p], params,
                        row.lower, row.upper, constrained, feature_score[p],
                        feature_bin[p], feature_missing_left[p])
                else:
                    gain, feature, split_bin, missing_left = find_best_split(
                        hist, candidates[p], n_search_candidates[p], n_value_bins,
                        is_categorical, monotonic, missing_bin, pending_sums[p], params,
                        row.lower, row.upper, constrained, feature_score[p],
                        feature_bin[p], feature_missing_left[p], feature_left[p],
                        feature_bitset[p], scan_scratch)
                opened = _accept_split(row, bitsets[node], hist, gain, feature, split_bin,
                                       missing_left, n_value_bins, is_categorical,
                                       missing_bin, feature_left[p], feature_bitset[p])
            if opened:
                push_frontier(frontier, frontier_head, order, row.split_gain, node)
            else:
                release_slot(row, free_slots)

        # The next node to split.
        if not unlimited_leaves and n_leaves >= max_leaf_nodes:
            break
        node = pop_frontier(frontier, frontier_head, order)
        if node < 0:
            break
        n_leaves += 1
        row = table[node]
        _apply_split(row, is_categorical, bin_thresholds)
        if (PARALLEL_PARTITION and threads > 1
                and row.end - row.start >= PARALLEL_PARTITION_MIN_ROWS):
            n_left = partition_in_blocks(
                columns[row.feature], work_index, row.data_half, row.start, row.end,
                missing_bin, row.split_bin, row.missing_left, row.is_categorical,
                bitsets[node], np.int64(threads))
        else:
            n_left = partition(columns[row.feature], work_index, row.data_half, row.start,
                               row.end, missing_bin, row.split_bin, row.missing_left,
                               row.is_categorical, bitsets[node])
        children_half = 1 - row.data_half
        _set_children(pending, pending_sums, row, n_left, children_half, params, monotonic,
                      max_depth, unlimited_leaves or n_leaves < max_leaf_nodes)

        # Histograms for the children that may split: the smaller child's is built, the
        # larger's is the parent's minus it.
        parent_slot = row.hist_slot
        row.hist_slot = -1
        pool, smaller, target, subtract = schedule_children_histograms(
            pending, n_left, row.end - row.start - n_left, parent_slot, pool, free_slots)
        if target != NO_HISTOGRAM:
            built_hist = scratch_hist if target == SCRATCH else pool[target]
            parent_hist = pool[parent_slot] if subtract else scratch_hist
            built_child = smaller
            build_start = pending[smaller].start
            build_end = pending[smaller].end
            # With several threads, the children's scan region (children_pass) sums a
            # node too small for row blocks, and subtracts any, each thread for its
            # features: the same sums, the same differences.
            in_region = PAIR_SEARCH and threads > 1
            deferred_build = (in_region and CHILDREN_BUILDS
                              and build_end - build_start < 2 * BLOCK_ROWS)
            deferred_subtract = in_region and subtract
            if not deferred_build:
                node_histogram(built_hist, parent_hist, parts, workspace.codes,
                               work_index[children_half], workspace.stats, build_start,
                               build_end, n_features,
                               np.bool_(subtract and not deferred_subtract), threads,
                               statistics.two_lanes, statistics, np.bool_(False))
        n_pending = 2
        parent = node
        depth = row.depth + 1

    table = table[:n_nodes].copy()
    _leaf_samples(table, work_index, sample_indices)
    return table, bitsets[:n_nodes].copy()


@kernel(nogil=True)
def grow_sparse_gradient_tree(workspace, data, rules, sample_indices, feature_mask, seed,
                              statistics):
    """:func:`grow_gradient_tree` on a sparse workspace
    (:class:`~silva.engine.gradient_sparse.SparseWorkspace`): the same steps, rules and
    random draws, with ragged histograms summed from each sample's non-default entries
    (:func:`~silva.engine.gradient_sparse.sparse_node_histogram`), the split search on
    them (:func:`~silva.engine.gradient_sparse.find_best_sparse_split`), and the
    partition reading the split feature's codes from a column filled for it. Serial:
    a sparse pass adds a few entries per sample, too little work for a parallel region.

    The tree is the dense grower's on the same data, up to floating-point rounding of
    the sums (a feature's default bin is the node's totals minus its other bins, and
    the dense passes over large nodes add row blocks' sums): a near-tie between two
    candidate splits may then go the other way. Returns ``(table, bitsets)`` as
    :func:`grow_gradient_tree` does.
    """
    histograms = workspace.histograms
    work_index = workspace.index
    bin_offsets = workspace.bin_offsets
    default_bin = workspace.default_bin
    n_features = data.n_value_bins.shape[0]
    n_total = sample_indices.shape[0]
    max_width = 1
    for f in range(n_features):
        max_width = max(max_width, bin_offsets[f + 1] - bin_offsets[f])
    search = new_search_buffers(n_features, max_width, data.n_words, seed)
    candidates = np.empty(n_features, dtype=np.int64)
    feature_score = np.empty(n_features)
    feature_bin = np.empty(n_features, dtype=np.int64)
    feature_missing_left = np.empty(n_features, dtype=np.uint8)
    feature_left = np.empty((n_features, 3))
    feature_bitset = np.zeros((n_features, data.n_words), dtype=np.uint64)
    n_search_candidates = np.zeros(2, dtype=np.int64)
    unlimited_leaves = rules.max_leaf_nodes <= 0
    order = BREADTH_FIRST if rules.depthwise else BEST_FIRST

    capacity = 64
    table = np.zeros(capacity, dtype=GRADIENT_NODE)
    bitsets = np.zeros((capacity, data.n_words), dtype=np.uint64)
    paths = np.zeros((capacity, n_features), dtype=np.uint8)
    n_pool = histograms.shape[0] - 1
    pool = histograms[:n_pool]
    free_slots = list(range(n_pool - 1, -1, -1))
    # The pool holds (n_slots, 1, total_bins, 4): one ragged histogram per slot, in the
    # nodes module's slot books, which take one (feature, bin, channel) block per slot.
    scratch_hist = histograms[n_pool, 0]
    frontier, frontier_head = new_frontier()
    pending, pending_sums = new_pending(N_CHANNELS)

    copy_vector(work_index[0], sample_indices)
    pending[0].end = n_total
    pool, slot = take_slot(pool, free_slots)
    sparse_node_histogram(pool[slot, 0], scratch_hist, workspace, work_index[0], np.int64(0),
                          n_total, np.bool_(False), statistics, np.bool_(True),
                          pending_sums[0])
    pending[0].slot = slot
    pending[0].needs_histogram = True
    n_pending = 1
    n_value_bins = data.n_value_bins
    is_categorical = data.is_categorical
    missing_bin = data.missing_bin
    bin_thresholds = data.bin_thresholds
    params = rules.params
    monotonic = rules.monotonic
    interaction_sets = rules.interaction_sets
    features_per_node = rules.features_per_node
    max_depth = rules.max_depth
    max_leaf_nodes = rules.max_leaf_nodes
    constrained = _is_constrained(rules)
    column = workspace.column
    scan_scratch = search.scan_scratch
    rng_state = search.rng_state
    child_sums = np.empty(N_CHANNELS)
    parent = -1
    depth = 0
    n_nodes = 0
    n_leaves = 1
    while True:
        first_new = n_nodes
        n_nodes += n_pending
        table = grow_records(table, n_nodes)
        bitsets = grow_rows(bitsets, n_nodes)
        paths = grow_rows(paths, n_nodes)
        for p in range(n_pending):
            node = first_new + p
            _open_pending_node(table, paths, node, parent, p == 0, pending[p], pending_sums[p],
                               depth, params)
            row = table[node]
            # The candidates are drawn node by node, in order, as the dense grower draws
            # them; each node is then searched at once (there is no pair search).
            n_search_candidates[p] = -1
            if pending[p].needs_histogram and row.hist_slot >= 0:
                n_search_candidates[p] = node_candidates(
                    paths[node], feature_mask, interaction_sets, features_per_node,
                    rng_state, candidates)
            opened = False
            if n_search_candidates[p] >= 0:
                hist = pool[row.hist_slot, 0]
                gain, feature, split_bin, missing_left = find_best_sparse_split(
                    hist, bin_offsets, default_bin, candidates, n_search_candidates[p],
                    n_value_bins, is_categorical, monotonic, pending_sums[p], params,
                    row.lower, row.upper, constrained, feature_score, feature_bin,
                    feature_missing_left, feature_left, feature_bitset, scan_scratch)
                if feature >= 0 and gain > 0.0:
                    hist_f, local_missing = feature_bins(hist, bin_offsets, feature)
                    row.split_gain = gain
                    row.split_feature = feature
                    row.split_bin = split_bin
                    row.split_missing_left = missing_left
                    row.left_weight = left_weight(
                        hist_f, n_value_bins[feature], local_missing, split_bin,
                        missing_left, is_categorical[feature] != 0,
                        feature_bitset[feature])
                    row.left_gradient = feature_left[feature, 1]
                    row.left_hessian = feature_left[feature, 2]
                    if is_categorical[feature]:
                        copy_vector(bitsets[node], feature_bitset[feature])
                    opened = True
            if opened:
                push_frontier(frontier, frontier_head, order, row.split_gain, node)
            else:
                release_slot(row, free_slots)

        if not unlimited_leaves and n_leaves >= max_leaf_nodes:
            break
        node = pop_frontier(frontier, frontier_head, order)
        if node < 0:
            break
        n_leaves += 1
        row = table[node]
        _apply_split(row, is_categorical, bin_thresholds)
        fill_feature_column(column, workspace, row.feature)
        n_left = partition(column, work_index, row.data_half, row.start, row.end,
                           missing_bin, row.split_bin, row.missing_left,
                           row.is_categorical, bitsets[node])
        children_half = 1 - row.data_half
        _set_children(pending, pending_sums, row, n_left, children_half, params, monotonic,
                      max_depth, unlimited_leaves or n_leaves < max_leaf_nodes)

        parent_slot = row.hist_slot
        row.hist_slot = -1
        pool, smaller, target, subtract = schedule_children_histograms(
            pending, n_left, row.end - row.start - n_left, parent_slot, pool, free_slots)
        if target != NO_HISTOGRAM:
            sparse_node_histogram(scratch_hist if target == SCRATCH else pool[target, 0],
                                  pool[parent_slot, 0] if subtract else scratch_hist,
                                  workspace, work_index[children_half],
                                  pending[smaller].start, pending[smaller].end,
                                  np.bool_(subtract), statistics, np.bool_(False),
                                  child_sums)
        n_pending = 2
        parent = node
        depth = row.depth + 1

    table = table[:n_nodes].copy()
    _leaf_samples(table, work_index, sample_indices)
    return table, bitsets[:n_nodes].copy()


def compiled_gradient_grower(parallel=True, categorical=True, wide=False):
    """:func:`grow_gradient_tree` compiled for the paths a fit takes: ``parallel=False``
    compiles no parallel histogram pass (a fit too small for one, see
    :func:`~silva.engine.gradient_histogram.has_parallel_passes`, never starts one, and
    with ``threads=1`` none runs), ``categorical=False`` no category
    scan; ``wide=True`` (many features, see
    :func:`~silva.engine.gradient_histogram.is_wide`) sums histograms in feature tiles.
    Each left-out path is a second or more of a cold first fit; the trees grown
    are the same. Eight copies at most, one per (parallel, categorical, wide)."""
    if parallel and categorical and not wide:
        return grow_gradient_tree
    bindings = {}
    if wide:
        bindings["node_histogram"] = wide_node_histogram(parallel)
        bindings["CHILDREN_BUILDS"] = False
    if not parallel:
        bindings["PAIR_SEARCH"] = False
        bindings["PARALLEL_PARTITION"] = False
        if not wide:
            bindings["node_histogram"] = serial_node_histogram()
    if not categorical:
        bindings["find_best_split"] = numeric_split_finder()
        if parallel:
            bindings["children_pass"] = numeric_children_pass()
    suffix = (("" if parallel else "serial") + ("" if categorical else "numeric")
              + ("wide" if wide else ""))
    return specialize(grow_gradient_tree, suffix, **bindings)
