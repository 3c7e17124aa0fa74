"""Minimal cost-complexity pruning against a hand-built tree and a naive weakest-link
loop (Breiman et al. 1984, ch. 3)."""

import numpy as np
import pytest

from silva import DecisionTreeClassifier
from silva.engine.pruning import cost_complexity_path, prune_tree
from silva.engine.tree import Tree


def _tree(children_left, children_right, weighted_n, impurity):
    n_nodes = len(children_left)
    internal = np.asarray(children_left) >= 0
    return Tree(
        n_features=1, n_classes=2, children_left=children_left,
        children_right=children_right, feature=np.where(internal, 0, -2),
        threshold=np.where(internal, 0.5, -2.0), missing_go_to_left=np.zeros(n_nodes),
        is_categorical=np.zeros(n_nodes, bool),
        category_bitsets=np.zeros((n_nodes, 1), np.uint64), value=np.full((n_nodes, 2), 0.5),
        impurity=impurity, n_node_samples=np.rint(weighted_n),
        weighted_n_node_samples=weighted_n)


# A full tree of depth 2: root 0 (10 samples), children 1 (6) and 2 (4), leaves 3, 4 of
# node 1 and 5, 6 of node 2. R(t) = w_t / W * impurity_t:
#   R(0) = 0.5, R(1) = 0.24, R(2) = 0.12, leaves 0.03, 0.06, 0.00, 0.05.
# Effective alphas (R(t) - R(T_t)) / (leaves - 1):
#   node 1: (0.24 - 0.09) / 1 = 0.15, node 2: (0.12 - 0.05) / 1 = 0.07,
#   root:   (0.5 - 0.14) / 3 = 0.12.
# Node 2 goes first (0.07); the root then has (0.5 - 0.21) / 2 = 0.145 < 0.15, so the
# whole tree collapses next.
HAND_BUILT = dict(children_left=[1, 3, 5, -1, -1, -1, -1],
                  children_right=[2, 4, 6, -1, -1, -1, -1],
                  weighted_n=[10.0, 6.0, 4.0, 3.0, 3.0, 2.0, 2.0],
                  impurity=[0.5, 0.4, 0.3, 0.1, 0.2, 0.0, 0.25])


def test_weakest_link_path_of_a_hand_built_tree():
    alphas, impurities = cost_complexity_path(_tree(**HAND_BUILT))
    np.testing.assert_allclose(alphas, [0.0, 0.07, 0.145], atol=1e-12)
    np.testing.assert_allclose(impurities, [0.14, 0.21, 0.5], atol=1e-12)


@pytest.mark.parametrize(("ccp_alpha", "n_nodes", "n_leaves"),
                         [(0.0, 7, 4), (0.069, 7, 4), (0.071, 5, 3), (0.144, 5, 3),
                          (0.146, 1, 1), (1.0, 1, 1)])
def test_prune_tree_at_alpha(ccp_alpha, n_nodes, n_leaves):
    # alphas a little off the path's, which are rounded sums: 0.145 may be 0.14500000000000002
    pruned = prune_tree(_tree(**HAND_BUILT), ccp_alpha)
    assert pruned.node_count == n_nodes and pruned.n_leaves == n_leaves
    if n_nodes == 5:
        # node 2 became a leaf; node 1 keeps its two leaves
        left, right = pruned.children_left[0], pruned.children_right[0]
        assert pruned.children_left[right] == -1
        assert pruned.children_left[left] != -1
        assert pruned.weighted_n_node_samples[right] == 4.0


def _naive_path(tree):
    """Weakest-link pruning by recomputing every internal node's effective alpha at each
    step and collapsing the smallest (lowest id among equals)."""
    left, right = tree.children_left.copy(), tree.children_right.copy()
    r = tree.weighted_n_node_samples / tree.weighted_n_node_samples[0] * tree.impurity

    def branch(node):  # (R(T_t), leaves of T_t)
        if left[node] < 0:
            return r[node], 1
        a, b = branch(left[node]), branch(right[node])
        return a[0] + b[0], a[1] + b[1]

    alphas, impurities = [0.0], [branch(0)[0]]
    while left[0] >= 0:
        effective = {}
        for node in range(tree.node_count):
            if left[node] >= 0 and _reachable(left, right, node):
                risk, leaves = branch(node)
                effective[node] = (r[node] - risk) / (leaves - 1)
        weakest = min(effective, key=lambda node: (effective[node], node))
        left[weakest] = right[weakest] = -1
        alphas.append(max(effective[weakest], alphas[-1]))
        impurities.append(branch(0)[0])
    return np.array(alphas), np.array(impurities)


def _reachable(left, right, target):
    stack = [0]
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if left[node] >= 0:
            stack += [left[node], right[node]]
    return False


def test_path_of_a_fitted_tree_equals_the_naive_loop():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.8, size=300) > 0).astype(int)
    tree = DecisionTreeClassifier(max_leaf_nodes=20, random_state=0).fit(X, y).tree_
    alphas, impurities = cost_complexity_path(tree)
    expected_alphas, expected_impurities = _naive_path(tree)
    assert alphas.size == expected_alphas.size
    np.testing.assert_allclose(alphas, expected_alphas, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(impurities, expected_impurities, rtol=1e-9)
