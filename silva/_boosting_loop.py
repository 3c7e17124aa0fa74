"""The gradient-boosting iteration loop, apart from the estimators that call it.

:mod:`silva.boosting` validates parameters and data, bins X, and hands this module
arrays and a :class:`BoostingConfig`; :func:`boost` runs the iterations and fills a
:class:`BoostingRecord` (the trees, their split gains, the evaluation history and the
best iteration). LightGBM keeps its training loop (``engine.py``) apart from its
scikit-learn face in the same way, so that the loop can be run and tested on its own.

One iteration, for the current raw predictions ``F`` (one column per output):

1. gradients and hessians of the loss at ``F``;
2. the rows this iteration sees: all of them, a ``subsample`` fraction drawn without
   replacement (Friedman 2002), or GOSS (:func:`goss_sample`, Ke et al. 2017);
3. one tree per output column, grown by :func:`silva.engine.gradient_grower.grow_gradient_tree`
   on a feature subset (``colsample_bytree``), the columns' trees one after the other or
   at once in the fit's pool of threads (:class:`IterationGrower`; the pool then also
   computes a multiclass gradient, by ranges of rows);
4. the leaf values (:func:`leaf_values`): the grower's Newton values, or a line search, or
   a Newton step on the true hessian for Friedman's gradient boosting; times the learning
   rate;
5. ``F`` updated from the grower's partition (out-of-bag rows walk the tree on bin
   codes), and the evaluation sets' raw predictions from the tree. Steps 4 and 5 of a
   tree (bar the evaluation sets) run right after it grows, in the thread that grew it;
6. the metric on every evaluation set, then the callbacks (early stopping among them).

Every random draw comes from one ``RandomState`` in a fixed order (rows, then each
column's features and seed), so the model does not depend on how the trees are grown.
"""

import queue
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

import numba
import numpy as np

from silva import metrics
from silva._progress import progress
from silva.callbacks import CallbackEnv, EarlyStopException, EarlyStopping, LogEvaluation
from silva.engine import gradient_grower as gg
from silva.engine import gradient_histogram, gradient_sparse, losses
from silva.engine.ensemble import PackedTrees
from silva.engine.gradient_splitting import L1, L2, MAX_DELTA_STEP
from silva.engine.leaf_values import leaf_sums, leaf_updates
from silva.engine.nodes import LEAF, decision_arrays
from silva.engine.random import seed_from_random_state
from silva.engine.sparse import is_sparse
from silva.engine.specialize import serial_copy
from silva.engine.tree import Tree


class EvalSet(NamedTuple):
    """One evaluation set: its name in ``evals_result_``, its validated data, and (filled
    by :func:`boost`) the model's raw predictions on it, shape (n_rows, n_outputs)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    raw: np.ndarray | None = None


class BoostingConfig(NamedTuple):
    """The checked parameters of a boosting fit, as the loop reads them."""

    boosting: str  # "newton" (second order, Chen & Guestrin) or "gradient" (Friedman)
    learning_rate: float
    n_estimators: int  # the iteration count to reach, warm-started iterations included
    split_params: np.ndarray  # gradient_splitting's parameter vector (L2, L1, ...)
    max_depth: int
    max_leaf_nodes: int  # 0: no limit
    depthwise: bool  # level by level (XGBoost) rather than best-first (LightGBM)
    subsample: float
    goss: bool
    goss_top_rate: float
    goss_other_rate: float
    colsample_bytree: float
    colsample_bynode: float
    monotonic: np.ndarray  # int8 per feature: -1, 0 or 1
    interaction_sets: np.ndarray  # uint8 (n_sets, n_features) membership
    metric: str | None  # metrics.metric_name's name; None: nothing is evaluated
    scoring: object  # the estimator's scoring (None, a metric name or a callable)
    record_training: bool  # also evaluate the training set
    early_stopping_rounds: int | None
    verbose: int  # log every ``verbose`` iterations and show progress; 0: silent
    # Replaces the per-set metric when not None: ``evaluator(raw, evals,
    # record_training)`` returns the iteration's results (the ranker's NDCG@k per query
    # needs each set's queries, which a metric of (y, raw, weight) does not see).
    evaluator: object = None


@dataclass
class BoostingRecord:
    """What a fit has produced so far; a warm start continues a previous record.

    ``trees`` holds one list of trees per iteration (one tree per output column, leaf
    values times the learning rate) and ``split_gains`` one array per tree (each node's
    split gain, 0 at leaves); ``evals_result`` is ``{data_name: {metric: [values]}}``;
    ``best_iteration`` is the 0-based iteration kept by early stopping (None when it did
    not run); ``timings`` the seconds spent per stage in this fit; ``packed`` every tree
    packed for prediction (tree ``t`` adding to output column ``t % n_outputs``), once
    :func:`boost` has returned.

    While :func:`boost` runs without callbacks, an iteration's entries are
    :class:`GrownTree` records; when it returns, every entry is a
    :class:`~silva.engine.tree.Tree`.
    """

    trees: list = field(default_factory=list)
    split_gains: list = field(default_factory=list)
    evals_result: dict = field(default_factory=dict)
    best_iteration: int | None = None
    timings: dict = field(default_factory=dict)
    packed: PackedTrees | None = None


class GrownTree(NamedTuple):
    """A tree as the gradient grower left it, before it is made a :class:`Tree`: its
    node table (:data:`silva.engine.nodes.GRADIENT_NODE` records), category bitsets,
    and node values times the learning rate."""

    table: np.ndarray
    bitsets: np.ndarray
    values: np.ndarray


# A fit whose trees grow in a pool but have no parallel passes of their own tries its
# first iteration serially, and keeps to one thread when that iteration took less than
# this per tree (ThreadChoice.try_serial_first). Measured on a 2-core Zen 3, 100
# iterations of 31 leaves, one thread against two: 10 classes of 28 features, 120
# rows, 0.15 ms a tree serially, 154 against 163 ms a fit; 200 rows, 0.23 ms a tree,
# 230 against 242 ms; 320 rows, 0.39 ms a tree, 389 against 305 ms. Wine (3 classes,
# 0.11 ms a tree) 31.9 against 38.5 ms; iris (0.08 ms) 23.3 against 27.9 ms.
POOLED_TREE_MIN_SECONDS = 0.25e-3


class ThreadChoice:
    """Run each boosting iteration on all of numba's threads or on one, whichever has
    lately been faster.

    On a machine whose cores other processes keep busy, a parallel region waits for a
    thread the OS has set aside: one region can cost a whole scheduler time slice, and
    an iteration starts dozens (measured: 10 times slower than one thread on a 2-core
    machine with another busy process). Every ``probe_every``-th iteration runs the
    other way, so that the choice follows the load. No kernel's result depends on the
    number of threads (the grower's parallel blocks depend only on node sizes), so this
    changes speed only, never the model.

    The first iteration runs parallel and is not timed: it touches the fit's buffers
    for the first time (page faults), which once made it look slower than a serial
    iteration and sent the next ``probe_every`` iterations to one thread. The second
    is timed parallel, the third serial, and the faster way is kept from then on.

    A fit may first try one iteration serially (:meth:`try_serial_first`): when that
    iteration takes less than a given time, the whole fit stays on one thread, and
    neither starts a pool nor probes. Meant for small fits whose only parallel work is
    handing whole trees to a pool's threads: each hand-off costs more than such a
    tree's work saves (see ``POOLED_TREE_MIN_SECONDS``). The trial iteration is also
    the fit's first, so its time includes the first touches: it errs towards the
    parallel protocol above, which then runs from the next iteration.
    """

    def __init__(self, probe_every=25):
        self.threads = numba.get_num_threads()
        self.probe_every = probe_every
        self.seconds = {True: np.inf, False: np.inf}  # last time per iteration, per choice
        self.count = 0
        self.serial_trial_seconds = 0.0  # > 0: the first iteration is a serial trial
        self.serial_only = False

    def try_serial_first(self, seconds):
        """Run the first iteration on one thread, and all of them if it takes less than
        ``seconds``."""
        self.serial_trial_seconds = seconds

    def parallel(self):
        """Whether the next iteration should run parallel."""
        if self.threads == 1 or self.serial_only or self.serial_trial_seconds > 0.0:
            return False
        self.count += 1
        if self.count <= 2:
            return True
        best = self.seconds[True] <= self.seconds[False]
        # The third iteration, then one in probe_every, tries the other way.
        return not best if self.count % self.probe_every == 3 else best

    def record(self, parallel, seconds):
        """Note that the last iteration, run ``parallel`` or not, took ``seconds``."""
        if self.serial_trial_seconds > 0.0:
            self.serial_only = seconds < self.serial_trial_seconds
            self.serial_trial_seconds = 0.0
        elif self.count > 1:  # the first iteration is a warm-up (see above)
            self.seconds[parallel] = seconds


class IterationGrower:
    """Grows an iteration's trees, one per output column of the gradients, and finishes
    each (its leaf values and its column's raw update) right after it grows.

    One after the other, each with the grower's own parallel passes over row blocks; or,
    when asked to run parallel with several trees (one per class), the trees at once in
    a pool of threads, each grown serially (``serial=True``: the same row blocks one
    after the other) on a workspace of its own, and finished by the thread that grew it
    (a tree's finish touches its own raw column only). Each tree's inputs (feature
    mask, seed) are drawn beforehand, so the trees are the same either way: the
    multiclass trees grow about twice as fast on two cores, where most nodes are too
    small for parallel passes.

    The pool and its workspaces live for the whole fit (:meth:`close` ends them): a pool
    per iteration started and joined its threads a hundred times a fit.
    """

    def __init__(self, workspace, use_hessian, two_lanes, n_threads, data, rules,
                 n_columns=1):
        # Compile only the paths this fit takes: no parallel pass on one thread or below
        # the smallest node that one takes (see gradient_histogram's FEATURE_PARTS_MIN_ROWS
        # and BLOCK_ROWS), no category scan without categorical features. A sparse
        # workspace has its own grower (serial, see gradient_sparse), which no dense fit
        # compiles.
        self.sparse = isinstance(workspace, gradient_sparse.SparseWorkspace)
        if self.sparse:
            self.parallel = False
            self.grow_tree = gg.grow_sparse_gradient_tree
        else:
            self.parallel = n_threads > 1 and gradient_histogram.has_parallel_passes(
                *workspace.columns.shape, n_trees=n_columns)
            self.grow_tree = gg.compiled_gradient_grower(
                parallel=self.parallel, categorical=bool(data.is_categorical.any()),
                wide=gradient_histogram.is_wide(workspace.columns.shape[0],
                                                workspace.histograms.shape[2]))
        self.workspaces = [workspace]
        self.use_hessian = use_hessian
        self.two_lanes = two_lanes
        self.n_threads = n_threads
        self.data = data  # gradient_grower.GradientData
        self.rules = rules  # gradient_grower.GradientRules
        self.pool = None  # the fit's ThreadPoolExecutor, started by the first parallel call
        self.free = queue.SimpleQueue()  # the workspaces no pool thread holds

    def grow(self, column, feature_mask, seed, grad, hess, weight, in_bag, workspace,
             serial):
        """One tree on gradient column ``column``: ``(table, bitsets, sample_indices)``."""
        sample_indices = in_bag.copy()
        statistics = gradient_histogram.GradientStatistics(
            grad, hess, np.int64(column), weight, np.bool_(self.use_hessian),
            np.bool_(self.two_lanes))
        if self.sparse:
            table, bitsets = self.grow_tree(workspace, self.data, self.rules, sample_indices,
                                            feature_mask, seed, statistics)
            return table, bitsets, sample_indices
        if serial or not self.parallel:
            # One thread: no parallel region, no chunk size or thread count to read or
            # set (numba's calls take a lock each: several microseconds an iteration,
            # much of a small fit's time per tree).
            table, bitsets = self.grow_tree(workspace, self.data, self.rules, sample_indices,
                                            feature_mask, seed, np.int64(1), statistics)
            return table, bitsets, sample_indices
        # The grower's parallel loops run over a few row blocks each: hand them out one
        # at a time, so that a thread the OS stalls holds up one block, not half of them.
        chunksize = numba.set_parallel_chunksize(1)
        try:
            table, bitsets = self.grow_tree(
                workspace, self.data, self.rules, sample_indices, feature_mask, seed,
                np.int64(numba.get_num_threads()), statistics)
        finally:
            numba.set_parallel_chunksize(chunksize)
        return table, bitsets, sample_indices

    def pools_trees(self, parallel, n_columns):
        """Whether :meth:`grow_all` grows ``n_columns`` trees in the pool's threads (in an
        iteration run ``parallel``)."""
        # The sparse grower's trees grow one after the other (its workspace is not
        # cloned for threads; see gradient_sparse).
        return parallel and not self.sparse and min(self.n_threads, n_columns) > 1

    def map(self, function, items):
        """``[function(item) for item in items]``, run in the pool's threads."""
        if self.pool is None:
            # As many workspaces as threads; a thread takes a free one for each tree.
            while len(self.workspaces) < self.n_threads:
                self.workspaces.append(gradient_histogram.clone_workspace(self.workspaces[0]))
            for workspace in self.workspaces:
                self.free.put(workspace)
            self.pool = ThreadPoolExecutor(self.n_threads)
        return list(self.pool.map(function, items))

    def grow_all(self, draws, grad, hess, weight, in_bag, parallel, finish):
        """``finish(k, table, bitsets, sample_indices, serial)`` of the tree grown for
        each of ``draws`` (one ``(feature_mask, seed)`` per column), in column order;
        ``serial`` tells ``finish`` that it runs in a pool thread, beside other trees."""
        if not self.pools_trees(parallel, len(draws)):
            return [finish(k, *self.grow(k, mask, seed, grad, hess, weight, in_bag,
                                         self.workspaces[0], serial=False), False)
                    for k, (mask, seed) in enumerate(draws)]

        def grow_one(k):
            workspace = self.free.get()
            try:
                grown = self.grow(k, *draws[k], grad, hess, weight, in_bag, workspace,
                                  serial=True)
            finally:
                self.free.put(workspace)
            return finish(k, *grown, True)

        # The pool's queue hands the trees out one at a time, in column order, to
        # whichever thread is free: trees of unequal cost balance themselves.
        return self.map(grow_one, range(len(draws)))

    def close(self):
        """End the pool's threads (a no-op when none started)."""
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


# A fit keeps its trees as the grower's tables (GrownTree, 192 bytes a node) until it
# packs them all at its end, as long as they hold at most this many nodes (about 50 MB);
# beyond, they are made Tree objects (about 80 bytes a node) as each tree grows, as
# before. Small models, whose fits the per-tree Python work slows, pack in one pass;
# a large model's peak memory stays near what it was (10,000 trees of 255 leaves held
# as tables would take about 1 GB, twice over while they are joined).
GROWN_TABLES_MAX_NODES = 1 << 18


# A sparse X grows on its stored entries (engine/gradient_sparse.py) when at most this
# fraction of its values is stored; denser, on the dense workspace, as a dense X (the
# same model, bit for bit). Measured, 20,000 x 400 counts, 30 trees of 31 leaves, grow
# time sparse / dense on the shared 2-core machine: 0.07 / 0.51 s at 2% stored, 0.23 /
# 0.42 at 20%, 0.59 / 0.63 at 35%; LightGBM calls a feature sparse from 80% zeros.
SPARSE_GROWTH_MAX_DENSITY = 0.25


# ------------------------------------------------------------------ sampling
def goss_sample(grad, sample_weight, top_rate, other_rate, rng):
    """Gradient-based one-side sampling (Ke et al. 2017): ``(in_bag, weight)``.

    Keeps the ``int(top_rate * n)`` rows (at least one) of largest weighted |gradient|
    (summed over the output columns), draws ``int(other_rate * n)`` of the others without
    replacement, and multiplies the drawn rows' weights by ``(1 - top_rate) /
    other_rate`` so that their gradient sums stay unbiased. ``in_bag`` is sorted int32.
    """
    n = grad.shape[0]
    magnitude = np.abs(grad * sample_weight[:, None]).sum(axis=1)
    n_top = max(1, int(top_rate * n))
    n_other = min(n - n_top, max(0, int(other_rate * n)))
    order = np.argsort(-magnitude, kind="stable")
    top = order[:n_top]
    other = rng.choice(order[n_top:], n_other, replace=False) if n_other else order[:0]
    weight = sample_weight.copy()
    weight[other] *= (1.0 - top_rate) / other_rate
    in_bag = np.sort(np.concatenate([top, other])).astype(np.int32)
    return in_bag, weight


def subsample_rows(n_samples, fraction, rng):
    """Rows kept with probability ``fraction`` each (one at random if none is): sorted
    int32 indices, about ``fraction * n_samples`` of them."""
    mask = rng.random_sample(n_samples) < fraction
    if not mask.any():
        mask[rng.randint(n_samples)] = True
    return np.flatnonzero(mask).astype(np.int32)


def _iteration_rows(config, grad, sample_weight, all_rows, rng):
    """``(in_bag, weight, out_of_bag)`` of one iteration; ``out_of_bag`` is None when
    every row is in the bag."""
    if config.goss:
        in_bag, weight = goss_sample(grad, sample_weight, config.goss_top_rate,
                                     config.goss_other_rate, rng)
    elif config.subsample < 1.0:
        in_bag, weight = subsample_rows(all_rows.shape[0], config.subsample, rng), sample_weight
    else:
        return all_rows, sample_weight, None
    out_of_bag_mask = np.ones(all_rows.shape[0], dtype=bool)
    out_of_bag_mask[in_bag] = False
    return in_bag, weight, np.flatnonzero(out_of_bag_mask)


def feature_draws(n_columns, n_features, n_bytree, rng, all_features=None):
    """One ``(feature_mask, seed)`` per output column, drawn in column order.

    ``all_features`` (a uint8 mask of ones, which the grower only reads), when given,
    stands for every column's draw, with seed 0: for a fit that draws nothing at all
    (every feature for every tree and node, every row), where a seed that no node reads
    cost about 7 us of numpy per tree (a tenth of a small fit's Python time per tree)
    and skipping it leaves every later draw as it was, since there is none."""
    if all_features is not None:
        return [(all_features, np.uint64(0))] * n_columns
    draws = []
    for _ in range(n_columns):
        feature_mask = np.ones(n_features, dtype=np.uint8)
        if n_bytree < n_features:
            feature_mask[:] = 0
            feature_mask[rng.choice(n_features, n_bytree, replace=False)] = 1
        draws.append((feature_mask, seed_from_random_state(rng)))
    return draws


# ---------------------------------------------------------------- leaf values
def leaf_values(table, sample_indices, column, loss, line_search, newton_step, y, raw,
                grad, hess, weight, params, learning_rate, *, serial=False):
    """A grown tree's node values times the learning rate, and its leaf mask.

    The grower's Newton values, unless the leaves are re-fitted: by the loss's line
    search ``line_search`` (a ``losses.LINE_SEARCH_*`` kind: Friedman's median or
    quantile, or his Huber step) or, when ``newton_step``, by a Newton step on each leaf's
    gradient and hessian sums (:func:`newton_value`). Either way a leaf stays within its
    monotonic bounds. ``serial``: through the compiled passes' copies without a parallel
    region (for a tree finished in a pool thread, beside other trees).
    """
    values = table["value"].copy()
    is_leaf = table["left"] == LEAF
    if line_search is not None:
        leaves = np.flatnonzero(is_leaf)
        searched = np.empty(len(leaves))
        (serial_copy(losses.leaf_line_search) if serial else losses.leaf_line_search)(
            line_search, loss.line_search_param(), float(loss.param), y,
            np.ascontiguousarray(raw[:, column]), weight, sample_indices,
            table["start"][leaves], table["end"][leaves], searched)
        values[leaves] = np.clip(searched, table["lower"][leaves], table["upper"][leaves])
    elif newton_step:
        leaf_gh = np.empty((table.shape[0], 2))
        (serial_copy(leaf_sums) if serial else leaf_sums)(
            grad, hess, column, weight, sample_indices, table, leaf_gh)
        for node in np.flatnonzero(is_leaf):
            values[node] = newton_value(leaf_gh[node], params, table["lower"][node],
                                        table["upper"][node])
    values *= learning_rate
    return values, is_leaf


def newton_value(sums, params, lower, upper):
    """The regularised Newton leaf weight from a leaf's ``(G, H)`` sums: ``-T(G) / (H +
    lambda)`` with ``T`` the L1 soft threshold, clipped to ``max_delta_step`` (when > 0)
    and then to the leaf's monotonic bounds ``[lower, upper]``; 0 when ``H + lambda <=
    0``."""
    denominator = sums[1] + params[L2]
    g = sums[0]
    t = np.sign(g) * max(abs(g) - params[L1], 0.0)
    w = -t / denominator if denominator > 0 else 0.0
    if params[MAX_DELTA_STEP] > 0:
        w = min(max(w, -params[MAX_DELTA_STEP]), params[MAX_DELTA_STEP])
    return min(max(w, lower), upper)


def make_tree(table, bitsets, values, n_features, n_categories):
    """A :class:`Tree` from the gradient grower's node table, category bitsets and the
    node values to store."""
    return Tree(
        n_features, 1, **decision_arrays(table),
        category_bitsets=bitsets,
        value=values,
        impurity=np.zeros(table.shape[0]),
        n_node_samples=(table["end"] - table["start"]).astype(np.intp),
        weighted_n_node_samples=table["weight"],
        n_categories=n_categories,
    )


def as_tree(tree, n_features, n_categories):
    """``tree`` as a :class:`Tree`: made from a :class:`GrownTree`, else itself."""
    if isinstance(tree, GrownTree):
        return make_tree(tree.table, tree.bitsets, tree.values, n_features, n_categories)
    return tree


def pack(trees, n_outputs):
    """The trees of ``trees`` (one list per iteration) packed for prediction, tree ``t``
    adding to output column ``t % n_outputs``."""
    flat = [t for iteration in trees for t in iteration]
    return PackedTrees(flat, output_column=np.tile(np.arange(n_outputs),
                                                   len(flat) // n_outputs))


def pack_record(trees, n_outputs, n_features, n_categories):
    """:func:`pack` of ``trees`` (one list per iteration), whose :class:`GrownTree`
    entries are replaced in place by trees: by views of the packing when every entry is
    one (the trees of a fit without callbacks), packed from their tables in one pass
    rather than made one :class:`Tree` at a time; else each made a :class:`Tree`.
    ``n_categories`` is every tree's per-feature category count. None without trees."""
    flat = [t for iteration in trees for t in iteration]
    if not flat:
        return None
    output_column = np.tile(np.arange(n_outputs), len(flat) // n_outputs)
    n_categories = np.asarray(n_categories, dtype=np.intp)  # as Tree keeps it
    if not all(isinstance(t, GrownTree) for t in flat):
        for iteration in trees:
            iteration[:] = [as_tree(t, n_features, n_categories) for t in iteration]
        return pack(trees, n_outputs)
    node_offset = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum([t.table.shape[0] for t in flat], out=node_offset[1:])
    # Joined as bytes: np.concatenate of record arrays promotes their dtypes (about
    # 25 us a table), and a slice assignment copies field by field (about 7 us).
    table = np.concatenate([t.table.view(np.uint8) for t in flat]).view(flat[0].table.dtype)
    packed = PackedTrees.from_node_arrays(
        node_offset, n_features, 1, [n_categories] * len(flat), **decision_arrays(table),
        category_bitsets=np.concatenate([t.bitsets for t in flat]),
        value=np.concatenate([t.values for t in flat])[:, None],
        impurity=np.zeros(table.shape[0]),
        n_node_samples=(table["end"] - table["start"]).astype(np.intp),
        weighted_n_node_samples=table["weight"], output_column=output_column)
    for i, iteration in enumerate(trees):
        iteration[:] = [packed.tree(i * n_outputs + k) for k in range(len(iteration))]
    return packed


# ----------------------------------------------------------------------- loop
def boost(X, y, sample_weight, binner, is_categorical, init_raw, loss, config, rng, *,
          evals=(), record=None, callbacks=(), model=None, label="boosting", codes=None):
    """Run boosting iterations until ``config.n_estimators`` iterations exist or a
    callback stops them; return ``record`` (a new one when None), filled in place.

    ``X`` (float64, NaN missing) and ``y`` (class indices as floats for classifiers) are
    the rows to train on, every ``sample_weight`` positive; ``binner`` is fitted, and
    ``init_raw`` is the loss's initial constant (one per output). A non-empty ``record``
    is continued (warm start): its trees stay, and the new ones start from their
    predictions. ``evals`` are :class:`EvalSet` without ``raw``. ``callbacks`` run after
    the built-in early stopping and logging, each receiving a :class:`CallbackEnv` whose
    ``model`` is ``model``. When early stopping (built in, or a callback's
    :class:`EarlyStopException`) names a best iteration, the later iterations are dropped.
    ``codes``: ``binner.transform(X)`` when the caller has it already (from the binner's
    ``fit_transform``), else None.
    """
    record = BoostingRecord() if record is None else record
    n_samples, n_features = X.shape
    n_outputs = loss.n_outputs
    # The dense grower reads each sample's codes and statistics as one record (see
    # gradient_histogram.make_workspace); out-of-bag updates walk the trees on its codes.
    n_bins = binner.missing_bin_ + 1
    # A sparse X grows on its stored entries (engine/gradient_sparse.py), never on a
    # dense code matrix, unless it stores so many values that the dense path is faster.
    sparse_growth = (is_sparse(X)
                     and X.nnz <= SPARSE_GROWTH_MAX_DENSITY * n_samples * n_features)
    if sparse_growth:
        workspace = gradient_sparse.make_sparse_workspace(
            binner.sparse_entries(X), binner.n_value_bins_, binner.missing_bin_, n_samples,
            gradient_sparse.sparse_pool_slots(config.max_leaf_nodes))
        codes = None
    else:
        workspace = gradient_histogram.make_workspace(
            binner.transform(X) if codes is None else codes, n_bins,
            gradient_histogram.pool_slots_for(config.max_leaf_nodes, n_features, n_bins))
        codes = workspace.codes
    n_categories = binner.n_value_bins_[is_categorical].max(initial=1)
    n_words = max(1, (int(n_categories) + 63) // 64)
    tree_categories = np.where(is_categorical, binner.n_value_bins_, 0)

    raw = np.tile(init_raw, (n_samples, 1))
    evals = [e._replace(raw=np.tile(init_raw, (e.X.shape[0], 1))) for e in evals]
    if record.trees:
        packed = pack(record.trees, n_outputs)
        packed.predict(X, out=raw)
        for e in evals:
            packed.predict(e.X, out=e.raw)
    # Column-major training predictions, gradients and hessians: a class's tree reads
    # and updates one contiguous column, where a row-major column of K classes made
    # every tree touch every cache line of the whole array (10 classes, 160,000 rows,
    # one thread: the update took 1.0-1.5 ms less per tree, the softmax gradients
    # 1.8 ms more per iteration). With one output both layouts are one.
    raw = np.asfortranarray(raw)
    begin = len(record.trees)
    end = int(config.n_estimators)
    grad = np.empty((n_samples, n_outputs), order="F")
    hess = np.empty((n_samples, n_outputs), order="F")
    all_rows = np.arange(n_samples, dtype=np.int32)
    use_hessian = config.boosting == "newton"
    params = config.split_params
    n_bytree = max(1, int(round(config.colsample_bytree * n_features)))
    n_bynode = max(1, int(round(config.colsample_bynode * n_bytree)))
    line_search = loss.line_search if (config.boosting == "gradient"
                                       or loss.renew_leaves_in_newton) else None
    newton_step = config.boosting == "gradient" and line_search is None
    # A fit without row or feature sampling never reads rng in its loop: its trees take
    # one shared mask of every feature, and no seed (see feature_draws).
    draws_nothing = (not config.goss and config.subsample >= 1.0
                     and n_bynode == n_bytree == n_features)
    all_features = np.ones(n_features, dtype=np.uint8) if draws_nothing else None

    stopper, every_callback = iteration_callbacks(config, callbacks)
    # Without callbacks nothing sees a tree before the loop ends: each stays its
    # grower's table (a GrownTree) until pack_record packs them all at once. Making a
    # Tree of each and packing it took about 15 us a tree, a fifth of a small fit's
    # iteration (diabetes, depth 3). Up to GROWN_TABLES_MAX_NODES nodes.
    keep_tables = not every_callback
    held_nodes = 0
    metric = config.metric
    if metric is not None:
        if config.record_training:
            record.evals_result.setdefault("training", {metric: []})
        for e in evals:
            record.evals_result.setdefault(e.name, {metric: []})
    record.best_iteration = None
    record.timings = {"gradients": 0.0, "grow": 0.0, "leaf_values": 0.0, "update": 0.0,
                      "evaluate": 0.0}
    timings = record.timings
    choice = ThreadChoice()
    # A unit hessian (or Friedman's least-squares fit, whose hessian channel is the
    # weight) with unit weights lets the grower sum the gradient and hessian channels
    # only: the count and weight channels are then the hessian's. Other weights
    # (GOSS up-weights samples too) need the count channel summed on its own.
    two_lanes = ((loss.unit_hessian or not use_hessian) and not config.goss
                 and bool(np.all(sample_weight == 1.0)))
    grower = IterationGrower(
        workspace, use_hessian, two_lanes, choice.threads,
        gg.gradient_data(binner.n_value_bins_, is_categorical.astype(np.uint8),
                         binner.missing_bin_, binner.bin_thresholds_, n_words),
        gg.gradient_rules(params, config.max_depth, config.max_leaf_nodes, config.depthwise,
                          n_bynode, config.monotonic, config.interaction_sets),
        n_outputs)
    if n_outputs > 1 and not (grower.sparse or grower.parallel):
        # Trees that would grow in the pool (see IterationGrower.pools_trees) with no
        # parallel passes of their own.
        choice.try_serial_first(POOLED_TREE_MIN_SECONDS * n_outputs)
    add_leaf_values, add_leaf_values_binned = leaf_updates(grower.parallel)
    # One range of rows per pool thread, for a gradient computed in the pool.
    bounds = np.linspace(0, n_samples, choice.threads + 1).astype(np.int64)
    row_ranges = list(zip(bounds[:-1], bounds[1:], strict=True))
    # The nogil copies of the updates, for a tree finished in a pool thread (beside
    # other trees: no parallel region of its own).
    add_leaf_values_serial, add_leaf_values_binned_serial = leaf_updates(False)

    def finish(k, table, bitsets, sample_indices, serial):
        """Tree ``k`` finished: its leaf values, its raw column updated by them, and the
        :class:`Tree` to keep: ``(tree, values, split_gains, leaf_seconds,
        update_seconds)``. Writes ``raw[:, k]`` only, so that the trees of an iteration
        may finish in threads at once (the other thread meanwhile grows its tree)."""
        t2 = time.perf_counter()
        values, is_leaf = leaf_values(
            table, sample_indices, k, loss, line_search, newton_step, y, raw,
            grad, hess, weight, params, config.learning_rate, serial=serial)
        t3 = time.perf_counter()
        if serial or not grower.parallel:
            add_leaf_values_serial(raw, k, sample_indices, table, values)
        else:
            chunksize = numba.set_parallel_chunksize(1)  # leaves differ in size
            try:
                add_leaf_values(raw, k, sample_indices, table, values)
            finally:
                numba.set_parallel_chunksize(chunksize)
        if out_of_bag is not None and out_of_bag.size and sparse_growth:
            gradient_sparse.add_leaf_values_sparse(
                raw, k, out_of_bag, workspace, table, bitsets,
                np.int64(binner.missing_bin_), values)
        elif out_of_bag is not None and out_of_bag.size:
            (add_leaf_values_binned_serial if serial else add_leaf_values_binned)(
                raw, k, out_of_bag, codes, table, bitsets, binner.missing_bin_, values)
        if keep_tables:
            tree = GrownTree(table, bitsets, values)
        else:
            tree = make_tree(table, bitsets, values, n_features, tree_categories)
        split_gains = np.where(is_leaf, 0.0, table["gain"])
        return tree, values, split_gains, t3 - t2, time.perf_counter() - t3

    iterations = progress(range(begin, end), total=end - begin,
                          enabled=bool(config.verbose), desc=label)
    try:
        for iteration in iterations:
            parallel = choice.parallel()
            if grower.parallel:
                # Only the grower's copy with parallel passes (and the kernels of data as
                # large: leaf updates, gradients) opens numba's parallel regions.
                numba.set_num_threads(choice.threads if parallel else 1)
            t0 = time.perf_counter()
            loss.update_iteration(y, raw, sample_weight)
            if loss.row_parallel_gradient and grower.pools_trees(parallel, n_outputs):
                # The pool's threads share the rows out: a parallel region of numba's
                # (OpenMP) left its worker spinning for a while on a core that the pool's
                # threads then needed for the trees.
                grower.map(lambda rows: loss.gradient_hessian_rows(
                    y, raw, grad, hess, rows[0], rows[1]), row_ranges)
            else:
                loss.gradient_hessian(y, raw, grad, hess, iteration=iteration)
            in_bag, weight, out_of_bag = _iteration_rows(config, grad, sample_weight,
                                                         all_rows, rng)
            t1 = time.perf_counter()
            timings["gradients"] += t1 - t0
            # Every draw from rng in column order, before any tree grows, so that the
            # trees are the same whether they grow one after the other or at once.
            draws = feature_draws(n_outputs, n_features, n_bytree, rng, all_features)
            t1 = time.perf_counter()
            finished = grower.grow_all(draws, grad, hess, weight, in_bag, parallel, finish)
            timings["grow"] += time.perf_counter() - t1
            iteration_trees = []
            for k, (tree, values, split_gains, leaf_seconds, update_seconds) in (
                    enumerate(finished)):
                # A tree finished in a pool thread counts its seconds in "grow" too.
                timings["leaf_values"] += leaf_seconds
                timings["update"] += update_seconds
                iteration_trees.append(tree)
                record.split_gains.append(split_gains)
                if evals:
                    evaluated = as_tree(tree, n_features, tree_categories)
                    for e in evals:
                        e.raw[:, k] += values[evaluated.apply(e.X)]
            record.trees.append(iteration_trees)
            if keep_tables:
                held_nodes += sum(tree.table.shape[0] for tree in iteration_trees)
                if held_nodes > GROWN_TABLES_MAX_NODES:
                    keep_tables = False
                    for trees in record.trees[begin:]:
                        trees[:] = [as_tree(tree, n_features, tree_categories)
                                    for tree in trees]
            choice.record(parallel, time.perf_counter() - t0)
            if grower.parallel:
                numba.set_num_threads(choice.threads)

            t4 = time.perf_counter()
            results = evaluate_iteration(config, loss, y, raw, sample_weight, evals)
            for data_name, metric_name, value, _ in results:
                record.evals_result.setdefault(data_name, {}).setdefault(
                    metric_name, []).append(value)
            timings["evaluate"] += time.perf_counter() - t4
            env = CallbackEnv(model, iteration, begin, end, results)
            try:
                for callback in every_callback:
                    callback(env)
            except EarlyStopException as stop:
                record.best_iteration = int(stop.best_iteration)
                break
    except BaseException:
        # A fit cut short (an error, an interrupt) leaves Trees, as a finished one does.
        for trees in record.trees[begin:]:
            trees[:] = [as_tree(tree, n_features, tree_categories) for tree in trees]
        raise
    finally:
        grower.close()
        numba.set_num_threads(choice.threads)
    if stopper is not None and record.best_iteration is None:
        # Early stopping never fired: the model still keeps its best iteration.
        record.best_iteration = stopper.best_iteration
    if record.best_iteration is not None:
        del record.trees[record.best_iteration + 1:]
        del record.split_gains[(record.best_iteration + 1) * n_outputs:]
    record.packed = pack_record(record.trees, n_outputs, n_features, tree_categories)
    return record


def iteration_callbacks(config, callbacks):
    """``(stopper, every_callback)``: the built-in early stopping (None without
    ``early_stopping_rounds``) and logging, then ``callbacks``, in the order they run
    after each iteration."""
    stopper = None
    every_callback = []
    if config.early_stopping_rounds is not None:
        stopper = EarlyStopping(int(config.early_stopping_rounds))
        every_callback.append(stopper)
    if config.verbose:
        every_callback.append(LogEvaluation(int(config.verbose)))
    every_callback.extend(callbacks or [])
    return stopper, every_callback


def evaluate_iteration(config, loss, y, raw, sample_weight, evals):
    """One iteration's ``(data_name, metric, value, higher_is_better)`` results: the
    training set first when recorded, then the evaluation sets in order."""
    metric = config.metric
    if metric is None:
        return []
    if config.evaluator is not None:
        return config.evaluator(raw, evals, config.record_training)
    results = []
    if config.record_training:
        value, higher = metrics.evaluate(metric, config.scoring, loss, y, raw, sample_weight)
        results.append(("training", metric, value, higher))
    for e in evals:
        value, higher = metrics.evaluate(metric, config.scoring, loss, e.y, e.raw, e.weight)
        results.append((e.name, metric, value, higher))
    return results
