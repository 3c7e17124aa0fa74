"""SHAP values of silva's tree models: ``predict(X, pred_contrib=True)`` and friends.

This module turns a fitted estimator into what the compiled TreeSHAP kernels of
:mod:`silva.engine.treeshap` read: its binary trees concatenated in flat arrays, its
multiway trees (ID3, C4.5) one by one, each tree's leaf values *on the explained scale*
(tree weights, averaging and class mapping folded in), the output block each tree
writes to, and a constant added to the expected value. The explanation is path-dependent
TreeSHAP (Lundberg et al. 2020, Algorithm 2) with each node's training cover
(``weighted_n_node_samples``) as the background distribution. Binary trees are
explained from per-leaf tables (:func:`silva.engine.treeshap.cart_shap_tabled`), a group
of trees at a time, when the tables are small enough; otherwise, and for interaction
values and ID3/C4.5 trees, by Algorithm 2's walk.

What is explained (the quantity that contributions plus bias add up to):

=============================================  ==========================================
estimator                                      explained output (blocks)
=============================================  ==========================================
``DecisionTreeRegressor``, forests, bagging    ``predict`` (one block)
regressors
``DecisionTreeClassifier``, ``ID3``/``C45``,   ``predict_proba`` (one block per class)
forest and bagging classifiers
``GradientBoosting*``                          the raw score, ``decision_function`` (one
                                               block, or one per class for multiclass)
``AdaBoostClassifier``                         ``decision_function`` (one block for two
                                               classes, one per class otherwise)
=============================================  ==========================================

Layout, as LightGBM's ``pred_contrib``: ``(n_samples, (n_features + 1) * n_outputs)``,
one block of ``n_features + 1`` columns per output, the last column of each block the
expected value (bias). Interaction values are ``(n_samples, n_features + 1,
n_features + 1)`` for one output and ``(n_samples, n_outputs, n_features + 1,
n_features + 1)`` for several, as the ``shap`` package lays them out: symmetric, the
last row and column zero but for the bias in their corner, each row summing to the
feature's contribution.

``AdaBoostRegressor`` (a weighted median of its trees, not a sum) cannot be explained
tree by tree and raises an error, as do ensembles of models that are not silva trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils.validation import check_is_fitted

from silva.engine import treeshap
from silva.engine.ensemble import CATEGORICAL_BIT, FEATURE_MASK, MISSING_LEFT_BIT
from silva.engine.multiway import MultiwayTree
from silva.engine.sparse import dense_row_blocks, is_sparse
from silva.engine.tree import Tree

__all__ = ["contributions", "explanation", "interactions"]


@dataclass
class _CartBlock:
    """Binary trees concatenated with global child ids, as :func:`treeshap.cart_shap`
    reads them."""

    node_offset: np.ndarray
    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_go_left: np.ndarray
    is_categorical: np.ndarray
    bitsets: np.ndarray
    cover: np.ndarray
    leaf_value: np.ndarray
    output_column: np.ndarray


@dataclass
class _MultiwayMember:
    """One ID3/C4.5 tree, its leaf values (every node) and where it reads and writes."""

    tree: MultiwayTree
    leaf_value: np.ndarray
    output_column: int
    columns: np.ndarray  # the model's feature of each of the tree's features


@dataclass
class _Explained:
    """A model as the kernels see it."""

    n_features: int
    n_outputs: int
    bias: np.ndarray  # a constant per output added to the trees' expected values
    # Binary trees given one by one: (Tree, leaf_value, output column, model columns).
    cart: list = field(default_factory=list)
    packed: _CartBlock | None = None
    multiway: list = field(default_factory=list)


# -------------------------------------------------------------- from the models
def _packed_block(packed, leaf_value, first_tree, last_tree):
    """Trees ``first_tree..last_tree-1`` of a :class:`~silva.engine.ensemble.PackedTrees`
    as a :class:`_CartBlock` (``leaf_value`` indexed by packed node)."""
    lo, hi = int(packed.node_offset[first_tree]), int(packed.node_offset[last_tree])
    node_offset = packed.node_offset[first_tree:last_tree + 1] - lo
    walk = packed.walk[lo:hi]
    counts = np.diff(node_offset)
    start = np.repeat(node_offset[:-1], counts)
    local = np.arange(hi - lo) - start
    left_local = walk["left"].astype(np.int64)
    leaf = left_local < local  # a leaf's record leads back to itself (see WALK_DTYPE)
    flags = walk["feature_flags"]
    children_left = np.where(leaf, -1, start + left_local)
    return _CartBlock(
        node_offset=np.ascontiguousarray(node_offset, dtype=np.int64),
        children_left=children_left,
        children_right=np.where(leaf, -1, children_left + 1),
        feature=np.where(leaf, 0, (flags & FEATURE_MASK).astype(np.int64)),
        threshold=np.ascontiguousarray(walk["threshold"]),
        missing_go_left=((flags >> MISSING_LEFT_BIT) & 1).astype(np.uint8),
        is_categorical=((flags >> CATEGORICAL_BIT) & 1).astype(np.bool_),
        bitsets=_bitsets(packed.category_bitsets, lo, hi),
        cover=np.ascontiguousarray(packed.weighted_n_node_samples[lo:hi]),
        leaf_value=np.ascontiguousarray(leaf_value[lo:hi], dtype=np.float64),
        output_column=np.ascontiguousarray(packed.output_column[first_tree:last_tree],
                                           dtype=np.int64),
    )


def _bitsets(bitsets, lo, hi):
    if bitsets.shape[0] == 0 or bitsets.shape[1] == 0:
        return np.zeros((hi - lo, 0), dtype=np.uint64)
    return np.ascontiguousarray(bitsets[lo:hi], dtype=np.uint64)


def _trees_block(members):
    """:class:`_CartBlock` of ``(Tree, leaf_value, output_column, columns)`` members."""
    width = max(tree.category_bitsets.shape[1] if tree.is_categorical.any() else 0
                for tree, *_ in members)
    counts = [tree.node_count for tree, *_ in members]
    node_offset = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(counts, out=node_offset[1:])
    parts = {name: [] for name in ("children_left", "children_right", "feature", "threshold",
                                   "missing_go_left", "is_categorical", "bitsets", "cover",
                                   "leaf_value")}
    for (tree, leaf_value, _, columns), start in zip(members, node_offset[:-1], strict=True):
        leaf = tree.children_left == -1
        parts["children_left"].append(np.where(leaf, -1, tree.children_left + start))
        parts["children_right"].append(np.where(leaf, -1, tree.children_right + start))
        parts["feature"].append(np.where(leaf, 0, np.asarray(columns)[np.maximum(
            tree.feature, 0)]))
        parts["threshold"].append(tree.threshold)
        parts["missing_go_left"].append(tree.missing_go_to_left)
        parts["is_categorical"].append(tree.is_categorical)
        bits = np.zeros((tree.node_count, width), dtype=np.uint64)
        if width:
            own = min(width, tree.category_bitsets.shape[1])
            bits[:, :own] = tree.category_bitsets[:, :own]
        parts["bitsets"].append(bits)
        parts["cover"].append(tree.weighted_n_node_samples)
        parts["leaf_value"].append(leaf_value)
    arrays = {name: np.ascontiguousarray(np.concatenate(items)) for name, items in parts.items()}
    return _CartBlock(
        node_offset=node_offset,
        children_left=arrays["children_left"].astype(np.int64),
        children_right=arrays["children_right"].astype(np.int64),
        feature=arrays["feature"].astype(np.int64),
        threshold=arrays["threshold"].astype(np.float64),
        missing_go_left=arrays["missing_go_left"].astype(np.uint8),
        is_categorical=arrays["is_categorical"].astype(np.bool_),
        bitsets=arrays["bitsets"],
        cover=arrays["cover"].astype(np.float64),
        leaf_value=arrays["leaf_value"].astype(np.float64),
        output_column=np.array([column for _, _, column, _ in members], dtype=np.int64),
    )


def _class_columns(member, n_classes, values):
    """``values`` (n_nodes, len(member.classes_)) spread over ``n_classes`` columns, at the
    member's class codes (a bootstrap may miss a class)."""
    out = np.zeros((values.shape[0], n_classes))
    out[:, np.asarray(member.classes_).astype(np.intp)] = values
    return out


def _tree_of(member, owner):
    tree = getattr(member, "tree_", None)
    if not isinstance(tree, Tree | MultiwayTree):
        raise ValueError(f"{owner}: SHAP values need silva trees as members; "
                         f"{type(member).__name__} is not a silva tree estimator.")
    return tree


def _add_member(explained, tree, leaf_value, column, columns):
    if isinstance(tree, MultiwayTree):
        explained.multiway.append(_MultiwayMember(tree, leaf_value, column, columns))
    else:
        explained.cart.append((tree, leaf_value, column, columns))


def _explained_model(model):
    """The :class:`_Explained` of a fitted silva estimator."""
    from silva._multi_output import refuse

    refuse(model, "SHAP values (pred_contrib, pred_interactions)")
    from silva.adaboost import AdaBoostClassifier, AdaBoostRegressor
    from silva.bagging import BaggingClassifier, BaggingRegressor
    from silva.boosting import BaseGradientBoosting
    from silva.forest import BaseForest

    name = type(model).__name__
    if isinstance(model, BaseGradientBoosting):
        check_is_fitted(model, "estimators_")
        packed = model._packed
        n_outputs = model._n_trees_per_iteration
        n_trees = model.n_iter_ * n_outputs
        tree_of_node = np.repeat(np.arange(packed.n_trees), np.diff(packed.node_offset))
        leaf_value = packed.value * packed.tree_weight[tree_of_node][:, None]
        explained = _Explained(packed.n_features, n_outputs,
                               np.asarray(model.init_raw_, dtype=np.float64).ravel().copy())
        if n_trees:
            explained.packed = _packed_block(packed, leaf_value, 0, n_trees)
        return explained
    if isinstance(model, BaseForest):
        check_is_fitted(model, "estimators_")
        packed = model._packed
        n_outputs = int(getattr(model, "n_classes_", 1)) if hasattr(model, "classes_") else 1
        tree_of_node = np.repeat(np.arange(packed.n_trees), np.diff(packed.node_offset))
        leaf_value = (packed.value * packed.tree_weight[tree_of_node][:, None]
                      / packed.n_trees)
        explained = _Explained(packed.n_features, n_outputs, np.zeros(n_outputs))
        explained.packed = _packed_block(packed, leaf_value, 0, packed.n_trees)
        return explained
    if isinstance(model, BaggingClassifier | BaggingRegressor):
        check_is_fitted(model, "estimators_")
        is_classifier = isinstance(model, BaggingClassifier)
        n_outputs = model.n_classes_ if is_classifier else 1
        explained = _Explained(model.n_features_in_, n_outputs, np.zeros(n_outputs))
        n_members = len(model.estimators_)
        for member, columns in zip(model.estimators_, model.estimators_features_, strict=True):
            tree = _tree_of(member, name)
            values = tree.value[:, 0, :]
            if is_classifier:
                if model.voting == "hard":
                    if isinstance(tree, MultiwayTree) and tree.blend_missing:
                        raise ValueError(
                            f"{name}: voting='hard' over C4.5 trees is not additive over "
                            "leaves (a blended row's vote is the arg-max of a mixture); "
                            "use voting='soft' to explain it.")
                    values = np.eye(values.shape[1])[np.argmax(values, axis=1)]
                values = _class_columns(member, n_outputs, values)
            else:
                values = values[:, :1]
            _add_member(explained, tree, values / n_members, 0, np.asarray(columns))
        return explained
    if isinstance(model, AdaBoostRegressor):
        raise ValueError(f"{name}: its prediction is the weighted median of its trees, "
                         "which is not a sum over trees, so TreeSHAP cannot explain it; "
                         "explain AdaBoostClassifier, GradientBoostingRegressor or a forest.")
    if isinstance(model, AdaBoostClassifier):
        check_is_fitted(model, "estimators_")
        return _explained_adaboost(model)
    tree = getattr(model, "tree_", None)
    if isinstance(tree, Tree | MultiwayTree):
        values = tree.value[:, 0, :]
        n_outputs = values.shape[1] if hasattr(model, "classes_") else 1
        explained = _Explained(tree.n_features, n_outputs, np.zeros(n_outputs))
        _add_member(explained, tree, values[:, :n_outputs], 0, np.arange(tree.n_features))
        return explained
    raise ValueError(f"SHAP values are computed for silva's tree models; {name} is not one.")


def _explained_adaboost(model):
    """AdaBoost's class scores are a sum over rounds of ``beta_m`` times a function of
    the learner's leaf: a one-hot vote for the leaf's class (discrete, SAMME) or
    ``(K - 1)(log p - mean log p)`` of its floored probabilities (real). The binary
    decision function is the difference of the two classes' scores; the multiclass
    SAMME one codes a vote symmetrically (1, or -1/(K - 1)) over the total weight."""
    from silva.adaboost import PROBABILITY_FLOOR

    name = type(model).__name__
    n_classes = model.n_classes_
    n_outputs = 1 if n_classes == 2 else n_classes
    explained = _Explained(model.n_features_in_, n_outputs, np.zeros(n_outputs))
    for learner, beta in zip(model.estimators_, model.estimator_weights_, strict=True):
        tree = _tree_of(learner, name)
        if not isinstance(tree, Tree):
            raise ValueError(f"{name}: SHAP values are computed for AdaBoost of CART trees "
                             f"(DecisionTreeClassifier); got {type(learner).__name__}.")
        values = tree.value[:, 0, :]
        if model._algorithm == "real":
            proba = np.maximum(_class_columns(learner, n_classes, values), PROBABILITY_FLOOR)
            log_proba = np.log(proba)
            scores = beta * (n_classes - 1) * (log_proba
                                               - log_proba.mean(axis=1, keepdims=True))
        else:
            codes = np.asarray(learner.classes_).astype(np.intp)[np.argmax(values, axis=1)]
            scores = np.zeros((values.shape[0], n_classes))
            scores[np.arange(values.shape[0]), codes] = beta
            if n_classes > 2:
                total_weight = float(np.sum(model.estimator_weights_))
                scores = (scores - (beta - scores) / (n_classes - 1)) / total_weight
        if n_classes == 2:
            scores = scores[:, 1:] - scores[:, :1]
        _add_member(explained, tree, scores, 0, np.arange(tree.n_features))
    return explained


def _validated(model, X):
    validated = getattr(model, "_validated_X", None)
    if validated is not None:
        X = validated(X)
    else:
        check_is_fitted(model, "estimators_")
        X = model._prepare_X(X, reset=False)
    if is_sparse(X):
        return X  # explained block by block (see _in_row_blocks)
    return np.ascontiguousarray(X, dtype=np.float64)


def _in_row_blocks(function, model, X):
    """``function(model, block)`` over dense blocks of rows of a sparse ``X``, joined
    (the result is dense anyway: one value per row and feature)."""
    return np.concatenate([function(model, block) for _, _, block in dense_row_blocks(X)])


# ----------------------------------------------------------------- computing
def _cart_blocks(explained):
    blocks = []
    if explained.packed is not None:
        blocks.append(explained.packed)
    if explained.cart:
        blocks.append(_trees_block(explained.cart))
    return blocks


def _expected_values(explained, blocks):
    bias = explained.bias.copy()
    for block in blocks:
        bias += treeshap.cart_expected_values(
            block.node_offset, block.children_left, block.children_right, block.cover,
            block.leaf_value, block.output_column, explained.n_outputs)
    for member in explained.multiway:
        tree = member.tree
        expected = treeshap.multiway_expected_value(
            tree.kind, tree.first_branch, tree.n_branches, tree.branch_child,
            tree.missing_child, tree.weighted_n_node_samples, member.leaf_value)
        bias[member.output_column:member.output_column + expected.shape[0]] += expected
    return bias


def _cart_arrays(block):
    return (block.node_offset, block.children_left, block.children_right, block.feature,
            block.threshold, block.missing_go_left, block.is_categorical, block.bitsets,
            block.cover, block.leaf_value, block.output_column,
            treeshap.cart_max_depth(block.children_left, block.children_right))


# Largest per-leaf tables (float64 entries, summed over leaves) held at once: 64 MiB.
# Larger models are explained a group of trees at a time.
MAX_TABLE_ENTRIES = 1 << 23


def _tree_groups(block):
    """Consecutive tree ranges whose per-leaf tables (:func:`treeshap.cart_leaf_tables`)
    fit in ``MAX_TABLE_ENTRIES`` each; None when the tables cannot be used (a leaf with
    more than ``MAX_TABLED_FEATURES`` distinct path features, a tree alone over the
    limit, or a node without cover), and Algorithm 2's walk is used instead."""
    entries, widest, positive = treeshap.cart_leaf_table_size(
        block.node_offset, block.children_left, block.children_right, block.feature,
        block.cover)
    if not positive or widest > treeshap.MAX_TABLED_FEATURES or \
            entries.max(initial=0) > MAX_TABLE_ENTRIES:
        return None
    groups, first, total = [], 0, 0
    for t, size in enumerate(entries):
        if total + size > MAX_TABLE_ENTRIES:
            groups.append((first, t))
            first, total = t, 0
        total += size
    groups.append((first, len(entries)))
    return groups


def _sub_block(block, first, last):
    """Trees ``first..last-1`` of ``block`` as a block of their own."""
    if (first, last) == (0, block.node_offset.shape[0] - 1):
        return block
    lo, hi = int(block.node_offset[first]), int(block.node_offset[last])

    def local(children):
        children = children[lo:hi]
        return np.where(children == -1, -1, children - lo)

    return _CartBlock(
        node_offset=block.node_offset[first:last + 1] - lo,
        children_left=local(block.children_left), children_right=local(block.children_right),
        feature=block.feature[lo:hi], threshold=block.threshold[lo:hi],
        missing_go_left=block.missing_go_left[lo:hi],
        is_categorical=block.is_categorical[lo:hi], bitsets=block.bitsets[lo:hi],
        cover=block.cover[lo:hi], leaf_value=block.leaf_value[lo:hi],
        output_column=block.output_column[first:last])


def _cart_shap(block, X, phi):
    """Add ``block``'s SHAP values to ``phi``: from per-leaf tables, a group of trees at
    a time, or by Algorithm 2's walk when tables cannot be used."""
    groups = _tree_groups(block)
    if groups is None:
        treeshap.cart_shap(X, *_cart_arrays(block), phi)
        return
    for first, last in groups:
        part = _sub_block(block, first, last)
        tables = treeshap.cart_leaf_tables(part.node_offset, part.children_left,
                                           part.children_right, part.feature, part.cover)
        treeshap.cart_shap_tabled(
            X, part.node_offset, part.children_left, part.children_right, part.feature,
            part.threshold, part.missing_go_left, part.is_categorical, part.bitsets,
            part.leaf_value, part.output_column, *tables, phi)


def _shap_values(explained, X):
    """(n_rows, n_outputs, n_features + 1): SHAP values, bias last."""
    phi = np.zeros((X.shape[0], explained.n_outputs, explained.n_features + 1))
    blocks = _cart_blocks(explained)
    for block in blocks:
        _cart_shap(block, X, phi)
    for member in explained.multiway:
        tree = member.tree
        max_children = int(tree.n_branches.max(initial=0)) + 1
        treeshap.multiway_shap(
            np.ascontiguousarray(X[:, member.columns]), tree.kind, tree.feature,
            tree.threshold, tree.first_branch, tree.n_branches, tree.branch_child,
            tree.branch_fraction, tree.missing_child, tree.blend_missing, tree.bin_edges,
            tree.n_bin_edges, tree.weighted_n_node_samples,
            np.ascontiguousarray(member.leaf_value, dtype=np.float64),
            member.output_column, np.ascontiguousarray(member.columns, dtype=np.int64),
            tree.max_depth, max_children, phi)
    phi[:, :, -1] = _expected_values(explained, blocks)
    return phi


def contributions(model, X):
    """SHAP values of ``model`` (a fitted silva tree model) for the rows of ``X``.

    Returns ``(n_samples, (n_features + 1) * n_outputs)``: per output a block of one
    column per feature followed by the expected value, as LightGBM's
    ``predict(X, pred_contrib=True)``; each block sums to the explained output (see the
    module docstring). ``X`` is prepared as the model's ``predict`` prepares it (data
    frames, categories, NaN as missing).
    """
    X = _validated(model, X)
    if is_sparse(X):
        return _in_row_blocks(contributions, model, X)
    phi = _shap_values(_explained_model(model), X)
    return phi.reshape(X.shape[0], -1)


def interactions(model, X):
    """SHAP interaction values (Lundberg et al. 2020) of a model of binary (CART) trees.

    Returns ``(n_samples, n_features + 1, n_features + 1)`` for one output,
    ``(n_samples, n_outputs, n_features + 1, n_features + 1)`` for several. Entry
    ``[i, j]`` (``i != j``) is half of feature ``i``'s attribution to the interaction
    with ``j`` (symmetric); ``[i, i]`` is ``i``'s main effect; row ``i`` sums to ``i``'s
    SHAP value; the corner ``[-1, -1]`` holds the expected value.
    """
    X = _validated(model, X)
    if is_sparse(X):
        return _in_row_blocks(interactions, model, X)
    explained = _explained_model(model)
    if explained.multiway:
        raise ValueError(f"{type(model).__name__}: SHAP interaction values are computed for "
                         "binary (CART) trees only, not for ID3 or C4.5 trees.")
    n_rows, n_features = X.shape[0], explained.n_features
    phi = np.zeros((n_rows, explained.n_outputs, n_features + 1))
    result = np.zeros((n_rows, explained.n_outputs, n_features + 1, n_features + 1))
    blocks = _cart_blocks(explained)
    for block in blocks:
        treeshap.cart_shap_interactions(X, *_cart_arrays(block), phi, result)
    features = np.arange(n_features)
    off_diagonal = result[:, :, features, features].copy()  # zero: j is never on its own path
    result[:, :, features, features] = phi[:, :, :n_features] - (
        result[:, :, :n_features, :n_features].sum(axis=3) - off_diagonal)
    result[:, :, n_features, n_features] = _expected_values(explained, blocks)
    return result[:, 0] if explained.n_outputs == 1 else result


def explanation(model, X, feature_names=None):
    """A ``shap.Explanation`` of ``model`` on ``X``, for ``shap``'s plots
    (``shap.plots.beeswarm``, ``bar``, ``waterfall``).

    For one output its values are ``(n_samples, n_features)`` and its base values
    ``(n_samples,)``; for several, ``(n_samples, n_features, n_outputs)`` and
    ``(n_samples, n_outputs)`` (``shap``'s layout for multi-output models). Feature
    names default to the model's ``feature_names_in_``. Needs the ``shap`` package
    (``pip install shap``; silva has no extra for it).
    """
    try:
        import shap
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("silva.explain.explanation needs the shap package: "
                          "pip install shap") from error
    values = contributions(model, X)
    n_features = int(model.n_features_in_)
    n_outputs = values.shape[1] // (n_features + 1)
    blocks = values.reshape(values.shape[0], n_outputs, n_features + 1)
    if feature_names is None:
        names = getattr(model, "feature_names_in_", None)
        feature_names = (list(map(str, names)) if names is not None
                         else [f"x{j}" for j in range(n_features)])
    data = _validated(model, X)
    data = data.toarray() if is_sparse(data) else np.asarray(data)  # as large as values
    if n_outputs == 1:
        return shap.Explanation(values=blocks[:, 0, :-1], base_values=blocks[:, 0, -1],
                                data=data, feature_names=list(feature_names))
    return shap.Explanation(values=np.transpose(blocks[:, :, :-1], (0, 2, 1)),
                            base_values=blocks[:, :, -1], data=data,
                            feature_names=list(feature_names))

