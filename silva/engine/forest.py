"""Forest growing: many CART trees on one binned dataset, in a pool of threads.

A forest bins its training data once (:class:`~silva.engine.cart.BinnedData`) and grows
every tree on the same bin codes with :func:`~silva.engine.cart.grow_cart_tree`, each
tree from its own :class:`~silva.engine.cart.TreeTask` (bootstrap counts times sample
weights, its own seed). The compiled grower releases the GIL, so :func:`iter_grown_trees`
grows trees on all cores at once, each serially inside its thread: nested parallel
regions would oversubscribe the cores, and numba's default threading layer does not allow
them. A forest of one job grows its trees in the calling thread, serially too
(:func:`_parallel_min_work_in_one_job`). A tree depends only on its own inputs and seed,
so the forest is the same for any number of threads.

Bagging of silva's trees (:mod:`silva.bagging`) grows its members the same way, each on
its own columns of the one binned dataset (:func:`binned_columns`) and under its own
rules, through :func:`iter_grown_jobs`.
"""

from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# The bundles live in silva.engine.cart; importing them from here still works.
from silva.engine.cart import BinnedData, GrownTree, GrowthRules, TreeTask, grow_cart_tree
from silva.engine.grower import buffers_reused_in_this_thread, reuse_buffers_in_this_thread

__all__ = ["BinnedData", "GrownTree", "GrowthRules", "TreeTask", "iter_grown_jobs",
           "iter_grown_trees", "trees_per_job"]

# No parallel region inside a tree grown in a worker thread (see the module docstring).
NO_PARALLEL_WORK = np.iinfo(np.int64).max

# A worker thread's job grows consecutive trees of about this many training rows in all
# (see trees_per_job); 0 makes every tree a job of its own.
BATCH_ROWS = 4096


def iter_grown_trees(data, rules, make_task, n_trees, n_threads):
    """Grow ``n_trees`` trees, tree ``t`` from ``make_task(t)``, on ``n_threads`` threads.

    Yields each :class:`~silva.engine.cart.GrownTree` in tree order as soon as it and the
    trees before it are done. At most ``2 * n_threads`` jobs (a tree, or a batch of small
    ones: see :func:`iter_grown_jobs`) are in flight, so a caller that stops iterating (a
    callback asking to stop early) leaves little work behind; the pending jobs are
    cancelled when the generator is closed.
    """
    return iter_grown_jobs(lambda t: (data, rules, make_task(t)), n_trees, n_threads,
                           data.n_samples)


def iter_grown_jobs(make_job, n_trees, n_threads, n_rows):
    """:func:`iter_grown_trees` for trees that differ in more than their task: tree ``t``
    is grown from ``make_job(t) = (data, rules, task)``, so that each may read its own
    columns of one binned dataset under its own rules (bagging's members, each on its
    drawn features, :mod:`silva.bagging`). Same order, threads and cancellation;
    ``n_rows``, the rows of the data the trees grow on, sizes the threads' batches."""
    if n_threads <= 1 or n_trees <= 1:
        # Each tree takes the previous one's buffers (reuse_buffers_in_this_thread),
        # given back when the forest is done.
        with buffers_reused_in_this_thread():
            for t in range(n_trees):
                data, rules, task = make_job(t)
                yield grow_cart_tree(data, rules, task,
                                     _parallel_min_work_in_one_job(rules, n_threads))
        return

    batch = trees_per_job(n_trees, n_threads, n_rows)

    def work(first):
        return [grow_cart_tree(*make_job(t), NO_PARALLEL_WORK)
                for t in range(first, min(first + batch, n_trees))]

    # The pool's threads reuse their buffers from tree to tree; they end with the pool.
    with ThreadPoolExecutor(max_workers=n_threads,
                            initializer=reuse_buffers_in_this_thread) as pool:
        pending = deque()
        next_tree = 0
        try:
            while next_tree < n_trees or pending:
                while next_tree < n_trees and len(pending) < 2 * n_threads:
                    pending.append(pool.submit(work, next_tree))
                    next_tree += batch
                yield from pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _parallel_min_work_in_one_job(rules, n_threads):
    """The ``parallel_min_work`` of a tree that a forest grows in the calling thread:
    none (the tree grown serially) when the forest has one thread, as a forest's worker
    threads grow theirs; the tree's own (parallel regions for its large nodes, on
    numba's threads) when it is the forest's only tree and more threads are asked for.

    One job means one core. Opened on numba's threads, the grower's parallel regions made
    a forest of one job slower on two cores of a Zen 5, not faster, same trees
    (alternated processes, seconds with against without): 100 extra trees on 20,000
    binary rows 1.50-1.53 against 1.02-1.05; 20 random-forest classifier trees on
    100,000 rows 0.92-0.97 against 0.76-0.79; 10 random-forest regressor trees (every
    feature searched) on 100,000 rows 3.11-3.20 against 2.44-2.51; bagging's 10 trees on
    200,000 binary rows 2.01-2.61 against 1.99-2.22, on 100,000 regression rows
    2.73-2.75 against 2.40-2.50. The parallel grower builds every feature's histogram
    for nodes that search a few (``sqrt``) or none (extra trees' random thresholds), is
    the copy of everything (categorical scans, best-first growth), whose own code took
    11% of a regression tree's samples on 240,000 rows against 3.4% in the serial lean
    copy (perf), and its threads spun in libgomp for another 7%.
    """
    return rules.parallel_min_work if n_threads > 1 else NO_PARALLEL_WORK


def trees_per_job(n_trees, n_threads, n_rows):
    """How many consecutive trees a worker thread's job grows (:func:`iter_grown_jobs`).

    Trees of small data take a fraction of a millisecond, and handing each to a thread
    and its result back (a queue, a wake-up each way, the GIL) cost 15-20% of a forest's
    fit on 2 threads (100 trees on diabetes' 353 rows, Zen 5). So a job grows trees of
    about :data:`BATCH_ROWS` training rows in all, and at most an eighth of a thread's
    share, so that the threads still end together. One tree a job from 4,096 rows.
    """
    return max(1, min(-(-BATCH_ROWS // max(n_rows, 1)), n_trees // (8 * n_threads)))


def binned_columns(data, features):
    """The :class:`~silva.engine.cart.BinnedData` of the columns ``features`` (ids into
    ``data``'s, repeats allowed) of a dense ``data``: the same codes, bins and missing
    bin, so that a tree grown on it splits on the bins of the whole dataset. ``data``
    itself when ``features`` are all its columns in order."""
    features = np.asarray(features, dtype=np.intp)
    if features.shape[0] == data.n_features and np.array_equal(
            features, np.arange(data.n_features)):
        return data
    n_categories = data.n_categories[features]
    return BinnedData(
        bin_codes=np.ascontiguousarray(data.bin_codes[features]),
        codes_by_sample=np.ascontiguousarray(data.codes_by_sample[:, features]),
        n_value_bins=data.n_value_bins[features],
        is_categorical=data.is_categorical[features],
        missing_bin=data.missing_bin,
        bin_lower=np.ascontiguousarray(data.bin_lower[features]),
        bin_upper=np.ascontiguousarray(data.bin_upper[features]),
        n_words=max(1, (int(n_categories.max(initial=1)) + 63) // 64),
        n_categories=n_categories,
        n_samples=data.n_samples,
    )
