"""Packed trees: many fitted trees in one set of flat arrays, predicted in one compiled call.

An ensemble's trees (forests, boosting, bagging of silva trees) are concatenated into the
arrays of :class:`PackedTrees`: node ``k`` of tree ``t`` is row ``node_offset[t] + k``.
Children ids stay local to their tree, so each tree's arrays are a contiguous slice of
the packed ones and :meth:`PackedTrees.tree` returns a :class:`~silva.engine.tree.Tree`
whose arrays are views (an ensemble keeps one copy of its nodes). Prediction walks every
tree for a row inside one compiled kernel, parallel over rows, so a 100-tree forest costs
one call instead of 100 (and no ``(n_rows, n_trees, n_values)`` intermediate).

Each tree writes its leaf values into the output columns
``[output_column[t], output_column[t] + n_values)``, multiplied by ``tree_weight[t]``: a
forest uses column 0 and weight ``1 / n_trees`` (the mean of the trees' class fractions),
multiclass gradient boosting one column per class and weight 1 (the sum of the trees of
that class).
"""

import numba as nb
import numpy as np

from silva.engine.tree import Tree

# What a prediction reads of a node, in one 24-byte record: a walk down a tree touches one
# cache line per node instead of one per array (six separate arrays made prediction of
# deep forests memory-bound, twice slower than scikit-learn's array of node structs).
# ``flags``: bit 0 = missing values go left, bit 1 = categorical split.
WALK_DTYPE = np.dtype([("threshold", np.float64), ("left", np.int32), ("right", np.int32),
                       ("feature", np.int32), ("flags", np.uint8)], align=True)
MISSING_LEFT_FLAG = 1
CATEGORICAL_FLAG = 2


@nb.njit(cache=True, inline="always")
def _leaf(x_row, offset, walk, bitsets):
    """Packed row of the leaf reached by ``x_row`` in the tree whose root is ``offset``.

    The same decisions as :func:`silva.engine.tree._goes_left`: NaN (and, at a categorical
    split, a code outside the bitset) follows the missing-value direction.
    """
    node = offset
    while True:
        record = walk[node]
        left = record.left
        if left == -1:
            return node
        x = x_row[record.feature]
        flags = record.flags
        if np.isnan(x):
            go_left = (flags & MISSING_LEFT_FLAG) != 0
        elif flags & CATEGORICAL_FLAG:
            n_codes = bitsets.shape[1] * 64
            if x < 0 or x >= n_codes or x != np.floor(x):
                go_left = (flags & MISSING_LEFT_FLAG) != 0
            else:
                code = np.int64(x)
                word = bitsets[node, code >> 6]
                go_left = (word >> np.uint64(code & 63)) & np.uint64(1) != 0
        else:
            go_left = x <= record.threshold
        node = offset + (left if go_left else record.right)


# Rows per block of the prediction kernels: a block walks one tree for all its rows before
# the next tree, so that tree's nodes stay in cache (walking all trees for one row touches
# every tree's nodes per row: with 100 deep trees that is 8x slower on 200k rows).
ROW_BLOCK = 2048


@nb.njit(cache=True, inline="always")
def _step(X, i, node, offset, walk):
    """The next node of row ``i`` below ``node`` (``node`` itself at a leaf), for trees
    without categorical splits, computed without a branch.

    A branch on each comparison mispredicts about once per level (the directions of a
    row's path are data); so the direction is turned into 0 or 1 and the child
    computed by arithmetic (a conditional expression compiles to a branch here)."""
    # Unsigned indices: numba then skips its wraparound handling of negative ones.
    record = walk[np.uint64(node)]
    left = np.int64(record.left)
    right = np.int64(record.right)
    # A leaf's feature is negative: read any column, the result is not used.
    x = X[np.uint64(i), np.uint64(max(np.int64(record.feature), 0))]
    # x <= threshold; NaN (x != x) goes where the node sends missing values.
    go_left = (np.int64(x <= record.threshold)
               | (np.int64(x != x) & np.int64(record.flags & MISSING_LEFT_FLAG)))
    child = offset + right + (left - right) * go_left
    return node + (child - node) * np.int64(left >= 0)


@nb.njit(cache=True, inline="always")
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


@nb.njit(cache=True, inline="always")
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


@nb.njit(cache=True, parallel=True)
def _apply_packed(X, first_tree, last_tree, node_offset, walk, bitsets):
    n_rows = X.shape[0]
    leaves = np.empty((n_rows, last_tree - first_tree), dtype=np.int64)
    n_blocks = (n_rows + ROW_BLOCK - 1) // ROW_BLOCK
    for b in nb.prange(n_blocks):
        first = b * ROW_BLOCK
        last = min(n_rows, first + ROW_BLOCK)
        block_leaves = np.empty(ROW_BLOCK, dtype=np.int64)
        for t in range(first_tree, last_tree):
            _block_leaves(X, first, last, node_offset[t], walk, bitsets, block_leaves)
            for i in range(first, last):
                leaves[i, t - first_tree] = block_leaves[i - first] - node_offset[t]
    return leaves


@nb.njit(cache=True, parallel=True)
def _predict_packed(X, first_tree, last_tree, node_offset, walk, bitsets, value, tree_weight,
                    output_column, out):
    n_values = value.shape[1]
    n_rows = X.shape[0]
    n_blocks = (n_rows + ROW_BLOCK - 1) // ROW_BLOCK
    for b in nb.prange(n_blocks):
        first = b * ROW_BLOCK
        last = min(n_rows, first + ROW_BLOCK)
        block_leaves = np.empty(ROW_BLOCK, dtype=np.int64)
        # Trees in order for every row: the sums are the same for any number of threads.
        for t in range(first_tree, last_tree):
            column = output_column[t]
            weight = tree_weight[t]
            _block_leaves(X, first, last, node_offset[t], walk, bitsets, block_leaves)
            for i in range(first, last):
                leaf = block_leaves[i - first]
                for k in range(n_values):
                    out[i, column + k] += weight * value[leaf, k]


@nb.njit(cache=True, parallel=True)
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
    n_values = value.shape[1]
    n_blocks = (n_rows + block_size - 1) // block_size
    for b in nb.prange(n_blocks):
        # Tree-major inside a block, for cache locality (see ROW_BLOCK); each row still
        # adds its trees in order, so the sums are the same for any number of threads.
        for t in range(n_trees):
            for i in range(b * block_size, min(n_rows, (b + 1) * block_size)):
                if inbag[t, i] == 0:
                    leaf = _leaf(X[i], node_offset[t], walk, bitsets)
                    for k in range(n_values):
                        sums[i, k] += value[leaf, k]
                    counts[i] += 1
                if counts[i] == 0:
                    continue
                if is_classification:
                    best = 0
                    for k in range(1, n_values):
                        if sums[i, k] > sums[i, best]:
                            best = k
                    loss = 0.0 if best == y[i] else 1.0
                else:
                    loss = (sums[i, 0] / counts[i] - y[i]) ** 2
                curve[b, t, 0] += loss
                curve[b, t, 1] += 1.0


@nb.njit(cache=True, parallel=True)
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


class PackedTrees:
    """The trees of an ensemble, concatenated for compiled prediction.

    Parameters
    ----------
    trees : sequence of :class:`silva.engine.tree.Tree`
        Trees with the same number of features and of leaf values per node.
    tree_weight : array-like of shape (n_trees,), default=1
        Multiplier of each tree's leaf values in :meth:`predict`.
    output_column : array-like of int, shape (n_trees,), default=0
        First output column each tree's values are added to.
    release : bool, default=False
        ``trees`` is a list handed over to the packing: each entry is set to None once
        copied, so that (with no other reference to it) its memory is freed at once.
    """

    # Per-node arrays of a Tree, packed tree after tree.
    _NODE_ARRAYS = ("children_left", "children_right", "feature", "threshold",
                    "missing_go_to_left", "is_categorical", "impurity", "n_node_samples",
                    "weighted_n_node_samples")

    def __init__(self, trees, tree_weight=None, output_column=None, *, release=False):
        if not isinstance(trees, list):
            trees = list(trees)
        if not trees:
            raise ValueError("PackedTrees needs at least one tree.")
        n_trees = len(trees)
        counts = np.array([tree.node_count for tree in trees], dtype=np.int64)
        self.node_offset = np.zeros(n_trees + 1, dtype=np.int64)
        np.cumsum(counts, out=self.node_offset[1:])
        n_nodes = int(self.node_offset[-1])
        self.n_trees = n_trees
        self.n_features = trees[0].n_features
        self.n_classes = trees[0].n_classes
        self.n_values = trees[0].value.shape[2]
        self.n_categories = [tree.n_categories for tree in trees]
        for name in self._NODE_ARRAYS:
            setattr(self, name, np.empty(n_nodes, dtype=getattr(trees[0], name).dtype))
        # Without a categorical split anywhere, no node reads a bitset: store none.
        n_words = max((tree.category_bitsets.shape[1] for tree in trees
                       if tree.is_categorical.any()), default=0)
        self.category_bitsets = np.zeros((n_nodes, n_words), dtype=np.uint64)
        self.value = np.empty((n_nodes, self.n_values))
        for t in range(n_trees):
            tree = trees[t]
            rows = slice(self.node_offset[t], self.node_offset[t + 1])
            for name in self._NODE_ARRAYS:
                getattr(self, name)[rows] = getattr(tree, name)
            self.value[rows] = tree.value[:, 0, :]
            width = min(n_words, tree.category_bitsets.shape[1])
            self.category_bitsets[rows, :width] = tree.category_bitsets[:, :width]
            if release:
                # The caller handed the trees over: free each as soon as it is copied, so
                # packing a forest never holds two copies of all its nodes.
                trees[t] = None
        self.walk = self._walk_records()
        self.tree_weight = (np.ones(n_trees) if tree_weight is None
                            else np.ascontiguousarray(tree_weight, dtype=np.float64))
        self.output_column = (np.zeros(n_trees, dtype=np.int64) if output_column is None
                              else np.ascontiguousarray(output_column, dtype=np.int64))
        if self.tree_weight.shape != (n_trees,) or self.output_column.shape != (n_trees,):
            raise ValueError("tree_weight and output_column need one entry per tree.")

    def __getstate__(self):
        # The walk records are derived from the node arrays: not stored, rebuilt on load.
        state = dict(self.__dict__)
        state.pop("walk", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.walk = self._walk_records()

    def _walk_records(self):
        """The nodes as :data:`WALK_DTYPE` records (children stay local to their tree)."""
        walk = np.empty(self.children_left.shape[0], dtype=WALK_DTYPE)
        walk["threshold"] = self.threshold
        walk["left"] = self.children_left
        walk["right"] = self.children_right
        walk["feature"] = self.feature
        walk["flags"] = ((self.missing_go_to_left != 0) * MISSING_LEFT_FLAG
                         + self.is_categorical * CATEGORICAL_FLAG)
        return walk

    def tree(self, t):
        """Tree ``t`` as a :class:`~silva.engine.tree.Tree` whose arrays view the packed ones.

        Replacing an ensemble's own trees by these views keeps a single copy of the nodes.
        """
        rows = slice(self.node_offset[t], self.node_offset[t + 1])
        arrays = {name: getattr(self, name)[rows] for name in self._NODE_ARRAYS}
        return Tree(self.n_features, self.n_classes, category_bitsets=self.category_bitsets[rows],
                    value=self.value[rows], n_categories=self.n_categories[t], **arrays)

    def _kernel_arrays(self):
        return self.node_offset, self.walk, self.category_bitsets

    def _tree_range(self, tree_range):
        first, last = (0, self.n_trees) if tree_range is None else tree_range
        if not 0 <= first <= last <= self.n_trees:
            raise ValueError(f"tree range must lie within [0, {self.n_trees}]; got "
                             f"({first}, {last}).")
        return int(first), int(last)

    def apply(self, X, tree_range=None):
        """Leaf id (within its own tree) of each row in each tree: (n_rows, n_trees)."""
        first, last = self._tree_range(tree_range)
        return _apply_packed(np.ascontiguousarray(X, dtype=np.float64), first, last,
                             *self._kernel_arrays())

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
        X = np.ascontiguousarray(X, dtype=np.float64)
        if out is None:
            if n_outputs is None:
                n_outputs = int(self.output_column.max()) + self.n_values
            out = np.zeros((X.shape[0], n_outputs))
        _predict_packed(X, first, last, *self._kernel_arrays(), self.value,
                        self.tree_weight, self.output_column, out)
        return out

    def out_of_bag(self, X, y, inbag, is_classification, block_size=1024):
        """Out-of-bag predictions and the OOB loss as a function of the number of trees.

        ``inbag`` is ``(n_trees, n_rows)``, nonzero where the row trained the tree.
        Returns ``(sums, counts, curve)``: per row the sum of the values of the trees that
        did not see it and their number, and per number of trees ``t + 1`` the mean loss
        (0/1 error or squared error) over the rows with at least one OOB prediction
        (NaN while no row has one).
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        n_rows = X.shape[0]
        sums = np.zeros((n_rows, self.n_values))
        counts = np.zeros(n_rows, dtype=np.int64)
        n_blocks = (n_rows + block_size - 1) // block_size
        curve = np.zeros((n_blocks, self.n_trees, 2))
        _out_of_bag(X, np.ascontiguousarray(y, dtype=np.float64),
                    np.ascontiguousarray(inbag, dtype=np.uint8), is_classification,
                    *self._kernel_arrays(), self.value, sums, counts, curve, block_size)
        totals = curve.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            loss_curve = np.where(totals[:, 1] > 0, totals[:, 0] / totals[:, 1], np.nan)
        return sums, counts, loss_curve

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
