"""Text and Graphviz exports of fitted decision trees.

Both exporters take a fitted estimator (its ``tree_``) or a tree itself, and read it
through the tree interface (:class:`silva.engine.tree_interface.TreeInterface`), so CART
trees, the trees inside ensembles and ID3/C4.5's multiway trees print alike: one line
(text) or one edge (Graphviz) per branch. An estimator adds its feature names, classes,
criterion and whether it saw missing values during ``fit`` (``_has_missing_at_fit``).
"""

from __future__ import annotations

import colorsys
import numbers
import os

import numpy as np
from sklearn.exceptions import NotFittedError

from silva._multi_output import refuse
from silva.engine.multiway import MultiwayTree
from silva.engine.tree import Tree
from silva.engine.tree_interface import MISSING_BRANCH, branch_test

__all__ = ["export_text", "export_graphviz"]


# --------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------


def _tree_and_model(source):
    """``(tree, estimator)`` of what was passed: a tree (no estimator) or an estimator."""
    refuse(source, "export_text and export_graphviz")
    if isinstance(source, Tree | MultiwayTree):
        return source, None
    tree = getattr(source, "tree_", None)
    if tree is None:
        raise NotFittedError(
            f"This {type(source).__name__} instance is not fitted yet. Call 'fit' with "
            "appropriate arguments before exporting the tree."
        )
    if not isinstance(tree, Tree | MultiwayTree):
        raise TypeError(f"{type(source).__name__}.tree_ is a {type(tree).__name__}, not a "
                        "silva tree.")
    return tree, source


class _TreeView:
    """A tree with its names resolved: features, classes, and whether to mark where
    missing values go."""

    def __init__(self, source, feature_names, class_names, show_missing):
        tree, model = _tree_and_model(source)
        self.model = model
        self.tree = tree
        # (n_nodes, 1, n_values): silva's trees have one output.
        self.value = np.asarray(tree.value, dtype=np.float64)
        self.weighted = np.asarray(tree.weighted_n_node_samples, dtype=np.float64)
        self.samples = np.asarray(tree.n_node_samples)
        self.impurity = np.asarray(tree.impurity)
        if show_missing is None:
            show_missing = bool(getattr(model, "_has_missing_at_fit", False))
        # A multiway tree names its missing-value branch itself.
        self.show_missing = bool(show_missing) and not tree.multiway
        if model is not None:
            self.is_classifier = tree.multiway or hasattr(model, "classes_")
        else:
            self.is_classifier = tree.multiway or class_names is not None
        self.feature_names = self._resolve_feature_names(feature_names)
        self.class_names = self._resolve_class_names(class_names) if self.is_classifier else None

    # -- names -------------------------------------------------------------------------

    def _resolve_feature_names(self, feature_names):
        n_features = int(getattr(self.model, "n_features_in_", self.tree.n_features))
        if feature_names is None:
            names = getattr(self.model, "feature_names_in_", None)
            if names is None:
                return [f"feature_{i}" for i in range(n_features)]
            return [str(name) for name in names]
        if isinstance(feature_names, str):
            raise ValueError("feature_names must be a sequence of strings, not a single string.")
        names = [str(name) for name in feature_names]
        if len(names) != n_features:
            raise ValueError(f"feature_names must contain {n_features} elements, got {len(names)}.")
        return names

    def _resolve_class_names(self, class_names):
        classes = getattr(self.model, "classes_", None)
        if classes is None:  # a bare tree: classes are its value columns
            classes = np.arange(self.value.shape[2])
        if class_names is None:
            return [str(c) for c in classes]
        if isinstance(class_names, str):
            raise ValueError("class_names must be a sequence of strings, not a single string.")
        names = [str(name) for name in class_names]
        if len(names) != len(classes):
            raise ValueError(f"class_names must contain {len(classes)} elements, got {len(names)}.")
        return names

    # -- structure ---------------------------------------------------------------------

    def feature_name(self, split):
        return self.feature_names[split.feature]

    def marks_missing(self, split, branch):
        """Whether ``branch`` should say that missing values take it too."""
        return (self.show_missing and branch != MISSING_BRANCH
                and branch == split.missing_branch)

    def levels(self):
        """Number of node levels in the subtree under each node (a leaf counts 1)."""
        tree = self.tree
        levels = np.ones(tree.n_nodes, dtype=np.int64)
        for node in range(tree.n_nodes - 1, -1, -1):  # children have larger ids
            for child in tree.children(node):
                levels[node] = max(levels[node], levels[child] + 1)
        return levels

    def class_label(self, node):
        return self.class_names[int(np.argmax(self.value[node, 0]))]


def _edge_label(split, branch, precision):
    """Edge text of one branch of a multiway node: ``= sunny``, ``<= 75``, ``(1, 2.5]``."""
    if branch == MISSING_BRANCH:
        return "missing"
    if split.kind == "threshold":
        return ("<= " if branch == 0 else "> ") + _fmt(split.threshold, precision)
    if split.kind == "intervals":
        edges = split.bin_edges
        low = "-inf" if branch == 0 else _fmt(edges[branch - 1], precision)
        high = "inf" if branch >= len(edges) else _fmt(edges[branch], precision)
        return f"({low}, {high}]"
    return branch_test(split, branch)


def _check_int(name, value, minimum, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")


# --------------------------------------------------------------------------------------
# export_text
# --------------------------------------------------------------------------------------


def export_text(
    model,
    *,
    feature_names=None,
    class_names=None,
    max_depth=10,
    spacing=3,
    decimals=2,
    show_weights=False,
    show_missing=None,
):
    """Build a plain-text report of the rules of a fitted decision tree.

    Each line is one branch: the first line is the left branch of the root split, and
    children are indented under their branch. Leaves show the predicted class
    (classifiers) or the predicted value (regressors).

    Parameters
    ----------
    model : fitted decision tree estimator, or a tree
        A classifier or regressor with a fitted ``tree_`` attribute, or a silva tree
        itself (one member of an ensemble, say).
    feature_names : sequence of str, default=None
        One name per input feature. Defaults to ``model.feature_names_in_`` when the model
        was fitted on a DataFrame, else ``feature_0``, ``feature_1``, ...
    class_names : sequence of str, default=None
        Names of the classes in the order of ``model.classes_`` (classifiers only).
        Defaults to ``model.classes_``. For a tree, giving them prints leaves as classes
        (ID3 and C4.5 trees always do); without them a tree's leaves print their values.
    max_depth : int, default=10
        Deepest level of splits that is printed; the root is at depth 0. Deeper
        sub-trees are replaced by ``truncated branch of depth N`` where ``N`` counts the
        levels of nodes that were hidden.
    spacing : int, default=3
        Width of each indentation step.
    decimals : int, default=2
        Number of decimals for thresholds, values and weights.
    show_weights : bool, default=False
        For classifiers, also print the weighted number of samples of each class at
        every leaf.
    show_missing : bool, default=None
        Mark the branch that missing values take. None: when the estimator saw missing
        values during ``fit`` (never for a bare tree).

    Returns
    -------
    report : str
        The text of the tree, one line per branch, ending with a newline.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the model has not been fitted.
    ValueError
        If ``feature_names`` or ``class_names`` has the wrong length, or an integer
        option is out of range.

    Notes
    -----
    Category-set splits print as ``name in {0, 2}`` / ``name not in {0, 2}`` with the
    category codes that go left. When the model saw missing values during ``fit``, the
    branch that receives them is suffixed with ``(or missing)``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from silva import DecisionTreeClassifier, export_text
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    >>> print(export_text(clf, feature_names=["sl", "sw", "pl", "pw"]))  # doctest: +SKIP
    |--- pl <= 2.45
    |   |--- class: 0
    |--- pl >  2.45
    |   |--- pw <= 1.75
    |   |   |--- class: 1
    |   |--- pw >  1.75
    |   |   |--- class: 2
    """
    view = _TreeView(model, feature_names, class_names, show_missing)
    tree = view.tree
    _check_int("max_depth", max_depth, 0)
    _check_int("spacing", spacing, 1)
    _check_int("decimals", decimals, 0)

    branch_mark = "|" + "-" * spacing + " "
    indent = "|" + " " * spacing
    levels = view.levels()

    def number(x):
        return f"{x:.{decimals}f}"

    def condition(split, branch):
        text = f"{view.feature_name(split)} {branch_test(split, branch, decimals)}"
        return text + " (or missing)" if view.marks_missing(split, branch) else text

    def leaf_text(node):
        values = view.value[node, 0]
        if not view.is_classifier:
            return "value: [" + ", ".join(number(v) for v in values) + "]"
        text = f"class: {view.class_label(node)}"
        if show_weights:
            weights = values * view.weighted[node]
            text = "weights: [" + ", ".join(number(w) for w in weights) + "] " + text
        return text

    if tree.is_leaf(0):
        return branch_mark + leaf_text(0) + "\n"

    lines = []
    # Explicit stack (deep trees would overflow Python's recursion limit). Items are
    # either ("line", depth, text) or ("node", depth, node) for a child to expand.
    stack = [("node", 0, 0)]
    while stack:
        kind, depth, item = stack.pop()
        if kind == "line":
            lines.append(indent * depth + branch_mark + item)
            continue
        node = item
        split = tree.split(node)
        children = []
        for branch, child in zip(split.branches, tree.children(node), strict=True):
            children.append(("line", depth, condition(split, branch)))
            if tree.is_leaf(child):
                children.append(("line", depth + 1, leaf_text(child)))
            elif depth + 1 > max_depth:
                children.append(("line", depth + 1, f"truncated branch of depth {levels[child]}"))
            else:
                children.append(("node", depth + 1, child))
        stack.extend(reversed(children))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# export_graphviz
# --------------------------------------------------------------------------------------


def _palette(n_colors):
    """``n_colors`` well separated, saturated RGB colours (0-255 ints)."""
    colors = []
    for i in range(max(n_colors, 1)):
        hue = (0.07 + i / max(n_colors, 1)) % 1.0
        r, g, b = colorsys.hsv_to_rgb(hue, 0.72, 0.92)
        colors.append((round(r * 255), round(g * 255), round(b * 255)))
    return colors


def _tint(rgb, strength):
    """Blend ``rgb`` with white; ``strength`` 0 gives white and 1 the full colour."""
    strength = float(np.clip(strength, 0.0, 1.0))
    mixed = [round(255 - (255 - c) * strength) for c in rgb]
    return "#{:02x}{:02x}{:02x}".format(*mixed)


def _escape(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _fmt(x, precision):
    """Round to ``precision`` decimals and drop trailing zeros (e.g. 0.5, 12, 0.333)."""
    x = round(float(x), precision)
    if abs(x) < 1e15 and x == int(x):  # in that order: int() of inf raises
        return str(int(x))
    return f"{x:.{precision}f}".rstrip("0").rstrip(".")


def export_graphviz(
    model,
    out_file=None,
    *,
    feature_names=None,
    class_names=None,
    max_depth=None,
    filled=False,
    impurity=True,
    node_ids=False,
    proportion=False,
    rounded=False,
    precision=3,
    show_missing=None,
):
    """Describe a fitted decision tree in the Graphviz DOT language.

    Every tree node becomes one DOT node whose id is the node's index in ``tree_``; edges
    go from a split to its children, left child first. Render the result with
    ``dot -Tpng tree.dot -o tree.png`` or the ``graphviz`` Python package.

    Parameters
    ----------
    model : fitted decision tree estimator, or a tree
        A classifier or regressor with a fitted ``tree_`` attribute, or a silva tree
        itself (see :func:`export_text` for how a tree's leaves are named).
    out_file : str, path-like or file object, default=None
        Where to write the DOT source. When None, the source is returned as a string.
    feature_names : sequence of str, default=None
        One name per input feature. Defaults to ``model.feature_names_in_`` when present,
        else ``feature_0``, ``feature_1``, ...
    class_names : sequence of str, default=None
        Names of the classes in the order of ``model.classes_`` (classifiers only).
        Defaults to ``model.classes_``.
    max_depth : int, default=None
        Deepest level that is drawn (the root is depth 0). Deeper nodes are collapsed
        into a grey ``(...)`` node. None draws the whole tree.
    filled : bool, default=False
        Fill nodes with colour: the majority class for classifiers (stronger when the
        node is purer), the size of the prediction for regressors.
    impurity : bool, default=True
        Show the impurity of each node, labelled with the model's criterion.
    node_ids : bool, default=False
        Show the index of each node.
    proportion : bool, default=False
        Show samples as a percentage of the training set and values as fractions
        instead of counts.
    rounded : bool, default=False
        Draw nodes as rounded boxes with a Helvetica font.
    precision : int, default=3
        Number of decimals for thresholds, impurities and values.
    show_missing : bool, default=None
        Say where missing values go at each split. None: when the estimator saw missing
        values during ``fit`` (never for a bare tree).

    Returns
    -------
    dot_data : str or None
        The DOT source when ``out_file`` is None, else None.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the model has not been fitted.
    ValueError
        If ``feature_names`` or ``class_names`` has the wrong length, or an integer
        option is out of range.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from silva import DecisionTreeClassifier, export_graphviz
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    >>> dot = export_graphviz(clf, filled=True, rounded=True)
    >>> dot.startswith("digraph Tree {")
    True
    """
    view = _TreeView(model, feature_names, class_names, show_missing)
    tree = view.tree
    multiway = tree.multiway
    _check_int("max_depth", max_depth, 0, allow_none=True)
    _check_int("precision", precision, 0)

    # Multiway trees (ID3, C4.5) always score nodes by entropy in bits.
    criterion = "entropy" if multiway else str(getattr(model, "criterion", "impurity"))
    total_weight = view.weighted[0] if view.weighted[0] > 0 else 1.0

    # Colour setup.
    if view.is_classifier:
        n_classes = view.value.shape[2]
        colors = _palette(n_classes)
    else:
        colors = _palette(1)
        preds = view.value[:, 0, 0]
        lo, hi = float(np.min(preds)), float(np.max(preds))

    def fill(node):
        if view.is_classifier:
            dist = view.value[node, 0]
            total = dist.sum()
            dist = dist / total if total > 0 else dist
            k = dist.shape[0]
            best = int(np.argmax(dist))
            if k < 2:
                return _tint(colors[best], 1.0)
            # 0 at the uniform distribution, 1 for a pure node.
            strength = (dist[best] - 1.0 / k) / (1.0 - 1.0 / k)
            return _tint(colors[best], strength)
        strength = 1.0 if hi == lo else (view.value[node, 0, 0] - lo) / (hi - lo)
        return _tint(colors[0], strength)

    def value_text(node):
        values = view.value[node, 0]
        if view.is_classifier and not proportion:
            values = values * view.weighted[node]
        texts = [_fmt(v, precision) for v in values]
        if not view.is_classifier and len(texts) == 1:
            return texts[0]
        return "[" + ", ".join(texts) + "]"

    def label(node):
        parts = []
        if node_ids:
            parts.append(f"node #{node}")
        if not tree.is_leaf(node):
            split = tree.split(node)
            name = view.feature_name(split)
            if multiway:  # the tests are on the edges
                parts.append(f"{name}?")
            elif split.kind == "categories":
                parts.append(f"{name} {branch_test(split, 0)}")
            else:
                parts.append(f"{name} <= {_fmt(split.threshold, precision)}")
            if view.show_missing:
                parts.append(f"missing -> {'left' if split.missing_branch == 0 else 'right'}")
        if impurity:
            parts.append(f"{criterion} = {_fmt(view.impurity[node], precision)}")
        if proportion:
            share = 100.0 * view.weighted[node] / total_weight
            parts.append(f"samples = {_fmt(share, 1)}%")
        else:
            parts.append(f"samples = {int(view.samples[node])}")
        parts.append(f"value = {value_text(node)}")
        if view.is_classifier:
            parts.append(f"class = {view.class_label(node)}")
        return "\\n".join(_escape(p) for p in parts)

    style = ["filled"] if filled else []
    if rounded:
        style.append("rounded")
    node_attrs = ["shape=box"]
    if style:
        node_attrs.append('style="' + ", ".join(style) + '"')
    node_attrs.append('color="black"')
    if rounded:
        node_attrs.append('fontname="helvetica"')

    out = ["digraph Tree {", "node [" + ", ".join(node_attrs) + "] ;"]
    if rounded:
        out.append('edge [fontname="helvetica"] ;')

    stack = [(0, 0, None)]  # (node, depth, parent)
    while stack:
        node, depth, parent = stack.pop()
        if max_depth is not None and depth > max_depth:
            attrs = 'label="(...)"'
            if filled:
                attrs += ', fillcolor="#c0c0c0"'
            out.append(f"{node} [{attrs}] ;")
        else:
            attrs = f'label="{label(node)}"'
            if filled:
                attrs += f', fillcolor="{fill(node)}"'
            out.append(f"{node} [{attrs}] ;")
            if not tree.is_leaf(node):
                split = tree.split(node)
                for branch, child in reversed(list(zip(split.branches, tree.children(node),
                                                       strict=True))):
                    stack.append((child, depth + 1, (node, split, branch)))
        if multiway and parent is not None:
            # Edges carry the branch's test, e.g. "= sunny", "<= 75" or "missing".
            parent, split, branch = parent
            edge_label = _edge_label(split, branch, precision)
            out.append(f'{parent} -> {node} [label="{_escape(edge_label)}"] ;')
        elif parent is not None:
            parent, split, branch = parent
            edge = f"{parent} -> {node}"
            if parent == 0:
                is_left = branch == 0
                angle = 45 if is_left else -45
                head = "True" if is_left else "False"
                edge += f' [labeldistance=2.5, labelangle={angle}, headlabel="{head}"]'
            out.append(edge + " ;")
    out.append("}")
    dot = "\n".join(out) + "\n"

    if out_file is None:
        return dot
    if isinstance(out_file, str | os.PathLike):
        with open(out_file, "w", encoding="utf-8") as fh:
            fh.write(dot)
    elif hasattr(out_file, "write"):
        out_file.write(dot)
    else:
        raise TypeError(
            "out_file must be None, a path or a file object with a write method, "
            f"got {type(out_file).__name__}."
        )
    return None
