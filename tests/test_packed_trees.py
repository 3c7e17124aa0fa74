"""The packed storage of ensembles (silva.engine.ensemble): compact walk records, tree
views derived from them, renumbering, importances and persistence."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from silva import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from silva.engine.ensemble import PackedTrees, PackedTreeView
from silva.engine.tree import Tree

STRUCTURE = ("children_left", "children_right", "feature", "threshold",
             "missing_go_to_left", "is_categorical")
STATS = ("impurity", "n_node_samples", "weighted_n_node_samples")


def _mixed_data(n=600, seed=0):
    """Numeric columns with missing values and one categorical column of 70 codes (two
    bitset words), so that every kind of split and record flag occurs."""
    X, y = make_classification(n, 6, n_informative=4, random_state=seed)
    rng = np.random.RandomState(seed)
    X[rng.rand(n) < 0.15, 1] = np.nan
    X[:, 5] = rng.randint(0, 70, n)
    y = (y + (X[:, 5] % 3 == 0)) % 2
    return X, y


def _trees(n_trees=4):
    X, y = _mixed_data()
    trees = []
    for seed in range(n_trees):
        model = DecisionTreeClassifier(max_features=0.7, categorical_features=[5],
                                       random_state=seed).fit(X, y)
        trees.append(model.tree_)
    return X, trees


def test_views_give_back_the_packed_trees_arrays():
    X, trees = _trees()
    assert any(tree.is_categorical.any() for tree in trees)
    assert any(tree.missing_go_to_left[tree.children_left != -1].any() for tree in trees)
    packed = PackedTrees(trees)
    for t, tree in enumerate(trees):
        view = packed.tree(t)
        assert isinstance(view, PackedTreeView)
        assert view.node_count == tree.node_count and view.n_leaves == tree.n_leaves
        for name in STRUCTURE + STATS:
            np.testing.assert_array_equal(getattr(view, name), getattr(tree, name), name)
        np.testing.assert_array_equal(view.value, tree.value)
        np.testing.assert_array_equal(view.apply(X), tree.apply(X))
        np.testing.assert_array_equal(view.category_bitsets[:, :tree.category_bitsets.shape[1]],
                                      tree.category_bitsets)
    np.testing.assert_array_equal(packed.apply(X), np.column_stack([t.apply(X) for t in trees]))
    expected = sum(tree.predict(X)[:, 0, :] for tree in trees)
    np.testing.assert_allclose(packed.predict(X), expected, rtol=1e-12)


def test_a_tree_whose_siblings_are_not_adjacent_is_renumbered():
    # Node 0 splits x0 <= 0 into node 2 (left) and node 1 (right); node 2 splits x1 <= 0
    # into leaves 3 and 4. The walk records keep only the left child, so packing must
    # renumber the tree; its predictions stay the same.
    leaf = -1
    tree = Tree(
        2, np.array([1]),
        children_left=np.array([2, leaf, 3, leaf, leaf]),
        children_right=np.array([1, leaf, 4, leaf, leaf]),
        feature=np.array([0, -2, 1, -2, -2]),
        threshold=np.array([0.0, -2.0, 0.0, -2.0, -2.0]),
        missing_go_to_left=np.array([1, 0, 0, 0, 0]),
        is_categorical=np.zeros(5, dtype=bool),
        category_bitsets=np.zeros((5, 1), dtype=np.uint64),
        value=np.array([[0.0], [10.0], [0.0], [20.0], [30.0]]),
        impurity=np.zeros(5), n_node_samples=np.ones(5, dtype=np.intp),
        weighted_n_node_samples=np.ones(5))
    X = np.array([[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0], [np.nan, 1.0], [np.nan, -5.0]])
    packed = PackedTrees([tree])
    np.testing.assert_array_equal(packed.predict(X)[:, 0], [10.0, 20.0, 30.0, 30.0, 20.0])
    view = packed.tree(0)
    internal = view.children_left != -1
    np.testing.assert_array_equal(view.children_right[internal],
                                  view.children_left[internal] + 1)
    np.testing.assert_array_equal(view.predict(X)[:, 0, 0], tree.predict(X)[:, 0, 0])


def test_packed_importances_equal_each_trees_own():
    _, trees = _trees()
    packed = PackedTrees(trees)
    expected = np.array([tree.compute_feature_importances() for tree in trees])
    np.testing.assert_allclose(packed.feature_importances(), expected, rtol=1e-12,
                               atol=1e-15)


def test_reserved_capacity_is_given_back():
    X, trees = _trees(3)
    reserved = PackedTrees(trees, expected_nodes=1_000_000)
    grown = PackedTrees(iter(trees))  # from a generator, growing the arrays as it goes
    n_nodes = sum(tree.node_count for tree in trees)
    for packed in (reserved, grown):
        assert packed.walk.shape[0] == packed.value.shape[0] == n_nodes
        assert packed.impurity.shape[0] == n_nodes
        np.testing.assert_array_equal(packed.predict(X), reserved.predict(X))


def test_regression_trees_pack_with_weights():
    X, y = make_regression(500, 5, noise=5.0, random_state=0)
    trees = [DecisionTreeRegressor(max_depth=d, random_state=0).fit(X, y).tree_
             for d in (2, 5, None)]
    packed = PackedTrees(trees, tree_weight=[1.0, 0.5, 0.25])
    weights = [1.0, 0.5, 0.25]
    expected = sum(w * tree.predict(X)[:, 0, 0] for w, tree in zip(weights, trees, strict=True))
    np.testing.assert_allclose(packed.predict(X)[:, 0], expected, rtol=1e-12)


@pytest.mark.parametrize("cls", [RandomForestClassifier, RandomForestRegressor])
def test_a_saved_forest_keeps_one_copy_of_its_nodes(cls, tmp_path):
    X, y = _mixed_data(400)
    forest = cls(n_estimators=5, categorical_features=[5], random_state=0).fit(X, y)
    expected = forest.predict(X)
    importances = forest.feature_importances_
    loaded_pickle = pickle.loads(pickle.dumps(forest))
    forest.save(tmp_path / "forest.silva")
    loaded_file = cls.load(tmp_path / "forest.silva")
    for loaded in (loaded_pickle, loaded_file):
        for estimator in loaded.estimators_:
            assert isinstance(estimator.tree_, PackedTreeView)
            assert estimator.tree_._packed is loaded._packed
        np.testing.assert_array_equal(loaded.predict(X), expected)
        np.testing.assert_allclose(loaded.feature_importances_, importances, rtol=1e-12)
        np.testing.assert_array_equal(loaded.estimators_[2].predict(X),
                                      forest.estimators_[2].predict(X))


def test_forest_importances_are_the_mean_of_its_trees():
    X, y = _mixed_data(400)
    forest = RandomForestClassifier(n_estimators=6, random_state=0).fit(X, y)
    per_tree = [e.tree_.compute_feature_importances() for e in forest.estimators_]
    expected = np.mean(per_tree, axis=0)
    np.testing.assert_allclose(forest.feature_importances_, expected / expected.sum(),
                               rtol=1e-12)
