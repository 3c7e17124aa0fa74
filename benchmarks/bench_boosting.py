"""Gradient boosting benchmark: silva against LightGBM and XGBoost, side by side.

Same data for every library (``make_classification`` / ``make_regression``, 28 features,
80/20 split), 100 iterations, 31 leaves, 255 bins, learning rate 0.1, no sampling, the
same number of threads for all (``--threads``, default all cores). For each task it prints
fit time (after one untimed two-iteration warm-up fit of silva, so that numba's
compilation is not counted) as wall-clock and CPU seconds, the ratio to the faster peer
(LightGBM or XGBoost), the test metric (AUC, accuracy or RMSE), the time to predict
200,000 rows and its ratio to XGBoost's, and silva's own breakdown of fit time (gradients
and sampling, tree growing, leaf values, raw-prediction updates). ``--models ... sklearn``
adds scikit-learn's ``HistGradientBoosting*``, listed but not counted as a peer.

Data shapes (``--shapes``, each the base data with one thing changed; see ``SHAPES``):
float32 input, 8 or 200 features, few or many informative features, label noise, a third
of the columns binary flags, 63 or 255 leaves. Every (shape, task) ends in a summary table
of ratios against the issue's target at that size, with the CPU model (and AVX-512 or
not); ``--write-results`` appends it to RESULTS.md. The ``flags`` task of earlier runs is
the binary task in the ``flags`` shape.

Each fit runs in a process of its own (the data written once per shape and task, then
loaded by each process), so that no library inherits another's threads, memory or
compiled state: with every library in one process, silva's fits of the 8-feature
million-row regression read about 20% slower than in a process of their own. silva's
warm-up fit runs in the same process as its timed fit, before it.

On a shared machine every library slows down when other processes take the cores (and
parallel code most): ``--repeat N`` fits each library N times, the libraries taking
turns, and keeps each one's best time; note the load averages printed with each table.

Usage::

    .venv/bin/python benchmarks/bench_boosting.py                   # 1,000,000 rows
    .venv/bin/python benchmarks/bench_boosting.py --n-samples 200000 --tasks binary
    .venv/bin/python benchmarks/bench_boosting.py --tasks binary --repeat 3
    .venv/bin/python benchmarks/bench_boosting.py --shapes all --repeat 2 --write-results
    .venv/bin/python benchmarks/bench_boosting.py --shapes float32 features-200 --tasks binary
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _machine import command_line, cpu_model, machine_line, utc_now
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score
from sklearn.model_selection import train_test_split

N_ITER = 100
LEAVES = 31
BINS = 255
LR = 0.1
RESULTS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
# The peers the targets are measured against (scikit-learn's HistGradientBoosting is
# listed, when asked for, but not counted).
TARGET_PEERS = ("lightgbm", "xgboost")


@dataclass(frozen=True)
class Shape:
    """One kind of data a user brings: the base data with one thing changed."""

    name: str
    description: str
    n_features: int = 28
    n_informative: int = 14
    dtype: type = np.float64
    label_noise: bool = False
    flags: bool = False
    leaves: int = LEAVES


SHAPES = {shape.name: shape for shape in [
    Shape("base", "float64, 28 features (14 informative), 31 leaves: the default data"),
    Shape("float32", "the base data as float32", dtype=np.float32),
    Shape("features-8", "8 features (6 informative)", n_features=8, n_informative=6),
    Shape("features-200", "200 features (14 informative)", n_features=200),
    Shape("few-informative", "28 features, 5 informative", n_informative=5),
    Shape("many-informative", "28 features, 24 informative", n_informative=24),
    Shape("label-noise", "a fifth of the class labels random (flip_y=0.2); regression: "
          "noise as large as the signal (sigma 200)", label_noise=True),
    Shape("flags", "8 continuous and 20 binary 0/1 features (a third of them set)", flags=True),
    Shape("leaves-63", "the base data, 63 leaves", leaves=63),
    Shape("leaves-255", "the base data, 255 leaves", leaves=255),
]}


def boosting_target(n_rows):
    """The cold-start issue's fit target (silva / faster of LightGBM and XGBoost) at this
    many rows (train and test together), or None below 2,000 rows, where it sets none."""
    if n_rows >= 20_000:
        return 0.75
    if n_rows >= 2_000:
        return 1.0
    return None


def _flags_data(task, n_samples):
    # 8 continuous features and 20 binary ones (0/1, a third of them set), as
    # indicator or one-hot columns give: the continuous ones make every feature's
    # histogram 256 bins wide, and the binary ones all fall in bins 0 and 1, the case
    # that 4K aliasing of the histogram entries once made several times slower
    # (gradient_grower.padded_bins).
    rng = np.random.default_rng(0)
    X = np.hstack([rng.normal(size=(n_samples, 8)),
                   (rng.random((n_samples, 20)) < 1 / 3).astype(np.float64)])
    logit = X[:, :14] @ rng.normal(size=14) + 0.5 * X[:, 8] * X[:, 9] - 1.0
    if task == "binary":
        y = (rng.random(n_samples) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    elif task == "regression":
        y = logit + rng.normal(size=n_samples)
    else:
        # Ten classes of equal size: the deciles of the noisy score.
        noisy = logit + rng.logistic(size=n_samples)
        y = np.searchsorted(np.quantile(noisy, np.linspace(0.1, 0.9, 9)), noisy)
    return X, y


def _data(task, n_samples, shape=SHAPES["base"]):
    """Train and test split (80/20) of one task's data in the given shape."""
    if shape.flags:
        X, y = _flags_data(task, n_samples)
    elif task == "regression":
        X, y = make_regression(n_samples, shape.n_features, n_informative=shape.n_informative,
                               noise=200.0 if shape.label_noise else 10.0, random_state=0)
    else:
        X, y = make_classification(n_samples, shape.n_features,
                                   n_informative=shape.n_informative,
                                   n_classes=10 if task == "multiclass" else 2,
                                   n_clusters_per_class=2,
                                   flip_y=0.2 if shape.label_noise else 0.01, random_state=0)
    return train_test_split(X.astype(shape.dtype), y, test_size=0.2, random_state=0)


def _metric(task, model, X, y):
    if task in ("binary", "flags"):
        return "AUC", roc_auc_score(y, model.predict_proba(X)[:, 1])
    if task == "multiclass":
        return "accuracy", accuracy_score(y, model.predict(X))
    return "RMSE", float(np.sqrt(mean_squared_error(y, model.predict(X))))


def _models(task, names, threads, leaves=LEAVES):
    """A maker of a fresh model per library named, all with the same settings."""
    out = {}
    classification = task != "regression"
    if "silva" in names:
        from silva.boosting import GradientBoostingClassifier, GradientBoostingRegressor
        cls = GradientBoostingClassifier if classification else GradientBoostingRegressor
        out["silva"] = lambda cls=cls: cls(n_estimators=N_ITER, max_leaf_nodes=leaves,
                                           max_bins=BINS, learning_rate=LR,
                                           min_samples_leaf=20, min_child_weight=1e-3,
                                           l2_regularization=0.0)
    if "lightgbm" in names:
        import lightgbm as lgb
        cls = lgb.LGBMClassifier if classification else lgb.LGBMRegressor
        out["lightgbm"] = lambda cls=cls: cls(n_estimators=N_ITER, num_leaves=leaves,
                                              max_bin=BINS, learning_rate=LR,
                                              min_child_samples=20, min_child_weight=1e-3,
                                              reg_lambda=0.0, subsample=1.0,
                                              colsample_bytree=1.0, verbose=-1,
                                              n_jobs=threads)
    if "xgboost" in names:
        import xgboost as xgb
        cls = xgb.XGBClassifier if classification else xgb.XGBRegressor
        out["xgboost"] = lambda cls=cls: cls(n_estimators=N_ITER, tree_method="hist",
                                             grow_policy="lossguide", max_leaves=leaves,
                                             max_depth=0, max_bin=BINS, learning_rate=LR,
                                             min_child_weight=1e-3, reg_lambda=0.0,
                                             n_jobs=threads)
    if "sklearn" in names:
        # HistGradientBoosting* has no thread parameter: it uses OpenMP's, which main
        # (or the caller) limits to `threads` with threadpoolctl or OMP_NUM_THREADS.
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
        cls = HistGradientBoostingClassifier if classification else HistGradientBoostingRegressor
        out["sklearn"] = lambda cls=cls: cls(max_iter=N_ITER, max_leaf_nodes=leaves,
                                             max_bins=BINS, learning_rate=LR,
                                             min_samples_leaf=20, l2_regularization=0.0,
                                             early_stopping=False)
    return out


def available(names):
    """The libraries in ``names`` that are installed; a note on stdout for each one not."""
    modules = {"silva": "silva", "lightgbm": "lightgbm", "xgboost": "xgboost",
               "sklearn": "sklearn"}
    out = []
    for name in names:
        if importlib.util.find_spec(modules.get(name, name)) is None:
            print(f"note: {name} is not installed; it is left out of this run", flush=True)
        else:
            out.append(name)
    return out


def faster_peer(fits):
    """The time silva is compared with: the faster of LightGBM and XGBoost, or of the other
    libraries run if neither was; NaN with no peer at all."""
    peers = [fits[name] for name in TARGET_PEERS if name in fits]
    if not peers:
        peers = [fit for name, fit in fits.items() if name != "silva"]
    return min(peers) if peers else float("nan")


def run_child(name, task, shape_name, data_dir, threads):
    """In a process of its own: fit one library once on the data ``run`` wrote to
    ``data_dir`` (after silva's warm-up), predict 200,000 rows, and print one JSON line:
    fit seconds (wall and CPU), the test metric, predict seconds and silva's breakdown."""
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    threadpool_limits(threads)
    shape = SHAPES[shape_name]
    data = Path(data_dir)
    X_train, y_train = np.load(data / "X_train.npy"), np.load(data / "y_train.npy")
    X_test, y_test = np.load(data / "X_test.npy"), np.load(data / "y_test.npy")
    X_pred = np.ascontiguousarray(np.resize(X_test, (200_000, X_test.shape[1])))
    make = _models(task, [name], threads, shape.leaves)[name]
    if name == "silva":
        # The warm-up fits the whole training set: which kernels a fit compiles depends on
        # its size and width (a 5,000-row sample of 200 features left the parallel wide
        # grower to compile inside the timed fit on an empty cache).
        make().set_params(n_estimators=2).fit(X_train, y_train)
    model = make()
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train, y_train)
    fit, cpu = time.perf_counter() - start, time.process_time() - cpu
    predict_fn = model.predict_proba if task != "regression" else model.predict
    predict_fn(X_pred[:1000])
    start = time.perf_counter()
    predict_fn(X_pred)
    predict = time.perf_counter() - start
    metric_name, metric = _metric(task, model, X_test, y_test)
    timings = dict(getattr(model, "_timings", None) or {})
    print(json.dumps({"fit": fit, "cpu": cpu, "metric_name": metric_name,
                      "metric": float(metric), "predict": predict, "timings": timings}))


def _fit_in_child(name, task, shape_name, data_dir, threads):
    """One fit of one library in a fresh process (:func:`run_child`): its result dict."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads),
               SILVA_COMPILE_NOTICE="0")
    command = [sys.executable, __file__, "--child", name, task, shape_name, data_dir,
               str(threads)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{name} on {task}/{shape_name} failed: {last[:300]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run(task, n_samples, names, threads, repeat=1, shape=SHAPES["base"]):
    """Fit every library on one task's data in one shape, each fit in a process of its
    own; print the table and return ``{library: (fit s, cpu s, metric name, metric,
    predict s)}``."""
    if task == "flags":  # the task of earlier runs: binary data in the flags shape
        task, shape = "binary", SHAPES["flags"]
    load = tuple(round(v, 2) for v in os.getloadavg())
    best = {}
    with tempfile.TemporaryDirectory(prefix="bench_boosting_") as directory:
        parts = _data(task, n_samples, shape)
        for part_name, values in zip(("X_train", "X_test", "y_train", "y_test"), parts,
                                     strict=True):
            np.save(Path(directory) / f"{part_name}.npy", np.ascontiguousarray(values))
        X_train = parts[0]
        del parts
        for _ in range(repeat):
            # Libraries take turns, so that a burst of load on the machine hits them alike.
            for name in names:
                entry = _fit_in_child(name, task, shape.name, directory, threads)
                previous = best.get(name)
                if previous is None or entry["fit"] < previous["fit"]:
                    if previous is not None:
                        entry["predict"] = min(entry["predict"], previous["predict"])
                    best[name] = entry
                else:
                    previous["predict"] = min(previous["predict"], entry["predict"])
    rows = {name: (e["fit"], e["cpu"], e["metric_name"], e["metric"], e["predict"])
            for name, e in best.items()}
    best_peer = faster_peer({name: row[0] for name, row in rows.items()})
    xgboost_predict = rows["xgboost"][4] if "xgboost" in rows else float("nan")
    after = tuple(round(v, 2) for v in os.getloadavg())
    print(f"\n{task}, shape {shape.name} ({shape.description}): {n_samples:,} rows x "
          f"{X_train.shape[1]} {X_train.dtype} (train {len(X_train):,}), {N_ITER} iterations, "
          f"{shape.leaves} leaves, {BINS} bins, lr {LR}, {threads} threads, best of {repeat}, "
          f"each fit in a process of its own; CPU {cpu_model()}; load average before: "
          f"{load}, after: {after}")
    print(f"{'library':10s} {'fit s':>8s} {'fit cpu s':>10s} {'fit/best peer':>14s} "
          f"{'metric':>18s} {'predict 200k s':>15s} {'predict/xgboost':>16s}")
    for name, (fit, cpu, metric_name, metric, predict) in rows.items():
        print(f"{name:10s} {fit:8.2f} {cpu:10.2f} {fit / best_peer:14.2f} {metric_name:>9s} "
              f"{metric:8.4f} {predict:15.3f} {predict / xgboost_predict:16.2f}", flush=True)
    if "silva" in best:
        # Under its own table: the breakdown of silva's fastest fit of this shape and task.
        print("  silva fit breakdown (s): " + ", ".join(
            f"{k} {v:.2f}" for k, v in best["silva"]["timings"].items()), flush=True)
    return rows


def summary_table(results, names, n_samples):
    """Markdown: one row per (shape, task), each library's fit time, silva / faster peer,
    the target at this size and whether it is met."""
    target = boosting_target(n_samples)
    peers = [name for name in names if name != "silva"]
    lines = ["| shape | task | " + " | ".join(f"{name} fit s" for name in names)
             + " | silva / faster peer | target | met |",
             "|---|---|" + "---:|" * len(names) + "---:|---:|---|"]
    for (shape, task), rows in results.items():
        fits = {name: row[0] for name, row in rows.items()}
        ratio = fits["silva"] / faster_peer(fits) if "silva" in fits and peers else None
        met = ("–" if ratio is None or target is None
               else "yes" if ratio <= target else "**missed**")
        lines.append(f"| {shape} | {task} | "
                     + " | ".join(f"{fits[name]:.2f}" if name in fits else "–"
                                  for name in names)
                     + f" | {'–' if ratio is None else f'{ratio:.2f}x'} | "
                     + f"{'–' if target is None else f'<= {target:.2f}x'} | {met} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--tasks", nargs="+", default=["binary", "multiclass", "regression"],
                        choices=["binary", "multiclass", "regression", "flags"])
    parser.add_argument("--shapes", nargs="+", default=["base"],
                        choices=[*SHAPES, "all"],
                        help="data shapes to run every task on ('all': every one)")
    parser.add_argument("--models", nargs="+", default=["silva", "lightgbm", "xgboost"],
                        choices=["silva", "lightgbm", "xgboost", "sklearn"])
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads for every library (numba, n_jobs, OpenMP)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="fits per library (taking turns); the best time is kept")
    parser.add_argument("--write-results", action="store_true",
                        help="append the summary of ratios to benchmarks/RESULTS.md")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS,
                        metavar=("LIBRARY", "TASK", "SHAPE", "DATA_DIR", "THREADS"))
    args = parser.parse_args(argv)
    if args.child:
        name, task, shape_name, data_dir, threads = args.child
        run_child(name, task, shape_name, data_dir, int(threads))
        return
    names = available(args.models)
    shapes = list(SHAPES) if "all" in args.shapes else args.shapes
    results = {}
    for shape in shapes:
        for task in args.tasks:
            results[(shape, task)] = run(task, args.n_samples, names, args.threads,
                                         args.repeat, SHAPES[shape])
    summary = summary_table(results, names, args.n_samples)
    report = (f"## {utc_now()} — gradient boosting on data shapes\n\n"
              f"- machine: {machine_line()}\n"
              f"- command: `{command_line('bench_boosting.py', argv)}`\n"
              f"- {args.n_samples:,} rows (80% train), {N_ITER} iterations, {BINS} bins, "
              f"lr {LR}, {args.threads} threads, best of {args.repeat}; the faster peer is "
              f"the faster of LightGBM and XGBoost\n\n{summary}\n")
    print("\n" + report)
    if args.write_results:
        with open(RESULTS_PATH, "a") as results_file:
            results_file.write("\n" + report)


if __name__ == "__main__":
    main()
