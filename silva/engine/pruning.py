"""Pruning: minimal cost-complexity pruning and reduced-error pruning.

Minimal cost-complexity pruning (Breiman, Friedman, Olshen & Stone 1984, ch. 3): the
cost-complexity of a subtree T is ``R_alpha(T) = R(T) + alpha |leaves(T)|``, with
``R(T)`` the sum over its leaves of ``w_t / W * impurity_t``. Weakest-link pruning
repeatedly collapses the internal node t with the smallest *effective alpha*
``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``; the sequence of these alphas is the pruning
path, and pruning at ``ccp_alpha`` collapses nodes while their effective alpha is at most
``ccp_alpha``. One node is collapsed per step (the lowest id among equals), as in
scikit-learn, so paths agree entry for entry. :func:`subtree_losses` evaluates every
subtree of the path on held-out samples in one pass, for choosing alpha by
cross-validation (Breiman et al. 1984, sec. 3.4).

Reduced-error pruning (Quinlan 1987): held-out samples are sent down the tree, and,
bottom-up, every internal node whose replacement by a leaf does not increase the
held-out error (0-1 loss, or squared error for regression) is replaced by one.
"""

import numba as nb
import numpy as np

from silva.engine.tree import Tree

_NEVER = np.iinfo(np.int64).max


@nb.njit(cache=True)
def _weakest_link_sequence(children_left, children_right, weighted_n, impurity, ccp_alpha,
                           record_path):
    """Collapse weakest links while their alpha <= ccp_alpha (all of them if recording).

    Returns ``(collapsed, keep, alphas, impurities, step_of_node)``: which nodes became
    leaves, which remain, the path, and the step (index into the path) at which each
    node was collapsed (``_NEVER`` for nodes never collapsed).
    """
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
        step_of_node[weakest] = len(alphas)
        r_branch[weakest] = r_node[weakest]
        alphas.append(weakest_alpha)
        # The total leaf impurity after this collapse, recomputed on the next sweep.
        total = 0.0
        for node in range(n_nodes):
            if not removed[node] and is_leaf[node]:
                total += r_node[node]
        impurities.append(total)
    keep = ~removed
    return collapsed, keep, np.array(alphas), np.array(impurities), step_of_node


def cost_complexity_path(tree):
    """``(ccp_alphas, impurities)`` of the weakest-link pruning sequence of ``tree``."""
    _, _, alphas, impurities, _ = _weakest_link_sequence(
        tree.children_left, tree.children_right, tree.weighted_n_node_samples, tree.impurity,
        0.0, True)
    return alphas, impurities


def prune_tree(tree, ccp_alpha):
    """The subtree of ``tree`` kept by minimal cost-complexity pruning at ``ccp_alpha``."""
    collapsed, keep, _, _, _ = _weakest_link_sequence(
        tree.children_left, tree.children_right, tree.weighted_n_node_samples, tree.impurity,
        ccp_alpha, False)
    return _subtree(tree, collapsed, keep)


def _subtree(tree, collapsed, keep):
    """The tree made of the ``keep`` nodes, ``collapsed`` ones turned into leaves."""
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


# ------------------------------------------------------------ held-out evaluation

@nb.njit(cache=True)
def _node_losses(indptr, indices, value, y, classification):
    """Loss of each (sample, node on its path) pair if that node predicted for it.

    Returns a flat array aligned with ``indices``: the 0-1 loss of the node's most
    probable class (first of equals) for classification, the squared error of its mean
    otherwise.
    """
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
def _path_subtree_losses(indptr, indices, losses, step_of_node, path_alphas, alphas):
    """Per-sample loss of the path subtree kept at each of ``alphas``."""
    n_rows = indptr.shape[0] - 1
    n_alphas = alphas.shape[0]
    # Pruning at alpha performs the steps 1..done[a]: it stops at the first step whose
    # alpha exceeds it (see _weakest_link_sequence).
    done = np.empty(n_alphas, dtype=np.int64)
    for a in range(n_alphas):
        steps = 0
        while steps + 1 < path_alphas.shape[0] and path_alphas[steps + 1] <= alphas[a]:
            steps += 1
        done[a] = steps
    out = np.empty((n_rows, n_alphas))
    for i in range(n_rows):
        for a in range(n_alphas):
            # A sample stops at the first node of its path that is a leaf of the subtree.
            j = indptr[i]
            while j < indptr[i + 1] - 1 and step_of_node[indices[j]] > done[a]:
                j += 1
            out[i, a] = losses[j]
    return out


def _paths_and_losses(tree, X, y, classification):
    path = tree.decision_path(X)
    indptr = path.indptr.astype(np.int64)
    indices = path.indices.astype(np.int64)
    y = np.asarray(y, dtype=np.int64 if classification else np.float64)
    losses = _node_losses(indptr, indices, tree.value[:, 0, :], y, classification)
    return indptr, indices, losses


def subtree_losses(tree, X, y, alphas, classification):
    """Per-sample held-out losses of the subtrees ``prune_tree(tree, alpha)``.

    Returns an ``(n_samples, len(alphas))`` array: the 0-1 loss (``y`` holds class
    indices into ``tree.value``) or squared error of each sample under the subtree kept
    at each alpha, computed from one pass over the sample paths instead of one pruned
    tree per alpha.
    """
    _, _, path_alphas, _, step_of_node = _weakest_link_sequence(
        tree.children_left, tree.children_right, tree.weighted_n_node_samples, tree.impurity,
        0.0, True)
    indptr, indices, losses = _paths_and_losses(tree, X, y, classification)
    return _path_subtree_losses(indptr, indices, losses, step_of_node, path_alphas,
                                np.asarray(alphas, dtype=np.float64))


# ------------------------------------------------------------ reduced-error pruning

@nb.njit(cache=True)
def _reduced_error_collapse(children_left, children_right, leaf_error):
    """Bottom-up: collapse each node whose leaf error is at most its subtree's."""
    n_nodes = children_left.shape[0]
    subtree_error = np.empty(n_nodes)
    collapsed = np.zeros(n_nodes, dtype=np.bool_)
    # Children have larger ids than their parent: a reverse sweep is bottom-up, so a
    # node is judged against its children's already-pruned subtrees.
    for node in range(n_nodes - 1, -1, -1):
        if children_left[node] == -1:
            subtree_error[node] = leaf_error[node]
            continue
        below = subtree_error[children_left[node]] + subtree_error[children_right[node]]
        if leaf_error[node] <= below:
            collapsed[node] = True
            subtree_error[node] = leaf_error[node]
        else:
            subtree_error[node] = below
    keep = np.ones(n_nodes, dtype=np.bool_)
    for node in range(n_nodes):
        if children_left[node] != -1 and (collapsed[node] or not keep[node]):
            keep[children_left[node]] = False
            keep[children_right[node]] = False
    return collapsed, keep, subtree_error[0]


def reduced_error_prune(tree, X, y, sample_weight, classification):
    """Reduced-error pruning of ``tree`` on held-out ``(X, y)`` (Quinlan 1987).

    ``y`` holds class indices into ``tree.value`` for classification. Every internal
    node whose replacement by a leaf (predicting its training value) does not increase
    the weighted held-out error of its subtree, after its descendants have been pruned,
    is replaced, so the held-out error of the result is at most the tree's. Nodes no
    held-out sample reaches have zero error either way and are collapsed. Leaf values
    and node statistics stay those of the training samples. Returns
    ``(pruned_tree, held_out_error_before, held_out_error_after)``, errors as weighted
    sums of losses.
    """
    indptr, indices, losses = _paths_and_losses(tree, X, y, classification)
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    leaf_error = np.bincount(indices, weights=losses * sample_weight[rows],
                             minlength=tree.node_count)
    is_leaf = tree.children_left == -1
    before = float(leaf_error[is_leaf].sum())
    collapsed, keep, after = _reduced_error_collapse(tree.children_left, tree.children_right,
                                                     leaf_error)
    return _subtree(tree, collapsed, keep), before, float(after)


@nb.njit(cache=True)
def _path_n_leaves(children_left, children_right, step_of_node, path_alphas, alphas):
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
        for node in range(n_nodes):  # parents before children
            if not reached[node]:
                continue
            if children_left[node] == -1 or step_of_node[node] <= steps:
                n_leaves += 1
            else:
                reached[children_left[node]] = True
                reached[children_right[node]] = True
        out[a] = n_leaves
    return out


def path_n_leaves(tree, alphas):
    """Number of leaves of ``prune_tree(tree, alpha)`` for each of ``alphas``."""
    _, _, path_alphas, _, step_of_node = _weakest_link_sequence(
        tree.children_left, tree.children_right, tree.weighted_n_node_samples, tree.impurity,
        0.0, True)
    return _path_n_leaves(tree.children_left, tree.children_right, step_of_node, path_alphas,
                          np.asarray(alphas, dtype=np.float64))
