"""The packed storage of ensembles (silva.engine.ensemble): compact walk records, tree
views derived from them, renumbering, importances and persistence."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from silva import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
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


# Two trees that packing must renumber, making the same predictions. In both the root
# splits x0 <= 0 (missing values left), a split of x1 <= 0 below it on the left gives
# leaves of 20 and 30, and the root's right is a leaf of 10 (node ids in the comments).
_LEAF = -1
_RENUMBERED_LAYOUTS = {
    # 0 -> (2, 1), 2 -> (3, 4): a split's children are not adjacent.
    "siblings apart": dict(children_left=[2, _LEAF, 3, _LEAF, _LEAF],
                           children_right=[1, _LEAF, 4, _LEAF, _LEAF],
                           feature=[0, -2, 1, -2, -2], value=[0.0, 10.0, 0.0, 20.0, 30.0]),
    # 0 -> (3, 4), 3 -> (1, 2): adjacent children, but numbered before their parent (the
    # walk records tell a leaf by its left id being below its own).
    "children first": dict(children_left=[3, _LEAF, _LEAF, 1, _LEAF],
                           children_right=[4, _LEAF, _LEAF, 2, _LEAF],
                           feature=[0, -2, -2, 1, -2], value=[0.0, 20.0, 30.0, 0.0, 10.0]),
}


@pytest.mark.parametrize("layout", _RENUMBERED_LAYOUTS)
def test_a_tree_packing_cannot_walk_as_numbered_is_renumbered(layout):
    arrays = {name: np.array(values) for name, values in _RENUMBERED_LAYOUTS[layout].items()}
    split = arrays["feature"] >= 0
    tree = Tree(
        2, np.array([1]), arrays["children_left"], arrays["children_right"],
        arrays["feature"], threshold=np.where(split, 0.0, -2.0),
        missing_go_to_left=(np.arange(5) == 0).astype(np.uint8),
        is_categorical=np.zeros(5, dtype=bool),
        category_bitsets=np.zeros((5, 1), dtype=np.uint64),
        value=arrays["value"][:, None], impurity=np.zeros(5),
        n_node_samples=np.ones(5, dtype=np.intp), weighted_n_node_samples=np.ones(5))
    X = np.array([[1.0, 0.0], [-1.0, -1.0], [-1.0, 1.0], [np.nan, 1.0], [np.nan, -5.0]])
    packed = PackedTrees([tree])
    np.testing.assert_array_equal(packed.predict(X)[:, 0], [10.0, 20.0, 30.0, 30.0, 20.0])
    view = packed.tree(0)
    internal = view.children_left != -1
    np.testing.assert_array_equal(view.children_right[internal],
                                  view.children_left[internal] + 1)
    assert np.all(view.children_left[internal] > np.flatnonzero(internal))
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


# 1 and 7 rows: the serially compiled kernels (fewer than SERIAL_ROWS rows).
@pytest.mark.parametrize("n_rows", [1, 7, 600, 5000])
def test_packed_prediction_is_the_weighted_sum_of_each_trees_own(n_rows):
    # The reference: each Tree's own kernel, one tree at a time, added in tree order into
    # its output columns; trees 1 and 3 write to columns 2-3, with uneven weights.
    X, trees = _trees()
    rows = np.random.RandomState(n_rows).randint(0, X.shape[0], n_rows)
    X = X[rows]
    weights = np.array([1.0, 0.5, 2.0, 0.25])
    columns = np.array([0, 2, 0, 2])
    packed = PackedTrees(trees, tree_weight=weights, output_column=columns)
    np.testing.assert_array_equal(packed.apply(X),
                                  np.column_stack([tree.apply(X) for tree in trees]))
    for first, last in ((0, 4), (1, 3)):
        expected = np.zeros((n_rows, 4))
        for t in range(first, last):
            values = trees[t].predict(X)[:, 0]
            expected[:, columns[t]:columns[t] + 2] += weights[t] * values
        np.testing.assert_array_equal(packed.predict(X, tree_range=(first, last)), expected)


def test_a_dense_block_holds_at_most_block_values():
    from silva.engine import ensemble

    threads = ensemble.nb.get_num_threads()
    # Narrow rows: blocks of ROW_BLOCK rows, as many as a multiple of the threads.
    n_rows = 10 * ensemble.ROW_BLOCK
    narrow = ensemble._block_rows(n_rows, 28)
    assert narrow <= ensemble.ROW_BLOCK
    assert -(-n_rows // narrow) == -(-10 // threads) * threads
    # Wide rows: a block's values within the budget, so it stays in cache between trees.
    for n_columns in (200, 5000, 10**6):
        rows = ensemble._block_rows(n_rows, n_columns)
        assert rows <= max(8, ensemble.BLOCK_VALUES // n_columns)
    # A sparse X (no dense columns) keeps the row bound alone.
    assert ensemble._block_rows(n_rows, 0) == narrow


def test_wide_rows_predict_the_same_over_many_blocks(monkeypatch):
    # 3,000 rows of 300 columns in blocks of at most 40 rows: each row's sums as with
    # blocks of ROW_BLOCK rows, and as each tree's own.
    from silva.engine import ensemble

    X, y = make_regression(3000, 300, n_informative=20, random_state=0)
    model = RandomForestRegressor(n_estimators=5, max_depth=8, random_state=0).fit(X, y)
    trees = [tree.tree_ for tree in model.estimators_]
    packed = PackedTrees(trees)
    monkeypatch.setattr(ensemble, "BLOCK_VALUES", 300 * ensemble.ROW_BLOCK)
    whole = packed.predict(X)
    monkeypatch.setattr(ensemble, "BLOCK_VALUES", 300 * 40)
    assert ensemble._block_rows(3000, 300) <= 40
    np.testing.assert_array_equal(packed.predict(X), whole)
    np.testing.assert_array_equal(packed.apply(X),
                                  np.column_stack([tree.apply(X) for tree in trees]))
    expected = sum(tree.predict(X).reshape(X.shape[0]) for tree in trees)
    np.testing.assert_allclose(whole[:, 0], expected, rtol=1e-12)


def _walk_by_numpy(tree):
    """A tree's packed walk records (``ensemble.WALK_DTYPE``), built with whole-array
    numpy steps from the record layout's definition: the reference for the compiled
    ``_write_walk``."""
    from silva.engine import ensemble

    n_nodes = tree.node_count
    walk = np.zeros(n_nodes, dtype=ensemble.WALK_DTYPE)
    leaf = tree.children_left == -1
    walk["threshold"] = np.where(leaf, np.nan, tree.threshold)
    walk["left"] = np.where(leaf, np.arange(n_nodes) - 1, tree.children_left)
    flags = (tree.feature.astype(np.uint32) & ensemble.FEATURE_MASK)
    flags |= (tree.missing_go_to_left != 0).astype(np.uint32) << ensemble.MISSING_LEFT_BIT
    flags |= tree.is_categorical.astype(np.uint32) << ensemble.CATEGORICAL_BIT
    walk["feature_flags"] = np.where(leaf, 0, flags)
    return walk


def test_compiled_packing_matches_numpy():
    """The compiled per-tree packing steps (the walk records, the sibling test) give
    what the numpy formulation gives, on trees with missing values going either way,
    categorical splits and a one-leaf tree; a renumbered tree fails the sibling test."""
    from silva.engine import ensemble

    X, y = _mixed_data()
    forest = ExtraTreesClassifier(n_estimators=4, random_state=0,
                                  categorical_features=[5]).fit(X, y)
    trees = [forest._packed.tree(t) for t in range(4)]
    stump = Tree(X.shape[1], 2, np.array([-1]), np.array([-1]), np.array([-2]),
                 np.array([-2.0]), np.array([0]), np.array([False]),
                 np.zeros((1, 1), dtype=np.uint64), np.ones((1, 1, 2)), np.zeros(1),
                 np.array([5]), np.array([5.0]))
    assert any(tree.is_categorical.any() for tree in trees)
    assert any((tree.missing_go_to_left[tree.children_left != -1] != 0).any()
               for tree in trees)
    for tree in trees + [stump]:
        walk = np.zeros(tree.node_count, dtype=ensemble.WALK_DTYPE)
        ensemble._write_walk(walk, np.array([0, tree.node_count]), tree.children_left,
                             tree.feature, tree.threshold, tree.missing_go_to_left,
                             tree.is_categorical)
        assert walk.tobytes() == _walk_by_numpy(tree).tobytes()
        assert ensemble._siblings_adjacent(tree.children_left, tree.children_right)
    # Several trees in one call: each leaf record leads back to its id in its own tree.
    several = trees + [stump]
    node_offset = np.cumsum([0] + [tree.node_count for tree in several])
    walk = np.zeros(node_offset[-1], dtype=ensemble.WALK_DTYPE)
    ensemble._write_walk(walk, node_offset, *(
        np.concatenate([getattr(tree, name) for tree in several])
        for name in ("children_left", "feature", "threshold", "missing_go_to_left",
                     "is_categorical")))
    assert walk.tobytes() == b"".join(_walk_by_numpy(tree).tobytes() for tree in several)
    # Swapping the root's children breaks adjacency (the right child comes first).
    tree = trees[0]
    left, right = tree.children_left.copy(), tree.children_right.copy()
    left[0], right[0] = right[0], left[0]
    assert not ensemble._siblings_adjacent(left, right)


def _node_arrays(trees):
    """``(node_offset, arrays)``: the trees' per-node arrays concatenated, by Tree's
    names, as ``PackedTrees.from_node_arrays`` takes them."""
    node_offset = np.cumsum([0] + [tree.node_count for tree in trees])
    arrays = {name: np.concatenate([getattr(tree, name) for tree in trees])
              for name in STRUCTURE + STATS}
    width = max(tree.category_bitsets.shape[1] for tree in trees)
    arrays["category_bitsets"] = np.concatenate([
        np.pad(tree.category_bitsets, ((0, 0), (0, width - tree.category_bitsets.shape[1])))
        for tree in trees])
    arrays["value"] = np.concatenate([tree.value.reshape(tree.node_count, -1)
                                      for tree in trees])
    return node_offset, arrays


@pytest.mark.parametrize("categorical", [True, False])
def test_packing_from_node_arrays_equals_packing_the_trees(categorical):
    """``from_node_arrays`` (boosting's one-pass packing) stores what packing the tree
    objects one by one stores, attribute by attribute, with or without a categorical
    split (no bitsets are kept without one)."""
    X, y = _mixed_data()
    trees = [DecisionTreeClassifier(max_depth=4, random_state=seed,
                                    categorical_features=[5] if categorical else None)
             .fit(X, y).tree_ for seed in range(3)]
    assert any(tree.is_categorical.any() for tree in trees) == categorical
    weights, columns = np.array([1.0, 0.5, 2.0]), np.array([0, 1, 0])
    expected = PackedTrees(trees, tree_weight=weights, output_column=columns)
    node_offset, arrays = _node_arrays(trees)
    packed = PackedTrees.from_node_arrays(
        node_offset, X.shape[1], trees[0].n_classes, [tree.n_categories for tree in trees],
        **arrays, tree_weight=weights, output_column=columns)
    assert packed.__dict__.keys() == expected.__dict__.keys()
    for name, value in expected.__dict__.items():
        got = packed.__dict__[name]
        if isinstance(value, np.ndarray):
            assert got.dtype == value.dtype and got.tobytes() == value.tobytes(), name
        elif name == "n_categories":
            for a, b in zip(got, value, strict=True):
                np.testing.assert_array_equal(a, b)
        else:
            assert got == value, name
    np.testing.assert_array_equal(packed.predict(X), expected.predict(X))


def test_packing_from_node_arrays_refuses_children_apart():
    """``from_node_arrays`` does not renumber: a split whose children are not adjacent
    is refused, not packed into wrong walk records."""
    _, trees = _trees(2)
    node_offset, arrays = _node_arrays(trees)
    arrays["children_left"][0], arrays["children_right"][0] = (
        arrays["children_right"][0], arrays["children_left"][0])
    with pytest.raises(ValueError, match="left child \\+ 1"):
        PackedTrees.from_node_arrays(node_offset, 6, trees[0].n_classes,
                                     [tree.n_categories for tree in trees], **arrays)
