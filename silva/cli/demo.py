"""``silva demo``: silva's estimators fitted on datasets that ship with scikit-learn.

The demo is driven by :data:`DEMO_ENTRIES`, a list of :class:`DemoEntry` records
``(dataset, name, factory)``; adding a model to the demo is a matter of appending an entry
(and a loader to :data:`DATASETS` for a new dataset).
"""

from __future__ import annotations

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
from sklearn.model_selection import train_test_split

from silva import DecisionTreeClassifier, DecisionTreeRegressor
from silva.cli.describe import describe_params, model_trees, score_of, text_table, tree_text
from silva.cli.models import RANDOM_STATE

__all__ = ["DATASETS", "DEMO_ENTRIES", "Dataset", "DemoEntry", "load_dataset", "run_demo",
           "write_demo_plots"]


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


def _depth(est):
    """Depth of a tree; for an ensemble, of its deepest tree."""
    if hasattr(est, "get_depth"):
        return int(est.get_depth())
    return max((tree.max_depth for tree in model_trees(est)), default=0)


def _leaves(est):
    """Leaves of a tree; for an ensemble, summed over its trees."""
    if hasattr(est, "get_n_leaves"):
        return int(est.get_n_leaves())
    return sum(tree.n_leaves for tree in model_trees(est))


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


WARM_UP_ROWS = 64


def _warm_up_slice(data: Dataset):
    """The training rows a warm-up fits: the first :data:`WARM_UP_ROWS`."""
    n = min(len(data.y_train), WARM_UP_ROWS)
    return data.X_train[:n], data.y_train[:n]


def _warm_up(factory, data: Dataset) -> float:
    """Fit once on a small slice so one-off JIT compilation is not counted as fit time."""
    start = time.perf_counter()
    factory().fit(*_warm_up_slice(data))
    return (time.perf_counter() - start) * 1000.0


def _compiled_variant(entry: DemoEntry, estimator) -> tuple:
    """What decides the kernels ``entry``'s fit compiles: the estimator's type, its
    criterion and the dataset (boosting compiles one loss per kind of target)."""
    return type(estimator), getattr(estimator, "criterion", None), entry.dataset


def _compile_in_workers(entries, datasets, n_jobs=None) -> None:
    """Compile the kernels of the demo ``entries`` in worker processes, in parallel, into
    numba's on-disk cache, where this process then finds them (see
    :func:`silva._warmup.fit_in_workers`); ``datasets`` maps their datasets' names to
    the loaded datasets.

    numba compiles on one core; the demo's cold first run compiled its models one
    after the other: 118-129 s on a 2-core AMD Zen 3, beyond the 90 s it is meant to
    take; 85 s with two workers after a first warm-up here, 78 s with every variant in
    the workers. Each worker does what this process's warm-up and scoring would: fits
    the entry's estimator on the warm-up slice, and predicts with it.
    """
    from silva._warmup import fit_in_workers

    jobs = [[(entry.factory(), *_warm_up_slice(datasets[entry.dataset]))]
            for entry in entries]
    jobs.sort(key=lambda job: _compile_rank(job[0][0]))
    fit_in_workers(jobs, n_jobs)


def _compile_rank(estimator) -> int:
    """When a worker of :func:`_compile_in_workers` should compile ``estimator``'s
    kernels: 0, first, for the families with grower copies of their own (extra trees'
    rows-only copy, boosting's gradient grower: 11-20 s each on AMD Zen 3), so that the
    last jobs are short and the workers finish together (one started last kept its
    worker 14 s after the other was done); 2, last, for the models that combine others
    (voting, stacking), whose kernels are then mostly cached; 1 otherwise."""
    if "estimators" in estimator.get_params(deep=False):
        return 2
    name = type(estimator).__name__
    return 0 if name.startswith(("ExtraTrees", "GradientBoosting")) else 1


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
        Fit each (estimator type, criterion, dataset) once on a small slice before
        timing it. When numba's cache is cold (its marker missing, see
        :func:`silva._warmup.cache_seems_cold`, or the first of those fits compiling)
        and the machine has several CPUs, their kernels are first compiled in parallel
        worker processes (:func:`_compile_in_workers`).
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
    for entry in entries:
        if entry.dataset not in datasets:
            datasets[entry.dataset] = load_dataset(entry.dataset)
    # The engine compiles one split search per criterion, and boosting one loss per kind
    # of target (binary, multiclass): warm up per (type, criterion, dataset).
    variants = {}
    for entry in entries:
        variants.setdefault(_compiled_variant(entry, entry.factory()), entry)
    warmed: set[tuple] = set()
    if warm_up and len(variants) > 1 and (os.cpu_count() or 1) > 1:
        # On a cold numba cache the variants compile in parallel worker processes
        # before their warm-ups here, which then load what the workers cached. Cold:
        # the cache's marker says so (every variant goes to the workers), or, the marker
        # found, the first warm-up compiled (the others go).
        from silva._warmup import cache_seems_cold, count_silva_compiles

        if cache_seems_cold():
            to_compile = list(variants.values())
        else:
            (first_variant, first_entry), *others = variants.items()
            compiled = count_silva_compiles(
                lambda: _warm_up(first_entry.factory, datasets[first_entry.dataset]))
            warmed.add(first_variant)
            to_compile = [entry for _, entry in others] if compiled else []
        if to_compile:
            sys.stderr.write(f"silva demo: compiling the kernels of {len(to_compile)} "
                             f"models in {min(os.cpu_count(), len(to_compile))} processes "
                             "(once per machine)\n")
            sys.stderr.flush()
            _compile_in_workers(to_compile, datasets)
    results: list[dict] = []
    fitted = []
    for entry in entries:
        data = datasets[entry.dataset]
        est = entry.factory()
        compiled_variant = _compiled_variant(entry, est)
        if warm_up and compiled_variant not in warmed:
            _warm_up(entry.factory, data)
            warmed.add(compiled_variant)
        start = time.perf_counter()
        est.fit(data.X_train, data.y_train)
        fit_ms = (time.perf_counter() - start) * 1000.0
        metric, score = score_of(est, data.X_test, data.y_test)
        results.append(
            {
                "dataset": entry.dataset,
                "model": entry.name,
                "params": describe_params(est),
                "metric": metric,
                "score": score,
                "fit_ms": fit_ms,
                "n_trees": len(model_trees(est)),
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
    print(text_table(headers, rows, right={4, 5, 6, 7, 8}), file=out)

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
