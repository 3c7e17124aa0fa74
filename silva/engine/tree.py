"""The Tree: the flat-array binary tree of CART, forests and boosting.

Node ``i`` of a :class:`Tree` is described by the ``i``-th entry of each array, with
scikit-learn's names and conventions so that code written for ``sklearn.tree`` reads
silva's trees too:

- ``children_left``, ``children_right``: child node ids, ``-1`` at leaves;
- ``feature``: the split feature, ``-2`` at leaves;
- ``threshold``: a sample goes left when ``x <= threshold`` (``-2`` at leaves and at
  categorical splits);
- ``missing_go_to_left``: where a missing value (NaN) goes;
- ``is_categorical`` and ``category_bitsets``: a categorical split sends left the
  category codes whose bit is set; codes the node never saw in training (unseen
  categories, negative or non-integer codes) follow the missing values;
- ``value``: ``(node_count, n_outputs, n_values)``, class fractions for classifiers
  and the mean (or median) target for regressors (``n_outputs`` is 1 but for
  multi-output trees, whose classifiers pad each output's classes to the largest count);
- ``impurity``, ``n_node_samples``, ``weighted_n_node_samples``.

Thresholds are real values, so prediction reads raw X; the kernels below are compiled
and parallel over rows.
"""

import numba as nb
import numpy as np
import scipy.sparse

from silva.engine import sparse as sparse_module
from silva.engine.jit import kernel
from silva.engine.nodes import decision_arrays
from silva.engine.sparse import rowwise, stored_value, vstack_sparse
from silva.engine.tree_interface import Split


@kernel(inline="always")
def _goes_left(x, node, threshold, missing_go_left, is_categorical, bitsets):
    if np.isnan(x):
        return missing_go_left[node] != 0
    if is_categorical[node]:
        n_codes = bitsets.shape[1] * 64
        if x < 0 or x >= n_codes or x != np.floor(x):
            return missing_go_left[node] != 0
        code = np.int64(x)
        word = bitsets[node, code >> 6]
        return (word >> np.uint64(code & 63)) & np.uint64(1) != 0
    return x <= threshold[node]


@kernel(inline="always")
def _child(x_row, node, children_left, children_right, feature, threshold, missing_go_left,
           is_categorical, bitsets):
    if _goes_left(x_row[feature[node]], node, threshold, missing_go_left, is_categorical,
                  bitsets):
        return children_left[node]
    return children_right[node]


# Below this many rows a tree is walked on the calling thread: waking the parallel
# workers costs more than the walk (milliseconds on a busy machine, for AdaBoost's and
# bagging's per-round predictions on a few hundred rows).
PARALLEL_MIN_ROWS = 4096


@kernel(inline="always")
def _leaf_of_row(x_row, children_left, children_right, feature, threshold, missing_go_left,
                 is_categorical, bitsets):
    node = 0
    while children_left[node] != -1:
        node = _child(x_row, node, children_left, children_right, feature, threshold,
                      missing_go_left, is_categorical, bitsets)
    return node


@kernel(parallel=True)
def apply_tree(X, children_left, children_right, feature, threshold, missing_go_left,
               is_categorical, bitsets):
    """Leaf id reached by each row of X (parallel over rows)."""
    leaves = np.empty(X.shape[0], dtype=np.int64)
    for i in nb.prange(X.shape[0]):
        leaves[i] = _leaf_of_row(X[i], children_left, children_right, feature, threshold,
                                 missing_go_left, is_categorical, bitsets)
    return leaves


@kernel()
def apply_tree_serial(X, children_left, children_right, feature, threshold, missing_go_left,
                      is_categorical, bitsets):
    """:func:`apply_tree` on the calling thread, for a few rows.

    The walk is written out here rather than through :func:`_leaf_of_row`: inlined into
    a loop that is not a parallel one, numba counted each array argument's references up
    and down at every level of every row (atomic operations), which made this walk 50
    times slower than the parallel one (3.5 against 0.06 ms, 4,000 rows, depth 13).
    """
    leaves = np.empty(X.shape[0], dtype=np.int64)
    n_codes = bitsets.shape[1] * 64
    for i in range(X.shape[0]):
        node = 0
        while children_left[node] != -1:
            x = X[i, feature[node]]
            if np.isnan(x):
                left = missing_go_left[node] != 0
            elif is_categorical[node]:
                if x < 0 or x >= n_codes or x != np.floor(x):
                    left = missing_go_left[node] != 0
                else:
                    code = np.int64(x)
                    left = (bitsets[node, code >> 6] >> np.uint64(code & 63)) & np.uint64(1) != 0
            else:
                left = x <= threshold[node]
            node = children_left[node] if left else children_right[node]
        leaves[i] = node
    return leaves


@kernel()
def apply_tree_rows(indptr, indices, data, first, last, children_left, children_right,
                    feature, threshold, missing_go_left, is_categorical, bitsets, leaves):
    """``leaves[i]`` = the leaf reached by row ``i`` of a sparse X given as CSR arrays
    (:class:`silva.engine.sparse.CsrRows`), for rows ``first..last-1``.

    The decisions of :func:`apply_tree_serial`, with each split's value read from the
    row's stored entries (:func:`silva.engine.sparse.stored_value`: an unstored column is
    0.0, a stored NaN missing), so the leaves are those of the dense ``X.toarray()``.
    Written out like :func:`apply_tree_serial`, for the reason given there; the inlined
    search did not bring the reference counting back (4,000 rows of 50 columns, 20%
    stored, a tree of depth 145: 2.7 ms, against 0.7 ms for the dense serial walk of
    the dense array).
    """
    n_codes = bitsets.shape[1] * 64
    for i in range(first, last):
        start = indptr[i]
        stop = indptr[i + 1]
        node = 0
        while children_left[node] != -1:
            x = stored_value(indices, data, start, stop, feature[node])
            if np.isnan(x):
                left = missing_go_left[node] != 0
            elif is_categorical[node]:
                if x < 0 or x >= n_codes or x != np.floor(x):
                    left = missing_go_left[node] != 0
                else:
                    code = np.int64(x)
                    left = (bitsets[node, code >> 6] >> np.uint64(code & 63)) & np.uint64(1) != 0
            else:
                left = x <= threshold[node]
            node = children_left[node] if left else children_right[node]
        leaves[i] = node


@kernel(parallel=True)
def apply_tree_scattered(indptr, indices, data, n_columns, children_left, children_right,
                         feature, threshold, missing_go_left, is_categorical, bitsets,
                         block_rows):
    """Leaf of each CSR row of a sparse X, parallel over blocks of ``block_rows``: each
    row's stored entries are written into a zeroed dense row (``n_columns`` wide, one
    per block), walked by :func:`_leaf_of_row` as a dense row is, and zeroed again, so a
    row costs its stored entries, not its width (see ``engine/ensemble.py``, "Scattered
    rows")."""
    n_rows = indptr.shape[0] - 1
    leaves = np.empty(n_rows, dtype=np.int64)
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        row = np.zeros(n_columns)
        for i in range(b * block_rows, min(n_rows, (b + 1) * block_rows)):
            for j in range(indptr[i], indptr[i + 1]):
                row[indices[j]] = data[j]
            leaves[i] = _leaf_of_row(row, children_left, children_right, feature, threshold,
                                     missing_go_left, is_categorical, bitsets)
            for j in range(indptr[i], indptr[i + 1]):
                row[indices[j]] = 0.0
    return leaves


@kernel(parallel=True)
def _decision_paths(X, children_left, children_right, feature, threshold, missing_go_left,
                    is_categorical, bitsets, node_depth):
    """CSR ``(indptr, indices)`` of the nodes each row visits, root first.

    Two parallel passes over rows: the first finds each row's leaf, whose depth + 1 is
    the path length (so the offsets are a cumulative sum); the second writes the paths.
    """
    n_rows = X.shape[0]
    leaves = apply_tree(X, children_left, children_right, feature, threshold,
                        missing_go_left, is_categorical, bitsets)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(node_depth[leaves] + 1)
    indices = np.empty(indptr[n_rows], dtype=np.int64)
    for i in nb.prange(n_rows):
        node = 0
        position = indptr[i]
        indices[position] = 0
        while children_left[node] != -1:
            node = _child(X[i], node, children_left, children_right, feature, threshold,
                          missing_go_left, is_categorical, bitsets)
            position += 1
            indices[position] = node
    return indptr, indices


@kernel(parallel=True)
def _decision_paths_scattered(indptr, indices, data, n_columns, children_left,
                              children_right, feature, threshold, missing_go_left,
                              is_categorical, bitsets, node_depth, block_rows):
    """:func:`_decision_paths` for the CSR rows of a sparse X, each row scattered into a
    zeroed dense row (see :func:`apply_tree_scattered`) for both passes."""
    n_rows = indptr.shape[0] - 1
    leaves = apply_tree_scattered(indptr, indices, data, n_columns, children_left,
                                  children_right, feature, threshold, missing_go_left,
                                  is_categorical, bitsets, block_rows)
    indptr_out = np.zeros(n_rows + 1, dtype=np.int64)
    indptr_out[1:] = np.cumsum(node_depth[leaves] + 1)
    nodes = np.empty(indptr_out[n_rows], dtype=np.int64)
    n_blocks = (n_rows + block_rows - 1) // block_rows
    for b in nb.prange(n_blocks):
        row = np.zeros(n_columns)
        for i in range(b * block_rows, min(n_rows, (b + 1) * block_rows)):
            for j in range(indptr[i], indptr[i + 1]):
                row[indices[j]] = data[j]
            node = 0
            position = indptr_out[i]
            nodes[position] = 0
            while children_left[node] != -1:
                node = _child(row, node, children_left, children_right, feature, threshold,
                              missing_go_left, is_categorical, bitsets)
                position += 1
                nodes[position] = node
            for j in range(indptr[i], indptr[i + 1]):
                row[indices[j]] = 0.0
    return indptr_out, nodes


@kernel()
def _node_depths(children_left, children_right):
    depth = np.zeros(children_left.shape[0], dtype=np.int64)
    # Children are always created after their parent, so ids increase down the tree.
    for node in range(children_left.shape[0]):
        if children_left[node] != -1:
            depth[children_left[node]] = depth[node] + 1
            depth[children_right[node]] = depth[node] + 1
    return depth


class Tree:
    """A fitted tree's flat arrays (see the module docstring) and its prediction kernels.

    Implements :class:`silva.engine.tree_interface.TreeInterface` (binary splits: child 0
    is the left child).
    """

    multiway = False

    def __init__(self, n_features, n_classes, children_left, children_right, feature,
                 threshold, missing_go_to_left, is_categorical, category_bitsets, value,
                 impurity, n_node_samples, weighted_n_node_samples, n_categories=None,
                 n_outputs=1):
        self.n_features = int(n_features)
        # Number of category codes per feature (0 for numeric features), which bounds
        # the codes ``categories_left`` reports.
        self.n_categories = (np.zeros(self.n_features, dtype=np.intp) if n_categories is None
                             else np.asarray(n_categories, dtype=np.intp))
        self.n_classes = np.atleast_1d(np.asarray(n_classes, dtype=np.intp))
        self.n_outputs = int(n_outputs)
        self.children_left = np.ascontiguousarray(children_left, dtype=np.intp)
        self.children_right = np.ascontiguousarray(children_right, dtype=np.intp)
        self.feature = np.ascontiguousarray(feature, dtype=np.intp)
        self.threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        self.missing_go_to_left = np.ascontiguousarray(missing_go_to_left, dtype=np.uint8)
        self.is_categorical = np.ascontiguousarray(is_categorical, dtype=np.bool_)
        self.category_bitsets = np.ascontiguousarray(category_bitsets, dtype=np.uint64)
        value = np.asarray(value, dtype=np.float64)
        self.value = np.ascontiguousarray(value.reshape(value.shape[0], self.n_outputs, -1))
        self.impurity = np.ascontiguousarray(impurity, dtype=np.float64)
        self.n_node_samples = np.ascontiguousarray(n_node_samples, dtype=np.intp)
        self.weighted_n_node_samples = np.ascontiguousarray(weighted_n_node_samples,
                                                            dtype=np.float64)

    @classmethod
    def from_grower(cls, table, values, bitsets, n_features, n_classes, n_categories=None,
                    n_outputs=1):
        """Wrap the node table (:data:`silva.engine.nodes.CART_NODE` records) and arrays
        returned by :func:`silva.engine.grower.grow_tree` (a multi-output tree's values
        are ``n_outputs`` blocks of equal width per node)."""
        return cls(
            n_features, n_classes, **decision_arrays(table),
            category_bitsets=bitsets,
            value=values,
            impurity=table["impurity"],
            n_node_samples=np.rint(table["n_samples"]).astype(np.intp),
            weighted_n_node_samples=table["weighted_n"],
            n_categories=n_categories,
            n_outputs=n_outputs,
        )

    @property
    def node_depth(self):
        """Depth of each node (the root is 0), computed on first use: an ensemble's many
        trees need it only for export and plots."""
        depth = self.__dict__.get("_node_depth")
        if depth is None:
            depth = _node_depths(self.children_left, self.children_right)
            self._node_depth = depth
        return depth

    @property
    def node_count(self):
        return self.children_left.shape[0]

    @property
    def capacity(self):
        return self.node_count

    @property
    def n_leaves(self):
        return int(np.sum(self.children_left == -1))

    @property
    def max_depth(self):
        return int(self.node_depth.max()) if self.node_count else 0

    @property
    def n_nodes(self):
        return self.node_count

    def is_leaf(self, node):
        return bool(self.children_left[node] == -1)

    def children(self, node):
        """``(left, right)`` child ids of ``node``; ``()`` at a leaf."""
        left = int(self.children_left[node])
        return () if left == -1 else (left, int(self.children_right[node]))

    def split(self, node):
        """The :class:`~silva.engine.tree_interface.Split` at internal ``node``:
        ``"threshold"`` or ``"categories"``, branch 0 left, missing values to
        ``missing_branch``."""
        if self.is_leaf(node):
            raise ValueError(f"node {node} is a leaf")
        missing_branch = 0 if self.missing_go_to_left[node] else 1
        feature = int(self.feature[node])
        if self.is_categorical[node]:
            codes = tuple(int(code) for code in self.categories_left(node))
            return Split("categories", feature, (0, 1), missing_branch, categories_left=codes)
        return Split("threshold", feature, (0, 1), missing_branch,
                     threshold=float(self.threshold[node]))

    def node_value(self, node):
        return self.value[node, 0]

    def categories_left(self, node):
        """Category codes, among those seen at fit, that a categorical split sends left.

        Codes the node itself never saw are included when missing values go left, since
        they follow the missing values.
        """
        if not self.is_categorical[node]:
            raise ValueError(f"node {node} is not a categorical split")
        bits = np.unpackbits(self.category_bitsets[node].view(np.uint8), bitorder="little")
        codes = np.flatnonzero(bits)
        return codes[codes < self.n_categories[self.feature[node]]]

    def _kernel_arrays(self):
        return (self.children_left, self.children_right, self.feature, self.threshold,
                self.missing_go_to_left, self.is_categorical, self.category_bitsets)

    def _apply_rows(self, rows):
        """:meth:`apply` on a sparse X's :class:`~silva.engine.sparse.CsrRows`: rows
        scattered into a dense row in parallel, or, for fewer than
        :data:`PARALLEL_MIN_ROWS` rows (or rows wider than ``MAX_SCATTER_COLUMNS``),
        searched on the calling thread (a serial copy of the scattered walk would count
        references at every node, see :func:`apply_tree_serial`)."""
        n_rows = rows.n_rows
        width = max(rows.n_columns, self.n_features)
        if n_rows >= PARALLEL_MIN_ROWS and width <= sparse_module.MAX_SCATTER_COLUMNS:
            return apply_tree_scattered(*rows.arrays, width, *self._kernel_arrays(),
                                        PARALLEL_MIN_ROWS)
        leaves = np.empty(n_rows, dtype=np.int64)
        apply_tree_rows(*rows.arrays, 0, n_rows, *self._kernel_arrays(), leaves)
        return leaves

    @rowwise(walk=_apply_rows)
    def apply(self, X):
        """Leaf id of each row of X (float64, validated; or sparse: its CSR rows walked,
        see :meth:`_apply_rows`)."""
        kernel = apply_tree if X.shape[0] >= PARALLEL_MIN_ROWS else apply_tree_serial
        return kernel(X, *self._kernel_arrays())

    def predict(self, X):
        """The ``value`` of each row's leaf, shape (n_rows, n_outputs, n_values)."""
        return self.value[self.apply(X)]

    def _decision_path_rows(self, rows):
        """:meth:`decision_path` on a sparse X's :class:`~silva.engine.sparse.CsrRows`,
        scattered at any width (a dense block of very wide rows would cost far more than
        zeroing a scratch row per parallel block)."""
        width = max(rows.n_columns, self.n_features)
        indptr, indices = _decision_paths_scattered(*rows.arrays, width,
                                                    *self._kernel_arrays(), self.node_depth,
                                                    PARALLEL_MIN_ROWS)
        return self._path_matrix(indptr, indices, rows.n_rows)

    def _path_matrix(self, indptr, indices, n_rows):
        data = np.ones(indices.shape[0], dtype=np.intp)
        return scipy.sparse.csr_matrix((data, indices, indptr),
                                       shape=(n_rows, self.node_count))

    @rowwise(stack=vstack_sparse, walk=_decision_path_rows)
    def decision_path(self, X):
        """CSR indicator matrix (n_rows, node_count): the nodes each row passes through."""
        indptr, indices = _decision_paths(X, *self._kernel_arrays(), self.node_depth)
        return self._path_matrix(indptr, indices, X.shape[0])

    def compute_feature_importances(self, normalize=True):
        """Mean decrease in impurity per feature (Breiman et al. 1984, sec. 5.3.4).

        Each split adds ``w_t i_t - w_l i_l - w_r i_r`` (weighted node impurities) to its
        feature; the totals are divided by the root weight and, if ``normalize``, scaled
        to sum to one.
        """
        importances = np.zeros(self.n_features)
        internal = np.flatnonzero(self.children_left != -1)
        weighted = self.weighted_n_node_samples * self.impurity
        decrease = (weighted[internal] - weighted[self.children_left[internal]]
                    - weighted[self.children_right[internal]])
        np.add.at(importances, self.feature[internal], decrease)
        importances /= self.weighted_n_node_samples[0]
        if normalize:
            total = importances.sum()
            if total > 0.0:
                importances /= total
        return importances
