"""The ``silva`` command line: fit, predict, evaluate, show and demo.

::

    silva fit DATA --target COL [--model tree|id3|c45|rf|et|bagging|gbm|ada|vote|stack]
              [--param key=value ...] [--task classification|regression] --out MODEL
    silva predict MODEL DATA [--proba] [--out FILE]
    silva evaluate MODEL DATA --target COL
    silva show MODEL [--depth N]
    silva demo [--plots DIR]

(fit, predict and evaluate also take ``--bad-cells error|missing|text`` and
``--verbose``.)

DATA is a CSV file (read with pandas, or the csv module when pandas is absent) or a
Parquet file (read with pyarrow). A CSV column that holds mostly numbers but some cells
that are not (:func:`mostly_numbers`) is an error naming them, unless ``--bad-cells``
says to read those cells as missing or the column as text; ``fit`` reports the column
types it read on stdout (``--verbose``: a table of them, on stderr for predict and
evaluate, whose stdout is their result).

Models are looked up in :data:`MODELS`, a registry of ``"module:Class"`` strings
imported only when used, so an estimator appears on the command line as soon as its
module exists. Errors (a missing column, an unreadable file, a file that is not a
model, a bad parameter, any ValueError or TypeError that the estimators raise on bad
input) print one line to stderr and exit with status 1; command-line usage errors exit
with status 2.

The demo is driven by :data:`DEMO_ENTRIES`, a list of :class:`DemoEntry` records
``(dataset, name, factory)``; adding a model to the demo is a matter of appending an entry
(and a loader to :data:`DATASETS` for a new dataset).
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import is_classifier
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split

from silva import DecisionTreeClassifier, DecisionTreeRegressor
from silva.export import export_text

__all__ = ["DATASETS", "DEMO_ENTRIES", "MODELS", "DemoEntry", "main", "run_demo"]

RANDOM_STATE = 0
TEST_SIZE = 0.25


@dataclass(frozen=True)
class DemoEntry:
    """One row of the demo: which dataset, a display name and an estimator factory.

    ``factory`` is called with no arguments and must return a fresh, unfitted estimator.
    The ``params`` column of the table lists the parameters that differ from the
    estimator's defaults (``random_state`` left out).
    """

    dataset: str
    name: str
    factory: Callable[[], Any]


@dataclass(frozen=True)
class Dataset:
    """A dataset split once, with a fixed seed, into train and test parts."""

    name: str
    feature_names: list[str]
    target_names: list[str] | None  # class label i is named target_names[i]
    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray


# name -> loader returning (X, y, feature_names, target_names or None for regression);
# all of them ship with scikit-learn (no download).
DATASETS: dict[str, Callable[[], tuple[np.ndarray, np.ndarray, list[str], list[str] | None]]] = {}


def _register(name, loader):
    def load():
        bunch = loader()
        targets = getattr(bunch, "target_names", None)
        targets = None if targets is None else [str(t) for t in targets]
        return bunch.data, bunch.target, [str(f) for f in bunch.feature_names], targets

    DATASETS[name] = load


_register("breast_cancer", load_breast_cancer)
_register("digits", load_digits)
_register("diabetes", load_diabetes)


def _clf(**params):
    return lambda: DecisionTreeClassifier(random_state=RANDOM_STATE, **params)


def _reg(**params):
    return lambda: DecisionTreeRegressor(random_state=RANDOM_STATE, **params)


def _model(path, **params):
    """A factory for ``module:Class`` (imported when the entry runs) with random_state."""
    def make():
        module_name, _, class_name = path.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        seeded = dict(params)
        if "random_state" in cls._get_param_names():
            seeded.setdefault("random_state", RANDOM_STATE)
        return cls(**seeded)
    return make


def _members(task):
    """Members for the voting and stacking demo entries: a tree, a forest, boosting."""
    if task == "classification":
        return [("tree", DecisionTreeClassifier(max_depth=5, random_state=RANDOM_STATE)),
                ("rf", _model("silva.forest:RandomForestClassifier", n_estimators=50)()),
                ("gbm", _model("silva.boosting:GradientBoostingClassifier")())]
    return [("tree", DecisionTreeRegressor(max_depth=5, random_state=RANDOM_STATE)),
            ("rf", _model("silva.forest:RandomForestRegressor", n_estimators=50)()),
            ("gbm", _model("silva.boosting:GradientBoostingRegressor")())]


def _ensemble(path, task, **params):
    return lambda: _model(path, estimators=_members(task), **params)()


DEMO_ENTRIES: list[DemoEntry] = [
    DemoEntry("breast_cancer", "DecisionTreeClassifier", _clf()),
    DemoEntry("breast_cancer", "DecisionTreeClassifier", _clf(max_depth=4)),
    DemoEntry("breast_cancer", "DecisionTreeClassifier", _clf(max_depth=4, criterion="entropy")),
    DemoEntry("breast_cancer", "DecisionTreeClassifier", _clf(criterion="twoing",
                                                               ccp_alpha="cv")),
    DemoEntry("breast_cancer", "ID3Classifier", _model("silva.classic:ID3Classifier")),
    DemoEntry("breast_cancer", "C45Classifier", _model("silva.classic:C45Classifier")),
    DemoEntry("breast_cancer", "RandomForestClassifier",
              _model("silva.forest:RandomForestClassifier", oob_score=True)),
    DemoEntry("breast_cancer", "ExtraTreesClassifier",
              _model("silva.forest:ExtraTreesClassifier")),
    DemoEntry("breast_cancer", "BaggingClassifier",
              _model("silva.bagging:BaggingClassifier", n_estimators=50)),
    DemoEntry("breast_cancer", "GradientBoostingClassifier",
              _model("silva.boosting:GradientBoostingClassifier")),
    DemoEntry("breast_cancer", "AdaBoostClassifier",
              _model("silva.adaboost:AdaBoostClassifier", n_estimators=100)),
    DemoEntry("breast_cancer", "VotingClassifier",
              _ensemble("silva.voting:VotingClassifier", "classification", voting="soft")),
    DemoEntry("breast_cancer", "StackingClassifier",
              _ensemble("silva.stacking:StackingClassifier", "classification")),
    DemoEntry("digits", "DecisionTreeClassifier", _clf()),
    DemoEntry("digits", "DecisionTreeClassifier", _clf(max_depth=8, criterion="entropy")),
    DemoEntry("digits", "C45Classifier", _model("silva.classic:C45Classifier")),
    DemoEntry("digits", "RandomForestClassifier", _model("silva.forest:RandomForestClassifier")),
    DemoEntry("digits", "GradientBoostingClassifier",
              _model("silva.boosting:GradientBoostingClassifier")),
    DemoEntry("digits", "AdaBoostClassifier",
              _model("silva.adaboost:AdaBoostClassifier", algorithm="samme",
                     estimator=DecisionTreeClassifier(max_depth=3), n_estimators=100)),
    DemoEntry("diabetes", "DecisionTreeRegressor", _reg()),
    DemoEntry("diabetes", "DecisionTreeRegressor", _reg(max_depth=4)),
    DemoEntry("diabetes", "DecisionTreeRegressor", _reg(max_depth=4, min_samples_leaf=10)),
    DemoEntry("diabetes", "RandomForestRegressor",
              _model("silva.forest:RandomForestRegressor", min_samples_leaf=5)),
    DemoEntry("diabetes", "ExtraTreesRegressor",
              _model("silva.forest:ExtraTreesRegressor", min_samples_leaf=5)),
    DemoEntry("diabetes", "BaggingRegressor", _model("silva.bagging:BaggingRegressor")),
    DemoEntry("diabetes", "GradientBoostingRegressor",
              _model("silva.boosting:GradientBoostingRegressor", learning_rate=0.05,
                     max_depth=3)),
    DemoEntry("diabetes", "AdaBoostRegressor",
              _model("silva.adaboost:AdaBoostRegressor", n_estimators=50)),
    DemoEntry("diabetes", "StackingRegressor",
              _ensemble("silva.stacking:StackingRegressor", "regression")),
]

# Index into the entries of the tree that is printed after the table (an unpruned tree,
# so the printout shows truncated branches).
SHOWN_ENTRY = 0


def load_dataset(name: str) -> Dataset:
    """Load a registered dataset and split it with the demo's fixed seed."""
    try:
        loader = DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {sorted(DATASETS)}") from None
    X, y, feature_names, target_names = loader()
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=TEST_SIZE, random_state=RANDOM_STATE
    )
    return Dataset(name, feature_names, target_names, X_train, X_test, y_train, y_test)


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


def _trees(est):
    from silva.tree_walk import iter_trees

    return [tree for _, tree, _ in iter_trees(est)]


def _depth(est):
    """Depth of a tree; for an ensemble, of its deepest tree."""
    if hasattr(est, "get_depth"):
        return int(est.get_depth())
    return max((tree.max_depth for tree in _trees(est)), default=0)


def _leaves(est):
    """Leaves of a tree; for an ensemble, summed over its trees."""
    if hasattr(est, "get_n_leaves"):
        return int(est.get_n_leaves())
    return sum(tree.n_leaves for tree in _trees(est))


def _score(est, X, y):
    pred = est.predict(X)
    if is_classifier(est):
        return "accuracy", float(accuracy_score(y, pred))
    return "R2", float(r2_score(y, pred))


def _class_names(est, data: Dataset) -> list[str] | None:
    """Readable names for ``est.classes_`` when the dataset has them (else None)."""
    classes = getattr(est, "classes_", None)
    names = data.target_names
    if classes is None or names is None or np.ndim(classes) != 1:
        return None
    try:
        return [names[int(c)] for c in classes]
    except (IndexError, TypeError, ValueError):
        return None


def _warm_up(factory, data: Dataset) -> float:
    """Fit once on a small slice so one-off JIT compilation is not counted as fit time."""
    start = time.perf_counter()
    n = min(len(data.y_train), 64)
    factory().fit(data.X_train[:n], data.y_train[:n])
    return (time.perf_counter() - start) * 1000.0


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        out = []
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            out.append(cell.rjust(width) if i in right else cell.ljust(width))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def run_demo(
    entries: Sequence[DemoEntry] | None = None,
    *,
    max_depth_shown: int = 3,
    shown_entry: int | None = None,
    warm_up: bool = True,
    out=None,
    plots_dir: str | os.PathLike | None = None,
) -> list[dict]:
    """Fit every entry, print the results table and one tree; return the result rows.

    Parameters
    ----------
    entries : sequence of DemoEntry, default=None
        Models to run; defaults to :data:`DEMO_ENTRIES`.
    max_depth_shown : int, default=3
        ``max_depth`` passed to :func:`silva.export.export_text` for the tree printout.
    shown_entry : int, default=None
        Index in ``entries`` of the tree to print; defaults to :data:`SHOWN_ENTRY` (or
        the first entry when there are fewer entries).
    warm_up : bool, default=True
        Fit each (estimator type, criterion) once on a small slice before timing it.
    out : file object, default=None
        Where to print; defaults to ``sys.stdout``.
    plots_dir : path, default=None
        When given, write PNG plots there (needs matplotlib): for every entry its
        feature importances, first tree and, when the model records one, its learning
        curve and margin distribution; and, per classifier type, its decision boundary
        on the two most important features of ``breast_cancer``. The rows then hold
        the written paths under ``"plots"``.
    """
    out = sys.stdout if out is None else out
    if plots_dir is not None:
        from silva.plot import _pyplot

        _pyplot()  # fail before fitting anything when matplotlib is missing
    entries = list(DEMO_ENTRIES if entries is None else entries)
    if not entries:
        raise ValueError("no demo entries to run")
    if shown_entry is None:
        shown_entry = SHOWN_ENTRY if SHOWN_ENTRY < len(entries) else 0

    datasets: dict[str, Dataset] = {}
    # The engine compiles one split search per criterion, so warm up per (type, criterion).
    warmed: set[tuple] = set()
    results: list[dict] = []
    fitted = []
    for entry in entries:
        if entry.dataset not in datasets:
            datasets[entry.dataset] = load_dataset(entry.dataset)
        data = datasets[entry.dataset]
        est = entry.factory()
        compiled_variant = (type(est), getattr(est, "criterion", None))
        if warm_up and compiled_variant not in warmed:
            _warm_up(entry.factory, data)
            warmed.add(compiled_variant)
        start = time.perf_counter()
        est.fit(data.X_train, data.y_train)
        fit_ms = (time.perf_counter() - start) * 1000.0
        metric, score = _score(est, data.X_test, data.y_test)
        results.append(
            {
                "dataset": entry.dataset,
                "model": entry.name,
                "params": describe_params(est),
                "metric": metric,
                "score": score,
                "fit_ms": fit_ms,
                "n_trees": len(_trees(est)),
                "n_leaves": _leaves(est),
                "depth": _depth(est),
            }
        )
        fitted.append(est)

    headers = ["dataset", "model", "params", "metric", "test score", "fit ms", "trees",
               "leaves", "depth"]
    rows = [
        [
            r["dataset"],
            r["model"],
            r["params"],
            r["metric"],
            f"{r['score']:.4f}",
            f"{r['fit_ms']:.1f}",
            str(r["n_trees"]),
            str(r["n_leaves"]),
            str(r["depth"]),
        ]
        for r in results
    ]
    print(
        f"silva demo: test split {TEST_SIZE:.0%}, random_state={RANDOM_STATE}"
        + (" (fit times exclude a JIT warm-up fit)" if warm_up else ""),
        file=out,
    )
    print(file=out)
    print(_table(headers, rows, right={4, 5, 6, 7, 8}), file=out)

    entry, est = entries[shown_entry], fitted[shown_entry]
    data = datasets[entry.dataset]
    print(file=out)
    print(
        f"Tree for {entry.dataset} / {entry.name} ({results[shown_entry]['params']}), "
        f"splits down to depth {max_depth_shown}:",
        file=out,
    )
    print(file=out)
    print(tree_text(est, data.feature_names, _class_names(est, data), max_depth_shown),
          end="", file=out)
    if plots_dir is not None:
        written = write_demo_plots(entries, fitted, datasets, plots_dir)
        for result, paths in zip(results, written["entries"], strict=True):
            result["plots"] = paths
        total = sum(len(paths) for paths in written["entries"]) + len(written["boundaries"])
        print(f"\n{total} plots written to {os.fspath(plots_dir)}", file=out)
    return results


class _TreeShim:
    """Just enough of an estimator for :func:`silva.export.export_text` to print a tree
    that lives inside an ensemble (a gradient-boosting tree, say)."""

    def __init__(self, tree, n_features, classes, has_missing):
        self.tree_ = tree
        self.n_features_in_ = n_features
        if classes is not None:
            self.classes_ = np.asarray(classes)
        self._has_missing_at_fit = has_missing


def tree_text(est, feature_names=None, class_names=None, max_depth=3) -> str:
    """:func:`silva.export.export_text` of ``est``'s tree, or of its first tree when it is
    an ensemble (feature subsets and category labels resolved as in the JSON dump)."""
    if hasattr(est, "tree_"):
        return export_text(est, feature_names=feature_names, class_names=class_names,
                           max_depth=max_depth)
    from silva.tree_walk import iter_trees

    found = next(iter_trees(est), None)
    if found is None:
        return "(no fitted tree)\n"
    where, tree, context = found
    names = feature_names if feature_names is not None else context.get("feature_names")
    feature_map = context.get("feature_map")
    n_features = tree.n_features
    if names is not None and feature_map is not None:
        names = [names[j] for j in feature_map]
    if names is not None and len(names) != n_features:
        names = None
    classes = context.get("classes")
    if classes is not None and len(classes) != tree.value.shape[2]:
        classes = None  # e.g. boosting: regression trees inside a classifier
    if classes is None:
        class_names = None
    shim = _TreeShim(tree, n_features, classes, context.get("has_missing", False))
    header = f"{where.removeprefix('model.')}:\n"
    return header + export_text(shim, feature_names=names, class_names=class_names,
                                max_depth=max_depth)


# ----------------------------------------------------------------------------- plots


def _save_figure(figure, path):
    figure.savefig(path, dpi=90, bbox_inches="tight")
    return os.fspath(path)


def write_demo_plots(entries, fitted, datasets, plots_dir):
    """Write the demo's PNG plots into ``plots_dir`` (created if needed).

    Returns ``{"entries": [paths per entry], "boundaries": [paths]}``. Plots that a model
    does not support (no learning curve for a single tree, say) are left out.
    """
    from matplotlib.figure import Figure

    from silva import plot

    os.makedirs(plots_dir, exist_ok=True)
    per_entry = []
    for index, (entry, est) in enumerate(zip(entries, fitted, strict=True)):
        data = datasets[entry.dataset]
        stem = os.path.join(plots_dir, f"{index:02d}_{entry.dataset}_{entry.name}")
        names = data.feature_names
        X, y = data.X_test, data.y_test
        # AdaBoost's bound is on the training error, so its curve is drawn on the
        # training set; other staged curves on the test set.
        curve_X, curve_y = (data.X_train, data.y_train) if hasattr(
            est, "training_error_bound_") else (X, y)
        kinds = [
            ("importance", plot.importance, (est,), {"feature_names": names,
                                                      "max_features": 15}, (6.4, 5.5)),
            ("tree", plot.tree, (est,), {"max_depth": 3, "feature_names": names,
                                         "class_names": _class_names(est, data)}, (14, 7)),
            ("learning_curve", plot.learning_curve, (est,), {"X": curve_X, "y": curve_y},
             (6.4, 4.8)),
        ]
        if is_classifier(est):
            kinds.append(("margins", plot.margins, (est, X, y), {}, (6.4, 4.8)))
        paths = []
        for kind, draw, arguments, options, size in kinds:
            figure = Figure(figsize=size)
            try:
                draw(*arguments, ax=figure.add_subplot(), **options)
            except ValueError:
                continue  # this model does not support this plot
            paths.append(_save_figure(figure, f"{stem}_{kind}.png"))
        per_entry.append(paths)

    # Decision boundaries: each classifier type refitted on breast_cancer's two most
    # important features (by the first such entry's importances).
    boundaries = []
    done = set()
    top_two = None
    for entry, est in zip(entries, fitted, strict=True):
        if entry.dataset != "breast_cancer" or not is_classifier(est) or entry.name in done:
            continue
        data = datasets[entry.dataset]
        if top_two is None:
            importances = getattr(est, "feature_importances_", None)
            if importances is None:
                continue
            top_two = np.argsort(-np.asarray(importances), kind="stable")[:2]
        model = entry.factory().fit(data.X_train[:, top_two], data.y_train)
        figure = Figure(figsize=(6.4, 4.8))
        plot.decision_boundary(model, data.X_test[:, top_two], data.y_test,
                               ax=figure.add_subplot(), grid_resolution=150,
                               feature_names=[data.feature_names[j] for j in top_two])
        path = os.path.join(plots_dir, f"boundary_{entry.dataset}_{entry.name}.png")
        boundaries.append(_save_figure(figure, path))
        done.add(entry.name)
    return {"entries": per_entry, "boundaries": boundaries}


# ------------------------------------------------------------------- models and data


class CLIError(Exception):
    """An error to report to the user in one line (exit status 1)."""


# Name on the command line -> ("module:Class" for classification, for regression);
# None where the family has no such estimator. Imported only when used.
MODELS: dict[str, tuple[str | None, str | None]] = {
    "tree": ("silva.decision_tree:DecisionTreeClassifier",
             "silva.decision_tree:DecisionTreeRegressor"),
    "id3": ("silva.classic:ID3Classifier", None),
    "c45": ("silva.classic:C45Classifier", None),
    "rf": ("silva.forest:RandomForestClassifier", "silva.forest:RandomForestRegressor"),
    "et": ("silva.forest:ExtraTreesClassifier", "silva.forest:ExtraTreesRegressor"),
    "bagging": ("silva.bagging:BaggingClassifier", "silva.bagging:BaggingRegressor"),
    "gbm": ("silva.boosting:GradientBoostingClassifier",
            "silva.boosting:GradientBoostingRegressor"),
    "ada": ("silva.adaboost:AdaBoostClassifier", "silva.adaboost:AdaBoostRegressor"),
    "vote": ("silva.voting:VotingClassifier", "silva.voting:VotingRegressor"),
    "stack": ("silva.stacking:StackingClassifier", "silva.stacking:StackingRegressor"),
}

TASKS = ("classification", "regression")
# A numeric target is taken as class labels when it holds integers only and at most
# this many distinct values (override with --task).
MAX_INTEGER_CLASSES = 20


def resolve_model(name: str, task: str):
    """The estimator class registered as ``name`` for ``task``."""
    if name not in MODELS:
        raise CLIError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    target = MODELS[name][TASKS.index(task)]
    if target is None:
        raise CLIError(f"model {name!r} does not do {task}")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name
                                       or module_name.startswith(error.name + ".")):
            raise CLIError(f"model {name!r} is not available in this build "
                           f"({module_name} is not installed)") from None
        raise
    cls = getattr(module, class_name, None)
    if cls is None:
        raise CLIError(f"model {name!r} is not available in this build "
                       f"({module_name} has no {class_name})")
    return cls


def parse_param(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as a Python literal (``3``, ``0.5``, ``None``,
    ``'gini'``, ``[0, 2]``), else kept as the string itself."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = raw.strip()
    return key, value


@dataclass
class Table:
    """A data file read into memory: a pandas DataFrame, or plain column arrays when
    pandas is not installed."""

    path: str
    names: list[str]
    frame: Any = None  # pandas DataFrame
    columns: dict[str, np.ndarray] | None = None
    # "CSV" (column types inferred from the cells) or "Parquet" (types as stored).
    source: str = "CSV"

    @property
    def n_rows(self) -> int:
        if self.frame is not None:
            return len(self.frame)
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def check_columns(self, names, what="column"):
        missing = [name for name in names if name not in self.names]
        if missing:
            listing = ", ".join(repr(n) for n in missing)
            plural = "s" if len(missing) > 1 else ""
            raise CLIError(f"{what}{plural} {listing} not found in {self.path} (its columns: "
                           f"{', '.join(self.names)})")

    def column(self, name) -> np.ndarray:
        self.check_columns([name])
        if self.frame is not None:
            return self.frame[name].to_numpy()
        return self.columns[name]

    def _cells(self, name):
        return self.frame[name] if self.frame is not None else self.columns[name]

    def _set_numbers(self, name, values):
        if self.frame is not None:
            self.frame[name] = values
        else:
            self.columns[name] = values

    def kind(self, name) -> str:
        """What a column was read as: integer, float, bool, text, category, datetime."""
        return column_kind(self._cells(name))

    def n_missing(self, name) -> int:
        cells = self._cells(name)
        if self.frame is not None:
            return int(cells.isna().sum())
        if cells.dtype.kind == "f":
            return int(np.isnan(cells).sum())
        return int(sum(_is_missing_cell(cell) for cell in cells))

    def check_cells(self, names, bad_cells="error") -> list[str]:
        """Settle the type of each CSV column in ``names`` that was read as text but
        holds mostly numbers (see :func:`mostly_numbers`); returns notes, one line each.

        Such a column has cells that are not numbers (a stray ``?`` or ``n.a``) which
        would silently turn it into a text, and so categorical, column. ``bad_cells``
        says what to do: ``"error"`` raises a :class:`CLIError` naming the columns, rows
        and cells; ``"missing"`` reads the column as numbers, those cells missing;
        ``"text"`` keeps it as text. A column whose every cell is a number (padded with
        spaces, say) is read as numbers, and Parquet columns keep their stored types.
        """
        if bad_cells not in BAD_CELLS:
            raise CLIError(f"bad_cells must be one of {BAD_CELLS}; got {bad_cells!r}")
        if self.source != "CSV":
            return []
        self.check_columns(names)
        notes, problems = [], []
        for name in names:
            cells = self._cells(name)
            if not _is_text(cells):
                continue
            values, bad = mostly_numbers(cells)
            if values is None:
                continue
            n_bad = int(bad.sum())
            if n_bad == 0:
                self._set_numbers(name, values)
                continue
            listing = _bad_cell_listing(cells, bad)
            if bad_cells == "error":
                problems.append((name, n_bad, listing, bad))
            elif bad_cells == "missing":
                self._set_numbers(name, values)
                notes.append(f"column {name!r}: {_cells_phrase(n_bad)} read as "
                             f"missing: {listing}")
            else:
                notes.append(f"column {name!r} read as text (--bad-cells=text), though "
                             f"all its cells but {listing} are numbers")
        if problems:
            name, n_bad, listing, bad = problems[0]
            if n_bad == 1:
                row = int(np.flatnonzero(bad)[0])
                cell = str(np.asarray(self._cells(name), dtype=object)[row])
                found = f"row {row + 1} holds {cell!r}"
            else:
                found = f"{n_bad} of its cells are not numbers: {listing}"
            message = (f"column {name!r} of {self.path} holds numbers, but {found}; fix "
                       f"{'that cell' if n_bad == 1 else 'those cells'}, or pass "
                       "--bad-cells=missing to read such cells as missing values "
                       "(--bad-cells=text reads the column as text)")
            if len(problems) > 1:
                others = ", ".join(f"{n!r} ({_cells_phrase(k)})" for n, k, _, _ in problems[1:])
                message += f"; so do column{'s' if len(problems) > 2 else ''} {others}"
            raise CLIError(message)
        return notes

    def features(self, names):
        """The columns ``names`` in that order: a DataFrame, or a float array."""
        self.check_columns(names)
        if self.frame is not None:
            return self.frame[list(names)]
        text = [n for n in names if self.columns[n].dtype.kind not in "fiub"]
        if text:
            raise CLIError(f"columns {text} of {self.path} are not numeric; categorical "
                           "columns need pandas: pip install silva[frames]")
        return np.column_stack([self.columns[n].astype(float) for n in names])


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


# Cells read as missing values whatever the column (as pandas reads them), compared
# after stripping spaces and lowering the case.
MISSING_CELLS = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "#n/a", "<na>"})
# What to do with cells that are not numbers in a column of numbers (--bad-cells).
BAD_CELLS = ("error", "missing", "text")
# Cells named in a message about cells that are not numbers.
SHOWN_BAD_CELLS = 5


def _is_missing_cell(cell) -> bool:
    if cell is None or (isinstance(cell, float) and np.isnan(cell)):
        return True
    return isinstance(cell, str) and cell.strip().lower() in MISSING_CELLS


def _plain_column(values: list[str]) -> np.ndarray:
    """Floats when every cell is a number or missing (then NaN), else the strings."""
    try:
        return np.array([np.nan if _is_missing_cell(v) else float(v) for v in values])
    except ValueError:
        return np.array(values, dtype=object)


def _is_text(cells) -> bool:
    dtype = cells.dtype
    if dtype.kind in "OUS":
        return True
    pd = _pandas()
    return pd is not None and isinstance(dtype, pd.StringDtype)


def column_kind(cells) -> str:
    """A column's type as read, in words: integer, float, bool, text, category,
    datetime (or the dtype's name for anything else)."""
    dtype = cells.dtype
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "integer"
    if dtype.kind == "f":
        return "float"
    if dtype.kind == "M":
        return "datetime"
    if getattr(dtype, "name", "") == "category":
        return "category"
    pd = _pandas()
    if pd is not None and isinstance(dtype, pd.BooleanDtype):
        return "bool"
    if _is_text(cells):
        return "text"
    return str(dtype)


def mostly_numbers(cells):
    """``(values, bad)`` when most cells of a text column are numbers, else ``(None,
    None)``.

    "Mostly" means that more than half of the cells that are not missing (see
    :data:`MISSING_CELLS`) read as numbers; a column of words, or of words with a few
    numbers among them, stays text. ``values`` holds the numbers as floats (NaN for
    missing cells and for the ``bad`` cells, those that are neither missing nor a
    number).
    """
    raw = np.asarray(cells, dtype=object)
    missing = np.array([_is_missing_cell(cell) for cell in raw], dtype=bool)
    pd = _pandas()
    if pd is not None:
        # The parser pandas reads numeric CSV columns with, so that a column reads the
        # same whether or not a stray cell made pandas keep it as text.
        values = pd.to_numeric(pd.Series(np.where(missing, None, raw), dtype=object),
                               errors="coerce").to_numpy(dtype=float)
    else:
        values = np.full(raw.shape[0], np.nan)
        for i in np.flatnonzero(~missing):
            try:
                values[i] = float(raw[i])
            except (TypeError, ValueError):
                pass
    bad = ~missing & np.isnan(values)
    n_filled = int((~missing).sum())
    if n_filled == 0 or 2 * int(bad.sum()) >= n_filled:
        return None, None
    return values, bad


def _cells_phrase(n: int) -> str:
    return "1 cell that is not a number" if n == 1 else f"{n} cells that are not numbers"


def _bad_cell_listing(cells, bad) -> str:
    """``row 18 ('n.a')`` or ``rows 18 ('n.a'), 40 ('?') and 2 more``: the cells marked
    ``bad``, rows counted from 1 after the header."""
    raw = np.asarray(cells, dtype=object)
    rows = np.flatnonzero(bad)
    shown = ", ".join(f"{i + 1} ({str(raw[i])!r})" for i in rows[:SHOWN_BAD_CELLS])
    more = f" and {rows.size - SHOWN_BAD_CELLS} more" if rows.size > SHOWN_BAD_CELLS else ""
    return f"row{'s' if rows.size > 1 else ''} {shown}{more}"


def read_table(path: str) -> Table:
    """Read a CSV or Parquet file (by extension; anything else is read as CSV)."""
    if not os.path.isfile(path):
        raise CLIError(f"cannot read {path}: no such file")
    pd = _pandas()
    parquet = path.lower().endswith((".parquet", ".pq"))
    try:
        if parquet:
            try:
                import pyarrow.parquet as pq
            except ImportError:
                raise CLIError("reading Parquet needs pyarrow: pip install silva[frames]") \
                    from None
            table = pq.read_table(path)
            if pd is not None:
                frame = table.to_pandas()
                return Table(path, [str(c) for c in frame.columns], frame=frame,
                             source="Parquet")
            columns = {name: table.column(name).to_numpy(zero_copy_only=False)
                       for name in table.column_names}
            return Table(path, list(columns), columns=columns, source="Parquet")
        if pd is not None:
            frame = pd.read_csv(path)
            frame.columns = [str(c) for c in frame.columns]
            return Table(path, list(frame.columns), frame=frame)
        with open(path, newline="", encoding="utf-8") as file:
            rows = list(csv.reader(file))
    except CLIError:
        raise
    except Exception as error:  # parser errors of pandas, pyarrow and csv differ
        kind = "Parquet" if parquet else "CSV"
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
        raise CLIError(f"cannot read {path} as {kind}: {message}") from None
    if not rows:
        raise CLIError(f"cannot read {path} as CSV: the file is empty")
    header, body = rows[0], rows[1:]
    if any(len(row) != len(header) for row in body):
        raise CLIError(f"cannot read {path} as CSV: rows have different numbers of fields")
    columns = {name: _plain_column([row[j] for row in body]) for j, name in enumerate(header)}
    return Table(path, list(header), columns=columns)


def infer_task(y: np.ndarray) -> tuple[str, str]:
    """("classification" or "regression", the reason in words) for the target ``y``."""
    y = np.asarray(y)
    if y.dtype.kind not in "iuf":
        return "classification", f"non-numeric values ({y.dtype})"
    values = y.astype(float)
    values = values[np.isfinite(values)]
    distinct = np.unique(values)
    if values.size and np.all(distinct == np.round(distinct)) and \
            distinct.size <= MAX_INTEGER_CLASSES:
        return "classification", f"{distinct.size} distinct integer values"
    return "regression", f"{distinct.size} distinct numeric values"


def _load_model(path, allow_pickle=False):
    from silva.persistence import load, read_metadata

    if not os.path.isfile(path):
        raise CLIError(f"cannot read model {path}: no such file")
    try:
        model = load(path, allow_pickle=allow_pickle)
        metadata = read_metadata(path)
    except ValueError as error:
        hint = " (pass --allow-pickle for a file you trust)" if "allow_pickle" in str(error) \
            else ""
        raise CLIError(f"cannot load model {path}: {error}{hint}") from None
    return model, (metadata.get("user") or {})


def _feature_names(model, info):
    names = info.get("features")
    if names is None and getattr(model, "feature_names_in_", None) is not None:
        names = [str(n) for n in model.feature_names_in_]
    if names is None:
        raise CLIError("the model file does not record its feature columns; save it with "
                       "silva fit")
    return names


def describe_columns(table, roles) -> str:
    """A table of the columns of ``table``: name, type as read, missing cells, and the
    role given in ``roles`` (``"not used"`` for the others)."""
    rows = [[name, table.kind(name), str(table.n_missing(name)),
             roles.get(name, "not used")] for name in table.names]
    return _table(["column", "read as", "missing", "role"], rows, right={2})


def summarize_columns(table) -> str:
    """One line: rows, and columns by type as read, naming those that are not numbers."""
    by_kind: dict[str, list[str]] = {}
    for name in table.names:
        by_kind.setdefault(table.kind(name), []).append(name)
    parts = []
    for kind, names in by_kind.items():
        part = f"{len(names)} {kind}"
        if kind not in ("integer", "float"):
            shown = ", ".join(repr(n) for n in names[:5])
            part += f" ({shown}{', ...' if len(names) > 5 else ''})"
        parts.append(part)
    return (f"read {table.path} ({table.source}): {table.n_rows} rows, {len(table.names)} "
            f"columns: {', '.join(parts)}")


def settle_columns(args, table, names, roles, report=None):
    """Settle the types of the columns ``names`` (``--bad-cells``) and say what was read.

    Notes on cells read as missing go to stderr, as warnings do. The summary line goes
    to ``report`` when one is given (``fit``, whose stdout is a report) and, with
    ``--verbose``, the column table too; ``predict`` and ``evaluate``, whose stdout is
    their result, print both on stderr with ``--verbose`` only.
    """
    notes = table.check_cells(names, args.bad_cells)
    if report is None and args.verbose:
        report = sys.stderr
    if report is not None:
        print(summarize_columns(table), file=report)
        if args.verbose:
            print(describe_columns(table, roles), file=report)
    for note in notes:
        print(f"silva {args.command}: note: {note}", file=sys.stderr)


def _check_target(y, name, table, purpose):
    """A clear error when target cells are missing (every row needs one to ``purpose``)."""
    y = np.asarray(y)
    missing = np.isnan(y) if y.dtype.kind == "f" else \
        np.array([_is_missing_cell(v) for v in y], dtype=bool)
    if missing.any():
        rows = np.flatnonzero(missing)
        shown = ", ".join(str(i + 1) for i in rows[:SHOWN_BAD_CELLS])
        more = f" and {rows.size - SHOWN_BAD_CELLS} more" if rows.size > SHOWN_BAD_CELLS \
            else ""
        raise CLIError(f"target column {name!r} of {table.path} is missing in "
                       f"{rows.size} row{'s' if rows.size > 1 else ''} (row"
                       f"{'s' if rows.size > 1 else ''} {shown}{more}); every row needs a "
                       f"target to {purpose}: fill or drop those rows")


def _predict(model, X, proba):
    try:
        if proba:
            if not hasattr(model, "predict_proba"):
                raise CLIError(f"{type(model).__name__} has no predict_proba (--proba is for "
                               "classifiers)")
            return model.predict_proba(X)
        return model.predict(X)
    except (ValueError, TypeError) as error:
        raise CLIError(f"cannot predict: {error}") from None


# Members of the voting and stacking ensembles built by ``--model vote|stack`` (those
# whose modules are present), each with its defaults and random_state=0.
ENSEMBLE_MEMBERS = ("tree", "rf", "gbm")


def _construct(cls, task):
    """``cls()``, or for a meta-estimator that needs ``estimators`` (voting, stacking),
    ``cls(estimators=[...])`` with the available :data:`ENSEMBLE_MEMBERS`."""
    import inspect

    parameter = inspect.signature(cls).parameters.get("estimators")
    if parameter is None or parameter.default is not inspect.Parameter.empty:
        return cls()
    members = []
    for name in ENSEMBLE_MEMBERS:
        try:
            member = resolve_model(name, task)()
        except CLIError:
            continue
        if "random_state" in member.get_params(deep=False):
            member.set_params(random_state=RANDOM_STATE)
        members.append((name, member))
    return cls(estimators=members)


# ---------------------------------------------------------------------------- commands


def command_fit(args, out) -> int:
    table = read_table(args.data)
    table.check_columns([args.target])
    settle_columns(args, table, table.names,
                   {name: "target" if name == args.target else "feature"
                    for name in table.names}, report=out)
    y = table.column(args.target)
    _check_target(y, args.target, table, "fit")
    task, reason = args.task, "--task"
    if task is None:
        task, reason = infer_task(y)
    cls = resolve_model(args.model, task)
    estimator = _construct(cls, task)
    params = dict(args.param or [])
    valid = estimator.get_params(deep=False)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise CLIError(f"unknown parameter{'s' if len(unknown) > 1 else ''} {unknown} for "
                       f"{cls.__name__}; valid: {', '.join(sorted(valid))}")
    # Reproducible by default; categorical text columns used as categories by default.
    if "random_state" in valid and "random_state" not in params:
        params["random_state"] = RANDOM_STATE
    if "categorical_features" in valid and "categorical_features" not in params \
            and table.frame is not None:
        params["categorical_features"] = "auto"
    estimator.set_params(**params)
    features = [name for name in table.names if name != args.target]
    if not features:
        raise CLIError(f"{args.data} has no feature columns besides the target")
    X = table.features(features)
    if "categorical_features" not in valid and table.frame is not None:
        text = [name for name in features
                if table.frame[name].dtype.kind not in "biuf"]
        if text:
            raise CLIError(f"{cls.__name__} takes numeric columns only, and {text} are not "
                           "numeric; encode them first or pick a model that takes "
                           "categorical columns (tree, id3, c45, rf, et, gbm)")
    if task == "regression":
        try:
            y = y.astype(float)
        except (TypeError, ValueError):
            raise CLIError(f"target {args.target!r} is not numeric; use --task "
                           "classification") from None
    start = time.perf_counter()
    try:
        estimator.fit(X, y)
    except (ValueError, TypeError) as error:
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(args.param or [])) or "defaults"
        raise CLIError(f"cannot fit {cls.__name__} ({shown}): {error}") from None
    seconds = time.perf_counter() - start
    from silva.persistence import save

    metadata = {"target": args.target, "task": task, "features": features,
                "model": args.model, "data": os.path.basename(args.data)}
    try:
        save(estimator, args.out, metadata=metadata, allow_pickle=args.allow_pickle)
    except (OSError, ValueError) as error:
        hint = "" if args.allow_pickle else " (add --allow-pickle to store it with pickle)"
        raise CLIError(f"cannot write {args.out}: {error}"
                       f"{hint if 'non-silva' in str(error) else ''}") from None
    n_categorical = int(np.sum(getattr(estimator, "is_categorical_", [])))
    metric, score = _score(estimator, X, y)
    print(f"{cls.__name__}: {task} of {args.target!r} ({reason}), {table.n_rows} rows, "
          f"{len(features)} features ({n_categorical} categorical); fit in {seconds:.2f} s; "
          f"training {metric} {score:.4f}; saved to {args.out}", file=out)
    return 0


def _write_csv(header, rows, file):
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


def command_predict(args, out) -> int:
    model, info = _load_model(args.model, args.allow_pickle)
    table = read_table(args.data)
    names = _feature_names(model, info)
    table.check_columns(names, what="feature column")
    settle_columns(args, table, names, dict.fromkeys(names, "feature"))
    X = table.features(names)
    predicted = _predict(model, X, args.proba)
    if args.proba:
        header = [f"proba_{c}" for c in np.asarray(model.classes_).tolist()]
        rows = [[repr(float(p)) for p in row] for row in predicted]
    else:
        header = ["prediction"]
        rows = [[value] for value in np.asarray(predicted).tolist()]
    if args.out is None:
        _write_csv(header, rows, out)
        return 0
    try:
        if args.out.lower().endswith((".parquet", ".pq")):
            import pyarrow as pa
            import pyarrow.parquet as pq

            values = predicted if args.proba else np.asarray(predicted)[:, None]
            columns = {name: np.asarray(values)[:, j].tolist() for j, name in enumerate(header)}
            pq.write_table(pa.table(columns), args.out)
        else:
            with open(args.out, "w", newline="", encoding="utf-8") as file:
                _write_csv(header, rows, file)
    except (OSError, ImportError) as error:
        raise CLIError(f"cannot write {args.out}: {error}") from None
    return 0


def evaluation_metrics(model, X, y) -> list[tuple[str, float]]:
    """(name, value) pairs: accuracy, balanced accuracy, macro F1, log loss and ROC AUC
    for classifiers; R2, RMSE and MAE for regressors."""
    from sklearn import metrics

    predicted = _predict(model, X, proba=False)
    if not is_classifier(model):
        y = np.asarray(y, dtype=float)
        return [("R2", metrics.r2_score(y, predicted)),
                ("RMSE", float(np.sqrt(metrics.mean_squared_error(y, predicted)))),
                ("MAE", metrics.mean_absolute_error(y, predicted))]
    rows = [("accuracy", metrics.accuracy_score(y, predicted)),
            ("balanced accuracy", metrics.balanced_accuracy_score(y, predicted)),
            ("F1 (macro)", metrics.f1_score(y, predicted, average="macro"))]
    if hasattr(model, "predict_proba"):
        proba = _predict(model, X, proba=True)
        classes = np.asarray(model.classes_)
        if set(np.unique(y).tolist()) <= set(classes.tolist()):
            rows.append(("log loss", metrics.log_loss(y, proba, labels=classes)))
            if len(classes) == 2 and len(np.unique(y)) == 2:
                rows.append(("ROC AUC", metrics.roc_auc_score(y == classes[1], proba[:, 1])))
    return rows


def command_evaluate(args, out) -> int:
    model, info = _load_model(args.model, args.allow_pickle)
    table = read_table(args.data)
    target = args.target or info.get("target")
    if target is None:
        raise CLIError("give the target column with --target")
    names = _feature_names(model, info)
    table.check_columns([target])
    table.check_columns(names, what="feature column")
    roles = dict.fromkeys(names, "feature")
    roles[target] = "target"
    settle_columns(args, table, [*names, target] if target not in names else names, roles)
    y = table.column(target)
    _check_target(y, target, table, "be scored")
    X = table.features(names)
    try:
        rows = evaluation_metrics(model, X, y)
    except (ValueError, TypeError) as error:
        raise CLIError(f"cannot evaluate: {error}") from None
    print(f"{type(model).__name__} on {args.data} ({table.n_rows} rows, target "
          f"{target!r})", file=out)
    print(file=out)
    print(_table(["metric", "value"], [[name, f"{value:.4f}"] for name, value in rows],
                 right={1}), file=out)
    return 0


def command_show(args, out) -> int:
    from silva.persistence import read_metadata

    model, info = _load_model(args.model, args.allow_pickle)
    meta = read_metadata(args.model)
    versions = meta.get("versions", {})
    print(f"{type(model).__name__} (model file format {meta.get('format_version')}, written "
          f"by silva {versions.get('silva', '?')})", file=out)
    if info:
        print(f"task: {info.get('task')} of {info.get('target')!r}, fitted on "
              f"{info.get('data')}", file=out)
    print(f"parameters: {describe_params(model)}", file=out)
    names = getattr(model, "feature_names_in_", None)
    names = [str(n) for n in names] if names is not None else info.get("features")
    n_features = getattr(model, "n_features_in_", None)
    if n_features is not None:
        shown = "" if names is None else ": " + ", ".join(names[:20]) + \
            (", ..." if len(names) > 20 else "")
        print(f"features: {n_features}{shown}", file=out)
        mask = getattr(model, "is_categorical_", None)
        if mask is not None and np.any(mask):
            categorical = [names[j] if names else str(j) for j in np.flatnonzero(mask)]
            print(f"categorical: {', '.join(categorical)}", file=out)
    classes = getattr(model, "classes_", None)
    if classes is not None:
        print(f"classes: {', '.join(str(c) for c in np.asarray(classes).tolist())}", file=out)
    trees = _trees(model)
    if not trees:
        print("not fitted", file=out)
        return 0
    print(f"trees: {len(trees)}, {sum(t.node_count for t in trees)} nodes, "
          f"{sum(t.n_leaves for t in trees)} leaves, depth up to "
          f"{max(t.max_depth for t in trees)}", file=out)
    try:
        importances = np.asarray(model.feature_importances_, dtype=float)
    except (AttributeError, ValueError):
        importances = None
    if importances is not None and importances.size:
        labels = names if names is not None else [f"feature_{j}" for j in
                                                  range(importances.size)]
        order = np.argsort(-importances, kind="stable")[:10]
        print(file=out)
        print(_table(["feature", "importance"],
                     [[labels[j], f"{importances[j]:.4f}"] for j in order], right={1}),
              file=out)
    print(file=out)
    print(f"first levels of the tree (depth <= {args.depth}):", file=out)
    print(tree_text(model, names, None, args.depth), end="", file=out)
    return 0


# -------------------------------------------------------------------------- the parser


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


PICKLE_SAVE_HELP = ("store non-silva parts of the model (e.g. the scikit-learn final "
                    "estimator of stacking) with pickle")
PICKLE_LOAD_HELP = ("load a model file that holds pickled non-silva parts; unpickling can "
                    "run code, so only for files you trust")


def _add_reading_options(parser):
    parser.add_argument(
        "--bad-cells", choices=BAD_CELLS, default="error",
        help="a CSV column of numbers (more than half of its non-empty cells) with cells "
             "that are not numbers: stop with an error naming them (error, the default), "
             "read them as missing values (missing), or read the column as text (text)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print on stderr how each column was read: its type, its "
                             "missing cells and its role")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="silva",
        description="silva: decision trees and tree ensembles on a numba engine, with the "
                    "scikit-learn API.",
        epilog="Errors exit with status 1, command-line usage errors with status 2.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    fit = sub.add_parser(
        "fit", help="fit a model on a CSV or Parquet file and save it",
        description="Fit a model on DATA (CSV or Parquet) to predict the column --target "
                    "from all the other columns, and save it to --out. Text, category and "
                    "bool columns are used as categorical features. The task is "
                    "classification when the target is not numeric or holds at most "
                    f"{MAX_INTEGER_CLASSES} distinct integers, else regression (--task "
                    "overrides). random_state defaults to 0.")
    fit.add_argument("data", metavar="DATA", help="CSV or Parquet file")
    fit.add_argument("--target", required=True, metavar="COL", help="the column to predict")
    fit.add_argument("--model", default="tree", choices=list(MODELS),
                     help="model family (default: tree)")
    fit.add_argument("--param", action="append", type=parse_param, metavar="KEY=VALUE",
                     help="estimator parameter, repeatable; the value is a Python literal "
                          "(3, 0.5, None, [0, 2]) or else a string")
    fit.add_argument("--task", choices=TASKS, help="override the inferred task")
    fit.add_argument("--out", required=True, metavar="MODEL", help="model file to write")
    fit.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_SAVE_HELP)
    _add_reading_options(fit)

    predict = sub.add_parser(
        "predict", help="predict with a saved model",
        description="Predict every row of DATA with MODEL; writes CSV (one row per input "
                    "row) to stdout or to --out (Parquet when it ends in .parquet). Columns "
                    "are matched by name; extra columns, such as the target, are ignored.")
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("data", metavar="DATA")
    predict.add_argument("--proba", action="store_true",
                         help="class probabilities (classifiers), one column per class")
    predict.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    predict.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_LOAD_HELP)
    _add_reading_options(predict)

    evaluate = sub.add_parser(
        "evaluate", help="score a saved model on labelled data",
        description="Print a table of metrics of MODEL on DATA: accuracy, balanced "
                    "accuracy, macro F1, log loss and ROC AUC (binary) for classifiers; R2, "
                    "RMSE and MAE for regressors.")
    evaluate.add_argument("model", metavar="MODEL")
    evaluate.add_argument("data", metavar="DATA")
    evaluate.add_argument("--target", metavar="COL",
                          help="the true values (default: the target the model was fitted on)")
    evaluate.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_LOAD_HELP)
    _add_reading_options(evaluate)

    show = sub.add_parser(
        "show", help="describe a saved model",
        description="Print the model's class, parameters, features, classes, tree sizes, "
                    "largest feature importances and the first levels of its (first) tree.")
    show.add_argument("model", metavar="MODEL")
    show.add_argument("--depth", type=_non_negative_int, default=2, metavar="N",
                      help="levels of the tree to print (default: 2)")
    show.add_argument("--allow-pickle", action="store_true",
                     help=PICKLE_LOAD_HELP)

    compile_ = sub.add_parser(
        "compile", help="compile silva's kernels ahead of time (for images, CI, labs)",
        description="Fit each chosen estimator on a few rows in parallel worker processes, "
                    "so that numba's on-disk cache holds its compiled kernels and later "
                    "first fits on this machine start at once (see silva.compile).")
    compile_.add_argument("estimators", nargs="*", metavar="ESTIMATOR",
                          help="estimator class names (default: all of them)")
    compile_.add_argument("--jobs", type=_non_negative_int, metavar="N",
                          help="worker processes (default: the number of CPUs)")

    demo = sub.add_parser(
        "demo",
        help="train silva's models on datasets shipped with scikit-learn and print a summary",
        description=(
            "Fit silva's estimators on breast_cancer, digits and diabetes (fixed 75/25 "
            "split, random_state=0), print test scores, fit times and tree sizes, then "
            "print the top of one fitted tree."
        ),
    )
    demo.add_argument(
        "--max-depth-shown",
        type=_non_negative_int,
        default=3,
        metavar="N",
        help="depth of the printed tree; deeper branches are truncated (default: 3)",
    )
    demo.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="do not fit each estimator once before timing (times then include JIT compile)",
    )
    demo.add_argument("--plots", metavar="DIR",
                      help="also write PNG plots (importances, trees, learning curves, "
                           "decision boundaries) into DIR; needs matplotlib")
    return parser


def command_compile(args, out):
    """``silva compile``: :func:`silva.compile` with its timings on ``out``."""
    from silva._warmup import compile as compile_kernels

    start = time.perf_counter()
    compile_kernels(args.estimators or None, n_jobs=args.jobs or None, verbose=True)
    print(f"compiled in {time.perf_counter() - start:.1f} s; later first fits on this "
          "machine load the cache", file=out)
    return 0


COMMANDS = {"fit": command_fit, "predict": command_predict, "evaluate": command_evaluate,
            "show": command_show, "compile": command_compile}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``silva`` command line; returns the process exit code."""
    args = build_parser().parse_args(argv)
    out = sys.stdout
    try:
        if args.command == "demo":
            run_demo(max_depth_shown=args.max_depth_shown, warm_up=args.warm_up,
                     plots_dir=args.plots)
            return 0
        return COMMANDS[args.command](args, out)
    except CLIError as error:
        print(f"silva {args.command}: error: {error}", file=sys.stderr)
        return 1
    except ImportError as error:  # an optional dependency (matplotlib, pyarrow)
        print(f"silva {args.command}: error: {error}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as error:
        # silva and scikit-learn report bad input this way; a user of the command line
        # gets the message, not a traceback (its first line: the rest is detail).
        message = str(error).strip().splitlines()[0] if str(error).strip() else \
            type(error).__name__
        print(f"silva {args.command}: error: {message}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (``silva predict ... | head``): stop quietly, as Unix tools
        # do, and keep Python from complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
