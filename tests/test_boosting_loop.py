"""silva._boosting_loop on its own: the iteration loop called on small arrays without an
estimator, and what each sampling, leaf and stopping option does to the trees."""

import numpy as np
import pytest

from silva import _boosting_loop as loop
from silva.boosting import GradientBoostingRegressor
from silva.callbacks import EarlyStopException
from silva.engine import losses
from silva.engine.binning import Binner
from silva.engine.ensemble import PackedTreeView
from silva.engine.gradient_splitting import (
    L1,
    L2,
    MAX_DELTA_STEP,
    MIN_CHILD_WEIGHT,
    MIN_SAMPLES_LEAF,
    N_PARAMS,
)
from silva.engine.random import seed_from_random_state
from silva.engine.tree import Tree

N_FEATURES = 4


def _data(n=400, seed=0, noise=0.1):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, N_FEATURES)
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 - X[:, 2] + noise * rng.randn(n)
    return X, y


def _config(**changes):
    params = np.zeros(N_PARAMS)
    params[MIN_CHILD_WEIGHT] = 1e-3
    params[MIN_SAMPLES_LEAF] = 5.0
    config = loop.BoostingConfig(
        boosting="newton", learning_rate=0.1, n_estimators=6, split_params=params,
        max_depth=2**31 - 1, max_leaf_nodes=8, depthwise=False, subsample=1.0, goss=False,
        goss_top_rate=0.2, goss_other_rate=0.1, colsample_bytree=1.0, colsample_bynode=1.0,
        monotonic=np.zeros(N_FEATURES, dtype=np.int8),
        interaction_sets=np.zeros((0, N_FEATURES), dtype=np.uint8), metric=None,
        scoring=None, record_training=False, early_stopping_rounds=None, verbose=0)
    return config._replace(**changes)


def _boost(X, y, config, *, loss="squared_error", seed=0, **kwargs):
    """``(record, loss, init_raw)`` of the loop run on (X, y) with unit weights."""
    weight = np.ones(len(y))
    binner = Binner(255, np.zeros(X.shape[1], dtype=bool)).fit(X)
    loss = losses.make_loss(loss)
    init_raw = loss.init_raw(y, weight)
    record = loop.boost(X, y, weight, binner, np.zeros(X.shape[1], dtype=bool), init_raw,
                        loss, config, np.random.RandomState(seed), **kwargs)
    return record, loss, init_raw


def _raw(record, init_raw, X):
    raw = np.tile(init_raw, (X.shape[0], 1))
    if record.trees:
        loop.pack(record.trees, 1).predict(X, out=raw)
    return raw[:, 0]


def test_the_loop_alone_builds_the_estimators_model():
    """The estimator only validates and delegates: the loop called with the same checked
    parameters grows the very same trees."""
    X, y = _data()
    record, _, init_raw = _boost(X, y, _config())
    assert len(record.trees) == 6 and all(len(trees) == 1 for trees in record.trees)
    assert len(record.split_gains) == 6
    # min_samples_bin=1: the 255 bins of _boost's binner, on 400 rows.
    model = GradientBoostingRegressor(n_estimators=6, max_leaf_nodes=8, min_samples_leaf=5,
                                      min_samples_bin=1, random_state=0).fit(X, y)
    np.testing.assert_array_equal(_raw(record, init_raw, X), model.predict(X))
    assert record.best_iteration is None and record.evals_result == {}


def test_training_and_evaluation_predictions_agree_and_the_loss_falls():
    """The training rows' raw predictions are updated from the grower's partition (and,
    for out-of-bag rows, by walking bin codes); an evaluation set's by walking the tree
    on raw X. On the same rows both must give the same loss, every iteration."""
    X, y = _data()
    evals = [loop.EvalSet("same_rows", X, y, np.ones(len(y)))]
    record, *_ = _boost(X, y, _config(metric="loss", record_training=True, subsample=0.6),
                        evals=evals)
    training = record.evals_result["training"]["loss"]
    np.testing.assert_allclose(record.evals_result["same_rows"]["loss"], training,
                               rtol=1e-12)
    assert len(training) == 6 and np.all(np.diff(training) < 0)


def test_goss_keeps_the_top_gradients_and_amplifies_the_drawn_rest():
    rng = np.random.RandomState(0)
    n = 1000
    grad = rng.randn(n, 2)
    sample_weight = rng.uniform(0.5, 2.0, n)
    top_rate, other_rate = 0.2, 0.1
    in_bag, weight = loop.goss_sample(grad, sample_weight, top_rate, other_rate,
                                      np.random.RandomState(1))
    assert in_bag.dtype == np.int32 and np.all(np.diff(in_bag) > 0)
    assert len(in_bag) == int(top_rate * n) + int(other_rate * n)
    magnitude = np.abs(grad * sample_weight[:, None]).sum(axis=1)
    top = np.argsort(-magnitude, kind="stable")[:int(top_rate * n)]
    assert np.isin(top, in_bag).all()
    drawn = np.setdiff1d(in_bag, top)
    # Every drawn row has a smaller gradient than every kept top row.
    assert magnitude[drawn].max() <= magnitude[top].min()
    np.testing.assert_array_equal(weight[top], sample_weight[top])
    np.testing.assert_allclose(weight[drawn],
                               sample_weight[drawn] * (1 - top_rate) / other_rate)
    left_out = np.setdiff1d(np.arange(n), in_bag)
    np.testing.assert_array_equal(weight[left_out], sample_weight[left_out])


def test_goss_in_the_loop_grows_each_tree_on_the_goss_rows():
    X, y = _data(500)
    record, *_ = _boost(X, y, _config(goss=True, goss_top_rate=0.3, goss_other_rate=0.2))
    for (tree,) in record.trees:
        assert tree.n_node_samples[0] == int(0.3 * 500) + int(0.2 * 500)


def test_subsample_draws_the_stated_fraction_of_rows():
    n = 20000
    rows = loop.subsample_rows(n, 0.3, np.random.RandomState(0))
    assert rows.dtype == np.int32 and np.all(np.diff(rows) > 0)
    # Binomial(n, 0.3): within five standard deviations.
    assert abs(len(rows) - 0.3 * n) < 5 * np.sqrt(n * 0.3 * 0.7)
    assert len(loop.subsample_rows(10, 1e-9, np.random.RandomState(0))) == 1


def test_subsample_in_the_loop_grows_each_tree_on_that_iterations_rows():
    """Each tree's root holds exactly the rows drawn for its iteration: the draws of
    one RandomState, rows first, then the tree's seed."""
    X, y = _data(600)
    record, *_ = _boost(X, y, _config(subsample=0.5, n_estimators=8), seed=7)
    rng = np.random.RandomState(7)
    sizes = []
    for _ in range(8):
        sizes.append(len(loop.subsample_rows(600, 0.5, rng)))
        seed_from_random_state(rng)
    assert [int(tree.n_node_samples[0]) for (tree,) in record.trees] == sizes
    assert len(set(sizes)) > 1  # a new draw every iteration


def test_a_loop_without_sampling_draws_nothing_and_per_node_draws_keep_their_seeds():
    """Without row or feature sampling the loop reads no random number (every tree takes
    one mask of all features and no seed, which no node would read); with
    colsample_bynode each tree's seed picks its nodes' features, so the trees follow the
    random state."""
    X, y = _data(500)
    weight = np.ones(len(y))
    binner = Binner(255, np.zeros(N_FEATURES, dtype=bool)).fit(X)
    loss = losses.make_loss("squared_error")
    rng = np.random.RandomState(5)
    state_before = rng.get_state()
    record = loop.boost(X, y, weight, binner, np.zeros(N_FEATURES, dtype=bool),
                        loss.init_raw(y, weight), loss, _config(), rng)
    state_after = rng.get_state()
    assert len(record.trees) == 6
    assert np.array_equal(state_after[1], state_before[1])
    assert state_after[2:] == state_before[2:]

    def split_features(seed):
        record, *_ = _boost(X, y, _config(colsample_bynode=0.5), seed=seed)
        return np.concatenate([tree.feature for (tree,) in record.trees])

    assert np.array_equal(split_features(1), split_features(1))
    assert not np.array_equal(split_features(1), split_features(2))


@pytest.mark.parametrize("boosting", ["newton", "gradient"])
def test_max_delta_step_bounds_every_newton_leaf(boosting):
    """Leaf weights are clipped to [-max_delta_step, max_delta_step] before shrinkage,
    so the stored values (which include the learning rate) to that times the rate."""
    X, y = _data()
    y = 50 * y  # large leaf weights, so that the bound binds
    params = _config().split_params.copy()
    params[MAX_DELTA_STEP] = 0.4
    record, *_ = _boost(X, y, _config(split_params=params, learning_rate=0.5,
                                      boosting=boosting))
    values = np.concatenate([tree.value.ravel() for (tree,) in record.trees])
    assert np.abs(values).max() <= 0.4 * 0.5 + 1e-12
    assert np.isclose(np.abs(values).max(), 0.2)  # the bound was reached
    free, *_ = _boost(X, y, _config(learning_rate=0.5, boosting=boosting))
    assert max(np.abs(tree.value).max() for (tree,) in free.trees) > 1.0


def test_early_stopping_stops_rounds_after_the_best_iteration():
    X, y = _data(300, noise=3.0)
    X_val, y_val = _data(300, seed=1, noise=3.0)
    evals = [loop.EvalSet("valid_0", X_val, y_val, np.ones(300))]
    record, loss, init_raw = _boost(
        X, y, _config(n_estimators=300, learning_rate=0.8, max_leaf_nodes=31, metric="loss",
                      early_stopping_rounds=4), evals=evals)
    curve = record.evals_result["valid_0"]["loss"]
    assert len(curve) < 300  # it stopped
    assert record.best_iteration == int(np.argmin(curve))
    assert len(curve) == record.best_iteration + 1 + 4
    assert len(record.trees) == record.best_iteration + 1
    assert len(record.split_gains) == record.best_iteration + 1
    kept = np.average(loss.pointwise(y_val, _raw(record, init_raw, X_val)))
    assert kept == pytest.approx(min(curve), rel=1e-12)


def test_a_callback_can_stop_the_loop_and_sees_each_iteration():
    X, y = _data()
    seen = []

    def stop_at_three(env):
        seen.append((env.iteration, env.begin_iteration, env.end_iteration, env.model))
        if env.iteration == 3:
            raise EarlyStopException(1)

    record, *_ = _boost(X, y, _config(n_estimators=10), callbacks=[stop_at_three],
                        model="the model")
    assert seen == [(i, 0, 10, "the model") for i in range(4)]
    assert record.best_iteration == 1 and len(record.trees) == 2


def test_trees_are_packed_alike_with_or_without_callbacks():
    """Without callbacks the loop keeps each grower's table and packs them all at the
    end in one pass (the record's trees are then views of that packing); a callback
    sees each iteration's trees as Tree objects, packed one by one. The packings are
    the same, bit for bit."""
    X, y = _data()
    plain, *_ = _boost(X, y, _config())
    watched = loop.BoostingRecord()
    seen = []
    _boost(X, y, _config(), record=watched,
           callbacks=[lambda env: seen.append(type(watched.trees[-1][0]))])
    assert seen == [Tree] * 6
    assert all(isinstance(tree, PackedTreeView) and tree._packed is plain.packed
               for trees in plain.trees for tree in trees)
    assert plain.packed.n_trees == watched.packed.n_trees == 6
    for name in ("walk", "value", "category_bitsets", "impurity", "n_node_samples",
                 "weighted_n_node_samples", "node_offset", "tree_weight", "output_column"):
        assert (getattr(plain.packed, name).tobytes()
                == getattr(watched.packed, name).tobytes()), name


def test_trees_beyond_the_tables_limit_are_made_trees_as_they_grow(monkeypatch):
    """Past GROWN_TABLES_MAX_NODES held nodes, the fit makes each tree a Tree as it
    grows (the ones held so far included), so that a large model's tables do not pile
    up; the packing is the same, bit for bit."""
    X, y = _data()
    plain, *_ = _boost(X, y, _config())
    monkeypatch.setattr(loop, "GROWN_TABLES_MAX_NODES", 20)  # 15 nodes a tree: passed at 2
    capped, *_ = _boost(X, y, _config())
    assert all(type(tree) is Tree for trees in capped.trees for tree in trees)
    for name in ("walk", "value", "impurity", "n_node_samples", "weighted_n_node_samples",
                 "node_offset"):
        assert (getattr(plain.packed, name).tobytes()
                == getattr(capped.packed, name).tobytes()), name


def test_a_fit_cut_short_leaves_trees():
    """An error in an iteration (here the loss's gradient, at the fourth) leaves the
    iterations grown so far as Tree objects, as a finished fit leaves its trees, not
    as the grower's tables."""
    X, y = _data()
    record = loop.BoostingRecord()
    calls = []

    class FailingLoss(losses.SquaredError):
        def gradient_hessian(self, y, raw, grad, hess, iteration=0):
            calls.append(iteration)
            if len(calls) == 4:
                raise RuntimeError("gradient failed")
            super().gradient_hessian(y, raw, grad, hess, iteration)

    weight = np.ones(len(y))
    binner = Binner(255, np.zeros(X.shape[1], dtype=bool)).fit(X)
    loss = FailingLoss()
    with pytest.raises(RuntimeError, match="gradient failed"):
        loop.boost(X, y, weight, binner, np.zeros(X.shape[1], dtype=bool),
                   loss.init_raw(y, weight), loss, _config(), np.random.RandomState(0),
                   record=record)
    assert len(record.trees) == 3
    assert all(type(tree) is Tree for trees in record.trees for tree in trees)


def test_a_continued_record_equals_one_long_run():
    X, y = _data()
    record, _, init_raw = _boost(X, y, _config(n_estimators=3))
    first_trees = list(record.trees)
    record, *_ = _boost(X, y, _config(n_estimators=7), record=record)
    assert len(record.trees) == 7
    assert all(a is b for a, b in zip(record.trees[:3], first_trees, strict=True))
    whole, *_ = _boost(X, y, _config(n_estimators=7))
    np.testing.assert_allclose(_raw(record, init_raw, X), _raw(whole, init_raw, X),
                               rtol=1e-12)


def test_thread_choice_ignores_the_warm_up_iteration():
    """The first iteration (page faults on fresh buffers) is not timed: a slow first
    parallel iteration must not send the following iterations to one thread."""
    choice = loop.ThreadChoice(probe_every=25)
    choice.threads = 2
    seconds = {True: 1.0, False: 2.0}  # parallel is the faster way once warm
    ways = []
    for iteration in range(30):
        parallel = choice.parallel()
        ways.append(parallel)
        choice.record(parallel, 50.0 if iteration == 0 else seconds[parallel])
    # Warm-up and timed parallel, one serial probe, then parallel except the next probe.
    assert ways[:3] == [True, True, False]
    assert ways[3:] == [count % 25 != 3 for count in range(4, 31)]
    # And when one thread is faster, the choice moves to it after its probe.
    choice = loop.ThreadChoice(probe_every=25)
    choice.threads = 2
    ways = []
    for _ in range(6):
        parallel = choice.parallel()
        ways.append(parallel)
        choice.record(parallel, 3.0 if parallel else 1.0)
    assert ways == [True, True, False, False, False, False]


def test_thread_choice_keeps_a_fit_serial_after_a_fast_serial_trial():
    """A fit asked to try one serial iteration first stays on one thread when that
    iteration took less than the bound, and otherwise runs the parallel protocol
    (warm-up, timed parallel, serial probe) from its second iteration."""
    ways = {}
    for trial_seconds in (0.5, 2.0):  # under, then over the bound of 1.0
        choice = loop.ThreadChoice(probe_every=25)
        choice.threads = 2
        choice.try_serial_first(1.0)
        ways[trial_seconds] = []
        for iteration in range(6):
            parallel = choice.parallel()
            ways[trial_seconds].append(parallel)
            choice.record(parallel, trial_seconds if iteration == 0 else
                          (1.0 if parallel else 3.0))
    assert ways[0.5] == [False] * 6
    assert ways[2.0] == [False, True, True, False, True, True]


def test_a_multiclass_fit_after_a_fast_serial_trial_starts_no_pool(monkeypatch):
    # A fit whose class trees have no parallel passes (wine: 178 rows) tries its
    # first iteration serially; under the bound it never starts the pool of threads,
    # over it the pool grows the trees. The bound is set to either side here, so
    # that the check does not depend on this machine's speed.
    import numba
    from sklearn.datasets import load_wine

    from silva.boosting import GradientBoostingClassifier

    if numba.get_num_threads() < 2:
        pytest.skip("needs two numba threads for the pool")
    started = []
    map_trees = loop.IterationGrower.map

    def recorded_map(self, function, items):
        started.append(True)
        return map_trees(self, function, items)

    monkeypatch.setattr(loop.IterationGrower, "map", recorded_map)
    X, y = load_wine(return_X_y=True)
    probabilities = []
    for bound, pooled in ((1e9, False), (0.0, True)):
        monkeypatch.setattr(loop, "POOLED_TREE_MIN_SECONDS", bound)
        started.clear()
        model = GradientBoostingClassifier(n_estimators=20, random_state=0).fit(X, y)
        assert bool(started) == pooled
        probabilities.append(model.predict_proba(X))
    np.testing.assert_array_equal(probabilities[0], probabilities[1])


def test_newton_value_soft_thresholds_regularises_and_clips():
    params = np.zeros(N_PARAMS)
    params[L1], params[L2] = 1.0, 2.0
    # -(sign(G) max(|G| - 1, 0)) / (H + 2) with G = 5, H = 6: -4 / 8.
    assert loop.newton_value(np.array([5.0, 6.0]), params, -np.inf, np.inf) == -0.5
    assert loop.newton_value(np.array([0.5, 6.0]), params, -np.inf, np.inf) == 0.0
    params[MAX_DELTA_STEP] = 0.25
    assert loop.newton_value(np.array([5.0, 6.0]), params, -np.inf, np.inf) == -0.25
    assert loop.newton_value(np.array([-5.0, 6.0]), params, -np.inf, 0.1) == 0.1


def test_leaf_updates_serial_below_the_row_threshold_same_model(monkeypatch):
    # In a parallel fit, trees of few rows add their leaf values serially: the raw
    # predictions, and so the model, are the same bits as with the parallel pass.
    import numba

    from silva.engine import leaf_values

    if numba.get_num_threads() < 2:
        pytest.skip("needs two numba threads for the parallel path")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(9000, 6))
    y = X[:, 0] * 2.0 + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=9000)
    predictions = []
    for min_rows in (0, 1 << 40):  # every tree parallel, then every tree serial
        monkeypatch.setattr(leaf_values, "PARALLEL_UPDATE_MIN_ROWS", min_rows)
        model = GradientBoostingRegressor(n_estimators=8, random_state=0).fit(X, y)
        predictions.append(model.predict(X))
    np.testing.assert_array_equal(predictions[0], predictions[1])


@pytest.mark.parametrize("changes", [{}, {"subsample": 0.7}, {"boosting": "gradient"}])
def test_class_trees_in_the_pool_build_the_one_thread_model(monkeypatch, changes):
    # Iterations run parallel grow the class trees in the fit's pool of threads, which
    # also compute the softmax gradient (by ranges of rows) and finish each tree (leaf
    # values, its raw column's update: in-bag, and out-of-bag with subsample; a Newton
    # step on the leaf sums for Friedman's boosting). Every iteration parallel must give
    # the same bits as every iteration on one thread.
    import numba

    from silva.boosting import GradientBoostingClassifier

    if numba.get_num_threads() < 2:
        pytest.skip("needs two numba threads for the pool")
    rng = np.random.default_rng(11)
    X = rng.normal(size=(3000, 5))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] + 0.3 * X[:, 2] > 0.2)  # four classes
    pools_trees = loop.IterationGrower.pools_trees
    pooled = []

    def recorded_pools_trees(self, parallel, n_columns):
        pooled.append(pools_trees(self, parallel, n_columns))
        return pooled[-1]

    monkeypatch.setattr(loop.IterationGrower, "pools_trees", recorded_pools_trees)
    probabilities = {}
    for parallel in (True, False):
        monkeypatch.setattr(loop.ThreadChoice, "parallel", lambda self, p=parallel: p)
        pooled.clear()
        model = GradientBoostingClassifier(n_estimators=6, max_leaf_nodes=7,
                                           random_state=0, **changes).fit(X, y)
        assert all(pooled) if parallel else not any(pooled)  # the pool, then none
        probabilities[parallel] = model.predict_proba(X)
    np.testing.assert_array_equal(probabilities[True], probabilities[False])
    assert len(np.unique(probabilities[True].argmax(axis=1))) == 4


@pytest.mark.parametrize("bin_subsample", [None, 100])
def test_a_fit_bins_its_rows_once(monkeypatch, bin_subsample):
    """Binning every row, a fit takes its codes from the binner's fit (``fit_transform``:
    the fit's sort gives them) and searches no column afterwards; with edges placed on a
    subsample of the rows, it fits on those and then codes every row (``transform``).
    Either way the same trees as binning by ``fit`` and then ``transform``."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2.0 - np.nan_to_num(X[:, 1]) + rng.normal(size=300)
    calls = []
    for name in ("fit", "transform", "fit_transform"):
        original = getattr(Binner, name)

        def spy(self, *args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Binner, name, spy)
    model = GradientBoostingRegressor(n_estimators=5, bin_subsample=bin_subsample,
                                      random_state=0).fit(X, y)
    if bin_subsample is None:
        assert calls.count("fit_transform") == 1 and "transform" not in calls
    else:
        assert "fit_transform" not in calls and calls.count("transform") == 1
    monkeypatch.setattr(Binner, "fit_transform", lambda self, X: self.fit(X).transform(X))
    reference = GradientBoostingRegressor(n_estimators=5, bin_subsample=bin_subsample,
                                          random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))
