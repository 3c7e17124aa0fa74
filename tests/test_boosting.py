"""GradientBoostingRegressor / GradientBoostingClassifier: API, losses, early stopping,
custom objectives, categorical and missing values, constraints, determinism, errors."""

import numba
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.utils.estimator_checks import parametrize_with_checks

from silva.boosting import GradientBoostingClassifier, GradientBoostingRegressor
from silva.callbacks import EarlyStopException
from silva.decision_tree import DecisionTreeRegressor


# Rules that count rows (min_samples_leaf, min_samples_bin) tell a weight of 2 from a
# repeated row, which the sample-weight equivalence check forbids: both set to 1 here.
@parametrize_with_checks([
    GradientBoostingClassifier(n_estimators=5, min_samples_leaf=1, min_samples_bin=1),
    GradientBoostingRegressor(n_estimators=5, min_samples_leaf=1, min_samples_bin=1)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _regression(n=400, seed=0):
    return make_regression(n, 6, noise=1.0, random_state=seed)


def _classification(n=400, classes=2, seed=0):
    return make_classification(n, 6, n_informative=4, n_classes=classes, random_state=seed)


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error", "huber", "quantile",
                                  "poisson", "gamma", "tweedie"])
@pytest.mark.parametrize("boosting", ["newton", "gradient"])
def test_each_regression_loss_decreases_its_training_loss(loss, boosting):
    X, y = _regression()
    if loss in ("poisson", "gamma", "tweedie"):
        y = np.exp(y / y.std())
    model = GradientBoostingRegressor(loss=loss, boosting=boosting, n_estimators=15,
                                      learning_rate=0.05, verbose=0,
                                      random_state=0)
    model.fit(X, y, eval_set=[(X, y)])
    curve = np.array(model.evals_result_["valid_0"]["loss"])
    initial = model._loss.loss(y, np.tile(model.init_raw_, (len(y), 1)))
    if loss == "huber":
        # Huber's delta moves each iteration: compare the ends at the final delta.
        assert model._loss.loss(y, model.predict(X)[:, None]) < initial
    else:
        assert curve[0] < initial
        assert np.all(np.diff(curve) < 1e-12)
        assert curve[-1] < curve[0]


@pytest.mark.parametrize("loss,classes", [("log_loss", 2), ("log_loss", 3),
                                          ("exponential", 2)])
@pytest.mark.parametrize("boosting", ["newton", "gradient"])
def test_each_classification_loss_decreases_its_training_loss(loss, classes, boosting):
    X, y = _classification(classes=classes)
    model = GradientBoostingClassifier(loss=loss, boosting=boosting, n_estimators=15,
                                       learning_rate=0.05)
    model.fit(X, y, eval_set=[(X, y)])
    curve = np.array(model.evals_result_["valid_0"]["loss"])
    assert np.all(np.diff(curve) < 1e-12) and curve[-1] < curve[0] - 0.05
    assert model.score(X, y) > 0.8


def test_gradient_boosting_one_tree_is_cart_on_residuals():
    X, y = _regression(300)
    model = GradientBoostingRegressor(boosting="gradient", learning_rate=1.0, n_estimators=1,
                                      max_depth=2, max_leaf_nodes=None, min_samples_leaf=1,
                                      growth="depthwise").fit(X, y)
    cart = DecisionTreeRegressor(max_depth=2).fit(X, y - y.mean())
    np.testing.assert_allclose(model.predict(X), y.mean() + cart.predict(X), rtol=1e-10,
                               atol=1e-9)
    ours = model.estimators_[0][0]
    np.testing.assert_array_equal(ours.feature, cart.tree_.feature)


def test_staged_predictions_and_iteration_range():
    X, y = _classification(classes=3)
    model = GradientBoostingClassifier(n_estimators=6).fit(X, y)
    staged = list(model.staged_predict_proba(X))
    assert len(staged) == 6
    np.testing.assert_allclose(staged[-1], model.predict_proba(X))
    np.testing.assert_allclose(staged[2], model.predict_proba(X, iteration_range=(0, 3)))
    raw = model.decision_function(X)
    assert raw.shape == (len(X), 3)
    head = model.decision_function(X, iteration_range=(0, 2))
    tail = model.decision_function(X, iteration_range=(2, 6))
    np.testing.assert_allclose(head + tail - model.init_raw_, raw)
    with pytest.raises(ValueError, match="iteration_range"):
        model.predict(X, iteration_range=(0, 7))


def test_early_stopping_keeps_the_best_iteration():
    X, y = _regression(600, seed=1)
    y = y + np.random.RandomState(0).randn(len(y)) * 60  # noisy: overfits quickly
    X_val, y_val = X[400:], y[400:]
    model = GradientBoostingRegressor(n_estimators=300, learning_rate=0.5,
                                      early_stopping_rounds=5, min_samples_leaf=2)
    model.fit(X[:400], y[:400], eval_set=[(X_val, y_val)])
    curve = model.evals_result_["valid_0"]["loss"]
    assert len(curve) < 300
    assert model.best_iteration_ == int(np.argmin(curve))
    assert model.n_iter_ == model.best_iteration_ + 1
    assert len(curve) == model.best_iteration_ + 1 + 5
    # The kept model is the best one: its validation loss is the curve's minimum.
    np.testing.assert_allclose(model._loss.loss(y_val, model.predict(X_val)[:, None]),
                               min(curve))


def test_early_stopping_with_validation_fraction_and_callbacks():
    X, y = _classification(600)
    seen = []

    def stop_at_three(env):
        seen.append((env.iteration, env.evaluation_result_list[0][0]))
        if env.iteration == 3:
            raise EarlyStopException(1)

    model = GradientBoostingClassifier(n_estimators=50, early_stopping_rounds=100,
                                       scoring="auc", random_state=0)
    model.fit(X, y, callbacks=[stop_at_three])
    assert [s[0] for s in seen] == [0, 1, 2, 3]
    assert seen[0][1] == "validation"
    assert model.n_iter_ == 2 and model.best_iteration_ == 1
    assert 0.5 < model.evals_result_["validation"]["auc"][-1] <= 1.0


def test_custom_objective_equal_to_builtin_gives_same_model():
    X, y = _regression()

    def squared(y_true, raw):
        return raw - y_true, np.ones_like(raw)

    a = GradientBoostingRegressor(n_estimators=8).fit(X, y)
    b = GradientBoostingRegressor(n_estimators=8, loss=squared).fit(X, y)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-10)

    Xc, yc = _classification()

    def logistic(y_true, raw):
        p = 1 / (1 + np.exp(-raw))
        return p - y_true, p * (1 - p)

    a = GradientBoostingClassifier(n_estimators=8).fit(Xc, yc)
    b = GradientBoostingClassifier(n_estimators=8, loss=logistic).fit(Xc, yc)
    np.testing.assert_allclose(a.predict_proba(Xc), b.predict_proba(Xc), rtol=1e-7)


def test_custom_objective_errors_name_the_iteration():
    X, y = _regression(100)
    calls = []

    def breaks_later(y_true, raw):
        calls.append(1)
        h = np.ones_like(raw)
        if len(calls) > 3:  # init uses the first calls
            h[0] = np.nan
        return raw - y_true, h

    with pytest.raises(ValueError, match=r"hessian at iteration \d+ holds NaN"):
        GradientBoostingRegressor(n_estimators=5, loss=breaks_later).fit(X, y)
    with pytest.raises(ValueError, match="gradient at the initial constant has shape"):
        GradientBoostingRegressor(
            n_estimators=5, loss=lambda t, r: (np.zeros(3), np.ones(3))).fit(X, y)


def test_categorical_and_missing_values():
    rng = np.random.RandomState(0)
    n = 2000
    category = rng.randint(0, 8, n)
    effect = np.array([3.0, -2.0, 0.5, 4.0, -1.0, 2.0, -3.0, 1.0])
    x1 = rng.randn(n)
    y = effect[category] + x1 + 0.1 * rng.randn(n)
    x1_missing = x1.copy()
    x1_missing[rng.rand(n) < 0.2] = np.nan
    y[np.isnan(x1_missing)] += 5.0  # missing carries signal: learned direction
    X = np.column_stack([category, x1_missing]).astype(float)
    model = GradientBoostingRegressor(n_estimators=60, categorical_features=[0],
                                      learning_rate=0.3).fit(X, y)
    assert model.score(X, y) > 0.95
    assert any(t.is_categorical.any() for it in model.estimators_ for t in it)
    # Unseen category and missing category at predict time follow the missing values.
    X_new = np.array([[99.0, 0.0], [np.nan, 0.0], [3.0, np.nan]])
    prediction = model.predict(X_new)
    assert np.all(np.isfinite(prediction))
    assert prediction[2] > effect[3] + 3.0  # the missing x1 effect was learned
    import pandas as pd
    frame = pd.DataFrame({"c": pd.Categorical(np.array(list("abcdefgh"))[category]),
                          "x": x1_missing})
    auto = GradientBoostingRegressor(n_estimators=60, categorical_features="auto",
                                     learning_rate=0.3).fit(frame, y)
    np.testing.assert_allclose(auto.predict(frame), model.predict(X), rtol=1e-10)


def test_monotonic_constraints_hold_on_a_grid():
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(1500, 3))
    y = X[:, 0] + np.sin(3 * X[:, 0]) - X[:, 1] + 0.5 * np.cos(4 * X[:, 1]) + X[:, 2]
    model = GradientBoostingRegressor(n_estimators=40, monotonic_constraints=[1, -1, 0],
                                      learning_rate=0.3).fit(X, y)
    grid = np.linspace(-3.5, 3.5, 200)
    for row in rng.uniform(-3, 3, size=(20, 3)):
        Xg = np.tile(row, (200, 1))
        Xg[:, 0] = grid
        assert np.all(np.diff(model.predict(Xg)) >= -1e-12)
        Xg = np.tile(row, (200, 1))
        Xg[:, 1] = grid
        assert np.all(np.diff(model.predict(Xg)) <= 1e-12)
    free = GradientBoostingRegressor(n_estimators=40, learning_rate=0.3).fit(X, y)
    Xg = np.zeros((200, 3))
    Xg[:, 0] = grid
    assert np.any(np.diff(free.predict(Xg)) < -1e-6)  # the constraint did something


def test_interaction_constraints():
    X, y = _regression(500)
    model = GradientBoostingRegressor(n_estimators=20, interaction_constraints=[[0, 1],
                                                                                [2, 3, 4]])
    model.fit(X, y)
    groups = [{0, 1}, {2, 3, 4}, {5}]
    for (tree,) in model.estimators_:
        # Every root-to-leaf path uses features of one group only.
        stack = [(0, set())]
        while stack:
            node, used = stack.pop()
            if tree.children_left[node] == -1:
                assert any(used <= g for g in groups), used
                continue
            used = used | {int(tree.feature[node])}
            stack += [(tree.children_left[node], used), (tree.children_right[node], used)]


def _outputs_with_one_and_two_threads(model, X, y, output, **fit_params):
    """``output(model fitted on X, y)`` with numba on one thread, then on two."""
    previous = numba.get_num_threads()
    outputs = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            outputs.append(output(clone(model).fit(X, y, **fit_params)))
    finally:
        numba.set_num_threads(previous)
    return outputs


# Both: 70,000 rows, so that the 70% in-bag sample (49,000) is above the grower's
# 2 * BLOCK_ROWS threshold and its parallel block passes run.
THREAD_TEST_PARAMS = dict(n_estimators=5, subsample=0.7, colsample_bynode=0.6, random_state=3)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_same_model_whatever_the_thread_count(n_classes):
    # With three classes and two threads, the trees of an iteration also grow at once in
    # two threads, each running the same row blocks serially.
    X, y = make_classification(70000, 8, n_informative=5, n_classes=n_classes,
                               random_state=0)
    X[::7, 2] = np.nan
    one, two = _outputs_with_one_and_two_threads(
        GradientBoostingClassifier(**THREAD_TEST_PARAMS), X, y,
        lambda model: model.decision_function(X))
    np.testing.assert_array_equal(one, two)


def test_same_regression_model_whatever_the_thread_count():
    # Squared error has a unit hessian: the grower's two-channel histograms, whose
    # parallel block sums must also be those of one thread.
    X, y = make_regression(70000, 8, noise=5.0, random_state=0)
    X[::7, 2] = np.nan
    one, two = _outputs_with_one_and_two_threads(
        GradientBoostingRegressor(**THREAD_TEST_PARAMS), X, y,
        lambda model: model.predict(X))
    np.testing.assert_array_equal(one, two)


def test_same_model_whatever_the_thread_count_with_the_block_partition():
    # 70,000 rows, no subsample: with two threads the root and its larger children are
    # split by both threads block by block (partition.partition_in_blocks), with one by
    # the serial pass: the same stable partition, the same trees.
    from silva.engine.partition import PARALLEL_PARTITION_MIN_ROWS

    X, y = make_classification(70000, 6, n_informative=4, random_state=4)
    X[::9, 1] = np.nan
    assert len(X) >= PARALLEL_PARTITION_MIN_ROWS
    model = GradientBoostingClassifier(n_estimators=3, max_leaf_nodes=8, random_state=0)
    one, two = _outputs_with_one_and_two_threads(model, X, y,
                                                 lambda fitted: fitted.decision_function(X))
    np.testing.assert_array_equal(one, two)


def test_same_model_whatever_the_thread_count_on_mid_size_data():
    # 6,000 rows: no row blocks, but nodes of 1,024 rows and more are summed by feature
    # shares in two threads, and each split's two children are searched at once, a
    # categorical feature and a monotonic constraint included.
    X, y = make_classification(6000, 12, n_informative=6, random_state=1)
    X[:, 3] = np.floor(np.abs(X[:, 3]) * 3) % 7  # category codes 0..6
    X[::11, 5] = np.nan
    model = GradientBoostingClassifier(n_estimators=8, random_state=0,
                                       categorical_features=[3],
                                       monotonic_constraints={0: 1})
    one, two = _outputs_with_one_and_two_threads(model, X, y,
                                                 lambda fitted: fitted.decision_function(X))
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("case", ["two_lanes", "weighted", "constrained", "wide"])
def test_same_regression_model_whatever_the_thread_count_on_mid_size_data(case):
    # 5,000 rows: with two threads each split's smaller child is summed, its sibling
    # subtracted and both scanned feature share by feature share in one parallel region
    # (gradient_children.children_pass); with one, node after node. Unit weights take the
    # two-channel sums, sample weights the four-channel ones; wide data (120 features)
    # sums in feature tiles and only subtracts and scans in the region.
    n_features = 120 if case == "wide" else 10
    X, y = make_regression(5000, n_features, n_informative=6, noise=5.0, random_state=2)
    X[::13, 4] = np.nan
    fit_params = {}
    model = GradientBoostingRegressor(n_estimators=6, max_leaf_nodes=40, random_state=0)
    if case == "weighted":
        fit_params["sample_weight"] = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    if case == "constrained":
        model.set_params(colsample_bynode=0.5, monotonic_constraints={0: 1},
                         interaction_constraints=[[0, 1, 2, 3], [4, 5, 6, 7, 8, 9]])
    one, two = _outputs_with_one_and_two_threads(model, X, y,
                                                 lambda fitted: fitted.predict(X),
                                                 **fit_params)
    np.testing.assert_array_equal(one, two)


def _root_sizes(model):
    """The number of (in-bag) rows each tree of ``model`` grew on."""
    return [int(tree.n_node_samples[0]) for trees in model.estimators_ for tree in trees]


def _depth(tree, node=0):
    if tree.children_left[node] == -1:
        return 0
    return 1 + max(_depth(tree, tree.children_left[node]),
                   _depth(tree, tree.children_right[node]))


def test_subsample_grows_each_tree_on_the_stated_fraction_of_rows():
    X, y = _classification(2000)
    model = GradientBoostingClassifier(n_estimators=10, subsample=0.5, random_state=0)
    sizes = _root_sizes(model.fit(X, y))
    # Each row is in the bag with probability 0.5: Binomial(2000, 0.5) rows per tree.
    assert all(abs(size - 1000) < 5 * np.sqrt(2000 * 0.25) for size in sizes), sizes
    assert len(set(sizes)) > 1  # a new draw every iteration
    assert _root_sizes(GradientBoostingClassifier(n_estimators=2).fit(X, y)) == [2000] * 2


def test_goss_grows_each_tree_on_the_top_and_the_drawn_rows():
    X, y = _classification(2000)
    model = GradientBoostingClassifier(n_estimators=10, sampling="goss", goss_top_rate=0.3,
                                       goss_other_rate=0.1, random_state=0).fit(X, y)
    assert _root_sizes(model) == [int(0.3 * 2000) + int(0.1 * 2000)] * 10


def test_colsample_bytree_limits_each_tree_to_its_draw_of_features():
    X, y = _classification(800)
    model = GradientBoostingClassifier(n_estimators=10, colsample_bytree=0.5,
                                       random_state=0).fit(X, y)
    used = [set(tree.feature[tree.children_left != -1]) for (tree,) in model.estimators_]
    assert all(len(features) <= 3 for features in used)  # round(0.5 * 6) per tree
    assert len(set().union(*used)) > 3  # different draws for different trees


def test_depthwise_growth_stops_at_max_depth():
    X, y = _classification(800)
    model = GradientBoostingClassifier(n_estimators=5, growth="depthwise", max_depth=3,
                                       max_leaf_nodes=None, min_samples_leaf=1).fit(X, y)
    depths = [_depth(tree) for (tree,) in model.estimators_]
    assert max(depths) == 3


def test_max_delta_step_bounds_every_leaf_value():
    X, y = _classification(800)
    capped = GradientBoostingClassifier(n_estimators=3, max_delta_step=0.05,
                                        learning_rate=1.0).fit(X, y)
    values = np.concatenate([tree.value.ravel() for (tree,) in capped.estimators_])
    assert np.abs(values).max() <= 0.05 + 1e-12
    assert np.isclose(np.abs(values).max(), 0.05)  # the bound binds on this data
    free = GradientBoostingClassifier(n_estimators=3, learning_rate=1.0).fit(X, y)
    assert max(np.abs(tree.value).max() for (tree,) in free.estimators_) > 0.05


def test_min_split_gain_refuses_splits_that_gain_no_more():
    X, y = _classification(800)
    root_gain = GradientBoostingClassifier(n_estimators=1).fit(X, y)._split_gains[0][0]
    above = GradientBoostingClassifier(n_estimators=1, min_split_gain=1.001 * root_gain)
    assert above.fit(X, y).estimators_[0][0].node_count == 1  # the root stays a leaf
    below = GradientBoostingClassifier(n_estimators=1, min_split_gain=0.999 * root_gain)
    # The root still splits, and its recorded gain is what it gains beyond the minimum.
    assert below.fit(X, y)._split_gains[0][0] == pytest.approx(0.001 * root_gain, rel=1e-6)


def test_importances_by_gain_and_by_split_count():
    X, y = _classification(800)
    gain = GradientBoostingClassifier(n_estimators=10).fit(X, y).feature_importances_
    model = GradientBoostingClassifier(n_estimators=10, importance_type="split").fit(X, y)
    split = model.feature_importances_
    assert gain.sum() == pytest.approx(1.0) and split.sum() == pytest.approx(1.0)
    assert not np.allclose(gain, split)
    counts = np.zeros(X.shape[1])
    for (tree,) in model.estimators_:
        np.add.at(counts, tree.feature[tree.children_left != -1], 1)
    np.testing.assert_allclose(split, counts / counts.sum())


def test_warm_start_equals_one_long_fit():
    X, y = _regression()
    full = GradientBoostingRegressor(n_estimators=10).fit(X, y)
    warm = GradientBoostingRegressor(n_estimators=4, warm_start=True).fit(X, y)
    warm.set_params(n_estimators=10).fit(X, y)
    assert warm.n_iter_ == 10
    np.testing.assert_allclose(warm.predict(X), full.predict(X), rtol=1e-10)


def test_bad_input_errors():
    X, y = _regression(100)
    with pytest.raises(ValueError, match="poisson.*y >= 0"):
        GradientBoostingRegressor(loss="poisson").fit(X, y)
    with pytest.raises(ValueError, match="gamma.*y > 0"):
        GradientBoostingRegressor(loss="gamma").fit(X, np.abs(y) * 0)
    Xc, yc = _classification(classes=3)
    with pytest.raises(ValueError, match="exponential.*3 classes"):
        GradientBoostingClassifier(loss="exponential").fit(Xc, yc)
    with pytest.raises(ValueError, match=r"eval_set\[0\].*features"):
        GradientBoostingRegressor(n_estimators=2).fit(X, y, eval_set=[(X[:, :3], y)])
    with pytest.raises(ValueError, match="learning_rate"):
        GradientBoostingRegressor(learning_rate=0).fit(X, y)
    with pytest.raises(ValueError, match="monotonic_constraints"):
        GradientBoostingRegressor(monotonic_constraints=[1, 0]).fit(X, y)
    with pytest.raises(ValueError, match="growth"):
        GradientBoostingRegressor(growth="wide").fit(X, y)
    with pytest.raises(ValueError, match="label"):
        GradientBoostingClassifier(n_estimators=2).fit(Xc, yc, eval_set=[(Xc, yc + 10)])


def test_verbose_logs_metrics_and_unfired_early_stopping_keeps_best(capsys):
    X, y = _regression(300)
    model = GradientBoostingRegressor(n_estimators=6, verbose=2, early_stopping_rounds=50,
                                      random_state=0).fit(X, y)
    out = capsys.readouterr().out
    assert "[2]\ttraining's loss:" in out and "validation's loss:" in out
    assert "[6]" in out and "[3]" not in out
    assert len(model.evals_result_["training"]["loss"]) == 6
    curve = model.evals_result_["validation"]["loss"]
    assert model.best_iteration_ == int(np.argmin(curve))
    assert model.n_iter_ == model.best_iteration_ + 1


def test_bin_subsample_places_edges_from_a_random_subset():
    X, y = make_classification(3000, 6, random_state=0)
    every_row = GradientBoostingClassifier(n_estimators=3, bin_subsample=None,
                                           random_state=0).fit(X, y)
    # No larger than the training set: every row places the edges, the same model.
    larger = GradientBoostingClassifier(n_estimators=3, bin_subsample=3000,
                                        random_state=0).fit(X, y)
    np.testing.assert_array_equal(larger._binner.bin_thresholds_,
                                  every_row._binner.bin_thresholds_)
    np.testing.assert_array_equal(larger.decision_function(X), every_row.decision_function(X))
    # A subset of 500 rows: edges placed on those rows' values only, the same each time.
    small = [GradientBoostingClassifier(n_estimators=3, bin_subsample=500, max_bins=16,
                                        random_state=0).fit(X, y) for _ in range(2)]
    thresholds = small[0]._binner.bin_thresholds_
    np.testing.assert_array_equal(thresholds, small[1]._binner.bin_thresholds_)
    assert not np.array_equal(
        thresholds, GradientBoostingClassifier(n_estimators=3, bin_subsample=None, max_bins=16,
                                               random_state=0).fit(X, y)._binner.bin_thresholds_)
    assert small[0].score(X, y) > 0.8


@pytest.mark.parametrize("value, error", [(1, ValueError), (0.5, TypeError)])
def test_bin_subsample_bad_values(value, error):
    X, y = make_classification(200, 4, random_state=0)
    with pytest.raises(error, match="bin_subsample"):
        GradientBoostingClassifier(n_estimators=2, bin_subsample=value).fit(X, y)


def test_min_samples_bin_gives_at_most_one_numeric_bin_per_that_many_rows():
    rng = np.random.default_rng(0)
    n = 450
    # Two continuous features (all values distinct), one with 40 values, one categorical.
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n),
                         rng.integers(0, 40, n).astype(float),
                         rng.integers(0, 200, n).astype(float)])
    y = X[:, 0] + X[:, 1] + 0.05 * X[:, 2] + rng.normal(size=n)
    model = GradientBoostingRegressor(n_estimators=3, categorical_features=[3]).fit(X, y)
    n_bins = model._binner.n_value_bins_
    # 450 // 3 = 150 quantile bins for the continuous features; the 40 values are binned
    # exactly, one bin each; the categorical feature keeps one bin per code.
    np.testing.assert_array_equal(n_bins[:3], [150, 150, 40])
    assert n_bins[3] == X[:, 3].max() + 1
    every = GradientBoostingRegressor(n_estimators=3, categorical_features=[3],
                                      min_samples_bin=1).fit(X, y)
    np.testing.assert_array_equal(every._binner.n_value_bins_[:3], [255, 255, 40])
    assert every._binner.n_value_bins_[3] == n_bins[3]
    # From 3 * max_bins rows on, the rule changes nothing; and never fewer than 2 bins.
    assert GradientBoostingRegressor(min_samples_bin=2)._numeric_bins(510) == 255
    assert GradientBoostingRegressor(max_bins=16)._numeric_bins(10_000) == 16
    assert GradientBoostingRegressor()._numeric_bins(4) == 2
    # bin_subsample: the rows that place the edges count.
    X_large = rng.normal(size=(3000, 2))
    sampled = GradientBoostingRegressor(n_estimators=2, bin_subsample=300,
                                        random_state=0).fit(X_large, X_large[:, 0])
    np.testing.assert_array_equal(sampled._binner.n_value_bins_, [100, 100])


def test_min_samples_bin_of_a_model_saved_before_it_existed():
    # A model file restores the attributes it holds (no __init__): one written before
    # min_samples_bin existed says it was binned with max_bins bins at any size.
    model = GradientBoostingClassifier(n_estimators=2)
    del model.min_samples_bin
    assert model.get_params()["min_samples_bin"] == 1


@pytest.mark.parametrize("value, error", [(0, ValueError), (1.5, TypeError)])
def test_min_samples_bin_bad_values(value, error):
    X, y = make_classification(200, 4, random_state=0)
    with pytest.raises(error, match="min_samples_bin"):
        GradientBoostingClassifier(n_estimators=2, min_samples_bin=value).fit(X, y)
