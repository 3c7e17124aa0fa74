"""Minimal cost-complexity pruning against the former quadratic code, a hand-built tree
(Breiman et al. 1984, ch. 3) and a naive weakest-link loop.

Cost-complexity pruning in O(N log N): the same path, subtrees and cv choice as before.

silva issue 22, item 4: ``ccp_alpha="cv"`` used to build a dense (held-out rows x
candidate subtrees) loss matrix, and its weakest-link sequence swept the whole tree once
per step, both quadratic. The library now keeps the links in a priority queue and scores
the subtrees with per-sample difference arrays (:mod:`silva.engine.pruning`). The former
code lives on here, compiled as it was, as the reference: the new one must give the same
path, the same pruned trees and, through ``ccp_alpha="cv"``, the same chosen alpha and
model, on classification and regression data, with weights and missing values.
"""

import numba as nb
import numpy as np
import pytest
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    make_classification,
    make_friedman1,
)

import silva.decision_tree as decision_tree
from silva import DecisionTreeClassifier, DecisionTreeRegressor
from silva.engine import pruning
from silva.engine.pruning import cost_complexity_path, prune_tree
from silva.engine.tree import Tree

_NEVER = np.iinfo(np.int64).max


# ------------------------------------------------ the former code, as the reference

@nb.njit(cache=True)
def _sweep_weakest_link_sequence(children_left, children_right, weighted_n, impurity,
                                 ccp_alpha, record_path):
    """The former weakest-link sequence: one bottom-up sweep of the whole tree per step."""
    n_nodes = children_left.shape[0]
    r_node = weighted_n / weighted_n[0] * impurity
    is_leaf = children_left == -1
    removed = np.zeros(n_nodes, dtype=np.bool_)
    collapsed = np.zeros(n_nodes, dtype=np.bool_)
    r_branch = np.empty(n_nodes)
    n_leaves = np.empty(n_nodes, dtype=np.int64)
    step_of_node = np.full(n_nodes, _NEVER, dtype=np.int64)
    alphas = [0.0]
    impurities = [0.0]
    first = True
    while True:
        for node in range(n_nodes - 1, -1, -1):
            if removed[node]:
                continue
            if is_leaf[node]:
                r_branch[node] = r_node[node]
                n_leaves[node] = 1
            else:
                left = children_left[node]
                right = children_right[node]
                r_branch[node] = r_branch[left] + r_branch[right]
                n_leaves[node] = n_leaves[left] + n_leaves[right]
        if first:
            impurities[0] = r_branch[0]
            first = False
        if is_leaf[0]:
            break
        weakest = -1
        weakest_alpha = np.inf
        for node in range(n_nodes):
            if removed[node] or is_leaf[node]:
                continue
            alpha = (r_node[node] - r_branch[node]) / (n_leaves[node] - 1)
            if alpha < weakest_alpha:
                weakest_alpha = alpha
                weakest = node
        if not record_path and weakest_alpha > ccp_alpha:
            break
        stack = [children_left[weakest], children_right[weakest]]
        while len(stack) > 0:
            node = stack.pop()
            removed[node] = True
            if not is_leaf[node]:
                stack.append(children_left[node])
                stack.append(children_right[node])
        is_leaf[weakest] = True
        collapsed[weakest] = True
        step_of_node[weakest] = len(alphas)
        r_branch[weakest] = r_node[weakest]
        alphas.append(weakest_alpha)
        total = 0.0
        for node in range(n_nodes):
            if not removed[node] and is_leaf[node]:
                total += r_node[node]
        impurities.append(total)
    keep = ~removed
    return collapsed, keep, np.array(alphas), np.array(impurities), step_of_node


@nb.njit(cache=True)
def _matrix_node_losses(indptr, indices, value, y, classification):
    losses = np.empty(indices.shape[0])
    for i in range(indptr.shape[0] - 1):
        for j in range(indptr[i], indptr[i + 1]):
            node = indices[j]
            if classification:
                best = 0
                for k in range(1, value.shape[1]):
                    if value[node, k] > value[node, best]:
                        best = k
                losses[j] = 0.0 if best == y[i] else 1.0
            else:
                diff = value[node, 0] - y[i]
                losses[j] = diff * diff
    return losses


@nb.njit(cache=True)
def _matrix_path_subtree_losses(indptr, indices, losses, step_of_node, path_alphas, alphas):
    """The former (n_rows, n_alphas) matrix of per-sample losses of each subtree."""
    n_rows = indptr.shape[0] - 1
    n_alphas = alphas.shape[0]
    done = np.empty(n_alphas, dtype=np.int64)
    for a in range(n_alphas):
        steps = 0
        while steps + 1 < path_alphas.shape[0] and path_alphas[steps + 1] <= alphas[a]:
            steps += 1
        done[a] = steps
    out = np.empty((n_rows, n_alphas))
    for i in range(n_rows):
        for a in range(n_alphas):
            j = indptr[i]
            while j < indptr[i + 1] - 1 and step_of_node[indices[j]] > done[a]:
                j += 1
            out[i, a] = losses[j]
    return out


@nb.njit(cache=True)
def _sweep_path_n_leaves(children_left, children_right, step_of_node, path_alphas, alphas):
    n_nodes = children_left.shape[0]
    out = np.empty(alphas.shape[0], dtype=np.int64)
    reached = np.empty(n_nodes, dtype=np.bool_)
    for a in range(alphas.shape[0]):
        steps = 0
        while steps + 1 < path_alphas.shape[0] and path_alphas[steps + 1] <= alphas[a]:
            steps += 1
        reached[:] = False
        reached[0] = True
        n_leaves = 0
        for node in range(n_nodes):
            if not reached[node]:
                continue
            if children_left[node] == -1 or step_of_node[node] <= steps:
                n_leaves += 1
            else:
                reached[children_left[node]] = True
                reached[children_right[node]] = True
        out[a] = n_leaves
    return out


def _sweep(tree, ccp_alpha=0.0, record_path=True):
    return _sweep_weakest_link_sequence(tree.children_left, tree.children_right,
                                        tree.weighted_n_node_samples, tree.impurity,
                                        float(ccp_alpha), record_path)


def reference_cost_complexity_path(tree):
    _, _, alphas, impurities, _ = _sweep(tree)
    return alphas, impurities


def reference_prune_tree(tree, ccp_alpha):
    collapsed, keep, _, _, _ = _sweep(tree, ccp_alpha, record_path=False)
    return pruning._subtree(tree, collapsed, keep)


def reference_path_n_leaves(tree, alphas):
    return ReferencePath(tree).n_leaves_at(alphas)


class ReferencePath:
    """The pruning path from the full sweep, in :class:`pruning.PruningPath`'s shape."""

    def __init__(self, tree):
        _, _, self.ccp_alphas, self.impurities, self._step_of_node = _sweep(tree)
        self._tree = tree

    def n_leaves_at(self, alphas):
        return _sweep_path_n_leaves(self._tree.children_left, self._tree.children_right,
                                    self._step_of_node, self.ccp_alphas,
                                    np.asarray(alphas, dtype=np.float64))


def reference_loss_matrix(tree, X, y, alphas, classification):
    _, _, path_alphas, _, step_of_node = _sweep(tree)
    path = tree.decision_path(X)
    indptr = path.indptr.astype(np.int64)
    indices = path.indices.astype(np.int64)
    y = np.asarray(y, dtype=np.int64 if classification else np.float64)
    losses = _matrix_node_losses(indptr, indices, tree.value[:, 0, :], y, classification)
    return _matrix_path_subtree_losses(indptr, indices, losses, step_of_node, path_alphas,
                                       np.asarray(alphas, dtype=np.float64))


def reference_held_out_losses(tree, X, y, sample_weight, alphas, classification):
    losses = reference_loss_matrix(tree, X, y, alphas, classification)
    return sample_weight @ losses, sample_weight @ (losses * losses)


# ------------------------------------------------------------------------ the data

def _with_missing(X, fraction, seed):
    rng = np.random.default_rng(seed)
    X = X.copy()
    X[rng.random(X.shape) < fraction] = np.nan
    return X


def _weights(n, seed):
    return np.random.default_rng(seed).uniform(0.2, 3.0, n)


def _cases():
    """(name, estimator, X, y, sample_weight) for both tasks, weighted and with NaNs."""
    X_bc, y_bc = load_breast_cancer(return_X_y=True)
    X_bc, y_bc = X_bc[:400], y_bc[:400]
    X_3, y_3 = make_classification(n_samples=500, n_features=8, n_informative=5,
                                   n_classes=3, flip_y=0.1, random_state=1)
    X_d, y_d = load_diabetes(return_X_y=True)
    X_f, y_f = make_friedman1(n_samples=600, n_features=6, noise=1.0, random_state=2)
    # Few distinct values: many equal effective alphas, so the tie-breaking is tested.
    rng = np.random.default_rng(3)
    X_t = rng.integers(0, 4, size=(400, 5)).astype(float)
    y_t = (X_t[:, 0] + rng.integers(0, 2, 400) > 2).astype(int)
    y_tr = np.round(X_t[:, 1] + rng.integers(0, 3, 400)).astype(float)
    return [
        ("breast_cancer", DecisionTreeClassifier(random_state=0), X_bc, y_bc, None),
        ("breast_cancer weighted", DecisionTreeClassifier(random_state=1), X_bc, y_bc,
         _weights(len(y_bc), 0)),
        ("breast_cancer missing", DecisionTreeClassifier(random_state=2),
         _with_missing(X_bc, 0.15, 1), y_bc, None),
        ("three classes entropy weighted missing",
         DecisionTreeClassifier(criterion="entropy", random_state=3),
         _with_missing(X_3, 0.1, 2), y_3, _weights(len(y_3), 1)),
        ("three classes balanced", DecisionTreeClassifier(class_weight="balanced",
                                                          random_state=4), X_3, y_3, None),
        ("ties", DecisionTreeClassifier(random_state=5), X_t, y_t, None),
        ("diabetes", DecisionTreeRegressor(random_state=0), X_d, y_d, None),
        ("diabetes weighted", DecisionTreeRegressor(random_state=1), X_d, y_d,
         _weights(len(y_d), 2)),
        ("friedman missing", DecisionTreeRegressor(random_state=2),
         _with_missing(X_f, 0.1, 3), y_f, None),
        ("friedman weighted missing leaf 3",
         DecisionTreeRegressor(min_samples_leaf=3, random_state=3),
         _with_missing(X_f, 0.2, 4), y_f, _weights(len(y_f), 3)),
        ("ties regression", DecisionTreeRegressor(random_state=4), X_t, y_tr, None),
    ]


CASES = _cases()
IDS = [case[0] for case in CASES]


def _is_classification(model):
    return isinstance(model, DecisionTreeClassifier)


def _full_tree(model, X, y, w):
    return model.set_params(ccp_alpha=0.0).fit(X, y, sample_weight=w).tree_


def _targets(model, y):
    """y as the engine sees it: class indices for classifiers (the fitted tree's values
    of a regressor include the mean that the engine's targets are centred by)."""
    if _is_classification(model):
        return np.searchsorted(np.unique(y), y)
    return np.asarray(y, dtype=float)


# ------------------------------------------------------------------------ the tests

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_weakest_link_sequence_is_the_sweeps(case):
    _, model, X, y, w = case
    tree = _full_tree(model, X, y, w)
    arrays = (tree.children_left, tree.children_right, tree.weighted_n_node_samples,
              tree.impurity)
    collapsed, keep, alphas, impurities, n_leaves, steps = \
        pruning._weakest_link_sequence(*arrays, 0.0, True)
    ref_collapsed, ref_keep, ref_alphas, ref_impurities, ref_steps = _sweep(tree)
    assert alphas.size >= 8
    np.testing.assert_array_equal(alphas, ref_alphas)  # bit for bit
    np.testing.assert_array_equal(steps, ref_steps)
    np.testing.assert_array_equal(collapsed, ref_collapsed)
    np.testing.assert_array_equal(keep, ref_keep)
    # The former code summed the leaves in id order, the new one up the tree (as
    # scikit-learn does): the same numbers up to rounding.
    np.testing.assert_allclose(impurities, ref_impurities, rtol=1e-12, atol=1e-15)
    assert n_leaves[0] == tree.n_leaves and n_leaves[-1] == 1
    # Leaves after each step, counted on the tree (equal alphas make several steps, so
    # count by step, not by alpha).
    steps_taken = np.arange(alphas.size, dtype=np.float64)
    np.testing.assert_array_equal(
        n_leaves, _sweep_path_n_leaves(tree.children_left, tree.children_right, steps,
                                       steps_taken, steps_taken))
    # Stopping early, at and between the path's alphas.
    for alpha in [0.0, *alphas[1:-1:max(1, alphas.size // 7)], alphas[-1], np.inf]:
        stopped = pruning._weakest_link_sequence(*arrays, alpha, False)
        ref_stopped = _sweep(tree, alpha, record_path=False)
        np.testing.assert_array_equal(stopped[0], ref_stopped[0])
        np.testing.assert_array_equal(stopped[1], ref_stopped[1])
        np.testing.assert_array_equal(stopped[5], ref_stopped[4])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_held_out_losses_are_the_matrix_sums(case):
    _, model, X, y, w = case
    n = y.shape[0]
    growing, held_out = np.arange(n) % 3 != 0, np.arange(n) % 3 == 0
    w = np.ones(n) if w is None else w
    fitted = model.set_params(ccp_alpha=0.0).fit(X[growing], y[growing], w[growing])
    tree = fitted.tree_
    path_alphas, _ = pruning.cost_complexity_path(tree)
    # Unsorted, repeated, exactly on the path, between its alphas, outside it.
    rng = np.random.default_rng(0)
    positive = np.maximum(path_alphas, 0.0)  # a rounding error can make one negative
    alphas = np.concatenate([path_alphas, np.sqrt(positive[1:] * positive[:-1]),
                             [0.0, -1.0, np.inf, path_alphas[-1] * 2]])
    alphas = rng.permutation(np.concatenate([alphas, alphas[:5]]))
    classification = _is_classification(model)
    target = _targets(model, y[held_out])
    X_held = fitted._validated_X(X[held_out])
    loss_sums, square_sums = pruning.held_out_losses(tree, X_held, target, w[held_out],
                                                     alphas, classification)
    ref_loss, ref_square = reference_held_out_losses(tree, X_held, target, w[held_out],
                                                     alphas, classification)
    np.testing.assert_allclose(loss_sums, ref_loss, rtol=1e-13)
    np.testing.assert_allclose(square_sums, ref_square, rtol=1e-13)
    # The same subtree gets the same total, bit for bit, whatever alpha named it.
    done = pruning._steps_done(path_alphas, alphas)
    for k in np.unique(done):
        assert np.unique(loss_sums[done == k]).size == 1
    np.testing.assert_array_equal(pruning.path_n_leaves(tree, alphas),
                                  reference_path_n_leaves(tree, alphas))
    # The path record holds the same path and leaf counts as the two functions.
    path = pruning.pruning_path(tree)
    ref_alphas, ref_impurities = reference_cost_complexity_path(tree)
    np.testing.assert_array_equal(path.ccp_alphas, ref_alphas)
    # The full sweep adds the impurities up in another order.
    np.testing.assert_allclose(path.impurities, ref_impurities, rtol=1e-13)
    np.testing.assert_array_equal(path.n_leaves_at(alphas),
                                  reference_path_n_leaves(tree, alphas))


def _fit_cv(model, X, y, w, reference, monkeypatch):
    with monkeypatch.context() as patch:
        if reference:
            patch.setattr(decision_tree, "pruning_path", ReferencePath)
            patch.setattr(decision_tree, "prune_tree", reference_prune_tree)
            patch.setattr(decision_tree, "held_out_losses", reference_held_out_losses)
        return model.set_params(ccp_alpha="cv").fit(X, y, sample_weight=w)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cv_chooses_the_same_alpha_and_model_as_before(case, monkeypatch):
    _, model, X, y, w = case
    new = _fit_cv(model, X, y, w, False, monkeypatch)
    new_results, new_tree = new.ccp_cv_results_, new.tree_
    old = _fit_cv(model, X, y, w, True, monkeypatch)
    old_results, old_tree = old.ccp_cv_results_, old.tree_
    np.testing.assert_array_equal(new_results.ccp_alphas, old_results.ccp_alphas)
    np.testing.assert_allclose(new_results.mean_error, old_results.mean_error, rtol=1e-12)
    np.testing.assert_allclose(new_results.std_error, old_results.std_error, rtol=1e-9,
                               atol=1e-15)
    np.testing.assert_array_equal(new_results.n_leaves, old_results.n_leaves)
    assert new_results.best_index == old_results.best_index
    assert new_results.chosen_index == old_results.chosen_index
    assert new.ccp_alpha_ == old.ccp_alpha_
    for name in ("children_left", "children_right", "feature", "threshold",
                 "missing_go_to_left", "value", "impurity"):
        np.testing.assert_array_equal(getattr(new_tree, name), getattr(old_tree, name),
                                      err_msg=name)
    # The search is not vacuous: it prunes, and not to the root alone.
    assert 1 < new.get_n_leaves() < _full_tree(model, X, y, w).n_leaves or \
        new_results.chosen_index == new_results.ccp_alphas.size - 1


def test_a_stump_and_a_single_leaf():
    """Trees with no step or one step to take."""
    X = np.array([[0.0], [0.0], [1.0], [1.0]])
    leaf = DecisionTreeRegressor().fit(X, np.ones(4)).tree_
    alphas, impurities = pruning.cost_complexity_path(leaf)
    np.testing.assert_array_equal(alphas, [0.0])
    loss, square = pruning.held_out_losses(leaf, X, np.array([0.0, 1, 1, 3]) - 1,
                                           np.ones(4), [0.0, np.inf], False)
    np.testing.assert_array_equal(loss, [7.0, 7.0])  # 4 + 1 + 1 + 1 around the mean 1
    np.testing.assert_array_equal(square, [19.0, 19.0])
    stump = DecisionTreeClassifier().fit(X, [0, 0, 1, 1]).tree_
    alphas, _ = pruning.cost_complexity_path(stump)
    assert alphas.size == 2 and alphas[1] == pytest.approx(0.5)
    loss, _ = pruning.held_out_losses(stump, X, np.array([0, 1, 1, 1]), np.ones(4),
                                      [0.1, 1.0], True)
    # The stump errs on one sample; the root alone (class 0 first of equals) on three.
    np.testing.assert_array_equal(loss, [1.0, 3.0])
    np.testing.assert_array_equal(pruning.path_n_leaves(stump, [0.1, 1.0]), [2, 1])


# ------------------------------------------ a hand-built tree and a naive weakest link

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
