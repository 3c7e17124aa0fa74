"""The Tree's prediction kernels against a naive walk of its flat arrays, written from
the contract in silva/engine/tree.py's docstring."""

import numpy as np
import pytest

from silva import DecisionTreeClassifier
from silva.engine.tree import PARALLEL_MIN_ROWS, Tree


def _goes_left_naive(tree, node, x):
    """The contract: NaN follows ``missing_go_to_left``; a categorical split sends left
    the codes whose bit is set, and codes it cannot hold (negative, non-integer, beyond
    the bitset) follow the missing values; a numeric split sends ``x <= threshold`` left."""
    if np.isnan(x):
        return bool(tree.missing_go_to_left[node])
    if tree.is_categorical[node]:
        n_codes = tree.category_bitsets.shape[1] * 64
        if x < 0 or x >= n_codes or x != int(x):
            return bool(tree.missing_go_to_left[node])
        code = int(x)
        return bool((int(tree.category_bitsets[node, code // 64]) >> (code % 64)) & 1)
    return x <= tree.threshold[node]


def _path_naive(tree, row):
    node, path = 0, [0]
    while tree.children_left[node] != -1:
        left = _goes_left_naive(tree, node, row[tree.feature[node]])
        node = tree.children_left[node] if left else tree.children_right[node]
        path.append(node)
    return path


def _hand_built_tree():
    """Root: categorical on feature 0, codes {1, 70} left (two bitset words), missing
    right; left child: x1 <= 0.5, missing left."""
    bitsets = np.zeros((5, 2), np.uint64)
    bitsets[0, 0] = np.uint64(1) << np.uint64(1)
    bitsets[0, 1] = np.uint64(1) << np.uint64(70 - 64)
    return Tree(
        n_features=2, n_classes=2, children_left=[1, 3, -1, -1, -1],
        children_right=[2, 4, -1, -1, -1], feature=[0, 1, -2, -2, -2],
        threshold=[-2.0, 0.5, -2.0, -2.0, -2.0], missing_go_to_left=[0, 1, 0, 0, 0],
        is_categorical=[True, False, False, False, False], category_bitsets=bitsets,
        value=np.eye(5, 2), impurity=np.zeros(5), n_node_samples=[4, 2, 2, 1, 1],
        weighted_n_node_samples=[4.0, 2.0, 2.0, 1.0, 1.0], n_categories=[71, 0])


def test_hand_built_tree_routes_as_its_contract_says():
    tree = _hand_built_tree()
    X = np.array([[1, 0.5], [1, 0.6], [70, np.nan], [2, 0.0], [np.nan, 0.0],
                  [-1, 0.0], [1.5, 0.0], [200, 0.0], [0, 0.0]])
    expected = [3, 4, 3, 2, 2, 2, 2, 2, 2]
    np.testing.assert_array_equal(tree.apply(X), expected)
    np.testing.assert_array_equal([_path_naive(tree, row)[-1] for row in X], expected)
    np.testing.assert_array_equal(tree.categories_left(0), [1, 70])


@pytest.fixture(scope="module")
def fitted_tree():
    rng = np.random.default_rng(0)
    n = 600
    X = np.column_stack([rng.integers(0, 6, n).astype(float), rng.normal(size=n),
                         np.round(rng.normal(size=n), 1)])
    X[rng.random(n) < 0.1, 1] = np.nan
    X[rng.random(n) < 0.1, 0] = np.nan
    y = ((X[:, 0] % 3 == 1) ^ (np.nan_to_num(X[:, 1]) > 0.2)).astype(int)
    model = DecisionTreeClassifier(categorical_features=[0], max_depth=6, random_state=0)
    return model.fit(X, y).tree_


# Fewer rows than PARALLEL_MIN_ROWS are walked serially, more in parallel.
@pytest.mark.parametrize("n_rows", [500, PARALLEL_MIN_ROWS + 10])
def test_apply_and_decision_path_equal_the_naive_walk(fitted_tree, n_rows):
    tree = fitted_tree
    assert tree.is_categorical.any()
    rng = np.random.default_rng(n_rows)
    # New rows, with unseen, negative and non-integer codes and missing values.
    X = np.column_stack([rng.choice([0, 1, 2, 3, 4, 5, 9, -1, 2.5, np.nan], n_rows),
                         rng.normal(size=n_rows), np.round(rng.normal(size=n_rows), 1)])
    X[rng.random(n_rows) < 0.1, 1] = np.nan
    paths = [_path_naive(tree, row) for row in X]
    leaves = tree.apply(X)
    np.testing.assert_array_equal(leaves, [path[-1] for path in paths])
    np.testing.assert_array_equal(tree.predict(X), tree.value[leaves])
    dense = tree.decision_path(X).toarray()
    expected = np.zeros_like(dense)
    for i, path in enumerate(paths):
        expected[i, path] = 1
    np.testing.assert_array_equal(dense, expected)
