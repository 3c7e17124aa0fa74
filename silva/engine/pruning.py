"""Minimal cost-complexity pruning (Breiman, Friedman, Olshen & Stone 1984, ch. 3).

The cost-complexity of a subtree T is ``R_alpha(T) = R(T) + alpha |leaves(T)|``, with
``R(T)`` the sum over its leaves of ``w_t / W * impurity_t``. Weakest-link pruning
repeatedly collapses the internal node t with the smallest *effective alpha*
``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``; the sequence of these alphas is the pruning
path, and pruning at ``ccp_alpha`` collapses nodes while their effective alpha is at most
``ccp_alpha``. One node is collapsed per step (the lowest id among equals), as in
scikit-learn, so paths agree entry for entry.
"""

import numba as nb
import numpy as np

from silva.engine.tree import Tree


@nb.njit(cache=True)
def _weakest_link_sequence(children_left, children_right, weighted_n, impurity, ccp_alpha,
                           record_path):
    """Collapse weakest links while their alpha <= ccp_alpha (all of them if recording).

    Returns ``(collapsed, alphas, impurities)``: which nodes became leaves, and the path.
    """
    n_nodes = children_left.shape[0]
    r_node = weighted_n / weighted_n[0] * impurity
    is_leaf = children_left == -1
    removed = np.zeros(n_nodes, dtype=np.bool_)
    collapsed = np.zeros(n_nodes, dtype=np.bool_)
    r_branch = np.empty(n_nodes)
    n_leaves = np.empty(n_nodes, dtype=np.int64)
    alphas = [0.0]
    impurities = [0.0]
    first = True
    while True:
        # Children have larger ids than their parent: a reverse sweep is bottom-up.
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
        # Collapse the weakest link: its descendants leave the tree.
        stack = [children_left[weakest], children_right[weakest]]
        while len(stack) > 0:
            node = stack.pop()
            removed[node] = True
            if not is_leaf[node]:
                stack.append(children_left[node])
                stack.append(children_right[node])
        is_leaf[weakest] = True
        collapsed[weakest] = True
        r_branch[weakest] = r_node[weakest]
        alphas.append(weakest_alpha)
        # The total leaf impurity after this collapse, recomputed on the next sweep.
        total = 0.0
        for node in range(n_nodes):
            if not removed[node] and is_leaf[node]:
                total += r_node[node]
        impurities.append(total)
    keep = ~removed
    return collapsed, keep, np.array(alphas), np.array(impurities)


def cost_complexity_path(tree):
    """``(ccp_alphas, impurities)`` of the weakest-link pruning sequence of ``tree``."""
    _, _, alphas, impurities = _weakest_link_sequence(
        tree.children_left, tree.children_right, tree.weighted_n_node_samples, tree.impurity,
        0.0, True)
    return alphas, impurities


def prune_tree(tree, ccp_alpha):
    """The subtree of ``tree`` kept by minimal cost-complexity pruning at ``ccp_alpha``."""
    collapsed, keep, _, _ = _weakest_link_sequence(
        tree.children_left, tree.children_right, tree.weighted_n_node_samples, tree.impurity,
        ccp_alpha, False)
    old_ids = np.flatnonzero(keep)
    new_id = np.full(tree.node_count, -1, dtype=np.intp)
    new_id[old_ids] = np.arange(old_ids.size)
    becomes_leaf = collapsed[old_ids] | (tree.children_left[old_ids] == -1)
    children_left = np.where(becomes_leaf, -1, new_id[tree.children_left[old_ids]])
    children_right = np.where(becomes_leaf, -1, new_id[tree.children_right[old_ids]])
    return Tree(
        tree.n_features, tree.n_classes,
        children_left=children_left,
        children_right=children_right,
        feature=np.where(becomes_leaf, -2, tree.feature[old_ids]),
        threshold=np.where(becomes_leaf, -2.0, tree.threshold[old_ids]),
        missing_go_to_left=np.where(becomes_leaf, 0, tree.missing_go_to_left[old_ids]),
        is_categorical=np.where(becomes_leaf, False, tree.is_categorical[old_ids]),
        category_bitsets=np.where(becomes_leaf[:, None], np.uint64(0),
                                  tree.category_bitsets[old_ids]),
        value=tree.value[old_ids, 0, :],
        impurity=tree.impurity[old_ids],
        n_node_samples=tree.n_node_samples[old_ids],
        weighted_n_node_samples=tree.weighted_n_node_samples[old_ids],
        n_categories=tree.n_categories,
    )
