"""The weighted bootstrap of forests and bagging (``bootstrap="weighted"``).

Rows are drawn with replacement with probability proportional to ``sample_weight``
(weights as frequencies, Efron & Tibshirani 1993, ch. 6, the bootstrap of a weighted
empirical distribution), in a way that depends on the *content* of the rows and not on
their order, so that fitting with a row of weight k is fitting with k copies of it
(scikit-learn's ``check_sample_weight_equivalence_on_dense_data`` shuffles the weighted
rows against the repeated ones). Uniform draws over row positions cannot do that: the
same seed picks other rows once the rows are reordered. Here the draw is made over the
*distinct* rows sorted by their bytes, each with the sum of its copies' weights, by
inverse-CDF sampling of the cumulative weights; the drawn counts land on one
representative sample per distinct row, and the members grow on those counts alone,
their samples in the same content order (so that even their floating-point sums are
the same).
"""

import numpy as np

from silva.engine.sparse import is_sparse


def weighted_draw_plan(X, y, sample_weight):
    """What ``bootstrap="weighted"`` draws from: ``(rows, cumulative)``.

    Rows of equal content (features and target) are one *distinct row*, whose weight is
    the sum of theirs; ``rows`` holds one representative sample id per distinct row of
    positive weight, in an order fixed by content alone (the byte order of the rows),
    and ``cumulative`` the running sum of their weights in that order. The plan is
    therefore the same for data that hold the same rows in another order, or a row of
    weight k in place of k copies of weight 1: the draw
    (:func:`weighted_bootstrap_counts`) cannot tell them apart, which is what
    scikit-learn's ``check_sample_weight_equivalence_on_dense_data`` asks (it shuffles
    the weighted rows). NaN and -0.0 are made one bit pattern first, so that equal
    values are equal bytes.
    """
    if is_sparse(X):
        rows = _sparse_row_keys(X, y)
    else:
        keys = np.column_stack([X, np.asarray(y, dtype=np.float64)])
        keys = np.where(np.isnan(keys), np.nan, keys) + 0.0
        rows = np.ascontiguousarray(keys).view(
            np.dtype((np.void, keys.itemsize * keys.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    group_weight = np.bincount(inverse.ravel(), weights=sample_weight,
                               minlength=first.size)
    positive = group_weight > 0
    return first[positive], np.cumsum(group_weight[positive])


def _sparse_row_keys(X, y):
    """One bytes key per row of a sparse ``X`` (with its target), equal for rows of
    equal content and different otherwise, built from its nonzero entries (an explicit
    zero is dropped: it equals an implicit one), never from a dense row.

    The keys order the distinct rows by content, as the dense keys do, but in another
    order than the dense keys' bytes: a sparse fit with ``bootstrap="weighted"`` draws
    from the same distribution as the dense fit, not the same rows.
    """
    X = X.tocsr()
    y = np.asarray(y, dtype=np.float64)
    y = np.where(np.isnan(y), np.nan, y) + 0.0
    keys = np.empty(X.shape[0], dtype=object)
    for i in range(X.shape[0]):
        start, stop = X.indptr[i], X.indptr[i + 1]
        values = X.data[start:stop]
        kept = values != 0.0  # NaN is kept
        values = np.where(np.isnan(values[kept]), np.nan, values[kept])
        columns = X.indices[start:stop][kept].astype(np.int64)
        keys[i] = (np.int64(columns.size).tobytes() + columns.tobytes()
                   + values.tobytes() + y[i].tobytes())
    return keys


def weighted_bootstrap_counts(random_state, rows, cumulative, n_samples, n_drawn):
    """How often each sample is drawn in a weighted bootstrap: ``n_drawn`` draws with
    replacement, each distinct row of a :func:`weighted_draw_plan` with probability
    proportional to its weight (inverse-CDF sampling of uniforms from the
    ``numpy.random.RandomState`` ``random_state``), all its draws counted on its
    representative."""
    points = random_state.uniform(0.0, cumulative[-1], n_drawn)
    picked = np.minimum(np.searchsorted(cumulative, points, side="right"), rows.size - 1)
    return np.bincount(rows[picked], minlength=n_samples).astype(np.float64)
