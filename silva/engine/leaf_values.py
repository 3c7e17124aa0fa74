"""Leaf updates of boosting: a tree's leaf values added to the raw predictions, and the
per-leaf gradient sums of a Newton line search, over the leaf sample ranges that
:func:`silva.engine.gradient_grower.grow_gradient_tree` leaves."""

import numba as nb
import numpy as np

from silva.engine.gradient_histogram import _prefetch
from silva.engine.jit import kernel
from silva.engine.nodes import LEAF
from silva.engine.partition import goes_left
from silva.engine.specialize import serial_copy

# How many samples ahead add_leaf_values prefetches a sample's raw prediction.
UPDATE_PREFETCH_ROWS = 64


@kernel(parallel=True, nogil=True)
def add_leaf_values(raw, column, sample_indices, table, leaf_values):
    """``raw[s, column] += leaf_values[node]`` for the samples of every leaf of ``table``;
    ``raw`` column-major, as boosting keeps it (the prefetch addresses assume a
    contiguous column; on another layout they would only miss, the sums stay right).

    A leaf's samples are increasing but spread over all of ``raw``, a cache line each,
    which the CPU cannot guess: the pass asks for the line of the sample
    ``UPDATE_PREFETCH_ROWS`` further on (800,000 samples in 31 leaves, caches cold: 2.2
    against 3.2 ms; 16 and 32 ahead gained less, 128 and 256 no more)."""
    target = raw[:, column]
    for node in nb.prange(table.shape[0]):
        if table[node].left != LEAF:
            continue
        value = leaf_values[node]
        start = table[node].start
        end = table[node].end
        for i in range(start, end):
            _prefetch(target, np.int64(sample_indices[min(i + UPDATE_PREFETCH_ROWS, end - 1)]))
            target[sample_indices[i]] += value


@kernel(parallel=True, nogil=True)
def add_leaf_values_binned(raw, column, rows, codes, table, bitsets, missing_bin,
                           leaf_values):
    """``raw[s, column] += leaf_values[leaf of s]`` for ``s`` in ``rows``, walking the tree on
    the row-major bin ``codes`` (samples the tree was not grown on: out-of-bag ones)."""
    for k in nb.prange(rows.shape[0]):
        s = rows[k]
        node = 0
        while table[node].left != LEAF:
            row = table[node]
            if goes_left(np.int64(codes[s, row.feature]), missing_bin, row.split_bin,
                         row.missing_left, row.is_categorical, bitsets[node]):
                node = row.left
            else:
                node = row.right
        raw[s, column] += leaf_values[node]


@kernel(parallel=True, nogil=True)
def leaf_sums(gradient, hessian, column, weight, sample_indices, table, out):
    """``out[node] = (sum w g, sum w h)`` over each leaf's samples (Newton line search)."""
    for node in nb.prange(table.shape[0]):
        out[node, 0] = 0.0
        out[node, 1] = 0.0
        if table[node].left != LEAF:
            continue
        for i in range(table[node].start, table[node].end):
            s = sample_indices[i]
            out[node, 0] += weight[s] * gradient[s, column]
            out[node, 1] += weight[s] * hessian[s, column]


# A tree grown on fewer rows adds its leaf values serially even in a parallel fit: a
# parallel region costs about 15 us to start on a quiet 2-core machine (up to 0.4 ms on
# a busy one), and a multiclass iteration adds one tree a class, while the serial pass
# takes about 2 ns a row.
PARALLEL_UPDATE_MIN_ROWS = 1 << 16


def leaf_updates(parallel):
    """``(add_leaf_values, add_leaf_values_binned)``, or with ``parallel=False`` their
    copies compiled without a parallel region (for fits too small to need one: a cold
    first fit then compiles none; and for a tree finished in one of boosting's pool
    threads, beside other trees: the kernels release the GIL). With ``parallel``, a
    tree of fewer than ``PARALLEL_UPDATE_MIN_ROWS`` rows is added by the serial copy.
    The sums are the same either way: each sample's raw prediction gets one addition."""
    if parallel:
        return _add_leaf_values_by_size, add_leaf_values_binned
    return serial_copy(add_leaf_values), serial_copy(add_leaf_values_binned)


def _add_leaf_values_by_size(raw, column, sample_indices, table, leaf_values):
    """:func:`add_leaf_values`, in a parallel region only for a tree of at least
    ``PARALLEL_UPDATE_MIN_ROWS`` rows."""
    if sample_indices.shape[0] >= PARALLEL_UPDATE_MIN_ROWS:
        add_leaf_values(raw, column, sample_indices, table, leaf_values)
    else:
        serial_copy(add_leaf_values)(raw, column, sample_indices, table, leaf_values)
