"""Queries of a ranking data set: ``group=`` sizes (LightGBM) or ``qid=`` ids (XGBoost).

The ranking kernels (:mod:`silva.engine.ranking`) read rows sorted by query, query ``q``
owning rows ``offsets[q]:offsets[q + 1]``. :func:`query_layout` checks what the user gave
and returns that layout, with the row order that produces it.
"""

from typing import NamedTuple

import numpy as np


class QueryLayout(NamedTuple):
    """``order``: row indices that sort the rows by query (None when they already are);
    ``offsets``: int64 (n_queries + 1,), query ``q`` owning sorted rows
    ``offsets[q]:offsets[q + 1]``."""

    order: np.ndarray | None
    offsets: np.ndarray

    @property
    def n_queries(self):
        return self.offsets.shape[0] - 1

    def sort(self, values):
        """``values`` (rows first) in query order."""
        return values if self.order is None else values[self.order]


def query_layout(n_rows, group, qid, who):
    """The :class:`QueryLayout` of ``n_rows`` rows from exactly one of ``group`` (sizes
    of consecutive queries, each >= 1, summing to ``n_rows``) and ``qid`` (one query id
    per row, in any order; the rows are sorted by id stably, so the documents of a query
    keep their order). ``who`` names the caller in errors (``"fit"``, ``"eval_set[0]"``)."""
    if (group is None) == (qid is None):
        raise ValueError(f"{who}: pass exactly one of group= (the sizes of consecutive "
                         f"queries) and qid= (a query id per row); got "
                         f"{'both' if group is not None else 'neither'}.")
    if group is not None:
        sizes = np.asarray(group)
        if sizes.ndim != 1 or sizes.size == 0:
            raise ValueError(f"{who}: group must be a non-empty 1-d list of query sizes; "
                             f"got shape {sizes.shape}.")
        if not np.issubdtype(sizes.dtype, np.number) or np.issubdtype(sizes.dtype,
                                                                       np.bool_):
            raise ValueError(f"{who}: group must hold integer query sizes; got dtype "
                             f"{sizes.dtype}.")
        if np.any(sizes != np.floor(sizes)) or np.any(sizes < 1):
            bad = np.flatnonzero((sizes != np.floor(sizes)) | (sizes < 1))[0]
            raise ValueError(f"{who}: every group size must be an integer >= 1; group[{bad}]"
                             f" is {sizes[bad]}.")
        sizes = sizes.astype(np.int64)
        if sizes.sum() != n_rows:
            raise ValueError(f"{who}: the group sizes sum to {int(sizes.sum())}, but X has "
                             f"{n_rows} rows.")
        return QueryLayout(None, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    ids = np.asarray(qid)
    if ids.ndim != 1 or ids.shape[0] != n_rows:
        raise ValueError(f"{who}: qid must have one query id per row, shape ({n_rows},); "
                         f"got shape {ids.shape}.")
    if ids.dtype.kind == "f" and not np.all(np.isfinite(ids)):
        raise ValueError(f"{who}: qid holds NaN or infinity.")
    if n_rows == 0:
        raise ValueError(f"{who}: no rows.")
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1
    offsets = np.concatenate([[0], starts, [n_rows]]).astype(np.int64)
    if np.array_equal(order, np.arange(n_rows)):
        order = None
    return QueryLayout(order, offsets)


def query_weights(sample_weight, n_queries, who):
    """Validated per-query weights (ones when None): finite, >= 0, not all 0."""
    if sample_weight is None:
        return np.ones(n_queries)
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.ndim != 1 or weights.shape[0] != n_queries:
        raise ValueError(f"{who}: sample_weight holds one weight per query ({n_queries} "
                         f"queries); got shape {weights.shape}.")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(f"{who}: sample_weight must be finite and >= 0.")
    if weights.sum() <= 0:
        raise ValueError(f"{who}: sample_weight sums to zero: at least one query needs a "
                         "positive weight.")
    return weights
