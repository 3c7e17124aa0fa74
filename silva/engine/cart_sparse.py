"""Sparse CART growing: trees, forests and extra trees on a wide sparse X, grown from its
stored entries instead of a dense code matrix.

The dense grower (:mod:`silva.engine.grower`) reads a node's codes of a drawn feature
from the ``n_features x n_samples`` code matrix: every drawn feature costs the node's
rows, however few of them hold a stored value. Here each feature is kept as its
*non-default entries* (:meth:`silva.engine.binning.Binner.sparse_entries`: the rows
and codes of its stored values whose code is not the code of 0.0, the feature's
*default code*, rows increasing, CSC-like), and a node's split search costs the
feature's entries, not the node's rows. This is the sparse splitter of scikit-learn's
trees in spirit (it visits a feature's non-zero values in the node and counts the
zeros apart) and XGBoost's sparsity-aware split finding (Chen & Guestrin 2016, "XGBoost:
A Scalable Tree Boosting System", KDD, section 3.4: visit the present entries only, the
rest as one default), written for silva's binned CART grower:

- a tree keeps, for every sample id, its *position* in the grower's index array
  (``sample_position``; -1 for samples outside the tree, such as a bootstrap's
  out-of-bag rows), updated for a node's samples at each partition, so that "does this
  entry's row lie in the node ``[start, end)``" is one lookup;
- a feature's compact histogram in a node (:func:`compact_from_entries`) sums the
  statistic channels of its entries in the node into their bins; its default bin holds
  the node's other samples, its channel sums the node's sums minus those of the
  entries. The counts are exact; a default bin's non-integer sums (regression targets,
  fractional weights) may differ from the dense fit's by rounding (a subtraction
  instead of additions in sample order), so that a near tie may go the other way. With
  integer-valued statistics (classification without fractional weights) the sums are
  exact and the trees are the dense fit's;
- extra trees draw their threshold between the node's smallest and largest bins, which
  the same compact histogram gives (the default bin among them when the node has rows
  without an entry), scanned at the drawn position as from a dense histogram;
- in a node whose rows hold fewer entries than there are features (small nodes), the
  features with an entry in the node are marked first from the entries by row, and a
  drawn feature without one is skipped as constant at once: there most drawn features
  are, and reading each one's entries cost most of the search;
- where a feature has more entries than the node has rows (a small node deep in the
  tree, or a denser feature), the node's codes of the feature are gathered instead,
  each by a binary search of the feature's entry rows (:func:`gather_sparse_codes`),
  and searched as the dense grower searches gathered codes; categorical features are
  always searched this way;
- a split's partition reads the split feature's codes from one scratch column of
  ``n_samples`` codes, filled for the node's samples from the entries
  (:func:`fill_split_column`).

The random draws (feature order, extra trees' seeds) are the dense grower's, in the
same order, so the trees are those of the dense fit (up to the rounding above). The
kernels here are compiled only in the grower copies
:func:`silva.engine.grower.compiled_grower` makes with ``sparse=True``: a dense fit
compiles none of them. Criteria that need a node's samples in value order
(absolute_error) and level-wise forests (``bootstrap="poisson"``) keep the dense path.
"""

from collections import namedtuple

import numpy as np

from silva.engine.array_copy import copy_vector
from silva.engine.jit import kernel
from silva.engine.splitting import (
    DE_BRUIJN_64,
    DE_BRUIJN_POSITION,
    compact_from_samples,
    evaluate_numeric_feature,
    random_split_from_samples,
    scan_buffers,
)

#: A sparse tree's view of its features, the ``bin_codes`` of the sparse grower's
#: :class:`~silva.engine.grower.CartData`: the non-default entries of every feature
#: (``column_rows[column_start[f]:column_start[f + 1]]``, rows increasing, with their
#: ``column_codes``), each feature's ``default_code``, the tree's ``sample_position``
#: (int64 per sample id, -1 outside the tree) and the ``split_column`` (1, n_samples)
#: scratch the partition reads; the same entries by row (``row_features[row_start[s]:
#: row_start[s + 1]]``, the features where sample ``s`` has an entry), and the marks of
#: the features with an entry in the node last marked (:func:`_mark_node_features`).
SparseColumns = namedtuple("SparseColumns", [
    "column_start", "column_rows", "column_codes", "default_code", "sample_position",
    "split_column", "row_start", "row_features", "feature_mark", "mark_state",
])

# Bound by silva.engine.splitting.split_finder(sparse=True) to the criterion's copies, as
# in search_numeric_features (see silva.engine.specialize): the scan position, the
# feature evaluation and whether random splits are compiled.
_scan_position = None
RANDOM = True


def sparse_columns(entries, entries_by_row, sample_indices, n_samples):
    """The :class:`SparseColumns` of one tree: ``entries`` from
    :meth:`~silva.engine.binning.Binner.sparse_entries` and ``entries_by_row`` from
    :func:`entries_by_row` (once per fit), the tree's ``sample_indices`` in the grower's
    initial order (their positions)."""
    column_start, column_rows, column_codes, default_code = entries
    row_start, row_features = entries_by_row
    sample_position = np.full(n_samples, -1, dtype=np.int64)
    sample_position[sample_indices] = np.arange(sample_indices.shape[0])
    n_features = default_code.shape[0]
    # mark_state: (start, end) of the node whose features are marked, and its stamp.
    mark_state = np.array([-1, -1, 0], dtype=np.int64)
    return SparseColumns(column_start, column_rows, column_codes, default_code,
                         sample_position, np.empty((1, n_samples), dtype=column_codes.dtype),
                         row_start, row_features, np.zeros(n_features, dtype=np.int64),
                         mark_state)


def entries_by_row(entries, n_samples):
    """``(row_start, row_features)``: the features of each row's entries (CSR-like)."""
    column_start, column_rows, _, _ = entries
    features = np.repeat(np.arange(column_start.shape[0] - 1, dtype=np.int32),
                         np.diff(column_start))
    order = np.argsort(column_rows, kind="stable")
    row_start = np.zeros(n_samples + 1, dtype=np.int64)
    np.cumsum(np.bincount(column_rows, minlength=n_samples), out=row_start[1:])
    return row_start, features[order]


@kernel(inline="always")
def _mark_node_features(columns, sample_indices, start, end):
    """Whether the node ``[start, end)`` has its features marked: when its rows hold
    fewer entries (on average) than there are features, each feature with an entry in
    the node gets the node's stamp, once per node. A feature without one is constant in
    the node (all its rows in the default bin) and is skipped without reading its
    entries: small nodes deep in a tree find most drawn features so, and reading each
    one's entries cost most of their search."""
    state = columns.mark_state
    n_rows = end - start
    row_start = columns.row_start
    n_samples = row_start.shape[0] - 1
    n_features = columns.feature_mark.shape[0]
    if n_rows * row_start[n_samples] >= n_features * n_samples:
        return False
    if state[0] == start and state[1] == end:
        return True
    state[0] = start
    state[1] = end
    state[2] += 1
    stamp = state[2]
    feature_mark = columns.feature_mark
    row_features = columns.row_features
    for i in range(start, end):
        s = sample_indices[i]
        for k in range(row_start[s], row_start[s + 1]):
            feature_mark[row_features[k]] = stamp
    return True


@kernel(inline="always")
def _fill_node_codes(columns, f, sample_indices, start, end, out, by_sample):
    """Write feature ``f``'s code of each sample of the node ``[start, end)``: into
    ``out[0, sample]`` when ``by_sample``, else into ``out[i - start, 0]``. From the
    entries through the positions when the feature has no more entries than the node
    has rows (O(rows + entries)); else by bisection (O(rows log entries))."""
    first = columns.column_start[f]
    last = columns.column_start[f + 1]
    default = columns.default_code[f]
    column_rows = columns.column_rows
    column_codes = columns.column_codes
    if last - first <= end - start:
        position = columns.sample_position
        for i in range(start, end):
            if by_sample:
                out[0, sample_indices[i]] = default
            else:
                out[i - start, 0] = default
        for e in range(first, last):
            p = position[column_rows[e]]
            if start <= p < end:
                if by_sample:
                    out[0, column_rows[e]] = column_codes[e]
                else:
                    out[p - start, 0] = column_codes[e]
        return
    for i in range(start, end):
        s = sample_indices[i]
        # Bisection of the entries for row s.
        low = first
        high = last
        while low < high:
            middle = (low + high) >> 1
            if column_rows[middle] < s:
                low = middle + 1
            else:
                high = middle
        code = column_codes[low] if low < last and column_rows[low] == s else default
        if by_sample:
            out[0, s] = code
        else:
            out[i - start, 0] = code


@kernel(inline="always")
def gather_sparse_codes(f, node_codes, columns, sample_indices, start):
    """The sparse grower's :func:`~silva.engine.splitting.node_feature_codes`: feature
    ``f``'s codes of the node's rows gathered into column 0 of ``node_codes`` (the
    node's rows of the grower's ordered codes); returns 0, that column."""
    _fill_node_codes(columns, f, sample_indices, start, start + node_codes.shape[0],
                     node_codes, False)
    return np.int64(0)


@kernel(inline="always")
def fill_split_column(columns, f, sample_indices, start, end):
    """The split feature ``f``'s codes of the node's samples into
    ``columns.split_column[0, sample]`` (other samples' entries are left as they were)."""
    _fill_node_codes(columns, f, sample_indices, start, end, columns.split_column, True)


@kernel(inline="always")
def compact_from_entries(columns, f, ordered_stats, start, end, node_sums, missing_bin,
                         accumulator, present_bitmap, bins, sums, missing):
    """Compact histogram of feature ``f`` in the node ``[start, end)`` from its entries;
    returns n_present (see :func:`silva.engine.splitting.compact_from_samples`, whose
    output this matches up to the default bin's rounding).

    The entries whose row lies in the node (``sample_position``) add their channels
    (``ordered_stats`` rows, in the grower's order) to their bins, or to ``missing``;
    the default bin, present when the node has rows without an entry, holds the node's
    sums less the entries' and the missing ones. O(entries + n_bins / 64 + n_present).
    ``present_bitmap`` must be all zeros on entry and is left so.
    """
    n_channels = ordered_stats.shape[1]
    position = columns.sample_position
    column_rows = columns.column_rows
    column_codes = columns.column_codes
    default = np.int64(columns.default_code[f])
    for c in range(n_channels):
        missing[c] = 0.0
    n_in_node = 0
    for e in range(columns.column_start[f], columns.column_start[f + 1]):
        p = position[column_rows[e]]
        if p < start or p >= end:
            continue
        n_in_node += 1
        code = np.int64(column_codes[e])
        if code == missing_bin:
            for c in range(n_channels):
                missing[c] += ordered_stats[p, c]
            continue
        word = code >> 6
        bit = np.uint64(1) << np.uint64(code & 63)
        if present_bitmap[word] & bit == 0:
            present_bitmap[word] |= bit
            for c in range(n_channels):
                accumulator[code, c] = ordered_stats[p, c]
        else:
            for c in range(n_channels):
                accumulator[code, c] += ordered_stats[p, c]
    if n_in_node < end - start:
        # The default bin: what the node's sums leave after its other bins and missing.
        for c in range(n_channels):
            accumulator[default, c] = node_sums[c] - missing[c]
        for word in range(present_bitmap.shape[0]):
            bits = present_bitmap[word]
            while bits != 0:
                lowest = bits & (~bits + np.uint64(1))
                code = (word << 6) + DE_BRUIJN_POSITION[
                    (lowest * DE_BRUIJN_64) >> np.uint64(58)]
                for c in range(n_channels):
                    accumulator[default, c] -= accumulator[code, c]
                bits ^= lowest
        present_bitmap[default >> 6] |= np.uint64(1) << np.uint64(default & 63)
    n_present = 0
    for word in range(present_bitmap.shape[0]):
        bits = present_bitmap[word]
        while bits != 0:
            lowest = bits & (~bits + np.uint64(1))
            code = (word << 6) + DE_BRUIJN_POSITION[(lowest * DE_BRUIJN_64) >> np.uint64(58)]
            bins[n_present] = code
            for c in range(n_channels):
                sums[n_present, c] = accumulator[code, c]
            n_present += 1
            bits ^= lowest
        present_bitmap[word] = 0
    return n_present


@kernel(_nrt=False)
def search_sparse_features(criterion, features, seeds, first, last, use_random,
                           use_histogram, hist, n_value_bins, ordered_codes, ordered_stats,
                           columns, sample_indices, start, end, missing_bin, lower,
                           upper, node_sums, min_samples_leaf, min_weight_leaf,
                           monotonic_cst, min_value, max_value, scratch, best_gain,
                           best_feature, best_bin, best_missing_left):
    """The sparse grower's :func:`~silva.engine.splitting.search_numeric_features` (same
    arguments and result, ``columns`` a :class:`SparseColumns` in place of the bin
    codes; the sparse grower keeps no dense histogram, so ``use_histogram`` is false).

    Each feature's compact histogram comes from its entries in the node
    (:func:`compact_from_entries`) when it has no more entries than the node has rows,
    else from its codes gathered for the node's rows (:func:`gather_sparse_codes`), as
    the dense grower sums them. Extra trees scan the drawn position of the full compact
    histogram from entries, or the dense grower's two-entry one from gathered codes: the
    same split. Compiled without reference counting, as its dense counterpart is.
    """
    node_codes = ordered_codes[start:end]
    node_stats = ordered_stats[start:end]
    bins, sums, missing, left, feature_left, node_left = scan_buffers(scratch)
    column_start = columns.column_start
    marked = _mark_node_features(columns, sample_indices, start, end)
    stamp = columns.mark_state[2]
    feature_mark = columns.feature_mark
    n_non_constant = 0
    for j in range(first, last):
        f = features[j]
        if marked and feature_mark[f] != stamp:
            continue  # no entry in the node: constant there, no split
        if column_start[f + 1] - column_start[f] <= end - start:
            n_present = compact_from_entries(columns, f, ordered_stats, start, end,
                                             node_sums, missing_bin, scratch.accumulator,
                                             scratch.present, bins, sums, missing)
            position = _scan_position(use_random, bins, n_present, lower[f], upper[f],
                                      seeds[j])
        else:
            column = gather_sparse_codes(f, node_codes, columns, sample_indices, start)
            if RANDOM and use_random:
                n_present = random_split_from_samples(
                    node_codes, column, node_stats, missing_bin, lower[f], upper[f],
                    seeds[j], bins, sums, missing)
                position = np.int64(0)
            else:
                n_present = compact_from_samples(node_codes, column, node_stats,
                                                 missing_bin, scratch.accumulator,
                                                 scratch.present, bins, sums, missing,
                                                 node_stats.shape[1])
                position = _scan_position(use_random, bins, n_present, lower[f],
                                          upper[f], seeds[j])
        gain, last_left_bin, missing_left, constant = evaluate_numeric_feature(
            criterion, bins, sums, n_present, missing, node_sums, min_samples_leaf,
            min_weight_leaf, position, left, feature_left, monotonic_cst[f], min_value,
            max_value)
        n_non_constant += not constant
        if gain > best_gain:
            best_gain = gain
            best_feature = f
            best_bin = last_left_bin
            best_missing_left = missing_left
            copy_vector(node_left, feature_left)
    return best_gain, best_feature, best_bin, best_missing_left, n_non_constant


# Bound by compiled_grower(sparse=True) to the grower's _partition compiled for one
# column of split codes (its SPARSE copy).
partition_node = None


@kernel(inline="always")
def partition_sparse(row, node_bitset, left_sums, right_sums, is_categorical, missing_bin,
                     sample_indices, columns, ordered_codes, code_words, ordered_stats,
                     right_indices, right_words, right_stats, class_column):
    """The sparse grower's partition step (the arguments of the grower's
    ``_partition``, ``columns`` in place of the bin codes): fill the split feature's
    codes for the node's samples, partition them, then record the samples' new
    positions."""
    start = row.start
    end = row.end
    fill_split_column(columns, row.split_feature, sample_indices, start, end)
    result = partition_node(row, node_bitset, left_sums, right_sums, is_categorical,
                            missing_bin, sample_indices, columns.split_column,
                            ordered_codes, code_words, ordered_stats, right_indices,
                            right_words, right_stats, class_column)
    position = columns.sample_position
    for i in range(start, end):
        position[sample_indices[i]] = i
    return result


@kernel(inline="always")
def order_root_samples_sparse(data, samples, buffers, root_sums, class_column):
    """The sparse grower's root step: each sample's channels into the tree's order and
    their sums (no codes are kept in order: they are always gathered, so no
    ``class_column`` either: returns -1)."""
    stats = samples.stats
    sample_indices = samples.sample_indices
    ordered_stats = buffers.ordered_stats
    for i in range(sample_indices.shape[0]):
        s = sample_indices[i]
        for c in range(stats.shape[1]):
            ordered_stats[i, c] = stats[s, c]
            root_sums[c] += stats[s, c]
    return np.int64(-1)


@kernel(inline="always")
def no_histogram_pool(n_slots, n_features, n_bins, n_channels):
    """The sparse grower's histogram pool: empty (it builds no dense histogram)."""
    return np.empty((n_slots, 0, n_bins, n_channels))


@kernel(inline="always")
def no_histogram(hist, bin_codes, ordered_stats, sample_indices, start, end, parallel):
    """Never called: the sparse grower's nodes are all below its histogram size."""


@kernel(inline="always")
def no_children_histograms(pending, n_left, n_right, parent_slot, pool, free_slots,
                           scratch_hist, bin_codes, ordered_stats, sample_indices,
                           histogram_min_samples, parallel_min_work):
    """Never called (no node has a histogram slot); returns the pool."""
    return pool
