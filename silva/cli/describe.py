"""Text the commands print about models: tables, parameter lists, scores and trees."""

from __future__ import annotations

from collections.abc import Sequence

from sklearn.base import is_classifier
from sklearn.metrics import accuracy_score, r2_score

from silva.export import export_text
from silva.tree_walk import iter_trees

__all__ = ["describe_params", "model_trees", "score_of", "text_table", "tree_text"]


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    """Columns padded to their widest cell under a dashed rule; ``right`` columns are
    right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        out = []
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            out.append(cell.rjust(width) if i in right else cell.ljust(width))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


_MISSING = object()


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # e.g. arrays, whose == is elementwise
        return False


def _short_repr(key, value) -> str:
    """A parameter value as the demo table shows it: member lists by their names."""
    if key == "estimators" and isinstance(value, list | tuple):
        return "[" + ", ".join(str(member[0]) for member in value) + "]"
    if hasattr(value, "get_params"):
        return type(value).__name__ + "(" + describe_params(value).replace("defaults", "") + ")"
    return repr(value)


def describe_params(estimator) -> str:
    """The parameters of ``estimator`` that differ from its defaults, as ``k=v`` pairs."""
    import inspect

    params = estimator.get_params(deep=False)
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(type(estimator)).parameters.items()
                if parameter.default is not inspect.Parameter.empty}
    shown = [
        f"{key}={_short_repr(key, value)}"
        for key, value in sorted(params.items())
        if key != "random_state" and not _same(defaults.get(key, _MISSING), value)
    ]
    return ", ".join(shown) if shown else "defaults"


def model_trees(est):
    """Every tree of ``est`` (one for a single tree), in :func:`iter_trees` order."""
    return [tree for _, tree, _ in iter_trees(est)]


def score_of(est, X, y):
    """``("accuracy", value)`` for a classifier, ``("R2", value)`` for a regressor."""
    pred = est.predict(X)
    if is_classifier(est):
        return "accuracy", float(accuracy_score(y, pred))
    return "R2", float(r2_score(y, pred))


def tree_text(est, feature_names=None, class_names=None, max_depth=3) -> str:
    """:func:`silva.export.export_text` of ``est``'s tree, or of its first tree when it is
    an ensemble (feature subsets and category labels resolved as in the JSON dump)."""
    if hasattr(est, "tree_"):
        return export_text(est, feature_names=feature_names, class_names=class_names,
                           max_depth=max_depth)
    found = next(iter_trees(est), None)
    if found is None:
        return "(no fitted tree)\n"
    where, tree, context = found
    names = feature_names if feature_names is not None else context.get("feature_names")
    feature_map = context.get("feature_map")
    if names is not None and feature_map is not None:
        names = [names[j] for j in feature_map]
    if names is not None and len(names) != tree.n_features:
        names = None
    classes = context.get("classes")
    if classes is not None and len(classes) != tree.value.shape[2]:
        classes = None  # e.g. boosting: regression trees inside a classifier
    if classes is None:
        class_names = None  # leaves print their values
    elif class_names is None:
        class_names = classes
    header = f"{where.removeprefix('model.')}:\n"
    return header + export_text(tree, feature_names=names, class_names=class_names,
                                max_depth=max_depth,
                                show_missing=context.get("has_missing", False))
