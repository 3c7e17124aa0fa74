"""One worker's rows for a distributed forest: binning a partition, and the shard actor.

:func:`bin_forest_partition` bins one partition where it is computed (the raw rows live
only while the task runs) and keeps, besides its bin codes and encoded target, each
row's *global* index, which keys its Poisson bootstrap counts
(:func:`silva.engine.levelwise.poisson_counts`). :class:`ForestShard` is the
:class:`~silva.engine.levelwise.RowShard` of one worker, built from its binned
partitions as a Dask actor, which the driver (:mod:`silva.engine.levelwise_grower`)
calls once per level.
"""

from collections import namedtuple

import numpy as np

from silva.dask._shard import validated_partition
from silva.engine.levelwise import RowShard

#: One partition binned for a forest: its position, feature-major bin codes, its target
#: as float64 (class indices, or y minus the fit's offset), its weights (class weights
#: included) and the global index of each row (rows of zero weight are left out).
ForestPartition = namedtuple("ForestPartition",
                             ["index", "codes", "y", "weight", "global_rows"])


def bin_forest_partition(template, index, X_part, y_part, w_part, classifier, binner,
                         classes, class_factors, y_offset, first_row):
    """Partition ``index`` (whose first row is row ``first_row`` of the whole data)
    binned, its target encoded and weighted (see :class:`ForestPartition`)."""
    X, y, weight = validated_partition(template, index, X_part, y_part, w_part,
                                       classifier, drop_zero_weight=False)
    global_rows = first_row + np.arange(X.shape[0], dtype=np.int64)
    if classes is not None:
        y = np.searchsorted(classes, y)
        if class_factors is not None:
            weight = weight * class_factors[y]
        y = y.astype(np.float64)
    else:
        y = np.asarray(y, dtype=np.float64) - y_offset
    positive = weight > 0
    if not positive.all():
        X, y, weight, global_rows = (X[positive], y[positive], weight[positive],
                                     global_rows[positive])
    return ForestPartition(index, binner.transform(X), y, weight, global_rows)


def sample_forest_partition(template, index, X_part, y_part, w_part, classifier,
                            n_wanted, seed):
    """``n_wanted`` rows of one partition (all when it has no more), drawn without
    replacement, for the bin edges. Rows of zero weight are kept: the single-machine
    forest places its edges on every row of X."""
    X, _, _ = validated_partition(template, index, X_part, y_part, w_part, classifier,
                                  drop_zero_weight=False)
    if n_wanted >= X.shape[0]:
        return X
    rng = np.random.default_rng(seed)
    return X[np.sort(rng.choice(X.shape[0], n_wanted, replace=False))]


class ForestShard(RowShard):
    """A worker's binned partitions, concatenated, as one row shard (a Dask actor)."""

    def __init__(self, n_bins, n_channels, classification, *parts):
        parts = [p for p in parts if p.y.shape[0] > 0]
        self.partition_indices = [p.index for p in parts]
        codes = np.ascontiguousarray(np.concatenate([p.codes for p in parts], axis=1))
        super().__init__(codes, np.concatenate([p.y for p in parts]),
                         np.concatenate([p.weight for p in parts]),
                         np.concatenate([p.global_rows for p in parts]), n_bins,
                         n_channels, classification)

    def memory_bytes(self):
        """Bytes this shard holds for its rows (codes, targets, weights, row indices)
        and for the trees being grown."""
        held = sum(a.nbytes for a in (self.codes, self.y, self.weight, self.global_rows))
        return held + sum(a.nbytes for tree in self.trees for a in tree)

    def start_trees(self, tree_seeds, rate):
        answer = super().start_trees(tree_seeds, rate)
        # The most this shard holds during the fit: right after the roots, when every
        # tree of the batch still has all its in-bag rows open.
        self.peak_bytes = max(getattr(self, "peak_bytes", 0), self.memory_bytes())
        return answer

    def peak_memory_bytes(self):
        """The most :meth:`memory_bytes` has been at the start of a batch of trees."""
        return getattr(self, "peak_bytes", self.memory_bytes())
