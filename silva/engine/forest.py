"""Forest growing: many trees on one binned dataset, in parallel threads.

A forest bins its training data once (:class:`BinnedData`) and grows every tree on the
same bin codes, each with its own per-sample weights (bootstrap counts times sample
weights) and its own seed. :func:`iter_grown_trees` runs :func:`silva.engine.grower.grow_tree`
for the trees in a pool of threads: the compiled call releases the GIL, so trees grow on
all cores at once, while each tree is grown serially inside its thread (nested parallel
regions would oversubscribe the cores and numba's default threading layer does not allow
them). A tree depends only on its own inputs and seed, so the forest is the same for any
number of threads.

Besides the :class:`~silva.engine.tree.Tree`, each grown tree returns its *leaf samples*:
the in-bag sample ids in the order the grower left them, with each node's range into
that order, which is what quantile regression forests (Meinshausen 2006) read.
"""

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from silva.engine.binning import Binner
from silva.engine.grower import CartSamples, cart_data, cart_rules, compiled_grower
from silva.engine.tree import Tree

# No parallel region inside a tree grown in a worker thread (see the module docstring).
NO_PARALLEL_WORK = np.iinfo(np.int64).max


@dataclass
class BinnedData:
    """Training features binned once (:class:`~silva.engine.binning.Binner`) for many trees."""

    bin_codes: np.ndarray  # (n_features, n_samples), feature-major for histograms
    codes_by_sample: np.ndarray  # (n_samples, n_features), for small nodes
    n_value_bins: np.ndarray
    is_categorical: np.ndarray  # uint8 per feature
    missing_bin: int
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    n_words: int  # uint64 words per category bitset
    n_categories: np.ndarray  # category codes per feature, 0 for numeric ones

    @classmethod
    def from_X(cls, X, is_categorical, max_bins):
        binner = Binner(max_bins, is_categorical)
        bin_codes = binner.fit_transform(X)
        n_categories = np.where(is_categorical, binner.n_value_bins_, 0)
        return cls(
            bin_codes=bin_codes,
            codes_by_sample=np.ascontiguousarray(bin_codes.T),
            n_value_bins=binner.n_value_bins_,
            is_categorical=np.asarray(is_categorical, dtype=np.uint8),
            missing_bin=binner.missing_bin_,
            bin_lower=binner.bin_lower_,
            bin_upper=binner.bin_upper_,
            n_words=max(1, (int(n_categories.max(initial=1)) + 63) // 64),
            n_categories=n_categories,
        )

    @property
    def n_features(self):
        return self.bin_codes.shape[0]


@dataclass
class GrowthRules:
    """The criterion and stopping rules shared by every tree of a forest."""

    criterion: int
    n_classes: int
    n_values: int
    max_depth: int
    min_samples_split: int
    min_samples_leaf: int
    max_leaf_nodes: int
    min_impurity_decrease: float
    max_features: int
    use_random: bool
    histogram_min_samples: int
    parallel_min_work: int
    min_significance: float = 1.0  # 1.0: no significance stopping


@dataclass
class TreeTask:
    """One tree's inputs: statistic channels, targets, weights, in-bag samples, seed."""

    stats: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    sample_indices: np.ndarray  # int32 ids of the samples with positive weight
    min_weight_leaf: float
    seed: np.uint64


@dataclass
class GrownTree:
    """A grown tree and its leaf samples (see the module docstring)."""

    tree: Tree
    leaf_samples: np.ndarray  # in-bag sample ids, each node's samples contiguous
    node_start: np.ndarray  # node i holds leaf_samples[node_start[i]:node_end[i]]
    node_end: np.ndarray


def grow_one(data, rules, task, parallel_min_work):
    """Grow the tree of ``task`` on ``data`` (see :func:`silva.engine.grower.grow_tree`)."""
    sample_indices = task.sample_indices.copy()
    # The grower releases the GIL, so that threads grow trees at once.
    grow_rules = cart_rules(
        rules.criterion, rules.n_classes, rules.n_values, rules.max_depth,
        rules.min_samples_split, rules.min_samples_leaf, task.min_weight_leaf,
        rules.max_leaf_nodes, rules.min_impurity_decrease, rules.max_features,
        rules.use_random, rules.histogram_min_samples, parallel_min_work,
        rules.min_significance)
    samples = CartSamples(task.stats, task.y, task.weight, sample_indices, task.seed)
    table, values, bitsets = compiled_grower(rules.criterion)(cart_data(data), grow_rules,
                                                              samples)
    tree = Tree.from_grower(table, values, bitsets, data.n_features, rules.n_classes,
                            data.n_categories)
    # int32 ranges (a tree has fewer than 2**31 samples): a quantile forest keeps them
    # for every node.
    return GrownTree(tree, sample_indices, table["start"].astype(np.int32),
                     table["end"].astype(np.int32))


def iter_grown_trees(data, rules, make_task, n_trees, n_threads):
    """Grow ``n_trees`` trees, tree ``t`` from ``make_task(t)``, on ``n_threads`` threads.

    Yields each :class:`GrownTree` in tree order as soon as it and the trees before it
    are done. At most ``2 * n_threads`` trees are in flight, so a caller that stops
    iterating (a callback asking to stop early) leaves little work behind; the pending
    trees are cancelled when the generator is closed.
    """
    if n_threads <= 1 or n_trees <= 1:
        for t in range(n_trees):
            yield grow_one(data, rules, make_task(t), rules.parallel_min_work)
        return

    def work(t):
        return grow_one(data, rules, make_task(t), NO_PARALLEL_WORK)

    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        pending = deque()
        next_tree = 0
        try:
            while next_tree < n_trees or pending:
                while next_tree < n_trees and len(pending) < 2 * n_threads:
                    pending.append(pool.submit(work, next_tree))
                    next_tree += 1
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
