"""Finding every fitted tree inside a model, with what its owners know about its features.

Exports, plots, JSON dumps and the command line read trees through
:func:`iter_trees`, whatever estimator (a single tree, a forest, boosting, a stacking
ensemble of those) holds them.
"""

from __future__ import annotations

import numpy as np

from silva._multi_output import refuse
from silva.engine.multiway import MultiwayTree
from silva.engine.tree import Tree
from silva.persistence import stored_by_state

__all__ = ["iter_trees"]


def iter_trees(model):
    """Every tree reachable from ``model``, in a fixed order: :class:`silva.engine.tree.Tree`
    objects (packed ensemble members included) and multiway trees (ID3, C4.5), all of
    which implement :class:`silva.engine.tree_interface.TreeInterface`.

    Yields ``(where, tree, context)`` where ``where`` is the attribute path (e.g.
    ``model.estimators_[3].tree_``) and ``context`` is a dict with the nearest enclosing
    ``feature_names`` (``feature_names_in_``), ``categories`` (the data-frame category
    encoder's ``categories_``), ``classes`` (``classes_``), ``has_missing``
    (``_has_missing_at_fit``) and ``feature_map`` (column
    indices when the tree was grown on a feature subset, from the owner's
    ``estimators_features_``). Generic: any estimator that keeps its trees in attributes,
    lists, tuples, dicts or object arrays is covered.
    """
    seen = set()

    def context_of(obj, context):
        context = dict(context)
        names = getattr(obj, "feature_names_in_", None)
        if names is not None:
            context["feature_names"] = [str(name) for name in names]
        encoder = getattr(obj, "_encoder", None)
        if encoder is not None and getattr(encoder, "categories_", None) is not None:
            context["categories"] = encoder.categories_
        has_missing = getattr(obj, "_has_missing_at_fit", None)
        if has_missing is not None:
            context["has_missing"] = bool(has_missing)
        classes = getattr(obj, "classes_", None)
        if classes is not None and np.ndim(classes) == 1:
            context["classes"] = list(np.asarray(classes).tolist())
        return context

    def walk(value, where, context):
        if id(value) in seen:
            return
        if isinstance(value, Tree | MultiwayTree):
            # Exports, plots and JSON dumps read one value vector per node.
            refuse(value, "reading the trees (export, plot, JSON dump)")
            seen.add(id(value))
            yield where, value, context
            return
        if isinstance(value, list | tuple):
            seen.add(id(value))
            for i, item in enumerate(value):
                yield from walk(item, f"{where}[{i}]", context)
        elif isinstance(value, dict):
            seen.add(id(value))
            for key, item in value.items():
                yield from walk(item, f"{where}[{key!r}]", context)
        elif isinstance(value, np.ndarray) and value.dtype.hasobject:
            seen.add(id(value))
            for index in np.ndindex(value.shape):
                label = ", ".join(str(i) for i in index)
                yield from walk(value[index], f"{where}[{label}]", context)
        elif stored_by_state(type(value)) and hasattr(value, "__dict__"):
            seen.add(id(value))
            context = context_of(value, context)
            subsets = getattr(value, "estimators_features_", None)
            # Public attributes first, so a tree reachable both ways is named by its public
            # path (a forest's estimators_[i].tree_, not its private _grown_trees[i].tree).
            items = sorted(vars(value).items(), key=lambda pair: pair[0].startswith("_"))
            for key, item in items:
                if key == "estimators_" and subsets is not None and \
                        isinstance(item, list | tuple):
                    for i, sub in enumerate(item):
                        sub_context = dict(context)
                        if i < len(subsets):
                            sub_context["feature_map"] = [int(f) for f in subsets[i]]
                        yield from walk(sub, f"{where}.{key}[{i}]", sub_context)
                else:
                    yield from walk(item, f"{where}.{key}", context)

    yield from walk(model, "model", {})
