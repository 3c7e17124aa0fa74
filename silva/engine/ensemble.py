"""Packed trees: many fitted trees in one set of flat arrays, predicted in one compiled call.

An ensemble's trees (forests, boosting, bagging of silva trees) are concatenated into the
arrays of :class:`PackedTrees`: node ``k`` of tree ``t`` is row ``node_offset[t] + k``.
Children ids stay local to their tree, so each tree is a contiguous slice of the packed
arrays and :meth:`PackedTrees.tree` returns a :class:`PackedTreeView`, a
:class:`~silva.engine.tree.Tree` over that memory (an ensemble keeps one copy of its
nodes, 56 bytes per node of a binary classifier). Trees can be packed one at a time from
a generator, so that a forest never holds its grown trees and their packed copy at once.
Prediction walks every tree for a block of rows inside one compiled kernel, parallel over
blocks, so a 100-tree forest costs one call instead of 100 (and no
``(n_rows, n_trees, n_values)`` intermediate).

Each tree writes its leaf values into the output columns
``[output_column[t], output_column[t] + n_values)``, multiplied by ``tree_weight[t]``: a
forest uses column 0 and unit weights, then divides the sums by the number of trees (the
mean of the trees' class fractions), multiclass gradient boosting one column per class and
weight 1 (the sum of the trees of that class).
"""

import numba as nb
import numpy as np

from silva.engine import sparse as sparse_module
from silva.engine.jit import kernel
from silva.engine.sparse import csr_rows, is_sparse, rowwise, stored_value
from silva.engine.specialize import serial_copy
from silva.engine.tree import Tree

# What a prediction reads of a node, in one 16-byte record, so that a deep tree of a forest
# (about 23,000 nodes for 200,000 rows) stays in a core's L2 cache while a block of rows
# walks it: a walk down a tree touches one cache line per node instead of one per array
# (six separate arrays made prediction of deep forests memory-bound), and 16 bytes
# instead of 24 made a 100-tree forest's prediction about a third faster.
# - ``left``: the left child, local to the tree. The right child is always ``left + 1``:
#   silva's growers create a split's two children together, after their parent, and
#   packing renumbers any tree that does not (see :func:`_siblings_adjacent_order`).
# - ``feature_flags``: the split feature in the low 30 bits, bit 31 set when missing
#   values go left, bit 30 set at a categorical split.
# A leaf is a record that leads back to itself: ``left`` is its own local id - 1 (so the
# "right child" is the leaf), the threshold NaN (no value goes left) and the flags 0. A
# walk then needs no test for having arrived, and the branch-free walk of
# :func:`_step` is about a fifth faster than with a separate leaf test. Children come
# after their parent, so a record is a leaf exactly when ``left`` is below its own id.
# Model files store the usual convention (``left = -1`` at a leaf; see
# :meth:`PackedTrees.__getstate__`).
WALK_DTYPE = np.dtype([("threshold", np.float64), ("left", np.int32),
                       ("feature_flags", np.uint32)], align=True)
FEATURE_MASK = np.uint32((1 << 30) - 1)
MISSING_LEFT_BIT = 31
CATEGORICAL_BIT = 30
MAX_WALK_FEATURES = 1 << 30
# What a tree stores as the threshold of a leaf (:data:`silva.engine.nodes.UNDEFINED`).
LEAF_THRESHOLD = -2.0


def _local_ids(node_offset):
    """Each packed node's id within its own tree (trees start at ``node_offset``)."""
    return np.arange(node_offset[-1]) - np.repeat(node_offset[:-1], np.diff(node_offset))


def _leaf_records(walk, node_offset):
    """Boolean mask of the leaf records of packed ``walk``."""
    return walk["left"] < _local_ids(node_offset)


def _make_leaves_loop(walk, leaf, local):
    """Turn the records ``leaf`` (a mask) into records leading back to themselves."""
    walk["left"][leaf] = local[leaf] - 1
    walk["threshold"][leaf] = np.nan
    walk["feature_flags"][leaf] = 0


@kernel(inline="always")
def _leaf(x_row, offset, walk, bitsets):
    """Packed row of the leaf reached by ``x_row`` in the tree whose root is ``offset``.

    The same decisions as :func:`silva.engine.tree._goes_left`: NaN (and, at a categorical
    split, a code outside the bitset) follows the missing-value direction.
    """
    node = offset
    while True:
        record = walk[node]
        left = record.left
        if offset + left < node:  # a leaf (see WALK_DTYPE)
            return node
        flags = record.feature_flags
        x = x_row[flags & FEATURE_MASK]
        missing_left = (flags >> MISSING_LEFT_BIT) != 0
        if np.isnan(x):
            go_left = missing_left
        elif (flags >> CATEGORICAL_BIT) & 1:
            n_codes = bitsets.shape[1] * 64
            if x < 0 or x >= n_codes or x != np.floor(x):
                go_left = missing_left
            else:
                code = np.int64(x)
                word = bitsets[node, code >> 6]
                go_left = (word >> np.uint64(code & 63)) & np.uint64(1) != 0
        else:
            go_left = x <= record.threshold
        node = offset + (left if go_left else left + 1)


# Rows per block of the prediction kernels: a block walks one tree for all its rows before
# the next tree, so that tree's nodes stay in cache (walking all trees for one row touches
# every tree's nodes per row: with 100 deep trees that is 8x slower on 200k rows). Each
# block loads every tree once, so larger blocks load less: on 200k rows, 100 fully grown
# trees predict 12% faster with 16384-row blocks than with 8192 (1024: twice as slow),
# and small boosting trees are indifferent.
ROW_BLOCK = 16384
# Values (rows x columns) of one dense block of X, 4 MiB: a block is walked once per tree,
# so it has to stay in cache from one tree to the next. 16,384 rows of 200 features
# (26 MiB) did not: every tree read them from memory again. 200,000 rows of 200 features,
# Zen 4 (2026-11-28): 100 fully grown forest trees 2.65-2.9 s with 16,384-row blocks
# against 0.85 s with 2,621 (this budget), 100 boosting trees of 31 leaves 0.65-0.84
# against 0.31 s. Up to 32 columns the blocks stay at ROW_BLOCK; at 64 and 100 columns
# the forest read the same within noise either way.
BLOCK_VALUES = 1 << 19
# Fewer rows than this are predicted by copies of the kernels compiled serially:
# starting a parallel region cost a single row 5.0 us against 3.5 us serially, while 16
# rows already predict faster in parallel (10 against 15 us; 100 trees, 2 threads).
SERIAL_ROWS = 8


def _block_rows(n_rows, n_columns):
    """Rows per block of the prediction kernels: at most ``ROW_BLOCK``, and at most
    ``BLOCK_VALUES`` values of a dense X of ``n_columns`` columns (0: a sparse X, whose
    scatter scratch bounds its own size), with as many blocks as a multiple of the number
    of threads so that the threads finish together (every row's sums are the same for any
    blocking)."""
    threads = nb.get_num_threads()
    max_rows = ROW_BLOCK if n_columns <= 0 else max(8, min(ROW_BLOCK,
                                                             BLOCK_VALUES // n_columns))
    n_blocks = -(-n_rows // max_rows)
    n_blocks = max(1, -(-n_blocks // threads) * threads)
    return max(1, -(-n_rows // n_blocks))


@kernel(inline="always")
def _step(X, i, node, offset, walk):
    """The next node of row ``i`` below ``node`` (``node`` itself at a leaf), for trees
    without categorical splits, computed without a branch.

    A branch on each comparison mispredicts about once per level (the directions of a
    row's path are data); so the direction is turned into 0 or 1 and the child
    computed by arithmetic (a conditional expression compiles to a branch here). A leaf
    needs no case of its own: its record leads back to it (see WALK_DTYPE)."""
    # Unsigned indices: numba then skips its wraparound handling of negative ones.
    record = walk[np.uint64(node)]
    flags = np.uint64(record.feature_flags)
    x = X[np.uint64(i), flags & np.uint64(FEATURE_MASK)]
    # x <= threshold; NaN (x != x) goes where the node sends missing values. At a leaf
    # both are false (NaN threshold, flags 0), and the "right child" is the leaf.
    go_left = (np.int64(x <= record.threshold)
               | (np.int64(x != x) & np.int64(flags >> np.uint64(MISSING_LEFT_BIT))))
    return offset + np.int64(record.left) + 1 - go_left  # the right child is left + 1


@kernel(inline="always")
def _leaves8(X, i, offset, walk):
    """Leaves of rows ``i`` to ``i + 7`` (trees without categorical splits): eight walks
    interleaved, one step each per round until none moves, so that the eight chains of
    dependent loads overlap (about twice as fast as one walk after the other)."""
    n0 = n1 = n2 = n3 = n4 = n5 = n6 = n7 = offset
    while True:
        m0 = _step(X, i, n0, offset, walk)
        m1 = _step(X, i + 1, n1, offset, walk)
        m2 = _step(X, i + 2, n2, offset, walk)
        m3 = _step(X, i + 3, n3, offset, walk)
        m4 = _step(X, i + 4, n4, offset, walk)
        m5 = _step(X, i + 5, n5, offset, walk)
        m6 = _step(X, i + 6, n6, offset, walk)
        m7 = _step(X, i + 7, n7, offset, walk)
        moved = ((m0 != n0) | (m1 != n1) | (m2 != n2) | (m3 != n3) | (m4 != n4)
                 | (m5 != n5) | (m6 != n6) | (m7 != n7))
        n0, n1, n2, n3, n4, n5, n6, n7 = m0, m1, m2, m3, m4, m5, m6, m7
        if not moved:
            return n0, n1, n2, n3, n4, n5, n6, n7


@kernel(inline="always")
def _block_leaves(X, first, last, offset, walk, bitsets, leaves):
    """``leaves[i - first]`` = packed row of the leaf of row ``i`` in the tree rooted at
    ``offset``, for rows ``first..last-1``."""
    i = first
    if bitsets.shape[1] == 0:  # no categorical split anywhere: the branch-free walk
        while i + 8 <= last:
            leaf = _leaves8(X, i, offset, walk)
            for k in range(8):
                leaves[i - first + k] = leaf[k]
            i += 8
    while i < last:
        leaves[i - first] = _leaf(X[i], offset, walk, bitsets)
        i += 1


@kernel(parallel=True)
def _apply_packed(X, first_tree, last_tree, node_offset, walk, bitsets, block_rows):
    n_rows = X.shape[0]
    leaves = np.empty((n_rows, last_tree - first_tree), dtype=np.int64)
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        first = min(n_rows, b * block_rows)
        last = min(n_rows, first + block_rows)
        block_leaves = np.empty(block_rows, dtype=np.int64)
        for t in range(first_tree, last_tree):
            _block_leaves(X, first, last, node_offset[t], walk, bitsets, block_leaves)
            for i in range(first, last):
                leaves[i, t - first_tree] = block_leaves[i - first] - node_offset[t]
    return leaves


@kernel(parallel=True)
def _predict_packed(X, first_tree, last_tree, node_offset, walk, bitsets, value, tree_weight,
                    output_column, out, block_rows):
    n_values = value.shape[1]
    n_rows = X.shape[0]
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        first = min(n_rows, b * block_rows)
        last = min(n_rows, first + block_rows)
        block_leaves = np.empty(block_rows, dtype=np.int64)
        # Trees in order for every row: the sums are the same for any number of threads.
        for t in range(first_tree, last_tree):
            column = output_column[t]
            weight = tree_weight[t]
            _block_leaves(X, first, last, node_offset[t], walk, bitsets, block_leaves)
            for i in range(first, last):
                leaf = block_leaves[i - first]
                for k in range(n_values):
                    out[i, column + k] += weight * value[leaf, k]


# ------------------------------------------------------- walks over sparse CSR rows
# Separate kernels, compiled only when a sparse X is predicted (a dense predict never
# names them). Each mirrors its dense kernel above with the split's value read from the
# row's stored entries (silva.engine.sparse.stored_value), so leaves and sums are the
# dense ones bit for bit: every row adds its trees in the same order.


@kernel(inline="always")
def _row_leaf(indices, data, start, stop, offset, walk, bitsets):
    """Packed row of the leaf reached, in the tree rooted at ``offset``, by the sparse
    row whose entries are ``indices[start:stop]``/``data[start:stop]``; the decisions of
    :func:`_leaf` (an unstored column is 0.0, a stored NaN missing)."""
    node = offset
    while True:
        record = walk[node]
        left = record.left
        if offset + left < node:  # a leaf (see WALK_DTYPE)
            return node
        flags = record.feature_flags
        x = stored_value(indices, data, start, stop, flags & FEATURE_MASK)
        missing_left = (flags >> MISSING_LEFT_BIT) != 0
        if np.isnan(x):
            go_left = missing_left
        elif (flags >> CATEGORICAL_BIT) & 1:
            n_codes = bitsets.shape[1] * 64
            if x < 0 or x >= n_codes or x != np.floor(x):
                go_left = missing_left
            else:
                code = np.int64(x)
                word = bitsets[node, code >> 6]
                go_left = (word >> np.uint64(code & 63)) & np.uint64(1) != 0
        else:
            go_left = x <= record.threshold
        node = offset + (left if go_left else left + 1)


@kernel(parallel=True)
def _apply_packed_rows(indptr, indices, data, first_tree, last_tree, node_offset, walk,
                       bitsets, block_rows):
    """:func:`_apply_packed` over the CSR rows of a sparse X."""
    n_rows = indptr.shape[0] - 1
    leaves = np.empty((n_rows, last_tree - first_tree), dtype=np.int64)
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        first = min(n_rows, b * block_rows)
        last = min(n_rows, first + block_rows)
        for t in range(first_tree, last_tree):
            offset = node_offset[t]
            for i in range(first, last):
                leaf = _row_leaf(indices, data, indptr[i], indptr[i + 1], offset, walk,
                                 bitsets)
                leaves[i, t - first_tree] = leaf - offset
    return leaves


@kernel(parallel=True)
def _predict_packed_rows(indptr, indices, data, first_tree, last_tree, node_offset, walk,
                         bitsets, value, tree_weight, output_column, out, block_rows):
    """:func:`_predict_packed` over the CSR rows of a sparse X: the same sums, in the
    same order per row (tree after tree), so the same bits.

    One walk after another: unlike the dense kernel's eight interleaved walks
    (:func:`_leaves8`), interleaving eight sparse walks was slower (0.41 against 0.33 s,
    100 trees of 31 leaves, 20,000 rows of 20,000 features, 22 stored a row), since
    each round waits for the longest of eight binary searches and paths.
    """
    n_values = value.shape[1]
    n_rows = indptr.shape[0] - 1
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        first = min(n_rows, b * block_rows)
        last = min(n_rows, first + block_rows)
        # Tree-major inside a block, as the dense kernel: a tree's nodes stay in cache
        # while the block's rows walk it.
        for t in range(first_tree, last_tree):
            column = output_column[t]
            weight = tree_weight[t]
            offset = node_offset[t]
            for i in range(first, last):
                leaf = _row_leaf(indices, data, indptr[i], indptr[i + 1], offset, walk,
                                 bitsets)
                for k in range(n_values):
                    out[i, column + k] += weight * value[leaf, k]


# Scattered rows: a few sparse rows written into a zeroed dense scratch (each stored
# entry at its column), walked by the dense kernels' branch-free interleaved walk
# (_block_leaves), and their entries zeroed again. The scratch is zeroed once per
# parallel block of rows, and each row costs its stored entries twice, not its width: a
# dense block costs rows x features to fill. Against the binary search of each split's
# feature among a row's entries (_row_leaf), 3.3 times faster on the benchmark's model
# (100 trees of 31 leaves, 20,000 rows of 20,000 features, 22 stored a row: 0.094
# against 0.31 s, interleaved, shared machine), where a search cost about 5 dependent
# loads a node. XGBoost's CPU predictor reads sparse rows the same way, one row at a
# time (RegTree::FVec, filled from a row's entries and dropped after its trees).
# Values (rows x columns) of one scratch, 2 MiB: at least one row, at most a parallel
# block's rows. Rows wider than silva.engine.sparse.MAX_SCATTER_COLUMNS are searched.
SCATTER_VALUES = 1 << 18


def _scatter_rows(n_columns, block_rows):
    """Rows of a scatter scratch for ``n_columns`` (see :data:`SCATTER_VALUES`): a
    multiple of 8 where at least 8 fit, since the walk takes rows 8 at a time
    (:func:`_leaves8`) and walks the rest one by one, about twice as slowly."""
    rows = SCATTER_VALUES // max(n_columns, 1)
    if rows >= 8:
        rows -= rows % 8
    return max(1, min(block_rows, rows))


@kernel(inline="always")
def _scatter(indptr, indices, data, start, stop, scratch, fill):
    """Row ``start + r`` of the CSR into ``scratch[r]`` for ``start <= row < stop``:
    each stored entry's value (``fill``) or 0.0 (``not fill``, to clear it again)."""
    for i in range(start, stop):
        for j in range(indptr[i], indptr[i + 1]):
            scratch[i - start, indices[j]] = data[j] if fill else 0.0


@kernel(parallel=True)
def _apply_packed_scattered(indptr, indices, data, n_columns, first_tree, last_tree,
                            node_offset, walk, bitsets, block_rows, scratch_rows):
    """:func:`_apply_packed` over the CSR rows of a sparse X, scattered (see above)."""
    n_rows = indptr.shape[0] - 1
    leaves = np.empty((n_rows, last_tree - first_tree), dtype=np.int64)
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        first = min(n_rows, b * block_rows)
        last = min(n_rows, first + block_rows)
        scratch = np.zeros((scratch_rows, n_columns))
        scratch_leaves = np.empty(scratch_rows, dtype=np.int64)
        for start in range(first, last, scratch_rows):
            stop = min(last, start + scratch_rows)
            _scatter(indptr, indices, data, start, stop, scratch, True)
            for t in range(first_tree, last_tree):
                _block_leaves(scratch, 0, stop - start, node_offset[t], walk, bitsets,
                              scratch_leaves)
                for i in range(start, stop):
                    leaves[i, t - first_tree] = scratch_leaves[i - start] - node_offset[t]
            _scatter(indptr, indices, data, start, stop, scratch, False)
    return leaves


@kernel(parallel=True)
def _predict_packed_scattered(indptr, indices, data, n_columns, first_tree, last_tree,
                              node_offset, walk, bitsets, value, tree_weight,
                              output_column, out, block_rows, scratch_rows):
    """:func:`_predict_packed` over the CSR rows of a sparse X, scattered (see above):
    the same sums in the same order per row (tree after tree), so the same bits."""
    n_values = value.shape[1]
    n_rows = indptr.shape[0] - 1
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        first = min(n_rows, b * block_rows)
        last = min(n_rows, first + block_rows)
        scratch = np.zeros((scratch_rows, n_columns))
        scratch_leaves = np.empty(scratch_rows, dtype=np.int64)
        for start in range(first, last, scratch_rows):
            stop = min(last, start + scratch_rows)
            _scatter(indptr, indices, data, start, stop, scratch, True)
            for t in range(first_tree, last_tree):
                column = output_column[t]
                weight = tree_weight[t]
                _block_leaves(scratch, 0, stop - start, node_offset[t], walk, bitsets,
                              scratch_leaves)
                for i in range(start, stop):
                    leaf = scratch_leaves[i - start]
                    for k in range(n_values):
                        out[i, column + k] += weight * value[leaf, k]
            _scatter(indptr, indices, data, start, stop, scratch, False)


@kernel(inline="always")
def _add_out_of_bag_row(x, i, t, b, y, inbag, is_classification, node_offset, walk,
                        bitsets, value, sums, counts, curve):
    """Row ``i`` (values ``x``) after tree ``t``, in row block ``b``: its leaf's values
    added to its out-of-bag sums if the tree did not train on it, then, once some tree
    has predicted it, its loss added to ``curve[b, t]`` (see :func:`_out_of_bag`;
    shared by the dense and the scattered sparse kernels, so both sum alike)."""
    if inbag[t, i] == 0:
        leaf = _leaf(x, node_offset[t], walk, bitsets)
        for k in range(value.shape[1]):
            sums[i, k] += value[leaf, k]
        counts[i] += 1
    if counts[i] == 0:
        return
    if is_classification:
        best = 0
        for k in range(1, value.shape[1]):
            if sums[i, k] > sums[i, best]:
                best = k
        loss = 0.0 if best == y[i] else 1.0
    else:
        loss = (sums[i, 0] / counts[i] - y[i]) ** 2
    curve[b, t, 0] += loss
    curve[b, t, 1] += 1.0


@kernel(parallel=True)
def _out_of_bag_scattered(indptr, indices, data, n_columns, y, inbag, is_classification,
                          node_offset, walk, bitsets, value, sums, counts, curve,
                          block_size, scratch_rows):
    """:func:`_out_of_bag` over the CSR rows of a sparse X, scattered ``scratch_rows``
    rows at a time (see "Scattered rows"). The same blocks, each with its slice of
    ``curve``: a block's rows go through its trees a few rows at a time, but each
    ``curve[b, t]`` still adds its rows in order and each row its trees in order, so
    the sums are the dense call's bit for bit."""
    n_rows = indptr.shape[0] - 1
    n_trees = inbag.shape[0]
    n_blocks = (n_rows + block_size - 1) // block_size
    for b in nb.prange(n_blocks):
        scratch = np.zeros((scratch_rows, n_columns))
        last = min(n_rows, (b + 1) * block_size)
        for start in range(b * block_size, last, scratch_rows):
            stop = min(last, start + scratch_rows)
            _scatter(indptr, indices, data, start, stop, scratch, True)
            for t in range(n_trees):
                for i in range(start, stop):
                    _add_out_of_bag_row(scratch[i - start], i, t, b, y, inbag,
                                        is_classification, node_offset, walk, bitsets,
                                        value, sums, counts, curve)
            _scatter(indptr, indices, data, start, stop, scratch, False)


@kernel(parallel=True)
def _out_of_bag(X, y, inbag, is_classification, node_offset, walk, bitsets, value, sums,
                counts, curve, block_size):
    """Out-of-bag sums of the trees' values per row, and the OOB loss after each tree.

    ``inbag[t, i]`` is nonzero when row ``i`` trained tree ``t``. After tree ``t``, a row
    predicted by at least one tree adds its loss (0/1 error of the arg-max class, or the
    squared error of the mean) to ``curve[block, t, 0]`` and 1 to ``curve[block, t, 1]``;
    rows are processed in blocks, each owning its slice of ``curve``, so no two threads
    write the same entry and the sums do not depend on the number of threads.
    """
    n_rows = X.shape[0]
    n_trees = inbag.shape[0]
    n_blocks = (n_rows + block_size - 1) // block_size
    for b in nb.prange(n_blocks):
        # Tree-major inside a block, for cache locality (see ROW_BLOCK); each row still
        # adds its trees in order, so the sums are the same for any number of threads.
        for t in range(n_trees):
            for i in range(b * block_size, min(n_rows, (b + 1) * block_size)):
                _add_out_of_bag_row(X[i], i, t, b, y, inbag, is_classification,
                                    node_offset, walk, bitsets, value, sums, counts, curve)


@kernel(parallel=True)
def _weighted_quantiles(X, node_offset, walk, bitsets, leaf_offset, node_start, node_end,
                        leaf_samples, leaf_weights, y_rank, y_sorted, quantiles, out):
    """Quantiles of the forest's weighted empirical distribution of y at each row.

    Meinshausen (2006): a training sample's weight at x is, averaged over trees, its
    share (bootstrap count times sample weight) of the total weight of x's leaf. Tree
    ``t``'s node ``k`` holds ``leaf_samples[leaf_offset[t] + node_start[j]:...]`` with
    ``j = node_offset[t] + k``. The quantile of level q is the smallest training y whose
    cumulative weight reaches q.
    """
    n_trees = node_offset.shape[0] - 1
    for i in nb.prange(X.shape[0]):
        leaves = np.empty(n_trees, dtype=np.int64)
        total = 0
        for t in range(n_trees):
            leaves[t] = _leaf(X[i], node_offset[t], walk, bitsets)
            total += node_end[leaves[t]] - node_start[leaves[t]]
        ranks = np.empty(total, dtype=np.int64)
        weights = np.empty(total)
        m = 0
        for t in range(n_trees):
            first = leaf_offset[t] + node_start[leaves[t]]
            last = leaf_offset[t] + node_end[leaves[t]]
            leaf_total = 0.0
            for j in range(first, last):
                leaf_total += leaf_weights[j]
            for j in range(first, last):
                ranks[m] = y_rank[leaf_samples[j]]
                weights[m] = leaf_weights[j] / (leaf_total * n_trees)
                m += 1
        order = np.argsort(ranks)
        for q in range(quantiles.shape[0]):
            cumulative = 0.0
            answer = y_sorted[ranks[order[total - 1]]]
            for j in range(total):
                cumulative += weights[order[j]]
                # A relative tolerance: the weights of a row sum to one up to rounding.
                if cumulative >= quantiles[q] * (1.0 - 1e-12):
                    answer = y_sorted[ranks[order[j]]]
                    break
            out[i, q] = answer


@kernel()
def _siblings_adjacent_order(children_left, children_right):
    """Breadth-first renumbering of a tree in which each split's children are adjacent.

    Returns ``order`` (new id -> old id): the root first, then each split's left child
    immediately followed by its right child, parents before children.
    """
    n_nodes = children_left.shape[0]
    order = np.empty(n_nodes, dtype=np.int64)
    order[0] = 0
    n_ordered = 1
    for k in range(n_nodes):
        node = order[k]
        if children_left[node] != -1:
            order[n_ordered] = children_left[node]
            order[n_ordered + 1] = children_right[node]
            n_ordered += 2
    return order


@kernel()
def _siblings_adjacent(children_left, children_right):
    """Whether each split's right child is its left child + 1 and comes after its
    parent. One compiled pass: the same test in numpy was about 15 us per tree, a part
    of a small forest's fit (it runs once per tree, holding the GIL)."""
    for node in range(children_left.shape[0]):
        left = children_left[node]
        if left != -1 and (children_right[node] != left + 1 or left <= node):
            return False
    return True


@kernel()
def _write_walk(walk, node_offset, children_left, feature, threshold, missing_go_to_left,
                is_categorical):
    """Fill ``walk``, the packed records (see :data:`WALK_DTYPE`) of the trees whose
    nodes start at rows ``node_offset`` (children local to their tree), from their
    concatenated arrays: a split's threshold, left child and flags; a leaf's record
    leading back to itself. One compiled pass where the numpy version took a dozen
    whole-array steps per tree."""
    for t in range(node_offset.shape[0] - 1):
        first = node_offset[t]
        for row in range(first, node_offset[t + 1]):
            record = walk[row]
            left = children_left[row]
            if left == -1:
                record.threshold = np.nan
                record.left = row - first - 1
                record.feature_flags = 0
            else:
                flags = np.uint32(feature[row]) & FEATURE_MASK
                if missing_go_to_left[row] != 0:
                    flags |= np.uint32(1) << np.uint32(MISSING_LEFT_BIT)
                if is_categorical[row]:
                    flags |= np.uint32(1) << np.uint32(CATEGORICAL_BIT)
                record.threshold = threshold[row]
                record.left = left
                record.feature_flags = flags


def _with_adjacent_siblings(tree):
    """``tree`` itself when each split's right child is its left child + 1 and comes
    after its parent (true of every tree silva grows), else the same tree renumbered so
    (the walk records store only the left child, and tell a leaf by its smaller id)."""
    if _siblings_adjacent(tree.children_left, tree.children_right):
        return tree
    order = _siblings_adjacent_order(tree.children_left, tree.children_right)
    new_id = np.empty_like(order)
    new_id[order] = np.arange(order.shape[0])

    def renumbered(children):
        children = children[order]
        return np.where(children == -1, -1, new_id[np.maximum(children, 0)])

    return Tree(tree.n_features, tree.n_classes, renumbered(tree.children_left),
                renumbered(tree.children_right), tree.feature[order], tree.threshold[order],
                tree.missing_go_to_left[order], tree.is_categorical[order],
                tree.category_bitsets[order], tree.value[order], tree.impurity[order],
                tree.n_node_samples[order], tree.weighted_n_node_samples[order],
                n_categories=tree.n_categories, n_outputs=tree.n_outputs)


class PackedTreeView(Tree):
    """Tree ``t`` of a :class:`PackedTrees`, sharing its memory.

    ``value``, ``impurity``, ``n_node_samples``, ``weighted_n_node_samples`` and
    ``category_bitsets`` are views of the packed arrays. The structure arrays of a
    :class:`~silva.engine.tree.Tree` (``children_left``, ``children_right``, ``feature``,
    ``threshold``, ``missing_go_to_left``, ``is_categorical``) are derived from the walk
    records the first time they are read, then kept: a forest's 100 trees cost only their
    packed storage until something asks for one tree's arrays.
    """

    def __init__(self, packed, t):  # noqa: D107 - Tree's attributes, from the packing
        rows = slice(int(packed.node_offset[t]), int(packed.node_offset[t + 1]))
        self._packed, self._t = packed, t
        self.n_features = packed.n_features
        self.n_categories = packed.n_categories[t]
        self.n_classes = np.atleast_1d(np.asarray(packed.n_classes, dtype=np.intp))
        # Packings saved before multi-output trees hold one output per tree.
        self.n_outputs = getattr(packed, "tree_outputs", 1)
        self._walk = packed.walk[rows]
        self.category_bitsets = packed.category_bitsets[rows]
        self.value = packed.value[rows].reshape(-1, self.n_outputs,
                                                packed.n_values // self.n_outputs)
        self.impurity = packed.impurity[rows]
        self.n_node_samples = packed.n_node_samples[rows]
        self.weighted_n_node_samples = packed.weighted_n_node_samples[rows]

    @property
    def node_count(self):
        return self._walk.shape[0]

    def _leaf(self):
        return self._walk["left"] < np.arange(self._walk.shape[0])

    @property
    def n_leaves(self):
        return int(np.sum(self._leaf()))

    def _derived(self, name):
        array = self.__dict__.get(name)
        if array is None:
            left = self._walk["left"].astype(np.intp)
            flags = self._walk["feature_flags"]
            leaf = self._leaf()
            if name == "children_left":
                array = np.where(leaf, -1, left)
            elif name == "children_right":
                array = np.where(leaf, -1, left + 1)
            elif name == "feature":
                array = np.where(leaf, -2, (flags & FEATURE_MASK).astype(np.intp))
            elif name == "threshold":
                array = np.where(leaf, LEAF_THRESHOLD, self._walk["threshold"])
            elif name == "missing_go_to_left":
                array = (flags >> MISSING_LEFT_BIT).astype(np.uint8)
            else:
                array = ((flags >> CATEGORICAL_BIT) & 1).astype(np.bool_)
            self.__dict__[name] = array
        return array

    children_left = property(lambda self: self._derived("children_left"))
    children_right = property(lambda self: self._derived("children_right"))
    feature = property(lambda self: self._derived("feature"))
    threshold = property(lambda self: self._derived("threshold"))
    missing_go_to_left = property(lambda self: self._derived("missing_go_to_left"))
    is_categorical = property(lambda self: self._derived("is_categorical"))

    def __getstate__(self):
        # Saved as a reference to the packing (stored once, however many views).
        return {"packed": self._packed, "t": self._t}

    def __setstate__(self, state):
        self.__init__(state["packed"], state["t"])


class PackedTrees:
    """The trees of an ensemble, concatenated for compiled prediction.

    Per node the packing keeps one :data:`WALK_DTYPE` record, the leaf values, the
    impurity and the (weighted) sample counts: 56 bytes for a binary classifier's node,
    against 80 in scikit-learn's trees. :meth:`tree` gives each tree as a
    :class:`PackedTreeView` of this memory.

    Parameters
    ----------
    trees : iterable of :class:`silva.engine.tree.Tree`
        Trees with the same number of features and of leaf values per node. A generator
        is consumed one tree at a time: each tree is copied in and no longer referenced,
        so a forest packed from its growing trees never holds two copies of its nodes.
    tree_weight : array-like of shape (n_trees,), default=1
        Multiplier of each tree's leaf values in :meth:`predict`.
    output_column : array-like of int, shape (n_trees,), default=0
        First output column each tree's values are added to.
    expected_nodes : int, optional
        An upper bound on the total number of nodes, reserved up front. Reserving costs
        address space, not memory (pages are touched only as nodes are written), and
        saves the copies of growing the arrays; the unused tail is given back at the end.
    """

    # Packed per-node arrays besides the walk records: (name, dtype).
    _NODE_STATS = (("impurity", np.float64), ("n_node_samples", np.intp),
                   ("weighted_n_node_samples", np.float64))

    def __init__(self, trees, tree_weight=None, output_column=None, *, expected_nodes=None):
        counts = []
        self.n_categories = []
        self._n_nodes = 0
        for tree in trees:
            tree = _with_adjacent_siblings(tree)
            if not counts:
                self._start(tree, expected_nodes)
            self._append(tree)
            counts.append(tree.node_count)
            del tree  # a generator's trees are freed as soon as they are copied
        if not counts:
            raise ValueError("PackedTrees needs at least one tree.")
        self._trim()
        self._set_trees(counts, tree_weight, output_column)

    @classmethod
    def from_node_arrays(cls, node_offset, n_features, n_classes, n_categories, *,
                         children_left, children_right, feature, threshold,
                         missing_go_to_left, is_categorical, category_bitsets, value,
                         impurity, n_node_samples, weighted_n_node_samples,
                         tree_weight=None, output_column=None):
        """The same packing as ``PackedTrees(trees, tree_weight, output_column)``, from
        the trees' per-node arrays concatenated rather than from tree objects.

        Tree ``t``'s nodes are rows ``node_offset[t]:node_offset[t + 1]`` of every array
        (named as :class:`~silva.engine.tree.Tree`'s, children local to their tree),
        ``value`` is (n_nodes, n_values) and ``n_categories`` one array per tree. Each
        split's right child must be its left child + 1 and come after its parent, as
        silva's growers write them: there is no renumbering here. Boosting packs its
        many small trees so, in one pass, where building a :class:`Tree` per tree and
        copying it in cost about 15 us a tree (a fifth of a small fit).
        """
        node_offset = np.ascontiguousarray(node_offset, dtype=np.int64)
        children_left = np.ascontiguousarray(children_left, dtype=np.intp)
        is_categorical = np.ascontiguousarray(is_categorical, dtype=np.bool_)
        split = children_left != -1
        left = children_left[split]
        if not (np.array_equal(np.asarray(children_right)[split], left + 1)
                and np.all(left > _local_ids(node_offset)[split])):
            raise ValueError("from_node_arrays needs each split's right child to be its "
                             "left child + 1, after its parent.")
        packed = cls.__new__(cls)
        packed._set_n_features(n_features)
        packed.n_classes = np.atleast_1d(np.asarray(n_classes, dtype=np.intp))
        packed.value = np.ascontiguousarray(value, dtype=np.float64)
        packed.tree_outputs = 1
        packed.n_values = packed.value.shape[1]
        n_nodes = int(node_offset[-1])
        packed.walk = np.empty(n_nodes, dtype=WALK_DTYPE)
        _write_walk(packed.walk, node_offset, children_left,
                    np.ascontiguousarray(feature, dtype=np.intp),
                    np.ascontiguousarray(threshold, dtype=np.float64),
                    np.ascontiguousarray(missing_go_to_left, dtype=np.uint8), is_categorical)
        # As _append stores them: no bitsets until a categorical split needs them.
        packed.category_bitsets = (
            np.ascontiguousarray(category_bitsets, dtype=np.uint64) if is_categorical.any()
            else np.zeros((n_nodes, 0), dtype=np.uint64))
        packed.impurity = np.ascontiguousarray(impurity, dtype=np.float64)
        packed.n_node_samples = np.ascontiguousarray(n_node_samples, dtype=np.intp)
        packed.weighted_n_node_samples = np.ascontiguousarray(weighted_n_node_samples,
                                                              dtype=np.float64)
        packed.n_categories = list(n_categories)
        packed._n_nodes = n_nodes
        packed._set_trees(np.diff(node_offset), tree_weight, output_column)
        return packed

    def _set_trees(self, counts, tree_weight, output_column):
        """The per-tree attributes, from each tree's node count."""
        n_trees = len(counts)
        self.n_trees = n_trees
        self.node_offset = np.zeros(n_trees + 1, dtype=np.int64)
        np.cumsum(counts, out=self.node_offset[1:])
        self.tree_weight = (np.ones(n_trees) if tree_weight is None
                            else np.ascontiguousarray(tree_weight, dtype=np.float64))
        self.output_column = (np.zeros(n_trees, dtype=np.int64) if output_column is None
                              else np.ascontiguousarray(output_column, dtype=np.int64))
        if self.tree_weight.shape != (n_trees,) or self.output_column.shape != (n_trees,):
            raise ValueError("tree_weight and output_column need one entry per tree.")

    # ------------------------------------------------------------- building
    def _set_n_features(self, n_features):
        """Record the trees' feature count; a walk record stores a feature in 30 bits."""
        self.n_features = int(n_features)
        if self.n_features > MAX_WALK_FEATURES:
            raise ValueError(f"trees with more than {MAX_WALK_FEATURES} features cannot be "
                             f"packed; got {self.n_features}.")

    def _start(self, tree, expected_nodes):
        self._set_n_features(tree.n_features)
        self.n_classes = tree.n_classes
        # A multi-output tree's values (n_outputs, width) are packed flat, output after
        # output: n_values per node in all.
        self.tree_outputs = tree.value.shape[1]
        self.n_values = tree.value.shape[1] * tree.value.shape[2]
        # Without a categorical split, no node reads a bitset: store none until one comes.
        self.category_bitsets = np.zeros((0, 0), dtype=np.uint64)
        capacity = max(int(expected_nodes or 0), tree.node_count)
        try:
            self._allocate(capacity)
        except MemoryError:  # the bound asked for too much address space: grow instead
            self._allocate(tree.node_count)

    def _allocate(self, capacity):
        """Arrays for ``capacity`` nodes, the first ``self._n_nodes`` copied from the old."""
        n = self._n_nodes
        walk = np.empty(capacity, dtype=WALK_DTYPE)
        value = np.empty((capacity, self.n_values))
        bitsets = np.zeros((capacity, self.category_bitsets.shape[1]), dtype=np.uint64)
        stats = {name: np.empty(capacity, dtype=dtype) for name, dtype in self._NODE_STATS}
        if n:
            walk[:n] = self.walk[:n]
            value[:n] = self.value[:n]
            bitsets[:n] = self.category_bitsets[:n]
            for name, _ in self._NODE_STATS:
                stats[name][:n] = getattr(self, name)[:n]
        self.walk, self.value, self.category_bitsets = walk, value, bitsets
        for name, array in stats.items():
            setattr(self, name, array)

    def _append(self, tree):
        n_tree = tree.node_count
        first, last = self._n_nodes, self._n_nodes + n_tree
        if last > self.walk.shape[0]:
            self._allocate(max(last, 2 * self.walk.shape[0]))
        if tree.is_categorical.any() and tree.category_bitsets.shape[1] > \
                self.category_bitsets.shape[1]:
            wider = np.zeros((self.walk.shape[0], tree.category_bitsets.shape[1]),
                             dtype=np.uint64)
            wider[:first, :self.category_bitsets.shape[1]] = self.category_bitsets[:first]
            self.category_bitsets = wider
        rows = slice(first, last)
        _write_walk(self.walk[rows], np.array([0, n_tree]), tree.children_left, tree.feature,
                    tree.threshold, tree.missing_go_to_left, tree.is_categorical)
        self.value[rows] = tree.value.reshape(n_tree, -1)
        width = min(self.category_bitsets.shape[1], tree.category_bitsets.shape[1])
        self.category_bitsets[rows, :width] = tree.category_bitsets[:, :width]
        for name, _ in self._NODE_STATS:
            getattr(self, name)[rows] = getattr(tree, name)
        self.n_categories.append(tree.n_categories)
        self._n_nodes = last

    def _trim(self):
        """Give back the reserved capacity past the last node (in place: no views exist
        yet, and ``resize`` shrinks the allocation without copying it)."""
        n = self._n_nodes
        for name in ("walk", "value", "category_bitsets") + tuple(
                name for name, _ in self._NODE_STATS):
            array = getattr(self, name)
            if array.shape[0] != n:
                if array.flags.owndata:
                    array.resize((n,) + array.shape[1:], refcheck=False)
                else:
                    setattr(self, name, array[:n].copy())

    # ---------------------------------------------------------- persistence
    def __getstate__(self):
        # The model file format has no record dtypes: the walk records are stored as
        # their three fields, with a tree's usual leaves (left child -1, threshold
        # LEAF_THRESHOLD) rather than the self-loops.
        state = dict(self.__dict__)
        walk = state.pop("walk")
        leaf = _leaf_records(walk, self.node_offset)
        fields = {name: walk[name].copy() for name in WALK_DTYPE.names}
        fields["left"][leaf] = -1
        fields["threshold"][leaf] = LEAF_THRESHOLD
        state["walk_fields"] = fields
        return state

    def __setstate__(self, state):
        fields = state.pop("walk_fields")
        self.__dict__.update(state)
        self.walk = np.empty(fields["left"].shape[0], dtype=WALK_DTYPE)
        for name, array in fields.items():
            self.walk[name] = array
        _make_leaves_loop(self.walk, fields["left"] == -1, _local_ids(self.node_offset))

    # ------------------------------------------------------------ inspection
    def tree(self, t):
        """Tree ``t`` as a :class:`PackedTreeView` of the packed memory."""
        return PackedTreeView(self, t)

    def feature_importances(self):
        """(n_trees, n_features): each tree's normalised mean decrease in impurity
        (:meth:`silva.engine.tree.Tree.compute_feature_importances`), computed on the packed
        records without deriving the trees' structure arrays."""
        importances = np.zeros((self.n_trees, self.n_features))
        weighted = self.weighted_n_node_samples * self.impurity
        left_local = self.walk["left"].astype(np.int64)
        tree_of_node = np.repeat(np.arange(self.n_trees), np.diff(self.node_offset))
        internal = np.flatnonzero(~_leaf_records(self.walk, self.node_offset))
        left = self.node_offset[tree_of_node[internal]] + left_local[internal]
        decrease = weighted[internal] - weighted[left] - weighted[left + 1]
        feature = (self.walk["feature_flags"][internal] & FEATURE_MASK).astype(np.int64)
        np.add.at(importances, (tree_of_node[internal], feature), decrease)
        importances /= self.weighted_n_node_samples[self.node_offset[:-1]][:, None]
        totals = importances.sum(axis=1, keepdims=True)
        np.divide(importances, totals, out=importances, where=totals > 0)
        return importances

    def _kernel_arrays(self):
        return self.node_offset, self.walk, self.category_bitsets

    def _tree_range(self, tree_range):
        first, last = (0, self.n_trees) if tree_range is None else tree_range
        if not 0 <= first <= last <= self.n_trees:
            raise ValueError(f"tree range must lie within [0, {self.n_trees}]; got "
                             f"({first}, {last}).")
        return int(first), int(last)

    def _scatter_width(self, rows):
        """Columns of a scatter scratch for ``rows``, or 0 where rows are searched
        instead (see :data:`silva.engine.sparse.MAX_SCATTER_COLUMNS`)."""
        width = max(rows.n_columns, self.n_features)
        return width if width <= sparse_module.MAX_SCATTER_COLUMNS else 0

    def _apply_rows(self, rows, tree_range=None):
        """:meth:`apply` on a sparse X's :class:`~silva.engine.sparse.CsrRows`."""
        first, last = self._tree_range(tree_range)
        block = _block_rows(rows.n_rows, 0)
        width = self._scatter_width(rows)
        if width:
            return _apply_packed_scattered(*rows.arrays, width, first, last,
                                           *self._kernel_arrays(), block,
                                           _scatter_rows(width, block))
        return _apply_packed_rows(*rows.arrays, first, last, *self._kernel_arrays(), block)

    def _predict_rows(self, rows, first, last, out):
        """:meth:`predict`'s sums on a sparse X's CsrRows, added to ``out``."""
        block = _block_rows(rows.n_rows, 0)
        width = self._scatter_width(rows)
        if width:
            _predict_packed_scattered(*rows.arrays, width, first, last,
                                      *self._kernel_arrays(), self.value, self.tree_weight,
                                      self.output_column, out, block,
                                      _scatter_rows(width, block))
        else:
            _predict_packed_rows(*rows.arrays, first, last, *self._kernel_arrays(),
                                 self.value, self.tree_weight, self.output_column, out,
                                 block)

    @rowwise(walk=_apply_rows)
    def apply(self, X, tree_range=None):
        """Leaf id (within its own tree) of each row in each tree: (n_rows, n_trees)."""
        first, last = self._tree_range(tree_range)
        X = np.ascontiguousarray(X, dtype=np.float64)
        kernel = serial_copy(_apply_packed) if X.shape[0] < SERIAL_ROWS else _apply_packed
        return kernel(X, first, last, *self._kernel_arrays(), _block_rows(*X.shape))

    def tree_values(self, X, tree_range=None):
        """Each tree's leaf values for each row, unweighted: (n_rows, n_trees, n_values)."""
        first, last = self._tree_range(tree_range)
        leaves = self.apply(X, (first, last)) + self.node_offset[first:last]
        return self.value[leaves]

    def predict(self, X, n_outputs=None, tree_range=None, out=None):
        """Weighted sum of the trees' leaf values, shape (n_rows, n_outputs).

        ``n_outputs`` defaults to the largest ``output_column + n_values``; with ``out``
        given, the sums are added to it (a boosting model's initial prediction, say).
        ``tree_range=(first, last)`` uses trees ``first`` to ``last - 1`` only.
        """
        first, last = self._tree_range(tree_range)
        if not is_sparse(X):
            X = np.ascontiguousarray(X, dtype=np.float64)
        if out is None:
            if n_outputs is None:
                n_outputs = int(self.output_column.max()) + self.n_values
            out = np.zeros((X.shape[0], n_outputs))
        if is_sparse(X):
            self._predict_rows(csr_rows(X), first, last, out)
            return out
        kernel = serial_copy(_predict_packed) if X.shape[0] < SERIAL_ROWS else _predict_packed
        kernel(X, first, last, *self._kernel_arrays(), self.value, self.tree_weight,
               self.output_column, out, _block_rows(*X.shape))
        return out

    def out_of_bag(self, X, y, inbag, is_classification, block_size=1024):
        """Out-of-bag predictions and the OOB loss as a function of the number of trees.

        ``inbag`` is ``(n_trees, n_rows)``, nonzero where the row trained the tree.
        Returns ``(sums, counts, curve)``: per row the sum of the values of the trees that
        did not see it and their number, and per number of trees ``t + 1`` the mean loss
        (0/1 error or squared error) over the rows with at least one OOB prediction
        (NaN while no row has one).
        """
        n_rows = X.shape[0]
        sums = np.zeros((n_rows, self.n_values))
        counts = np.zeros(n_rows, dtype=np.int64)
        n_blocks = (n_rows + block_size - 1) // block_size
        curve = np.zeros((n_blocks, self.n_trees, 2))
        y = np.ascontiguousarray(y, dtype=np.float64)
        inbag = np.ascontiguousarray(inbag, dtype=np.uint8)
        if is_sparse(X):
            rows = csr_rows(X)
            width = max(rows.n_columns, self.n_features)
            _out_of_bag_scattered(*rows.arrays, width, y, inbag, is_classification,
                                  *self._kernel_arrays(), self.value, sums, counts, curve,
                                  block_size, _scatter_rows(width, block_size))
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
            _out_of_bag(X, y, inbag, is_classification, *self._kernel_arrays(),
                        self.value, sums, counts, curve, block_size)
        totals = curve.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            loss_curve = np.where(totals[:, 1] > 0, totals[:, 0] / totals[:, 1], np.nan)
        return sums, counts, loss_curve

    @rowwise
    def weighted_quantiles(self, X, leaf_offset, node_start, node_end, leaf_samples,
                           leaf_weights, y_train, quantiles):
        """Quantile regression forest predictions (see :func:`_weighted_quantiles`).

        ``node_start``/``node_end`` are packed per node (row ``node_offset[t] + k``),
        relative to tree ``t``'s block ``leaf_samples[leaf_offset[t]:leaf_offset[t+1]]``.
        Returns ``(n_rows, n_quantiles)``.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        order = np.argsort(y_train, kind="stable")
        y_rank = np.empty(order.shape[0], dtype=np.int64)
        y_rank[order] = np.arange(order.shape[0])
        out = np.empty((X.shape[0], quantiles.shape[0]))
        _weighted_quantiles(X, *self._kernel_arrays(), leaf_offset, node_start, node_end,
                            leaf_samples, leaf_weights, y_rank, y_train[order],
                            np.ascontiguousarray(quantiles, dtype=np.float64), out)
        return out
