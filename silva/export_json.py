"""Readable JSON dumps of the trees in a model (format ``silva-tree-dump``).

A dump is for reading and for other tools, not for loading back: the model file
(:mod:`silva.persistence`) is the format that restores a model.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from silva.engine.tree_interface import MISSING_BRANCH, branch_test
from silva.persistence import FORMAT_VERSION, atomic_write, class_path, readable_value
from silva.tree_walk import iter_trees

__all__ = ["dump_json", "tree_to_dict", "trees_to_dict"]


def _number(x):
    x = float(x)
    return x if math.isfinite(x) else None


def _label(value):
    return value.item() if isinstance(value, np.generic) else value


def tree_to_dict(tree, context=None):
    """One tree as a JSON-ready dict: ``{"n_nodes", "max_depth", "nodes": [...]}``.

    Each node has ``id``, ``depth``, ``n_samples``, ``weighted_n_samples``, ``impurity``
    and ``value`` (class fractions or the mean target); splits add ``feature`` (column
    index into the model's input), ``feature_name``, ``threshold`` (go left when
    ``x <= threshold``) or, for a categorical split, ``categories_left`` (codes, plus
    ``category_labels_left`` when the model encoded a data frame's categories),
    ``missing`` (``"left"`` or ``"right"``, where NaN and unseen categories go),
    ``left`` and ``right`` (child ids); leaves have ``"leaf": true``.
    """
    context = context or {}
    names = context.get("feature_names")
    categories = context.get("categories") or {}
    feature_map = context.get("feature_map")
    if tree.multiway:
        return _multiway_tree_to_dict(tree, names, feature_map)
    # Binary trees are read as whole arrays, turned into plain Python lists first: the
    # per-node interface (split records) and numpy indexing node by node are several
    # times slower on trees of hundreds of thousands of nodes.
    depth, left_of, right_of = (tree.node_depth.tolist(), tree.children_left.tolist(),
                                tree.children_right.tolist())
    feature_of, threshold = tree.feature.tolist(), tree.threshold.tolist()
    categorical, missing_left = tree.is_categorical.tolist(), tree.missing_go_to_left.tolist()
    counts = _count_lists(tree)
    nodes = []
    for node in range(tree.node_count):
        entry = {"id": node, "depth": depth[node]}
        left = left_of[node]
        if left == -1:
            entry["leaf"] = True
        else:
            local = feature_of[node]
            feature = feature_map[local] if feature_map is not None else local
            entry["feature"] = feature
            if names is not None and feature < len(names):
                entry["feature_name"] = names[feature]
            if categorical[node]:
                codes = [int(c) for c in tree.categories_left(node)]
                entry["categories_left"] = codes
                labels = categories.get(feature)
                if labels is not None:
                    entry["category_labels_left"] = [_label(labels[c]) for c in codes
                                                      if c < len(labels)]
            else:
                entry["threshold"] = threshold[node]
            entry["missing"] = "left" if missing_left[node] else "right"
            entry["left"] = left
            entry["right"] = right_of[node]
        _add_counts(counts, node, entry)
        nodes.append(entry)
    return {"n_nodes": int(tree.node_count), "max_depth": int(tree.max_depth),
            "n_leaves": int(tree.n_leaves), "nodes": nodes}


def _finite_or_none(values):
    return [v if math.isfinite(v) else None for v in values]


def _count_lists(tree):
    """Per node: values, sample counts, weighted counts and impurities as lists."""
    values = tree.value.reshape(tree.node_count, -1)
    if not np.isfinite(values).all():
        rows = [_finite_or_none(row) for row in values.tolist()]
    else:
        rows = values.tolist()
    return (rows, tree.n_node_samples.tolist(),
            _finite_or_none(np.asarray(tree.weighted_n_node_samples, dtype=float).tolist()),
            _finite_or_none(np.asarray(tree.impurity, dtype=float).tolist()))


def _add_counts(counts, node, entry):
    values, n_samples, weighted, impurity = counts
    entry["value"] = values[node]
    entry["n_samples"] = n_samples[node]
    entry["weighted_n_samples"] = weighted[node]
    entry["impurity"] = impurity[node]


def _multiway_tree_to_dict(tree, names, feature_map):
    """A multiway (ID3, C4.5) tree: each split lists its ``branches``, each with its
    ``condition`` in words (``outlook = sunny``, ``temp <= 75``), ``child`` and the
    ``fraction`` of training weight that took it; ``missing_child`` is the branch of
    missing values (absent when C4.5 spreads them over all branches)."""
    counts = _count_lists(tree)
    nodes = []
    for node in range(tree.n_nodes):
        entry = {"id": node, "depth": int(tree.node_depth[node])}
        if tree.is_leaf(node):
            entry["leaf"] = True
        else:
            split = tree.split(node)
            local = split.feature
            feature = feature_map[local] if feature_map is not None else local
            name = names[feature] if names is not None and feature < len(names) \
                else f"x[{feature}]"
            entry["feature"] = feature
            entry["feature_name"] = name
            start = int(tree.first_branch[node])
            branches = []
            for branch, child in zip(split.branches, tree.children(node), strict=True):
                item = {"branch": branch,
                        "condition": f"{name} {branch_test(split, branch, 6)}",
                        "child": child}
                if branch != MISSING_BRANCH:
                    item["fraction"] = _number(tree.branch_fraction[start + branch])
                branches.append(item)
            entry["branches"] = branches
            if split.missing_branch is not None:
                entry["missing_child"] = tree.children(node)[-1]
        _add_counts(counts, node, entry)
        nodes.append(entry)
    return {"n_nodes": int(tree.n_nodes), "max_depth": int(tree.max_depth),
            "n_leaves": int(tree.n_leaves), "multiway": True, "nodes": nodes}


def trees_to_dict(model):
    """The model as a JSON-ready dict: class, parameters, features, classes and every
    tree (see :func:`tree_to_dict`), each with the attribute path it was found at."""
    trees = []
    for index, (where, tree, context) in enumerate(iter_trees(model)):
        entry = {"index": index, "path": where}
        if "classes" in context:
            entry["classes"] = [_label(c) for c in context["classes"]]
        entry.update(tree_to_dict(tree, context))
        trees.append(entry)
    get_params = getattr(model, "get_params", None)
    names = getattr(model, "feature_names_in_", None)
    classes = getattr(model, "classes_", None)
    return {
        "format": "silva-tree-dump",
        "format_version": FORMAT_VERSION,
        "estimator": class_path(type(model)),
        "params": readable_value(get_params(deep=False)) if callable(get_params) else None,
        "n_features": getattr(model, "n_features_in_", None),
        "feature_names": None if names is None else [str(n) for n in names],
        "classes": None if classes is None or np.ndim(classes) != 1
        else [_label(c) for c in classes],
        "n_trees": len(trees),
        "trees": trees,
    }


def dump_json(model, path=None, *, indent=2):
    """The trees of ``model`` as readable JSON (see :func:`trees_to_dict`); written to
    ``path`` (atomically) when given, and returned as a string."""
    text = json.dumps(trees_to_dict(model), indent=indent, default=_json_default)
    if path is not None:
        data = text.encode("utf-8")
        atomic_write(os.fspath(path), lambda file: file.write(data))
    return text


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
