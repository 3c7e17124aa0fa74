"""Plots of fitted silva models (matplotlib is optional: ``pip install silva[plot]``).

- :func:`tree`: one tree drawn as boxes and edges;
- :func:`decision_boundary`: the prediction regions of a model on two features with the
  samples on top (the figures of the lectures);
- :func:`importance`: feature importances as a bar chart;
- :func:`learning_curve`: score against the number of trees (boosting's per-iteration
  metrics, a forest's out-of-bag error, AdaBoost's training error beside its bound);
- :func:`margins`: the cumulative distribution of voting margins (Schapire, Freund,
  Bartlett & Lee 1998, "Boosting the margin", figure 1).

Every function takes an optional matplotlib ``ax`` (a new figure is made when it is None)
and returns the Axes it drew on. The model-specific attributes are duck-typed, so any
estimator that exposes them is plotted, whichever module defines it.
"""

from __future__ import annotations

import colorsys
import numbers

import numpy as np

from silva.engine.tree_interface import branch_test

__all__ = ["decision_boundary", "importance", "learning_curve", "margins", "tree"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("silva.plot needs matplotlib, which is not installed: "
                          "pip install silva[plot]") from None
    return plt


def _axes(ax):
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots()
    return ax


def _class_colors(n):
    """``n`` well separated RGB colours in [0, 1]."""
    return [colorsys.hsv_to_rgb((0.07 + i / max(n, 1)) % 1.0, 0.65, 0.9) for i in range(n)]


def _tint(rgb, strength):
    strength = float(np.clip(strength, 0.0, 1.0))
    return tuple(1.0 - (1.0 - c) * strength for c in rgb)


# ------------------------------------------------------------------------------ tree


def _fmt(x, precision):
    x = round(float(x), precision)
    return str(int(x)) if abs(x) < 1e15 and x == int(x) else f"{x:.{precision}f}"


def tree(model, ax=None, max_depth=None, *, tree_index=0, feature_names=None,
         class_names=None, precision=2, fontsize=None):
    """Draw one tree of ``model``: split boxes, leaf boxes and the edges between them.

    Parameters
    ----------
    model : fitted silva estimator
        A decision tree or any model holding :class:`silva.engine.tree.Tree` objects
        (ensembles: pick one with ``tree_index``, in the order of
        :func:`silva.tree_walk.iter_trees`).
    ax : matplotlib Axes, default=None
    max_depth : int, default=None
        Deepest level drawn (the root is 0); deeper subtrees are shown as ``...``.
    tree_index : int, default=0
    feature_names, class_names : sequence of str, default=None
        Default to the model's ``feature_names_in_`` and ``classes_``.
    precision : int, default=2
        Decimals of thresholds and values.
    fontsize : float, default=None
        Chosen from the number of boxes when None.

    Returns
    -------
    ax : matplotlib Axes

    Notes
    -----
    A split box reads ``name <= threshold`` (or ``name in {categories}``); the left
    child, drawn on the left, holds the samples for which it is true. ``(NaN)`` marks the
    side that missing values take.
    """
    from silva.tree_walk import iter_trees

    if max_depth is not None and (not isinstance(max_depth, numbers.Integral)
                                  or max_depth < 0):
        raise ValueError(f"max_depth must be None or an int >= 0; got {max_depth!r}.")
    found = list(iter_trees(model))
    if not found:
        raise ValueError(f"{type(model).__name__} holds no fitted silva tree; fit it first.")
    if not isinstance(tree_index, numbers.Integral) or not 0 <= tree_index < len(found):
        raise ValueError(f"tree_index must be in [0, {len(found)}); got {tree_index!r}.")
    where, t, context = found[tree_index]
    names = feature_names if feature_names is not None else context.get("feature_names")
    classes = class_names if class_names is not None else context.get("classes")
    categories = context.get("categories") or {}
    feature_map = context.get("feature_map")
    n_values = t.value.shape[2]
    is_classifier = classes is not None and len(classes) == n_values
    limit = np.inf if max_depth is None else max_depth
    has_missing = context.get("has_missing", True)
    multiway = t.multiway
    is_leaf = t.is_leaf

    def name_of(split):
        feature = split.feature
        feature = feature_map[feature] if feature_map is not None else feature
        if names is not None and feature < len(names):
            return str(names[feature]), feature
        return f"x[{feature}]", feature

    def children(node):
        """(edge label, child) pairs, left to right."""
        if multiway:
            split = t.split(node)
            return [(branch_test(split, branch, precision), child)
                    for branch, child in zip(split.branches, t.children(node), strict=True)]
        left, right = t.children(node)
        return [("yes", left), ("no", right)]

    def shown_leaf(node):
        return is_leaf(node) or t.node_depth[node] >= limit

    # Leaves (and cut-off subtrees) get consecutive x slots from left to right; a split
    # sits midway between its children. Explicit stack: trees can be deep.
    x = {}
    next_slot = 0
    stack = [(0, False)]
    while stack:
        node, children_done = stack.pop()
        if shown_leaf(node):
            x[node] = float(next_slot)
            next_slot += 1
        elif children_done:
            placed = [x[child] for _, child in children(node)]
            x[node] = (min(placed) + max(placed)) / 2.0
        else:
            stack.append((node, True))
            stack.extend((child, False) for _, child in reversed(children(node)))
    n_slots = max(next_slot, 1)
    depth_shown = max(int(t.node_depth[n]) for n in x)

    ax = _axes(ax)
    colors = _class_colors(n_values if is_classifier else 1)
    root_values = t.value[:, 0, 0]
    lo, hi = float(root_values.min()), float(root_values.max())

    def label(node):
        lines = []
        if multiway and not is_leaf(node):
            lines.append(name_of(t.split(node))[0])
        elif not is_leaf(node):
            split = t.split(node)
            name, feature = name_of(split)
            # Where NaN goes is only worth a mention when the model saw missing values.
            nan_side = " (NaN)" if has_missing and split.missing_branch == 0 else ""
            if split.kind == "categories":
                codes = split.categories_left
                labels = categories.get(feature)
                shown = [str(labels[c]) if labels is not None and c < len(labels) else str(c)
                         for c in codes]
                if len(shown) > 4:
                    shown = shown[:4] + ["..."]
                lines.append(f"{name} in {{{', '.join(shown)}}}{nan_side}")
            else:
                lines.append(f"{name} <= {_fmt(split.threshold, precision)}{nan_side}")
        lines.append(f"samples = {int(t.n_node_samples[node])}")
        values = t.value[node, 0]
        if is_classifier:
            lines.append(f"class = {classes[int(np.argmax(values))]}")
        else:
            lines.append("value = " + ", ".join(_fmt(v, precision) for v in values[:4]))
        if not is_leaf(node) and shown_leaf(node):
            lines.append("...")
        return "\n".join(lines)

    def face(node):
        values = t.value[node, 0]
        if is_classifier:
            k = len(values)
            best = int(np.argmax(values))
            total = values.sum()
            share = values[best] / total if total > 0 else 1.0
            strength = 1.0 if k < 2 else (share - 1.0 / k) / (1.0 - 1.0 / k)
            return _tint(colors[best], 0.15 + 0.85 * strength)
        strength = 1.0 if hi == lo else (values[0] - lo) / (hi - lo)
        return _tint(colors[0], 0.15 + 0.85 * strength)

    labels = {node: label(node) for node in x}
    if fontsize is None:
        # As large as fits: each box gets a slot of the axes' width and a level of its
        # height (character width taken as 0.6 em, line height as 1.3 em).
        figure = ax.figure
        box = ax.get_position()
        width_pt = box.width * figure.get_figwidth() * 72.0
        height_pt = box.height * figure.get_figheight() * 72.0
        slot_pt = width_pt / (n_slots + 0.4)
        tallest = max(text.count("\n") + 1 for text in labels.values())
        fontsize = 0.8 * height_pt / (depth_shown + 1.2) / (1.3 * tallest + 0.8)
        # Boxes of one level must not overlap: the closest neighbours there bound it.
        for depth in range(depth_shown + 1):
            level = sorted((x[n], labels[n]) for n in x if t.node_depth[n] == depth)
            for (x0, text0), (x1, text1) in zip(level, level[1:], strict=False):
                half_widths = sum(0.3 * max(len(line) for line in text.split("\n")) + 0.5
                                  for text in (text0, text1))
                fontsize = min(fontsize, 0.9 * (x1 - x0) * slot_pt / half_widths)
            widest = max(len(line) for _, text in level for line in text.split("\n"))
            fontsize = min(fontsize, 0.95 * width_pt / (0.6 * widest + 1.0))
        fontsize = float(np.clip(fontsize, 2.0, 10.0))
    for node in x:
        if shown_leaf(node):
            continue
        for side, child in children(node):
            ax.plot([x[node], x[child]], [-t.node_depth[node], -t.node_depth[child]],
                    color="0.35", linewidth=1.0, zorder=1)
            # Binary splits label the root's edges (yes/no); multiway ones every edge.
            if node == 0 or multiway:
                ax.text((x[node] + x[child]) / 2.0, -t.node_depth[node] - 0.5, side,
                        ha="center", va="center", fontsize=fontsize, color="0.25", zorder=2,
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    for node in x:
        ax.text(x[node], -t.node_depth[node], labels[node], ha="center", va="center",
                fontsize=fontsize, zorder=3,
                bbox={"boxstyle": "round,pad=0.3", "facecolor": face(node),
                      "edgecolor": "0.2"})
    ax.set_xlim(-0.7, n_slots - 0.3)
    ax.set_ylim(-depth_shown - 0.6, 0.6)
    ax.set_axis_off()
    title = type(model).__name__ if where == "model.tree_" else f"{type(model).__name__}: " \
        f"{where.removeprefix('model.')}"
    ax.set_title(title, fontsize=max(fontsize, 8))
    return ax


# ---------------------------------------------------------------- decision boundary


def _two_columns(X, model):
    """X as a float (n, 2) array and the two column names."""
    names = None
    if hasattr(X, "columns"):
        names = [str(c) for c in X.columns]
    values = np.asarray(X, dtype=np.float64) if not hasattr(X, "to_numpy") else \
        np.asarray(X.to_numpy(), dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != 2:
        shape = values.shape
        raise ValueError(f"decision_boundary needs X with exactly 2 features (columns); got "
                         f"shape {shape}. Fit and plot the model on two features.")
    if names is None:
        fitted = getattr(model, "feature_names_in_", None)
        names = [str(n) for n in fitted] if fitted is not None and len(fitted) == 2 else \
            ["x[0]", "x[1]"]
    return values, names


def decision_boundary(model, X, y, ax=None, *, grid_resolution=200, alpha=0.35,
                      feature_names=None):
    """Colour the plane by the prediction of ``model`` (fitted on two features) and draw
    the samples ``(X, y)`` on top.

    Classifiers colour each region by its predicted class, regressors by the predicted
    value (with a colour bar); points take the colour of their true class or value.

    Parameters
    ----------
    model : fitted estimator with ``predict``
    X : array-like or data frame of shape (n_samples, 2)
    y : array-like of shape (n_samples,)
    ax : matplotlib Axes, default=None
    grid_resolution : int, default=200
        Grid points per axis.
    alpha : float, default=0.35
        Opacity of the regions.
    feature_names : pair of str, default=None
        Axis labels; default to the frame's columns or ``feature_names_in_``.

    Returns
    -------
    ax : matplotlib Axes
    """
    if not isinstance(grid_resolution, numbers.Integral) or grid_resolution < 2:
        raise ValueError(f"grid_resolution must be an int >= 2; got {grid_resolution!r}.")
    values, names = _two_columns(X, model)
    if feature_names is not None:
        names = list(feature_names)
    y = np.asarray(y)
    if y.shape[0] != values.shape[0]:
        raise ValueError(f"X has {values.shape[0]} rows but y has {y.shape[0]}.")
    finite = values[np.isfinite(values).all(axis=1)]
    low, high = finite.min(axis=0), finite.max(axis=0)
    pad = np.where(high > low, (high - low) * 0.05, 1.0)
    g0, g1 = np.meshgrid(np.linspace(low[0] - pad[0], high[0] + pad[0], grid_resolution),
                         np.linspace(low[1] - pad[1], high[1] + pad[1], grid_resolution))
    grid = np.c_[g0.ravel(), g1.ravel()]
    fitted_names = getattr(model, "feature_names_in_", None)
    if fitted_names is not None and hasattr(X, "columns"):
        import pandas as pd

        grid = pd.DataFrame(grid, columns=list(X.columns))
    predicted = np.asarray(model.predict(grid))

    ax = _axes(ax)
    from matplotlib.colors import ListedColormap

    classes = getattr(model, "classes_", None)
    if classes is not None:
        classes = np.asarray(classes)
        colors = _class_colors(len(classes))
        cmap = ListedColormap(colors)
        index = {label: i for i, label in enumerate(classes.tolist())}
        region = np.array([index[label] for label in predicted.tolist()], dtype=float)
        ax.contourf(g0, g1, region.reshape(g0.shape), levels=np.arange(len(classes) + 1) - 0.5,
                    cmap=cmap, alpha=alpha)
        point = np.array([index.get(label, -1) for label in y.tolist()])
        for i, label in enumerate(classes.tolist()):
            chosen = point == i
            ax.scatter(values[chosen, 0], values[chosen, 1], color=colors[i], edgecolor="k",
                       linewidth=0.5, s=20, label=str(label))
        unknown = point < 0
        if unknown.any():
            ax.scatter(values[unknown, 0], values[unknown, 1], color="white",
                       edgecolor="k", s=20, label="other")
        ax.legend(loc="best", fontsize="small", framealpha=0.8)
    else:
        surface = ax.contourf(g0, g1, predicted.astype(float).reshape(g0.shape), levels=20,
                              cmap="viridis", alpha=alpha)
        ax.scatter(values[:, 0], values[:, 1], c=y.astype(float), cmap="viridis",
                   norm=surface.norm, edgecolor="k", linewidth=0.5, s=20)
        ax.figure.colorbar(surface, ax=ax, label="prediction")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(type(model).__name__)
    return ax


# ------------------------------------------------------------------------ importance


def _importances(model, importance_type):
    if importance_type is None:
        values = getattr(model, "feature_importances_", None)
        if values is None:
            raise ValueError(f"{type(model).__name__} has no feature_importances_; is it "
                             "fitted, and does it compute importances?")
        return np.asarray(values, dtype=float), "importance"
    for method in ("feature_importance", "get_feature_importance"):
        function = getattr(model, method, None)
        if callable(function):
            return np.asarray(function(importance_type=importance_type), dtype=float), \
                f"importance ({importance_type})"
    if "importance_type" in getattr(model, "get_params", dict)():
        # LightGBM's convention: the parameter chooses what feature_importances_ holds.
        previous = model.importance_type
        try:
            model.importance_type = importance_type
            values = np.asarray(model.feature_importances_, dtype=float)
        finally:
            model.importance_type = previous
        return values, f"importance ({importance_type})"
    raise ValueError(f"{type(model).__name__} has one kind of importance "
                     "(feature_importances_); importance_type must be None for it; got "
                     f"{importance_type!r}.")


def importance(model, ax=None, importance_type=None, *, max_features=20,
               feature_names=None):
    """Bar chart of feature importances, largest first.

    Parameters
    ----------
    model : fitted estimator
        Reads ``feature_importances_``; with ``importance_type`` (e.g. ``"gain"``,
        ``"split"``), a method ``feature_importance(importance_type=...)`` or
        ``get_feature_importance(...)``, or an ``importance_type`` parameter as in
        LightGBM.
    ax : matplotlib Axes, default=None
    importance_type : str, default=None
    max_features : int, default=20
        Bars drawn (the most important features).
    feature_names : sequence of str, default=None
        Defaults to ``feature_names_in_``, else ``x[j]``.

    Returns
    -------
    ax : matplotlib Axes
    """
    if not isinstance(max_features, numbers.Integral) or max_features < 1:
        raise ValueError(f"max_features must be an int >= 1; got {max_features!r}.")
    values, label = _importances(model, importance_type)
    if feature_names is None:
        fitted = getattr(model, "feature_names_in_", None)
        feature_names = [str(n) for n in fitted] if fitted is not None else \
            [f"x[{j}]" for j in range(len(values))]
    if len(feature_names) != len(values):
        raise ValueError(f"feature_names has {len(feature_names)} names for "
                         f"{len(values)} importances.")
    order = np.argsort(-values, kind="stable")[:max_features]
    ax = _axes(ax)
    # Bottom to top: least to most important, so the largest bar is on top.
    bottom_up = order[::-1]
    positions = np.arange(len(order))
    ax.barh(positions, values[bottom_up], color=_class_colors(1)[0], edgecolor="0.3")
    ax.set_yticks(positions)
    ax.set_yticklabels([feature_names[j] for j in bottom_up])
    ax.set_xlabel(label)
    ax.set_title(f"{type(model).__name__}: feature importances")
    return ax


# -------------------------------------------------------------------- learning curve


def _plot_series(ax, values, label, **style):
    values = np.asarray(values, dtype=float).ravel()
    ax.plot(np.arange(1, len(values) + 1), values, label=label, **style)
    return len(values)


def learning_curve(model, ax=None, X=None, y=None):
    """Score against the number of trees, from whatever the model records.

    - Boosting: ``evals_result_``, a dict ``{eval set: {metric: [value per iteration]}}``
      (LightGBM's and XGBoost's layout), one line per set and metric; ``best_iteration_``
      is marked when present.
    - Forests: ``oob_curve_`` (out-of-bag error for 1..n trees), or a method
      ``oob_curve(X, y)`` returning it (pass ``X`` and ``y``).
    - AdaBoost: ``training_error_bound_`` (the bound prod_t 2 sqrt(e_t (1 - e_t)) of
      Freund & Schapire 1997), beside the training error from ``staged_score(X, y)``
      when ``X`` and ``y`` are given (or ``training_errors_`` when recorded), and the
      weak learners' weighted errors ``estimator_errors_``.
    - Otherwise, with ``X`` and ``y``: the error of ``staged_score`` or
      ``staged_predict``.

    Returns
    -------
    ax : matplotlib Axes

    Raises
    ------
    ValueError
        If the model records none of these (the message lists what is looked for).
    """
    curves = []  # (label, values, style)
    ylabel = "error"
    evals = getattr(model, "evals_result_", None)
    if evals:
        ylabel = "metric"
        for set_name, metrics in evals.items():
            for metric, values in metrics.items():
                curves.append((f"{set_name} {metric}", values, {}))
    oob = getattr(model, "oob_curve_", None)
    if oob is None and callable(getattr(model, "oob_curve", None)) and X is not None:
        oob = model.oob_curve(X, y)
    if oob is not None:
        curves.append(("out-of-bag error", oob, {}))
    bound = getattr(model, "training_error_bound_", None)
    if bound is not None:
        curves.append(("training error bound", bound, {"linestyle": "--"}))
        recorded = getattr(model, "training_errors_", None)
        if recorded is not None:
            curves.append(("training error", recorded, {}))
        errors = getattr(model, "estimator_errors_", None)
        if errors is not None:
            curves.append(("weak learner weighted error", errors, {"linestyle": ":"}))
    if X is not None and y is not None and not evals and oob is None and (
            bound is None or getattr(model, "training_errors_", None) is None):
        staged = _staged_errors(model, X, y)
        if staged is not None:
            curves.append(("error on the given data", staged, {}))
    if not curves:
        raise ValueError(
            f"learning_curve needs a model that records its progress: evals_result_ "
            f"(boosting), oob_curve_ or oob_curve(X, y) (forests), training_error_bound_ "
            f"(AdaBoost), or staged_score/staged_predict with X and y; "
            f"{type(model).__name__} has none of these"
            + ("" if X is not None else " (no X and y were given)") + ".")
    ax = _axes(ax)
    for label, values, style in curves:
        _plot_series(ax, values, label, **style)
    best = getattr(model, "best_iteration_", None)
    if evals and isinstance(best, numbers.Integral) and best >= 0:
        ax.axvline(best + 1, color="0.4", linestyle=":", label=f"best iteration {best + 1}")
    ax.set_xlabel("number of trees (iterations)")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{type(model).__name__}: learning curve")
    ax.legend(loc="best", fontsize="small")
    return ax


def _staged_errors(model, X, y):
    staged_score = getattr(model, "staged_score", None)
    if callable(staged_score):
        return [1.0 - s for s in staged_score(X, y)]
    staged_predict = getattr(model, "staged_predict", None)
    if not callable(staged_predict):
        return None
    y = np.asarray(y)
    if getattr(model, "classes_", None) is not None:
        return [float(np.mean(p != y)) for p in staged_predict(X)]
    return [float(np.mean((np.asarray(p, dtype=float) - y) ** 2)) for p in staged_predict(X)]


# --------------------------------------------------------------------------- margins


def margins(model, X, y, ax=None):
    """Cumulative distribution of the voting margins of ``(X, y)``.

    The margin of a sample is the weight of the votes for its true class minus the
    largest weight for another class, normalised to [-1, 1]; it is positive exactly when
    the sample is classified correctly. Schapire et al. (1998) plot its cumulative
    distribution to show boosting enlarging margins as rounds are added.

    ``model.margins(X, y)`` (or ``model.margin(X, y)``) supplies the margins: an array,
    or a dict ``{label: array}`` (e.g. per number of rounds) drawn as one curve each.

    Returns
    -------
    ax : matplotlib Axes
    """
    for name in ("margins", "margin"):
        function = getattr(model, name, None)
        if callable(function):
            values = function(X, y)
            break
    else:
        raise ValueError(f"margins needs a model with a margins(X, y) or margin(X, y) "
                         f"method (voting ensembles such as AdaBoost and forests); "
                         f"{type(model).__name__} has neither.")
    series = values if isinstance(values, dict) else {"margins": values}
    ax = _axes(ax)
    for label, margin in series.items():
        margin = np.sort(np.asarray(margin, dtype=float).ravel())
        if margin.size == 0:
            raise ValueError("margins got no samples.")
        fraction = np.arange(1, margin.size + 1) / margin.size
        ax.step(np.r_[-1.0, margin, 1.0], np.r_[0.0, fraction, 1.0], where="post",
                label=str(label))
    ax.axvline(0.0, color="0.5", linewidth=0.8, linestyle=":")
    ax.set_xlim(-1.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("margin")
    ax.set_ylabel("cumulative fraction of samples")
    ax.set_title(f"{type(model).__name__}: margin distribution")
    if len(series) > 1:
        ax.legend(loc="upper left", fontsize="small")
    return ax
