"""Random forests and extra trees on a Dask cluster: the level-wise, Poisson-bootstrap
forest (:mod:`silva.engine.levelwise`) grown data-parallel.

:class:`DaskRandomForestClassifier`, :class:`DaskRandomForestRegressor`,
:class:`DaskExtraTreesClassifier` and :class:`DaskExtraTreesRegressor` take the
parameters of their single-machine classes plus ``client``, ``on_worker_loss`` and
``bin_subsample``. Their ``bootstrap`` defaults to, and must be, ``"poisson"``: each
row's count in a tree is a Poisson draw keyed by the tree's seed and the row's global
index, so no worker needs the others' rows to draw it (Spark MLlib's bagging). A fit:

1. checks and summarises every partition on its worker (row counts, labels, sums of y);
2. places the bin edges on the client from a sample of at most ``bin_subsample`` rows
   (all rows when there are no more: the single-machine fit's edges);
3. bins each partition where it is computed, keeps each row's global index, and starts
   one :class:`~silva.dask._forest_shard.ForestShard` actor per worker on its binned
   partitions (raw rows never leave the task that reads them);
4. grows the trees ``trees_per_round`` (default 8) at a time with
   :func:`silva.engine.levelwise_grower.grow_levelwise_trees`: per batch one round trip
   for the roots' histograms and one per level (every node of every tree of the batch),
   the histograms summed on the client.

With the same bin edges, the forest is the single-machine forest of the same class with
``bootstrap="poisson"`` on the concatenated data: same structure, features and
thresholds, leaf values equal to rounding (the shards' sums are added in another order).

A worker lost during the fit is recovered from by default: its partitions are binned
again on the workers left and the current batch of trees grows again (trees are
independent: nothing else is replayed); ``on_worker_loss="raise"`` stops with
:class:`silva.dask.WorkerLostError` naming the worker.

``to_local()`` returns the plain :class:`silva.RandomForestClassifier` (etc.), which
predicts, saves and loads like any other. Not available for a forest grown on Dask (each
a clear error): ``oob_score`` and ``predict_quantiles`` (they need the training rows on
one machine), ``warm_start``, ``class_weight="balanced_subsample"``, ``max_leaf_nodes``,
``min_significance``, the absolute_error and poisson criteria.
"""

import functools
import time

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils import check_random_state

from silva import _input
from silva.dask import _data
from silva.dask._grower import Cluster, WorkerLostError
from silva.dask.boosting import (
    DEFAULT_BIN_SAMPLE,
    MAX_RECOVERIES,
    LocalTwin,
    fit_binner,
    proportional_counts,
)
from silva.engine import criteria
from silva.engine.cart import GrownTree
from silva.engine.ensemble import PackedTrees
from silva.engine.levelwise import (
    histogram_bytes,
    node_histograms,
    reproducible_offset,
    sum_node_histograms,
)
from silva.engine.levelwise_grower import grow_levelwise_trees
from silva.engine.pruning import prune_tree
from silva.forest import (
    _MAX_SEED,
    LEVELWISE_BATCH,
    POISSON,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

_DASK_PARAMS = ("client", "on_worker_loss", "bin_subsample", "trees_per_round",
                "histogram_reduction")
#: The shard methods whose answers are histograms (summed on the client or reduced).
_HISTOGRAM_METHODS = ("start_trees", "split_level")


class _BinningTables:
    """The binner's tables under the names :class:`silva.engine.cart.BinnedData` gives
    them (what :meth:`silva.forest.BaseForest._levelwise_rules` reads)."""

    def __init__(self, binner, is_categorical):
        self.n_value_bins = binner.n_value_bins_
        self.is_categorical = np.asarray(is_categorical, dtype=np.uint8)
        self.missing_bin = int(binner.missing_bin_)
        self.bin_lower = binner.bin_lower_
        self.bin_upper = binner.bin_upper_
        self.n_categories = np.where(is_categorical, binner.n_value_bins_, 0)
        self.n_words = max(1, (int(self.n_categories.max(initial=1)) + 63) // 64)


class _DaskForest(LocalTwin):
    """The Dask fit shared by the four forests; mixed in before the local class."""

    _dask_params = _DASK_PARAMS

    @property
    def _is_classifier(self):
        return is_classifier(self)

    def __init__(self, *, client=None, on_worker_loss="recover",
                 bin_subsample=DEFAULT_BIN_SAMPLE, trees_per_round=LEVELWISE_BATCH,
                 histogram_reduction="client", bootstrap=POISSON, **params):
        super().__init__(bootstrap=bootstrap, **params)
        self.client = client
        self.on_worker_loss = on_worker_loss
        self.bin_subsample = bin_subsample
        self.trees_per_round = trees_per_round
        self.histogram_reduction = histogram_reduction

    def _dask_or_local(self, method, X, **kwargs):
        if _data.is_dask_collection(X):
            from silva.dask import prediction
            return getattr(prediction, method)(self.to_local(), X)
        return getattr(super(), method)(X, **kwargs)

    # ------------------------------------------------------------------- checks
    def _refuse_unsupported(self, criterion_code):
        owner = type(self).__name__
        _input.check_option(self.on_worker_loss, "on_worker_loss", {"recover", "raise"})
        _input.check_int(self.trees_per_round, "trees_per_round", 1)
        _input.check_option(self.histogram_reduction, "histogram_reduction",
                            {"client", "workers"})
        if not (isinstance(self.bootstrap, str) and self.bootstrap == POISSON):
            raise ValueError(f"{owner}: bootstrap must be 'poisson' (each row's count "
                             "drawn from its global index, which any partition of the "
                             f"rows draws alike); got {self.bootstrap!r}.")
        problems = []
        if self.oob_score:
            problems.append("oob_score=True (it needs every training row's prediction "
                            "on the client)")
        if self.warm_start:
            problems.append("warm_start=True")
        if getattr(self, "class_weight", None) == "balanced_subsample":
            problems.append("class_weight='balanced_subsample'")
        if problems:
            raise NotImplementedError(f"{owner} does not support {', '.join(problems)} "
                                      "yet; see docs/distributed.md.")
        self._check_levelwise(criterion_code)

    # ---------------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None, callbacks=None):
        """Grow the forest on the dask collections (X, y) and, optionally,
        ``sample_weight`` (partitioned like X); NaN in X means missing.

        ``callbacks`` are called after each tree (as the single-machine forest calls
        them; here they run when the tree's batch is grown) with a
        :class:`~silva.callbacks.CallbackEnv`; one raising
        :class:`~silva.callbacks.EarlyStopException` stops growing more batches."""
        from dask import delayed
        from distributed import get_client

        from silva.dask import _forest_shard, _shard

        started = time.perf_counter()
        owner = type(self).__name__
        classifier = self._is_classifier
        names = (criteria.CLASSIFICATION_CRITERIA if classifier
                 else criteria.REGRESSION_CRITERIA)
        criterion_code = _input.criterion_code(self.criterion, names)
        self._refuse_unsupported(criterion_code)
        client = self.client if self.client is not None else get_client()
        X_parts, y_parts, w_parts, X_sample = _data.row_partitions(X, y, owner,
                                                                   sample_weight)
        template = self._local_class(**self._local_params())
        template._prepare_X(X_sample, reset=True)
        for name in ("n_features_in_", "feature_names_in_", "is_categorical_", "_encoder"):
            if hasattr(template, name):
                setattr(self, name, getattr(template, name))
        n_features = self.n_features_in_
        parts = list(zip(X_parts, y_parts, w_parts, strict=True))

        # Pass 1: check every partition, count its rows, summarise its y.
        summaries = _data.gather_each(client, [
            delayed(_shard.describe_partition, pure=True)(template, i, *part, classifier)
            for i, part in enumerate(parts)])
        first_rows = np.concatenate([[0], np.cumsum([s.n_all_rows for s in summaries])])
        n_samples = int(first_rows[-1])
        kept = [s for s in summaries if s.n_rows > 0]
        if not kept:
            raise ValueError(f"{owner}: X has no rows of positive weight.")
        weight_total = sum(s.weight_sum for s in kept)
        classes, class_factors, n_classes, y_offset = self._target_from(summaries, kept,
                                                                        n_samples)

        # The forest's parameters as the single-machine fit checks them.
        n_drawn = self._check_forest_params(n_samples)
        tree_template = self._make_tree()
        tree_template.is_categorical_ = self.is_categorical_
        params = tree_template._check_params(n_samples, weight_total)
        self.max_features_ = _input.resolve_max_features(self.max_features, n_features)
        tree_template.max_features_ = self.max_features_
        rules = tree_template._growth_rules(params, criterion_code, n_classes,
                                            n_samples + 1)
        rate = n_drawn / n_samples
        random_state = check_random_state(self.random_state)
        seeds = random_state.randint(_MAX_SEED, size=self.n_estimators)

        # Pass 2: the bin edges, from a sample of the rows (of any weight, as the
        # single-machine forest places them on all of X).
        n_total = int(sum(s.n_rows for s in kept))
        sampled = [s for s in summaries if s.n_all_rows > 0]
        n_rows = [s.n_all_rows for s in sampled]
        sample_size = n_samples if self.bin_subsample is None else int(self.bin_subsample)
        if sample_size >= n_samples:
            wanted, sample_seeds = n_rows, [0] * len(n_rows)
        else:
            wanted = proportional_counts(n_rows, sample_size)
            sample_seeds = [int(s) for s in random_state.randint(2**31 - 1,
                                                                 size=len(n_rows))]
        samples = _data.gather_each(client, [
            delayed(_forest_shard.sample_forest_partition, pure=True)(
                template, s.index, *parts[s.index], classifier, int(w), seed)
            for s, w, seed in zip(sampled, wanted, sample_seeds, strict=True) if w > 0])
        binner = fit_binner(self.max_bins, self.is_categorical_, samples, kept)
        del samples
        tables = _BinningTables(binner, self.is_categorical_)
        level_rules = self._levelwise_rules(rules, tables)
        level_rules.min_weight_fraction = float(self.min_weight_fraction_leaf)
        shard_args = (tables.missing_bin + 1,
                      criteria.n_channels(criterion_code, n_classes), classifier)

        # Pass 3: each partition binned where it is computed; one shard per worker.
        def start_shards(indices):
            by_worker = _data.keep_by_worker(client, [
                delayed(_forest_shard.bin_forest_partition, pure=True)(
                    template, i, *parts[i], classifier, binner, classes, class_factors,
                    y_offset, int(first_rows[i]))
                for i in indices], indices)
            addresses = sorted(by_worker)
            futures = [client.submit(_forest_shard.ForestShard, *shard_args,
                                     *[f for _, f in by_worker[a]], actor=True,
                                     workers=[a], allow_other_workers=False, pure=False)
                       for a in addresses]
            return ([f.result() for f in futures], addresses, futures,
                    [[i for i, _ in by_worker[a]] for a in addresses])

        cluster = Cluster(client, *start_shards([s.index for s in kept]))
        counter = {"histogram_bytes": 0}
        trees = []
        try:
            has_missing = any(cluster.call("has_missing", tables.missing_bin,
                                           what="setting up"))
            shard_bytes = cluster.call("memory_bytes", what="setting up")
            loaded = time.perf_counter()
            round_trips_loading = cluster.round_trips
            per_round = int(self.trees_per_round)
            for start in range(0, len(seeds), per_round):
                batch = seeds[start:start + per_round]
                cluster.current_tree = start
                while True:
                    try:
                        trees += grow_levelwise_trees(
                            self._shard_caller(cluster, start, counter, *shard_args[:2]),
                            level_rules,
                            batch, rate, counter)
                        break
                    except WorkerLostError as lost:
                        if self.on_worker_loss != "recover":
                            raise
                        if cluster.recoveries >= MAX_RECOVERIES:
                            raise WorkerLostError(
                                f"{lost} The fit gave up after recovering from "
                                f"{cluster.recoveries} lost workers.", lost.address
                            ) from lost
                        self._recover(cluster, lost.address, start_shards)
                if callbacks and any(self._stop_requested(callbacks, 0, t)
                                     for t in range(start, len(trees))):
                    break
            round_trips = cluster.round_trips - round_trips_loading
            peak_bytes = cluster.call("peak_memory_bytes", what="measuring")
        finally:
            cluster.release()
        finished = time.perf_counter()
        self._store_trees(trees, seeds, n_samples, n_features, n_classes, n_drawn, rate,
                          y_offset, has_missing)
        self.dask_fit_ = {
            "n_workers": len(shard_bytes), "n_rows": n_total,
            "bin_sample_rows": int(sum(wanted)),
            "round_trips": round_trips,
            "recoveries": cluster.recoveries,
            "histogram_bytes": counter["histogram_bytes"],
            "histogram_bytes_between_workers": counter.get("worker_bytes", 0),
            "shard_bytes_per_row": float(sum(shard_bytes)) / n_total,
            "shard_peak_bytes_per_row": float(sum(peak_bytes)) / n_total,
            "seconds_loading": loaded - started, "seconds_growing": finished - loaded,
        }
        return self

    def _shard_caller(self, cluster, first_tree, counter, cluster_bins, channels):
        """The driver's ``call(method, *args)``: every shard's answer to the client, or,
        with ``histogram_reduction="workers"``, histograms summed by a tree of tasks
        between the workers (:meth:`~silva.dask._grower.Cluster.reduce`) and only the
        total to the client; ``counter["worker_bytes"]`` counts what moved between
        workers."""
        n_cells = self.n_features_in_ * cluster_bins
        n_channels = channels

        def call(method, *args):
            what = f"trees {first_tree}+ ({method})"
            if self.histogram_reduction == "workers" and method in _HISTOGRAM_METHODS:
                total, moved = cluster.reduce(method, args, functools.partial(
                    _sum_packed, n_cells=n_cells, n_channels=n_channels), what=what)
                counter["worker_bytes"] = counter.get("worker_bytes", 0) + moved
                return [total]
            return cluster.call(method, *args, what=what)
        return call

    @staticmethod
    def _recover(cluster, lost_address, start_shards):
        """Replace the shard of a lost worker: its partitions binned again on the
        workers left (the batch of trees then grows again from its roots)."""
        lost = cluster.drop(lost_address)
        if not cluster.shards:
            raise WorkerLostError(f"silva.dask: every worker holding the data was lost "
                                  f"(last {lost_address}).", lost_address)
        cluster.add(*start_shards(lost))
        cluster.recoveries += 1

    def _target_from(self, summaries, kept, n_samples):
        """``(classes, class_factors, n_classes, y_offset)`` from the partitions'
        summaries, as the single-machine fit derives them from y."""
        owner = type(self).__name__
        _input.check_sample_weight(np.array([sum(s.weight_sum for s in kept)]), 1)
        if not self._is_classifier:
            self.n_outputs_ = 1
            weight_total = sum(s.weight_sum for s in kept)
            smallest = min(s.y_min for s in kept)
            largest = max(s.y_max for s in kept)
            _input.check_target_scale(np.array([smallest, largest]), np.ones(2))
            offset = reproducible_offset(sum(s.y_sum for s in kept) / weight_total)
            self._y_train = None  # the rows stay on the workers
            return None, None, 1, float(offset)
        classes, _ = _input.classification_target(
            np.concatenate([s.labels for s in summaries]))
        if len(classes) < 2:
            raise ValueError(f"{owner} needs samples of at least 2 classes; y has only "
                             f"one class, {classes[0]!r}.")
        self.classes_ = classes
        self.n_classes_ = len(classes)
        self.n_outputs_ = 1
        factors = None
        if self.class_weight is not None:
            if isinstance(self.class_weight, str) and self.class_weight == "balanced":
                rows = np.zeros(len(classes))
                for s in summaries:
                    np.add.at(rows, np.searchsorted(classes, s.labels), s.label_rows)
                factors = n_samples / (len(classes) * rows)
            else:
                factors = _input.class_weight_per_sample(self.class_weight, classes,
                                                         classes)
        return classes, factors, len(classes), 0.0

    def _store_trees(self, trees, seeds, n_samples, n_features, n_classes, n_drawn, rate,
                     y_offset, has_missing):
        """The fitted state of the single-machine forest (``_fit_forest``) from the
        grown trees."""
        self._clear_fit()
        self._fit_signature = (n_samples, n_features, n_classes)
        self._has_missing_at_fit = bool(has_missing)
        finished = []
        for tree in trees:
            tree.value += y_offset
            if self.ccp_alpha > 0.0:
                tree = prune_tree(tree, self.ccp_alpha)
            finished.append(tree)
            self._grown_trees.append(GrownTree(tree, None, None, None))
        self._packed = PackedTrees(iter(finished),
                                   expected_nodes=sum(t.node_count for t in finished))
        self._tree_seeds = [int(s) for s in seeds[:len(finished)]]
        self._n_drawn = n_drawn
        self._poisson_rate = rate
        self.estimators_ = []
        for t in range(self._packed.n_trees):
            view = self._packed.tree(t)
            self._grown_trees[t].tree = view
            self.estimators_.append(self._wrap_tree(view, self._tree_seeds[t]))
        for name in ("oob_score_", "oob_curve_", "oob_decision_function_",
                     "oob_prediction_"):
            self.__dict__.pop(name, None)


def _sum_packed(first, second, n_cells, n_channels):
    """Two shards' node histograms summed on a worker (one step of the reduction
    between workers): ``(total, bytes moved so far)``, counting the smaller input as
    the one the scheduler moved."""
    (a, moved_a), (b, moved_b) = first, second
    total = node_histograms(sum_node_histograms([a, b], n_cells, n_channels), n_channels)
    return total, moved_a + moved_b + min(histogram_bytes(a), histogram_bytes(b))


_DASK_PARAMETERS = """
    client : distributed.Client or None, default=None
        The cluster to train on; None: ``distributed.get_client()``.
    on_worker_loss : {"recover", "raise"}, default="recover"
        When a worker holding rows is lost: bin its partitions again on the workers
        left and grow the current batch of trees again, or raise
        :class:`silva.dask.WorkerLostError` naming the worker.
    bin_subsample : int or None, default=200000
        Rows sampled (from all partitions, in proportion to their size) to place the
        bin edges; None uses every row. With no more rows than this, every row is used.
    bootstrap : "poisson", default="poisson"
        Each row's count in a tree is a Poisson draw keyed by the tree's seed and the
        row's global index (the only bootstrap that any partition of the rows draws
        alike); ``max_samples`` sets its rate.
    trees_per_round : int, default=8
        Trees grown together: one round trip per level serves them all, and each costs
        a worker 9 bytes a row while it grows (bootstrap count, node, open rows).
    histogram_reduction : {"client", "workers"}, default="client"
        Where the workers' histograms are summed: on the client (every worker sends
        its own), or by a tree of tasks between the workers (log2(workers) steps; one
        total reaches the client). The sums are exact either way: the same trees.
    **params
        Every other parameter of the single-machine class."""


class DaskRandomForestClassifier(_DaskForest, RandomForestClassifier):
    __doc__ = f""":class:`silva.RandomForestClassifier` (``bootstrap="poisson"``) grown on
    a Dask cluster (see :mod:`silva.dask.forest`).

    Parameters
    ----------
    {_DASK_PARAMETERS.strip()}

    Examples
    --------
    >>> from distributed import Client, LocalCluster          # doctest: +SKIP
    >>> import dask.array as da                              # doctest: +SKIP
    >>> with LocalCluster(n_workers=2) as cluster, Client(cluster) as client:
    ...     X = da.random.random((100_000, 10), chunks=25_000)
    ...     y = (X[:, 0] + X[:, 1] > 1).astype(int)
    ...     forest = DaskRandomForestClassifier(n_estimators=20, max_depth=8).fit(X, y)
    ...     local = forest.to_local()                         # doctest: +SKIP
    """

    _local_class = RandomForestClassifier

    def predict(self, X):
        """Most probable class; lazy (a dask array or Series) for a dask collection X."""
        return self._dask_or_local("predict", X)

    def predict_proba(self, X):
        """Class probabilities; lazy for a dask collection X."""
        return self._dask_or_local("predict_proba", X)


class DaskRandomForestRegressor(_DaskForest, RandomForestRegressor):
    __doc__ = f""":class:`silva.RandomForestRegressor` (``bootstrap="poisson"``) grown on
    a Dask cluster (see :mod:`silva.dask.forest`); ``predict_quantiles`` is not
    available (the training rows stay on the workers).

    Parameters
    ----------
    {_DASK_PARAMETERS.strip()}
    """

    _local_class = RandomForestRegressor

    def predict(self, X):
        """Mean of the trees' predictions; lazy for a dask collection X."""
        return self._dask_or_local("predict", X)


class DaskExtraTreesClassifier(_DaskForest, ExtraTreesClassifier):
    __doc__ = f""":class:`silva.ExtraTreesClassifier` (``bootstrap="poisson"``: the
    level-wise forest, random thresholds drawn per node) grown on a Dask cluster.

    Parameters
    ----------
    {_DASK_PARAMETERS.strip()}
    """

    _local_class = ExtraTreesClassifier

    def predict(self, X):
        """Most probable class; lazy for a dask collection X."""
        return self._dask_or_local("predict", X)

    def predict_proba(self, X):
        """Class probabilities; lazy for a dask collection X."""
        return self._dask_or_local("predict_proba", X)


class DaskExtraTreesRegressor(_DaskForest, ExtraTreesRegressor):
    __doc__ = f""":class:`silva.ExtraTreesRegressor` (``bootstrap="poisson"``) grown on a
    Dask cluster.

    Parameters
    ----------
    {_DASK_PARAMETERS.strip()}
    """

    _local_class = ExtraTreesRegressor

    def predict(self, X):
        """Mean of the trees' predictions; lazy for a dask collection X."""
        return self._dask_or_local("predict", X)
