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

import contextlib
import functools
import threading
from collections import namedtuple

import numpy as np

from silva.engine import cart_sparse
from silva.engine.absolute_error import node_median_and_impurity
from silva.engine.array_copy import copy_rows, copy_vector
from silva.engine.binning import midpoint
from silva.engine.criteria import (
    ABSOLUTE_ERROR,
    EPSILON,
    IMPURITY_OF_CRITERION,
    MULTI_GINI,
    SQUARED_ERROR,
    impurity,
    leaf_value,
    multi_output_impurity,
    multi_output_leaf_value,
    node_weight,
)
from silva.engine.histogram import build_histogram, serial_kernels, subtract_histogram
from silva.engine.jit import CALLED_FROM_COMPILED_CODE, kernel
from silva.engine.monotone import clip_node_value, middle_value
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
    link_child,
    new_array_stack,
    new_frontier,
    pending_nodes,
    pop_array_stack,
    pop_frontier,
    push_array_stack,
    push_frontier,
    release_slot,
    schedule_children_histograms,
    take_slot,
)
from silva.engine.significance import split_p_value
from silva.engine.specialize import specialize, specialize_options
from silva.engine.splitting import (
    class_code_column,
    find_node_split,
    kernel_suffix,
    make_split_scratch,
    split_finder,
    variant_suffix,
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
    "min_significance", "gather_codes",
])

#: One tree's samples: statistic channels (:mod:`silva.engine.criteria`), the raw
#: targets and weights (read by absolute_error only), the in-bag sample ids (reordered
#: in place by the grower) and the seed of its random choices.
CartSamples = namedtuple("CartSamples", ["stats", "y", "weight", "sample_indices", "seed"])

#: A tree's working buffers, allocated once per tree (see :func:`new_buffers`).
_Buffers = namedtuple("_Buffers", [
    "ordered_codes", "code_words", "ordered_stats", "right_indices", "right_words",
    "right_stats", "split_scratch", "split_bitset", "scratch_histogram", "frontier_stack",
    "rng_state", "opened", "table", "values", "bitsets", "node_sums", "pending",
    "pending_sums",
])

#: Nodes the node table and its per-node arrays hold before they first grow.
INITIAL_NODE_CAPACITY = 64


def cart_rules(criterion, n_classes, n_values, max_depth, min_samples_split,
               min_samples_leaf, min_weight_leaf, max_leaf_nodes, min_impurity_decrease,
               max_features, use_random, histogram_min_samples, parallel_min_work,
               min_significance=1.0, gather_codes=False):
    """:class:`CartRules`, each field cast to the one type the compiled grower takes (a
    Python int in place of a float would compile the grower a second time)."""
    return CartRules(
        np.int64(criterion), np.int64(n_classes), np.int64(n_values), np.int64(max_depth),
        np.int64(min_samples_split), np.int64(min_samples_leaf),
        np.float64(min_weight_leaf), np.int64(max_leaf_nodes),
        np.float64(min_impurity_decrease), np.int64(max_features), np.bool_(use_random),
        np.int64(histogram_min_samples), np.int64(parallel_min_work),
        np.float64(min_significance), np.bool_(gather_codes))


# Bound per criterion by compiled_grower() (see silva.engine.specialize): grow_tree,
# _open_node and _split_node are templates, compiled only as the copies
# compiled_grower() makes.
#
# The grower's steps take the arrays they read as arguments, which the grower takes out
# of its named tuples once per tree. Inlined (inline="always"), steps that took the
# named tuples added a few hundred nanoseconds per node in reference counts: forests of
# fully grown trees grew 20-30% slower. The two per-node steps that allocate nothing
# (_open_node, _split_node) are instead called apart, compiled without reference
# counts, in the copies whose split search allows it (see compiled_grower).
ORDER_STATISTICS = False  # absolute_error: node medians from order statistics
SIGNIFICANCE = True  # False: no significance test (min_significance >= 1), not compiled
MONOTONE = False  # True: monotonic constraints (silva.engine.monotone), compiled only then
SPARSE = False  # True in _partition's copy for silva.engine.cart_sparse alone
# True in the parallel dense copies (but absolute_error's): nodes below the parallel
# threshold open through _open_small_node, the serial copy's step without reference
# counts (see compiled_grower), and only the large ones through the inlined
# _open_node, whose parallel search allocates.
SMALL_NODES_APART = False
_open_small_node = None


# This thread's per-sample buffers of the last tree it grew, while it grows a forest's
# trees (see reuse_buffers_in_this_thread); absent or None otherwise.
_THREAD_BUFFERS = threading.local()


def reuse_buffers_in_this_thread(enabled=True):
    """While ``enabled``, :func:`new_buffers` hands each tree this thread grows the
    per-sample buffers of the previous one (the ordered codes and channels, the
    partition's right side, the split scratch) when their shapes match, instead of
    allocating them anew: a forest's trees all have them alike. Allocating them cost a
    small forest about 10 us per tree with the GIL held, and a larger one fresh pages to
    fault in and clear (about 3% of an extra-trees fit on 4,000 rows, perf).

    Safe because every tree overwrites what it reads of them: each node's codes and
    channels are written from the root's before any is read, the scratch is written per
    node before it is read, the partition's buffers per split, and the two parts that
    must start as zeros stay so (the ordered codes' padding columns, which only move
    along with their rows, but for the rows' classes that a many-class classifier
    writes in the first of them at every root, and the bins' bitmap, which the search
    clears after use).
    The node table and its per-node arrays (values, bitsets, channel sums) are handed
    on too, at the capacity the largest tree so far grew them to, their used rows zeroed
    again (:func:`_node_arrays`). Each tree had grown its own from 64 rows by doubling,
    copying them about nine times and faulting in fresh pages for a tree of 20,000
    nodes: 3-4% of a fit of 100 extra trees on 16,000 rows of ten classes (the best of
    six fits each way, alternated in one process, one and two jobs), about 1% on binary
    rows (within the spread).

    The forest threads turn it on (:mod:`silva.engine.forest`) and off: the buffers of a
    large fit are not kept past it.
    """
    _THREAD_BUFFERS.store = {} if enabled else None


@contextlib.contextmanager
def buffers_reused_in_this_thread():
    """:func:`reuse_buffers_in_this_thread` within the block (a forest grown in the
    calling thread), and as it was before after it."""
    previous = getattr(_THREAD_BUFFERS, "store", None)
    reuse_buffers_in_this_thread()
    try:
        yield
    finally:
        _THREAD_BUFFERS.store = previous


def _per_sample_buffers(data, samples, gather_codes):
    """The buffers of :func:`new_buffers` whose size follows the tree's sample count:
    this thread's previous tree's when :func:`reuse_buffers_in_this_thread` is on and
    their shapes match, else new ones."""
    n_features = data.n_value_bins.shape[0]
    n_channels = samples.stats.shape[1]
    n_bins = data.missing_bin + 1
    n_total = samples.sample_indices.shape[0]
    codes_by_sample = data.codes_by_sample
    store = getattr(_THREAD_BUFFERS, "store", None)
    # Dense data alone: the sparse grower fills its codes its own way.
    key = None
    if store is not None and isinstance(data.bin_codes, np.ndarray):
        key = (n_total, n_features, codes_by_sample.dtype, n_channels,
               samples.sample_indices.dtype, n_bins, data.n_words, bool(gather_codes))
        if key in store:
            return store[key]
        # One set per thread: the last tree's (the node arrays are kept apart).
        for stale in [name for name in store if name != _NODE_ARRAYS]:
            del store[stale]
    # Each sample's codes and statistic channels, kept in the order of ``sample_indices``
    # (partitions move them along), so that a node's are the contiguous rows
    # ``[start, end)``. Deep in a tree a node's samples lie scattered over the data, and
    # reading them through ``sample_indices`` cost a cache miss per sample and level
    # (most of a deep forest's fit time); moving 30-odd bytes per sample along with its
    # index is cheaper. ``right_*`` hold a partition's right side. A sample's codes are
    # padded to whole 8-byte words and moved a word at a time (``code_words``): copying
    # 28 one-byte codes one by one made the partition about twice as slow.
    # With ``gather_codes`` (wide data, few features drawn per node) the codes are not kept
    # in order: one word per sample is, in which the split search gathers a drawn
    # feature's codes (see silva.engine.splitting.node_feature_codes).
    itemsize = codes_by_sample.dtype.itemsize
    n_code_words = 1 if gather_codes else (n_features * itemsize + 7) // 8
    ordered_codes = np.zeros((n_total, n_code_words * 8 // itemsize),
                             dtype=codes_by_sample.dtype)
    code_words = ordered_codes.view(np.uint64)
    buffers = (
        ordered_codes, code_words, np.empty((n_total, n_channels)),
        np.empty(n_total, dtype=samples.sample_indices.dtype), np.empty_like(code_words),
        np.empty((n_total, n_channels)),
        make_split_scratch(n_features, n_bins, n_channels, data.n_words),
        np.empty(data.n_words, dtype=np.uint64), np.empty((n_features, n_bins, n_channels)),
        # The depth-first frontier of the growers without best-first growth.
        np.empty(n_total + 1, dtype=np.int64))
    if key is not None:
        store[key] = buffers
    return buffers


# The thread store's key for the node arrays of the last tree (see _node_arrays).
_NODE_ARRAYS = "node arrays"


def _node_arrays(n_values, n_words, n_channels):
    """The node table and its per-node arrays (values, category bitsets, channel sums),
    all zeros: the last tree's in this thread, its used rows zeroed again, when
    :func:`reuse_buffers_in_this_thread` is on and their widths match (see
    :func:`_keep_node_arrays`), else new ones of :data:`INITIAL_NODE_CAPACITY` rows."""
    store = getattr(_THREAD_BUFFERS, "store", None)
    kept = store.pop(_NODE_ARRAYS, None) if store is not None else None
    if kept is not None:
        table, values, bitsets, node_sums, n_used = kept
        arrays = (table, values, bitsets, node_sums)
        if (values.shape[1], bitsets.shape[1], node_sums.shape[1]) == (
                n_values, n_words, n_channels):
            # Rows past n_used were never written since they were zeroed: the grower
            # writes rows in order, and grows an array by copying it into zeros.
            for array in arrays:
                array[:n_used].view(np.uint8).fill(0)
            return arrays
    capacity = INITIAL_NODE_CAPACITY
    return (np.zeros(capacity, dtype=CART_NODE), np.zeros((capacity, n_values)),
            np.zeros((capacity, n_words), dtype=np.uint64), np.zeros((capacity, n_channels)))


def _keep_node_arrays(table, values, bitsets, node_sums, n_used):
    """Keep a grown tree's node arrays for this thread's next tree (:func:`_node_arrays`
    zeroes them first), when :func:`reuse_buffers_in_this_thread` is on. The caller
    must be done with them before it grows that tree."""
    store = getattr(_THREAD_BUFFERS, "store", None)
    if store is not None:
        store[_NODE_ARRAYS] = (table, values, bitsets, node_sums, n_used)


def new_buffers(data, samples, gather_codes, n_values):
    """A tree's working buffers (:class:`_Buffers`) for :func:`grow_tree`, allocated here
    in numpy rather than in the compiled grower: each array constructor numba compiles
    is one more function per (dtype, dimensions) signature, and these allocations were
    about a tenth of a cold first fit's compile time (``benchmarks/profile_compile.py``).
    ``data`` and ``samples`` are the grower's :class:`CartData` and :class:`CartSamples`,
    ``n_values`` the width of a node's value.
    """
    n_channels = samples.stats.shape[1]
    # The node table and its per-node arrays start here; the grower grows them (twice the
    # capacity) when a tree outgrows them.
    return _Buffers(
        *_per_sample_buffers(data, samples, gather_codes),
        np.array([samples.seed], dtype=np.uint64), np.zeros(2, dtype=np.bool_),
        *_node_arrays(n_values, data.n_words, n_channels), *pending_nodes(n_channels))


def run_grower(grower, data, rules, samples, monotonic_cst):
    """Grow one tree with ``grower`` (a copy of :func:`grow_tree` that
    :func:`compiled_grower` made) on buffers of its own: ``(table, values, bitsets)``
    trimmed to the node count (see :func:`grow_tree`).

    The table is returned as a view of the grower's buffer, not a copy: its callers
    read it field by field (each field a copy of its own, see
    :meth:`silva.engine.tree.Tree.from_grower`) and keep none of it, and copying the
    whole record table first was a few percent of a small forest's fit. The values and
    bitsets, which a tree keeps as they are, are copied so as not to hold the
    buffers' spare capacity. So is a table of one node: numpy calls a one-element field
    view contiguous, so the tree's ``np.ascontiguousarray`` would keep that view, and
    with it the whole buffer (a forest's pure bootstrap samples make such trees)."""
    buffers = new_buffers(data, samples, rules.gather_codes, rules.n_values)
    table, values, bitsets, node_sums, n_nodes = grower(data, rules, samples, buffers,
                                                        monotonic_cst)
    # Zeroed again only when this thread grows its next tree: the caller has read the
    # table by then.
    _keep_node_arrays(table, values, bitsets, node_sums, n_nodes)
    table = table[:n_nodes] if n_nodes > 1 else table[:n_nodes].copy()
    return table, values[:n_nodes].copy(), bitsets[:n_nodes].copy()


@kernel(inline="always")
def _new_frontier(buffers):
    """The grower's empty frontier: :func:`silva.engine.nodes.new_frontier`'s list,
    which best-first growth keeps as a heap. The copies that grow depth-first alone
    bind :func:`_new_stack_frontier` instead."""
    return new_frontier()


@kernel(inline="always")
def _new_stack_frontier(buffers):
    """:func:`_new_frontier` of the copies that grow depth-first alone: a stack in
    ``buffers.frontier_stack`` (see :func:`silva.engine.nodes.push_array_stack`)."""
    return new_array_stack(buffers.frontier_stack)


@kernel(inline="always")
def _order_root_samples(data, samples, buffers, root_sums, class_column):
    """Copy every sample's codes and channels into the tree's order; sum the channels.
    With ``class_column`` >= 0 (see :func:`silva.engine.splitting.class_code_column`),
    write each sample's class there: the class channel that is not zero (class 0 when
    none is: a sample of zero weight adds nothing to any). Returns the column written,
    or -1 when none is (the codes not kept in order): what the partitions may read."""
    n_features = data.n_value_bins.shape[0]
    # Arrays out of the named tuples first: read from a tuple inside the loop, each
    # access counted a reference up and down (atomic operations), per sample.
    stats = samples.stats
    sample_indices = samples.sample_indices
    codes_by_sample = data.codes_by_sample
    ordered_codes = buffers.ordered_codes
    ordered_stats = buffers.ordered_stats
    # None when the codes are gathered (see _new_buffers).
    n_kept = n_features if ordered_codes.shape[1] >= n_features else 0
    for i in range(sample_indices.shape[0]):
        s = sample_indices[i]
        for f in range(n_kept):
            ordered_codes[i, f] = codes_by_sample[s, f]
        for c in range(stats.shape[1]):
            ordered_stats[i, c] = stats[s, c]
            root_sums[c] += stats[s, c]
        if class_column >= 0 and n_kept > 0:
            sample_class = 0
            for c in range(1, stats.shape[1]):
                if stats[s, c] != 0.0:
                    sample_class = c - 1
            ordered_codes[i, class_column] = sample_class
    return class_column if n_kept > 0 else np.int64(-1)


@kernel(inline="always")
def _fill_node(row, sums, node_values, rules, y, weight, sample_indices):
    """Fill the new node ``row`` (its sample range, depth and histogram slot already set)
    from its channel ``sums``: impurity, value, weights. Returns ``(splittable,
    impurity)``: whether no stopping rule makes it a leaf."""
    criterion = rules.criterion
    if ORDER_STATISTICS:
        node_values[0], node_impurity = node_median_and_impurity(
            y, weight, sample_indices, row.start, row.end)
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
    splittable = not (
        row.depth >= rules.max_depth
        or sums[0] < rules.min_samples_split
        or sums[0] < 2 * rules.min_samples_leaf
        or node_total_weight < 2 * rules.min_weight_leaf
        or node_impurity <= EPSILON
    )
    return splittable, node_impurity


@kernel(inline="always")
def _accept_split(row, node_bitset, sums, gain, feature, last_left_bin, missing_left,
                  rules, is_categorical, split_scratch, split_bitset):
    """Keep the split found for ``row`` unless the significance test or
    ``min_impurity_decrease`` rejects it. Returns whether it was kept (the node joins
    the frontier)."""
    if (SIGNIFICANCE and feature >= 0 and rules.min_significance < 1.0
            and rules.criterion < SQUARED_ERROR
            and split_p_value(sums, winning_left_sums(split_scratch))
            > rules.min_significance):
        feature = -1
    if feature < 0 or gain + EPSILON < rules.min_impurity_decrease:
        return False
    row.split_gain = gain
    row.split_feature = feature
    row.split_bin = last_left_bin
    row.split_missing_left = missing_left
    if is_categorical[feature]:
        copy_vector(node_bitset, split_bitset)
    return True


@kernel(inline="always")
def _partition(row, node_bitset, left_sums, right_sums, is_categorical, missing_bin,
               sample_indices, bin_codes, ordered_codes, code_words, ordered_stats,
               right_indices, right_words, right_stats, class_column):
    """Stable partition of the node's samples by its chosen split, moving their ordered
    codes and channels (``code_words`` is ``ordered_codes`` as 8-byte words) along, the
    right side through the ``right_*`` buffers; sums each side's channels. Without
    every feature's codes in order (``gather_codes``), reads the split feature's from
    ``bin_codes``. Returns
    ``(n_left, largest_left_bin, smallest_right_bin)``: the bins adjacent to the
    threshold in this node (for CART's midpoint).

    ``class_column`` >= 0: the column of ``ordered_codes`` that holds each sample's
    class (see :func:`silva.engine.splitting.class_code_column`). A sample then adds
    to its side's sums the count's channel and its own class's alone: its other class
    channels hold +0.0, which leave a sum unchanged (a sum started at +0 is never -0),
    so the sums are the same to the bit as those of every channel."""
    feature = row.split_feature
    last_left_bin = row.split_bin
    missing_left = row.split_missing_left
    categorical = is_categorical[feature] != 0
    n_code_words = code_words.shape[1]
    if SPARSE:
        # The sparse grower (silva.engine.cart_sparse) passes the split feature's codes,
        # filled from its entries for this node's samples, as the one row of bin_codes.
        codes_in_order = False
        feature_codes = bin_codes[0]
    else:
        codes_in_order = ordered_codes.shape[1] >= bin_codes.shape[0]
        feature_codes = bin_codes[feature]
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
        code = np.int64(ordered_codes[i, feature] if codes_in_order else feature_codes[s])
        if code == missing_bin:
            go_left = missing_left
        elif categorical:
            word = node_bitset[code >> 6]
            go_left = (word >> np.uint64(code & 63)) & np.uint64(1) != 0
        else:
            go_left = code <= last_left_bin
        if code != missing_bin:
            largest_left_bin = max(largest_left_bin, code if go_left else -1)
            smallest_right_bin = min(smallest_right_bin, missing_bin + 1 if go_left else code)
        # Left rows are compacted in place (row start + n_left is at or before i),
        # right rows wait in the buffers: a stable partition. Without a branch on the
        # side: each row is written to both places and only its side's count moves on
        # (the other copy is overwritten by the next row, or lies past the side's
        # end), and each side's sums add the row's channels times 1 or 0 (a term
        # ``0 * value``, +0 or -0, leaves a sum unchanged, as in the split search).
        # The branch mispredicted about every other row of a split (perf: the most
        # frequent stall of the partition on fully grown extra trees).
        goes_left = np.int64(go_left)
        left_weight = np.float64(goes_left)
        right_weight = 1.0 - left_weight
        j = start + n_left
        sample_indices[j] = s
        right_indices[n_right] = s
        for w in range(n_code_words):
            word = code_words[i, w]
            code_words[j, w] = word
            right_words[n_right, w] = word
        if class_column < 0:
            for c in range(n_channels):
                value = ordered_stats[i, c]
                ordered_stats[j, c] = value
                right_stats[n_right, c] = value
                left_sums[c] += left_weight * value
                right_sums[c] += right_weight * value
        else:
            # The count's and the row's class's channels alone: 2 of 11 with ten classes
            # (perf: the sums' loads, adds and stores were most of the partition's time
            # on a ten-class extra-trees fit).
            for c in range(n_channels):
                value = ordered_stats[i, c]
                ordered_stats[j, c] = value
                right_stats[n_right, c] = value
            own_class = 1 + np.int64(ordered_codes[i, class_column])
            count = ordered_stats[i, 0]
            left_sums[0] += left_weight * count
            right_sums[0] += right_weight * count
            value = ordered_stats[i, own_class]
            left_sums[own_class] += left_weight * value
            right_sums[own_class] += right_weight * value
        n_left += goes_left
        n_right += 1 - goes_left
    mid = start + n_left
    copy_vector(sample_indices[mid:end], right_indices[:n_right])
    copy_rows(code_words[mid:end], right_words[:n_right])
    copy_rows(ordered_stats[mid:end], right_stats[:n_right])
    return n_left, largest_left_bin, smallest_right_bin


@kernel(inline="always")
def _apply_split(row, node_bitset, largest_left_bin, smallest_right_bin, is_categorical,
                 missing_bin, bin_lower, bin_upper):
    """Write the node's chosen split as its decision rule."""
    feature = row.split_feature
    categorical = is_categorical[feature] != 0
    row.feature = feature
    row.missing_left = row.split_missing_left
    row.is_categorical = categorical
    if categorical:
        row.threshold = UNDEFINED
    elif smallest_right_bin == missing_bin + 1:
        row.threshold = np.inf  # missing values versus the rest
    else:
        # Halfway between the node's largest value going left and its smallest going
        # right, as CART does: the same partition of the node as any threshold
        # between the two, and the most neutral one for unseen values.
        row.threshold = midpoint(bin_upper[feature, largest_left_bin],
                                 bin_lower[feature, smallest_right_bin])
    if not categorical:
        node_bitset[:] = 0


@kernel(inline="always")
def _open_node(table, node_sums, values, bitsets, pool, scratch_hist, node, rules, y,
               weight, sample_indices, bin_codes, ordered_codes, ordered_stats, stats,
               root_weight, n_value_bins, is_categorical, missing_bin, bin_lower,
               bin_upper, rng_state, split_scratch, split_bitset, monotonic_cst, min_value,
               max_value):
    """Fill the new ``node`` (its sample range, depth, histogram slot and channel sums
    already set): impurity and value, and, unless a stopping rule makes it a leaf, its
    best split. Returns whether it has a split to apply (it joins the frontier); its
    histogram slot is the caller's to release if not. At most 30 arguments: a longer
    call compiles to CALL_FUNCTION_EX, which numba cannot inline."""
    row = table[node]
    sums = node_sums[node]
    splittable, node_impurity = _fill_node(row, sums, values[node], rules, y, weight,
                                           sample_indices)
    # One return: inlined, an early one left numba more reference counts to keep.
    opened = False
    if splittable:
        use_histogram = row.hist_slot >= 0
        # Chosen before the call: a call of more than 30 arguments compiles to
        # CALL_FUNCTION_EX, which numba takes only without control flow inside.
        node_histogram = pool[row.hist_slot] if use_histogram else scratch_hist
        parallel = (row.end - row.start) * n_value_bins.shape[0] >= rules.parallel_min_work
        gain, feature, last_left_bin, missing_left = find_node_split(
            rules.criterion, node_histogram, use_histogram, parallel, bin_codes,
            ordered_codes, ordered_stats, stats, y, weight, sample_indices, row.start,
            row.end, sums, node_impurity, root_weight, n_value_bins, is_categorical,
            missing_bin, bin_lower, bin_upper, rules.min_samples_leaf,
            rules.min_weight_leaf, rules.max_features, rules.use_random, rng_state,
            rules.n_classes, split_scratch, split_bitset, monotonic_cst, min_value,
            max_value)
        opened = _accept_split(row, bitsets[node], sums, gain, feature, last_left_bin,
                               missing_left, rules, is_categorical, split_scratch,
                               split_bitset)
    return opened


@kernel(inline="always")
def _split_node(table, node, bitsets, pending_sums, is_categorical, missing_bin,
                sample_indices, bin_codes, ordered_codes, code_words, ordered_stats,
                right_indices, right_words, right_stats, bin_lower, bin_upper,
                class_column):
    """Apply ``node``'s chosen split: partition its samples (the children's channel
    sums into ``pending_sums``' two rows) and write its decision rule. Returns the
    number of samples going left."""
    row = table[node]
    node_bitset = bitsets[node]
    n_left, largest_left_bin, smallest_right_bin = _partition(
        row, node_bitset, pending_sums[0], pending_sums[1], is_categorical, missing_bin,
        sample_indices, bin_codes, ordered_codes, code_words, ordered_stats,
        right_indices, right_words, right_stats, class_column)
    _apply_split(row, node_bitset, largest_left_bin, smallest_right_bin, is_categorical,
                 missing_bin, bin_lower, bin_upper)
    return n_left


@kernel(inline="always")
def _children_histograms(pending, n_left, n_right, parent_slot, pool, free_slots,
                         scratch_hist, bin_codes, ordered_stats, sample_indices,
                         histogram_min_samples, parallel_min_work):
    """The children's histograms (see :func:`silva.engine.nodes.
    schedule_children_histograms`): a child of at least ``histogram_min_samples``
    samples gets one. ``ordered_stats``: the channels in the order of
    ``sample_indices``, as the partition left them. Returns the pool (it may have
    grown)."""
    n_features = bin_codes.shape[0]
    pending[0].needs_histogram = n_left >= histogram_min_samples
    pending[1].needs_histogram = n_right >= histogram_min_samples
    pool, smaller, target, subtract = schedule_children_histograms(
        pending, n_left, n_right, parent_slot, pool, free_slots)
    if target == NO_HISTOGRAM:
        return pool
    hist = scratch_hist if target == SCRATCH else pool[target]
    n_smaller = min(n_left, n_right)
    build_histogram(hist, bin_codes, ordered_stats, sample_indices, pending[smaller].start,
                    pending[smaller].end, n_smaller * n_features >= parallel_min_work)
    if subtract:
        subtract_histogram(pool[parent_slot], hist,
                           max(n_left, n_right) * n_features >= parallel_min_work)
    return pool


@kernel(nogil=True)
def grow_tree(data, rules, samples, buffers, monotonic_cst):
    """Grow one tree and return its arrays; ``samples.sample_indices`` is reordered in
    place (each node's samples contiguous, as the node table's ranges say).

    ``monotonic_cst`` (int8 per feature, -1, 0 or +1) constrains the tree in the copy
    :func:`compiled_grower` makes with ``monotone=True`` (see
    :mod:`silva.engine.monotone`): each node keeps value bounds, its value is clipped to
    them, and a split on a constrained feature bounds its children by its middle value.
    Other copies never read it.

    Call it through :func:`compiled_grower`, which compiles it for the criterion alone.
    ``data``, ``rules``, ``samples`` and ``buffers``: :class:`CartData`, :class:`CartRules`
    (see :func:`cart_rules`), :class:`CartSamples` and :func:`new_buffers`' working
    arrays. Returns ``(table, values, bitsets, node_sums, n_nodes)``: the node table
    (:data:`silva.engine.nodes.CART_NODE` records), the leaf values ``(., n_values)``, the
    left category bitsets ``(., n_words)`` and the channel sums (the arrays as grown, for
    the next tree to reuse), of which the first ``n_nodes`` rows are the tree's (the
    caller trims them: a copy compiled here is one more function to compile per array
    type).
    """
    n_features = data.n_value_bins.shape[0]
    n_channels = samples.stats.shape[1]
    n_total = samples.sample_indices.shape[0]

    capacity = buffers.table.shape[0]
    table = buffers.table
    values = buffers.values
    bitsets = buffers.bitsets
    node_sums = buffers.node_sums
    pool = aligned_histograms(np.int64(4), n_features, data.missing_bin + 1, n_channels)
    free_slots = [3, 2, 1, 0]
    frontier, frontier_head = _new_frontier(buffers)
    order = BEST_FIRST if rules.max_leaf_nodes > 0 else DEPTH_FIRST

    # The root is the first pending node; then the two children (left first) of each
    # split are.
    pending = buffers.pending
    pending_sums = buffers.pending_sums
    class_column = class_code_column(rules.criterion, rules.n_classes, n_channels,
                                     n_features, buffers.ordered_codes.shape[1],
                                     buffers.ordered_codes.itemsize)
    # The column the partitions read each sample's class from, or -1.
    class_column = _order_root_samples(data, samples, buffers, pending_sums[0],
                                       class_column)
    root_weight = node_weight(rules.criterion, pending_sums[0])
    pending[0].end = n_total
    if n_total >= rules.histogram_min_samples:
        pool, slot = take_slot(pool, free_slots)
        # np.int64(0), not 0: numba compiles a callee apart for each literal argument.
        build_histogram(pool[slot], data.bin_codes, buffers.ordered_stats,
                        samples.sample_indices, np.int64(0), n_total,
                        n_total * n_features >= rules.parallel_min_work)
        pending[0].slot = slot
    n_pending = 1
    opened = buffers.opened
    min_value = -np.inf
    max_value = np.inf
    if MONOTONE:
        classification = rules.criterion < SQUARED_ERROR
        # Each node's value bounds (as its sums are kept: children bound by their
        # parent's middle value when it is split), and those of the pending nodes.
        node_bounds = np.empty((capacity, 2))
        pending_bounds = np.empty((2, 2))
        pending_bounds[0, 0] = -np.inf
        pending_bounds[0, 1] = np.inf
    # The split search's inputs as local names: taken out of the named tuples at each
    # node, the arrays' reference counts went up and down some forty times per node
    # (atomic operations), which cost forests of fully grown trees a tenth of their time.
    bin_codes = data.bin_codes
    n_value_bins = data.n_value_bins
    is_categorical = data.is_categorical
    missing_bin = data.missing_bin
    bin_lower = data.bin_lower
    bin_upper = data.bin_upper
    stats = samples.stats
    y = samples.y
    weight = samples.weight
    sample_indices = samples.sample_indices
    ordered_codes = buffers.ordered_codes
    code_words = buffers.code_words
    ordered_stats = buffers.ordered_stats
    right_indices = buffers.right_indices
    right_words = buffers.right_words
    right_stats = buffers.right_stats
    rng_state = buffers.rng_state
    split_scratch = buffers.split_scratch
    split_bitset = buffers.split_bitset
    scratch_hist = buffers.scratch_histogram
    parallel_min_work = rules.parallel_min_work
    parent = -1
    depth = 0
    n_nodes = 0
    n_leaves = 1
    while True:
        # Create the pending nodes; those with a split join the frontier (right child
        # pushed first, so that depth-first growth splits the left child first).
        first_new = n_nodes
        n_nodes += n_pending
        if n_nodes > table.shape[0]:
            table = grow_records(table, n_nodes)
            values = grow_rows(values, n_nodes)
            bitsets = grow_rows(bitsets, n_nodes)
            node_sums = grow_rows(node_sums, n_nodes)
            if MONOTONE:
                node_bounds = grow_rows(node_bounds, n_nodes)
        for p in range(n_pending):
            node = first_new + p
            if MONOTONE:
                min_value = pending_bounds[p, 0]
                max_value = pending_bounds[p, 1]
                node_bounds[node, 0] = min_value
                node_bounds[node, 1] = max_value
            row = table[node]
            if parent >= 0:
                link_child(table, parent, node, p == 0)
            row.start = pending[p].start
            row.end = pending[p].end
            row.depth = depth
            row.hist_slot = pending[p].slot
            # Channel by channel: numba copies an array assigned to a slice to a
            # temporary first (in case the two overlap), an allocation per node.
            for c in range(n_channels):
                node_sums[node, c] = pending_sums[p, c]
            if SMALL_NODES_APART and (row.end - row.start) * n_features < parallel_min_work:
                opened[p] = _open_small_node(
                    table, node_sums, values, bitsets, pool, scratch_hist, node, rules, y,
                    weight, sample_indices, bin_codes, ordered_codes, ordered_stats, stats,
                    root_weight, n_value_bins, is_categorical, missing_bin, bin_lower,
                    bin_upper, rng_state, split_scratch, split_bitset, monotonic_cst,
                    min_value, max_value)
            else:
                opened[p] = _open_node(
                    table, node_sums, values, bitsets, pool, scratch_hist, node, rules, y,
                    weight, sample_indices, bin_codes, ordered_codes, ordered_stats, stats,
                    root_weight, n_value_bins, is_categorical, missing_bin, bin_lower,
                    bin_upper, rng_state, split_scratch, split_bitset, monotonic_cst,
                    min_value, max_value)
            if MONOTONE:
                # After the split search, which reads the bounds, not the value.
                clip_node_value(classification, values[node], min_value, max_value)
            if not opened[p]:
                release_slot(row, free_slots)
        for p in range(n_pending - 1, -1, -1):
            if opened[p]:
                push_frontier(frontier, frontier_head, order, table[first_new + p].split_gain,
                              first_new + p)

        # The next node to split.
        if order == BEST_FIRST and n_leaves >= rules.max_leaf_nodes:
            break
        node = pop_frontier(frontier, frontier_head, order)
        if node < 0:
            break
        n_leaves += 1
        n_left = _split_node(table, node, bitsets, pending_sums, is_categorical,
                             missing_bin, sample_indices, bin_codes, ordered_codes,
                             code_words, ordered_stats, right_indices, right_words,
                             right_stats, bin_lower, bin_upper, class_column)
        row = table[node]
        if MONOTONE:
            for p in range(2):
                pending_bounds[p, 0] = node_bounds[node, 0]
                pending_bounds[p, 1] = node_bounds[node, 1]
            constraint = monotonic_cst[row.feature]
            if constraint != 0:
                if ORDER_STATISTICS:
                    # absolute_error: the children's values are their weighted medians.
                    mid = row.start + n_left
                    left_median, _ = node_median_and_impurity(y, weight, sample_indices,
                                                              row.start, mid)
                    right_median, _ = node_median_and_impurity(y, weight, sample_indices,
                                                               mid, row.end)
                    middle = (left_median + right_median) / 2.0
                else:
                    middle = middle_value(classification, pending_sums[0], pending_sums[1])
                # The child on the constraint's low side is bounded above by the middle
                # value, the other below.
                low_side = 0 if constraint > 0 else 1
                pending_bounds[low_side, 1] = middle
                pending_bounds[1 - low_side, 0] = middle

        # The children: their ranges and histograms.
        mid = row.start + n_left
        pending[0].start = row.start
        pending[0].end = mid
        pending[1].start = mid
        pending[1].end = row.end
        parent_slot = row.hist_slot
        row.hist_slot = -1
        if parent_slot >= 0:
            pool = _children_histograms(pending, n_left, row.end - mid, parent_slot, pool,
                                        free_slots, scratch_hist, bin_codes, ordered_stats,
                                        sample_indices, rules.histogram_min_samples,
                                        parallel_min_work)
        else:
            # A parent without a histogram has children without one (the schedule would
            # say so too, but entering the step costs its array arguments' reference
            # counts: 2% of a forest of fully grown trees, whose nodes mostly sort).
            pending[0].slot = -1
            pending[1].slot = -1
        n_pending = 2
        parent = node
        depth = row.depth + 1

    return table, values, bitsets, node_sums, n_nodes


@functools.cache  # called once per tree: a forest asks 100 times for the same copy
def _called_from_grower(finder):
    """A copy of the split search ``finder`` (:func:`split_finder`) for the grower's
    node steps, compiled without a CPython wrapper: the wrapper unboxes each of the
    search's thirty-odd arguments and is compiled with it, in every cold first fit,
    though the grower calls the search from compiled code alone. The level-wise grower
    and the tests call ``finder`` itself from Python."""
    return specialize_options(finder, "from_grower", CALLED_FROM_COMPILED_CODE)


@functools.cache  # asked once per tree: a forest's trees all take the same copy
def compiled_grower(criterion, parallel=True, categorical=True, extras=True, monotone=False,
                    sparse=False, random=True, rows_only=False):
    """:func:`grow_tree` compiled for one criterion code alone, and for the paths a fit
    takes.

    The copy searches splits with that criterion's :func:`~silva.engine.splitting.
    split_finder` and compiles no other criterion's kernels. ``parallel=False`` compiles
    no parallel region (for fits whose root is below ``parallel_min_work``: none of
    their nodes would open one), ``categorical=False`` no category scan (no categorical
    feature), ``extras=False`` none of the significance test (``min_significance < 1``)
    and best-first growth's heap (``max_leaf_nodes > 0``), ``random=False`` none of the
    random splits (extra trees): paths the default trees, forests, bagging and AdaBoost
    never take. Each left-out path is a second or more of a cold first fit; the trees
    grown are the same.

    At most four copies per criterion, not one per combination of flags: each copy is a
    compile of its own (about 10 s), and a test suite or a varied workload would compile
    every combination it meets. A fit that needs the parallel paths (large data) gets
    the full copy; a serial fit without category scans or extras one of the two lean
    copies (numeric, no extras): the best splitter's, or extra trees' (``_random``,
    about 7 s less to compile for a default extra-trees fit than the serial copy of
    everything); any other serial fit the serial copy of everything else. The copy
    releases the GIL, so that a forest grows its trees on several threads at once.

    ``monotone=True`` (a fit with a monotonic constraint) is a copy of its own, named
    apart, for each of those: fits without constraints compile none of its code. So is
    each multi-output criterion code (:mod:`silva.engine.criteria`), whose copies read
    node impurities and values with the multi-output functions.

    ``sparse=True`` is the grower of :mod:`silva.engine.cart_sparse` (``data.bin_codes``
    a :class:`~silva.engine.cart_sparse.SparseColumns`): serial, without histograms,
    reading codes from the features' stored entries; copies of their own (``_sparse``),
    which a dense fit never compiles.

    ``rows_only=True`` says that no node of the fit holds a histogram and that every
    sample's codes are kept in node order (no ``gather_codes``): with random splits, every
    node is then searched by the fused search of its rows
    (:func:`~silva.engine.splitting.search_random_node`), as in a default extra-trees
    forest. Its lean copy (``_random_rows``) searches with a split finder compiled
    without the per-feature search (4-7 s of that forest's cold first fit on a slow
    core); other random fits (a single random-split tree, which builds histograms, or
    wide data, which gathers codes) take the lean ``_random`` copy, which has it. The
    trees are the same either way. The copy keeps the grower's own histogram steps,
    which it never runs: bound to the sparse grower's no-op steps, they saved a little
    more compile but made warm fits about a fifth slower (grow_tree's own time went
    from 8% to 21% of an extra-trees fit, in copies of the node steps' arguments).
    """
    if sparse:
        parallel = False
    lean = not (parallel or categorical or extras)
    categorical = extras = not lean
    random = random or not lean
    rows_only = rows_only and lean and random and criterion != ABSOLUTE_ERROR
    suffix = kernel_suffix(criterion)
    order_statistics = criterion == ABSOLUTE_ERROR
    if criterion >= MULTI_GINI:
        # Multi-output: a node's impurity is the mean over the outputs, its value one
        # entry per output (and class).
        node_functions = {"impurity": multi_output_impurity,
                          "leaf_value": multi_output_leaf_value}
    else:
        node_functions = {"impurity": IMPURITY_OF_CRITERION[criterion]}
    fill_node = specialize(_fill_node, suffix, ORDER_STATISTICS=order_statistics,
                           **node_functions)
    variant = variant_suffix(suffix, parallel=parallel, categorical=categorical,
                             extras=extras)
    if lean and random:
        variant += "_random_rows" if rows_only else "_random"
    if sparse:
        variant += "_sparse"
    if monotone:
        variant += "_monotone"
    node_bindings = {"_fill_node": fill_node,
                     "find_node_split": _called_from_grower(split_finder(
                         criterion, parallel, categorical, random=random,
                         monotone=monotone, sparse=sparse, rows_only=rows_only))}
    if not extras:
        node_bindings["_accept_split"] = specialize(_accept_split, "plain",
                                                    SIGNIFICANCE=False)
    # The dense grower's per-node steps, but for the parallel split search and
    # absolute_error's order statistics, allocate nothing: they are compiled apart,
    # without numba's reference counts. Inlined into grow_tree, each array they read or
    # view cost an atomic increment and decrement per node (about a third of a deep
    # tree's grow time in grow_tree's own code, under perf); called apart they pass
    # their arrays as plain arguments. LLVM then inlines them back into grow_tree's
    # module, as code compiled without reference counts, since the copies linked there
    # are private to it (silva.engine.jit): no argument is passed per node either.
    # Called from grow_tree alone: no CPython wrapper, whose unboxing of some thirty
    # arguments was about half a second of a cold first fit.
    nrt_free = {"_nrt": False, "inline": "never", **CALLED_FROM_COMPILED_CODE}
    if sparse:
        split_node = specialize(
            _split_node, variant,
            _partition=specialize(cart_sparse.partition_sparse, "cart",
                                  partition_node=specialize(_partition, "sparse",
                                                            SPARSE=True)))
    elif order_statistics:
        split_node = specialize(_split_node, variant)
    else:
        split_node = specialize_options(_split_node, "nrt_free", nrt_free)
    bindings = {"_split_node": split_node}
    if sparse or order_statistics:
        bindings["_open_node"] = specialize(_open_node, variant, **node_bindings)
    elif not parallel:
        bindings["_open_node"] = specialize_options(_open_node, variant, nrt_free,
                                                    **node_bindings)
    else:
        bindings["_open_node"] = specialize(_open_node, variant, **node_bindings)
        serial_variant = variant.replace(suffix, variant_suffix(suffix, parallel=False), 1)
        bindings["SMALL_NODES_APART"] = True
        bindings["_open_small_node"] = specialize_options(
            _open_node, serial_variant, nrt_free,
            **dict(node_bindings, find_node_split=_called_from_grower(split_finder(
                criterion, False, categorical, random=random, monotone=monotone))))
    if sparse:
        bindings.update(
            _order_root_samples=cart_sparse.order_root_samples_sparse,
            aligned_histograms=cart_sparse.no_histogram_pool,
            build_histogram=cart_sparse.no_histogram,
            _children_histograms=cart_sparse.no_children_histograms)
    if monotone:
        bindings["MONOTONE"] = True
        bindings["ORDER_STATISTICS"] = order_statistics
    if not parallel and not sparse:
        build, subtract = serial_kernels()
        bindings["build_histogram"] = build
        bindings["_children_histograms"] = specialize(
            _children_histograms, "serial", build_histogram=build,
            subtract_histogram=subtract)
    if not extras:
        # Depth-first alone: the frontier is a stack in an array (see push_array_stack).
        bindings.update(_new_frontier=_new_stack_frontier, push_frontier=push_array_stack,
                        pop_frontier=pop_array_stack)
    return specialize(grow_tree, variant, **bindings)
