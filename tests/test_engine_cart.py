"""silva.engine.cart: growing one CART tree from the bundles, and the shared mixins that
the tree estimators built on it use."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

from silva import DecisionTreeClassifier, RandomForestClassifier
from silva._mixins import PredictLogProbaMixin
from silva.engine import criteria
from silva.engine.cart import BinnedData, GrowthRules, TreeTask, grow_cart_tree


def _grown(max_leaf_nodes=0):
    X, y = make_classification(300, 5, random_state=0)
    X[::7, 2] = np.nan
    weight = np.ones(300)
    weight[::5] = 0.0  # samples of zero weight are left out of the task
    data = BinnedData.from_X(X, np.zeros(5, dtype=bool), 255)
    rules = GrowthRules(criterion=criteria.GINI, n_classes=2, n_values=2, max_depth=6,
                        min_samples_split=2, min_samples_leaf=1,
                        max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=0.0,
                        max_features=5, use_random=False, histogram_min_samples=64,
                        parallel_min_work=200_000)
    y_float = y.astype(np.float64)
    task = TreeTask(stats=criteria.build_statistics(criteria.GINI, y_float, weight, 2),
                    y=y_float, weight=weight,
                    sample_indices=np.flatnonzero(weight > 0).astype(np.int32),
                    min_weight_leaf=0.0, seed=np.uint64(3))
    before = task.sample_indices.copy()
    return X, task, before, grow_cart_tree(data, rules, task)


@pytest.mark.parametrize("max_leaf_nodes", [0, 9])
def test_leaf_samples_are_the_samples_each_node_holds(max_leaf_nodes):
    X, task, before, grown = _grown(max_leaf_nodes)
    tree = grown.tree
    np.testing.assert_array_equal(task.sample_indices, before)  # the task is not touched
    np.testing.assert_array_equal(np.sort(grown.leaf_samples), before)
    assert (grown.node_start[0], grown.node_end[0]) == (0, before.size)
    for node in range(tree.node_count):
        start, end = grown.node_start[node], grown.node_end[node]
        assert end - start == tree.n_node_samples[node]
        left, right = tree.children_left[node], tree.children_right[node]
        if left != -1:
            # A split cuts its node's range into its children's, left then right.
            middle = grown.node_start[right]
            assert (grown.node_start[left], grown.node_end[left]) == (start, middle)
            assert grown.node_end[right] == end
    # Each leaf's range holds exactly the training samples that predict there.
    leaves = tree.apply(X[before])
    for leaf in np.unique(leaves):
        held = grown.leaf_samples[grown.node_start[leaf]:grown.node_end[leaf]]
        np.testing.assert_array_equal(np.sort(held), before[leaves == leaf])
    if max_leaf_nodes:
        assert tree.n_leaves <= max_leaf_nodes


def test_single_tree_and_one_tree_forest_grow_the_same_tree():
    # Without bootstrap, a one-tree forest grows on all samples with the same bundles as
    # the single tree; only the seed differs, and with every feature drawn and "best"
    # splits the seed decides nothing.
    X, y = make_classification(400, 6, random_state=1)
    tree = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y).tree_
    forest = RandomForestClassifier(1, max_depth=5, max_features=None, bootstrap=False,
                                    random_state=0).fit(X, y)
    grown = forest.estimators_[0].tree_
    assert grown.node_count == tree.node_count
    for name in ("children_left", "feature", "threshold", "n_node_samples"):
        np.testing.assert_array_equal(getattr(grown, name), getattr(tree, name))
    np.testing.assert_array_equal(grown.value, tree.value)


class _TwoClasses(PredictLogProbaMixin):
    def predict_proba(self, X):
        return np.array([[0.25, 0.75], [1.0, 0.0]])


def test_predict_log_proba_is_minus_infinity_at_zero_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log_proba = _TwoClasses().predict_log_proba(None)
    np.testing.assert_array_equal(log_proba, [[np.log(0.25), np.log(0.75)], [0.0, -np.inf]])


# ---------------------------------------------- scikit-learn's tree tests (issue 23 item 1)
def test_friedman_mse_improvement_is_in_min_impurity_decrease_units():
    from silva import DecisionTreeRegressor

    X, y = make_classification(n_samples=100, random_state=42)
    for bound in (0.0001, 0.05):
        friedman = DecisionTreeRegressor(criterion="friedman_mse",
                                         min_impurity_decrease=bound, random_state=0)
        squared = DecisionTreeRegressor(min_impurity_decrease=bound, random_state=0)
        tree = friedman.fit(X, y).tree_
        weighted = tree.impurity * tree.weighted_n_node_samples / 100
        for node in np.flatnonzero(tree.children_left >= 0):
            left, right = tree.children_left[node], tree.children_right[node]
            assert weighted[node] - weighted[left] - weighted[right] > bound - 1e-10
        # Equal in exact arithmetic to squared_error's improvement: the same tree here.
        np.testing.assert_array_equal(tree.feature, squared.fit(X, y).tree_.feature)


def test_poisson_children_of_zero_targets_are_never_made():
    from sklearn.datasets import make_regression

    from silva import DecisionTreeRegressor

    X, y = make_regression(n_samples=1000, n_features=10, n_informative=6, effective_rank=6,
                           tail_strength=0.6, random_state=0)
    y[(-1 < y) & (y < 0)] = 0  # excess zeros, whose sums by subtraction round to ~1e-15
    y = np.abs(y)
    model = DecisionTreeRegressor(criterion="poisson", random_state=0).fit(X, y)
    assert np.all(model.predict(X) > 0)
    leaves = model.tree_.children_left < 0
    assert np.all(model.tree_.value.ravel()[leaves] > 0)


def test_wide_data_gathers_the_drawn_features_codes():
    from silva.engine.cart import gathers_codes
    assert gathers_codes(1000, 31)  # "sqrt" of 1,000 columns
    assert not gathers_codes(28, 5)  # the narrow data the grower is tuned on
    assert not gathers_codes(1000, 1000)  # every feature searched at every node


@pytest.mark.parametrize("estimator, options", [
    ("RandomForestClassifier", {}),
    ("ExtraTreesClassifier", {}),
    ("RandomForestRegressor", {"max_features": 0.1}),
    ("ExtraTreesRegressor", {"max_features": 0.1, "max_leaf_nodes": 40}),
    ("RandomForestClassifier", {"categorical_features": [3], "criterion": "entropy"}),
    ("RandomForestRegressor", {"max_features": 0.1, "criterion": "absolute_error"}),
])
def test_gathered_codes_grow_the_trees_that_ordered_codes_do(monkeypatch, estimator,
                                                           options):
    """Gathering the drawn features' codes per node (wide data) or keeping every sample's
    codes in node order is a choice of speed only: the same trees, for every splitter,
    with missing values and categories."""
    import silva
    from silva.engine import cart

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 40))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 3] = rng.integers(0, 5, 400)
    signal = np.nan_to_num(X[:, :5]).sum(axis=1) + 0.5 * rng.standard_normal(400)
    y = signal if estimator.endswith("Regressor") else (signal > 0).astype(int)

    def fitted(ratio):
        monkeypatch.setattr(cart, "GATHER_FEATURE_RATIO", ratio)
        model = getattr(silva, estimator)(n_estimators=4, random_state=0, **options)
        return model.fit(X, y)

    gathered, ordered = fitted(1), fitted(10**9)
    for a, b in zip(gathered.estimators_, ordered.estimators_, strict=True):
        np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)
        np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)
        np.testing.assert_array_equal(a.tree_.value, b.tree_.value)
