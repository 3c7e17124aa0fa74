"""Forest benchmark: silva's random forests and extra trees against scikit-learn and YDF.

The issue's setting: 100 fully grown trees on 200,000 x 28 synthetic training rows
(``make_classification`` with 18 informative features, or ``make_regression``), then
predicting 200,000 held-out rows, with every core (``n_jobs=-1``; this machine has 2).

Each model runs in its own fresh Python process, one after the other in one invocation,
on the same data (written once to ``.npy`` files), so that

* fit and predict times are wall-clock times of one call, after an untimed warm-up fit on
  2,000 rows (numba compiles silva's kernels there; the others get the same warm-up);
* peak memory is the growth of the process's resident set during fit + predict: the
  kernel's high-water mark (``VmHWM``) is reset through ``/proc/self/clear_refs`` after the
  data is loaded and the warm-up is done, and read back at the end, minus the resident
  set before the fit. It counts everything the library allocates, native code included;
* quality is the test AUC (classification, from ``predict_proba``) or R² (regression).

Ratios compare with silva in the same run (``x silva`` > 1: slower or bigger than silva).

YDF (``ydf.RandomForestLearner``) is set up as the others: unlimited depth,
``min_examples=1``, no out-of-bag evaluation, two threads; for regression it considers all
features at each node like the others (``num_candidate_attributes_ratio=1``). YDF has no
extra-trees learner, so the extra-trees tables compare silva and scikit-learn only.

Usage::

    .venv/bin/python benchmarks/bench_forest.py                 # all three tables
    .venv/bin/python benchmarks/bench_forest.py --tables rf     # one table
    .venv/bin/python benchmarks/bench_forest.py --write-results # append to RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _machine import RESULTS_PATH, append_results, machine_line
from sklearn.datasets import make_classification, make_regression

N_FEATURES = 28
N_INFORMATIVE = 18
WARM_UP_ROWS = 2_000

# table -> (task, [(label, library, estimator kind)])
TABLES = {
    "rf": ("classification", [("silva", "silva", "rf"), ("sklearn", "sklearn", "rf"),
                              ("ydf", "ydf", "rf")]),
    "et": ("classification", [("silva", "silva", "et"), ("sklearn", "sklearn", "et")]),
    "rf-regression": ("regression", [("silva", "silva", "rf"), ("sklearn", "sklearn", "rf"),
                                     ("ydf", "ydf", "rf")]),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(TABLES))
    parser.add_argument("--n-train", type=int, default=200_000)
    parser.add_argument("--n-test", type=int, default=200_000)
    parser.add_argument("--n-estimators", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-results", action="store_true",
                        help=f"append the tables to {RESULTS_PATH.name}")
    parser.add_argument("--worker", nargs=4, metavar=("DATA_DIR", "LIBRARY", "KIND", "TASK"),
                        help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ------------------------------------------------------------------ worker (one model)
def _status(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB -> bytes
    return 0


def _reset_peak():
    # Writing 5 to clear_refs resets the peak resident set (VmHWM) to the current one.
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def make_model(library, kind, task, n_estimators):
    classification = task == "classification"
    if library in ("silva", "sklearn"):
        # The same class names in both libraries.
        module = importlib.import_module("silva" if library == "silva" else "sklearn.ensemble")
        family = {"rf": "RandomForest", "et": "ExtraTrees"}[kind]
        cls = getattr(module, family + ("Classifier" if classification else "Regressor"))
        return cls(n_estimators=n_estimators, n_jobs=-1, random_state=0)
    if library == "ydf":
        import ydf

        ydf.verbose(0)
        options = {"num_candidate_attributes_ratio": 1.0} if not classification else {}
        return ydf.RandomForestLearner(
            label="y", task=ydf.Task.CLASSIFICATION if classification else ydf.Task.REGRESSION,
            num_trees=n_estimators, max_depth=-1, min_examples=1,
            compute_oob_performances=False, num_threads=os.cpu_count(), random_seed=0,
            **options)
    raise ValueError(library)


def _fit_predict(library, model, X, y, X_test):
    if library != "ydf":
        fitted = model.fit(X, y)
        predict = fitted.predict_proba if hasattr(fitted, "predict_proba") else fitted.predict
        return fitted, predict
    columns = {f"f{j}": X[:, j] for j in range(X.shape[1])}
    columns["y"] = y
    fitted = model.train(columns)

    def predict(X_rows):
        return fitted.predict({f"f{j}": X_rows[:, j] for j in range(X_rows.shape[1])})
    return fitted, predict


def run_worker(data_dir, library, kind, task, n_estimators):
    from sklearn.metrics import r2_score, roc_auc_score

    data = Path(data_dir)
    X, y = np.load(data / "X_train.npy"), np.load(data / "y_train.npy")
    X_test, y_test = np.load(data / "X_test.npy"), np.load(data / "y_test.npy")
    warm = make_model(library, kind, task, 5)
    _fit_predict(library, warm, X[:WARM_UP_ROWS], y[:WARM_UP_ROWS], X_test[:10])[1](
        X_test[:10])
    del warm
    model = make_model(library, kind, task, n_estimators)
    _reset_peak()
    base = _status("VmRSS")
    start = time.perf_counter()
    _, predict = _fit_predict(library, model, X, y, X_test)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    prediction = np.asarray(predict(X_test))
    predict_s = time.perf_counter() - start
    peak = _status("VmHWM") - base
    if task == "classification":
        positive = prediction[:, 1] if prediction.ndim == 2 else prediction
        score = roc_auc_score(y_test, positive)
    else:
        score = r2_score(y_test, prediction.ravel())
    print(json.dumps({"fit_s": fit_s, "predict_s": predict_s, "peak_bytes": peak,
                      "score": float(score)}))


# -------------------------------------------------------------------------- runner
def write_data(directory, task, n_train, n_test, seed):
    n = n_train + n_test
    if task == "classification":
        X, y = make_classification(n_samples=n, n_features=N_FEATURES,
                                   n_informative=N_INFORMATIVE, random_state=seed)
    else:
        X, y = make_regression(n_samples=n, n_features=N_FEATURES,
                               n_informative=N_INFORMATIVE, noise=20.0, random_state=seed)
    for name, values in (("X_train", X[:n_train]), ("y_train", y[:n_train]),
                         ("X_test", X[n_train:]), ("y_test", y[n_train:])):
        np.save(Path(directory) / f"{name}.npy", np.ascontiguousarray(values))


def run_table(name, args):
    task, entries = TABLES[name]
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        write_data(directory, task, args.n_train, args.n_test, args.seed)
        for label, library, kind in entries:
            command = [sys.executable, __file__, "--n-estimators", str(args.n_estimators),
                       "--worker", directory, library, kind, task]
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                print(f"{label} failed:\n{result.stderr[-2000:]}", file=sys.stderr)
                continue
            row = json.loads(result.stdout.strip().splitlines()[-1])
            row["label"] = label
            rows.append(row)
            print(f"  {name}: {label} fit {row['fit_s']:.2f} s, predict {row['predict_s']:.2f}"
                  f" s, peak {row['peak_bytes'] / 2**20:.0f} MiB, score {row['score']:.4f}",
                  file=sys.stderr)
    return task, rows


def format_table(name, task, rows, args):
    metric = "AUC" if task == "classification" else "R²"
    silva = next((row for row in rows if row["label"] == "silva"), None)
    lines = [f"### {name}: {task}, {args.n_train:,} train / {args.n_test:,} test rows x "
             f"{N_FEATURES}, {args.n_estimators} fully grown trees, n_jobs=-1", "",
             f"| model | fit s | fit x silva | predict s | predict x silva | peak MiB | "
             f"peak x silva | test {metric} | Δ vs silva |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        def ratio(key, row=row):
            return f"{row[key] / silva[key]:.2f}x" if silva and silva[key] > 0 else "n/a"
        delta = f"{row['score'] - silva['score']:+.4f}" if silva else "n/a"
        lines.append(f"| {row['label']} | {row['fit_s']:.2f} | {ratio('fit_s')} | "
                     f"{row['predict_s']:.2f} | {ratio('predict_s')} | "
                     f"{row['peak_bytes'] / 2**20:.0f} | {ratio('peak_bytes')} | "
                     f"{row['score']:.4f} | {delta} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        data_dir, library, kind, task = args.worker
        run_worker(data_dir, library, kind, task, args.n_estimators)
        return
    load_before = os.getloadavg()[0]
    sections = []
    for name in args.tables:
        task, rows = run_table(name, args)
        sections.append(format_table(name, task, rows, args))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/bench_forest.py " + " ".join(
        arg for arg in (argv if argv is not None else sys.argv[1:]))
    report = (f"## {stamp} — forests\n\n- machine: {machine_line()}\n"
              f"- load average before the run: {load_before:.2f} (other work distorts times)\n"
              f"- command: `{command.strip()}`\n\n" + "\n\n".join(sections) + "\n")
    print(report)
    if args.write_results:
        append_results(report)


if __name__ == "__main__":
    main()
