"""Pruning: minimal cost-complexity pruning and reduced-error pruning.

Minimal cost-complexity pruning (Breiman, Friedman, Olshen & Stone 1984, ch. 3): the
cost-complexity of a subtree T is ``R_alpha(T) = R(T) + alpha |leaves(T)|``, with
``R(T)`` the sum over its leaves of ``w_t / W * impurity_t``. Weakest-link pruning
repeatedly collapses the internal node t with the smallest *effective alpha*
``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``; the sequence of these alphas is the pruning
path, and pruning at ``ccp_alpha`` collapses nodes while their effective alpha is at most
``ccp_alpha``. One node is collapsed per step (the lowest id among equals), as in
scikit-learn, so paths agree entry for entry. The nodes wait in a priority queue keyed by
``(alpha, id)``; a collapse changes the alphas of its ancestors only, so a path of N
nodes costs ``O(N (log N + depth))`` time and ``O(N)`` memory.

:func:`held_out_losses` scores every subtree of the path on held-out samples at once, for
choosing alpha by cross-validation (Breiman et al. 1984, sec. 3.4). The subtrees are
nested, so a sample's prediction under the k-th of them is the value of the shallowest
node of its path that the first k steps collapsed (its leaf if none); as k grows that node
only moves up, at the steps of the path's nodes that collapse before all of their
ancestors. Each sample thus adds its loss, and its changes of loss at those few steps, to
a per-subtree difference array whose prefix sums are the subtrees' total losses: time
``O(n depth)`` and memory ``O(N + n)`` for n samples, never an (n, subtrees) matrix.

Reduced-error pruning (Quinlan 1987): held-out samples are sent down the tree, and,
bottom-up, every internal node whose replacement by a leaf does not increase the
held-out error (0-1 loss, or squared error for regression) is replaced by one.
"""

from typing import NamedTuple

import numpy as np

from silva.engine.jit import kernel
from silva.engine.tree import Tree

_NEVER = np.iinfo(np.int64).max


@kernel()
def _precedes(alpha, a, b):
    """Heap order: the smaller effective alpha first, the lower node id among equals."""
    return alpha[a] < alpha[b] or (alpha[a] == alpha[b] and a < b)


@kernel()
def _sift_down(heap, position, alpha, i, size):
    while True:
        smallest = i
        left = 2 * i + 1
        right = left + 1
        if left < size and _precedes(alpha, heap[left], heap[smallest]):
            smallest = left
        if right < size and _precedes(alpha, heap[right], heap[smallest]):
            smallest = right
        if smallest == i:
            return
        heap[i], heap[smallest] = heap[smallest], heap[i]
        position[heap[i]] = i
        position[heap[smallest]] = smallest
        i = smallest


@kernel()
def _sift_up(heap, position, alpha, i):
    while i > 0:
        up = (i - 1) // 2
        if not _precedes(alpha, heap[i], heap[up]):
            return
        heap[i], heap[up] = heap[up], heap[i]
        position[heap[i]] = i
        position[heap[up]] = up
        i = up


@kernel()
def _pop(heap, position, alpha, size):
    """Remove the heap's first node; returns the new size."""
    position[heap[0]] = -1
    size -= 1
    if size > 0:
        heap[0] = heap[size]
        position[heap[0]] = 0
        _sift_down(heap, position, alpha, 0, size)
    return size


@kernel()
def _weakest_link_sequence(children_left, children_right, weighted_n, impurity, ccp_alpha,
                           record_path):
    """Collapse weakest links while their alpha <= ccp_alpha (all of them if recording).

    Returns ``(collapsed, keep, alphas, impurities, n_leaves, step_of_node)``: which nodes
    became leaves, which remain, the path (its alphas, the total leaf impurity and the
    number of leaves after each step, entry 0 being the whole tree), and the step (index
    into the path) at which each node was collapsed (``_NEVER`` for nodes never
    collapsed).

    A node's branch impurity ``R(T_t)`` is the sum of its children's, recomputed from
    them along the collapsed node's ancestors only; every value, and so every alpha and
    every choice, is the one a full bottom-up sweep per step would give.
    """
    n_nodes = children_left.shape[0]
    r_node = weighted_n / weighted_n[0] * impurity
    is_leaf = children_left == -1
    parent = np.full(n_nodes, -1, dtype=np.int64)
    r_branch = np.empty(n_nodes)
    n_leaves = np.empty(n_nodes, dtype=np.int64)
    # Children have larger ids than their parent: a reverse sweep is bottom-up.
    for node in range(n_nodes - 1, -1, -1):
        if is_leaf[node]:
            r_branch[node] = r_node[node]
            n_leaves[node] = 1
        else:
            left = children_left[node]
            right = children_right[node]
            parent[left] = node
            parent[right] = node
            r_branch[node] = r_branch[left] + r_branch[right]
            n_leaves[node] = n_leaves[left] + n_leaves[right]
    alpha = np.full(n_nodes, np.inf)
    n_internal = n_nodes - int(is_leaf.sum())
    heap = np.empty(max(n_internal, 1), dtype=np.int64)
    position = np.full(n_nodes, -1, dtype=np.int64)
    size = 0
    for node in range(n_nodes):
        if not is_leaf[node]:
            alpha[node] = (r_node[node] - r_branch[node]) / (n_leaves[node] - 1)
            heap[size] = node
            position[node] = size
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, position, alpha, i, size)

    removed = np.zeros(n_nodes, dtype=np.bool_)
    collapsed = np.zeros(n_nodes, dtype=np.bool_)
    step_of_node = np.full(n_nodes, _NEVER, dtype=np.int64)
    path_alphas = np.empty(n_internal + 1)
    path_impurities = np.empty(n_internal + 1)
    path_leaves = np.empty(n_internal + 1, dtype=np.int64)
    path_alphas[0] = 0.0
    path_impurities[0] = r_branch[0]
    path_leaves[0] = n_leaves[0]
    n_steps = 0
    stack = np.empty(n_nodes, dtype=np.int64)
    while size > 0:
        weakest = heap[0]
        if removed[weakest]:
            # Left in the queue when an ancestor was collapsed; it has no alpha any more.
            size = _pop(heap, position, alpha, size)
            continue
        weakest_alpha = alpha[weakest]
        if not record_path and weakest_alpha > ccp_alpha:
            break
        size = _pop(heap, position, alpha, size)
        # Collapse the weakest link: its descendants leave the tree.
        top = 0
        stack[top] = children_left[weakest]
        stack[top + 1] = children_right[weakest]
        top = 2
        while top > 0:
            top -= 1
            node = stack[top]
            removed[node] = True
            if not is_leaf[node]:
                stack[top] = children_left[node]
                stack[top + 1] = children_right[node]
                top += 2
        is_leaf[weakest] = True
        collapsed[weakest] = True
        n_steps += 1
        step_of_node[weakest] = n_steps
        r_branch[weakest] = r_node[weakest]
        n_leaves[weakest] = 1
        node = parent[weakest]
        while node != -1:
            left = children_left[node]
            right = children_right[node]
            r_branch[node] = r_branch[left] + r_branch[right]
            n_leaves[node] = n_leaves[left] + n_leaves[right]
            alpha[node] = (r_node[node] - r_branch[node]) / (n_leaves[node] - 1)
            # The alpha may have moved either way.
            _sift_up(heap, position, alpha, position[node])
            _sift_down(heap, position, alpha, position[node], size)
            node = parent[node]
        path_alphas[n_steps] = weakest_alpha
        path_impurities[n_steps] = r_branch[0]
        path_leaves[n_steps] = n_leaves[0]
    keep = ~removed
    return (collapsed, keep, path_alphas[:n_steps + 1], path_impurities[:n_steps + 1],
            path_leaves[:n_steps + 1], step_of_node)


def _weakest_links(tree, ccp_alpha=0.0, record_path=True):
    return _weakest_link_sequence(tree.children_left, tree.children_right,
                                  tree.weighted_n_node_samples, tree.impurity,
                                  float(ccp_alpha), record_path)


class PruningPath(NamedTuple):
    """The weakest-link pruning sequence of a tree; entry k is the subtree ``T_k`` left
    after k collapses (entry 0: the whole tree).

    ``impurities[k]`` is ``R(T_k)``, the root's branch impurity (the sum of the leaves'
    ``w_t / W * impurity_t``, added up the tree, as scikit-learn does).
    """

    ccp_alphas: np.ndarray  # increasing, up to rounding errors
    impurities: np.ndarray
    n_leaves: np.ndarray

    def n_leaves_at(self, alphas):
        """Number of leaves of ``prune_tree(tree, alpha)`` for each of ``alphas``."""
        return self.n_leaves[_steps_done(self.ccp_alphas, np.asarray(alphas, dtype=np.float64))]


def pruning_path(tree):
    """The :class:`PruningPath` of ``tree``."""
    _, _, alphas, impurities, n_leaves, _ = _weakest_links(tree)
    return PruningPath(alphas, impurities, n_leaves)


def cost_complexity_path(tree):
    """``(ccp_alphas, impurities)`` of the :class:`PruningPath` of ``tree``."""
    path = pruning_path(tree)
    return path.ccp_alphas, path.impurities


def prune_tree(tree, ccp_alpha):
    """The subtree of ``tree`` kept by minimal cost-complexity pruning at ``ccp_alpha``."""
    collapsed, keep, _, _, _, _ = _weakest_links(tree, ccp_alpha, record_path=False)
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
        value=tree.value[old_ids],
        impurity=tree.impurity[old_ids],
        n_node_samples=tree.n_node_samples[old_ids],
        weighted_n_node_samples=tree.weighted_n_node_samples[old_ids],
        n_categories=tree.n_categories,
        n_outputs=tree.n_outputs,
    )


# ------------------------------------------------------------ held-out evaluation

@kernel()
def _node_loss(value, node, target, classification):
    """Loss of ``node`` predicting for a sample of target ``target``: the 0-1 loss of its
    most probable class (first of equals; ``target`` a class index) for classification,
    the squared error of its mean otherwise."""
    if classification:
        best = 0
        for k in range(1, value.shape[1]):
            if value[node, k] > value[node, best]:
                best = k
        return 0.0 if best == target else 1.0
    diff = value[node, 0] - target
    return diff * diff


@kernel()
def _node_losses(indptr, indices, value, y, classification):
    """Loss of each (sample, node on its path) pair if that node predicted for it, as a
    flat array aligned with ``indices`` (see :func:`_node_loss`)."""
    losses = np.empty(indices.shape[0])
    for i in range(indptr.shape[0] - 1):
        for j in range(indptr[i], indptr[i + 1]):
            losses[j] = _node_loss(value, indices[j], y[i], classification)
    return losses


def _paths_and_losses(tree, X, y, classification):
    path = tree.decision_path(X)
    indptr = path.indptr.astype(np.int64)
    indices = path.indices.astype(np.int64)
    y = np.asarray(y, dtype=np.int64 if classification else np.float64)
    losses = _node_losses(indptr, indices, tree.value[:, 0, :], y, classification)
    return indptr, indices, losses


def _steps_done(path_alphas, alphas):
    """How many steps of the path pruning at each of ``alphas`` takes.

    Pruning stops at the first step whose alpha exceeds ``alpha`` (see
    :func:`_weakest_link_sequence`). The path's alphas increase in exact arithmetic but
    may dip by a rounding error, hence the running maximum.
    """
    reached = np.maximum.accumulate(path_alphas[1:])
    return np.searchsorted(reached, alphas, side="right")


@kernel()
def _first_collapsed_ancestors(children_left, children_right, step_of_node):
    """For each node, its ancestor collapsed first (the smallest step), or -1.

    A sample that reaches node t, under the subtree left after k steps, stops at the
    shallowest node of its path collapsed within those k steps. Going up from t, the
    nodes it can stop at are t's first-collapsed ancestor s, then s's, and so on: each
    collapses later than all the nodes below it on the path that it can replace, and
    stays the sample's node from its own step until the next one's.
    """
    n_nodes = children_left.shape[0]
    first = np.full(n_nodes, -1, dtype=np.int64)
    first_step = np.full(n_nodes, _NEVER, dtype=np.int64)
    for node in range(n_nodes):  # parents before children
        left = children_left[node]
        if left == -1:
            continue
        if step_of_node[node] < first_step[node]:
            ancestor, step = node, step_of_node[node]
        else:
            ancestor, step = first[node], first_step[node]
        right = children_right[node]
        first[left] = ancestor
        first[right] = ancestor
        first_step[left] = step
        first_step[right] = step
    return first


@kernel()
def _add_two_sum(high, low, at, term):
    """``high[at] + low[at] += term``, the rounding error of the sum kept in ``low``.

    Knuth's TwoSum (Ogita, Rump & Oishi 2005, Sum2): each subtree's total is then as
    accurate as a sum in twice double precision, so two subtrees whose losses are the
    same numbers get the same total whatever order the samples' terms came in.
    """
    total = high[at] + term
    back = total - high[at]
    low[at] += (high[at] - (total - back)) + (term - back)
    high[at] = total


@kernel()
def _prefix_sums(high, low, n):
    out = np.empty(n)
    run_high = 0.0
    run_low = 0.0
    for a in range(n):
        total = run_high + high[a]
        back = total - run_high
        run_low += (run_high - (total - back)) + (high[a] - back) + low[a]
        run_high = total
        out[a] = run_high + run_low
    return out


@kernel()
def _subtree_loss_sums(leaves, y, sample_weight, value, classification, first_collapsed,
                       step_of_node, first_subtree, n_subtrees):
    """``(sum_i w_i loss_i, sum_i w_i loss_i**2)`` under each of ``n_subtrees`` subtrees.

    Subtree a (ordered by the steps they take) is the first whose steps include step k
    when ``a >= first_subtree[k]``. A sample's loss at its leaf counts from subtree 0; a
    change of loss at an ancestor collapsed at step k counts from ``first_subtree[k]``
    (slot ``n_subtrees`` collects changes past the last subtree).
    """
    loss_high = np.zeros(n_subtrees + 1)
    loss_low = np.zeros(n_subtrees + 1)
    square_high = np.zeros(n_subtrees + 1)
    square_low = np.zeros(n_subtrees + 1)
    for i in range(leaves.shape[0]):
        w = sample_weight[i]
        node = leaves[i]
        loss = _node_loss(value, node, y[i], classification)
        _add_two_sum(loss_high, loss_low, 0, w * loss)
        _add_two_sum(square_high, square_low, 0, w * (loss * loss))
        stop = first_collapsed[node]
        while stop != -1:
            new_loss = _node_loss(value, stop, y[i], classification)
            if new_loss != loss:
                at = first_subtree[step_of_node[stop]]
                # The same products w * loss as the sample's own term, so that a change
                # and its reversal cancel exactly.
                _add_two_sum(loss_high, loss_low, at, w * new_loss)
                _add_two_sum(loss_high, loss_low, at, -(w * loss))
                _add_two_sum(square_high, square_low, at, w * (new_loss * new_loss))
                _add_two_sum(square_high, square_low, at, -(w * (loss * loss)))
                loss = new_loss
            stop = first_collapsed[stop]
    return (_prefix_sums(loss_high, loss_low, n_subtrees),
            _prefix_sums(square_high, square_low, n_subtrees))


def held_out_losses(tree, X, y, sample_weight, alphas, classification):
    """Weighted held-out losses of the subtrees ``prune_tree(tree, alpha)``.

    Returns ``(loss_sums, square_sums)``, arrays aligned with ``alphas``: for each
    alpha, ``sum_i w_i loss_i`` and ``sum_i w_i loss_i**2`` over the samples of
    ``(X, y)`` under the subtree kept at that alpha, the loss being the 0-1 loss of the
    node's most probable class (first of equals; ``y`` holds class indices into
    ``tree.value``) or the squared error of its mean. ``X`` is validated float64.

    Computed from each sample's leaf and the few ancestors it can stop at as the tree is
    pruned (see the module docstring): ``O(n depth)`` time and ``O(node_count + n +
    len(alphas))`` memory, with no pruned tree built.
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    _, _, path_alphas, _, _, step_of_node = _weakest_links(tree)
    done = _steps_done(path_alphas, alphas)
    order = np.argsort(done, kind="stable")
    first_subtree = np.searchsorted(done[order], np.arange(path_alphas.size), side="left")
    first_collapsed = _first_collapsed_ancestors(tree.children_left, tree.children_right,
                                                 step_of_node)
    leaves = np.asarray(tree.apply(X), dtype=np.int64)
    sorted_losses, sorted_squares = _subtree_loss_sums(
        leaves, np.asarray(y, dtype=np.float64), np.asarray(sample_weight, dtype=np.float64),
        tree.value[:, 0, :], classification, first_collapsed, step_of_node,
        first_subtree.astype(np.int64), alphas.size)
    loss_sums = np.empty(alphas.size)
    square_sums = np.empty(alphas.size)
    loss_sums[order] = sorted_losses
    square_sums[order] = sorted_squares
    return loss_sums, square_sums

# ------------------------------------------------------------ reduced-error pruning

@kernel()
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


def path_n_leaves(tree, alphas):
    """Number of leaves of ``prune_tree(tree, alpha)`` for each of ``alphas``."""
    return pruning_path(tree).n_leaves_at(alphas)
