"""Exact path-dependent TreeSHAP: SHAP values and SHAP interaction values of tree models.

The algorithm is Algorithm 2 of Lundberg, Erion, Chen et al. (2020), "From local
explanations to global understanding with explainable AI for trees" (Nature Machine
Intelligence 2, 56-67), written from the paper's pseudocode. For one row ``x`` and one
tree it walks every node once, carrying the *path* of the distinct features split on
above the node. Each path element ``e`` holds

- ``d``: its feature;
- ``z`` (zero fraction): the share of training cover that follows the path through
  ``e``'s splits, the fraction of the conditional expectation taken when ``d`` is
  unknown (``cover(child) / cover(node)``, multiplied over repeated splits on ``d``);
- ``o`` (one fraction): the weight with which ``x`` itself follows the path through
  those splits when ``d`` is known: 1 or 0 for a binary split; for C4.5's unknown
  values, the branch's training fraction (the model sends the row down every branch
  with that weight, so the same arithmetic applies with ``o`` fractional);

and the path weights ``w``: ``w[k]`` is the sum over subsets of size ``k`` of the path's
features of the Shapley weight times the products of their fractions. EXTEND adds an
element (a polynomial multiplication), UNWIND removes one (its inverse). At a leaf with
value ``v``, each element ``e`` adds ``sum(UNWIND(path, e).w) * (o_e - z_e) * v`` to
``phi[d_e]``. The expected value (bias) of a tree is ``sum over leaves of
prod(z) * v``, so that ``sum(phi) + bias`` equals the prediction (local accuracy).

The recursion is written as a depth-first walk with an explicit stack: the path of a
node at depth ``k`` lives in slot ``k`` of a per-thread buffer, copied from its parent's
slot (the parent's slot is intact until all its children are done, since only deeper
slots are written in between).

SHAP interaction values (same paper, "SHAP interaction values") use the same walk with
one feature ``j`` *conditioned*: left out of the path and either always known (the row's
branch only, weight ``o``) or always unknown (every branch, weight ``z``). Half the
difference of the two runs' ``phi[i]`` is ``Phi[i, j]``; the diagonal is the rest of
``phi[i]``.

Two kernels share these steps: :func:`cart_shap` over binary trees concatenated in flat
arrays (all trees of a forest or a boosting model in one call, parallel over blocks of
rows), and :func:`multiway_shap` over one ID3/C4.5 tree (several children per node; a
row that stops at an inner node, through an unseen category or an empty branch, ends at
a "virtual leaf" holding that node's value, whose training cover is zero).

For binary trees :func:`cart_shap_tabled` gives the same values faster, from tables
built once per leaf (:func:`cart_leaf_tables`; see the notes above it): Algorithm 2
costs O(depth^2) per leaf and row, the tables O(path length).
"""

import numba as nb
import numpy as np

from silva.engine.jit import kernel
from silva.engine.multiway import LEAF
from silva.engine.multiway import _branch as multiway_branch
from silva.engine.tree import _goes_left

# Rows per parallel block: each block walks one tree for all its rows before the next
# tree, so the tree's nodes stay in cache (TreeSHAP visits every node of every tree for
# every row).
SHAP_ROW_BLOCK = 64
# Feature id of the dummy element at the root of every path (Algorithm 2 starts with an
# element of fractions 1 that no feature owns), and "no conditioned feature".
_NO_FEATURE = -1
_NOT_CONDITIONED = -2
# Branch codes of multiway_branch for values that take no value branch.
_MISSING = -1


# ---------------------------------------------------------------- path arithmetic
@kernel(inline="always")
def _extend(path_feature, path_zero, path_one, path_weight, base, length, zero, one,
            feature):
    """EXTEND: append ``(feature, zero, one)`` to the path in ``[base, base + length)``
    and update the subset weights; returns the new length."""
    path_feature[base + length] = feature
    path_zero[base + length] = zero
    path_one[base + length] = one
    path_weight[base + length] = 1.0 if length == 0 else 0.0
    scale = 1.0 / (length + 1)
    for i in range(length - 1, -1, -1):
        path_weight[base + i + 1] += one * path_weight[base + i] * (i + 1) * scale
        path_weight[base + i] = zero * path_weight[base + i] * (length - i) * scale
    return length + 1


@kernel(inline="always")
def _unwind(path_feature, path_zero, path_one, path_weight, base, length, element):
    """UNWIND: remove ``element`` from the path (inverse of its EXTEND); returns the new
    length. The weights are a symmetric function of the elements, so any element can be
    removed knowing only its fractions."""
    last = length - 1
    one = path_one[base + element]
    zero = path_zero[base + element]
    carry = path_weight[base + last]
    for j in range(last - 1, -1, -1):
        if one != 0.0:
            previous = path_weight[base + j]
            path_weight[base + j] = carry * (last + 1) / ((j + 1) * one)
            carry = previous - path_weight[base + j] * zero * (last - j) / (last + 1)
        else:
            path_weight[base + j] = path_weight[base + j] * (last + 1) / (zero * (last - j))
    for j in range(element, last):
        path_feature[base + j] = path_feature[base + j + 1]
        path_zero[base + j] = path_zero[base + j + 1]
        path_one[base + j] = path_one[base + j + 1]
    return last


@kernel(inline="always")
def _unwound_sum(path_zero, path_one, path_weight, base, length, element):
    """Sum of the weights :func:`_unwind` would leave, without changing the path."""
    last = length - 1
    one = path_one[base + element]
    zero = path_zero[base + element]
    total = 0.0
    if one != 0.0:
        carry = path_weight[base + last]
        for j in range(last - 1, -1, -1):
            weight = carry * (last + 1) / ((j + 1) * one)
            total += weight
            carry = path_weight[base + j] - weight * zero * (last - j) / (last + 1)
    else:
        for j in range(last - 1, -1, -1):
            total += path_weight[base + j] * (last + 1) / (zero * (last - j))
    return total


@kernel(inline="always")
def _enter_node(path_feature, path_zero, path_one, path_weight, path_length, slot_size,
                level, zero, one, feature, condition_feature):
    """Copy the parent's path (slot ``level - 1``) into slot ``level`` and extend it with
    the edge into this node, unless the edge splits on the conditioned feature.
    Returns the slot's base and length."""
    base = level * slot_size
    length = 0
    if level > 0:
        parent = base - slot_size
        length = path_length[level - 1]
        for k in range(length):
            path_feature[base + k] = path_feature[parent + k]
            path_zero[base + k] = path_zero[parent + k]
            path_one[base + k] = path_one[parent + k]
            path_weight[base + k] = path_weight[parent + k]
    if feature != condition_feature:
        length = _extend(path_feature, path_zero, path_one, path_weight, base, length, zero,
                         one, feature)
    path_length[level] = length
    return base, length


@kernel(inline="always")
def _add_leaf(path_feature, path_zero, path_one, path_weight, base, length, scale,
              value_row, column, phi, feature_map):
    """A leaf's share to ``phi[column + k, feature]`` for every path element."""
    n_values = value_row.shape[0]
    for e in range(1, length):
        weight = _unwound_sum(path_zero, path_one, path_weight, base, length, e)
        share = scale * weight * (path_one[base + e] - path_zero[base + e])
        feature = feature_map[path_feature[base + e]]
        for k in range(n_values):
            phi[column + k, feature] += share * value_row[k]


@kernel(inline="always")
def _split_feature_seen(path_feature, path_zero, path_one, path_weight, base, length,
                        feature, path_length, level):
    """If ``feature`` is already on the path, unwind it and return its fractions (the
    children's fractions multiply them); otherwise ``(1, 1)``."""
    for k in range(1, length):
        if path_feature[base + k] == feature:
            zero = path_zero[base + k]
            one = path_one[base + k]
            path_length[level] = _unwind(path_feature, path_zero, path_one, path_weight, base,
                                         length, k)
            return zero, one
    return 1.0, 1.0


@kernel(inline="always")
def _path_buffers(slot_size):
    """One walk's paths: ``slot_size`` slots of ``slot_size`` elements each (feature,
    zero fraction, one fraction, weight) and each slot's length; a block of rows reuses
    them."""
    n = slot_size * slot_size
    return (np.empty(n, dtype=np.int64), np.empty(n), np.empty(n), np.empty(n),
            np.empty(slot_size, dtype=np.int64))


@kernel(inline="always")
def _stack_buffers(stack_size):
    """One walk's stack of pending nodes: node, level, zero and one fractions, feature."""
    return (np.empty(stack_size, dtype=np.int64), np.empty(stack_size, dtype=np.int64),
            np.empty(stack_size), np.empty(stack_size), np.empty(stack_size, dtype=np.int64))


# ------------------------------------------------------------------- binary trees
@kernel()
def _reciprocals(n):
    """``1 / k`` for ``k = 0..n-1`` (0 at ``k = 0``, never read)."""
    table = np.zeros(n)
    for k in range(1, n):
        table[k] = 1.0 / k
    return table


@kernel(inline="always")
def _cart_tree_row(x, root, children_left, children_right, feature, threshold,
                   missing_go_left, is_categorical, bitsets, cover, leaf_value, column,
                   phi, scale, condition_feature, condition_known, feature_map, reciprocal,
                   path_feature, path_zero, path_one, path_weight, path_length, slot_size,
                   stack_node, stack_level, stack_zero, stack_one, stack_feature,
                   stack_condition):
    """Add one tree's SHAP values for row ``x`` to ``phi`` (``scale`` times them).

    ``condition_feature`` (or :data:`_NOT_CONDITIONED`) is left out of the path and
    taken as known (``condition_known``) or unknown, for interaction values.
    """
    top = 1
    stack_node[0] = root
    stack_level[0] = 0
    stack_zero[0] = 1.0
    stack_one[0] = 1.0
    stack_feature[0] = _NO_FEATURE
    stack_condition[0] = 1.0
    while top > 0:
        top -= 1
        node = stack_node[top]
        level = stack_level[top]
        condition = stack_condition[top]
        # The steps of _enter_node, _extend and _add_leaf written out: this is the inner
        # loop of every CART explanation, and written out it runs about twice as fast
        # (the helpers, inlined into the loop, cost reference counting on their array
        # arguments at every node), with divisions replaced by a table of 1 / k.
        base = level * slot_size
        length = 0
        if level > 0:
            parent = base - slot_size
            length = path_length[level - 1]
            for k in range(length):
                path_feature[base + k] = path_feature[parent + k]
                path_zero[base + k] = path_zero[parent + k]
                path_one[base + k] = path_one[parent + k]
                path_weight[base + k] = path_weight[parent + k]
        edge_feature = stack_feature[top]
        if edge_feature != condition_feature:  # EXTEND
            zero = stack_zero[top]
            one = stack_one[top]
            position = base + length
            path_feature[position] = edge_feature
            path_zero[position] = zero
            path_one[position] = one
            path_weight[position] = 1.0 if length == 0 else 0.0
            inverse = reciprocal[length + 1]
            for k in range(length - 1, -1, -1):
                weight = path_weight[base + k]
                path_weight[base + k + 1] += one * weight * (k + 1) * inverse
                path_weight[base + k] = zero * weight * (length - k) * inverse
            length += 1
        path_length[level] = length
        left = children_left[node]
        if left == -1:
            # Each element's share is the sum of the weights UNWIND would leave. For an
            # element the row does not follow (one fraction 0) that sum is
            # (L + 1) / z * sum_k w[k] / (L - k), whose second factor all such elements
            # share; the others unwind from the top, one pass each.
            last = length - 1
            cold_sum = -1.0
            leaf_scale = scale * condition
            for e in range(1, length):
                one = path_one[base + e]
                zero = path_zero[base + e]
                total = 0.0
                if one != 0.0:
                    inverse_one = 1.0 / one
                    carry = path_weight[base + last]
                    for k in range(last - 1, -1, -1):
                        weight = carry * (last + 1) * reciprocal[k + 1] * inverse_one
                        total += weight
                        carry = (path_weight[base + k]
                                 - weight * zero * (last - k) * reciprocal[last + 1])
                else:
                    if cold_sum < 0.0:
                        cold_sum = 0.0
                        for k in range(last):
                            cold_sum += path_weight[base + k] * reciprocal[last - k]
                    total = (last + 1) * cold_sum / zero
                share = leaf_scale * total * (one - zero)
                target = feature_map[path_feature[base + e]]
                for k in range(leaf_value.shape[1]):
                    phi[column + k, target] += share * leaf_value[node, k]
            continue
        right = children_right[node]
        split = feature[node]
        goes_left = _goes_left(x[split], node, threshold, missing_go_left, is_categorical,
                               bitsets)
        hot = left if goes_left else right
        cold = right if goes_left else left
        parent_cover = cover[node]
        hot_share = cover[hot] / parent_cover if parent_cover > 0.0 else 0.0
        cold_share = cover[cold] / parent_cover if parent_cover > 0.0 else 0.0
        if split == condition_feature:
            # The conditioned feature adds no path element: its split only scales the
            # walk, by the row's branch when known and by the cover when unknown.
            if condition_known:
                children = 1
                stack_node[top] = hot
                stack_condition[top] = condition
            else:
                children = 0
                if cold_share > 0.0:
                    stack_node[top] = cold
                    stack_condition[top] = condition * cold_share
                    children = 1
                if hot_share > 0.0:
                    stack_node[top + children] = hot
                    stack_condition[top + children] = condition * hot_share
                    children += 1
            for c in range(children):
                stack_level[top + c] = level + 1
                stack_zero[top + c] = 1.0
                stack_one[top + c] = 1.0
                stack_feature[top + c] = split
            top += children
            continue
        zero, one = _split_feature_seen(path_feature, path_zero, path_one, path_weight,
                                        base, length, split, path_length, level)
        # A cold child without cover adds nothing (all its weights are zero): skip it.
        if zero * cold_share > 0.0:
            stack_node[top] = cold
            stack_level[top] = level + 1
            stack_zero[top] = zero * cold_share
            stack_one[top] = 0.0
            stack_feature[top] = split
            stack_condition[top] = condition
            top += 1
        stack_node[top] = hot
        stack_level[top] = level + 1
        stack_zero[top] = zero * hot_share
        stack_one[top] = one
        stack_feature[top] = split
        stack_condition[top] = condition
        top += 1


@kernel()
def cart_max_depth(children_left, children_right):
    """Depth of the deepest node over concatenated trees (global child ids; children
    have larger ids than their parent)."""
    depth = np.zeros(children_left.shape[0], dtype=np.int64)
    deepest = 0
    for node in range(children_left.shape[0]):
        deepest = max(deepest, depth[node])
        if children_left[node] != -1:
            depth[children_left[node]] = depth[node] + 1
            depth[children_right[node]] = depth[node] + 1
    return deepest


@kernel()
def cart_expected_values(node_offset, children_left, children_right, cover, leaf_value,
                         output_column, n_outputs):
    """Sum over trees of each tree's expected value ``sum_leaves prod(z) * v`` per output:
    the bias column of :func:`cart_shap`."""
    bias = np.zeros(n_outputs)
    reach = np.zeros(children_left.shape[0])
    for t in range(node_offset.shape[0] - 1):
        column = output_column[t]
        reach[node_offset[t]] = 1.0
        for node in range(node_offset[t], node_offset[t + 1]):
            left = children_left[node]
            if left == -1:
                for k in range(leaf_value.shape[1]):
                    bias[column + k] += reach[node] * leaf_value[node, k]
            elif cover[node] > 0.0:
                reach[left] = reach[node] * cover[left] / cover[node]
                right = children_right[node]
                reach[right] = reach[node] * cover[right] / cover[node]
            else:
                reach[left] = 0.0
                reach[children_right[node]] = 0.0
    return bias


@kernel(parallel=True)
def cart_shap(X, node_offset, children_left, children_right, feature, threshold,
              missing_go_left, is_categorical, bitsets, cover, leaf_value, output_column,
              max_depth, phi):
    """Add the SHAP values of every tree to ``phi`` (n_rows, n_outputs, n_features + 1).

    Trees are concatenated: tree ``t`` is nodes ``node_offset[t]..node_offset[t+1]-1``
    with *global* child ids (``-1`` at leaves). The split tests are those of the model's
    own prediction (:func:`silva.engine.tree._goes_left`: NaN and unseen categories take
    the missing direction). ``cover`` is each node's training weight, ``leaf_value`` the
    leaf values on the explained scale (tree weights included), written to outputs
    ``output_column[t]...``. The last column of ``phi`` is left alone (see
    :func:`cart_expected_values`).
    """
    n_rows = X.shape[0]
    n_trees = node_offset.shape[0] - 1
    slot_size = max_depth + 2
    stack_size = 2 * max_depth + 3
    identity = np.arange(X.shape[1])
    reciprocal = _reciprocals(slot_size + 1)
    n_blocks = (n_rows + SHAP_ROW_BLOCK - 1) // SHAP_ROW_BLOCK
    for b in nb.prange(n_blocks):
        path_feature, path_zero, path_one, path_weight, path_length = \
            _path_buffers(slot_size)
        stack_node, stack_level, stack_zero, stack_one, stack_feature = \
            _stack_buffers(stack_size)
        stack_condition = np.empty(stack_size)
        first = b * SHAP_ROW_BLOCK
        last = min(n_rows, first + SHAP_ROW_BLOCK)
        for t in range(n_trees):
            for i in range(first, last):
                _cart_tree_row(X[i], node_offset[t], children_left, children_right, feature,
                               threshold, missing_go_left, is_categorical, bitsets, cover,
                               leaf_value, output_column[t], phi[i], 1.0, _NOT_CONDITIONED,
                               False, identity, reciprocal, path_feature, path_zero, path_one,
                               path_weight, path_length, slot_size, stack_node, stack_level,
                               stack_zero, stack_one, stack_feature, stack_condition)


@kernel(parallel=True)
def cart_shap_interactions(X, node_offset, children_left, children_right, feature,
                           threshold, missing_go_left, is_categorical, bitsets, cover,
                           leaf_value, output_column, max_depth, phi, interactions):
    """SHAP values into ``phi`` (as :func:`cart_shap`) and the off-diagonal SHAP
    interaction values into ``interactions`` (n_rows, n_outputs, n_features + 1,
    n_features + 1): for each tree and each feature ``j`` it splits on,
    ``Phi[i, j] += (phi_i(j known) - phi_i(j unknown)) / 2``, written to row ``j``
    (the matrix is symmetric). The diagonal and the bias entries are left to the caller.
    """
    n_rows = X.shape[0]
    n_features = X.shape[1]
    n_trees = node_offset.shape[0] - 1
    slot_size = max_depth + 2
    stack_size = 2 * max_depth + 3
    identity = np.arange(n_features)
    reciprocal = _reciprocals(slot_size + 1)
    n_blocks = (n_rows + SHAP_ROW_BLOCK - 1) // SHAP_ROW_BLOCK
    for b in nb.prange(n_blocks):
        path_feature, path_zero, path_one, path_weight, path_length = \
            _path_buffers(slot_size)
        stack_node, stack_level, stack_zero, stack_one, stack_feature = \
            _stack_buffers(stack_size)
        stack_condition = np.empty(stack_size)
        used = np.zeros(n_features, dtype=np.bool_)
        first = b * SHAP_ROW_BLOCK
        last = min(n_rows, first + SHAP_ROW_BLOCK)
        for t in range(n_trees):
            used[:] = False
            for node in range(node_offset[t], node_offset[t + 1]):
                if children_left[node] != -1:
                    used[feature[node]] = True
            column = output_column[t]
            for i in range(first, last):
                _cart_tree_row(X[i], node_offset[t], children_left, children_right, feature,
                               threshold, missing_go_left, is_categorical, bitsets, cover,
                               leaf_value, column, phi[i], 1.0, _NOT_CONDITIONED, False,
                               identity, reciprocal, path_feature, path_zero, path_one,
                               path_weight,
                               path_length, slot_size, stack_node, stack_level, stack_zero,
                               stack_one, stack_feature, stack_condition)
                for j in range(n_features):
                    if not used[j]:
                        continue
                    row_j = interactions[i, :, j, :]
                    for known, half in ((True, 0.5), (False, -0.5)):
                        _cart_tree_row(X[i], node_offset[t], children_left, children_right,
                                       feature, threshold, missing_go_left, is_categorical,
                                       bitsets, cover, leaf_value, column, row_j, half, j,
                                       known, identity, reciprocal, path_feature, path_zero,
                                       path_one,
                                       path_weight, path_length, slot_size, stack_node,
                                       stack_level, stack_zero, stack_one, stack_feature,
                                       stack_condition)


# ---------------------------------------------------------------- multiway trees
@kernel()
def multiway_expected_value(kind, first_branch, n_branches, branch_child, missing_child,
                            cover, leaf_value):
    """``sum_leaves prod(z) * v`` of one multiway tree, per output value."""
    n_nodes = kind.shape[0]
    reach = np.zeros(n_nodes)
    reach[0] = 1.0
    bias = np.zeros(leaf_value.shape[1])
    for node in range(n_nodes):
        if kind[node] == LEAF:
            for k in range(leaf_value.shape[1]):
                bias[k] += reach[node] * leaf_value[node, k]
            continue
        if cover[node] <= 0.0:
            continue
        for c in range(n_branches[node] + 1):
            child = (branch_child[first_branch[node] + c] if c < n_branches[node]
                     else missing_child[node])
            if child >= 0:
                reach[child] = reach[node] * cover[child] / cover[node]
    return bias


@kernel(parallel=True)
def multiway_shap(X, kind, feature, threshold, first_branch, n_branches, branch_child,
                  branch_fraction, missing_child, blend_missing, bin_edges, n_bin_edges,
                  cover, leaf_value, column, feature_map, max_depth, max_children, phi):
    """Add one ID3/C4.5 tree's SHAP values to ``phi`` (n_rows, n_outputs, n_out + 1).

    The row follows the tree as :func:`silva.engine.multiway.predict_proba_multiway`
    does: one branch (``o = 1``), or with ``blend_missing`` and a missing value, every
    branch with its training fraction as ``o``; a row that cannot go on (unseen
    category, empty branch, missing value without a branch) ends at a virtual leaf
    with the node's own ``leaf_value`` (``z = 0``: no training case ended there).
    ``leaf_value`` is given for every node. Feature ``f`` of the tree is reported as
    ``feature_map[f]``.
    """
    n_rows = X.shape[0]
    slot_size = max_depth + 2
    stack_size = max_depth * (max_children + 1) + 2
    n_blocks = (n_rows + SHAP_ROW_BLOCK - 1) // SHAP_ROW_BLOCK
    for b in nb.prange(n_blocks):
        path_feature, path_zero, path_one, path_weight, path_length = \
            _path_buffers(slot_size)
        stack_node, stack_level, stack_zero, stack_one, stack_feature = \
            _stack_buffers(stack_size)
        stack_virtual = np.empty(stack_size, dtype=np.bool_)
        for i in range(b * SHAP_ROW_BLOCK, min(n_rows, (b + 1) * SHAP_ROW_BLOCK)):
            x = X[i]
            phi_row = phi[i]
            top = 1
            stack_node[0] = 0
            stack_level[0] = 0
            stack_zero[0] = 1.0
            stack_one[0] = 1.0
            stack_feature[0] = _NO_FEATURE
            stack_virtual[0] = False
            while top > 0:
                top -= 1
                node = stack_node[top]
                level = stack_level[top]
                base, length = _enter_node(path_feature, path_zero, path_one, path_weight,
                                           path_length, slot_size, level, stack_zero[top],
                                           stack_one[top], stack_feature[top],
                                           _NOT_CONDITIONED)
                if stack_virtual[top] or kind[node] == LEAF:
                    _add_leaf(path_feature, path_zero, path_one, path_weight, base, length,
                              1.0, leaf_value[node], column, phi_row, feature_map)
                    continue
                split = feature[node]
                branch = multiway_branch(x[split], node, kind, feature, threshold,
                                         n_branches, bin_edges, n_bin_edges)
                blend = branch == _MISSING and missing_child[node] < 0 and blend_missing
                hot = -1
                if branch >= 0:
                    hot = branch_child[first_branch[node] + branch]
                elif branch == _MISSING:
                    hot = missing_child[node]
                zero, one = _split_feature_seen(path_feature, path_zero, path_one,
                                                path_weight, base, length, split,
                                                path_length, level)
                parent_cover = cover[node]
                followed = False
                for c in range(n_branches[node] + 1):
                    slot = first_branch[node] + c
                    child = branch_child[slot] if c < n_branches[node] else missing_child[node]
                    if child < 0:
                        continue
                    share = cover[child] / parent_cover if parent_cover > 0.0 else 0.0
                    if blend:
                        row_weight = (branch_fraction[slot] if c < n_branches[node] else 0.0)
                    else:
                        row_weight = 1.0 if child == hot else 0.0
                    if share * zero <= 0.0 and row_weight * one <= 0.0:
                        continue
                    followed = followed or row_weight > 0.0
                    stack_node[top] = child
                    stack_level[top] = level + 1
                    stack_zero[top] = zero * share
                    stack_one[top] = one * row_weight
                    stack_feature[top] = split
                    stack_virtual[top] = False
                    top += 1
                if not followed and one > 0.0:
                    # The row ends here with the node's value (an unseen category, an
                    # empty branch, or a blend with nowhere to go).
                    stack_node[top] = node
                    stack_level[top] = level + 1
                    stack_zero[top] = 0.0
                    stack_one[top] = one
                    stack_feature[top] = split
                    stack_virtual[top] = True
                    top += 1


# ------------------------------------------------- binary trees, tabled per leaf
# For binary splits a row's one fraction on a leaf's path is 0 or 1 per feature, so a
# leaf's contributions depend on the row only through which of the leaf's m distinct
# path features the row agrees with (its "hot" set H). With z_f the product of f's zero
# fractions on the path, w(s, m) = s! (m - s - 1)! / m! and
#     B(T) = sum over S within T of w(|S|, m) * prod_{g on the path, not in S} z_g,
# Shapley's formula for the leaf's term v * prod_{g in S} o_g * prod_{g not in S} z_g
# gives (the idea of Fast TreeSHAP v2, Yang 2021, "Fast TreeSHAP: accelerating SHAP
# value computation for trees"; derived here from the definition):
#     f in H:      phi_f += v * (1 - z_f) / z_f * B(H without f)
#     f not in H:  phi_f -= v * B(H)
# B is tabled once per leaf (2^m entries, a subset-sum transform), after which a row
# costs O(path length) per leaf instead of Algorithm 2's O(depth^2).
MAX_TABLED_FEATURES = 16


@kernel()
def cart_leaf_tables(node_offset, children_left, children_right, feature, cover):
    """Per leaf: its distinct path features, their zero-fraction products, its path
    (ancestor, whether the path goes left there, the feature's position among the
    leaf's), and the table B (see above). Returns ``(leaf_node, unique_start,
    unique_feature, unique_zero, path_start, path_node, path_left, path_unique,
    table_start, table)``. Raises no error: the caller checks the sizes first with
    :func:`cart_leaf_table_size`.
    """
    n_nodes = children_left.shape[0]
    parent = np.full(n_nodes, -1, dtype=np.int64)
    depth = np.zeros(n_nodes, dtype=np.int64)
    n_leaves = 0
    path_total = 0
    for node in range(n_nodes):
        left = children_left[node]
        if left == -1:
            n_leaves += 1
            path_total += depth[node]
        else:
            parent[left] = node
            parent[children_right[node]] = node
            depth[left] = depth[node] + 1
            depth[children_right[node]] = depth[node] + 1
    leaf_node = np.empty(n_leaves, dtype=np.int64)
    unique_start = np.zeros(n_leaves + 1, dtype=np.int64)
    path_start = np.zeros(n_leaves + 1, dtype=np.int64)
    table_start = np.zeros(n_leaves + 1, dtype=np.int64)
    unique_feature = np.empty(path_total, dtype=np.int64)
    unique_zero = np.empty(path_total)
    path_node = np.empty(path_total, dtype=np.int64)
    path_left = np.empty(path_total, dtype=np.bool_)
    path_unique = np.empty(path_total, dtype=np.int64)
    leaf = 0
    n_unique_total = 0
    table_total = 0
    for node in range(n_nodes):
        if children_left[node] != -1:
            continue
        leaf_node[leaf] = node
        first_unique = n_unique_total
        position = path_start[leaf]
        child = node
        while parent[child] != -1:
            up = parent[child]
            went_left = children_left[up] == child
            share = cover[child] / cover[up]
            f = feature[up]
            u = -1
            for k in range(first_unique, n_unique_total):
                if unique_feature[k] == f:
                    u = k
            if u == -1:
                u = n_unique_total
                unique_feature[u] = f
                unique_zero[u] = 1.0
                n_unique_total += 1
            unique_zero[u] *= share
            path_node[position] = up
            path_left[position] = went_left
            path_unique[position] = u - first_unique
            position += 1
            child = up
        path_start[leaf + 1] = position
        unique_start[leaf + 1] = n_unique_total
        table_total += 1 << (n_unique_total - first_unique)
        table_start[leaf + 1] = table_total
        leaf += 1
    table = np.zeros(table_total)
    for leaf in range(n_leaves):
        first = unique_start[leaf]
        m = unique_start[leaf + 1] - first
        base = table_start[leaf]
        size = 1 << m
        # w(s, m) = 1 / (m * C(m - 1, s)); a leaf at the root (m = 0) has no feature.
        shapley = np.zeros(m + 1)
        binomial = 1.0
        for s in range(m):
            shapley[s] = 1.0 / (m * binomial)
            binomial = binomial * (m - 1 - s) / (s + 1)
        # prod of z over the features outside S, from the full set down.
        outside = np.ones(size)
        for subset in range(size - 2, -1, -1):
            g = 0
            while (subset >> g) & 1:
                g += 1
            outside[subset] = outside[subset | (1 << g)] * unique_zero[first + g]
        for subset in range(size):
            count = 0
            bits = subset
            while bits:
                count += bits & 1
                bits >>= 1
            table[base + subset] = shapley[count] * outside[subset] if count < m else 0.0
        for g in range(m):  # subset sums: B(T) = sum of the entries of T's subsets
            bit = 1 << g
            for subset in range(size):
                if subset & bit:
                    table[base + subset] += table[base + (subset ^ bit)]
    return (leaf_node, unique_start, unique_feature[:n_unique_total],
            unique_zero[:n_unique_total], path_start, path_node, path_left, path_unique,
            table_start, table)


@kernel()
def cart_leaf_table_size(node_offset, children_left, children_right, feature, cover):
    """``(table entries of each tree, largest number of distinct features on a leaf's
    path, whether every node has positive cover)`` for :func:`cart_leaf_tables`."""
    n_nodes = children_left.shape[0]
    parent = np.full(n_nodes, -1, dtype=np.int64)
    positive = True
    for node in range(n_nodes):
        if cover[node] <= 0.0:
            positive = False
        if children_left[node] != -1:
            parent[children_left[node]] = node
            parent[children_right[node]] = node
    n_trees = node_offset.shape[0] - 1
    entries = np.zeros(n_trees, dtype=np.int64)
    features = np.empty(n_nodes, dtype=np.int64)
    widest = 0
    for t in range(n_trees):
        for node in range(node_offset[t], node_offset[t + 1]):
            if children_left[node] != -1:
                continue
            m = 0
            child = node
            while parent[child] != -1:
                f = feature[parent[child]]
                known = False
                for k in range(m):
                    known = known or features[k] == f
                if not known:
                    features[m] = f
                    m += 1
                child = parent[child]
            widest = max(widest, m)
            if m <= MAX_TABLED_FEATURES:
                entries[t] += 1 << m
    return entries, widest, positive


@kernel(parallel=True)
def cart_shap_tabled(X, node_offset, children_left, children_right, feature, threshold,
                     missing_go_left, is_categorical, bitsets, leaf_value, output_column,
                     leaf_node, unique_start, unique_feature, unique_zero, path_start,
                     path_node, path_left, path_unique, table_start, table, phi):
    """:func:`cart_shap` from the per-leaf tables of :func:`cart_leaf_tables` (same
    values; every node's cover positive)."""
    n_rows = X.shape[0]
    n_trees = node_offset.shape[0] - 1
    n_values = leaf_value.shape[1]
    # (1 - z) / z of each leaf's features, once rather than per row.
    hot_factor = (1.0 - unique_zero) / unique_zero
    # Leaves of each tree: leaf_node is in node order, so each tree's leaves are a run.
    tree_first_leaf = np.searchsorted(leaf_node, node_offset)
    largest = 0
    for t in range(n_trees):
        largest = max(largest, node_offset[t + 1] - node_offset[t])
    n_blocks = (n_rows + SHAP_ROW_BLOCK - 1) // SHAP_ROW_BLOCK
    for b in nb.prange(n_blocks):
        goes_left = np.empty(largest, dtype=np.bool_)
        first = b * SHAP_ROW_BLOCK
        last = min(n_rows, first + SHAP_ROW_BLOCK)
        for t in range(n_trees):
            root = node_offset[t]
            column = output_column[t]
            for i in range(first, last):
                x = X[i]
                for node in range(root, node_offset[t + 1]):
                    if children_left[node] != -1:
                        goes_left[node - root] = _goes_left(
                            x[feature[node]], node, threshold, missing_go_left,
                            is_categorical, bitsets)
                for leaf in range(tree_first_leaf[t], tree_first_leaf[t + 1]):
                    m = unique_start[leaf + 1] - unique_start[leaf]
                    if m == 0:
                        continue
                    cold = 0
                    for p in range(path_start[leaf], path_start[leaf + 1]):
                        if goes_left[path_node[p] - root] != path_left[p]:
                            cold |= 1 << path_unique[p]
                    hot = ((1 << m) - 1) & ~cold
                    base = table_start[leaf]
                    cold_share = -table[base + hot]
                    node = leaf_node[leaf]
                    for u in range(m):
                        k = unique_start[leaf] + u
                        if (hot >> u) & 1:
                            share = hot_factor[k] * table[base + (hot ^ (1 << u))]
                        else:
                            share = cold_share
                        f = unique_feature[k]
                        for v in range(n_values):
                            phi[i, column + v, f] += share * leaf_value[node, v]
