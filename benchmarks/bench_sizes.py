"""Every size: silva's fit and predict times against its peers, from 1,000 rows to a million.

One run times every family of estimators on every dataset, each measurement in its own
fresh Python process, so that no library profits from another's warm caches, threads or
memory:

* data: ``bench_boosting.py``'s synthetic tasks (binary, 10-class, regression; 28
  features; 80/20 split) at each of ``--sizes`` rows, and the small real sets shipped with
  scikit-learn (breast cancer, digits, wine, diabetes; 80/20 split), written once to
  ``.npy`` files that every process loads;
* families and peers: gradient boosting (silva's ``GradientBoosting*`` against LightGBM,
  XGBoost and scikit-learn's ``HistGradientBoosting*``: 100 iterations, 31 leaves, lr 0.1,
  255 bins, no sampling, as ``bench_boosting.py`` sets them), random forests and extra
  trees (100 fully grown trees), bagging (10 fully grown trees, both libraries' default),
  AdaBoost (100 stumps) and single fully grown trees, each against scikit-learn's class of
  the same name. Every library gets the same threads (``--threads``: ``n_jobs``, numba's
  and OpenMP's thread counts); ``--default-jobs`` leaves the forests' and bagging's
  ``n_jobs`` at their default (one job), as a user who sets nothing has them;
* in each process: an untimed warm-up fit and predict of the same model on a small sample
  of the same data (imports, numba's compilation or cache loading, thread pools), then
  ``--repeat`` fits of a fresh model, and more while they have taken under
  ``SHORT_FIT_BUDGET_S`` in all, up to ``SHORT_FIT_MAX_FITS`` (a fit of a millisecond or
  two varies by a third from one to the next). The fastest is kept: with two fits or
  more, a kernel first reached above the warm-up's size, loaded from numba's cache in the
  first fit, does not count. Then predicting the test set ``--repeat`` times (the fastest kept) and
  one row at a time (the median of many calls).

Each family gets a fit table and a predict table: every library's time, silva / the faster
peer (the faster of LightGBM and XGBoost for boosting, scikit-learn for the others), the
target of the issue "Fastest at every size" beside it and whether it is met. A measurement
that fails or runs out of ``--max-seconds`` shows as ``–`` with the reason below the table.

Usage::

    .venv/bin/python benchmarks/bench_sizes.py                                # everything
    .venv/bin/python benchmarks/bench_sizes.py --sizes 1000 2000 --repeat 1  # a short run
    .venv/bin/python benchmarks/bench_sizes.py --families boosting tree --real-sets digits
    .venv/bin/python benchmarks/bench_sizes.py --max-seconds 600 --write-results
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _machine import RESULTS_PATH, append_results, command_line, machine_line, utc_now
from bench_boosting import SHAPES, Shape, available, boosting_target, faster_peer
from bench_boosting import _data as synthetic_data
from bench_boosting import _models as boosting_models

SIZES = [1_000, 2_000, 5_000, 20_000, 100_000, 1_000_000]
TASKS = ["binary", "multiclass", "regression"]
REAL_SETS = {"breast_cancer": "binary", "digits": "multiclass", "wine": "multiclass",
             "diabetes": "regression"}
WARM_UP_ROWS = 2_000
# Predicting one row with a 100-tree boosting model took 0.14 ms against XGBoost's 0.22 ms
# when the issue was filed; it asks to stay at least that far ahead, for every estimator.
ONE_ROW_TARGET = 0.64


def _fit_target_half(_n_rows):
    # Forests, bagging, AdaBoost and single trees: half scikit-learn's time at every size.
    return 0.5


@dataclass(frozen=True)
class Family:
    """A kind of estimator, the libraries timed for it and its fit target by size."""

    libraries: tuple
    fit_target: Callable[[int], float | None]  # n_rows -> largest silva / faster peer, or None


FAMILIES = {
    "boosting": Family(("silva", "lightgbm", "xgboost", "sklearn"), boosting_target),
    "random-forest": Family(("silva", "sklearn"), _fit_target_half),
    "extra-trees": Family(("silva", "sklearn"), _fit_target_half),
    "bagging": Family(("silva", "sklearn"), _fit_target_half),
    "adaboost": Family(("silva", "sklearn"), _fit_target_half),
    "tree": Family(("silva", "sklearn"), _fit_target_half),
}
# scikit-learn's class for each family (silva's have the same names, but for boosting).
SKLEARN_CLASS = {"boosting": "HistGradientBoosting", "random-forest": "RandomForest",
                 "extra-trees": "ExtraTrees", "bagging": "Bagging", "adaboost": "AdaBoost",
                 "tree": "DecisionTree"}


# ---------------------------------------------------------------- child (one measurement)
def make_model(family, library, task, threads, default_jobs=False):
    """A fresh, unfitted model of this family from this library, set up as the module's
    docstring says; with ``default_jobs`` forests and bagging keep their default
    ``n_jobs`` (None: one job)."""
    if family == "boosting":
        return boosting_models(task, [library], threads)[library]()
    suffix = "Regressor" if task == "regression" else "Classifier"
    if library == "silva":
        module = importlib.import_module("silva")
    else:
        module = importlib.import_module("sklearn.tree" if family == "tree"
                                         else "sklearn.ensemble")
    cls = getattr(module, SKLEARN_CLASS[family] + suffix)
    n_jobs = None if default_jobs else threads
    if family in ("random-forest", "extra-trees"):
        return cls(n_estimators=100, n_jobs=n_jobs, random_state=0)
    if family == "bagging":
        return cls(n_estimators=10, n_jobs=n_jobs, random_state=0)
    if family == "adaboost":
        tree_module = module if library == "silva" else importlib.import_module("sklearn.tree")
        stump = getattr(tree_module, "DecisionTree" + suffix)(max_depth=1)
        return cls(stump, n_estimators=100, random_state=0)
    return cls(random_state=0)


def _one_row_seconds(predict, row, budget_s=0.5, max_calls=200):
    # The median of many calls: one call takes well under a millisecond for some models,
    # and a single slow call (the machine busy elsewhere) should not decide the figure.
    times = []
    spent = 0.0
    while len(times) < 5 or (spent < budget_s and len(times) < max_calls):
        start = time.perf_counter()
        predict(row)
        times.append(time.perf_counter() - start)
        spent += times[-1]
    return statistics.median(times)


# Short fits are repeated beyond --repeat, the same for every library, until they have
# taken this long in all (or this many fits): the best of three fits of a millisecond
# differed by 30% from one run to the next.
SHORT_FIT_BUDGET_S = 0.3
SHORT_FIT_MAX_FITS = 50


def run_child(family, library, task, data_dir, threads, repeat, default_jobs=False):
    """Time one library's model on one dataset; print one JSON line."""
    from sklearn.metrics import accuracy_score, r2_score

    data = Path(data_dir)
    X, y = np.load(data / "X_train.npy"), np.load(data / "y_train.npy")
    X_test, y_test = np.load(data / "X_test.npy"), np.load(data / "y_test.npy")
    row = np.ascontiguousarray(X_test[:1])

    warm = make_model(family, library, task, threads, default_jobs)
    warm.fit(X[:WARM_UP_ROWS], y[:WARM_UP_ROWS])
    warm.predict(row)
    warm.predict(X_test)
    del warm

    fit_s = float("inf")
    spent = 0.0
    n_fits = 0
    while n_fits < repeat or (spent < SHORT_FIT_BUDGET_S and n_fits < SHORT_FIT_MAX_FITS):
        model = make_model(family, library, task, threads, default_jobs)
        start = time.perf_counter()
        model.fit(X, y)
        elapsed = time.perf_counter() - start
        fit_s = min(fit_s, elapsed)
        spent += elapsed
        n_fits += 1
    predict_s = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        prediction = model.predict(X_test)
        predict_s = min(predict_s, time.perf_counter() - start)
    one_row_s = _one_row_seconds(model.predict, row)
    score = (r2_score if task == "regression" else accuracy_score)(y_test, prediction)
    # Boosting that stops early (AdaBoost on a learner whose error reaches one half)
    # fits fewer rounds than asked: the count says what the fit time paid for.
    rounds = len(getattr(model, "estimators_", ())) or None
    print(json.dumps({"fit_s": fit_s, "predict_s": predict_s, "one_row_s": one_row_s,
                      "score": float(score), "rounds": rounds}))


# ------------------------------------------------------------------------------ runner
@dataclass(frozen=True)
class Dataset:
    name: str
    task: str
    n_rows: int  # train and test together: the size the targets speak of
    n_features: int = 28  # of the synthetic data (14 of them informative)


def datasets(args):
    """The real sets asked for (small first), then the synthetic ones by size."""
    out = [Dataset(name, REAL_SETS[name], 0) for name in args.real_sets]
    width = "" if args.features == 28 else f" x {args.features:,}"
    out += [Dataset(f"{task} {size:,}{width}", task, size, args.features)
            for size in sorted(args.sizes) for task in args.tasks]
    return out


def _shape_of_width(n_features):
    """The synthetic data's shape for ``n_features`` columns: the base data at 28,
    ``bench_boosting.py``'s shape of that width where it has one (8 and 200 features),
    else the base data at that width with at most 14 informative features and no more
    than ``make_classification`` allows beside its two redundant ones."""
    if n_features == 28:
        return SHAPES["base"]
    name = f"features-{n_features}"
    return SHAPES.get(name) or Shape(name, "", n_features=n_features,
                                     n_informative=max(1, min(14, n_features - 3)))


def write_data(dataset, directory):
    """Write the dataset's train/test split as .npy files; return it with its row count."""
    if dataset.n_rows:
        shape = _shape_of_width(dataset.n_features)
        parts = synthetic_data(dataset.task, dataset.n_rows, shape)
    else:
        from sklearn import datasets as sk_datasets
        from sklearn.model_selection import train_test_split

        X, y = getattr(sk_datasets, f"load_{dataset.name}")(return_X_y=True)
        parts = train_test_split(X.astype(np.float64), y, test_size=0.2, random_state=0)
        dataset = Dataset(dataset.name, dataset.task, len(X))
    for name, values in zip(("X_train", "X_test", "y_train", "y_test"), parts, strict=True):
        np.save(Path(directory) / f"{name}.npy", np.ascontiguousarray(values))
    return dataset, len(parts[0]), len(parts[1]), parts[0].shape[1]


def measure(family, library, dataset, directory, args, seconds_left):
    """Run one child; its result dict, or ``{"error": why}``."""
    if seconds_left is not None and seconds_left <= 0:
        return {"error": "skipped: --max-seconds reached"}
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               NUMBA_NUM_THREADS=str(args.threads), SILVA_COMPILE_NOTICE="0")
    command = [sys.executable, __file__, "--child", family, library, dataset.task, directory,
               str(args.threads), str(args.repeat), "default" if args.default_jobs else "threads"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env,
                                timeout=seconds_left, check=False)
    except subprocess.TimeoutExpired:
        return {"error": "stopped: --max-seconds reached"}
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"failed: {last[:200]}"}
    return json.loads(result.stdout.strip().splitlines()[-1])


def _three_digits(value):
    # Times span 1e-4 to 1e4 between the smallest data and the largest: three significant
    # digits, without an exponent.
    return f"{value:.0f}" if value >= 100 else f"{value:#.3g}"


def _mark(ratio, target):
    if ratio is None or target is None:
        return "–"
    return "yes" if ratio <= target else "**missed**"


def _ratio(values):
    """silva / the faster peer, or None when either is missing."""
    if "silva" not in values or len(values) < 2:
        return None
    return values["silva"] / faster_peer(values)


def _round_cells(ok, libraries):
    """The rounds each library fitted, and silva's fit time per round over the faster
    peer's (AdaBoost's table)."""
    rounds = {lib: ok[lib].get("rounds") for lib in libraries if lib in ok}
    counts = "; ".join("–" if rounds[lib] is None else str(rounds[lib]) for lib in rounds)
    per_round = {lib: ok[lib]["fit_s"] / rounds[lib] for lib in rounds if rounds[lib]}
    ratio = _ratio(per_round)
    return f" {counts} | {'–' if ratio is None else f'{ratio:.2f}x'} |"


def family_tables(family, libraries, measured):
    """Markdown: the family's fit table and predict table, and the notes on failures."""
    names = [("sklearn HGB" if family == "boosting" and lib == "sklearn" else lib)
             for lib in libraries]
    # AdaBoost stops when a round's error reaches one half, which happens after
    # different numbers of rounds in reweighting (silva's default) and resampling
    # (scikit-learn's regressor): the rounds and the time per round are shown beside.
    per_round = family == "adaboost"
    fit_lines = ["| data | train rows | " + " | ".join(f"{n} s" for n in names)
                 + " | silva / faster peer | target | met | score: silva; peers |"
                 + (" rounds: silva; peers | per round: silva / peer |" if per_round else ""),
                 "|---|---:|" + "---:|" * len(names) + "---:|---:|---|---|"
                 + ("---|---:|" if per_round else "")]
    predict_lines = ["| data | test rows | " + " | ".join(f"{n} test set ms" for n in names)
                     + " | ratio | " + " | ".join(f"{n} one row ms" for n in names)
                     + " | ratio | target | met |",
                     "|---|---:|" + "---:|" * (2 * len(names) + 3) + "---|"]
    notes = []
    for dataset, n_train, n_test, results in measured:
        ok = {lib: r for lib, r in results.items() if "error" not in r}
        for lib, r in results.items():
            if "error" in r:
                notes.append(f"- {dataset.name}, {lib}: {r['error']}")

        def cells(key, scale, ok=ok):
            return " | ".join(_three_digits(ok[lib][key] * scale) if lib in ok else "–"
                              for lib in libraries)

        def ratio_cell(key, ok=ok):
            ratio = _ratio({lib: r[key] for lib, r in ok.items()})
            text = ("–" if ratio is None else f"{ratio:.2f}x" if ratio >= 0.1
                    else f"{ratio:.3f}x")
            return ratio, text

        fit_ratio, fit_text = ratio_cell("fit_s")
        target = FAMILIES[family].fit_target(dataset.n_rows)
        scores = ", ".join(f"{ok[lib]['score']:.3f}" for lib in libraries
                           if lib in ok and lib != "silva")
        silva_score = f"{ok['silva']['score']:.3f}" if "silva" in ok else "–"
        scores = f"{silva_score}; {scores or '–'}"
        fit_lines.append(f"| {dataset.name} | {n_train:,} | {cells('fit_s', 1)} | "
                         f"{fit_text} | {'–' if target is None else f'<= {target}x'} | "
                         f"{_mark(fit_ratio, target)} | {scores} |"
                         + (_round_cells(ok, libraries) if per_round else ""))
        _, predict_text = ratio_cell("predict_s")
        row_ratio, row_text = ratio_cell("one_row_s")
        predict_lines.append(f"| {dataset.name} | {n_test:,} | {cells('predict_s', 1e3)} | "
                             f"{predict_text} | {cells('one_row_s', 1e3)} | {row_text} | "
                             f"<= {ONE_ROW_TARGET}x | {_mark(row_ratio, ONE_ROW_TARGET)} |")
    return "\n".join(fit_lines), "\n".join(predict_lines), notes


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--sizes", nargs="*", type=int, default=SIZES,
                        help="rows of the synthetic data, train and test together")
    parser.add_argument("--tasks", nargs="*", choices=TASKS, default=TASKS,
                        help="synthetic tasks (none: only the real sets)")
    parser.add_argument("--real-sets", nargs="*", choices=list(REAL_SETS),
                        default=list(REAL_SETS), help="scikit-learn's sets (none: skip them)")
    parser.add_argument("--features", type=int, default=28,
                        help="columns of the synthetic data (14 informative): wide data, "
                             "where a forest draws few of many features per node")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads for every library")
    parser.add_argument("--default-jobs", action="store_true",
                        help="forests and bagging keep their default n_jobs (None: one "
                             "job, as a user who sets nothing gets), numba and OpenMP "
                             "still --threads threads")
    parser.add_argument("--repeat", type=int, default=3,
                        help="fits (and test-set predictions) per measurement; the fastest "
                             "is kept")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop starting measurements after this long, and stop the one "
                             "running then; they show as '–'")
    parser.add_argument("--write-results", action="store_true",
                        help=f"append the tables to {RESULTS_PATH.name}")
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS,
                        metavar=("FAMILY", "LIBRARY", "TASK", "DATA_DIR", "THREADS", "REPEAT",
                                 "JOBS"))
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        family, library, task, data_dir, threads, repeat, jobs = args.child
        run_child(family, library, task, data_dir, int(threads), int(repeat),
                  default_jobs=jobs == "default")
        return
    started = time.perf_counter()
    load_before = os.getloadavg()
    libraries = {family: available([lib for lib in FAMILIES[family].libraries
                                    if lib != "sklearn"]) + ["sklearn"]
                 for family in args.families}
    measured = {family: [] for family in args.families}
    for dataset in datasets(args):
        with tempfile.TemporaryDirectory(prefix="silva-sizes-") as directory:
            dataset, n_train, n_test, n_features = write_data(dataset, directory)
            for family in args.families:
                results = {}
                for library in libraries[family]:
                    left = (None if args.max_seconds is None
                            else args.max_seconds - (time.perf_counter() - started))
                    results[library] = measure(family, library, dataset, directory, args, left)
                    r = results[library]
                    print(f"  {family}, {dataset.name} ({n_train:,} x {n_features}), "
                          f"{library}: " + (r["error"] if "error" in r else
                                            f"fit {r['fit_s']:.3f} s, predict "
                                            f"{r['predict_s'] * 1e3:.2f} ms, one row "
                                            f"{r['one_row_s'] * 1e3:.3f} ms, score "
                                            f"{r['score']:.4f}"), file=sys.stderr, flush=True)
                measured[family].append((dataset, n_train, n_test, results))
    sections = []
    for family in args.families:
        fit, predict, notes = family_tables(family, libraries[family], measured[family])
        sections.append(f"### {family}: fit\n\n{fit}\n\n### {family}: predict\n\n{predict}"
                        + ("\n\n" + "\n".join(notes) if notes else ""))
    elapsed = time.perf_counter() - started
    report = (f"## {utc_now()} — every size (bench_sizes.py)\n\n"
              f"- machine: {machine_line()}\n"
              f"- command: `{command_line('bench_sizes.py', argv)}`\n"
              f"- {args.threads} threads for every library"
              + (" (forests and bagging: their default n_jobs, one job)" if args.default_jobs
                 else "")
              + f", best of {args.repeat} fits (more, up "
              f"to {SHORT_FIT_MAX_FITS}, within {SHORT_FIT_BUDGET_S} s), each "
              f"measurement in its own process; load average before "
              f"{tuple(round(v, 2) for v in load_before)}, after "
              f"{tuple(round(v, 2) for v in os.getloadavg())}; {elapsed:.0f} s in all\n"
              f"- ratio: silva / the faster peer (boosting: of LightGBM and XGBoost; "
              f"otherwise scikit-learn); below 1, silva is faster. Scores: test accuracy "
              f"or R².\n\n" + "\n\n".join(sections) + "\n")
    print(report)
    if args.write_results:
        append_results(report)


if __name__ == "__main__":
    main()
