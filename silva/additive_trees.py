"""Any supported silva model as one additive ensemble of binary trees, for exporters.

ONNX (:mod:`silva.export_onnx`) and Treelite (:mod:`silva.export_treelite`) describe a
tree model the same way: binary decision nodes, leaves that add a value to an output
column, a constant per output (the intercept) and a final transform. This module turns
every silva estimator it supports into that form, :class:`AdditiveModel`, so each
exporter only writes the format:

    raw[:, c] = base_score[c] + sum over trees t of leaf_t(x)[c - first_column_t]
    output    = link(raw)

Leaf values are the estimator's own combination folded in: a forest's mean is leaf
values divided by the number of trees, AdaBoost's weighted vote is the learner weight
on the voted class, gradient boosting's exponential loss (whose probability is the
sigmoid of twice the raw score) doubles its leaves and intercept.

Decision nodes (:class:`BinaryTree`) carry one of three tests, each sending a sample to
``true_child`` when it holds and to ``false_child`` otherwise:

- ``LESS_EQUAL``: ``x <= threshold``; NaN goes to the true child when ``missing_true``;
- ``EQUAL``: ``x == threshold`` (ID3's value branches; NaN fails it);
- ``MEMBER``: ``x`` is one of the integer codes ``members`` (CART's categorical splits;
  NaN fails it).

A CART categorical split sends left the codes of its bitset, and NaN together with
every code the bitset cannot hold (negative, non-integer or too large) the way of its
missing values (:func:`silva.engine.tree._goes_left`). Those other codes are unbounded,
so the set test is written for the side that is finite: when missing values go right,
the test is "code in the left set" (true: left); when they go left, it is "code in the
complement of the left set within the bitset's codes" (true: right). Either way NaN and
the codes no set holds fail the test and reach the missing-value side, as in silva.

ID3's multiway nodes are expanded into chains of binary tests (Quinlan 1986's value
branches as ``EQUAL`` tests, one per branch that has a subtree, tried in branch order;
interval branches as ``LESS_EQUAL`` tests on the bin edges in increasing order); a
value that takes no branch (an unseen code, a branch without training cases, a missing
value where the node has no missing branch) ends at a leaf with the node's own class
distribution, as :func:`silva.engine.multiway.predict_proba_multiway` does. C4.5 sends a
missing value down every branch with fractional weights (Quinlan 1993, sec. 3.3), which
no single path through binary tests can express: such trees are refused.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.exceptions import NotFittedError

from silva.engine import multiway
from silva.engine.multiway import MultiwayTree
from silva.engine.tree import Tree

__all__ = ["EQUAL", "LEAF", "LESS_EQUAL", "MEMBER", "AdditiveModel", "AdditiveTree",
           "BinaryTree", "additive_model", "binary_tree", "weighted_median_model"]

LEAF, LESS_EQUAL, EQUAL, MEMBER = -1, 0, 1, 2

# Links: how outputs follow from raw scores.
# identity: the raw scores; sigmoid: one raw score s gives the two probabilities
# (1 - sigmoid(s), sigmoid(s)); softmax: one raw score per class; exp: exp(min(s, 700))
# (silva's log-link losses clip the raw score at 700, silva.engine.losses._MAX_EXP).
LINKS = ("identity", "sigmoid", "softmax", "exp")
EXP_CLIP = 700.0


class BinaryTree(NamedTuple):
    """One tree as binary decision nodes (see the module docstring); node 0 is the root,
    children come after their parent. ``feature`` indexes the model's input columns.
    ``value`` is ``(n_nodes, n_columns)``: what a leaf adds to its output columns
    (rows of decision nodes are unused)."""

    test: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    members: tuple
    true_child: np.ndarray
    false_child: np.ndarray
    missing_true: np.ndarray
    value: np.ndarray

    @property
    def n_nodes(self):
        return self.test.shape[0]


class AdditiveTree(NamedTuple):
    """A tree and the first output column its leaf values add to."""

    tree: BinaryTree
    first_column: int


class AdditiveModel(NamedTuple):
    """A model as ``link(base_score + sum of trees)`` (see the module docstring).

    ``classes`` is the classifier's ``classes_`` (None for regressors): the predicted
    label is ``classes[argmax(outputs)]``, the first of equals, as silva's ``predict``.
    The link ``"weighted_median"`` (:func:`weighted_median_model` only) is not additive:
    output column ``m`` is member ``m``'s prediction, and the model predicts their
    median weighted by ``member_weights``.
    """

    estimator: str
    n_features: int
    n_outputs: int
    trees: list
    base_score: np.ndarray
    link: str
    classes: np.ndarray | None
    member_weights: np.ndarray | None = None


class _NodeList:
    """Growing node arrays of one :class:`BinaryTree`."""

    def __init__(self, n_columns):
        self.n_columns = n_columns
        self.test, self.feature, self.threshold, self.members = [], [], [], []
        self.true_child, self.false_child, self.missing_true, self.value = [], [], [], []

    def add(self, test=LEAF, feature=-1, threshold=np.nan, members=(), missing_true=False,
            value=None):
        self.test.append(test)
        self.feature.append(feature)
        self.threshold.append(threshold)
        self.members.append(tuple(members))
        self.true_child.append(-1)
        self.false_child.append(-1)
        self.missing_true.append(bool(missing_true))
        self.value.append(np.zeros(self.n_columns) if value is None else value)
        return len(self.test) - 1

    def link(self, node, true_child, false_child):
        self.true_child[node] = true_child
        self.false_child[node] = false_child

    def finish(self):
        return BinaryTree(
            test=np.asarray(self.test, dtype=np.int8),
            feature=np.asarray(self.feature, dtype=np.int64),
            threshold=np.asarray(self.threshold, dtype=np.float64),
            members=tuple(self.members),
            true_child=np.asarray(self.true_child, dtype=np.int64),
            false_child=np.asarray(self.false_child, dtype=np.int64),
            missing_true=np.asarray(self.missing_true, dtype=np.bool_),
            value=np.asarray(self.value, dtype=np.float64).reshape(-1, self.n_columns))


def binary_tree(tree, leaf_values, feature_map=None):
    """``tree`` (a CART :class:`~silva.engine.tree.Tree` or an ID3
    :class:`~silva.engine.multiway.MultiwayTree`) as a :class:`BinaryTree` whose leaves
    hold ``leaf_values[node]`` (``(tree.n_nodes, n_columns)``); ``feature_map[j]`` is the
    model column of the tree's feature ``j`` (trees grown on a feature subset)."""
    leaf_values = np.asarray(leaf_values, dtype=np.float64)
    columns = (np.arange(tree.n_features) if feature_map is None
               else np.asarray(feature_map, dtype=np.int64))
    nodes = _NodeList(leaf_values.shape[1])
    if isinstance(tree, MultiwayTree):
        _expand_multiway(tree, leaf_values, columns, nodes)
    else:
        _copy_cart(tree, leaf_values, columns, nodes)
    return nodes.finish()


def _copy_cart(tree, leaf_values, columns, nodes):
    left_of, right_of = tree.children_left, tree.children_right
    n_codes = tree.category_bitsets.shape[1] * 64
    # Depth-first with an explicit stack: a fully grown tree can be deeper than Python's
    # recursion limit. Each entry is (silva node, new parent, whether it is the true child).
    stack = [(0, -1, False)]
    while stack:
        node, parent, is_true = stack.pop()
        if left_of[node] == -1:
            new = nodes.add(value=leaf_values[node])
            true_next = false_next = None
        elif tree.is_categorical[node]:
            bits = np.unpackbits(tree.category_bitsets[node].view(np.uint8),
                                 bitorder="little")[:n_codes].astype(bool)
            if tree.missing_go_to_left[node]:  # test the right side's codes (finite)
                members, true_next, false_next = (np.flatnonzero(~bits), right_of[node],
                                                  left_of[node])
            else:
                members, true_next, false_next = (np.flatnonzero(bits), left_of[node],
                                                  right_of[node])
            if members.size == 0:  # no code passes: every sample takes the false side
                stack.append((false_next, parent, is_true))
                continue
            new = nodes.add(MEMBER, int(columns[tree.feature[node]]),
                            members=members.tolist())
        else:
            new = nodes.add(LESS_EQUAL, int(columns[tree.feature[node]]),
                            float(tree.threshold[node]),
                            missing_true=bool(tree.missing_go_to_left[node]))
            true_next, false_next = left_of[node], right_of[node]
        _attach(nodes, parent, is_true, new)
        if true_next is not None:
            stack.append((false_next, new, False))
            stack.append((true_next, new, True))


def _attach(nodes, parent, is_true, child):
    if parent < 0:
        return
    if is_true:
        nodes.true_child[parent] = child
    else:
        nodes.false_child[parent] = child


def _expand_multiway(tree, leaf_values, columns, nodes):
    if tree.blend_missing:
        raise NotImplementedError(
            "C45Classifier cannot be exported: at a node without a branch for missing "
            "values, C4.5 sends a sample with a missing value down every branch with "
            "fractional weights (Quinlan 1993, sec. 3.3), which no path of binary tests "
            "expresses. ID3Classifier and the CART-based estimators can be exported.")
    stack = [(0, -1, False)]
    while stack:
        node, parent, is_true = stack.pop()
        kind = tree.kind[node]
        if kind == multiway.LEAF:
            _attach(nodes, parent, is_true, nodes.add(value=leaf_values[node]))
            continue
        column = int(columns[tree.feature[node]])
        start, n_branches = tree.first_branch[node], tree.n_branches[node]
        children = tree.branch_child[start:start + n_branches]
        # A value that takes no branch is classified by this node's own distribution: a
        # new leaf for each place that needs one, so the result stays a tree (Treelite
        # refuses a node with two parents) and has no unreferenced node.
        def own(node=node):
            return nodes.add(value=leaf_values[node])

        # The chain's tests, in order: (test, threshold, subtree or None for `own`).
        if kind == multiway.THRESHOLD:
            links = [(LESS_EQUAL, float(tree.threshold[node]), children[0]),
                     (None, None, children[1])]
        elif kind == multiway.INTERVALS:
            # Branch b holds edges[b - 1] < x <= edges[b]; the last branch has no upper edge.
            edges = tree.bin_edges[tree.feature[node], :tree.n_bin_edges[tree.feature[node]]]
            links = [(LESS_EQUAL, float(edge), children[b]) for b, edge in enumerate(edges)]
            links.append((None, None, children[len(edges)]))
        else:
            links = [(EQUAL, float(b), child) for b, child in enumerate(children) if child >= 0]
            links.append((None, None, -1))
        # A NaN fails every test of the chain; a leading "x <= +inf" test sends it to
        # the missing branch (or to the node's own distribution) before the chain.
        missing_child = tree.missing_child[node]
        head = nodes.add(LESS_EQUAL, column, np.inf)
        _attach(nodes, parent, is_true, head)
        if missing_child >= 0:
            stack.append((missing_child, head, False))
        else:
            nodes.false_child[head] = own()
        previous, previous_is_true = head, True
        for test, threshold, child in links:
            if test is None:  # the chain's last "else"
                if child >= 0:
                    stack.append((child, previous, previous_is_true))
                else:
                    _attach(nodes, previous, previous_is_true, own())
                break
            link = nodes.add(test, column, threshold)
            _attach(nodes, previous, previous_is_true, link)
            if child >= 0:
                stack.append((child, link, True))
            else:
                nodes.true_child[link] = own()
            previous, previous_is_true = link, False


# ------------------------------------------------------------------ estimators
def _name(model):
    return type(model).__name__


def _require_fitted(model, attribute):
    if not hasattr(model, attribute):
        raise NotFittedError(f"This {_name(model)} instance is not fitted yet; call fit "
                             "before exporting it.")


def _tree_of(learner, owner):
    """The silva tree of a member estimator (a silva decision tree or ID3)."""
    tree = getattr(learner, "tree_", None)
    if not isinstance(tree, Tree | MultiwayTree):
        raise TypeError(f"{owner} can be exported only when its members are silva trees "
                        f"(DecisionTreeClassifier/Regressor, ID3Classifier); got a member "
                        f"of type {_name(learner)}.")
    return tree


def _classes(model):
    return np.asarray(model.classes_)


def _leaf_class_values(tree, member_classes, n_classes):
    """A member's leaf class fractions, placed in the ensemble's class columns."""
    values = np.zeros((tree.n_nodes, n_classes))
    values[:, np.asarray(member_classes).astype(np.intp)] = tree.value[:, 0, :]
    return values


def _single_tree(model):
    _require_fitted(model, "tree_")
    tree = model.tree_
    if getattr(model, "_estimator_type", None) == "classifier" or hasattr(model, "classes_"):
        trees = [AdditiveTree(binary_tree(tree, tree.value[:, 0, :]), 0)]
        return AdditiveModel(_name(model), model.n_features_in_, len(model.classes_), trees,
                             np.zeros(len(model.classes_)), "identity", _classes(model))
    trees = [AdditiveTree(binary_tree(tree, tree.value[:, 0, :1]), 0)]
    return AdditiveModel(_name(model), model.n_features_in_, 1, trees, np.zeros(1),
                         "identity", None)


def _packed_trees(packed, scale=1.0):
    """The trees of a :class:`~silva.engine.ensemble.PackedTrees`, each leaf's values
    times its tree weight and ``scale``, at its output column."""
    trees = []
    for t in range(packed.n_trees):
        view = packed.tree(t)
        values = view.value[:, 0, :] * (packed.tree_weight[t] * scale)
        trees.append(AdditiveTree(binary_tree(view, values), int(packed.output_column[t])))
    return trees


def _forest(model):
    _require_fitted(model, "_packed")
    packed = model._packed
    trees = _packed_trees(packed, 1.0 / packed.n_trees)
    if hasattr(model, "classes_"):
        return AdditiveModel(_name(model), model.n_features_in_, model.n_classes_, trees,
                             np.zeros(model.n_classes_), "identity", _classes(model))
    return AdditiveModel(_name(model), model.n_features_in_, 1, trees, np.zeros(1),
                         "identity", None)


def _bagging(model):
    _require_fitted(model, "estimators_")
    owner = _name(model)
    n_members = len(model.estimators_)
    trees = []
    classifier = hasattr(model, "classes_")
    n_outputs = model.n_classes_ if classifier else 1
    for member, features in zip(model.estimators_, model.estimators_features_, strict=True):
        tree = _tree_of(member, owner)
        if classifier:
            values = _leaf_class_values(tree, member.classes_, n_outputs)
            if model.voting == "hard":
                # The member's vote: its most probable class (the first of equals).
                votes = np.zeros_like(values)
                votes[np.arange(values.shape[0]), np.argmax(values, axis=1)] = 1.0
                values = votes
        else:
            values = tree.value[:, 0, :1]
        trees.append(AdditiveTree(binary_tree(tree, values / n_members, features), 0))
    return AdditiveModel(owner, model.n_features_in_, n_outputs, trees, np.zeros(n_outputs),
                         "identity", _classes(model) if classifier else None)


def _gradient_boosting(model):
    _require_fitted(model, "_packed")
    loss = model._loss
    name = getattr(loss, "name", None)
    scale = 1.0
    if hasattr(model, "classes_"):
        if name == "exponential":
            link, scale = "sigmoid", 2.0  # p = sigmoid(2 F) (losses.Exponential.link)
        elif loss.n_outputs == 1:
            link = "sigmoid"
        else:
            link = "softmax"
        if name not in ("log_loss", "exponential", "custom"):
            raise NotImplementedError(f"GradientBoostingClassifier with loss {name!r} has no "
                                      "known link to export.")
    elif name in ("squared_error", "absolute_error", "huber", "quantile", "custom"):
        link = "identity"
    elif name in ("poisson", "gamma", "tweedie"):
        link = "exp"
    else:
        raise NotImplementedError(f"GradientBoostingRegressor with loss {name!r} has no "
                                  "known link to export.")
    trees = _packed_trees(model._packed, scale)
    base = np.asarray(model.init_raw_, dtype=np.float64) * scale
    classes = _classes(model) if hasattr(model, "classes_") else None
    return AdditiveModel(_name(model), model.n_features_in_, int(loss.n_outputs), trees,
                         base, link, classes)


def _adaboost_classifier(model):
    _require_fitted(model, "estimators_")
    owner = _name(model)
    n_classes = model.n_classes_
    real = model._algorithm == "real"
    trees = []
    for learner, beta in zip(model.estimators_, model.estimator_weights_, strict=True):
        tree = _tree_of(learner, owner)
        proba = _leaf_class_values(tree, learner.classes_, n_classes)
        if real:
            # beta (K - 1)(log p - mean log p), p floored as AdaBoostClassifier does; the
            # softmax of predict_proba divides the scores by K - 1, folded in here.
            from silva.adaboost import PROBABILITY_FLOOR

            log_proba = np.log(np.maximum(proba, PROBABILITY_FLOOR))
            values = beta * (log_proba - log_proba.mean(axis=1, keepdims=True))
        else:
            # The learner's vote (its predict: the first most probable class) weighs beta.
            values = np.zeros_like(proba)
            values[np.arange(proba.shape[0]), np.argmax(proba, axis=1)] = beta
        trees.append(AdditiveTree(binary_tree(tree, values), 0))
    return AdditiveModel(owner, model.n_features_in_, n_classes, trees, np.zeros(n_classes),
                         "softmax", _classes(model))


def weighted_median_model(model):
    """An AdaBoostRegressor of silva regression trees as an :class:`AdditiveModel` with
    the link ``"weighted_median"``: learner ``m``'s tree writes output column ``m``, and
    ``member_weights`` are the learners' weights (AdaBoost.R2, Drucker 1997: the
    prediction is the smallest learner prediction whose cumulative weight, learners
    sorted by prediction, reaches half the total)."""
    _require_fitted(model, "estimators_")
    owner = _name(model)
    trees = [AdditiveTree(binary_tree(_tree_of(learner, owner),
                                      _tree_of(learner, owner).value[:, 0, :1]), m)
             for m, learner in enumerate(model.estimators_)]
    return AdditiveModel(owner, model.n_features_in_, len(trees), trees,
                         np.zeros(len(trees)), "weighted_median", None,
                         np.asarray(model.estimator_weights_, dtype=np.float64))


def _adaboost_regressor(model):
    raise NotImplementedError(
        "AdaBoostRegressor cannot be exported to Treelite: it predicts the weighted "
        "median of its learners' predictions (AdaBoost.R2, Drucker 1997), while Treelite's "
        "trees only add (or average) their leaf values. silva.to_onnx exports it (the "
        "median is computed by standard ONNX operators after the trees).")


def additive_model(model):
    """``model`` as an :class:`AdditiveModel`.

    Supported: DecisionTreeClassifier/Regressor, ID3Classifier, RandomForest* and
    ExtraTrees*, Bagging* of silva trees, GradientBoostingClassifier/Regressor (every
    built-in loss and custom objectives) and AdaBoostClassifier of silva trees. Raises
    NotFittedError for an unfitted model, NotImplementedError for C45Classifier (see the
    module docstring) and AdaBoostRegressor (a weighted median, not a sum: see
    :func:`weighted_median_model`), and
    TypeError for anything else.
    """
    from silva._multi_output import refuse

    refuse(model, "Exporting to ONNX or Treelite")
    from silva.adaboost import AdaBoostClassifier, AdaBoostRegressor
    from silva.bagging import BaseBagging
    from silva.boosting import BaseGradientBoosting
    from silva.classic import C45Classifier, ID3Classifier
    from silva.decision_tree import BaseDecisionTree
    from silva.forest import BaseForest

    if isinstance(model, BaseDecisionTree | ID3Classifier | C45Classifier):
        return _single_tree(model)
    if isinstance(model, BaseForest):
        return _forest(model)
    if isinstance(model, BaseBagging):
        return _bagging(model)
    if isinstance(model, BaseGradientBoosting):
        return _gradient_boosting(model)
    if isinstance(model, AdaBoostClassifier):
        return _adaboost_classifier(model)
    if isinstance(model, AdaBoostRegressor):
        _require_fitted(model, "estimators_")
        return _adaboost_regressor(model)
    raise TypeError(
        f"{_name(model)} cannot be exported: export supports silva's tree models "
        "(decision trees, ID3, forests, extra trees, bagging of silva trees, gradient "
        "boosting, AdaBoostClassifier); voting and stacking ensembles combine arbitrary "
        "models and are not supported.")
