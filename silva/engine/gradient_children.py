"""A split's children in one parallel region: the smaller one's histogram, the larger
one's by subtraction, and both children's split scans, each thread for its share of the
features.

After a split the gradient grower needs, for each child that may split, its histogram
and its best split. Done one step after the other, a node too small for the row blocks
of :func:`~silva.engine.gradient_histogram.node_histogram` (fewer than ``2 *
BLOCK_ROWS`` samples, most nodes of a fit of up to some 100,000 rows) had its histogram
summed, its 234 KB zeroed (28 features of 255 bins) and the sibling's subtraction done
on one thread, and only the scans in parallel. Measured on 16,000 x 28 rows, 2 threads,
Zen 3: the serial passes, the zeroing and the subtraction were a third of the main
thread's time, while the second thread waited.

:func:`children_pass` instead gives each thread a share of the features, for which it
zeroes the histogram, adds the node's samples, subtracts it from the parent's and scans
each child that is searched: LightGBM's order (per feature: subtract, then scan), in one
region per split. A larger node's histogram is summed over row blocks before the
region, which still subtracts it feature share by feature share. A feature's sums are
those of the serial pass (its bins get the same samples in the same order) and its scan
is :func:`find_best_split`'s, so the trees are the same, bit for bit, whatever the
number of threads.
"""

import numba as nb
import numpy as np

from silva.engine.gradient_histogram import _subtract, feature_share_histogram
from silva.engine.gradient_splitting import SCAN_SCRATCH_ROWS, numeric_feature_scan, scan_feature
from silva.engine.jit import kernel
from silva.engine.specialize import specialize


@kernel(parallel=True)
def children_pass(built, parent, build, subtract, codes, index, stats, start, end,
                  two_lanes, statistics, pool, slots, candidates, n_candidates, marks,
                  n_value_bins, is_categorical, monotonic, missing_bin, node_sums, params,
                  bounds, constrained, feature_score, feature_bin, feature_missing_left,
                  feature_left, feature_bitset, n_parts):
    """With ``build``: the histogram ``built`` of the node whose samples are
    ``index[start:end]``, as :func:`~silva.engine.gradient_histogram.node_histogram`
    computes it in a serial pass (``two_lanes`` as there; no record filling). With
    ``subtract``: ``parent -= built`` (built here or before, over row blocks). Then the
    scans of the searched nodes: node ``p`` (0 or 1) with ``n_candidates[p] >= 0`` has the histogram
    ``pool[slots[p]]``, the channel sums ``node_sums[p]``, the output ``bounds[p]``
    (lower, upper) and the candidates ``candidates[p, :n_candidates[p]]``, each scanned
    into row ``p`` of the ``feature_*`` arrays as
    :func:`~silva.engine.gradient_splitting.find_best_split` scans it (its split is then
    :func:`~silva.engine.gradient_splitting.best_scanned_split`'s).

    ``n_parts`` threads each take a contiguous share of the features; ``marks`` (2,
    n_features) uint8 is scratch. ``built`` is ``pool[slots[p]]`` for a searched node
    ``p`` built here, and ``parent`` the other's: each thread reads only its own
    features' histograms, which it wrote itself.
    """
    n_features = built.shape[0]
    for p in range(2):
        for f in range(n_features):
            marks[p, f] = 0
        for j in range(n_candidates[p]):
            marks[p, candidates[p, j]] = 1
    n_bins = built.shape[1]
    for part in nb.prange(n_parts):
        first = part * n_features // n_parts
        last = (part + 1) * n_features // n_parts
        if build:
            feature_share_histogram(built, codes, index, stats, start, end, first, last,
                                    two_lanes, statistics)
        if subtract:
            _subtract(parent[first:last], built[first:last])
        scratch = np.empty((SCAN_SCRATCH_ROWS, n_bins))
        for f in range(first, last):
            for p in range(2):
                if marks[p, f] != 0:
                    scan_feature(f, pool[slots[p]], n_value_bins, is_categorical,
                                 monotonic, missing_bin, node_sums[p], params, bounds[p, 0],
                                 bounds[p, 1], constrained, feature_score[p],
                                 feature_bin[p], feature_missing_left[p], feature_left[p],
                                 feature_bitset[p], scratch)


def numeric_children_pass():
    """:func:`children_pass` compiled without the category scan (see
    :func:`~silva.engine.gradient_splitting.numeric_split_finder`)."""
    return specialize(children_pass, "numeric", scan_feature=numeric_feature_scan())
