"""Gradient boosting on a Dask cluster: data-parallel training on the histogram engine.

:class:`DaskGradientBoostingRegressor` and :class:`DaskGradientBoostingClassifier` take
the parameters of :class:`silva.GradientBoostingRegressor` /
:class:`silva.GradientBoostingClassifier` (they subclass them, and reuse their parameter
checks, losses, binner and tree objects) plus ``client`` and ``on_worker_loss``. A fit:

1. checks every row partition of X and y on the workers and summarises it (row count,
   labels or sums of y) (:mod:`silva.dask._data`, :mod:`silva.dask._shard`);
2. places the bin edges once, on the client, from a sample of at most ``bin_subsample``
   rows (default 200,000, LightGBM's ``bin_construct_sample_cnt``) drawn from the
   partitions in proportion to their rows; with no more rows than that, every row is
   used, and the edges are those of the single-machine fit on the concatenated data;
3. bins each partition on its worker and starts one :class:`~silva.dask._shard.Shard`
   actor per worker on the binned partitions it holds, which keeps codes, raw
   predictions, gradients and row positions for the whole fit (raw rows are only ever
   held one partition at a time, by the task reading it);
4. grows each tree with :class:`silva.dask._grower.TreeGrower`: histograms summed on the
   client (or, ``histogram_reduction="workers"``, reduce-scattered between the shards
   by feature ranges, each shard searching its features), the split chosen once by the
   engine's split finder, applied by every shard.

A worker lost during the fit is recovered from by default (``on_worker_loss``): its
partitions are binned again on the workers left, new shards replay the trees so far,
and the current tree grows again; the model is the undisturbed fit's.

Categorical features: as for the single-machine estimator (``categorical_features``),
from pandas category columns with known categories or integer codes; a categorical
feature's bin count comes from its largest code over all rows (reported by the shards),
its split from the engine's category scan.

The fitted model is an ordinary boosted model: it predicts in memory like the
single-machine estimator (and on dask collections through :mod:`silva.dask.prediction`),
and :meth:`to_local` returns the plain :class:`silva.GradientBoostingClassifier` /
``Regressor``, which saves, loads and prints like any other.

``sample_weight`` is a dask array or Series partitioned like X; rows of zero weight
take no part (as in the single-machine fit).

Evaluation sets (``eval_set``, numpy, pandas or dask: computed to the client, so keep
them small) are scored on the client after every iteration, as the single-machine loop
scores them, and watched by ``early_stopping_rounds``; the training metric is not
recorded (it would need every row's prediction on the client).

Not supported yet (each a clear error): early stopping on a ``validation_fraction`` of
the training data, ``subsample``/GOSS, warm starts, losses whose leaves need a line search
(absolute error, quantile, huber), custom objectives.
"""

import time

import numpy as np
from sklearn.utils import check_random_state

from silva import _boosting_loop, _input, metrics
from silva.boosting import GradientBoostingClassifier, GradientBoostingRegressor
from silva.callbacks import CallbackEnv, EarlyStopException
from silva.dask import _data
from silva.dask._grower import Cluster, TreeGrower, WorkerLostError
from silva.engine import losses
from silva.engine.binning import Binner

#: Rows sampled for the bin edges when ``bin_subsample`` is left at its Dask default.
DEFAULT_BIN_SAMPLE = 200_000

_DASK_PARAMS = ("client", "on_worker_loss", "histogram_reduction")
#: Lost workers a fit recovers from before it gives up.
MAX_RECOVERIES = 8
_MEAN_LOSSES = {"squared_error", "poisson", "gamma", "tweedie", "log_loss", "exponential"}


class LocalTwin:
    """What a Dask estimator shares with the single-machine class it mirrors
    (``_local_class``): its parameters are the local class's plus ``_dask_params``,
    and a fitted one turns into the local estimator (:meth:`to_local`), which is what
    it saves."""

    _local_class = None
    _dask_params = ()

    @classmethod
    def _get_param_names(cls):
        return sorted(set(cls._local_class._get_param_names()) | set(cls._dask_params))

    def _local_params(self):
        return {k: v for k, v in self.get_params(deep=False).items()
                if k not in self._dask_params}

    def to_local(self):
        """The fitted model as the single-machine estimator (same parameters, same
        trees): it predicts, saves (:mod:`silva.persistence`) and prints like one."""
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self, "estimators_")
        local = self._local_class(**self._local_params())
        params = set(self._get_param_names())
        for name, value in vars(self).items():
            if name not in params and name != "dask_fit_":
                setattr(local, name, value)
        return local

    def save(self, path, *, allow_pickle=False, metadata=None):
        """Save the fitted model as the single-machine estimator it is (``to_local()``):
        the file loads without dask, and holds no client."""
        return self.to_local().save(path, allow_pickle=allow_pickle, metadata=metadata)


class _DaskBoosting(LocalTwin):
    """The Dask fit shared by both estimators; mixed in before the local class."""

    _dask_params = _DASK_PARAMS

    def __init__(self, *, client=None, on_worker_loss="recover",
                 histogram_reduction="client", bin_subsample=DEFAULT_BIN_SAMPLE,
                 **params):
        super().__init__(bin_subsample=bin_subsample, **params)
        self.client = client
        self.on_worker_loss = on_worker_loss
        self.histogram_reduction = histogram_reduction

    def fit(self, X, y, sample_weight=None, *, eval_set=None, eval_sample_weight=None,
            callbacks=None):
        """Boost trees on the dask collections (X, y) and, optionally, ``sample_weight``
        (partitioned like X); NaN in X means missing."""
        return self._dask_fit(X, y, sample_weight, eval_set, eval_sample_weight, callbacks)

    # ------------------------------------------------------------------- checks
    def _refuse_unsupported(self, eval_set):
        owner = type(self).__name__
        if not callable(self.loss):  # a wrong name is the single-machine ValueError
            loss = losses.make_loss(self.loss, n_classes=2 if self._is_classifier else None)
            metrics.metric_name(self.scoring, loss)  # before any data is read
        _input.check_option(self.on_worker_loss, "on_worker_loss", {"recover", "raise"})
        _input.check_option(self.histogram_reduction, "histogram_reduction",
                            {"client", "workers"})
        problems = []
        if self.early_stopping_rounds is not None and eval_set is None:
            problems.append("early stopping on a validation_fraction of the training "
                            "data (pass an eval_set)")
        if self.subsample != 1.0 or self.sampling != "uniform":
            problems.append("subsample < 1 and sampling='goss'")
        if self.warm_start:
            problems.append("warm_start=True")
        names = (losses.CLASSIFICATION_LOSSES if self._is_classifier
                 else losses.REGRESSION_LOSSES)
        if callable(self.loss) or (self.loss in names and self.loss not in _MEAN_LOSSES):
            supported = sorted(set(names) & _MEAN_LOSSES)
            problems.append(f"loss={self.loss!r} (supported: {supported})")
        if problems:
            raise NotImplementedError(f"{owner} does not support {', '.join(problems)} "
                                      "yet; see docs/distributed.md.")

    # ---------------------------------------------------------------------- fit
    def _dask_fit(self, X, y, sample_weight, eval_set, eval_sample_weight, callbacks):
        from dask import delayed
        from distributed import get_client

        from silva.dask import _shard

        started = time.perf_counter()
        owner = type(self).__name__
        self._refuse_unsupported(eval_set)
        client = self.client if self.client is not None else get_client()
        X_parts, y_parts, w_parts, X_sample = _data.row_partitions(X, y, owner,
                                                                   sample_weight)
        # The template: the single-machine estimator, whose own checks validate the
        # parameters here and each partition's columns on the workers.
        template = self._local_class(**self._local_params())
        template._prepare_X(X_sample, reset=True)
        n_features = template.n_features_in_
        checked = template._check_params(n_features)
        classifier = self._is_classifier
        parts = list(zip(X_parts, y_parts, w_parts, strict=True))

        # Pass 1: check every partition, count its rows, summarise its y.
        summaries = _data.gather_each(client, [
            delayed(_shard.describe_partition, pure=True)(template, i, *part, classifier)
            for i, part in enumerate(parts)])
        labelled = summaries  # classes come from every row, zero weights included
        summaries = [s for s in summaries if s.n_rows > 0]  # empty ones are skipped
        n_total = int(sum(s.n_rows for s in summaries))
        if n_total == 0:
            raise ValueError(f"{owner}: X has no rows.")
        for name in ("n_features_in_", "feature_names_in_", "is_categorical_", "_encoder"):
            if hasattr(template, name):
                setattr(self, name, getattr(template, name))
        loss, classes, init_raw = self._loss_from(summaries, labelled)
        # Evaluation sets stay on the client (they are meant to be small): the training
        # metric would need every row's raw prediction there, so it is not recorded.
        config = template._loop_config(checked, loss, eval_set, n_features)._replace(
            record_training=False)
        if classes is not None:
            template.classes_ = classes
        evals = template._eval_sets(_in_memory(eval_set),
                                    _in_memory(eval_sample_weight))

        # Pass 2: the bin edges, once, from a sample of the rows.
        rng = check_random_state(self.random_state)
        n_rows = [s.n_rows for s in summaries]
        sample_size = n_total if self.bin_subsample is None else int(self.bin_subsample)
        if sample_size >= n_total:
            wanted, seeds = n_rows, [0] * len(n_rows)
        else:
            wanted = _proportional_counts(n_rows, sample_size)
            seeds = [int(s) for s in rng.randint(2**31 - 1, size=len(n_rows))]
        samples = _data.gather_each(client, [
            delayed(_shard.sample_partition, pure=True)(
                template, s.index, *parts[s.index], classifier, int(w), seed)
            for s, w, seed in zip(summaries, wanted, seeds, strict=True) if w > 0])
        binner = self._fit_binner(samples, summaries)
        del samples

        # Pass 3: each partition binned where it is computed; one shard per worker.
        use_hessian = config.boosting == "newton"
        # As the single-machine loop: two lanes need unit hessians and unit weights.
        two_lanes = (bool(loss.unit_hessian or not use_hessian)
                     and all(s.unit_weights for s in summaries))
        setup_args = (binner.missing_bin_, loss, init_raw, use_hessian, two_lanes)

        rows_of = {s.index: s.n_rows for s in summaries}

        def start_shards(indices, balance=False):
            """Bin partitions ``indices`` and start a shard on every worker holding some:
            ``(shards, addresses, actor futures, partitions per shard)``; ``balance``:
            first even out the rows per worker (not in a recovery, whose shards go to
            workers that already hold one)."""
            by_worker = _data.keep_by_worker(client, [
                delayed(_shard.bin_partition, pure=True)(
                    template, i, *parts[i], classifier, binner, classes)
                for i in indices], indices)
            if balance:
                _data.balance_by_rows(client, by_worker, rows_of)
            addresses = sorted(by_worker)
            futures = [client.submit(_shard.Shard, *[f for _, f in by_worker[a]],
                                     actor=True, workers=[a], allow_other_workers=False,
                                     pure=False) for a in addresses]
            shards = [f.result() for f in futures]
            # The shards hold copies: the binned partitions go before the shards set up
            # (their memory would otherwise add to the set-up's peak).
            _data.release_and_wait(client, [f for held in by_worker.values()
                                            for _, f in held])
            return (shards, addresses, futures,
                    [[i for i, _ in by_worker[a]] for a in addresses])

        def recover(cluster, lost_address, history, n_before_iteration, iteration):
            """Replace the shard of a lost worker: its partitions binned again on the
            workers left, the new shards brought to the others' state."""
            lost = cluster.drop(lost_address)
            if not cluster.shards:
                raise WorkerLostError(f"silva.dask: every worker holding the data was lost "
                                      f"(last {lost_address}).", lost_address)
            shards, addresses, futures, partitions = start_shards(lost)
            replacement = Cluster(client, shards, addresses, futures, partitions)
            replacement.call("setup", *setup_args, what="recovery: setting up")
            replacement.call("restore", history, n_before_iteration, iteration,
                             what="recovery: replaying the trees")
            cluster.add(shards, addresses, futures, partitions)
            cluster.recoveries += 1

        cluster = Cluster(client, *start_shards([s.index for s in summaries], balance=True))
        try:
            rows_per_worker = cluster.call("setup", *setup_args, what="setting up")
            held = cluster.call("state_bytes", what="measuring the shards")
            bytes_per_row = sum(b for b, _ in held) / max(1, sum(n for _, n in held))
            loaded = time.perf_counter()
            waited_loading = cluster.wait_seconds
            trees, split_gains, record = self._boost(cluster, binner, loss, config, rng,
                                                     evals, init_raw, callbacks, recover)
        finally:
            cluster.release()
        self._binner = binner
        self.init_raw_ = init_raw
        self._n_trees_per_iteration = loss.n_outputs
        self.n_trees_per_iteration_ = loss.n_outputs
        self.estimators_ = trees
        self._split_gains = split_gains
        self.evals_result_ = record["evals_result"]
        self.best_iteration_ = record["best_iteration"]
        self.n_iter_ = len(trees)
        self._packed = _boosting_loop.pack(trees, loss.n_outputs)
        self._timings = {}
        finished = time.perf_counter()
        self.dask_fit_ = {
            "n_workers": len(rows_per_worker), "n_rows": n_total,
            "rows_per_worker": rows_per_worker, "bin_sample_rows": int(sum(wanted)),
            "shard_bytes_per_row": bytes_per_row,
            "round_trips": cluster.round_trips, "recoveries": cluster.recoveries,
            "histogram_reduction": self.histogram_reduction,
            # "client" when a recovery left two shards on one worker (see _boost).
            "histogram_reduction_at_end": record["reduction_at_end"],
            "histogram_bytes": cluster.histogram_bytes,
            "bytes_between_workers": cluster.bytes_between_workers,
            "seconds_loading": loaded - started, "seconds_boosting": finished - loaded,
            "seconds_boosting_waiting_on_workers": cluster.wait_seconds - waited_loading,
        }
        return self

    def _loss_from(self, summaries, labelled):
        """``(loss, classes, init_raw)`` from the partitions' summaries: the classes of
        the whole y, the loss's domain check and its initial constant (class counts, or
        the mean of y: the only statistics the supported losses' constants need)."""
        owner = type(self).__name__
        weight_total = sum(s.weight_sum for s in summaries)
        _input.check_sample_weight(np.array([weight_total]), 1)  # the total's bounds
        if self._is_classifier:
            classes, _ = _input.classification_target(
                np.concatenate([s.labels for s in labelled]))
            if len(classes) < 2:
                raise ValueError(f"{owner} needs samples of at least 2 classes; y has only "
                                 f"one class, {classes[0]!r}.")
            self.classes_ = classes
            self.n_classes_ = len(classes)
            loss = losses.make_loss(self.loss, n_classes=len(classes))
            counts = np.zeros(len(classes))
            for s in summaries:
                np.add.at(counts, np.searchsorted(classes, s.labels), s.label_counts)
            init_raw = loss.init_raw(np.arange(len(classes), dtype=np.float64), counts)
        else:
            classes = None
            loss = losses.make_loss(self.loss, n_classes=None, alpha=self.alpha,
                                    power=self.power)
            smallest = min(s.y_min for s in summaries)
            largest = max(s.y_max for s in summaries)
            loss.check_y(np.array([smallest, largest]), np.ones(2))
            init_raw = loss.init_raw(
                np.array([sum(s.y_sum for s in summaries) / weight_total]), None)
        self._loss = loss
        return loss, classes, init_raw

    def _fit_binner(self, samples, summaries):
        n_edge_rows = sum(sample.shape[0] for sample in samples)
        return fit_binner(self._numeric_bins(n_edge_rows), self.is_categorical_, samples,
                          summaries)

    def _boost(self, cluster, binner, loss, config, rng, evals, init_raw, callbacks,
               recover):
        """The iterations, as :func:`silva._boosting_loop.boost` runs them, with the
        trees grown over the shards; evaluation sets (in memory) are scored after each
        iteration and watched by early stopping. Returns ``(trees, split_gains,
        record)``, ``record`` holding ``evals_result`` and ``best_iteration``."""
        n_features = self.n_features_in_
        n_outputs = loss.n_outputs
        grower = TreeGrower(cluster, binner, self.is_categorical_, config.split_params,
                            config.max_depth, config.max_leaf_nodes, config.depthwise,
                            max(1, int(round(config.colsample_bynode * max(1, int(round(
                                config.colsample_bytree * n_features)))))),
                            config.monotonic, config.interaction_sets,
                            reduce_on_workers=self.histogram_reduction == "workers")
        if grower.reduce_on_workers:
            cluster.connect(grower.owner_search())
        n_bytree = max(1, int(round(config.colsample_bytree * n_features)))
        tree_categories = np.where(self.is_categorical_, binner.n_value_bins_, 0)
        trees, split_gains = [], []
        end = int(config.n_estimators)
        evals = [e._replace(raw=np.tile(init_raw, (e.X.shape[0], 1))) for e in evals]
        evals_result = {}
        if config.metric is not None:
            for e in evals:
                evals_result.setdefault(e.name, {config.metric: []})
        stopper, every_callback = _boosting_loop.iteration_callbacks(config, callbacks)
        best_iteration = None
        history = []  # (column, table, bitsets, values) per tree, to replay on recovery
        for iteration in range(end):
            # The single-machine loop's draws, in its order (see _boosting_loop.boost).
            draws = _boosting_loop.feature_draws(n_outputs, n_features, n_bytree, rng)
            iteration_trees = []
            for k, (feature_mask, seed) in enumerate(draws):
                cluster.current_tree = iteration * n_outputs + k
                while True:
                    try:
                        table, bitsets, values = self._grow_tree(
                            grower, config, k, iteration, feature_mask, seed)
                        break
                    except WorkerLostError as lost:
                        if self.on_worker_loss != "recover":
                            raise
                        if cluster.recoveries >= MAX_RECOVERIES:
                            raise WorkerLostError(
                                f"{lost} The fit gave up after recovering from "
                                f"{cluster.recoveries} lost workers (a worker that "
                                "runs out of memory, and whose rows then overload the "
                                "others, is lost again and again).", lost.address
                            ) from lost
                        # The workers left have applied every call up to the failed
                        # one; the new shards replay the trees so far. Then the tree
                        # grows again from its root.
                        grower.deferred_splits = []
                        grower.leaf_update = None
                        recover(cluster, lost.address, history, iteration * n_outputs,
                                iteration)
                        if grower.reduce_on_workers:
                            if len(set(cluster.addresses)) < len(cluster.addresses):
                                # The lost rows went to a worker that has a shard: two
                                # shards then share the worker's one actor thread, and
                                # one would wait forever for the other's histograms.
                                # The client sums them instead (the same sums, in the
                                # same shard order).
                                grower.reduce_on_workers = False
                                cluster.reducing = False
                            else:
                                cluster.connect(grower.owner_search())
                is_leaf = table["left"] == -1
                grower.finish_tree(k, values)
                history.append((k, table, bitsets, values))
                tree = _boosting_loop.make_tree(table, bitsets, values, n_features,
                                                tree_categories)
                iteration_trees.append(tree)
                split_gains.append(np.where(is_leaf, 0.0, table["gain"]))
                for e in evals:
                    e.raw[:, k] += values[tree.apply(e.X)]
            trees.append(iteration_trees)
            results = _boosting_loop.evaluate_iteration(config, loss, None, None, None, evals)
            for data_name, metric_name, value, _ in results:
                evals_result.setdefault(data_name, {}).setdefault(metric_name,
                                                                  []).append(value)
            env = CallbackEnv(self, iteration, 0, end, results)
            try:
                for callback in every_callback:
                    callback(env)
            except EarlyStopException as stop:
                best_iteration = int(stop.best_iteration)
                break
        if stopper is not None and best_iteration is None:
            best_iteration = stopper.best_iteration
        if best_iteration is not None:
            del trees[best_iteration + 1:]
            del split_gains[(best_iteration + 1) * n_outputs:]
        return trees, split_gains, {
            "evals_result": evals_result, "best_iteration": best_iteration,
            "reduction_at_end": "workers" if grower.reduce_on_workers else "client"}

    @staticmethod
    def _grow_tree(grower, config, column, iteration, feature_mask, seed):
        """One tree: ``(table, bitsets, values)``, the values times the learning rate."""
        table, bitsets = grower.grow(column, iteration if column == 0 else None,
                                     feature_mask, seed)
        values = table["value"].copy()
        if config.boosting == "gradient":
            # Friedman's Newton step per leaf on the true hessian (the tree was grown
            # with the weight as its hessian): leaf sums from the shards.
            leaves = np.flatnonzero(table["left"] == -1)
            sums = grower.leaf_gradient_sums(column, leaves)
            for leaf, leaf_sums in zip(leaves, sums, strict=True):
                values[leaf] = _boosting_loop.newton_value(
                    leaf_sums, config.split_params, table["lower"][leaf],
                    table["upper"][leaf])
        values *= config.learning_rate
        return table, bitsets, values

    # ------------------------------------------------------------------ predict
    def _dask_or_local(self, method, X, **kwargs):
        if _data.is_dask_collection(X):
            from silva.dask import prediction
            return getattr(prediction, method)(self.to_local(), X)
        return getattr(super(), method)(X, **kwargs)


def fit_binner(max_bins, is_categorical, samples, summaries):
    """The fit's :class:`~silva.engine.binning.Binner`, placed on the partitions'
    ``samples`` (arrays of rows) with their ``summaries``' largest category codes."""
    X_edges = np.concatenate(samples)
    if is_categorical.any():
        # The binner counts a categorical feature's bins from the rows it sees: one
        # more row with each one's largest code over all rows (NaN elsewhere, which
        # places no numeric edge) makes the count that of the whole data.
        largest = np.max([s.largest_codes for s in summaries], axis=0)
        extra = np.full((1, X_edges.shape[1]), np.nan)
        extra[0, is_categorical] = np.where(largest >= 0, largest, np.nan)
        X_edges = np.concatenate([X_edges, extra])
    return Binner(max_bins, is_categorical).fit(X_edges)


def proportional_counts(n_rows, total):
    """``total`` rows split over partitions in proportion to ``n_rows``."""
    return _proportional_counts(n_rows, total)


def _in_memory(value):
    """``eval_set`` (or its weights) with any dask collection computed: evaluation sets
    are scored on the client."""
    if value is None:
        return None
    if _data.is_dask_collection(value):
        return value.compute()
    if isinstance(value, tuple) and len(value) == 2 and not any(
            isinstance(v, tuple | list) for v in value):
        value = [value]
    return [tuple(_in_memory(v) for v in item) if isinstance(item, tuple | list)
            else _in_memory(item) for item in value]


def _proportional_counts(n_rows, total):
    """``total`` split over shards in proportion to ``n_rows`` (largest remainders)."""
    n_rows = np.asarray(n_rows, dtype=np.float64)
    exact = total * n_rows / n_rows.sum()
    counts = np.floor(exact).astype(np.int64)
    short = int(total - counts.sum())
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return np.minimum(counts, n_rows.astype(np.int64))


class DaskGradientBoostingRegressor(_DaskBoosting, GradientBoostingRegressor):
    """:class:`silva.GradientBoostingRegressor` trained on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client or None, default=None
        The cluster to train on; None: ``distributed.get_client()`` (the current one).
    on_worker_loss : {"recover", "raise"}, default="recover"
        When a worker holding rows is lost during a fit: bin its partitions again on
        the workers left, replay the trees so far on them and grow the current tree
        again (the model is the one an undisturbed fit grows), or raise
        :class:`silva.dask.WorkerLostError` naming the worker.
    histogram_reduction : {"client", "workers"}, default="client"
        Where the workers' histograms are summed and the split is searched. "client":
        each worker sends its histograms to the client, which sums them and searches.
        "workers": a reduce-scatter by feature ranges, as LightGBM's data-parallel
        learner (Meng et al. 2016): worker k owns a contiguous range of the features,
        fetches every other worker's part of it, sums the parts in worker order (the
        same sums as the client's) and searches its features with the engine's split
        finder; only each owner's best candidate per node reaches the client. The
        same trees either way; "workers" keeps the client's intake per round trip
        independent of the number of workers (see docs/distributed.md).
    bin_subsample : int or None, default=200000
        Rows sampled (from all partitions, in proportion to their size) to place the bin
        edges; None uses every row (all rows travel to the client once: only for small
        data). With no more rows than this, every row is used.
    **params
        Every other parameter of :class:`silva.GradientBoostingRegressor`.

    Examples
    --------
    >>> from distributed import Client, LocalCluster          # doctest: +SKIP
    >>> import dask.array as da                              # doctest: +SKIP
    >>> with LocalCluster(n_workers=2) as cluster, Client(cluster) as client:
    ...     X = da.random.random((100_000, 10), chunks=25_000)
    ...     y = X[:, 0] * 2 + X[:, 1]
    ...     model = DaskGradientBoostingRegressor(n_estimators=10).fit(X, y)
    ...     local = model.to_local()                          # doctest: +SKIP
    """

    _local_class = GradientBoostingRegressor

    def predict(self, X, iteration_range=None):
        """Predictions; lazy (a dask array or Series) for a dask collection X."""
        return self._dask_or_local("predict", X, iteration_range=iteration_range)


class DaskGradientBoostingClassifier(_DaskBoosting, GradientBoostingClassifier):
    """:class:`silva.GradientBoostingClassifier` trained on a Dask cluster (binary and
    multiclass log loss, exponential loss).

    Parameters
    ----------
    client : distributed.Client or None, default=None
        The cluster to train on; None: ``distributed.get_client()``.
    on_worker_loss : {"recover", "raise"}, default="recover"
        As for :class:`DaskGradientBoostingRegressor`.
    histogram_reduction : {"client", "workers"}, default="client"
        As for :class:`DaskGradientBoostingRegressor`.
    bin_subsample : int or None, default=200000
        As for :class:`DaskGradientBoostingRegressor`.
    **params
        Every other parameter of :class:`silva.GradientBoostingClassifier`.

    The classes are those of the whole y (a class may be missing from some partitions).
    """

    _local_class = GradientBoostingClassifier

    def predict(self, X, iteration_range=None):
        """Most probable class; lazy for a dask collection X."""
        return self._dask_or_local("predict", X, iteration_range=iteration_range)

    def predict_proba(self, X, iteration_range=None):
        """Class probabilities; lazy for a dask collection X."""
        return self._dask_or_local("predict_proba", X, iteration_range=iteration_range)
