"""Sparse histograms of the gradient grower: a wide sparse X grown on its stored entries.

The dense layout of :mod:`silva.engine.gradient_histogram` gives every sample a record
of all its bin codes, so that a histogram pass adds each sample to one bin of *every*
feature: ``rows x features`` additions per pass, and the same bytes of memory, however
few of the values are non-zero. Measured on 20,000 x 5,000 at 0.14% non-zeros
(``benchmarks/bench_sparse.py``'s data, 7 stored values a row): the root's pass took
55 ms of a tree's 207 (5,000 additions a row), the children's passes and the split
search (0.9 ms a node, every feature scanned) the rest; here a tree takes about 12 ms.

Here a sample is its list of *non-default* entries: for each feature, the *default*
bin is the bin of the value 0.0 (where every implicit zero of a sparse column falls),
and only the entries whose code differs from it are kept (the stored values, less those
that fall in the default bin anyway). This is the idea of XGBoost's sparsity-aware
split finding (Chen & Guestrin 2016, "XGBoost: A Scalable Tree Boosting System", KDD,
section 3.4: visit only the non-missing entries, the rest as one default) and of
LightGBM's sparse histograms (Ke et al. 2017, "LightGBM: A Highly Efficient Gradient
Boosting Decision Tree", NeurIPS), with the zero bin in the role of the default:

- a node's pass adds each of its samples' channels to the bins of its non-default
  entries only, and sums the node's channel totals; then each feature's default bin is
  the node's totals minus its other bins (:func:`sparse_node_histogram`). The counts
  are exact; a default bin's gradient and hessian sums differ from the dense pass's by
  floating-point rounding (a subtraction instead of additions in sample order);
- histograms are *ragged*: feature ``f`` has its own ``n_value_bins[f]`` bins and
  then its missing bin, ``bin_offsets[f] <= e < bin_offsets[f + 1]`` in one flat
  ``(total_bins, 4)`` array, instead of ``(n_features, padded_bins, 4)``: zeroing,
  subtracting and scanning a node's histogram cost the bins the features have;
- the split search (:func:`find_best_sparse_split`) skips a feature with fewer than
  ``min_samples_leaf`` (at least 1) of the node's samples outside its default bin
  (every split of it leaves a child too small), and scans the others with
  :mod:`silva.engine.gradient_splitting`'s scans on the feature's slice;
- a split's partition reads the split feature's codes from one scratch column of
  ``n_samples`` codes, filled with its default code and then its non-default entries
  (:func:`fill_feature_column`), so no dense code matrix exists at all;
- rows a tree was not grown on (row sampling's out-of-bag rows) walk it on their
  entries, each code found by a binary search of the row's (sorted) entries
  (:func:`sample_code`, :func:`add_leaf_values_sparse`).

Per node the costs grow with the node's stored entries and with the total number of
bins (a few per sparse feature), not with ``rows x features``.
"""

from collections import namedtuple

import numpy as np

from silva.engine.gradient_histogram import N_CHANNELS
from silva.engine.gradient_splitting import (
    MIN_SAMPLES_LEAF,
    NO_GAIN,
    best_scanned_split,
    scan_categorical,
    scan_numeric,
)
from silva.engine.jit import kernel
from silva.engine.nodes import LEAF
from silva.engine.partition import goes_left

#: The sparse grower's buffers for one fit (:func:`make_sparse_workspace`):
#: ``bin_offsets`` (n_features + 1) int64, feature ``f``'s ragged bins (its value bins,
#: then its missing bin) in ``[bin_offsets[f], bin_offsets[f + 1])``; ``default_bin``
#: (n_features) int64, the flat index of each feature's default bin; ``default_code``
#: (n_features), its bin code; ``row_start`` (n_samples + 1) int64 and ``row_bins``
#: int32, sample ``s``'s non-default entries as flat bin indices
#: ``row_bins[row_start[s]:row_start[s + 1]]``; ``column_start`` (n_features + 1),
#: ``column_rows`` int32 and ``column_codes``, the same entries feature by feature (rows
#: increasing, the binner's codes, the missing bin included); ``stats`` (n_samples, 4),
#: each sample's channels (written by a tree's root pass); ``index`` (2, n_samples)
#: int32, the partition's two halves; ``histograms`` (pool_slots + 1, 1, total_bins, 4):
#: the node histograms' pool and one scratch; ``column`` (n_samples), the split
#: feature's codes for the partition.
SparseWorkspace = namedtuple("SparseWorkspace", [
    "bin_offsets", "default_bin", "default_code", "row_start", "row_bins", "column_start",
    "column_rows", "column_codes", "stats", "index", "histograms", "column"])


def sparse_pool_slots(max_leaf_nodes):
    """Node histograms a sparse workspace keeps for a tree: one per leaf waiting to be
    split plus the new child's (64 without a leaf limit). A ragged histogram is small
    (a few bins per sparse feature), so no memory cap is needed."""
    return 64 if max_leaf_nodes <= 0 else max_leaf_nodes + 1


def make_sparse_workspace(entries, n_value_bins, missing_bin, n_samples, pool_slots):
    """The sparse grower's :class:`SparseWorkspace` from the binner's non-default
    ``entries`` ``(column_start, column_rows, column_codes, default_code)`` (see
    :meth:`silva.engine.binning.Binner.sparse_entries`), the binner's ``n_value_bins``
    and ``missing_bin``."""
    column_start, column_rows, column_codes, default_code = entries
    n_features = n_value_bins.shape[0]
    widths = n_value_bins.astype(np.int64) + 1  # each feature's value bins and missing bin
    bin_offsets = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(widths, out=bin_offsets[1:])
    default_bin = bin_offsets[:-1] + default_code.astype(np.int64)
    feature_of_entry = np.repeat(np.arange(n_features, dtype=np.int64), np.diff(column_start))
    local = column_codes.astype(np.int64)
    local = np.where(local == missing_bin, n_value_bins[feature_of_entry], local)
    flat_bins = (bin_offsets[feature_of_entry] + local).astype(np.int32)
    # Row-major order of the same entries: stable, so each row's entries stay in
    # increasing feature order.
    order = np.argsort(column_rows, kind="stable")
    row_bins = flat_bins[order]
    row_start = np.zeros(n_samples + 1, dtype=np.int64)
    np.cumsum(np.bincount(column_rows, minlength=n_samples), out=row_start[1:])
    # One "feature" of total_bins bins per slot: the shape the nodes module's slot books
    # (take_slot, schedule_children_histograms) grow and hand out.
    histograms = np.zeros((pool_slots + 1, 1, int(bin_offsets[-1]), N_CHANNELS))
    return SparseWorkspace(
        bin_offsets, default_bin, default_code, row_start, row_bins, column_start,
        column_rows, column_codes, np.zeros((n_samples, N_CHANNELS)),
        np.zeros((2, n_samples), dtype=np.int32), histograms,
        np.empty(n_samples, dtype=column_codes.dtype))


@kernel()
def sparse_node_histogram(hist, parent, workspace, index, start, end, subtract, statistics,
                          fill, totals):
    """The ragged histogram ``hist`` (total_bins, 4) of the samples ``index[start:end]``
    and their channel ``totals`` (4); with ``subtract``, ``parent -= hist`` (the
    sibling's histogram, see :func:`silva.engine.nodes.schedule_children_histograms`).

    Each sample's channels are added, in sample order, to the bins of its non-default
    entries and to ``totals``; each feature's default bin is then ``totals`` minus its
    other bins. ``fill``: first write each sample's channels ``(1, w g, w h, w)`` (or
    the weight for the hessian without ``use_hessian``) into ``workspace.stats``, from
    ``statistics`` (a :class:`~silva.engine.gradient_histogram.GradientStatistics`), as
    the dense root pass does.
    """
    flat = hist.reshape(-1)
    for e in range(flat.shape[0]):
        flat[e] = 0.0
    for c in range(N_CHANNELS):
        totals[c] = 0.0
    stats = workspace.stats
    row_start = workspace.row_start
    row_bins = workspace.row_bins
    for i in range(start, end):
        s = np.int64(index[i])
        if fill:
            w = statistics.weight[s]
            stats[s, 0] = 1.0
            stats[s, 1] = w * statistics.gradient[s, statistics.column]
            stats[s, 2] = (w * statistics.hessian[s, statistics.column]
                           if statistics.use_hessian else w)
            stats[s, 3] = w
        for c in range(N_CHANNELS):
            totals[c] += stats[s, c]
        for k in range(row_start[s], row_start[s + 1]):
            e = row_bins[k]
            for c in range(N_CHANNELS):
                hist[e, c] += stats[s, c]
    bin_offsets = workspace.bin_offsets
    default_bin = workspace.default_bin
    for f in range(default_bin.shape[0]):
        d = default_bin[f]
        for c in range(N_CHANNELS):
            hist[d, c] = totals[c]
        for e in range(bin_offsets[f], bin_offsets[f + 1]):
            if e != d:
                for c in range(N_CHANNELS):
                    hist[d, c] -= hist[e, c]
    if subtract:
        parent_flat = parent.reshape(-1)
        for e in range(flat.shape[0]):
            parent_flat[e] -= flat[e]


@kernel()
def fill_feature_column(column, workspace, feature):
    """``column`` (n_samples) := feature ``feature``'s bin code of every sample: its
    default code, then its non-default entries."""
    code = workspace.default_code[feature]
    for s in range(column.shape[0]):
        column[s] = code
    for k in range(workspace.column_start[feature], workspace.column_start[feature + 1]):
        column[workspace.column_rows[k]] = workspace.column_codes[k]


@kernel(inline="always")
def feature_bins(hist, bin_offsets, feature):
    """Feature ``feature``'s slice of a ragged histogram and its local missing bin (the
    slice's last)."""
    lo = bin_offsets[feature]
    hi = bin_offsets[feature + 1]
    return hist[lo:hi], hi - lo - 1


@kernel()
def find_best_sparse_split(hist, bin_offsets, default_bin, candidates, n_candidates,
                           n_value_bins, is_categorical, monotonic, node_sums, params,
                           lower, upper, constrained, feature_score, feature_bin,
                           feature_missing_left, feature_left, feature_bitset, scratch):
    """:func:`silva.engine.gradient_splitting.find_best_split` on a ragged histogram:
    the same scans and the same pick (the lowest feature index wins ties), each feature
    scanned on its own slice with its own missing bin.

    A feature with fewer than ``max(1, min_samples_leaf)`` of the node's samples outside
    its default bin is not scanned: every split of it puts the default bin in one child
    and only some of those samples in the other, which the scan's count rule rejects,
    so the result is the same. In a wide sparse X most features hold only a few
    non-zeros per node (LightGBM likewise skips features a leaf cannot split)."""
    node_count = node_sums[0]
    # Counts are exact floats (integers): the test below is the scan's own rule.
    fewest_outside_default = max(1.0, params[MIN_SAMPLES_LEAF])
    for j in range(n_candidates):
        f = candidates[j]
        if node_count - hist[default_bin[f], 0] < fewest_outside_default:
            feature_score[f] = NO_GAIN
            feature_bin[f] = -1
            feature_missing_left[f] = False
            continue
        hist_f, missing_bin = feature_bins(hist, bin_offsets, f)
        if is_categorical[f]:
            score, missing_left = scan_categorical(
                hist_f, n_value_bins[f], missing_bin, node_sums, params, lower, upper,
                constrained, feature_left[f], feature_bitset[f])
            split_bin = 0
        else:
            score, split_bin, missing_left = scan_numeric(
                hist_f, n_value_bins[f], missing_bin, node_sums, params, lower, upper,
                monotonic[f], constrained, feature_left[f], scratch)
        feature_score[f] = score
        feature_bin[f] = split_bin
        feature_missing_left[f] = missing_left
    return best_scanned_split(candidates, n_candidates, node_sums, params, lower, upper,
                              constrained, feature_score, feature_bin, feature_missing_left)


@kernel(inline="always")
def sample_code(workspace, sample, feature, missing_bin):
    """Sample ``sample``'s bin code of feature ``feature`` (the binner's code, the
    missing bin ``missing_bin`` included): its entry's, found by a binary search of the
    row's entries (increasing flat bins, since each row's entries are in feature order),
    or the feature's default code."""
    row_bins = workspace.row_bins
    first = workspace.bin_offsets[feature]
    end_of_feature = workspace.bin_offsets[feature + 1]
    lo = workspace.row_start[sample]
    hi = workspace.row_start[sample + 1]
    row_end = hi
    while lo < hi:
        middle = (lo + hi) >> 1
        if row_bins[middle] < first:
            lo = middle + 1
        else:
            hi = middle
    if lo < row_end and row_bins[lo] < end_of_feature:
        local = np.int64(row_bins[lo]) - first
        # The last of a feature's ragged bins is its missing bin.
        return np.int64(missing_bin) if local == end_of_feature - first - 1 else local
    return np.int64(workspace.default_code[feature])


@kernel()
def add_leaf_values_sparse(raw, column, rows, workspace, table, bitsets, missing_bin,
                           leaf_values):
    """``raw[s, column] += leaf_values[leaf of s]`` for ``s`` in ``rows`` (samples the tree
    was not grown on), walking the tree on each sample's entries
    (:func:`sample_code`): :func:`silva.engine.leaf_values.add_leaf_values_binned` on a
    sparse workspace."""
    for k in range(rows.shape[0]):
        s = np.int64(rows[k])
        node = 0
        while table[node].left != LEAF:
            row = table[node]
            code = sample_code(workspace, s, np.int64(row.feature), missing_bin)
            if goes_left(code, missing_bin, row.split_bin, row.missing_left,
                         row.is_categorical, bitsets[node]):
                node = row.left
            else:
                node = row.right
        raw[s, column] += leaf_values[node]
