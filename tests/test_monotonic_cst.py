"""``monotonic_cst`` of CART trees, forests and extra trees (scikit-learn's semantics).

Two kinds of check: predictions are monotone along every constrained feature on a grid
(where the same model without constraints is not, so the check can fail), and a single
tree is scikit-learn's tree with the same constraint, node for node (features,
thresholds, leaf values), on integer features that silva bins exactly.
"""

import numpy as np
import pytest
from _compare import closest_sklearn_tree
from sklearn import tree as sktree

from silva import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from silva.persistence import load, save

CONSTRAINTS = [1, -1, 0, 0]


def _data(classification, n_samples=400, seed=0):
    """Integer features (< 50 distinct values: exact bins, sklearn's thresholds) and a
    target that rises with feature 0, falls with feature 1, with noise that makes an
    unconstrained tree break both orders locally."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 50, size=(n_samples, 4)).astype(np.float64)
    signal = 0.08 * X[:, 0] - 0.08 * X[:, 1] + 0.05 * X[:, 2]
    if classification:
        probability = 1.0 / (1.0 + np.exp(-(signal - signal.mean())))
        return X, (rng.uniform(size=n_samples) < probability).astype(int)
    return X, signal + rng.normal(scale=1.0, size=n_samples)


def _values(model, X):
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)[:, 1]
    return model.predict(X)


def _monotone_violation(model, X, feature, sign):
    """Largest drop (against ``sign``) of the prediction along ``feature`` over a grid
    that covers its range and beyond, from each of 40 rows of X."""
    grid = np.linspace(X[:, feature].min() - 1, X[:, feature].max() + 1, 120)
    rows = np.repeat(X[:40], grid.size, axis=0)
    rows[:, feature] = np.tile(grid, 40)
    values = _values(model, rows).reshape(40, grid.size)
    return max(0.0, float(-(np.diff(values, axis=1) * sign).min()))


MODELS = [
    (DecisionTreeClassifier, {}),
    (DecisionTreeRegressor, {}),
    (DecisionTreeClassifier, {"splitter": "random", "random_state": 0}),
    (DecisionTreeRegressor, {"max_leaf_nodes": 20}),
    (DecisionTreeRegressor, {"criterion": "absolute_error"}),
    (DecisionTreeRegressor, {"criterion": "friedman_mse", "max_features": 2,
                             "random_state": 0}),
    (RandomForestClassifier, {"n_estimators": 5, "random_state": 0}),
    (RandomForestRegressor, {"n_estimators": 5, "random_state": 0}),
    (ExtraTreesClassifier, {"n_estimators": 5, "random_state": 0}),
    (ExtraTreesRegressor, {"n_estimators": 5, "random_state": 0}),
]


@pytest.mark.parametrize(("estimator", "params"), MODELS,
                         ids=[f"{e.__name__}-{p}" for e, p in MODELS])
def test_predictions_are_monotone_along_constrained_features(estimator, params):
    classification = "Classifier" in estimator.__name__
    X, y = _data(classification)
    free = estimator(**params).fit(X, y)
    # The data break the orders locally: without constraints the model does too.
    assert max(_monotone_violation(free, X, 0, 1), _monotone_violation(free, X, 1, -1)) > 0
    model = estimator(monotonic_cst=CONSTRAINTS, **params).fit(X, y)
    assert _monotone_violation(model, X, 0, 1) == 0.0
    assert _monotone_violation(model, X, 1, -1) == 0.0
    # The constraint is not a constant model: the prediction still varies.
    assert np.ptp(_values(model, X)) > 0.1


def test_decreasing_constraint_on_the_positive_class_of_a_classifier():
    """Signs are on the probability of ``classes_[1]``, whatever the labels."""
    X, y = _data(True)
    labels = np.array(["no", "yes"])[y]
    model = DecisionTreeClassifier(monotonic_cst=[-1, 1, 0, 0]).fit(X, labels)
    assert list(model.classes_) == ["no", "yes"]
    assert _monotone_violation(model, X, 0, -1) == 0.0
    assert _monotone_violation(model, X, 1, 1) == 0.0


@pytest.mark.parametrize("classification", [True, False])
def test_monotone_with_missing_values(classification):
    X, y = _data(classification)
    X[::7, 0] = np.nan
    estimator = DecisionTreeClassifier if classification else DecisionTreeRegressor
    model = estimator(monotonic_cst=CONSTRAINTS).fit(X, y)
    observed = X[~np.isnan(X[:, 0])]
    assert _monotone_violation(model, observed, 0, 1) == 0.0
    assert _monotone_violation(model, observed, 1, -1) == 0.0


CASES = [
    ("classifier", "gini", {}),
    ("classifier", "entropy", {"min_samples_leaf": 3}),
    ("regressor", "squared_error", {}),
    ("regressor", "squared_error", {"max_depth": 5}),
    ("regressor", "poisson", {"min_samples_leaf": 3}),
    ("regressor", "absolute_error", {"min_samples_leaf": 3}),
]


@pytest.mark.parametrize(("kind", "criterion", "params"), CASES,
                         ids=[f"{k}-{c}-{p}" for k, c, p in CASES])
def test_same_tree_as_sklearn(kind, criterion, params):
    classification = kind == "classifier"
    X, y = _data(classification, seed=1)
    if criterion == "poisson":
        y = y - y.min() + 0.5
    if classification:
        ours, theirs = DecisionTreeClassifier, sktree.DecisionTreeClassifier
    else:
        ours, theirs = DecisionTreeRegressor, sktree.DecisionTreeRegressor
    model = ours(criterion=criterion, monotonic_cst=CONSTRAINTS, **params).fit(X, y)
    reference, comparison = closest_sklearn_tree(
        model, lambda seed: theirs(criterion=criterion, monotonic_cst=CONSTRAINTS,
                                   random_state=seed, **params), X, y)
    assert comparison.mismatches == []
    assert comparison.leaf_value_diffs == []
    assert comparison.threshold_diffs == []
    assert comparison.n_same >= 10
    if not (comparison.gain_ties or comparison.stop_ties or comparison.feature_ties):
        assert model.tree_.node_count == reference.tree_.node_count
        np.testing.assert_allclose(_values(model, X), _values(reference, X), rtol=1e-9,
                                   atol=1e-12)
    # The constraint changed the tree: scikit-learn's unconstrained tree differs.
    free = theirs(criterion=criterion, random_state=0, **params).fit(X, y)
    assert not np.allclose(_values(free, X), _values(reference, X))


@pytest.mark.parametrize("estimator", [DecisionTreeClassifier, RandomForestRegressor])
def test_all_zero_constraints_grow_the_unconstrained_model(estimator):
    X, y = _data(estimator is DecisionTreeClassifier)
    params = {"n_estimators": 3, "random_state": 0} if estimator is RandomForestRegressor \
        else {}
    free = estimator(**params).fit(X, y)
    zeros = estimator(monotonic_cst=np.zeros(4, dtype=int), **params).fit(X, y)
    np.testing.assert_array_equal(_values(free, X), _values(zeros, X))


def test_model_file_round_trip(tmp_path):
    X, y = _data(False)
    model = DecisionTreeRegressor(monotonic_cst=np.array(CONSTRAINTS)).fit(X, y)
    path = save(model, tmp_path / "model.silva")
    loaded = load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.monotonic_cst, CONSTRAINTS)


@pytest.mark.parametrize(("estimator", "params", "y_kind", "message"), [
    (DecisionTreeRegressor, {"monotonic_cst": [1, 0]}, "regression",
     "DecisionTreeRegressor: monotonic_cst has shape 2 but the input data X has 4 "
     "features"),
    (DecisionTreeRegressor, {"monotonic_cst": [2, 0, 0, 0]}, "regression",
     r"monotonic_cst must be None or an array-like of -1, 0 or 1, but got \[0 2\]"),
    (RandomForestClassifier, {"monotonic_cst": [1, 0, 0, 0], "n_estimators": 2},
     "multiclass", "RandomForestClassifier: Monotonicity constraints are not supported "
     "with multiclass classification"),
    (DecisionTreeRegressor, {"monotonic_cst": [0, 0, 0, 1], "categorical_features": [3]},
     "regression", r"constrains categorical feature\(s\) \[3\]"),
])
def test_bad_constraints_are_refused(estimator, params, y_kind, message):
    X, y = _data(False, n_samples=60)
    if y_kind == "multiclass":
        y = np.arange(60) % 3
    with pytest.raises(ValueError, match=message):
        estimator(**params).fit(X, y)


def test_histogram_and_parallel_paths_grow_the_same_tree(monkeypatch):
    """Large nodes search splits on histograms, in parallel over features (the monotone
    copy of the full grower); forced here on small data, they grow the tree that the
    serial row-summing path grows."""
    import silva.decision_tree

    X, y = _data(False)
    serial = DecisionTreeRegressor(monotonic_cst=CONSTRAINTS).fit(X, y)
    monkeypatch.setattr(silva.decision_tree, "HISTOGRAM_MIN_SAMPLES", 16)
    monkeypatch.setattr(silva.decision_tree, "PARALLEL_MIN_WORK", 64)
    large = DecisionTreeRegressor(monotonic_cst=CONSTRAINTS).fit(X, y)
    assert large.tree_.node_count == serial.tree_.node_count > 50
    np.testing.assert_array_equal(large.tree_.feature, serial.tree_.feature)
    np.testing.assert_array_equal(large.tree_.threshold, serial.tree_.threshold)
    np.testing.assert_allclose(large.tree_.value, serial.tree_.value, rtol=1e-12)
