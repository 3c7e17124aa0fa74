"""Sparse X (``scipy.sparse`` CSR/CSC matrices and arrays): what the engine needs to bin
and to predict from one without densifying it whole.

An implicit zero is the value 0.0, as in scikit-learn, not a missing value; a NaN stored
in the matrix is missing. So a sparse ``X`` means exactly what ``X.toarray()`` means, and
every model fitted on it equals the model fitted on the dense array.

- Binning (:mod:`silva.engine.binning`) reads a CSC copy column by column: each column's
  stored values plus the *count* of its implicit zeros (:func:`column_values`), so an
  implicit zero costs nothing per stored value. The bin codes are the engine's dense code
  matrix (uint8 or uint16, ``n_features x n_samples``), written column by column.
- Prediction walks the trees over the CSR rows of a sparse X (:func:`csr_rows`), in
  compiled kernels of their own beside the dense ones they mirror
  (``engine/ensemble.py``, "Scattered rows"; ``engine/tree.py``), so a dense predict
  never compiles them. A few rows at a time are scattered into a zeroed dense scratch
  (each stored entry at its column), walked by the dense walk and zeroed again: a row
  costs its stored entries, not its width. Rows wider than :data:`MAX_SCATTER_COLUMNS`,
  and a single tree's few rows, are walked by a binary search of each split's feature
  among the row's sorted columns instead (:func:`stored_value`). Either way the results
  are the dense array's bit for bit: the same values reach the same comparisons, and
  every row adds its trees in the same order.
- Methods without a row walk (quantile forests, ID3/C4.5 trees, SHAP values) read
  dense blocks of at most :data:`BLOCK_VALUES` values (rows x features) through the
  dense kernels (:func:`dense_row_blocks`, :func:`rowwise`): the memory of one block,
  not of the whole matrix. The scattered walk was faster than dense blocks at every
  stored fraction measured, from 0.1% to 96% (benchmarks/RESULTS.md, "sparse
  predict"), so the row walks take every sparse X.
"""

import functools
from typing import NamedTuple

import numpy as np

from silva.engine.jit import kernel

# Values (rows x features) densified at a time when predicting from a sparse X: 2**21
# float64 values, 16 MiB. At least MIN_BLOCK_ROWS rows a block, so that very wide data
# still reaches the parallel kernels in blocks of useful size.
BLOCK_VALUES = 1 << 21
MIN_BLOCK_ROWS = 64
# Rows are walked scattered into a zeroed dense scratch (engine/ensemble.py, "Scattered
# rows") up to this many columns; wider ones by a binary search of each split's feature
# among the row's entries (stored_value), since a scratch of one row would be 8 MiB or
# more to zero per parallel block, which a few rows would not repay.
MAX_SCATTER_COLUMNS = 1 << 20


def is_sparse(X):
    """True for a ``scipy.sparse`` matrix or array (scipy itself is imported only if the
    object's type comes from it)."""
    return type(X).__module__.startswith("scipy.sparse")


def column_values(X_csc, f):
    """Feature ``f`` of a canonical CSC ``X_csc``: ``(rows, values, n_implicit_zeros)``,
    the rows and values stored for it and how many of its rows hold an implicit zero."""
    start, stop = X_csc.indptr[f], X_csc.indptr[f + 1]
    return (X_csc.indices[start:stop], X_csc.data[start:stop],
            X_csc.shape[0] - (stop - start))


def block_rows(n_features):
    """Rows per dense block for ``n_features`` columns (see :data:`BLOCK_VALUES`)."""
    return max(MIN_BLOCK_ROWS, BLOCK_VALUES // max(n_features, 1))


def dense_row_blocks(X):
    """``(start, stop, block)`` over the rows of sparse ``X``: ``block`` is rows
    ``start:stop`` as a C-contiguous float64 array (NaN stays missing)."""
    X = X.tocsr()
    step = block_rows(X.shape[1])
    for start in range(0, X.shape[0], step):
        stop = min(start + step, X.shape[0])
        block = np.ascontiguousarray(X[start:stop].toarray(), dtype=np.float64)
        yield start, stop, block


class CsrRows(NamedTuple):
    """A sparse X's rows for the compiled row walks: canonical CSR arrays (each row's
    column indices sorted and distinct), row ``i`` storing ``data[indptr[i]:indptr[i+1]]``
    at columns ``indices[indptr[i]:indptr[i+1]]``, of X's ``n_columns``. One dtype each
    (int64, int32, float64), so that every walk compiles once."""
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_columns: int

    @property
    def n_rows(self):
        return self.indptr.shape[0] - 1

    @property
    def arrays(self):
        """``(indptr, indices, data)``, the kernels' first arguments."""
        return self.indptr, self.indices, self.data


def csr_rows(X):
    """:class:`CsrRows` of sparse ``X`` (any scipy format; converted to CSR, duplicates
    summed and indices sorted on a copy, as ``X.toarray()`` sums them)."""
    X = X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    indices, data = X.indices, X.data
    if indices.shape[0] == 0:  # nothing stored: one entry no row owns (stored_value)
        indices, data = np.zeros(1, dtype=np.int32), np.zeros(1)
    # Column indices below 2**31: PackedTrees refuses more than 2**30 features.
    return CsrRows(np.ascontiguousarray(X.indptr, dtype=np.int64),
                   np.ascontiguousarray(indices, dtype=np.int32),
                   np.ascontiguousarray(data, dtype=np.float64), int(X.shape[1]))


@kernel(inline="always")
def stored_value(indices, data, start, stop, feature):
    """``X[i, feature]`` of a CSR row whose sorted, distinct column indices are
    ``indices[start:stop]``: the stored value (NaN stays missing), or 0.0 where the
    column is not stored.

    A binary search (Knuth, TAOCP vol. 3, sec. 6.2.1) without a data-dependent branch:
    the candidate range ``[base, base + n)`` keeps the position ``feature`` would have,
    and each step moves ``base`` by arithmetic on the comparison, so the loop runs
    ``ceil(log2(stored entries))`` times whatever the data. With a branch on each
    comparison (which mispredicts about every other step) a 100-tree boosting model
    predicted 20,000 rows of 20,000 features about 10% slower (0.53 against 0.47 s,
    interleaved, on a shared machine).
    """
    base = start
    n = stop - start
    while n > 1:
        half = n >> 1
        base += half * np.int64(indices[base + half] <= feature)
        n -= half
    # Both loads unconditional and the choice a select, not a branch: whether a row
    # stores the feature is data too. An empty row reads a neighbour's entry (at most
    # the last one: csr_rows never gives empty arrays) and discards it.
    probe = min(base, indices.shape[0] - 1)
    value = data[probe]
    hit = (stop > start) & (indices[probe] == feature)
    return value if hit else 0.0


def rowwise(method=None, *, stack=np.concatenate, walk=None):
    """Decorate a predicting ``method(self, X, ...)`` whose result has one entry per row
    of X (first axis), so that it takes a sparse ``X`` too. Dense X goes straight
    through, unchanged.

    A sparse X is given to ``walk(self, rows, ...)`` with ``rows`` its :class:`CsrRows`
    when ``walk`` is given; otherwise it is walked in dense blocks of rows and the
    blocks' results are joined by ``stack`` (a list of results -> one)."""
    def decorate(function):
        @functools.wraps(function)
        def wrapper(self, X, *args, **kwargs):
            # The ndarray test first: a one-row prediction takes about 10 us, and this
            # wrapper should add as little to it as it can.
            if type(X) is np.ndarray or not is_sparse(X):
                return function(self, X, *args, **kwargs)
            if walk is not None:
                return walk(self, csr_rows(X), *args, **kwargs)
            parts = [function(self, block, *args, **kwargs)
                     for _, _, block in dense_row_blocks(X)]
            if not parts:
                return function(self, np.empty((0, X.shape[1])), *args, **kwargs)
            return stack(parts)
        return wrapper
    return decorate if method is None else decorate(method)


def vstack_sparse(parts):
    """Stack CSR blocks of rows (a decision path computed block by block)."""
    import scipy.sparse

    return scipy.sparse.vstack(parts, format="csr")
