"""Command-line entry point: ``silva demo`` trains silva's trees on scikit-learn's datasets.

The demo is driven by :data:`DEMO_ENTRIES`, a list of :class:`DemoEntry` records
``(dataset, name, factory)``; adding a model to the demo is a matter of appending an entry
(and a loader to :data:`DATASETS` for a new dataset).
"""

from __future__ import annotations

import argparse
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

__all__ = ["DATASETS", "DEMO_ENTRIES", "DemoEntry", "main", "run_demo"]

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


DEMO_ENTRIES: list[DemoEntry] = [
    DemoEntry("breast_cancer", "DecisionTreeClassifier", _clf()),
    DemoEntry("breast_cancer", "DecisionTreeClassifier", _clf(max_depth=4)),
    DemoEntry("breast_cancer", "DecisionTreeClassifier", _clf(max_depth=4, criterion="entropy")),
    DemoEntry("digits", "DecisionTreeClassifier", _clf()),
    DemoEntry("digits", "DecisionTreeClassifier", _clf(max_depth=8, criterion="entropy")),
    DemoEntry("diabetes", "DecisionTreeRegressor", _reg()),
    DemoEntry("diabetes", "DecisionTreeRegressor", _reg(max_depth=4)),
    DemoEntry("diabetes", "DecisionTreeRegressor", _reg(max_depth=4, min_samples_leaf=10)),
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


def describe_params(estimator) -> str:
    """The parameters of ``estimator`` that differ from its defaults, as ``k=v`` pairs."""
    params = estimator.get_params(deep=False)
    try:
        defaults = type(estimator)().get_params(deep=False)
    except Exception:  # an estimator without a no-argument constructor
        defaults = {}
    shown = [
        f"{key}={value!r}"
        for key, value in sorted(params.items())
        if key != "random_state" and not _same(defaults.get(key, _MISSING), value)
    ]
    return ", ".join(shown) if shown else "defaults"


def _depth(est):
    if hasattr(est, "get_depth"):
        return int(est.get_depth())
    return int(est.tree_.max_depth)


def _leaves(est):
    if hasattr(est, "get_n_leaves"):
        return int(est.get_n_leaves())
    return int(est.tree_.n_leaves)


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
    """
    out = sys.stdout if out is None else out
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
                "n_leaves": _leaves(est),
                "depth": _depth(est),
            }
        )
        fitted.append(est)

    headers = ["dataset", "model", "params", "metric", "test score", "fit ms", "leaves", "depth"]
    rows = [
        [
            r["dataset"],
            r["model"],
            r["params"],
            r["metric"],
            f"{r['score']:.4f}",
            f"{r['fit_ms']:.1f}",
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
    print(_table(headers, rows, right={4, 5, 6, 7}), file=out)

    entry, est = entries[shown_entry], fitted[shown_entry]
    data = datasets[entry.dataset]
    print(file=out)
    print(
        f"Tree for {entry.dataset} / {entry.name} ({results[shown_entry]['params']}), "
        f"splits down to depth {max_depth_shown}:",
        file=out,
    )
    print(file=out)
    print(
        export_text(
            est,
            feature_names=data.feature_names,
            class_names=_class_names(est, data),
            max_depth=max_depth_shown,
        ),
        end="",
        file=out,
    )
    return results


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="silva",
        description="silva: decision trees on a numba engine, with the scikit-learn API.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    demo = sub.add_parser(
        "demo",
        help="train silva's trees on datasets shipped with scikit-learn and print a summary",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``silva`` command line; returns the process exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        run_demo(max_depth_shown=args.max_depth_shown, warm_up=args.warm_up)
    return 0


if __name__ == "__main__":
    sys.exit(main())
