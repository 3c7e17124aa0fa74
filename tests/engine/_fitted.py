"""Checks of a fitted Tree against the training rows that reach each of its nodes."""

import numpy as np


def _node_members(tree, X):
    """(n_rows, node_count) bool: the nodes each row passes through."""
    return tree.decision_path(X).toarray().astype(bool)


def check_nodes_hold_their_samples(tree, X, weights):
    """Every node holds exactly the training rows routed to it: counts and weights add
    up to the parent's, and each numeric threshold separates the values of the two
    children's rows. Returns which rows reach each node, (n_rows, node_count) bool."""
    members = _node_members(tree, X)
    np.testing.assert_array_equal(members.sum(axis=0), tree.n_node_samples)
    np.testing.assert_allclose(weights @ members, tree.weighted_n_node_samples, rtol=1e-12)
    internal = np.flatnonzero(tree.children_left != -1)
    assert tree.node_count == 2 * internal.size + 1
    for node in internal:
        left, right = tree.children_left[node], tree.children_right[node]
        assert tree.n_node_samples[left] + tree.n_node_samples[right] == \
            tree.n_node_samples[node]
        if not tree.is_categorical[node]:
            x = X[:, tree.feature[node]]
            present = ~np.isnan(x)
            assert np.all(x[members[:, left] & present] <= tree.threshold[node])
            assert np.all(x[members[:, right] & present] > tree.threshold[node])
    return members


def small_data(seed=0, n=120):
    """X (a numeric column with ties, one with missing values, category codes), a noisy
    target and integer sample weights."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.round(rng.normal(size=n), 1), rng.normal(size=n),
                         rng.integers(0, 4, n).astype(float)])
    X[rng.random(n) < 0.1, 1] = np.nan
    weights = rng.integers(1, 4, n).astype(float)
    signal = X[:, 0] + np.nan_to_num(X[:, 1]) + (X[:, 2] == 2) + rng.normal(size=n) * 0.3
    return X, signal, weights
