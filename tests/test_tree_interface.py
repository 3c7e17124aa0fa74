"""The tree interface (silva.engine.tree_interface) agrees with each layout's arrays."""

import numpy as np
import pandas as pd
import pytest

from silva import DecisionTreeClassifier, RandomForestRegressor
from silva.classic import C45Classifier, ID3Classifier
from silva.engine.ensemble import PackedTreeView
from silva.engine.multiway import LEAF
from silva.engine.tree_interface import MISSING_BRANCH, branch_test


def _cart_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[:, 2] = rng.integers(0, 5, size=300)
    y = ((X[:, 0] > 0) ^ np.isin(X[:, 2], [1, 3])).astype(int)
    X[rng.random(300) < 0.1, 0] = np.nan
    return X, y


def _check_binary(tree):
    assert tree.n_nodes == tree.node_count
    assert not tree.multiway
    for node in range(tree.n_nodes):
        leaf = tree.children_left[node] == -1
        assert tree.is_leaf(node) == leaf
        np.testing.assert_array_equal(tree.node_value(node), tree.value[node, 0])
        if leaf:
            assert tree.children(node) == ()
            with pytest.raises(ValueError, match="leaf"):
                tree.split(node)
            continue
        assert tree.children(node) == (tree.children_left[node], tree.children_right[node])
        split = tree.split(node)
        assert split.feature == tree.feature[node]
        assert split.branches == (0, 1)
        assert split.missing_branch == (0 if tree.missing_go_to_left[node] else 1)
        if tree.is_categorical[node]:
            assert split.kind == "categories"
            assert split.categories_left == tuple(tree.categories_left(node))
        else:
            assert split.kind == "threshold"
            assert split.threshold == tree.threshold[node]


def test_cart_tree_with_categories_and_missing_values():
    X, y = _cart_data()
    tree = DecisionTreeClassifier(categorical_features=[2], random_state=0).fit(X, y).tree_
    kinds = {tree.split(node).kind for node in range(tree.n_nodes) if not tree.is_leaf(node)}
    assert kinds == {"threshold", "categories"}
    assert len(set(tree.missing_go_to_left[tree.children_left != -1])) == 2
    _check_binary(tree)


def test_forest_member_is_a_packed_view_with_the_same_interface():
    X, y = _cart_data()
    forest = RandomForestRegressor(n_estimators=3, max_depth=4, random_state=0).fit(X, y)
    tree = forest.estimators_[1].tree_
    assert isinstance(tree, PackedTreeView)
    _check_binary(tree)


def _check_multiway(tree):
    assert tree.multiway
    assert tree.n_nodes == tree.kind.shape[0]
    for node in range(tree.n_nodes):
        assert tree.is_leaf(node) == (tree.kind[node] == LEAF)
        if tree.is_leaf(node):
            assert tree.children(node) == ()
            continue
        split = tree.split(node)
        start, n = tree.first_branch[node], tree.n_branches[node]
        expected = [(b, c) for b, c in enumerate(tree.branch_child[start:start + n]) if c >= 0]
        if tree.missing_child[node] >= 0:
            expected.append((MISSING_BRANCH, tree.missing_child[node]))
            assert split.missing_branch == MISSING_BRANCH
        else:
            assert split.missing_branch is None
        assert tree.children(node) == tuple(c for _, c in expected)
        assert split.branches == tuple(b for b, _ in expected)
        assert split.feature == tree.feature[node]


def test_id3_tree_on_categories_and_intervals():
    frame = pd.DataFrame({
        "colour": ["red", "blue", "green", "red", "blue", "green"] * 10,
        "size": np.tile(np.arange(12.0), 5),
    })
    y = (frame["colour"].eq("red") | (frame["size"] > 8)).map({True: "a", False: "b"})
    tree = ID3Classifier().fit(frame, y).tree_
    _check_multiway(tree)
    splits = [tree.split(node) for node in range(tree.n_nodes) if not tree.is_leaf(node)]
    assert {split.kind for split in splits} == {"values", "intervals"}
    for split in splits:
        if split.kind == "values":  # branch b takes category b, printed by its name
            names = tree.value_names[split.feature]
            assert [branch_test(split, b) for b in split.branches] == \
                [f"= {names[b]}" for b in split.branches]
        else:
            edges = tree.bin_edges[split.feature, :tree.n_bin_edges[split.feature]]
            assert split.bin_edges == tuple(edges)
            assert branch_test(split, 0) == f"in (-inf, {edges[0]:.2f}]"


def test_c45_threshold_split_reads_like_the_tree():
    X = np.arange(40.0).reshape(-1, 1)
    y = (X[:, 0] > 17.5).astype(int)
    tree = C45Classifier(confidence=1.0).fit(X, y).tree_
    _check_multiway(tree)
    split = tree.split(0)
    assert split.kind == "threshold" and split.branches == (0, 1)
    assert branch_test(split, 0, 1) == f"<= {tree.threshold[0]:.1f}"
    assert tree.branch_condition(0, 1, "x", 1) == f"x >  {tree.threshold[0]:.1f}"
    assert branch_test(split, MISSING_BRANCH) == "is missing"
