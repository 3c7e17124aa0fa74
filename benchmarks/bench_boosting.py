"""Gradient boosting benchmark: silva against LightGBM and XGBoost, side by side.

Same data for every library (``make_classification`` / ``make_regression``, 28 features,
or for ``flags`` 8 continuous and 20 binary features and a logistic target; 80/20 split),
100 iterations, 31 leaves, 255 bins, learning rate 0.1, no sampling, the same number of
threads for all (``--threads``, default all cores). For each task it prints fit time
(after one untimed warm-up fit of silva on a small sample, so that numba's compilation
is not counted) as wall-clock and CPU seconds, the ratio to the faster peer, the test
metric (AUC, accuracy or RMSE), the time to predict 200,000 rows and its ratio to
XGBoost's, and silva's own breakdown of fit time (gradients and sampling, tree growing,
leaf values, raw-prediction updates).

On a shared machine every library slows down when other processes take the cores (and
parallel code most): ``--repeat N`` fits each library N times, the libraries taking
turns, and keeps each one's best time; note the load averages printed with each table.

Usage::

    .venv/bin/python benchmarks/bench_boosting.py                   # 1,000,000 rows
    .venv/bin/python benchmarks/bench_boosting.py --n-samples 200000 --tasks binary
    .venv/bin/python benchmarks/bench_boosting.py --tasks binary --repeat 3
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score
from sklearn.model_selection import train_test_split

N_ITER = 100
LEAVES = 31
BINS = 255
LR = 0.1


def _data(task, n_samples):
    if task == "flags":
        # 8 continuous features and 20 binary ones (0/1, a third of them set), as
        # indicator or one-hot columns give: the continuous ones make every feature's
        # histogram 256 bins wide, and the binary ones all fall in bins 0 and 1, the case
        # that 4K aliasing of the histogram entries once made several times slower
        # (gradient_grower.padded_bins).
        rng = np.random.default_rng(0)
        X = np.hstack([rng.normal(size=(n_samples, 8)),
                       (rng.random((n_samples, 20)) < 1 / 3).astype(np.float64)])
        logit = X[:, :14] @ rng.normal(size=14) + 0.5 * X[:, 8] * X[:, 9] - 1.0
        y = (rng.random(n_samples) < 1 / (1 + np.exp(-logit))).astype(np.int64)
        return train_test_split(X, y, test_size=0.2, random_state=0)
    if task == "regression":
        X, y = make_regression(n_samples, 28, n_informative=14, noise=10.0, random_state=0)
    else:
        X, y = make_classification(n_samples, 28, n_informative=14,
                                   n_classes=10 if task == "multiclass" else 2,
                                   n_clusters_per_class=2, random_state=0)
    return train_test_split(X.astype(np.float64), y, test_size=0.2, random_state=0)


def _metric(task, model, X, y):
    if task in ("binary", "flags"):
        return "AUC", roc_auc_score(y, model.predict_proba(X)[:, 1])
    if task == "multiclass":
        return "accuracy", accuracy_score(y, model.predict(X))
    return "RMSE", float(np.sqrt(mean_squared_error(y, model.predict(X))))


def _models(task, names, threads):
    out = {}
    classification = task != "regression"
    if "silva" in names:
        from silva.boosting import GradientBoostingClassifier, GradientBoostingRegressor
        cls = GradientBoostingClassifier if classification else GradientBoostingRegressor
        out["silva"] = lambda cls=cls: cls(n_estimators=N_ITER, max_leaf_nodes=LEAVES,
                                           max_bins=BINS,
                                   learning_rate=LR, min_samples_leaf=20,
                                   min_child_weight=1e-3, l2_regularization=0.0)
    if "lightgbm" in names:
        import lightgbm as lgb
        cls = lgb.LGBMClassifier if classification else lgb.LGBMRegressor
        out["lightgbm"] = lambda cls=cls: cls(n_estimators=N_ITER, num_leaves=LEAVES, max_bin=BINS,
                                      learning_rate=LR, min_child_samples=20,
                                      min_child_weight=1e-3, reg_lambda=0.0,
                                      subsample=1.0, colsample_bytree=1.0, verbose=-1,
                                      n_jobs=threads)
    if "xgboost" in names:
        import xgboost as xgb
        cls = xgb.XGBClassifier if classification else xgb.XGBRegressor
        out["xgboost"] = lambda cls=cls: cls(n_estimators=N_ITER, tree_method="hist",
                                     grow_policy="lossguide", max_leaves=LEAVES, max_depth=0,
                                     max_bin=BINS, learning_rate=LR, min_child_weight=1e-3,
                                     reg_lambda=0.0, n_jobs=threads)
    return out


def _time_fit(name, make, X_train, y_train):
    model = make()
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train, y_train)
    return model, time.perf_counter() - start, time.process_time() - cpu


def run(task, n_samples, names, threads, repeat=1):
    load = tuple(round(v, 2) for v in os.getloadavg())
    X_train, X_test, y_train, y_test = _data(task, n_samples)
    X_pred = np.ascontiguousarray(np.resize(X_test, (200_000, X_test.shape[1])))
    makers = _models(task, names, threads)
    if "silva" in makers:
        makers["silva"]().set_params(n_estimators=2).fit(X_train[:5000], y_train[:5000])
    best = {}
    for _ in range(repeat):
        # Libraries take turns, so that a burst of load on the machine hits them alike.
        for name, make in makers.items():
            model, fit, cpu = _time_fit(name, make, X_train, y_train)
            predict_fn = model.predict_proba if task != "regression" else model.predict
            predict_fn(X_pred[:1000])
            start = time.perf_counter()
            predict_fn(X_pred)
            predict = time.perf_counter() - start
            previous = best.get(name)
            if previous is None or fit < previous["fit"]:
                best[name] = {"model": model, "fit": fit, "cpu": cpu,
                              "predict": min(predict, previous["predict"]) if previous
                              else predict}
            else:
                previous["predict"] = min(previous["predict"], predict)
    rows = []
    for name, entry in best.items():
        metric_name, metric = _metric(task, entry["model"], X_test, y_test)
        rows.append((name, entry["fit"], entry["cpu"], metric_name, metric, entry["predict"]))
        if name == "silva":
            print("  silva fit breakdown (s): " + ", ".join(
                f"{k} {v:.2f}" for k, v in entry["model"]._timings.items()), flush=True)
    peers = [fit for name, fit, *_ in rows if name != "silva"]
    best_peer = min(peers) if peers else float("nan")
    xgboost_predict = best["xgboost"]["predict"] if "xgboost" in best else float("nan")
    after = tuple(round(v, 2) for v in os.getloadavg())
    print(f"\n{task}: {n_samples:,} rows x 28 (train {len(X_train):,}), {N_ITER} iterations, "
          f"{LEAVES} leaves, {BINS} bins, lr {LR}, {threads} threads, best of {repeat}; "
          f"load average before: {load}, after: {after}")
    print(f"{'library':10s} {'fit s':>8s} {'fit cpu s':>10s} {'fit/best peer':>14s} "
          f"{'metric':>18s} {'predict 200k s':>15s} {'predict/xgboost':>16s}")
    for name, fit, cpu, metric_name, metric, predict in rows:
        print(f"{name:10s} {fit:8.2f} {cpu:10.2f} {fit / best_peer:14.2f} {metric_name:>9s} "
              f"{metric:8.4f} {predict:15.3f} {predict / xgboost_predict:16.2f}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--tasks", nargs="+", default=["binary", "multiclass", "regression"],
                        choices=["binary", "multiclass", "regression", "flags"])
    parser.add_argument("--models", nargs="+", default=["silva", "lightgbm", "xgboost"])
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads for every library (numba, n_jobs)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="fits per library (taking turns); the best time is kept")
    args = parser.parse_args()
    import numba
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    for task in args.tasks:
        run(task, args.n_samples, args.models, args.threads, args.repeat)


if __name__ == "__main__":
    main()
