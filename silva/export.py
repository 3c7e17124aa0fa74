"""Text and Graphviz exports of fitted decision trees.

Both exporters read only the fitted ``tree_`` structure of an estimator (node arrays laid
out like scikit-learn's ``tree_``), plus silva's optional extras: ``tree_.is_categorical``
and ``tree_.categories_left(node)`` for category-set splits, and the estimator attribute
``_has_missing_at_fit`` that says whether missing values were seen during ``fit``.

Multiway trees (:class:`silva.engine.multiway.MultiwayTree`, grown by ID3 and C4.5) are
recognised by their ``n_branches`` array and exported with one line (text) or one edge
(Graphviz) per branch.
"""

from __future__ import annotations

import colorsys
import numbers
import os

import numpy as np
from sklearn.exceptions import NotFittedError

__all__ = ["export_text", "export_graphviz"]

_LEAF = -1


# --------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------


class _TreeView:
    """Read-only view over a fitted estimator's tree, with resolved names."""

    def __init__(self, model, feature_names, class_names):
        tree = getattr(model, "tree_", None)
        if tree is None:
            raise NotFittedError(
                f"This {type(model).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before exporting the tree."
            )
        self.model = model
        self.tree = tree
        self.node_count = int(tree.node_count)
        self.left = np.asarray(tree.children_left)
        self.right = np.asarray(tree.children_right)
        self.feature = np.asarray(tree.feature)
        self.threshold = np.asarray(tree.threshold, dtype=np.float64)
        self.value = np.asarray(tree.value, dtype=np.float64)
        if self.value.ndim == 2:  # tolerate (node_count, K) layouts
            self.value = self.value[:, np.newaxis, :]
        self.n_outputs = self.value.shape[1]
        self.weighted = np.asarray(
            getattr(tree, "weighted_n_node_samples", tree.n_node_samples), dtype=np.float64
        )
        self.samples = np.asarray(tree.n_node_samples)
        self.impurity = getattr(tree, "impurity", None)

        is_cat = getattr(tree, "is_categorical", None)
        self.is_categorical = None if is_cat is None else np.asarray(is_cat, dtype=bool)
        has_missing = bool(getattr(model, "_has_missing_at_fit", False))
        mgl = getattr(tree, "missing_go_to_left", None)
        self.missing_left = (
            np.asarray(mgl, dtype=bool) if (has_missing and mgl is not None) else None
        )

        self.is_classifier = hasattr(model, "classes_")
        self.feature_names = self._resolve_feature_names(feature_names)
        self.class_names = self._resolve_class_names(class_names) if self.is_classifier else None

    # -- names -------------------------------------------------------------------------

    def _n_features(self):
        n = getattr(self.model, "n_features_in_", None)
        if n is not None:
            return int(n)
        used = self.feature[self.left != _LEAF]
        return int(used.max()) + 1 if used.size else 0

    def _resolve_feature_names(self, feature_names):
        n_features = self._n_features()
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
        classes = self.model.classes_
        # Multi-output classifiers keep one array of classes per output.
        per_output = classes if self.n_outputs > 1 else [classes]
        if class_names is None:
            return [[str(c) for c in cls] for cls in per_output]
        if isinstance(class_names, str):
            raise ValueError("class_names must be a sequence of strings, not a single string.")
        if self.n_outputs > 1:
            raise ValueError("class_names is only supported for single-output classifiers.")
        names = [str(name) for name in class_names]
        n_classes = len(per_output[0])
        if len(names) != n_classes:
            raise ValueError(f"class_names must contain {n_classes} elements, got {len(names)}.")
        return [names]

    # -- structure ---------------------------------------------------------------------

    def is_leaf(self, node):
        return self.left[node] == _LEAF

    def node_is_categorical(self, node):
        return self.is_categorical is not None and bool(self.is_categorical[node])

    def categories_left(self, node):
        codes = np.asarray(self.tree.categories_left(node)).ravel()
        return "{" + ", ".join(str(int(c)) for c in np.sort(codes)) + "}"

    def missing_side(self, node):
        """'left' / 'right' where NaN goes at ``node``, or None when not applicable."""
        if self.missing_left is None:
            return None
        return "left" if self.missing_left[node] else "right"

    def levels(self):
        """Number of node levels in the subtree under each node (a leaf counts 1)."""
        order = []
        stack = [0]
        while stack:
            node = stack.pop()
            order.append(node)
            if not self.is_leaf(node):
                stack.append(int(self.left[node]))
                stack.append(int(self.right[node]))
        levels = np.ones(self.node_count, dtype=np.int64)
        for node in reversed(order):
            if not self.is_leaf(node):
                levels[node] = 1 + max(levels[self.left[node]], levels[self.right[node]])
        return levels

    def class_label(self, node, output=0):
        return self.class_names[output][int(np.argmax(self.value[node, output]))]


def _is_multiway(model):
    tree = getattr(model, "tree_", None)
    return tree is not None and hasattr(tree, "n_branches") and hasattr(tree, "kind")


class _MultiwayView(_TreeView):
    """Names and node values of a fitted multiway tree (ID3, C4.5)."""

    def __init__(self, model, feature_names, class_names):
        tree = model.tree_
        self.model = model
        self.tree = tree
        self.node_count = int(tree.node_count)
        self.feature = np.asarray(tree.feature)
        self.value = np.asarray(tree.value, dtype=np.float64)
        self.n_outputs = 1
        self.weighted = np.asarray(tree.weighted_n_node_samples, dtype=np.float64)
        self.samples = np.asarray(tree.n_node_samples)
        self.impurity = np.asarray(tree.impurity)
        self.is_classifier = True
        self.left = np.where(np.asarray(tree.kind) < 0, _LEAF, 0)
        self.feature_names = self._resolve_feature_names(feature_names)
        self.class_names = self._resolve_class_names(class_names)

    def is_leaf(self, node):
        return bool(self.tree.is_leaf(node))

    def children(self, node):
        return self.tree.children(node)

    def condition(self, node, branch, decimals):
        name = self.feature_names[self.feature[node]]
        return self.tree.branch_condition(node, branch, name, decimals)

    def levels(self):
        levels = np.ones(self.node_count, dtype=np.int64)
        for node in range(self.node_count - 1, -1, -1):  # children have larger ids
            for _, child in self.children(node):
                levels[node] = max(levels[node], levels[child] + 1)
        return levels


def _multiway_edge_label(tree, node, branch, precision):
    """Edge text of one branch of a multiway node: ``= sunny``, ``<= 75``, ``(1, 2.5]``."""
    from silva.engine.multiway import INTERVALS, THRESHOLD

    if branch < 0:
        return "missing"
    kind = tree.kind[node]
    if kind == THRESHOLD:
        return ("<= " if branch == 0 else "> ") + _fmt(tree.threshold[node], precision)
    feature = tree.feature[node]
    if kind == INTERVALS:
        edges = tree.bin_edges[feature, :tree.n_bin_edges[feature]]
        low = "-inf" if branch == 0 else _fmt(edges[branch - 1], precision)
        high = "inf" if branch >= edges.shape[0] else _fmt(edges[branch], precision)
        return f"({low}, {high}]"
    return "= " + tree.value_text(feature, branch)


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
):
    """Build a plain-text report of the rules of a fitted decision tree.

    Each line is one branch: the first line is the left branch of the root split, and
    children are indented under their branch. Leaves show the predicted class
    (classifiers) or the predicted value (regressors).

    Parameters
    ----------
    model : fitted decision tree estimator
        A classifier or regressor with a fitted ``tree_`` attribute.
    feature_names : sequence of str, default=None
        One name per input feature. Defaults to ``model.feature_names_in_`` when the model
        was fitted on a DataFrame, else ``feature_0``, ``feature_1``, ...
    class_names : sequence of str, default=None
        Names of the classes in the order of ``model.classes_`` (classifiers only).
        Defaults to ``model.classes_``.
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
    if _is_multiway(model):
        return _export_text_multiway(model, feature_names, class_names, max_depth, spacing,
                                     decimals, show_weights)
    view = _TreeView(model, feature_names, class_names)
    _check_int("max_depth", max_depth, 0)
    _check_int("spacing", spacing, 1)
    _check_int("decimals", decimals, 0)

    branch = "|" + "-" * spacing + " "
    indent = "|" + " " * spacing
    levels = view.levels()

    def number(x):
        return f"{x:.{decimals}f}"

    def split_texts(node):
        name = view.feature_names[view.feature[node]]
        if view.node_is_categorical(node):
            cats = view.categories_left(node)
            left, right = f"{name} in {cats}", f"{name} not in {cats}"
        else:
            thr = number(view.threshold[node])
            left, right = f"{name} <= {thr}", f"{name} >  {thr}"
        side = view.missing_side(node)
        if side == "left":
            left += " (or missing)"
        elif side == "right":
            right += " (or missing)"
        return left, right

    def leaf_text(node):
        if not view.is_classifier:
            vals = view.value[node, :, 0]
            return "value: [" + ", ".join(number(v) for v in vals) + "]"
        if view.n_outputs == 1:
            text = f"class: {view.class_label(node)}"
        else:
            labels = [view.class_label(node, o) for o in range(view.n_outputs)]
            text = "class: [" + ", ".join(labels) + "]"
        if show_weights:
            weights = view.value[node] * view.weighted[node]
            if view.n_outputs == 1:
                shown = "[" + ", ".join(number(w) for w in weights[0]) + "]"
            else:
                shown = (
                    "["
                    + ", ".join("[" + ", ".join(number(w) for w in row) + "]" for row in weights)
                    + "]"
                )
            text = f"weights: {shown} {text}"
        return text

    lines = []

    def emit(depth, text):
        lines.append(indent * depth + branch + text)

    if view.is_leaf(0):
        emit(0, leaf_text(0))
        return "\n".join(lines) + "\n"

    # Explicit stack (deep trees would overflow Python's recursion limit). Items are
    # either ("line", depth, text) or ("node", depth, node) for a child to expand.
    stack = [("node", 0, 0)]
    while stack:
        kind, depth, item = stack.pop()
        if kind == "line":
            emit(depth, item)
            continue
        node = item
        left_text, right_text = split_texts(node)
        children = []
        for child, text in ((view.left[node], left_text), (view.right[node], right_text)):
            children.append(("line", depth, text))
            child = int(child)
            if view.is_leaf(child):
                children.append(("line", depth + 1, leaf_text(child)))
            elif depth + 1 > max_depth:
                children.append(("line", depth + 1, f"truncated branch of depth {levels[child]}"))
            else:
                children.append(("node", depth + 1, child))
        stack.extend(reversed(children))
    return "\n".join(lines) + "\n"


def _export_text_multiway(model, feature_names, class_names, max_depth, spacing, decimals,
                          show_weights):
    """export_text for multiway trees: one line per branch, e.g. ``outlook = sunny``."""
    view = _MultiwayView(model, feature_names, class_names)
    _check_int("max_depth", max_depth, 0)
    _check_int("spacing", spacing, 1)
    _check_int("decimals", decimals, 0)
    branch_mark = "|" + "-" * spacing + " "
    indent = "|" + " " * spacing
    levels = view.levels()

    def leaf_text(node):
        text = f"class: {view.class_label(node)}"
        if show_weights:
            weights = view.value[node, 0] * view.weighted[node]
            text = "weights: [" + ", ".join(f"{w:.{decimals}f}" for w in weights) + "] " + text
        return text

    lines = []
    if view.is_leaf(0):
        return branch_mark + leaf_text(0) + "\n"
    # Explicit stack of branches (deep trees would overflow Python's recursion limit);
    # a node's branches are pushed in reverse so that the first branch prints first.
    stack = [(0, 0, branch, child) for branch, child in reversed(view.children(0))]
    while stack:
        depth, parent, branch, child = stack.pop()
        lines.append(indent * depth + branch_mark + view.condition(parent, branch, decimals))
        if view.is_leaf(child):
            lines.append(indent * (depth + 1) + branch_mark + leaf_text(child))
        elif depth + 1 > max_depth:
            lines.append(indent * (depth + 1) + branch_mark
                         + f"truncated branch of depth {levels[child]}")
        else:
            stack.extend((depth + 1, child, b, c) for b, c in reversed(view.children(child)))
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
    if x == int(x) and abs(x) < 1e15:
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
):
    """Describe a fitted decision tree in the Graphviz DOT language.

    Every tree node becomes one DOT node whose id is the node's index in ``tree_``; edges
    go from a split to its children, left child first. Render the result with
    ``dot -Tpng tree.dot -o tree.png`` or the ``graphviz`` Python package.

    Parameters
    ----------
    model : fitted decision tree estimator
        A classifier or regressor with a fitted ``tree_`` attribute.
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
    multiway = _is_multiway(model)
    if multiway:
        view = _MultiwayView(model, feature_names, class_names)
    else:
        view = _TreeView(model, feature_names, class_names)
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
        vals = view.value[node]
        if view.is_classifier and not proportion:
            vals = vals * view.weighted[node]
        rows = [[_fmt(v, precision) for v in row] for row in vals]
        if not view.is_classifier:
            flat = [row[0] for row in rows]
            return flat[0] if len(flat) == 1 else "[" + ", ".join(flat) + "]"
        if len(rows) == 1:
            return "[" + ", ".join(rows[0]) + "]"
        return "[" + ", ".join("[" + ", ".join(r) + "]" for r in rows) + "]"

    def label(node):
        parts = []
        if node_ids:
            parts.append(f"node #{node}")
        if multiway and not view.is_leaf(node):
            parts.append(f"{view.feature_names[view.feature[node]]}?")
        elif not view.is_leaf(node):
            name = view.feature_names[view.feature[node]]
            if view.node_is_categorical(node):
                parts.append(f"{name} in {view.categories_left(node)}")
            else:
                parts.append(f"{name} <= {_fmt(view.threshold[node], precision)}")
            side = view.missing_side(node)
            if side is not None:
                parts.append(f"missing -> {side}")
        if impurity and view.impurity is not None:
            parts.append(f"{criterion} = {_fmt(view.impurity[node], precision)}")
        if proportion:
            share = 100.0 * view.weighted[node] / total_weight
            parts.append(f"samples = {_fmt(share, 1)}%")
        else:
            parts.append(f"samples = {int(view.samples[node])}")
        parts.append(f"value = {value_text(node)}")
        if view.is_classifier:
            if view.n_outputs == 1:
                parts.append(f"class = {view.class_label(node)}")
            else:
                labels = [view.class_label(node, o) for o in range(view.n_outputs)]
                parts.append("class = [" + ", ".join(labels) + "]")
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
            if multiway:
                for branch, child in reversed(view.children(node)):
                    stack.append((child, depth + 1, (node, branch)))
            elif not view.is_leaf(node):
                stack.append((int(view.right[node]), depth + 1, node))
                stack.append((int(view.left[node]), depth + 1, node))
        if multiway and parent is not None:
            # Edges carry the branch's test, e.g. "= sunny", "<= 75" or "missing".
            parent, branch = parent
            edge_label = _multiway_edge_label(view.tree, parent, branch, precision)
            out.append(f'{parent} -> {node} [label="{_escape(edge_label)}"] ;')
        elif parent is not None:
            edge = f"{parent} -> {node}"
            if parent == 0:
                is_left = node == int(view.left[0])
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
