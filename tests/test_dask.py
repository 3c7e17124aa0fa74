"""silva.dask: distributed boosting on a LocalCluster, and prediction on dask collections.

The reference is the single-machine estimator on the concatenated data: with the same bin
edges (every row places them, since the data have fewer rows than ``bin_subsample``), a
fit over two workers must grow the same trees (structure, features, thresholds), with
leaf values equal to 1e-9 relative (the shards sum their rows in another order).
Clusters are threads (``processes=False``) but for one test with worker processes,
which also kills a worker in the middle of a fit.
"""

import os
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")

import silva  # noqa: E402
import silva.dask  # noqa: E402
from silva.dask import (  # noqa: E402
    DaskGradientBoostingClassifier,
    DaskGradientBoostingRegressor,
    WorkerLostError,
)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as dask_client:
        yield dask_client


def _data(n=1800, n_features=6, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.rand(n, n_features) < 0.05] = np.nan  # missing values take a learned side
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    y_binary = (signal + 0.5 * rng.normal(size=n) > 0.5).astype(int)
    y_regression = 2.0 * signal + rng.normal(size=n)
    return X, y_binary, y_regression


# Uneven row partitions, so that the shards' row blocks differ from the single machine's.
CHUNKS = (500, 350, 600, 350)


def _assert_same_trees(dask_model, local_model):
    assert dask_model.n_iter_ == local_model.n_iter_
    np.testing.assert_allclose(dask_model.init_raw_, local_model.init_raw_, rtol=1e-12)
    np.testing.assert_array_equal(dask_model._binner.bin_thresholds_,
                                  local_model._binner.bin_thresholds_)
    for it_d, it_l in zip(dask_model.estimators_, local_model.estimators_, strict=True):
        for a, b in zip(it_d, it_l, strict=True):
            np.testing.assert_array_equal(a.children_left, b.children_left)
            np.testing.assert_array_equal(a.children_right, b.children_right)
            np.testing.assert_array_equal(a.feature, b.feature)
            np.testing.assert_array_equal(a.threshold, b.threshold)
            np.testing.assert_array_equal(a.missing_go_to_left, b.missing_go_to_left)
            np.testing.assert_array_equal(a.n_node_samples, b.n_node_samples)
            leaf = a.children_left == -1
            np.testing.assert_allclose(a.value[leaf], b.value[leaf], rtol=1e-9,
                                       atol=1e-12 * np.abs(b.value).max())


@pytest.mark.parametrize("reduction", ["client", "workers"])
@pytest.mark.parametrize("growth", ["leafwise", "depthwise"])
@pytest.mark.parametrize("task", ["binary", "regression"])
def test_same_trees_as_single_machine(client, growth, task, reduction):
    X, y_binary, y_regression = _data()
    y = y_binary if task == "binary" else y_regression
    params = dict(n_estimators=6, max_leaf_nodes=12, growth=growth, random_state=0,
                  max_depth=4 if growth == "depthwise" else None, l2_regularization=0.5)
    dask_class, local_class = (
        (DaskGradientBoostingClassifier, silva.GradientBoostingClassifier)
        if task == "binary" else
        (DaskGradientBoostingRegressor, silva.GradientBoostingRegressor))
    model = dask_class(client=client, histogram_reduction=reduction, **params).fit(
        da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=(CHUNKS,)))
    local = local_class(**params).fit(X, y)
    _assert_same_trees(model, local)
    info = model.dask_fit_
    assert info["n_workers"] == 2 and info["n_rows"] == len(y)
    # The rows are evened out over the workers: partitions move while a move lowers the
    # larger load, so the loads end less than a partition apart.
    rows = info["rows_per_worker"]
    assert sum(rows) == len(y) and max(rows) - min(rows) <= max(CHUNKS)
    # Round trips per tree: one to start it, then at most one per split (leaf-wise) or
    # per level (depthwise); the count is what docs/distributed.md states (the
    # reduction between the workers adds one per fit, to connect the shards).
    n_trees = model.n_iter_
    per_tree = 11 if growth == "leafwise" else 4
    assert info["round_trips"] <= 5 + n_trees * (1 + per_tree)
    # Histogram volume: 6 features x 256 bins x 2 channels (unit hessians for squared
    # error; the log loss's are not: 4) x 8 bytes per histogram a shard builds.
    channels = 2 if task == "regression" else 4
    per_histogram = 6 * (model._binner.missing_bin_ + 1) * channels * 8
    if reduction == "client":
        assert info["bytes_between_workers"] == 0
        assert info["histogram_bytes"] % (2 * per_histogram) == 0
    else:
        # Each shard receives the other's half of every histogram (3 of 6 features),
        # and feature 0 again at the root; the client only the owners' candidates.
        roots = n_trees * per_histogram // 6
        moved = info["bytes_between_workers"] - roots
        assert moved > 0 and moved % per_histogram == 0
        assert info["histogram_bytes"] < moved / 20
    np.testing.assert_allclose(model.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


def test_poisson_regression_sends_four_channels(client):
    """Poisson's hessian is not 1, so every channel travels; same trees still."""
    X, _, y_regression = _data(seed=2)
    y = np.exp(0.3 * y_regression).round()
    params = dict(loss="poisson", n_estimators=4, max_leaf_nodes=10, random_state=0)
    model = DaskGradientBoostingRegressor(client=client, **params).fit(
        da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=(CHUNKS,)))
    _assert_same_trees(model, silva.GradientBoostingRegressor(**params).fit(X, y))
    # Per round trip two shards send one histogram each: 6 features x 256 bins x 4
    # channels x 8 bytes (the unit-hessian fits send 2 channels).
    per_histogram = 6 * (model._binner.missing_bin_ + 1) * 4 * 8
    assert model.dask_fit_["histogram_bytes"] % (2 * per_histogram) == 0


@pytest.mark.parametrize("task", ["binary", "regression"])
def test_sample_weights(client, task):
    """Weights partitioned like X, zeros included (those rows take no part): the same
    trees as the single machine with the same weights."""
    X, y_binary, y_regression = _data(seed=5)
    y = y_binary if task == "binary" else y_regression
    rng = np.random.RandomState(5)
    weight = rng.uniform(0.2, 3.0, size=len(y))
    weight[rng.rand(len(y)) < 0.1] = 0.0
    params = dict(n_estimators=4, max_leaf_nodes=10, min_child_weight=0.5)
    dask_class, local_class = (
        (DaskGradientBoostingClassifier, silva.GradientBoostingClassifier)
        if task == "binary" else
        (DaskGradientBoostingRegressor, silva.GradientBoostingRegressor))
    model = dask_class(client=client, **params).fit(
        da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=(CHUNKS,)),
        sample_weight=da.from_array(weight, chunks=(CHUNKS,)))
    local = local_class(**params).fit(X, y, sample_weight=weight)
    _assert_same_trees(model, local)
    with pytest.raises(ValueError, match="3 row partitions and sample_weight has 2"):
        dask_class(client=client, **params).fit(
            da.from_array(X, chunks=(600, -1)), da.from_array(y, chunks=600),
            sample_weight=da.from_array(weight, chunks=900))
    negative = weight.copy()
    negative[1000] = -1.0
    with pytest.raises(ValueError, match="sample_weight partition 1"):
        dask_class(client=client, **params).fit(
            da.from_array(X, chunks=(600, -1)), da.from_array(y, chunks=600),
            sample_weight=da.from_array(negative, chunks=600))


def test_friedman_gradient_boosting(client):
    """boosting="gradient": trees on the weight as hessian, then a Newton step per leaf
    from the shards' leaf sums."""
    X, y, _ = _data(seed=6)
    params = dict(boosting="gradient", n_estimators=4, max_leaf_nodes=8)
    model = DaskGradientBoostingClassifier(client=client, **params).fit(
        da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=(CHUNKS,)))
    _assert_same_trees(model, silva.GradientBoostingClassifier(**params).fit(X, y))


def test_eval_set_and_early_stopping(client):
    """An evaluation set (here a dask array, computed to the client) scored after every
    iteration, and early stopping on it: the same record and best iteration as the
    single machine."""
    X, y, _ = _data(n=2400, seed=7)
    X_train, y_train, X_valid, y_valid = X[:1800], y[:1800], X[1800:], y[1800:]
    params = dict(n_estimators=60, max_leaf_nodes=16, learning_rate=0.3,
                  early_stopping_rounds=3, scoring="auc", min_samples_leaf=5)
    model = DaskGradientBoostingClassifier(client=client, **params).fit(
        da.from_array(X_train, chunks=((500, 700, 600), -1)),
        da.from_array(y_train, chunks=((500, 700, 600),)),
        eval_set=(da.from_array(X_valid, chunks=300), da.from_array(y_valid, chunks=300)))
    local = silva.GradientBoostingClassifier(**params).fit(
        X_train, y_train, eval_set=(X_valid, y_valid))
    assert local.best_iteration_ is not None and local.n_iter_ < 60
    assert model.best_iteration_ == local.best_iteration_
    _assert_same_trees(model, local)
    np.testing.assert_allclose(model.evals_result_["valid_0"]["auc"],
                               local.evals_result_["valid_0"]["auc"], rtol=1e-12)
    with pytest.raises(NotImplementedError, match="pass an eval_set"):
        DaskGradientBoostingClassifier(client=client, early_stopping_rounds=3).fit(
            da.from_array(X_train, chunks=600), da.from_array(y_train, chunks=600))


def test_multiclass_and_feature_draws(client):
    """Three classes (one tree per class), per-node feature draws and a monotonic
    constraint: the driver replays the single-machine random draws and bounds."""
    X, _, y_regression = _data(seed=1)
    y = np.digitize(y_regression, np.quantile(y_regression, [0.33, 0.66]))
    params = dict(n_estimators=3, max_leaf_nodes=8, colsample_bytree=0.8,
                  colsample_bynode=0.6, monotonic_constraints=[1, 0, 0, 0, 0, 0],
                  random_state=3)
    model = DaskGradientBoostingClassifier(client=client, **params).fit(
        da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=(CHUNKS,)))
    local = silva.GradientBoostingClassifier(**params).fit(X, y)
    _assert_same_trees(model, local)
    np.testing.assert_array_equal(model.classes_, local.classes_)


def test_to_local_predicts_saves_and_prints(client, tmp_path):
    X, y, _ = _data()
    model = DaskGradientBoostingClassifier(client=client, n_estimators=3,
                                           max_leaf_nodes=6).fit(
        da.from_array(X, chunks=600), da.from_array(y, chunks=600))
    local = model.to_local()
    assert type(local) is silva.GradientBoostingClassifier
    assert "Dask" not in repr(local) and not hasattr(local, "dask_fit_")
    np.testing.assert_array_equal(local.predict_proba(X), model.predict_proba(X))
    path = tmp_path / "model.silva"
    local.save(path)
    loaded = silva.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), local.predict_proba(X))
    assert "feature" in silva.export_text(loaded.estimators_[0][0])
    model.save(tmp_path / "direct.silva")  # the Dask model saves as its local self
    assert type(silva.load(tmp_path / "direct.silva")) is silva.GradientBoostingClassifier


def test_dataframe_input_and_lazy_prediction(client):
    X, _, y = _data()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    dX = dd.from_pandas(frame, npartitions=3)
    dy = dd.from_pandas(pd.Series(y), npartitions=3)
    # Divisions are not needed (partition i of y goes with partition i of X).
    dX, dy = dX.clear_divisions(), dy.clear_divisions()
    assert not dX.known_divisions
    model = DaskGradientBoostingRegressor(client=client, n_estimators=3,
                                          max_leaf_nodes=6).fit(dX, dy)
    assert list(model.feature_names_in_) == list(frame.columns)
    local = silva.GradientBoostingRegressor(n_estimators=3, max_leaf_nodes=6).fit(frame, y)
    lazy = model.predict(dX)
    assert isinstance(lazy, dd.Series)
    np.testing.assert_allclose(lazy.compute().to_numpy(), local.predict(frame), rtol=1e-9,
                               atol=1e-12)


def _estimators():
    classifiers = [silva.DecisionTreeClassifier(max_depth=4),
                   silva.RandomForestClassifier(n_estimators=3, random_state=0),
                   silva.ExtraTreesClassifier(n_estimators=3, random_state=0),
                   silva.BaggingClassifier(n_estimators=3, random_state=0),
                   silva.AdaBoostClassifier(n_estimators=3, random_state=0),
                   silva.GradientBoostingClassifier(n_estimators=3),
                   silva.C45Classifier(max_depth=3), silva.ID3Classifier(max_depth=3),
                   silva.VotingClassifier([("a", silva.DecisionTreeClassifier(max_depth=2)),
                                           ("b", silva.DecisionTreeClassifier(max_depth=4))],
                                          voting="soft"),
                   silva.StackingClassifier([("a", silva.DecisionTreeClassifier(max_depth=2)),
                                             ("b", silva.DecisionTreeClassifier(max_depth=4))],
                                            cv=3)]
    regressors = [silva.DecisionTreeRegressor(max_depth=4),
                  silva.RandomForestRegressor(n_estimators=3, random_state=0),
                  silva.ExtraTreesRegressor(n_estimators=3, random_state=0),
                  silva.BaggingRegressor(n_estimators=3, random_state=0),
                  silva.AdaBoostRegressor(n_estimators=3, random_state=0),
                  silva.GradientBoostingRegressor(n_estimators=3),
                  silva.VotingRegressor([("a", silva.DecisionTreeRegressor(max_depth=2)),
                                         ("b", silva.DecisionTreeRegressor(max_depth=4))]),
                  silva.StackingRegressor([("a", silva.DecisionTreeRegressor(max_depth=2)),
                                           ("b", silva.DecisionTreeRegressor(max_depth=4))],
                                          cv=3)]
    return classifiers, regressors


def test_prediction_of_every_estimator_on_dask_collections(client):
    """silva.dask.predict / predict_proba on single-machine models: lazy, and equal to
    the model's own prediction on the computed data, for arrays and data frames."""
    import silva.dask
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 4))
    y_class = (X[:, 0] + X[:, 1] > 0).astype(int)
    y_reg = X[:, 0] * 3 + rng.normal(size=300)
    dX = da.from_array(X, chunks=110)
    frame = pd.DataFrame(X, columns=list("abcd"))
    dframe = dd.from_pandas(frame, npartitions=3)
    classifiers, regressors = _estimators()
    for model in classifiers + regressors:
        is_classifier = model in classifiers
        if isinstance(model, silva.ID3Classifier):
            model.fit(np.round(X), y_class)  # ID3 splits on every value of a feature
            data, lazy_data = np.round(X), da.from_array(np.round(X), chunks=110)
        else:
            model.fit(X, y_class if is_classifier else y_reg)
            data, lazy_data = X, dX
        lazy = silva.dask.predict(model, lazy_data)
        assert isinstance(lazy, da.Array), type(model).__name__
        np.testing.assert_array_equal(lazy.compute(), model.predict(data),
                                      err_msg=type(model).__name__)
        if is_classifier:
            proba = silva.dask.predict_proba(model, lazy_data)
            assert proba.shape[1] == 2
            np.testing.assert_array_equal(proba.compute(), model.predict_proba(data),
                                          err_msg=type(model).__name__)
    # Data frames: a Series of predictions, a frame of probabilities with class columns.
    model = silva.GradientBoostingClassifier(n_estimators=3).fit(frame, y_class)
    series = silva.dask.predict(model, dframe)
    assert isinstance(series, dd.Series)
    np.testing.assert_array_equal(series.compute().to_numpy(), model.predict(frame))
    proba = silva.dask.predict_proba(model, dframe).compute()
    assert list(proba.columns) == [0, 1]
    np.testing.assert_array_equal(proba.to_numpy(), model.predict_proba(frame))
    with pytest.raises(TypeError, match="dask array or DataFrame"):
        silva.dask.predict(model, X)


# ---------------------------------------------------------------- bad input
def test_partitions_of_x_and_y_must_align(client):
    X, y, _ = _data(n=600)
    dX = da.from_array(X, chunks=(200, -1))
    model = DaskGradientBoostingClassifier(client=client, n_estimators=2)
    with pytest.raises(ValueError, match="3 row partitions and y has 2"):
        model.fit(dX, da.from_array(y, chunks=300))
    with pytest.raises(ValueError, match="partition 0 of X has 200 rows and partition 0 "
                                         "of y has 100"):
        model.fit(dX, da.from_array(y, chunks=((100, 300, 200),)))
    # Unknown chunk sizes are taken when the partitions load; a mismatch is named then.
    unknown_X = dX[dX[:, 0] == dX[:, 0]]  # NaN rows dropped: chunk sizes unknown
    assert np.isnan(unknown_X.chunks[0][0])
    with pytest.raises(ValueError, match=r"partition (\d) of X has \d+ rows but partition "
                                         r"\1 of y has shape \(200,\)"):
        model.fit(unknown_X, da.from_array(y, chunks=200))
    with pytest.raises(TypeError, match="dask array or dask DataFrame"):
        model.fit(X, y)


def test_unknown_chunk_sizes_that_align_are_fine(client):
    X, y, _ = _data(n=600)
    dX = da.from_array(X, chunks=(200, -1))
    keep = da.from_array(np.ones(600, dtype=bool), chunks=200)
    model = DaskGradientBoostingClassifier(client=client, n_estimators=2,
                                           max_leaf_nodes=4)
    model.fit(dX[keep], da.from_array(y, chunks=200)[keep])
    local = silva.GradientBoostingClassifier(n_estimators=2, max_leaf_nodes=4).fit(X, y)
    _assert_same_trees(model, local)


def test_partitions_with_other_columns_are_refused(client):
    from dask import delayed
    X, _, y = _data(n=400, n_features=3)
    good = pd.DataFrame(X[:200], columns=["a", "b", "c"])
    bad = pd.DataFrame(X[200:], columns=["a", "b", "z"])
    dX = dd.from_delayed([delayed(good), delayed(bad)], meta=good.iloc[:0],
                         verify_meta=False)
    dy = dd.from_delayed([delayed(pd.Series(y[:200])), delayed(pd.Series(y[200:]))],
                         meta=pd.Series(y[:0]))
    with pytest.raises(ValueError, match="X partition 1 does not match"):
        DaskGradientBoostingRegressor(client=client, n_estimators=2).fit(dX, dy)


def test_empty_partitions_are_skipped(client):
    X, y, _ = _data(n=600)
    params = dict(n_estimators=3, max_leaf_nodes=6)
    with_empty = DaskGradientBoostingClassifier(client=client, **params).fit(
        da.from_array(X, chunks=((300, 0, 300), -1)),
        da.from_array(y, chunks=((300, 0, 300),)))
    local = silva.GradientBoostingClassifier(**params).fit(X, y)
    _assert_same_trees(with_empty, local)


def test_classes_present_in_some_partitions_only(client):
    """A class that only the last partition holds is still a class of the model."""
    X, _, _ = _data(n=900)
    y = np.zeros(900, dtype=int)
    y[300:600] = 1
    y[750:] = 2  # only in the last partition
    params = dict(n_estimators=2, max_leaf_nodes=4, min_samples_leaf=5)
    model = DaskGradientBoostingClassifier(client=client, **params).fit(
        da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300))
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    _assert_same_trees(model, silva.GradientBoostingClassifier(**params).fit(X, y))


def test_unsupported_options_are_refused_before_loading(client):
    X, y, _ = _data(n=200)
    dX, dy = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    with pytest.raises(NotImplementedError, match="subsample"):
        DaskGradientBoostingClassifier(client=client, subsample=0.5).fit(dX, dy)
    with pytest.raises(NotImplementedError, match="absolute_error"):
        DaskGradientBoostingRegressor(client=client, loss="absolute_error").fit(dX, dy)
    with pytest.raises(ValueError, match="learning_rate"):
        DaskGradientBoostingClassifier(client=client, learning_rate=-1.0).fit(dX, dy)


def test_reduction_between_workers_matches_the_single_machine():
    """``histogram_reduction="workers"`` on 4 workers and 2 numeric features plus a
    category column (so the first owner holds no feature and fetches feature 0 for the
    root's sums): every shard sums its features' histograms from its peers and searches
    them; with sample weights (four channels), three classes, per-node feature draws
    and a monotone constraint, the trees are the single machine's."""
    X, _, y_regression = _data(n=1600, n_features=2, seed=8)
    rng = np.random.RandomState(8)
    colour = rng.randint(0, 6, size=1600).astype(float)
    X = np.column_stack([X, colour])
    y = np.digitize(y_regression + np.array([0, 1.5, -1, 0.5, -0.5, 1])[colour.astype(int)],
                    [-0.5, 0.8])
    weight = rng.uniform(0.5, 2.0, size=1600)
    params = dict(n_estimators=3, max_leaf_nodes=10, colsample_bynode=0.7,
                  categorical_features=[2], monotonic_constraints=[1, 0, 0],
                  random_state=5, min_samples_leaf=5)
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as four:
        model = DaskGradientBoostingClassifier(
            client=four, histogram_reduction="workers", **params).fit(
            da.from_array(X, chunks=(400, -1)), da.from_array(y, chunks=400),
            sample_weight=da.from_array(weight, chunks=400))
        assert model.dask_fit_["n_workers"] == 4
        assert model.dask_fit_["bytes_between_workers"] > 0
    local = silva.GradientBoostingClassifier(**params).fit(X, y, sample_weight=weight)
    assert any(t.is_categorical.any() for it in local.estimators_ for t in it)
    _assert_same_trees(model, local)
    with pytest.raises(ValueError, match="histogram_reduction"):
        DaskGradientBoostingClassifier(histogram_reduction="ring").fit(
            da.from_array(X, chunks=(400, -1)), da.from_array(y, chunks=400))


# ---------------------------------------------------------- worker processes
async def _exit_worker():
    os._exit(1)


def test_worker_processes_and_lost_workers():
    """Two worker processes: the fit equals the single-machine one. A worker killed in
    the middle of a fit: by default the fit recovers (the lost partitions binned again
    on the other worker, the trees replayed there, the tree grown again) and the model
    is the undisturbed one; with ``on_worker_loss="raise"`` it stops with an error
    naming the worker. Never a model grown on part of the rows."""
    X, y, _ = _data(n=1200)
    dX = da.from_array(X, chunks=(300, -1))
    dy = da.from_array(y, chunks=300)
    params = dict(n_estimators=6, max_leaf_nodes=8)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as process_client:
        model = DaskGradientBoostingClassifier(client=process_client, **params).fit(dX, dy)
        reference = silva.GradientBoostingClassifier(**params).fit(X, y)
        _assert_same_trees(model, reference)

        def kill_a_worker_at(iteration):
            def callback(env):
                if env.iteration == iteration:
                    victim = sorted(process_client.scheduler_info()["workers"])[0]
                    callback.victim = victim
                    process_client.run(_exit_worker, workers=[victim], wait=False)
                    # Wait until the scheduler has seen it go, so that the next call
                    # surely meets a dead worker.
                    deadline = time.monotonic() + 30
                    while (victim in process_client.scheduler_info()["workers"]
                           and time.monotonic() < deadline):
                        time.sleep(0.05)
            return callback

        for reduction in ("client", "workers"):
            process_client.wait_for_workers(2, timeout=60)
            killer = kill_a_worker_at(1)
            recovered = DaskGradientBoostingClassifier(
                client=process_client, histogram_reduction=reduction, **params).fit(
                dX, dy, callbacks=[killer])
            assert recovered.dask_fit_["recoveries"] == 1
            # The lost rows went to the worker left, now with two shards: the client
            # sums their histograms from then on.
            assert recovered.dask_fit_["histogram_reduction_at_end"] == "client"
            _assert_same_trees(recovered, reference)

        process_client.wait_for_workers(2, timeout=60)  # the nanny restarts the worker
        killer = kill_a_worker_at(1)
        doomed = DaskGradientBoostingClassifier(client=process_client, n_estimators=50,
                                                max_leaf_nodes=8, on_worker_loss="raise")
        with pytest.raises(WorkerLostError, match="failed or was lost") as caught:
            doomed.fit(dX, dy, callbacks=[killer])
        assert caught.value.address == killer.victim
        assert not hasattr(doomed, "estimators_")


def test_categorical_columns(client):
    """A pandas category column (known categories) is split as a category set, with the
    same trees as the single machine; integer codes in a dask array as well."""
    X, _, _ = _data(n=1500, n_features=3, seed=4)
    rng = np.random.RandomState(4)
    colour = rng.randint(0, 5, size=1500)
    effect = np.array([0.0, 2.0, -1.0, 1.0, -2.0])[colour]
    y = (np.nan_to_num(X[:, 0]) + effect + rng.normal(size=1500) > 0).astype(int)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["colour"] = pd.Categorical.from_codes(colour, ["red", "green", "blue", "grey",
                                                         "pink"])
    frame.loc[frame.index[::50], "colour"] = np.nan
    params = dict(n_estimators=3, max_leaf_nodes=8, categorical_features="auto")
    dframe = dd.from_pandas(frame, npartitions=3)
    model = DaskGradientBoostingClassifier(client=client, **params).fit(
        dframe, dd.from_pandas(pd.Series(y), npartitions=3))
    local = silva.GradientBoostingClassifier(**params).fit(frame, y)
    assert model.is_categorical_.tolist() == [False, False, False, True]
    assert any(t.is_categorical.any() for it in model.estimators_ for t in it)
    _assert_same_trees(model, local)
    lazy = silva.dask.predict_proba(model, dframe).compute()
    np.testing.assert_allclose(lazy.to_numpy(), local.predict_proba(frame), rtol=1e-9)

    codes = np.column_stack([X, np.where(np.arange(1500) % 50 == 0, np.nan, colour)])
    params["categorical_features"] = [3]
    model = DaskGradientBoostingClassifier(client=client, **params).fit(
        da.from_array(codes, chunks=(500, -1)), da.from_array(y, chunks=500))
    _assert_same_trees(model, silva.GradientBoostingClassifier(**params).fit(codes, y))
    bad = codes.copy()
    bad[1200, 3] = 2.5
    with pytest.raises(ValueError, match="categorical column 'feature 3' holds the value "
                                         "2.5"):
        DaskGradientBoostingClassifier(client=client, **params).fit(
            da.from_array(bad, chunks=(500, -1)), da.from_array(y, chunks=500))
    with pytest.raises(ValueError, match="X.categorize()"):
        DaskGradientBoostingClassifier(client=client, **params).fit(
            dframe.astype({"colour": "object"}), dd.from_pandas(pd.Series(y),
                                                                npartitions=3))


# ---------------------------------------------------------------------------- forests
def _assert_same_forest(dask_model, local_model):
    """Tree for tree: structure, features, thresholds and node counts equal; values to
    1e-9 relative (they are equal bit for bit: the histograms are double-double)."""
    assert len(dask_model.estimators_) == len(local_model.estimators_)
    for a, b in zip(dask_model.estimators_, local_model.estimators_, strict=True):
        a, b = a.tree_, b.tree_
        assert a.node_count > 3
        for name in ("children_left", "children_right", "feature", "threshold",
                     "missing_go_to_left", "is_categorical", "category_bitsets",
                     "n_node_samples"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=0)
        np.testing.assert_allclose(a.impurity, b.impurity, rtol=1e-9, atol=1e-12)


FOREST_CASES = [
    ("DaskRandomForestClassifier", "RandomForestClassifier", "binary", {}),
    ("DaskRandomForestRegressor", "RandomForestRegressor", "regression",
     {"max_features": 0.5, "min_samples_leaf": 2}),
    ("DaskExtraTreesClassifier", "ExtraTreesClassifier", "binary",
     {"criterion": "entropy", "max_samples": 0.7}),
    ("DaskExtraTreesRegressor", "ExtraTreesRegressor", "regression", {}),
]


@pytest.mark.parametrize("dask_name, local_name, task, extra", FOREST_CASES)
def test_forest_same_trees_as_single_machine(client, dask_name, local_name, task, extra):
    """Over two workers and uneven partitions, the Dask forest is the single-machine
    forest with ``bootstrap="poisson"`` on the concatenated data."""
    X, y_binary, y_regression = _data()
    y = y_binary if task == "binary" else y_regression
    params = dict(n_estimators=10, max_depth=7, random_state=3, **extra)
    model = getattr(silva.dask, dask_name)(client=client, **params).fit(
        da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=(CHUNKS,)))
    local = getattr(silva, local_name)(bootstrap="poisson", **params).fit(X, y)
    _assert_same_forest(model, local)
    # Two batches of trees (8 + 2), each at most max_depth + 1 round trips.
    assert model.dask_fit_["round_trips"] <= 2 * (7 + 1) + 1
    assert model.dask_fit_["histogram_bytes"] > 0
    method = "predict_proba" if task == "binary" else "predict"
    np.testing.assert_array_equal(getattr(model, method)(X), getattr(local, method)(X))


def test_forest_sample_and_class_weights_and_categories(client):
    """Sample weights (zeros included), "balanced" class weights and a categorical
    column: still the single machine's forest."""
    X, y, _ = _data(n=1500, n_features=3, seed=4)
    rng = np.random.RandomState(4)
    colour = rng.randint(0, 5, size=1500).astype(float)
    colour[::50] = np.nan
    X = np.column_stack([X, colour])
    y = (y + (colour == 2)) % 2
    weight = rng.randint(0, 3, size=1500).astype(float)
    params = dict(n_estimators=4, max_depth=6, random_state=0, categorical_features=[3],
                  class_weight="balanced", max_features=2)
    chunks = (400, 300, 800)
    model = silva.dask.DaskRandomForestClassifier(client=client, trees_per_round=3,
                                                  **params).fit(
        da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=(chunks,)),
        sample_weight=da.from_array(weight, chunks=(chunks,)))
    info = model.dask_fit_
    # Rows of zero weight stay off the shards: 4 codes + y + weight + global row (28 B),
    # and 3 trees at once add at most 9 bytes a row each.
    assert info["n_rows"] == int(np.sum(weight > 0))
    assert info["shard_bytes_per_row"] == 28.0
    assert 28.0 < info["shard_peak_bytes_per_row"] <= 28.0 + 3 * 9
    local = silva.RandomForestClassifier(bootstrap="poisson", **params).fit(
        X, y, sample_weight=weight)
    assert any(e.tree_.is_categorical.any() for e in model.estimators_)
    _assert_same_forest(model, local)


def test_forest_to_local_saves_and_predicts_lazily(client, tmp_path):
    X, _, y = _data()
    dX = da.from_array(X, chunks=(600, -1))
    model = silva.dask.DaskRandomForestRegressor(client=client, n_estimators=3,
                                                 max_depth=4, random_state=0).fit(
        dX, da.from_array(y, chunks=600))
    local = model.to_local()
    assert type(local) is silva.RandomForestRegressor and local.bootstrap == "poisson"
    assert not hasattr(local, "dask_fit_")
    path = tmp_path / "forest.silva"
    local.save(path)
    loaded = silva.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    lazy = model.predict(dX)
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), local.predict(X))
    with pytest.raises(ValueError, match="quantiles"):
        local.predict_quantiles(X[:5])


def test_forest_options_it_cannot_grow_are_refused(client):
    X, y, _ = _data(n=300)
    dX, dy = da.from_array(X, chunks=(150, -1)), da.from_array(y, chunks=150)
    forest = silva.dask.DaskRandomForestClassifier
    with pytest.raises(ValueError, match="bootstrap must be 'poisson'"):
        forest(client=client, bootstrap=True).fit(dX, dy)
    with pytest.raises(NotImplementedError, match="oob_score"):
        forest(client=client, oob_score=True).fit(dX, dy)
    with pytest.raises(ValueError, match="max_leaf_nodes"):
        forest(client=client, max_leaf_nodes=8).fit(dX, dy)
    with pytest.raises(ValueError, match="criterion='absolute_error'"):
        silva.dask.DaskRandomForestRegressor(client=client,
                                             criterion="absolute_error").fit(dX, dy)


def test_forest_recovers_from_a_lost_worker_or_names_it():
    """A worker closed between two batches of trees: by default its partitions are
    binned again on the workers left and the batch grows again (the forest is the
    undisturbed one); with ``on_worker_loss="raise"`` the fit stops naming the worker."""
    X, y, _ = _data(n=1200)
    dX, dy = da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300)
    params = dict(n_estimators=10, max_depth=5, random_state=0)  # two batches
    reference = silva.RandomForestClassifier(bootstrap="poisson", **params).fit(X, y)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as own_client:

        def close_a_worker(env):
            if env.iteration == 0:  # after the first batch
                # A worker that holds a shard: dask places the binned partitions where it
                # computes them, so a worker may hold none, and closing it loses nothing.
                victim = sorted(address for address, keys in own_client.has_what().items()
                                if any(str(key).startswith("ForestShard-") for key in keys))[0]
                close_a_worker.victim = victim
                worker = next(w for w in cluster.workers.values() if w.address == victim)
                cluster.sync(worker.close)
                deadline = time.monotonic() + 30
                while (victim in own_client.scheduler_info()["workers"]
                       and time.monotonic() < deadline):
                    time.sleep(0.05)

        forest = silva.dask.DaskRandomForestClassifier(client=own_client, **params)
        forest.fit(dX, dy, callbacks=[close_a_worker])
        assert forest.dask_fit_["recoveries"] == 1
        _assert_same_forest(forest, reference)

        # (histograms summed between the workers: the reduction's tasks meet the loss)
        doomed = silva.dask.DaskRandomForestClassifier(client=own_client,
                                                       on_worker_loss="raise",
                                                       histogram_reduction="workers",
                                                       **params)
        with pytest.raises(WorkerLostError, match="failed or was lost") as caught:
            doomed.fit(dX, dy, callbacks=[close_a_worker])
        assert caught.value.address == close_a_worker.victim
        assert not hasattr(doomed, "estimators_")


def test_forest_multiclass_dataframe_and_empty_partition(client):
    """Three classes, a dask DataFrame with an empty partition: the single machine's
    forest, and lazy predictions on the frame."""
    X, _, y_regression = _data(n=900, n_features=4, seed=2)
    y = np.digitize(y_regression, [-0.5, 1.0])  # classes 0, 1, 2
    frame = pd.DataFrame(X, columns=list("abcd"))
    parts = [frame.iloc[:300], frame.iloc[300:300], frame.iloc[300:]]
    dX = dd.from_delayed([dask.delayed(p) for p in parts], meta=frame.iloc[:0])
    labels = pd.Series(y)
    dy = dd.from_delayed([dask.delayed(labels.iloc[:300]), dask.delayed(labels.iloc[300:300]),
                          dask.delayed(labels.iloc[300:])], meta=labels.iloc[:0])
    params = dict(n_estimators=3, max_depth=5, random_state=1)
    model = silva.dask.DaskRandomForestClassifier(client=client, **params).fit(dX, dy)
    local = silva.RandomForestClassifier(bootstrap="poisson", **params).fit(frame, y)
    assert list(model.classes_) == [0, 1, 2]
    _assert_same_forest(model, local)
    lazy = model.predict_proba(dX)
    np.testing.assert_array_equal(lazy.compute().to_numpy(), local.predict_proba(frame))


def test_forest_histograms_summed_between_workers(client):
    """``histogram_reduction="workers"``: a tree of tasks sums the histograms, one
    total reaches the client, and the forest is the same."""
    X, y, _ = _data(n=1200)
    dX, dy = da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300)
    params = dict(n_estimators=4, max_depth=5, random_state=0)
    on_client = silva.dask.DaskRandomForestClassifier(client=client, **params).fit(dX, dy)
    between = silva.dask.DaskRandomForestClassifier(
        client=client, histogram_reduction="workers", **params).fit(dX, dy)
    _assert_same_forest(between, on_client)
    assert on_client.dask_fit_["histogram_bytes_between_workers"] == 0
    assert between.dask_fit_["histogram_bytes_between_workers"] > 0
    assert between.dask_fit_["histogram_bytes"] < on_client.dask_fit_["histogram_bytes"]
    with pytest.raises(ValueError, match="histogram_reduction"):
        silva.dask.DaskRandomForestClassifier(client=client,
                                              histogram_reduction="ring").fit(dX, dy)
