"""Sparse X (``scipy.sparse`` CSR/CSC matrices and arrays): what the engine needs to bin
and to predict from one without densifying it whole.

An implicit zero is the value 0.0, as in scikit-learn, not a missing value; a NaN stored
in the matrix is missing. So a sparse ``X`` means exactly what ``X.toarray()`` means, and
every model fitted on it equals the model fitted on the dense array.

- Binning (:mod:`silva.engine.binning`) reads a CSC copy column by column: each column's
  stored values plus the *count* of its implicit zeros (:func:`column_values`), so an
  implicit zero costs nothing per stored value. The bin codes are the engine's dense code
  matrix (uint8 or uint16, ``n_features x n_samples``), written column by column.
- Prediction walks dense blocks of at most :data:`BLOCK_VALUES` values (rows x
  features) through the existing compiled kernels (:func:`dense_row_blocks`,
  :func:`rowwise`): the memory of one block, not of the whole matrix.
"""

import functools

import numpy as np

# Values (rows x features) densified at a time when predicting from a sparse X: 2**21
# float64 values, 16 MiB. At least MIN_BLOCK_ROWS rows a block, so that very wide data
# still reaches the parallel kernels in blocks of useful size.
BLOCK_VALUES = 1 << 21
MIN_BLOCK_ROWS = 64


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


def rowwise(method=None, *, stack=np.concatenate):
    """Decorate a predicting ``method(self, X, ...)`` whose result has one entry per row
    of X (first axis), so that a sparse ``X`` is walked in dense blocks of rows and the
    blocks' results are joined by ``stack`` (a list of results -> one). Dense X goes
    straight through, unchanged."""
    def decorate(function):
        @functools.wraps(function)
        def wrapper(self, X, *args, **kwargs):
            # The ndarray test first: a one-row prediction takes about 10 us, and this
            # wrapper should add as little to it as it can.
            if type(X) is np.ndarray or not is_sparse(X):
                return function(self, X, *args, **kwargs)
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
